/* Built when nvcc is absent: no op has a GPU kernel and no GPU device
 * is registered in the device table (core/device.h), so tf.device('/GPU:0')
 * soft-places on the CPU and a GPU listing is empty. A CUDA build
 * (device.c, kernels.c, *.cu) registers its devices with their kernels
 * instead. */
#include "cuda.h"

#include "../../ops/op.h"

const tfm_kernel_fn tfm_op_cuda[TFM_OP_COUNT];

int
tfm_cuda_available(void)
{
    return 0;
}

int
tfm_cuda_init(void)
{
    return 0;
}

int
tfm_cuda_device_count(void)
{
    return 0;
}

const char *
tfm_cuda_why_none(void)
{
    return "tfmini was built without CUDA (no toolkit found, or "
           "TFMINI_CUDA=0)";
}

tfm_code
tfm_cuda_memory_info(int n, int64_t *current, int64_t *peak,
                     int64_t *reserved)
{
    (void)current;
    (void)peak;
    (void)reserved;
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "No GPU:%d: %s", n,
                     tfm_cuda_why_none());
}

tfm_code
tfm_cuda_reset_peak(int n)
{
    return tfm_cuda_memory_info(n, NULL, NULL, NULL);
}

void
tfm_cuda_set_tf32(int on)
{
    (void)on;
}

int
tfm_cuda_tf32(void)
{
    return 0;
}

int
tfm_cuda_takes_half(const void *kernels, int op, int dtype)
{
    (void)kernels;
    (void)op;
    (void)dtype;
    return 0;
}
