/* CPU kernels of the reduce family (rows in ops/ops_reduce.def). */
#ifndef TFM_KERNELS_CPU_REDUCE_H
#define TFM_KERNELS_CPU_REDUCE_H

#include "../../ops/op.h"

#endif
