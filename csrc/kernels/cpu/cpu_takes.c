/* See cpu_takes.h. */
#include "cpu_takes.h"

#include "conv.h"

int
tfm_cpu_kernel_takes(tfm_op op, tfm_dtype d)
{
    unsigned flags = tfm_ops[op].flags;
    if (flags & TFM_OPF_ANY_DTYPE)
        return 1;
    if (d == TFM_FLOAT16)
        return (flags & TFM_OPF_F16) != 0;
    /* bfloat16 GEMM and convolutions with float32 accumulation
     * (gemm_dnnl.c, conv_dnnl.c); every other op is cheaper in float32
     * than with a conversion per use. */
    if (d == TFM_BFLOAT16)
        return op == TFM_OP_MATMUL ||
               ((op == TFM_OP_CONV2D || op == TFM_OP_CONV2D_BACKPROP_INPUT ||
                 op == TFM_OP_CONV2D_BACKPROP_FILTER) &&
                tfm_conv_bf16_native());
    return 1;
}
