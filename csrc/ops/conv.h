/* Shape rules of the conv family (rows in ops_conv.def). */
#ifndef TFM_OPS_CONV_H
#define TFM_OPS_CONV_H

#include "op.h"

#endif
