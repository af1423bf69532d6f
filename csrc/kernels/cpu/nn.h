/* CPU kernels of the nn family (rows in ops/ops_nn.def). */
#ifndef TFM_KERNELS_CPU_NN_H
#define TFM_KERNELS_CPU_NN_H

#include "../../ops/op.h"

#endif
