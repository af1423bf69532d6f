/* Built when nvcc is absent: no op has a GPU kernel and no GPU device
 * is registered in the device table (core/device.h), so a tensor or op
 * sent to one is a clear error, never a silent CPU fallback. A CUDA
 * build registers its devices with this table as their kernels. */
#include "../../ops/op.h"

const tfm_kernel_fn tfm_op_cuda[TFM_OP_COUNT];

int
tfm_cuda_available(void)
{
    return 0;
}
