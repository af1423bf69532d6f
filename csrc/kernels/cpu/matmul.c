/* BatchMatMulV2 on the CPU: tiny float32 products through a plain loop
 * (TINY_GEMM); bigger ones through oneDNN when built with it
 * (gemm_dnnl.c), else like float64 through Eigen's GEMM (gemm_eigen.cc);
 * bfloat16 with float32 accumulation (tfm_gemm_bf16, one product at a
 * time: oneDNN splits each over the cores);
 * integers through a plain loop that wraps around on overflow like
 * TF's. Batch dims broadcast: each output matrix finds its
 * two input matrices through broadcast strides counted in matrices. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_dnnl.h"
#include "linalg.h"
#include "loops.h"

/* In a batch, products smaller than this (m*n*k) run one per thread over
 * the batch; bigger ones run one at a time, each split over all cores by
 * the Eigen shim. A lone product is split by the shim from a smaller
 * size (its kParallelWork): one parallel region per product pays there,
 * one per matrix of a batch of them does not (a batch of 100 64x64x64
 * products: 187 us over the batch, 435 us split one by one). */
#define SMALL_GEMM (128 * 128 * 128)

typedef struct plan {
    int64_t m, n, k, nbatch;
    int ta, tb;
    size_t esize;
    int nb;                          /* batch rank of the output */
    int64_t bdims[TFM_MAX_DIMS];
    int64_t sa[TFM_MAX_DIMS], sb[TFM_MAX_DIMS];  /* in matrices */
    int bcast;                       /* batch dims differ between inputs */
} plan;

static void
plan_make(const tfm_tensor *a, const tfm_tensor *b, const tfm_tensor *o,
          const tfm_attrs *at, plan *p)
{
    int ra = a->shape.ndim, rb = b->shape.ndim, ro = o->shape.ndim;
    p->ta = at->i[0] != 0;
    p->tb = at->i[1] != 0;
    p->m = o->shape.dims[ro - 2];
    p->n = o->shape.dims[ro - 1];
    p->k = a->shape.dims[ra - (p->ta ? 2 : 1)];
    p->esize = tfm_dtype_size(o->dtype);
    p->nb = ro - 2;
    if (ro == 2) {
        /* One product (both inputs are matrices): building the batch
         * shapes below was 30 of a tiny matmul's 290 ns. */
        p->nbatch = 1;
        p->bcast = 0;
        return;
    }
    tfm_shape ba = tfm_shape_make(ra - 2, a->shape.dims);
    tfm_shape bb = tfm_shape_make(rb - 2, b->shape.dims);
    tfm_shape bo = tfm_shape_make(ro - 2, o->shape.dims);
    p->nbatch = tfm_shape_numel(&bo);
    p->bcast = !tfm_shape_equal(&ba, &bo) || !tfm_shape_equal(&bb, &bo);
    for (int d = 0; d < p->nb; d++)
        p->bdims[d] = bo.dims[d];
    tfm_shape_broadcast_strides(&ba, &bo, p->sa);
    tfm_shape_broadcast_strides(&bb, &bo, p->sb);
}

/* Indices (in matrices) of the inputs of output matrix t. */
static inline void
plan_batch(const plan *p, int64_t t, int64_t *ia, int64_t *ib)
{
    if (!p->bcast) {
        *ia = *ib = t;
        return;
    }
    tfm_batch_inputs(p->nb, p->bdims, p->sa, p->sb, t, ia, ib);
}

typedef void (*gemm_fn)(int64_t m, int64_t n, int64_t k, const void *a,
                        int ta, const void *b, int tb, void *c);

/* float32 products of at most TINY_GEMM multiply-adds are a plain loop
 * on the calling thread. oneDNN's sgemm spends 150-600 ns a call before
 * any arithmetic (ISA queries, its gemm_info setup, our team settings),
 * most of a 2x2 tf.matmul. Measured through tf.matmul (one process,
 * best of 7): n x n x n at n = 2, 4, 8 in 266, 287, 442 ns by the loop
 * against 713-726 ns by sgemm; n = 9 and 10 even; so the line is 8^3.
 * float64 stays on Eigen, whose small products were as fast (n = 2, 4)
 * or faster (n = 6, 8: 415 against 464 ns, 491 against 564). One dot
 * product per output element, summed in order like a reference loop:
 * NaN and Inf propagate as in any GEMM, and k == 0 gives zeros.
 * TFMINI_GEMM (gemm_dnnl.c) names a backend for every product, tiny
 * ones included: with it set, this path is off. */
#define TINY_GEMM 512

static atomic_int tiny_on;      /* 0: not yet read, 1: on, 2: off */

static int
tiny(int64_t m, int64_t n, int64_t k)
{
    if (m * n * k > TINY_GEMM)
        return 0;
    int on = atomic_load_explicit(&tiny_on, memory_order_relaxed);
    if (on == 0) {
        on = getenv("TFMINI_GEMM") ? 2 : 1;
        atomic_store_explicit(&tiny_on, on, memory_order_relaxed);
    }
    return on == 1;
}

static void
tiny_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int ta,
              const float *b, int tb, float *c)
{
    int64_t sai = ta ? 1 : k, sap = ta ? m : 1;
    int64_t sbp = tb ? 1 : n, sbj = tb ? k : 1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float s = 0;
            for (int64_t p = 0; p < k; p++)
                s += a[i * sai + p * sap] * b[p * sbp + j * sbj];
            c[i * n + j] = s;
        }
}

