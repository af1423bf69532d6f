/* Shape rules of the nn family (rows in ops_nn.def). */
#ifndef TFM_OPS_NN_H
#define TFM_OPS_NN_H

#include "op.h"

#endif
