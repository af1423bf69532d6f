/* Sort (values and indices along an axis) and TopKV2 (the k largest along
 * the last axis). Every value becomes an unsigned key whose order is the
 * value order (NaN above +inf, -0.0 equal to 0.0; descending flips the
 * bits), and (key, index) pairs are sorted stably: insertion sort for
 * short lines, LSD radix sort (one pass per key byte, all histograms
 * from one read) for long ones. Equal values therefore keep their input
 * order in both directions. Keys of up to 4 bytes travel in 8-byte
 * pairs, wider ones in 16-byte pairs. */
#include "reduce.h"

#include <stdlib.h>
#include <string.h>

#include "loops.h"

/* ---- keys --------------------------------------------------------------- */

static inline uint32_t
key_f32(float v)
{
    uint32_t u;
    if (v != v)
        u = 0x7fc00000u;                /* every NaN: one, above +inf */
    else if (v == 0)
        u = 0;                          /* -0.0 == 0.0 */
    else
        memcpy(&u, &v, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static inline uint64_t
key_f64(double v)
{
    uint64_t u;
    if (v != v)
        u = 0x7ff8000000000000ull;
    else if (v == 0)
        u = 0;
    else
        memcpy(&u, &v, sizeof u);
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}

#define KEY_I8(v) ((uint8_t)((uint8_t)(v) ^ 0x80u))
#define KEY_U8(v) ((uint8_t)(v))
#define KEY_I16(v) ((uint16_t)((uint16_t)(v) ^ 0x8000u))
#define KEY_I32(v) ((uint32_t)(v) ^ 0x80000000u)
#define KEY_I64(v) ((uint64_t)(v) ^ 0x8000000000000000ull)
#define KEY_U(v) (v)

/* ---- one sorter per pair width ---------------------------------------------
 * S: suffix; KT, IT: key and index types of the pair. */
#define SORTER(S, KT, IT)                                                   \
typedef struct {                                                            \
    KT k;                                                                   \
    IT i;                                                                   \
} pair##S;                                                                  \
                                                                            \
static void                                                                 \
load##S(tfm_dtype d, const void *x_, int64_t n, int64_t st, pair##S *p,     \
        KT flip)                                                            \
{                                                                           \
    switch (d) {                                                            \
    case TFM_FLOAT32: LOAD(S, float, key_f32); break;                       \
    case TFM_FLOAT64: LOAD(S, double, key_f64); break;                      \
    case TFM_INT8: LOAD(S, int8_t, KEY_I8); break;                          \
    case TFM_UINT8: LOAD(S, uint8_t, KEY_U8); break;                        \
    case TFM_INT16: LOAD(S, int16_t, KEY_I16); break;                       \
    case TFM_INT32: LOAD(S, int32_t, KEY_I32); break;                       \
    case TFM_UINT16: LOAD(S, uint16_t, KEY_U); break;                       \
    case TFM_UINT32: LOAD(S, uint32_t, KEY_U); break;                       \
    case TFM_UINT64: LOAD(S, uint64_t, KEY_U); break;                       \
    default: LOAD(S, int64_t, KEY_I64); break;                              \
    }                                                                       \
}                                                                           \
                                                                            \
static void                                                                 \
sort##S(pair##S *p, pair##S *tmp, int64_t n, int bytes)                     \
{                                                                           \
    if (n <= 64) {                                                          \
        for (int64_t i = 1; i < n; i++) {                                   \
            pair##S v = p[i];                                               \
            int64_t j = i;                                                  \
            while (j > 0 && p[j - 1].k > v.k) {                             \
                p[j] = p[j - 1];                                            \
                j--;                                                        \
            }                                                               \
            p[j] = v;                                                       \
        }                                                                   \
        return;                                                             \
    }                                                                       \
    int64_t cnt[8][256];                                                    \
    memset(cnt, 0, sizeof cnt);                                             \
    for (int64_t i = 0; i < n; i++)                                         \
        for (int b = 0; b < bytes; b++)                                     \
            cnt[b][(p[i].k >> (8 * b)) & 255]++;                            \
    pair##S *src = p, *dst = tmp;                                           \
    for (int b = 0; b < bytes; b++) {                                       \
        int shift = 8 * b;                                                  \
        int64_t *c = cnt[b];                                                \
        if (c[(src[0].k >> shift) & 255] == n)                              \
            continue;                   /* every key has this byte */      \
        int64_t sum = 0;                                                    \
        for (int v = 0; v < 256; v++) {                                     \
            int64_t t = c[v];                                               \
            c[v] = sum;                                                     \
            sum += t;                                                       \
        }                                                                   \
        for (int64_t i = 0; i < n; i++)                                     \
            dst[c[(src[i].k >> shift) & 255]++] = src[i];                   \
        pair##S *t = src;                                                   \
        src = dst;                                                          \
        dst = t;                                                            \
    }                                                                       \
    if (src != p)                                                           \
        memcpy(p, src, (size_t)n * sizeof *p);                              \
}                                                                           \
                                                                            \
/* The k smallest keys into best[0..k), in order, ties by position: one   \
 * pass that mostly compares with the k-th (for small k). */              \
static void                                                                 \
select##S(const pair##S *p, int64_t n, int64_t k, pair##S *best)            \
{                                                                           \
    int64_t m = 0;                                                          \
    for (int64_t r = 0; r < n; r++) {                                       \
        pair##S v = p[r];                                                   \
        if (m == k && v.k >= best[k - 1].k)                                 \
            continue;                                                       \
        int64_t j = m < k ? m++ : k - 1;                                    \
        while (j > 0 && best[j - 1].k > v.k) {                              \
            best[j] = best[j - 1];                                          \
            j--;                                                            \
        }                                                                   \
        best[j] = v;                                                        \
    }                                                                       \
}                                                                           \
                                                                            \
/* n results of a line: values copied from the input line (so -0.0 and    \
 * NaN payloads survive) and indices; strides in elements. */              \
static void                                                                 \
emit##S(const void *x, int64_t xs, void *y, void *ix, int64_t ys,           \
        const pair##S *p, int64_t n, size_t es, bool wide)                  \
{                                                                           \
    switch (es) {                                                           \
    case 1: EMIT_VALUES(S, uint8_t); break;                                 \
    case 2: EMIT_VALUES(S, uint16_t); break;                                \
    case 4: EMIT_VALUES(S, uint32_t); break;                                \
    default: EMIT_VALUES(S, uint64_t); break;                               \
    }                                                                       \
    if (wide)                                                               \
        for (int64_t r = 0; r < n; r++)                                     \
            ((int64_t *)ix)[r * ys] = (int64_t)p[r].i;                      \
    else                                                                    \
        for (int64_t r = 0; r < n; r++)                                     \
            ((int32_t *)ix)[r * ys] = (int32_t)p[r].i;                      \
}

#define LOAD(S, T, KEY)                                                     \
    do {                                                                    \
        const T *x = x_;                                                    \
        for (int64_t r = 0; r < n; r++) {                                   \
            p[r].k = (__typeof__(p[r].k))(KEY(x[r * st]) ^ flip);           \
            p[r].i = (__typeof__(p[r].i))r;                                 \
        }                                                                   \
    } while (0)

#define EMIT_VALUES(S, U)                                                   \
    do {                                                                    \
        const U *xv = x;                                                    \
        U *yv = y;                                                          \
        for (int64_t r = 0; r < n; r++)                                     \
            yv[r * ys] = xv[(int64_t)p[r].i * xs];                          \
    } while (0)

SORTER(32, uint32_t, uint32_t)
SORTER(64, uint64_t, int64_t)

static uint64_t
flip_mask(size_t es, bool desc)
{
    if (!desc)
        return 0;
    return es == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * es)) - 1;
}

