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

/* Each sum of a packed GEMM finished as o says, for row m, columns
 * n0..n1-1 (acc[0] is column n0). Plain loops over one row's columns,
 * so the compiler vectorizes them. */
static void
finish(const tfm_qout *o, int64_t N, int64_t m, int64_t n0, int64_t n1,
       const int32_t *acc)
{
    int64_t w = n1 - n0;
    if (o->kind == TFM_QOUT_INT32) {
        memcpy((int32_t *)o->y + m * N + n0, acc, (size_t)w * sizeof *acc);
        return;
    }
    if (o->kind == TFM_QOUT_HYBRID) {
        /* Everything read through locals: a store to y could alias o's
         * fields, and reloading them each time stops vectorization. */
        float *restrict y = (float *)o->y + m * N + n0;
        const int32_t *restrict cs = o->cs + n0;
        const float *restrict mult = o->mult + n0;
        const float *restrict fb = o->fbias ? o->fbias + n0 : NULL;
        int32_t rz = o->rz[m];
        float rs = o->rs[m];
        int act = o->act;
        for (int64_t n = 0; n < w; n++)
            y[n] = (float)(acc[n] - rz * cs[n]) * rs * mult[n];
        if (fb)
            for (int64_t n = 0; n < w; n++)
                y[n] += fb[n];
        if (act != TFM_QACT_NONE)
            for (int64_t n = 0; n < w; n++)
                y[n] = y[n] < 0 ? 0.0f : y[n];
        if (act == TFM_QACT_RELU6)
            for (int64_t n = 0; n < w; n++)
                y[n] = y[n] > 6 ? 6.0f : y[n];
        return;
    }
    const int64_t *cb = o->cb + n0;
    const float *mult = o->mult + n0;
    float flo = o->flo, fhi = o->fhi;
    int32_t zout = o->zout;
    int32_t q[64];
    for (int64_t n = 0; n < w; n++) {
        /* exact in double (|sum| < 2^33), so one rounding to float, as
         * from the int64 sum, in conversions that vectorize */
        float d = (float)((double)acc[n] + (double)cb[n]) * mult[n];
        d = d > fhi ? fhi : d;
        d = d >= flo ? d : flo;
        q[n] = (int32_t)(d + (d >= 0 ? 0.5f : -0.5f));
    }
    if (o->kind == TFM_QOUT_INT8) {
        int8_t *restrict y = (int8_t *)o->y + m * N + n0;
        for (int64_t n = 0; n < w; n++)
            y[n] = (int8_t)(q[n] + zout);
    } else {
        float *restrict y = (float *)o->y + m * N + n0;
        float s = o->s_out;
        for (int64_t n = 0; n < w; n++)
            y[n] = (float)q[n] * s;
    }
}

/* The packed GEMM in plain loops: one row and one 16-column panel at a
 * time, in the packed layout, so they need no other form of B. */
static void
packed_ref(int64_t M, int64_t N, int64_t K, const uint8_t *A,
           const int8_t *bp, const tfm_qout *o)
{
    int64_t K4 = (K + 3) / 4, P = (N + 15) / 16;
#pragma omp parallel for schedule(static) if (M * N * K > (1 << 20))
    for (int64_t m = 0; m < M; m++) {
        const uint8_t *a = A + m * K4 * 4;
        for (int64_t p = 0; p < P; p++) {
            int32_t acc[16] = {0};
            int w = N - p * 16 < 16 ? (int)(N - p * 16) : 16;
            const int8_t *b = bp + p * K4 * 64;
            for (int64_t kb = 0; kb < K4; kb++, b += w * 4) {
                int32_t a0 = a[kb * 4], a1 = a[kb * 4 + 1],
                        a2 = a[kb * 4 + 2], a3 = a[kb * 4 + 3];
                for (int c = 0; c < w; c++)
                    acc[c] += a0 * b[c * 4] + a1 * b[c * 4 + 1]
                              + a2 * b[c * 4 + 2] + a3 * b[c * 4 + 3];
            }
            finish(o, N, m, p * 16, p * 16 + w, acc);
        }
    }
}
#ifdef TFM_QGEMM_X86
#define PACKED_BYTES(K, N) ((size_t)TFM_QPACK_BYTES(K, N))

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
pack_b(int64_t N, int64_t K, const int8_t *B, int8_t *bp)
{
    int64_t K4 = (K + 3) / 4;
    memset(bp, 0, PACKED_BYTES(K, N));
    int64_t last_w = N - (N - 1) / 16 * 16;   /* the last panel's width */
#define AT(n, kb)                                                         \
    (bp + (n) / 16 * K4 * 64                                              \
     + ((kb) * ((n) / 16 == (N - 1) / 16 ? last_w : 16) + (n) % 16) * 4)
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


/* One block of R (1..4) rows x NB (1..4) panels of 16 columns: R*NB
 * accumulators, and each 64-byte load of B feeds R rows. R and NB are
 * constants in each caller, so the loops unroll and the accumulators
 * stay in registers (indexed by a variable, they went to the stack).
 * The sums go through a small tile to finish(), still in cache. */
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline))
static inline void
block(int R, int nb, int64_t N, int64_t K4, int64_t m0, int64_t n0,
      const uint8_t *const *ar, const int8_t *bp, const tfm_qout *o)
{
    __m512i acc[4][4];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < nb; j++)
            acc[r][j] = _mm512_setzero_si512();
    /* Each panel's start, row stride and load mask: the last panel of a
     * ragged N is narrower (Note [Packed int8 weights]); the masked-off
     * lanes read nothing and their sums are never stored. */
    const int8_t *pan[4];
    int64_t step[4];
    __mmask64 mk[4];
    for (int j = 0; j < nb; j++) {
        int64_t w = N - n0 - j * 16;
        w = w < 16 ? w : 16;
        pan[j] = bp + (n0 / 16 + j) * K4 * 64;
        step[j] = w * 4;
        mk[j] = w == 16 ? ~(__mmask64)0 : (((__mmask64)1 << (w * 4)) - 1);
    }
    for (int64_t kb = 0; kb < K4; kb++) {
        __m512i b[4];
        for (int j = 0; j < nb; j++)
            b[j] = _mm512_maskz_loadu_epi8(mk[j], pan[j] + kb * step[j]);
        for (int r = 0; r < R; r++) {
            int32_t a4;
            memcpy(&a4, ar[r] + kb * 4, 4);
            __m512i av = _mm512_set1_epi32(a4);
            for (int j = 0; j < nb; j++)
                acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av, b[j]);
        }
    }
    int64_t n1 = n0 + 64 < N ? n0 + 64 : N;
    for (int r = 0; r < R; r++) {
        int32_t tile[64];
        for (int j = 0; j < nb; j++)
            _mm512_storeu_si512(tile + j * 16, acc[r][j]);
        finish(o, N, m0 + r, n0, n1, tile);
    }
}

