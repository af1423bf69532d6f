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
/* B packed as [ceil(N/64)][ceil(K/4)][64][4]: the four k values of one
 * column sit together, as vpdpbusd's second operand wants them, and a
 * block of 64 columns runs down K contiguously, so the kernel reads B
 * front to back; N is padded to a multiple of 64 and K to a multiple of
 * 4 with zeros, which add nothing. Weights are constants: packed once
 * and kept (Note [Packed weights]). */
#define PACKED_BYTES(K, N) ((size_t)(((K) + 3) / 4 * (((N) + 63) / 64) * 256))

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
pack_b(int64_t N, int64_t K, const int8_t *B, int8_t *bp)
{
    int64_t K4 = (K + 3) / 4;
    memset(bp, 0, PACKED_BYTES(K, N));
#define AT(n, kb) (bp + (((n) / 64 * K4 + (kb)) * 64 + (n) % 64) * 4)
    /* Four rows of B interleave into k-quads 16 columns at a time (two
     * rounds of unpacking); the ragged edges go byte by byte. */
    int64_t kfull = K / 4 * 4, nfull = N / 16 * 16;
    for (int64_t k = 0; k < kfull; k += 4) {
        const int8_t *r0 = B + k * N, *r1 = r0 + N, *r2 = r1 + N,
                     *r3 = r2 + N;
        for (int64_t n = 0; n < nfull; n += 16) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)(r0 + n));
            __m128i x1 = _mm_loadu_si128((const __m128i *)(r1 + n));
            __m128i x2 = _mm_loadu_si128((const __m128i *)(r2 + n));
            __m128i x3 = _mm_loadu_si128((const __m128i *)(r3 + n));
            __m128i t0 = _mm_unpacklo_epi8(x0, x1);
            __m128i t1 = _mm_unpackhi_epi8(x0, x1);
            __m128i t2 = _mm_unpacklo_epi8(x2, x3);
            __m128i t3 = _mm_unpackhi_epi8(x2, x3);
            __m128i *d = (__m128i *)AT(n, k / 4);
            _mm_storeu_si128(d, _mm_unpacklo_epi16(t0, t2));
            _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(t0, t2));
            _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(t1, t3));
            _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(t1, t3));
        }
        for (int64_t n = nfull; n < N; n++)
            for (int r = 0; r < 4; r++)
                AT(n, k / 4)[r] = B[(k + r) * N + n];
    }
    for (int64_t k = kfull; k < K; k++)
        for (int64_t n = 0; n < N; n++)
            AT(n, k / 4)[k % 4] = B[k * N + n];
#undef AT
}

/* One block of R (1..4) rows x 64 columns: 4R accumulators, and each
 * 64-byte load of B feeds R rows. R is a constant in each caller, so
 * the accumulators stay in registers. */
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline))
static inline void
block(int R, int64_t N, int64_t K4, int64_t n0,
      const uint8_t *const *ar, const int8_t *bp, int32_t *const *crow)
{
    __m512i acc[4][4];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < 4; j++)
            acc[r][j] = _mm512_setzero_si512();
    int nb = (int)((N - n0 + 15) / 16);
    nb = nb > 4 ? 4 : nb;
    for (int64_t kb = 0; kb < K4; kb++) {
        const int8_t *brow = bp + ((n0 / 64) * K4 + kb) * 256;
        __m512i b[4];
        for (int j = 0; j < nb; j++)
            b[j] = _mm512_loadu_si512(brow + j * 64);
        for (int r = 0; r < R; r++) {
            int32_t a4;
            memcpy(&a4, ar[r] + kb * 4, 4);
            __m512i av = _mm512_set1_epi32(a4);
            for (int j = 0; j < nb; j++)
                acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av, b[j]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int j = 0; j < nb; j++) {
            int64_t left = N - n0 - j * 16;
            __mmask16 mk = left >= 16 ? (__mmask16)0xFFFF
                                      : (__mmask16)((1u << left) - 1);
            _mm512_mask_storeu_epi32(crow[r] + n0 + j * 16, mk, acc[r][j]);
        }
}

