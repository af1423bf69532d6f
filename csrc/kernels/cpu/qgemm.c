/* Int8 x int8 -> int32 GEMM: AVX512-VNNI where the compiler and the CPU
 * have it, plain loops otherwise (and always under emscripten, which has
 * no x86 intrinsics). Both give the same integers: vpdpbusd adds four
 * u8*s8 products into an int32 lane without saturating, so nothing is
 * rounded on either path. */
#include "qgemm.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && !defined(__EMSCRIPTEN__) &&                   \
    (defined(__GNUC__) || defined(__clang__))
#define TFM_QGEMM_X86 1
#include <immintrin.h>
#endif

static void
qgemm_ref(int64_t M, int64_t N, int64_t K, const uint8_t *A, int64_t lda,
          const int8_t *B, int32_t *C)
{
    /* Row of C at a time, k outer: B is read row by row, contiguously. */
#pragma omp parallel for schedule(static) if (M * N * K > (1 << 20))
    for (int64_t m = 0; m < M; m++) {
        int32_t *c = C + m * N;
        memset(c, 0, (size_t)N * sizeof *c);
        for (int64_t k = 0; k < K; k++) {
            int32_t av = A[m * lda + k];
            const int8_t *b = B + k * N;
            for (int64_t n = 0; n < N; n++)
                c[n] += av * b[n];
        }
    }
}

#ifdef TFM_QGEMM_X86
/* B packed as [ceil(K/4)][N16][4]: the four k values of one column sit
 * together, as vpdpbusd's second operand wants them; N is padded to a
 * multiple of 16 and K to a multiple of 4 with zeros, which add nothing.
 * Packing costs K*N bytes per call: the weights are constants, but a
 * kernel has no place to keep a packed copy between runs, and at batch
 * 64 the packing is a small part of the work. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
qgemm_vnni(int64_t M, int64_t N, int64_t K, const uint8_t *A, int64_t lda,
           const int8_t *B, int32_t *C, int8_t *bp, uint8_t *arows)
{
    int64_t K4 = (K + 3) / 4, N16 = (N + 15) / 16 * 16;
    memset(bp, 0, (size_t)(K4 * N16 * 4));
    /* Four rows of B interleave into k-quads 16 columns at a time (two
     * rounds of unpacking); the ragged edges go byte by byte. */
    int64_t kfull = K / 4 * 4, nfull = N / 16 * 16;
    for (int64_t k = 0; k < kfull; k += 4) {
        const int8_t *r0 = B + k * N, *r1 = r0 + N, *r2 = r1 + N,
                     *r3 = r2 + N;
        int8_t *dst = bp + (k / 4) * N16 * 4;
        for (int64_t n = 0; n < nfull; n += 16) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)(r0 + n));
            __m128i x1 = _mm_loadu_si128((const __m128i *)(r1 + n));
            __m128i x2 = _mm_loadu_si128((const __m128i *)(r2 + n));
            __m128i x3 = _mm_loadu_si128((const __m128i *)(r3 + n));
            __m128i t0 = _mm_unpacklo_epi8(x0, x1);
            __m128i t1 = _mm_unpackhi_epi8(x0, x1);
            __m128i t2 = _mm_unpacklo_epi8(x2, x3);
            __m128i t3 = _mm_unpackhi_epi8(x2, x3);
            __m128i *d = (__m128i *)(dst + n * 4);
            _mm_storeu_si128(d, _mm_unpacklo_epi16(t0, t2));
            _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(t0, t2));
            _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(t1, t3));
            _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(t1, t3));
        }
        for (int64_t n = nfull; n < N; n++)
            for (int r = 0; r < 4; r++)
                dst[n * 4 + r] = B[(k + r) * N + n];
    }
    for (int64_t k = kfull; k < K; k++) {
        int8_t *dst = bp + (k / 4) * N16 * 4 + k % 4;
        for (int64_t n = 0; n < N; n++)
            dst[n * 4] = B[k * N + n];
    }
    /* A's rows, zero-padded to K4*4 so 4-byte loads stay in bounds. */
    for (int64_t m = 0; m < M; m++) {
        memcpy(arows + m * K4 * 4, A + m * lda, (size_t)K);
        memset(arows + m * K4 * 4 + K, 0, (size_t)(K4 * 4 - K));
    }
    /* Blocks of 4 rows x 64 columns: 16 accumulators, and each 64-byte
     * load of B feeds four rows. */
    int64_t mblocks = (M + 3) / 4;
#pragma omp parallel for schedule(static) if (M * N * K > (1 << 22))
    for (int64_t mb = 0; mb < mblocks; mb++) {
        int64_t m0 = mb * 4;
        int rows = M - m0 < 4 ? (int)(M - m0) : 4;
        const uint8_t *ar[4];
        for (int r = 0; r < 4; r++)
            ar[r] = arows + (m0 + (r < rows ? r : 0)) * K4 * 4;
        for (int64_t n0 = 0; n0 < N; n0 += 64) {
            __m512i acc[4][4];
            for (int r = 0; r < 4; r++)
                for (int j = 0; j < 4; j++)
                    acc[r][j] = _mm512_setzero_si512();
            int nb = (int)((N - n0 + 15) / 16);
            nb = nb > 4 ? 4 : nb;
            for (int64_t kb = 0; kb < K4; kb++) {
                const int8_t *brow = bp + (kb * N16 + n0) * 4;
                __m512i b[4];
                for (int j = 0; j < nb; j++)
                    b[j] = _mm512_loadu_si512(brow + j * 64);
                for (int r = 0; r < 4; r++) {
                    int32_t a4;
                    memcpy(&a4, ar[r] + kb * 4, 4);
                    __m512i av = _mm512_set1_epi32(a4);
                    for (int j = 0; j < nb; j++)
                        acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av, b[j]);
                }
            }
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < nb; j++) {
                    int64_t left = N - n0 - j * 16;
                    __mmask16 mk = left >= 16
                                       ? (__mmask16)0xFFFF
                                       : (__mmask16)((1u << left) - 1);
                    _mm512_mask_storeu_epi32(C + (m0 + r) * N + n0 + j * 16,
                                             mk, acc[r][j]);
                }
        }
    }
}
#endif

int
tfm_qgemm_uses_vnni(void)
{
    static _Atomic int cached = -1;
    int v = atomic_load(&cached);
    if (v >= 0)
        return v;
    v = 0;
#ifdef TFM_QGEMM_X86
    __builtin_cpu_init();
    const char *ref = getenv("TFMINI_QGEMM_REF");
    v = __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("avx512bw") && !(ref && *ref && *ref != '0');
#endif
    atomic_store(&cached, v);
    return v;
}

void
tfm_qgemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *A,
               int64_t lda, const int8_t *B, int32_t *C)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) {
        memset(C, 0, (size_t)(M * N) * sizeof *C);
        return;
    }
#ifdef TFM_QGEMM_X86
    /* Packing B costs about as much as a few rows of products: below
     * four rows the plain loops (vectorized by the compiler) win. */
    if (M >= 4 && tfm_qgemm_uses_vnni()) {
        int64_t K4 = (K + 3) / 4, N16 = (N + 15) / 16 * 16;
        int8_t *bp = malloc((size_t)(K4 * N16 * 4));
        uint8_t *ar = malloc((size_t)(M * K4 * 4));
        if (bp && ar) {
            qgemm_vnni(M, N, K, A, lda, B, C, bp, ar);
            free(bp);
            free(ar);
            return;
        }
        /* Out of memory for the packed copies: the loops need none. */
        free(bp);
        free(ar);
    }
#endif
    qgemm_ref(M, N, K, A, lda, B, C);
}
