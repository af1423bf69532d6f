/* A matmul with cuBLASLt's bias/activation epilogue (kernels_matmul.c):
 * the GPU side of a _FusedMatMul whose program cuBLASLt computes itself
 * (graph/fused_epilogue.h says which). Plain C, no CUDA types, so that
 * the graph layer and the C tests can include it in any build; the
 * entry is defined only in a build with CUDA. */
#ifndef TFM_KERNELS_CUDA_LT_EPILOGUE_H
#define TFM_KERNELS_CUDA_LT_EPILOGUE_H

#include "../../core/device.h"
#include "../../core/tensor.h"
#include "../../ops/op.h"

/* What is applied to the product, in cuBLASLt's order: the bias (a
 * vector over the output's last dim) first, then the activation. GELU
 * is the tanh approximation, the only form cuBLASLt has. */
enum {
    TFM_LT_EPI_NONE = 0,
    TFM_LT_EPI_BIAS,
    TFM_LT_EPI_RELU,
    TFM_LT_EPI_RELU_BIAS,
    TFM_LT_EPI_GELU,
    TFM_LT_EPI_GELU_BIAS,
};

/* out = epilogue(BatchMatMulV2(in[0], in[1]; attrs a) [+ bias]) as one
 * cublasLtMatmul on the GPU of ctx. *done = 1 when it ran; 0 (TFM_OK,
 * nothing written) when cuBLASLt cannot take it here: a dtype other
 * than float32/float16/bfloat16, a batch it cannot fold into one matrix,
 * a bias of another dtype or size, a misaligned bias, no heuristic
 * answer, an error status, TFMINI_LT_EPILOGUE=0. The caller then runs
 * the matmul and the program as before. It returns TFM_OK: a failure
 * here only sends the node down the general path. */
tfm_code tfm_cuda_matmul_epilogue(tfm_tensor *const *in, const tfm_attrs *a,
                                  int epilogue, const tfm_tensor *bias,
                                  tfm_tensor *out, const tfm_kctx *ctx,
                                  int *done);

#endif
