/* Built when nvcc is absent: no op has a GPU kernel, and the dispatcher
 * reports "<Op> has no GPU kernel" instead of silently using the CPU. */
#include "../../ops/op.h"

const tfm_kernel_fn tfm_op_cuda[TFM_OP_COUNT];

int
tfm_cuda_available(void)
{
    return 0;
}