/* C = A * B with B packed by pack_b; arows is M * K4 * 4 bytes of
 * scratch. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
qgemm_vnni(int64_t M, int64_t N, int64_t K, const uint8_t *A, int64_t lda,
           const int8_t *bp, int32_t *C, uint8_t *arows)
{
    int64_t K4 = (K + 3) / 4;
    /* A's rows, zero-padded to K4*4 so 4-byte loads stay in bounds. */
    for (int64_t m = 0; m < M; m++) {
        memcpy(arows + m * K4 * 4, A + m * lda, (size_t)K);
        memset(arows + m * K4 * 4 + K, 0, (size_t)(K4 * 4 - K));
    }
    int64_t mblocks = (M + 3) / 4;
#pragma omp parallel for schedule(static) if (M * N * K > (1 << 22))
    for (int64_t mb = 0; mb < mblocks; mb++) {
        int64_t m0 = mb * 4;
        int rows = M - m0 < 4 ? (int)(M - m0) : 4;
        const uint8_t *ar[4];
        int32_t *crow[4];
        for (int r = 0; r < rows; r++) {
            ar[r] = arows + (m0 + r) * K4 * 4;
            crow[r] = C + (m0 + r) * N;
        }
        for (int64_t n0 = 0; n0 < N; n0 += 64) {
            switch (rows) {
            case 4: block(4, N, K4, n0, ar, bp, crow); break;
            case 3: block(3, N, K4, n0, ar, bp, crow); break;
            case 2: block(2, N, K4, n0, ar, bp, crow); break;
            default: block(1, N, K4, n0, ar, bp, crow); break;
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

/* sum over k of B[k, n]: with it the callers take the activations' zero
 * point out (sum (u - zp) w = sum u w - zp sum w). */
static void
col_sums(const int8_t *B, int64_t K, int64_t N, int32_t *cs)
{
    memset(cs, 0, (size_t)N * sizeof *cs);
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++)
            cs[n] += B[k * N + n];
}

#ifdef TFM_QGEMM_X86
/* Note [Packed weights]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A quantized layer's weights are a constant of its graph: the same
 * buffer, with the same bytes, on every call. Packing them for vpdpbusd
 * and summing their columns on each call cost as much as the products
 * at batch 1, so the packed form and the column sums are kept here,
 * keyed by the weights' address and shape, from the first call on (in
 * a loaded model, its first run). A kernel cannot know that an address
 * still holds what was packed (a freed buffer's address comes back with
 * other bytes; a variable changes in place), so each entry keeps a copy
 * of the bytes it was packed from and a call uses it only when memcmp
 * says they are unchanged: a compare at memory speed, about K*N/64
 * cycles, where packing moved every byte through shuffles. An entry that
 * no longer matches is dropped and packed again. The cache holds at most
 * PACK_BUDGET bytes (least recently used entries go first; entries in
 * use by another thread are never freed under it). Cost: weights held
 * about three times (the graph's, the copy, the packed form). */
#include <pthread.h>

#define PACK_SLOTS 64
#define PACK_BUDGET ((size_t)64 << 20)

typedef struct wpack {
    const int8_t *src;      /* NULL: free slot */
    int64_t K, N;
    int8_t *copy, *packed;
    int32_t *cs;
    size_t bytes;
    int refs, dead;
    uint64_t used;
} wpack;

static wpack packs[PACK_SLOTS];
static size_t pack_bytes;
static uint64_t pack_clock;
static pthread_mutex_t pack_lock = PTHREAD_MUTEX_INITIALIZER;

static void
wpack_free(wpack *e)
{
    free(e->copy);
    free(e->packed);
    free(e->cs);
    pack_bytes -= e->bytes;
    memset(e, 0, sizeof *e);
}

/* With pack_lock held: drop unused entries, oldest first, until `need`
 * more bytes fit the budget and a slot is free; the free slot or NULL. */
static wpack *
make_room(size_t need)
{
    for (;;) {
        wpack *freeslot = NULL, *old = NULL;
        for (int i = 0; i < PACK_SLOTS; i++) {
            wpack *e = &packs[i];
            if (!e->src)
                freeslot = freeslot ? freeslot : e;
            else if (!e->refs && (!old || e->used < old->used))
                old = e;
        }
        if (freeslot && pack_bytes + need <= PACK_BUDGET)
            return freeslot;
        if (!old)
            return NULL;
        wpack_free(old);
    }
}

/* The entry for B (held: release with wpack_release), packed now if no
 * entry matches its bytes; NULL when out of memory. An entry the cache
 * has no room for is made all the same and freed on release. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static wpack *
wpack_get(const int8_t *B, int64_t K, int64_t N)
{
    size_t kn = (size_t)(K * N);
    pthread_mutex_lock(&pack_lock);
    for (int i = 0; i < PACK_SLOTS; i++) {
        wpack *e = &packs[i];
        if (e->src != B || e->K != K || e->N != N || e->dead)
            continue;
        e->refs++;
        e->used = ++pack_clock;
        pthread_mutex_unlock(&pack_lock);
        if (memcmp(e->copy, B, kn) == 0)
            return e;
        pthread_mutex_lock(&pack_lock);
        e->dead = 1;            /* the bytes changed: never matched again */
        if (--e->refs == 0)
            wpack_free(e);
        break;
    }
    pthread_mutex_unlock(&pack_lock);
    wpack fresh = {B, K, N, malloc(kn), malloc(PACKED_BYTES(K, N)),
                   malloc((size_t)N * sizeof(int32_t)), 0, 1, 0, 0};
    fresh.bytes = kn + PACKED_BYTES(K, N) + (size_t)N * 4;
    if (!fresh.copy || !fresh.packed || !fresh.cs) {
        free(fresh.copy);
        free(fresh.packed);
        free(fresh.cs);
        return NULL;
    }
    memcpy(fresh.copy, B, kn);
    pack_b(N, K, B, fresh.packed);
    col_sums(B, K, N, fresh.cs);
    pthread_mutex_lock(&pack_lock);
    wpack *slot = make_room(fresh.bytes);
    if (slot) {
        fresh.used = ++pack_clock;
        *slot = fresh;
        pack_bytes += fresh.bytes;
    }
    pthread_mutex_unlock(&pack_lock);
    if (slot)
        return slot;
    wpack *own = malloc(sizeof *own);
    if (own) {
        fresh.dead = 2;         /* not in the cache: freed on release */
        *own = fresh;
        return own;
    }
    free(fresh.copy);
    free(fresh.packed);
    free(fresh.cs);
    return NULL;
}