static bool
sortable(tfm_dtype d)
{
    return d != TFM_BOOL && d != TFM_FLOAT16 &&
           (tfm_dtype_is_int(d) || d == TFM_FLOAT32 || d == TFM_FLOAT64);
}

/* Runs BODY for each line q < lines with `buf`, a per-thread scratch of
 * `room` pairs of type PT; returns ResourceExhausted if one is missing. */
#define FOR_LINES(PT, lines, room, parallel, BODY)                          \
    do {                                                                    \
        int oom = 0, par_ = (parallel);                                     \
        _Pragma("omp parallel if (par_)")                                   \
        {                                                                   \
            PT *buf = malloc((size_t)(room) * sizeof(PT));                  \
            if (!buf) {                                                     \
                _Pragma("omp atomic write")                                 \
                oom = 1;                                                    \
            }                                                               \
            _Pragma("omp for schedule(dynamic, 16)")                        \
            for (int64_t q = 0; q < (lines); q++) {                         \
                if (buf)                                                    \
                    BODY                                                    \
            }                                                               \
            free(buf);                                                      \
        }                                                                   \
        if (oom)                                                            \
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of "      \
                             "memory", tfm_ops[op].name);                   \
    } while (0)

/* Lines of R elements, element stride B, starting at (q / B) * R * B +
 * q % B: the layout of an [A, R, B] tensor sorted along R. */
#define SORT_LINES(S)                                                       \
    FOR_LINES(pair##S, A * B, 2 * R, A * B > 1 && A * R * B >= TFM_PAR_MIN, \
    {                                                                       \
        int64_t base = (q / B) * R * B + q % B;                             \
        load##S(x->dtype, px + (size_t)base * es, R, B, buf,                \
                (__typeof__(buf->k))flip);                                  \
        sort##S(buf, buf + R, R, (int)es);                                  \
        emit##S(px + (size_t)base * es, B, py + (size_t)base * es,          \
                pi + base * ies, B, buf, R, es, wide);                      \
    })