static void
gemm_f32(int64_t m, int64_t n, int64_t k, const void *a, int ta,
         const void *b, int tb, void *c)
{
    if (tiny(m, n, k))
        tiny_gemm_f32(m, n, k, a, ta, b, tb, c);
    else
        tfm_gemm_f32_best(m, n, k, a, ta, b, tb, c);
}

static void
gemm_f64(int64_t m, int64_t n, int64_t k, const void *a, int ta,
         const void *b, int tb, void *c)
{
    tfm_gemm_f64(m, n, k, a, ta, b, tb, c);
}

/* Integer product in an unsigned accumulator type AT, so that overflow
 * wraps (two's complement) instead of being undefined. Rows of c are
 * accumulated p-major so that b and c are walked contiguously. */
#define INT_GEMM(NAME, T, AT)                                                \
static void                                                                  \
NAME(int64_t m, int64_t n, int64_t k, const void *a_, int ta,                \
     const void *b_, int tb, void *c_)                                       \
{                                                                            \
    const T *a = a_, *b = b_;                                                \
    T *c = c_;                                                               \
    int64_t sai = ta ? 1 : k, sap = ta ? m : 1;                              \
    int64_t sbp = tb ? 1 : n, sbj = tb ? k : 1;                              \
    TFM_PAR_FOR(m * n * k >= TFM_PAR_MIN, i, m,                              \
        T *ci = c + i * n;                                                   \
        for (int64_t j = 0; j < n; j++)                                      \
            ci[j] = 0;                                                       \
        for (int64_t p = 0; p < k; p++) {                                    \
            AT x = (AT)a[i * sai + p * sap];                                 \
            const T *bp = b + p * sbp;                                       \
            for (int64_t j = 0; j < n; j++)                                  \
                ci[j] = (T)((AT)ci[j] + x * (AT)bp[j * sbj]);                \
        }                                                                    \
    );                                                                       \
}

INT_GEMM(gemm_i8, int8_t, uint32_t)
INT_GEMM(gemm_u8, uint8_t, uint32_t)
INT_GEMM(gemm_i16, int16_t, uint32_t)
INT_GEMM(gemm_i32, int32_t, uint32_t)
INT_GEMM(gemm_i64, int64_t, uint64_t)

static gemm_fn
gemm_for(tfm_dtype d)
{
    switch (d) {
    case TFM_FLOAT32: return gemm_f32;
    case TFM_FLOAT64: return gemm_f64;
    case TFM_COMPLEX64: return tfm_gemm_c64;
    case TFM_COMPLEX128: return tfm_gemm_c128;
    case TFM_INT8: return gemm_i8;
    case TFM_UINT8: return gemm_u8;
    case TFM_INT16: return gemm_i16;
    case TFM_INT32: return gemm_i32;
    case TFM_INT64: return gemm_i64;
    default: return NULL;
    }
}

tfm_code
tfm_k_matmul(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    gemm_fn f = gemm_for(out[0]->dtype);
    int bf16 = out[0]->dtype == TFM_BFLOAT16;
    if (!f && !bf16)
        return tfm_linalg_no_kernel(op, out[0]->dtype);
    plan p;
    plan_make(in[0], in[1], out[0], a, &p);
    if (p.nbatch == 0 || p.m == 0 || p.n == 0)
        return TFM_OK;
    const char *pa = tfm_tensor_data(in[0]);
    const char *pb = tfm_tensor_data(in[1]);
    char *pc = tfm_tensor_data(out[0]);
    size_t as = (size_t)(p.m * p.k) * p.esize;
    size_t bs = (size_t)(p.k * p.n) * p.esize;
    size_t cs = (size_t)(p.m * p.n) * p.esize;
    int64_t work = p.m * p.n * (p.k ? p.k : 1);
    if (bf16) {
        for (int64_t t = 0; t < p.nbatch; t++) {
            int64_t ia, ib;
            plan_batch(&p, t, &ia, &ib);
            if (tfm_gemm_bf16(p.m, p.n, p.k,
                              (const uint16_t *)(pa + ia * as), p.ta,
                              (const uint16_t *)(pb + ib * bs), p.tb,
                              (uint16_t *)(pc + t * cs)))
                return tfm_error_code();
        }
        return TFM_OK;
    }
    int integer = tfm_dtype_is_int(out[0]->dtype);
    /* The shim splits one big float product over the cores itself;
     * everything else (small products, integer loops) is split over the
     * batch. */
    int per_batch = p.nbatch > 1 && (integer || work < SMALL_GEMM);
    if (per_batch) {
        TFM_PAR_FOR(p.nbatch * work >= TFM_PAR_MIN, t, p.nbatch,
            int64_t ia, ib;
            plan_batch(&p, t, &ia, &ib);
            f(p.m, p.n, p.k, pa + ia * as, p.ta, pb + ib * bs, p.tb,
              pc + t * cs);
        );
        return TFM_OK;
    }
    for (int64_t t = 0; t < p.nbatch; t++) {
        int64_t ia, ib;
        plan_batch(&p, t, &ia, &ib);
        f(p.m, p.n, p.k, pa + ia * as, p.ta, pb + ib * bs, p.tb,
          pc + t * cs);
    }
    return TFM_OK;
}
