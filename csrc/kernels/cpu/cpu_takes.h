/* Which dtypes a CPU kernel computes in itself. Only the 16-bit floats
 * can say no; for them the dispatcher computes in float32 with casts
 * around the kernel (runtime/dispatch.c's tfm_kernel_takes), and the
 * GPU's host fallback refuses them (kernels/cuda/kernels.c). In the
 * kernel layer, so that both can ask. */
#ifndef TFM_KERNELS_CPU_TAKES_H
#define TFM_KERNELS_CPU_TAKES_H

#include "../../ops/op.h"

int tfm_cpu_kernel_takes(tfm_op op, tfm_dtype d);

#endif
