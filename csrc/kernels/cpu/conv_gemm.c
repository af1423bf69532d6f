/* The small matrix product under the im2col convolutions, and the
 * window geometry. One thread per call: the conv kernels split their
 * work into row blocks and run those in parallel, which keeps each
 * block's im2col buffer hot in that core's cache.
 *
 * Register blocking: an MR x NR tile of C (NR = two SIMD vectors) stays
 * in registers while k runs over a KC-deep slice; per k the tile loads
 * two vectors of B and broadcasts MR values of A. GCC's vector types
 * make the compiler keep the tile in registers (plain loops over a C
 * array reached only half the speed). The tile size follows the
 * register file: 32 vector registers with AVX-512, 16 otherwise. A may
 * be given transposed (Conv2DBackpropFilter's cols^T @ dy), which only
 * changes how the tile reads its MR values of A. Ragged edges are
 * copied into zero-padded panels and run through the same tile. */
#include "conv.h"
#include "gemm_dnnl.h"

#include <string.h>

#if defined(__AVX512F__)
#define VBYTES 64
#define MR 8
#elif defined(__AVX__)
#define VBYTES 32
#define MR 6
#else
#define VBYTES 16
#define MR 6
#endif
#define KC 256

typedef float vec_f32 __attribute__((vector_size(VBYTES)));
typedef double vec_f64 __attribute__((vector_size(VBYTES)));

