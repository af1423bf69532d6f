/* The small matrix product under the im2col convolutions, and the
 * window geometry. One thread per call: the conv kernels split their
 * work into row blocks and run those in parallel, which keeps each
 * block's im2col buffer hot in that core's cache.
 *
 * Register blocking: an MR x NR tile of C stays in registers while k
 * runs over a KC-deep slice (a KC x NR panel of B fits in L1). The tile
 * loops have constant trip counts, so the compiler unrolls and
 * vectorizes them for the machine (-march=native). A may be given
 * transposed (Conv2DBackpropFilter's cols^T @ dy), which only changes
 * how the tile reads its MR values of A per k. */
#include "conv.h"

#include <string.h>

#define MR 4
#define KC 256

/* A[i, k] of an A stored as is (lda per row) or transposed. */
#define A_AT(A, lda, trans, i, k) ((trans) ? (A)[(k) * (lda) + (i)]          \
                                           : (A)[(i) * (lda) + (k)])

#define GEMM_IMPL(SUF, T, NR)                                                \
static inline __attribute__((always_inline)) void                            \
micro_##SUF(int64_t K, const T *restrict A, int64_t lda, int trans,          \
            const T *restrict B, int64_t ldb, T *restrict C, int64_t ldc,    \
            int acc)                                                         \
{                                                                            \
    T c[MR][NR];                                                             \
    for (int r = 0; r < MR; r++)                                             \
        for (int j = 0; j < NR; j++)                                         \
            c[r][j] = 0;                                                     \
    for (int64_t k = 0; k < K; k++) {                                        \
        const T *restrict b = B + k * ldb;                                   \
        _Pragma("GCC unroll 4")                                              \
        for (int r = 0; r < MR; r++) {                                       \
            T a = A_AT(A, lda, trans, r, k);                                 \
            _Pragma("omp simd")                                              \
            for (int j = 0; j < NR; j++)                                     \
                c[r][j] += a * b[j];                                         \
        }                                                                    \
    }                                                                        \
    for (int r = 0; r < MR; r++) {                                           \
        T *restrict o = C + r * ldc;                                         \
        if (acc)                                                             \
            for (int j = 0; j < NR; j++)                                     \
                o[j] += c[r][j];                                             \
        else                                                                 \
            for (int j = 0; j < NR; j++)                                     \
                o[j] = c[r][j];                                              \
    }                                                                        \
}                                                                            \
                                                                             \
/* Fewer than MR rows left: one row at a time. */                            \
static void                                                                  \
rows_##SUF(int64_t mb, int64_t nb, int64_t K, const T *restrict A,           \
           int64_t lda, int trans, const T *restrict B, int64_t ldb,         \
           T *restrict C, int64_t ldc, int acc)                              \
{                                                                            \
    for (int64_t r = 0; r < mb; r++) {                                       \
        T c[NR];                                                             \
        for (int j = 0; j < NR; j++)                                         \
            c[j] = 0;                                                        \
        for (int64_t k = 0; k < K; k++) {                                    \
            T a = A_AT(A, lda, trans, r, k);                                 \
            const T *restrict b = B + k * ldb;                               \
            for (int64_t j = 0; j < nb; j++)                                 \
                c[j] += a * b[j];                                            \
        }                                                                    \
        T *restrict o = C + r * ldc;                                         \
        for (int64_t j = 0; j < nb; j++)                                     \
            o[j] = acc ? o[j] + c[j] : c[j];                                 \
    }                                                                        \
}                                                                            \
                                                                             \
/* One KC-deep slice: C (+)= A[:, k0:k0+kc] @ B[k0:k0+kc, :]. A narrow      \
 * last column panel is copied into a zero-padded NR-wide one, so that it    \
 * too runs in the register tile. */                                         \
static void                                                                  \
slice_##SUF(int64_t M, int64_t N, int64_t kc, const T *A, int64_t lda,       \
            int trans, const T *B, int64_t ldb, T *C, int64_t ldc, int acc)  \
{                                                                            \
    T panel[KC * NR], tile[MR * NR];                                         \
    for (int64_t j0 = 0; j0 < N; j0 += NR) {                                 \
        int64_t nb = N - j0 < NR ? N - j0 : NR;                              \
        const T *b = B + j0;                                                 \
        int64_t ldp = ldb;                                                   \
        if (nb < NR) {                                                       \
            for (int64_t k = 0; k < kc; k++)                                 \
                for (int64_t j = 0; j < NR; j++)                             \
                    panel[k * NR + j] = j < nb ? B[k * ldb + j0 + j] : 0;    \
            b = panel;                                                       \
            ldp = NR;                                                        \
        }                                                                    \
        int64_t i0 = 0;                                                      \
        for (; i0 + MR <= M; i0 += MR) {                                     \
            const T *a = trans ? A + i0 : A + i0 * lda;                      \
            T *c = C + i0 * ldc + j0;                                        \
            if (nb == NR) {                                                  \
                if (trans)                                                   \
                    micro_##SUF(kc, a, lda, 1, b, ldp, c, ldc, acc);         \
                else                                                         \
                    micro_##SUF(kc, a, lda, 0, b, ldp, c, ldc, acc);         \
                continue;                                                    \
            }                                                                \
            if (trans)                                                       \
                micro_##SUF(kc, a, lda, 1, b, ldp, tile, NR, 0);             \
            else                                                             \
                micro_##SUF(kc, a, lda, 0, b, ldp, tile, NR, 0);             \
            for (int r = 0; r < MR; r++)                                     \
                for (int64_t j = 0; j < nb; j++)                             \
                    c[r * ldc + j] = acc ? c[r * ldc + j] + tile[r * NR + j] \
                                         : tile[r * NR + j];                 \
        }                                                                    \
        if (i0 < M)                                                          \
            rows_##SUF(M - i0, nb, kc, trans ? A + i0 : A + i0 * lda, lda,   \
                       trans, b, ldp, C + i0 * ldc + j0, ldc, acc);          \
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

GEMM_IMPL(f32, float, 32)
GEMM_IMPL(f64, double, 16)

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
    /* The shape rule has checked that the window fits. */
    tfm_conv_dim(g->h, kh, g->sh, dh, mode, pads[0], pads[1], &g->oh,
                 &g->pt);
    tfm_conv_dim(g->w, kw, g->sw, dw, mode, pads[2], pads[3], &g->ow,
                 &g->pl);
}
