/* What the GPU kernel table holds, for tests and tools through ctypes
 * (tests/test_fused_ops_on_device.py): a CUDA build compiled where no GPU is
 * lent can still show which ops would run on one. */
#include "internal.h"

/* 1 when the op named (TF's name) has a GPU kernel, 0 when it would
 * soft-place on the CPU, -1 for no such op. The table is filled here
 * when no GPU has filled it (the fill writes the same pointers every
 * time, so a GPU registering meanwhile changes nothing). */
int tfm_cuda_has_kernel(const char *name);

int
tfm_cuda_has_kernel(const char *name)
{
    const tfm_kernel_fn *table = tfm_cuda_kernels;
    int op = tfm_op_lookup(name);
    if (op < 0)
        return -1;
    if (!table[TFM_OP_MATMUL])
        tfm_cuda_kernels_init();
    return table[op] != NULL;
}