/* The packed GEMM with vpdpbusd: A as tfm_qgemm_packed takes it. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
packed_vnni(int64_t M, int64_t N, int64_t K, const uint8_t *A,
            const int8_t *bp, const tfm_qout *o)
{
    int64_t K4 = (K + 3) / 4;
    int64_t mblocks = (M + 3) / 4;
#pragma omp parallel for schedule(static) if (M * N * K > (1 << 22))
    for (int64_t mb = 0; mb < mblocks; mb++) {
        int64_t m0 = mb * 4;
        int rows = M - m0 < 4 ? (int)(M - m0) : 4;
        const uint8_t *ar[4];
        for (int r = 0; r < rows; r++)
            ar[r] = A + (m0 + r) * K4 * 4;
        for (int64_t n0 = 0; n0 < N; n0 += 64) {
            int nb = N - n0 >= 64 ? 4 : (int)((N - n0 + 15) / 16);
#define BLOCKS(R)                                                         \
    switch (nb) {                                                         \
    case 4: block(R, 4, N, K4, m0, n0, ar, bp, o); break;                 \
    case 3: block(R, 3, N, K4, m0, n0, ar, bp, o); break;                 \
    case 2: block(R, 2, N, K4, m0, n0, ar, bp, o); break;                 \
    default: block(R, 1, N, K4, m0, n0, ar, bp, o); break;                \
    }
            switch (rows) {
            case 4: BLOCKS(4); break;
            case 3: BLOCKS(3); break;
            case 2: BLOCKS(2); break;
            default: BLOCKS(1); break;
            }
#undef BLOCKS
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
static _Atomic long long cache_lookups;

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
    atomic_fetch_add(&cache_lookups, 1);
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
            /* A's rows, zero-padded to K4*4 so 4-byte loads stay in
             * bounds. */
            for (int64_t m = 0; m < M; m++) {
                memcpy(ar + m * K4 * 4, A + m * lda, (size_t)K);
                memset(ar + m * K4 * 4 + K, 0, (size_t)(K4 * 4 - K));
            }
            tfm_qout o = {.kind = TFM_QOUT_INT32, .y = C};
            if (M > 0)
                packed_vnni(M, N, K, ar, e->packed, &o);
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
tfm_qgemm_packed(int64_t M, int64_t N, int64_t K, const uint8_t *A,
                 const int8_t *bp, const tfm_qout *out)
{
    if (M <= 0 || N <= 0)
        return;
#ifdef TFM_QGEMM_X86
    if (tfm_qgemm_uses_vnni()) {
        packed_vnni(M, N, K, A, bp, out);
        return;
    }
#endif
    packed_ref(M, N, K, A, bp, out);
}

long long
tfm_qgemm_cache_lookups(void)
{
    return atomic_load(&cache_lookups);
}

void
tfm_qgemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *A,
               int64_t lda, const int8_t *B, int32_t *C)
{
    tfm_qgemm_u8s8_sums(M, N, K, A, lda, B, C, NULL);
}
