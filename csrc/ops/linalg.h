/* Shape rules of the linalg family (rows in ops_linalg.def). */
#ifndef TFM_OPS_LINALG_H
#define TFM_OPS_LINALG_H

#include "op.h"

#endif
