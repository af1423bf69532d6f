/* Shared by the CUDA backend's C glue (device.c, kernels.c); needs the
 * toolkit's headers, so only CUDA builds read it. */
#ifndef TFM_KERNELS_CUDA_INTERNAL_H
#define TFM_KERNELS_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "../../core/device.h"
#include "../../ops/op.h"
#include "cuda.h"
#include "launch_ops.h"

/* One GPU: its device-table entry first, so a const tfm_device * of a
 * GPU is also its tfm_gpu. */
typedef struct tfm_gpu {
    tfm_device dev;
    int ordinal;              /* CUDA's device number */
    cudaStream_t stream;      /* every kernel and copy is queued here */
    cudaMemPool_t pool;
    cublasHandle_t blas;      /* NULL until the first matmul */
    pthread_mutex_t lock;     /* counters, staging, blas creation */
    int64_t current, peak;    /* bytes held by tensors */
    void *staging[2];         /* pinned host halves for big copies */
} tfm_gpu;

static inline tfm_gpu *
tfm_gpu_of(const tfm_device *d)
{
    return (tfm_gpu *)d;
}

/* d as the output kind of launch_ops.h's random, scatter and scan
 * launchers, or -1 for a dtype they do not take (run on host copies). */
static inline int
tfm_cu_out_kind(tfm_dtype d)
{
    switch (d) {
    case TFM_FLOAT32: return TFM_CU_OUT_F32;
    case TFM_FLOAT64: return TFM_CU_OUT_F64;
    case TFM_INT32: return TFM_CU_OUT_I32;
    case TFM_INT64: return TFM_CU_OUT_I64;
    default: return -1;
    }
}

/* Make d's GPU current for this thread (a no-op with one GPU after
 * the first call). */
void tfm_gpu_use(const tfm_gpu *g);
/* The cuBLAS handle of g, on its stream; NULL with the error set. */
cublasHandle_t tfm_gpu_blas(tfm_gpu *g);
/* TFM_OK, or an error naming what failed and CUDA's reason. */
tfm_code tfm_gpu_check(cudaError_t e, const char *what);

/* The op -> kernel table every GPU shares (kernels.c), filled there
 * and by kernels_nn.c / kernels_shape.c. */
extern const void *const tfm_cuda_kernels;
void tfm_cuda_kernels_init(void);
void tfm_cuda_kernels_nn_init(tfm_kernel_fn *table);
void tfm_cuda_kernels_shape_init(tfm_kernel_fn *table);
/* BatchMatMulV2 through cuBLASLt / cuBLAS (kernels_matmul.c, Note [GPU
 * matmul]); its kernel takes float16 and bfloat16. */
void tfm_cuda_kernels_matmul_init(tfm_kernel_fn *table);
/* Row-major C [m, n] = op(A) [m, k] op(B) [k, n] (A stored [k, m] when
 * ta, B [n, k] when tb) on g's stream, through BatchMatMulV2's path
 * (float32 TF32 when enabled, float64, float16, bfloat16), for kernels
 * that multiply matrices (kernels_rnn.c); errors name op. */
tfm_code tfm_cu_gemm(tfm_op op, tfm_gpu *g, const tfm_kctx *ctx,
                     tfm_dtype d, int ta, int tb, int64_t m, int64_t n,
                     int64_t k, const void *A, const void *B, void *C);
/* Pooling (kernels_pool.c) and, where cuDNN is built in, the
 * convolutions (conv_cudnn.c); both called by the nn init. */
void tfm_cuda_kernels_pool_init(tfm_kernel_fn *table);
void tfm_cuda_kernels_conv_init(tfm_kernel_fn *table);
/* The fused ops' kernels: kernels_norm.c, kernels_rnn.c,
 * kernels_fused_conv.c; called by the nn init. */
void tfm_cuda_kernels_norm_init(tfm_kernel_fn *table);
void tfm_cuda_kernels_rnn_init(tfm_kernel_fn *table);
void tfm_cuda_kernels_fused_conv_init(tfm_kernel_fn *table);
/* Fill, ZerosLike, OnesLike (kernels_fill.c). */
void tfm_cuda_kernels_fill_init(tfm_kernel_fn *table);
/* The random ops (kernels_random.c) and TensorScatterAdd/Update/
 * Min/Max (kernels_scatter.c); called by tfm_cuda_kernels_init. */
void tfm_cuda_kernels_random_init(tfm_kernel_fn *table);
void tfm_cuda_kernels_scatter_init(tfm_kernel_fn *table);
/* Slice, StridedSlice(Grad), ReverseV2, Tile, Split(V), Unpack, PadV2,
 * ArgMax/ArgMin (kernels_slice.c); called by tfm_cuda_kernels_init. */
void tfm_cuda_kernels_slice_init(tfm_kernel_fn *table);
/* IsNan/IsInf/IsFinite, Range, LinSpace, GatherNd, Where
 * (kernels_index.c); called by tfm_cuda_kernels_init. */
void tfm_cuda_kernels_index_init(tfm_kernel_fn *table);
/* cuDNN's run-time version (cudnnGetVersion: 90100 for 9.1.0), 0 in a
 * build without it; and how many cuDNN convolutions ran. Read by tests
 * and tools/gpu_check.sh through ctypes. */
int tfm_cuda_cudnn_version(void);
long tfm_cuda_cudnn_calls(void);

/* For the kernel glue (kernels*.c): the kernel context's GPU, made
 * current; a launcher's result as a status naming the op; and the op's
 * CPU kernel run on host copies (an op with a GPU kernel but not for
 * these dtypes or attributes). */
tfm_gpu *tfm_cu_gpu(const tfm_kctx *c);
tfm_code tfm_cu_launched(tfm_op op, int rc);
tfm_code tfm_cu_on_host(tfm_op op, tfm_tensor *const *in, int nin,
                        const tfm_attrs *a, tfm_tensor *const *out,
                        int nout, const tfm_kctx *ctx);
/* Whether any of the rows [rows, p->depth] of the index tensor idx
 * lies outside p->dims (*bad), checked on the GPU and read back
 * (kernels_scatter.c): GatherNd and the scatters then run their CPU
 * kernel on host copies, which raises its error. While a CUDA graph is
 * captured nothing is read back: the check sets the capture flag below
 * and *bad stays 0 (the kernels skip or zero a bad row). */
tfm_code tfm_cu_nd_check(tfm_op op, const tfm_tensor *idx, int64_t rows,
                         const tfm_cu_nd *p, const tfm_kctx *ctx, int *bad);

/* kernels_scatter.c: the device flag the index checks set instead of
 * reading back while this thread captures a CUDA graph (exec_cugraph.c
 * sets it around a capture; NULL: none). */
void tfm_cu_capture_flag(int *flag);
#ifdef TFMINI_WITH_CUDNN
/* Conv2D's forward of x and f (HWIO) into y through cuDNN, for ops that
 * add to it (kernels_fused_conv.c). *on_host set, with nothing run:
 * cuDNN cannot take it (not float32, no algorithm), and the caller runs
 * its own op on host copies. */
tfm_code tfm_cu_conv2d_forward(tfm_op op, const tfm_tensor *x,
                               const tfm_tensor *f, const tfm_attrs *a,
                               tfm_tensor *y, const tfm_kctx *ctx,
                               int *on_host);
#endif

#endif
