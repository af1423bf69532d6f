/* The launchers the .cu files give the C glue (kernels.c): plain C
 * types only, so both compilers read it. Each returns 0, or a
 * cudaError_t (> 0), or -1 when it has no kernel for the request. */
#ifndef TFM_KERNELS_CUDA_LAUNCH_H
#define TFM_KERNELS_CUDA_LAUNCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A row of ../ew_formulas.def by its place in the file: both sides
 * expand the same rows into this enum. */
enum {
#define EW(OP, LOOP, F32, F64) TFM_CU_EW_##OP,
#define EW_NONE(OP)
#include "../ew_formulas.def"
#undef EW
#undef EW_NONE
    TFM_CU_EW_COUNT
};

#define TFM_CU_MAX_DIMS 8

/* A broadcast as cpu/loops.h plans it (tfm_bcast), dims merged:
 * kind 0 same shapes, 1 x is a scalar, 2 y is a scalar, 3 general. */
typedef struct tfm_cu_bcast {
    int kind;
    int ndim;
    int64_t n;
    int64_t dims[TFM_CU_MAX_DIMS];
    int64_t sa[TFM_CU_MAX_DIMS], sb[TFM_CU_MAX_DIMS];
} tfm_cu_bcast;

/* The element types of the elementwise launchers (ty): the 16-bit
 * floats compute in float32 inside the kernel (ew.cu). */
enum { TFM_CU_F32, TFM_CU_F64, TFM_CU_F16, TFM_CU_BF16 };

int tfm_cu_binary(int row, int ty, const void *x, const void *y, void *o,
                  const tfm_cu_bcast *p, void *stream);
int tfm_cu_unary(int row, int ty, const void *x, void *o, int64_t n,
                 double prm, int iprm, void *stream);

/* Comparisons cmp 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >= into bool (one byte)
 * elements, broadcasting as tfm_cu_binary. */
int tfm_cu_compare(int cmp, int ty, const void *x, const void *y, void *o,
                   const tfm_cu_bcast *p, void *stream);

/* Casts between float32 (0), float64 (1), int32 (2), int64 (3),
 * bool (4, one byte), float16 (5) and bfloat16 (6); to a 16-bit float
 * through float32, as the CPU rounds (cpu/cast.c). */
int tfm_cu_cast(int from, int to, const void *x, void *o, int64_t n,
                void *stream);

/* SelectV2 over bool c and x, y of es-byte elements, all broadcast to
 * the output: strides per operand over the output's ndim dims. */
int tfm_cu_select(int es, const void *c, const void *x, const void *y,
                  void *o, int ndim, const int64_t *dims,
                  const int64_t *sc, const int64_t *sx, const int64_t *sy,
                  int64_t n, void *stream);

/* Reduce kind 0 sum, 1 mean, 2 max, 3 min, 4 prod (5 all, 6 any: bool
 * x and output) over x of element type ty (TFM_CU_F32/F64/F16/BF16; the
 * 16-bit floats in float32, one rounding at the end): the output's nkeep
 * kept dims (sizes, x's strides) times nred reduced dims. scratch: device
 * memory of tfm_cu_reduce_scratch's bytes for the same arguments (NULL
 * where that is 0), which the caller takes from the GPU's allocator and
 * may free once this is queued. The softmax and cross-entropy launchers
 * below take ty the same way. */
int64_t tfm_cu_reduce_scratch(int kind, int ty, int nkeep,
                              const int64_t *kdims, int nred,
                              const int64_t *rdims);
int tfm_cu_reduce(int kind, int ty, const void *x, void *o,
                  int nkeep, const int64_t *kdims, const int64_t *kstr,
                  int nred, const int64_t *rdims, const int64_t *rstr,
                  void *scratch, void *stream);

/* Softmax / LogSoftmax (take_log) over the middle dim of x viewed as
 * [outer, n, inner] (nn.cu). */
