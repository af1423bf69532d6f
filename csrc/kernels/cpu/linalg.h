/* CPU kernels of the linalg family (rows in ops/ops_linalg.def). */
#ifndef TFM_KERNELS_CPU_LINALG_H
#define TFM_KERNELS_CPU_LINALG_H

#include "../../ops/op.h"

#endif
