/* CPU kernels of the shape family (rows in ops/ops_shape.def). */
#ifndef TFM_KERNELS_CPU_SHAPE_H
#define TFM_KERNELS_CPU_SHAPE_H

#include "../../ops/op.h"

#endif
