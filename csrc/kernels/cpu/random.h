/* CPU kernels of the random family (rows in ops/ops_random.def). */
#ifndef TFM_KERNELS_CPU_RANDOM_H
#define TFM_KERNELS_CPU_RANDOM_H

#include "../../ops/op.h"

#endif