tfm_code
tfm_k_sort(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    const tfm_tensor *x = in[0];
    int rank = x->shape.ndim;
    int axis = (int)(a->i[0] < 0 ? a->i[0] + rank : a->i[0]);
    int64_t A = 1, R = x->shape.dims[axis], B = 1;
    for (int d = 0; d < axis; d++)
        A *= x->shape.dims[d];
    for (int d = axis + 1; d < rank; d++)
        B *= x->shape.dims[d];
    if (!sortable(x->dtype))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(x->dtype));
    if (A * R * B == 0)
        return TFM_OK;
    size_t es = tfm_dtype_size(x->dtype);
    uint64_t flip = flip_mask(es, a->i[1] != 0);
    bool wide = out[1]->dtype == TFM_INT64;
    const char *px = tfm_tensor_data(x);
    char *py = tfm_tensor_data(out[0]), *pi = tfm_tensor_data(out[1]);
    int64_t ies = wide ? 8 : 4;
    if (es <= 4 && R <= UINT32_MAX)
        SORT_LINES(32);
    else
        SORT_LINES(64);
    return TFM_OK;
}

/* Lines of the last axis, n long; the first k of each, descending. */
#define TOPK_LINES(S)                                                       \
    FOR_LINES(pair##S, lines, 2 * n, lines > 1 && lines * n >= TFM_PAR_MIN, \
    {                                                                       \
        const char *xl = px + (size_t)(q * n) * es;                         \
        pair##S *best = buf;                                                \
        load##S(x->dtype, xl, n, 1, buf, (__typeof__(buf->k))flip);         \
        if (small) {                                                        \
            best = buf + n;                                                 \
            select##S(buf, n, k, best);                                     \
        } else {                                                            \
            sort##S(buf, buf + n, n, (int)es);                              \
        }                                                                   \
        emit##S(xl, 1, py + (size_t)(q * k) * es, pi + q * k * ies, 1,      \
                best, k, es, wide);                                         \
    })

tfm_code
tfm_k_topk(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    const tfm_tensor *x = in[0];
    int64_t n = x->shape.dims[x->shape.ndim - 1], k = a->i[0];
    if (!sortable(x->dtype))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(x->dtype));
    if (k == 0 || tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    int64_t lines = tfm_tensor_numel(out[0]) / k;
    size_t es = tfm_dtype_size(x->dtype);
    uint64_t flip = flip_mask(es, true);
    bool wide = out[1]->dtype == TFM_INT64;
    bool small = k <= 16 && 4 * k <= n;
    const char *px = tfm_tensor_data(x);
    char *py = tfm_tensor_data(out[0]), *pi = tfm_tensor_data(out[1]);
    int64_t ies = wide ? 8 : 4;
    if (es <= 4 && n <= UINT32_MAX)
        TOPK_LINES(32);
    else
        TOPK_LINES(64);
    return TFM_OK;
}
