/* Shape rules of the state family (rows in ops_state.def). */
#ifndef TFM_OPS_STATE_H
#define TFM_OPS_STATE_H

#include "op.h"

#endif