int tfm_cu_softmax(int ty, int take_log, const void *x, void *y,
                   int64_t outer, int64_t n, int64_t inner, void *stream);
/* SparseSoftmaxCrossEntropyWithLogits over rows of n classes; labels
 * int32, or int64 with label64. */
int tfm_cu_sparse_xent(int ty, int label64, const void *x, const void *lab,
                       void *loss, void *back, int64_t rows, int64_t n,
                       void *stream);
/* SoftmaxCrossEntropyWithLogits over the middle dim of [outer, n, inner]. */
int tfm_cu_xent(int ty, const void *x, const void *lab, void *loss,
                void *back, int64_t outer, int64_t n, int64_t inner,
                void *stream);

/* Transpose of es-byte elements: output dim d reads the input with
 * stride src_strides[d] (shape.cu). */
int tfm_cu_transpose(int es, const void *x, void *o, int ndim,
                     const int64_t *odims, const int64_t *src_strides,
                     int64_t n, void *stream);
/* GatherV2 with batch_dims 0: x viewed as [outer, dim, inner], indices
 * int32 (or int64 with idx64), output [outer, nidx, inner]. */
int tfm_cu_gather(int es, int idx64, const void *x, const void *idx,
                  void *o, int64_t outer, int64_t dim, int64_t inner,
                  int64_t nidx, void *stream);

/* One pooling window geometry, NHWC: x [n, h, w, c], window kh x kw,
 * strides sh, sw, output [n, oh, ow, c], leading pads pt, pl (the CPU's
 * tfm_conv_geom, copied into plain fields for nvcc). */
typedef struct tfm_cu_pool_geom {
    int64_t n, h, w, c, kh, kw, sh, sw, oh, ow, pt, pl;
} tfm_cu_pool_geom;

/* Pooling as the CPU computes it (cpu/conv_pool.c): padding never takes
 * part, a max takes the first maximum in window order (a NaN counts as
 * one), an average divides by the window's real cells. kind 0 MaxPool
 * (x -> y), 1 AvgPool (x -> y), 2 MaxPoolGrad (x, dy -> dx), 3
 * AvgPoolGrad (dy -> dx; a unused), 4 MaxPoolGradGrad (x, ddx -> ddy).
 * The input gradients gather per input cell from the windows covering
 * it (no atomics, the CPU's order of additions). pool.cu. */
int tfm_cu_pool(int kind, int is64, const tfm_cu_pool_geom *g, const void *a,
                const void *b, void *o, void *stream);

/* dst[n, i, j, :] = src[n, i - top, j - left, :], zero where that is
 * outside src: es-byte elements, src [n, sh, sw, c], dst [n, dh, dw, c].
 * Negative top/left crop. Pads and crops around cuDNN's symmetric-only
 * padding (conv_cudnn.c). pool.cu. */
int tfm_cu_pad_nhwc(int es, const void *src, void *dst, int64_t n,
                    int64_t sh, int64_t sw, int64_t c, int64_t dh,
                    int64_t dw, int64_t top, int64_t left, void *stream);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* What every elementwise-shaped kernel of the .cu files launches with:
 * TFM_CU_THREADS threads a block, tfm_cu_blocks_for(n) blocks, and a
 * grid-stride loop over the n elements, so that any grid covers them.
 * The cap, 8 x 65535 blocks (2^27 threads), is many full waves on any
 * GPU (an H100 holds about 1,000 such blocks at once): past it more
 * blocks only add launch work, while the loop keeps larger n correct.
 * (ew.cu capped at 4 x 65535 before; for n past 2^26 elements its grid
 * is now larger, its values the same: each element is computed alone.) */
#define TFM_CU_THREADS 256

static inline unsigned
tfm_cu_blocks_for(int64_t n)
{
    int64_t b = (n + TFM_CU_THREADS - 1) / TFM_CU_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

#define TFM_CU_GRID_STRIDE(i, n)                                             \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;         \
         i < (n); i += (int64_t)gridDim.x * blockDim.x)
#endif

#endif
