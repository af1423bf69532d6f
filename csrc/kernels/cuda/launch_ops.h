/* The launchers of random.cu, scatter.cu and rnn.cu's sequence steps for
 * their C glue (kernels_random.c, kernels_scatter.c, kernels_rnn.c):
 * plain C types only, so both compilers read it. As in launch.h, each
 * returns 0, a cudaError_t (> 0), or -1 when it has no kernel for the
 * request. Each mirrors the CPU kernel named beside it. */
#ifndef TFM_KERNELS_CUDA_LAUNCH_OPS_H
#define TFM_KERNELS_CUDA_LAUNCH_OPS_H

#include <stdint.h>

#include "launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Output kinds of the random and scatter launchers. */
enum { TFM_CU_OUT_F32, TFM_CU_OUT_F64, TFM_CU_OUT_I32, TFM_CU_OUT_I64 };
/* Distributions, as cpu/random.c draws them (Note [Random streams]). */
enum { TFM_CU_UNIFORM, TFM_CU_NORMAL, TFM_CU_TRUNCATED, TFM_CU_UNIFORM_INT };

/* n numbers of `kind` from Philox under key from counter (ctr_lo,
 * ctr_hi). Floats: uniform u * p1 + p0 (p0 = minval, p1 = maxval -
 * minval, already rounded to the output's dtype by the caller), normal
 * and truncated z * p1 + p0 (p0 = mean, p1 = stddev). Ints: ilo +
 * word % ispan, or the raw word when ispan is 0. */
int tfm_cu_random(int dist, int kind, uint64_t key, uint64_t ctr_lo,
                  uint64_t ctr_hi, double p0, double p1, uint64_t ilo,
                  uint64_t ispan, void *o, int64_t n, void *stream);

/* float16 uniform (p0 = minval, p1 = maxval - minval), normal and
 * truncated normal (p0 = mean, p1 = stddev), the parameters already
 * halves as cpu/random.c rounds them: */
int tfm_cu_random_half(int dist, uint64_t key, uint64_t ctr_lo,
                       uint64_t ctr_hi, float p0, float p1, uint16_t *o,
                       int64_t n, void *stream);
/* RandomShuffle's permutation of rows, on the host, into host memory: */
void tfm_cu_shuffle_perm(uint64_t key, uint64_t ctr_lo, uint64_t ctr_hi,
                         int64_t rows, int64_t *perm);
/* Multinomial of [batch, classes] logits x of type ty (TFM_CU_F32, F64,
 * F16) into [batch, n] int32 or, with wide, int64 samples; scratch holds
 * batch * (classes + 2) doubles: */
int tfm_cu_multinomial(int ty, int wide, uint64_t key, uint64_t ctr_lo,
                       uint64_t ctr_hi, const void *x, int64_t batch,
                       int64_t classes, int64_t n, double *scratch, void *o,
                       void *stream);

/* Where row k of an [rows, depth] index matrix points (cpu/
 * shape_gather.c's nd_offset): the sum of index * st[j] over the first
 * depth dims, valid when every index lies in [0, dims[j]). */
typedef struct tfm_cu_nd {
    int depth;
    int64_t dims[TFM_CU_MAX_DIMS];
    int64_t st[TFM_CU_MAX_DIMS];
} tfm_cu_nd;

/* *flag (device memory, zeroed by the caller) set to 1 when any index
 * row is out of range. */
int tfm_cu_scatter_check(int idx64, const void *idx, int64_t rows,
                         const tfm_cu_nd *p, int *flag, void *stream);
/* TensorScatterAdd of updates u [rows, len] into o (already a copy of
 * the tensor), indices checked: atomic adds of kind. */
int tfm_cu_scatter_add(int kind, int idx64, const void *idx, const void *u,
                       void *o, int64_t rows, int64_t len,
                       const tfm_cu_nd *p, void *stream);
/* TensorScatterUpdate of es-byte elements, the last of repeated index
 * rows winning as on the CPU: win, nslices int64 of device scratch
 * (nslices = o's elements / len), holds each slice's winning row. */
int tfm_cu_scatter_update(int es, int idx64, const void *idx, const void *u,
                          void *o, int64_t rows, int64_t len,
                          const tfm_cu_nd *p, long long *win,
                          int64_t nslices, void *stream);

/* One step of _LSTMSequence (cpu/rnn_seq.c): z [B, 4U] holds h @ R and
 * becomes the step's gates; x its projected input, added first. */
int tfm_cu_lstm_seq_step(int is64, const void *x, void *z, const void *cp,
                         void *h, void *c, int64_t batch, int64_t u,
                         void *stream);
/* One step of _LSTMSequenceGrad: LSTMGatesGrad with dh2 (NULL: none)
 * added to dh; dc is read and overwritten with dc_prev. */
int tfm_cu_lstm_seq_grad_step(int is64, const void *dh, const void *dh2,
                              void *dc, const void *g, const void *cp,
                              const void *c, void *dz, int64_t batch,
                              int64_t u, void *stream);

/* slice.cu. o[sum k_d * dst_strides[d]] = x[i] for the n elements of
 * a dense x of shape dims (ndim <= TFM_CU_MAX_DIMS): StridedSliceGrad's
 * dy onto its zeroed slice, PadV2's input into its interior. The
 * positions must be distinct. */
int tfm_cu_strided_scatter(int es, const void *x, void *o, int ndim,
                           const int64_t *dims, const int64_t *dst_strides,
                           int64_t n, void *stream);
/* ArgMax (is_min 0) / ArgMin of x viewed as [A, R, B] along R (R >= 1)
 * into o [A, B], int64 when wide else int32; x of kind TFM_CU_OUT_*.
 * cpu/reduce_arg.c's rule: first index of the best, the first NaN
 * beats every number. */
int tfm_cu_argreduce(int is_min, int kind, int wide, const void *x, void *o,
                     int64_t A, int64_t R, int64_t B, void *stream);
/* Cumsum (prod 0) / Cumprod of x [A, R, B] along R into y, exclusive
 * and/or reversed; kind TFM_CU_OUT_*; cpu/scan.c's order and
 * accumulators (double, wrapping uint64), so bit for bit. */
int tfm_cu_scan(int prod, int kind, const void *x, void *y, int64_t A,
                int64_t R, int64_t B, int excl, int rev, void *stream);
/* OneHot's on-values: o (already filled with off) gets *on (device
 * memory, es bytes) at [k / suffix, idx[k], k % suffix] of its [pre,
 * depth, suffix] view for each of the m indices in [0, depth); int32
 * indices, or int64 with idx64. */
int tfm_cu_one_hot(int es, int idx64, const void *idx, const void *on,
                   void *o, int64_t m, int64_t depth, int64_t suffix,
                   void *stream);
/* MirrorPad (REFLECT, or SYMMETRIC when symmetric) of a dense x of
 * shape idims (every dim >= 1; -1 otherwise) into o of shape odims,
 * lo[d] the leading pad: cpu/shape_pad.c's mirror_index per dim. */
int tfm_cu_mirror_pad(int es, int symmetric, const void *x, void *o,
                      int ndim, const int64_t *odims, const int64_t *idims,
                      const int64_t *lo, int64_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
