/* CPU kernels of the conv family (rows in ops/ops_conv.def). */
#ifndef TFM_KERNELS_CPU_CONV_H
#define TFM_KERNELS_CPU_CONV_H

#include "../../ops/op.h"

#endif