static void
wpack_release(wpack *e)
{
    if (e->dead == 2) {
        free(e->copy);
        free(e->packed);
        free(e->cs);
        free(e);
        return;
    }
    pthread_mutex_lock(&pack_lock);
    if (--e->refs == 0 && e->dead)
        wpack_free(e);
    pthread_mutex_unlock(&pack_lock);
}
#endif

void
tfm_qgemm_u8s8_sums(int64_t M, int64_t N, int64_t K, const uint8_t *A,
                    int64_t lda, const int8_t *B, int32_t *C, int32_t *cs)
{
    if (M < 0 || N <= 0)
        return;
    if (K <= 0) {
        memset(C, 0, (size_t)(M * N) * sizeof *C);
        if (cs)
            memset(cs, 0, (size_t)N * sizeof *cs);
        return;
    }
#ifdef TFM_QGEMM_X86
    if (tfm_qgemm_uses_vnni()) {
        int64_t K4 = (K + 3) / 4;
        wpack *e = wpack_get(B, K, N);
        uint8_t *ar = malloc((size_t)(M * K4 * 4) + 1);
        if (e && ar) {
            if (M > 0)
                qgemm_vnni(M, N, K, A, lda, e->packed, C, ar);
            if (cs)
                memcpy(cs, e->cs, (size_t)N * sizeof *cs);
            free(ar);
            wpack_release(e);
            return;
        }
        /* Out of memory for the packed copies: the loops need none. */
        free(ar);
        if (e)
            wpack_release(e);
    }
#endif
    if (cs)
        col_sums(B, K, N, cs);
    if (M > 0)
        qgemm_ref(M, N, K, A, lda, B, C);
}

void
tfm_qgemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *A,
               int64_t lda, const int8_t *B, int32_t *C)
{
    tfm_qgemm_u8s8_sums(M, N, K, A, lda, B, C, NULL);
}