#define GEMM_IMPL(SUF, T)                                                    \
enum { L_##SUF = VBYTES / sizeof(T), NR_##SUF = 2 * L_##SUF };               \
                                                                             \
static inline __attribute__((always_inline)) void                            \
micro_##SUF(int64_t K, const T *restrict A, int64_t lda, int trans,          \
            const T *restrict B, int64_t ldb, T *restrict C, int64_t ldc,    \
            int acc)                                                         \
{                                                                            \
    vec_##SUF c0[MR], c1[MR];                                                \
    for (int r = 0; r < MR; r++)                                             \
        c0[r] = c1[r] = (vec_##SUF){0};                                      \
    for (int64_t k = 0; k < K; k++) {                                        \
        vec_##SUF b0, b1;                                                    \
        memcpy(&b0, B + k * ldb, VBYTES);                                    \
        memcpy(&b1, B + k * ldb + L_##SUF, VBYTES);                          \
        for (int r = 0; r < MR; r++) {                                       \
            T a = trans ? A[k * lda + r] : A[r * lda + k];                   \
            c0[r] += a * b0;                                                 \
            c1[r] += a * b1;                                                 \
        }                                                                    \
    }                                                                        \
    for (int r = 0; r < MR; r++) {                                           \
        T *o = C + r * ldc;                                                  \
        if (acc) {                                                           \
            vec_##SUF o0, o1;                                                \
            memcpy(&o0, o, VBYTES);                                          \
            memcpy(&o1, o + L_##SUF, VBYTES);                                \
            c0[r] += o0;                                                     \
            c1[r] += o1;                                                     \
        }                                                                    \
        memcpy(o, &c0[r], VBYTES);                                           \
        memcpy(o + L_##SUF, &c1[r], VBYTES);                                 \
    }                                                                        \
}                                                                            \
                                                                             \
/* The tile on stored A rows (or columns, when trans) at a. */               \
static inline void                                                           \
tile_##SUF(int64_t kc, const T *a, int64_t lda, int trans, const T *b,       \
           int64_t ldb, T *c, int64_t ldc, int acc)                          \
{                                                                            \
    if (trans)                                                               \
        micro_##SUF(kc, a, lda, 1, b, ldb, c, ldc, acc);                     \
    else                                                                     \
        micro_##SUF(kc, a, lda, 0, b, ldb, c, ldc, acc);                     \
}                                                                            \
                                                                             \
/* One KC-deep slice: C (+)= A[:, k0:k0+kc] @ B[k0:k0+kc, :]. */             \
static void                                                                  \
slice_##SUF(int64_t M, int64_t N, int64_t kc, const T *A, int64_t lda,       \
            int trans, const T *B, int64_t ldb, T *C, int64_t ldc, int acc)  \
{                                                                            \
    enum { NR = NR_##SUF };                                                  \
    T bpad[KC * NR], apad[KC * MR], out[MR * NR];                            \
    for (int64_t j0 = 0; j0 < N; j0 += NR) {                                 \
        int64_t nb = N - j0 < NR ? N - j0 : NR;                              \
        const T *b = B + j0;                                                 \
        int64_t ldp = ldb;                                                   \
        if (nb < NR) {                                                       \
            for (int64_t k = 0; k < kc; k++)                                 \
                for (int64_t j = 0; j < NR; j++)                             \
                    bpad[k * NR + j] = j < nb ? B[k * ldb + j0 + j] : 0;     \
            b = bpad;                                                        \
            ldp = NR;                                                        \
        }                                                                    \
        for (int64_t i0 = 0; i0 < M; i0 += MR) {                             \
            int64_t mb = M - i0 < MR ? M - i0 : MR;                          \
            const T *a = trans ? A + i0 : A + i0 * lda;                      \
            T *c = C + i0 * ldc + j0;                                        \
            if (mb == MR && nb == NR) {                                      \
                tile_##SUF(kc, a, lda, trans, b, ldp, c, ldc, acc);          \
                continue;                                                    \
            }                                                                \
            int64_t la = lda;                                                \
            int ta = trans;                                                  \
            if (mb < MR) {                                                   \
                for (int64_t r = 0; r < MR; r++)                             \
                    for (int64_t k = 0; k < kc; k++)                         \
                        apad[r * kc + k] = r >= mb ? 0                       \
                            : trans ? a[k * lda + r] : a[r * lda + k];       \
                a = apad;                                                    \
                la = kc;                                                     \
                ta = 0;                                                      \
            }                                                                \
            tile_##SUF(kc, a, la, ta, b, ldp, out, NR, 0);                   \
            for (int64_t r = 0; r < mb; r++)                                 \
                for (int64_t j = 0; j < nb; j++)                             \
                    c[r * ldc + j] = acc ? c[r * ldc + j] + out[r * NR + j]  \
                                         : out[r * NR + j];                  \
        }                                                                    \
    }                                                                        \
}                                                                            \
                                                                             \
void                                                                         \
tfm_conv_gemm_##SUF(int trans_a, int64_t M, int64_t N, int64_t K,            \
                    const T *A, int64_t lda, const T *B, int64_t ldb, T *C,  \
                    int64_t ldc, int accumulate)                             \
{                                                                            \
    if (M <= 0 || N <= 0)                                                    \
        return;                                                              \
    if (K <= 0) {                                                            \
        if (!accumulate)                                                     \
            for (int64_t i = 0; i < M; i++)                                  \
                memset(C + i * ldc, 0, (size_t)N * sizeof(T));               \
        return;                                                              \
    }                                                                        \
    for (int64_t k0 = 0; k0 < K; k0 += KC) {                                 \
        int64_t kc = K - k0 < KC ? K - k0 : KC;                              \
        const T *a = trans_a ? A + k0 * lda : A + k0;                        \
        slice_##SUF(M, N, kc, a, lda, trans_a, B + k0 * ldb, ldb, C, ldc,    \
                    accumulate || k0 > 0);                                   \
    }                                                                        \
}

typedef vec_f32 vec_f32_own;
void tfm_conv_gemm_f32_own(int trans_a, int64_t M, int64_t N, int64_t K,
                           const float *A, int64_t lda, const float *B,
                           int64_t ldb, float *C, int64_t ldc,
                           int accumulate);
GEMM_IMPL(f32_own, float)
GEMM_IMPL(f64, double)

/* float32 through oneDNN when the build has it (its JIT kernels beat
 * this tile on the conv shapes: GEMM_CHOICE.md), else the tile above. */
void
tfm_conv_gemm_f32(int trans_a, int64_t M, int64_t N, int64_t K,
                  const float *A, int64_t lda, const float *B, int64_t ldb,
                  float *C, int64_t ldc, int accumulate)
{
    if (!tfm_gemm_f32_conv(trans_a, M, N, K, A, lda, B, ldb, C, ldc,
                           accumulate))
        tfm_conv_gemm_f32_own(trans_a, M, N, K, A, lda, B, ldb, C, ldc,
                              accumulate);
}

void
tfm_conv_geom_make(tfm_conv_geom *g, const tfm_shape *x, int64_t kh,
                   int64_t kw, int64_t o, int64_t dh, int64_t dw,
                   const tfm_attrs *a)
{
    int mode = (int)a->i[0];
    int64_t pads[4] = {0, 0, 0, 0};
    if (mode == TFM_PAD_EXPLICIT)
        memcpy(pads, a->ints + TFM_CONV_PADS, sizeof pads);
    g->n = x->dims[0];
    g->h = x->dims[1];
    g->w = x->dims[2];
    g->c = x->dims[3];
    g->kh = kh;
    g->kw = kw;
    g->o = o;
    g->sh = a->ints[TFM_CONV_STRIDE_H];
    g->sw = a->ints[TFM_CONV_STRIDE_W];
    g->dh = dh;
    g->dw = dw;
    g->groups = 1;
    /* The shape rule has checked that the window fits. */
    tfm_conv_dim(g->h, kh, g->sh, dh, mode, pads[0], pads[1], &g->oh,
                 &g->pt);
    tfm_conv_dim(g->w, kw, g->sw, dw, mode, pads[2], pads[3], &g->ow,
                 &g->pl);
}
