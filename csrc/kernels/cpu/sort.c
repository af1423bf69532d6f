/* Sort (values and indices along an axis) and TopKV2 (the k largest along
 * the last axis). Every value becomes an unsigned key whose order is the
 * value order (NaN above +inf, -0.0 equal to 0.0; descending flips the
 * bits), and (key, index) pairs are sorted stably: insertion sort for
 * short lines, LSD radix sort (one pass per key byte) for long ones.
 * Equal values therefore keep their input order in both directions. */
#include "reduce.h"

#include <stdlib.h>
#include <string.h>

#include "loops.h"

typedef struct {
    uint64_t k;
    int64_t i;
} pair;

/* Keys of n elements at the given stride, with their indices. */
#define KEYS_FLOAT(NAME, T, U, SIGN, QNAN)                                  \
static void                                                                 \
NAME(const void *x_, int64_t n, int64_t stride, pair *p, uint64_t flip)     \
{                                                                           \
    const T *x = x_;                                                        \
    for (int64_t r = 0; r < n; r++) {                                       \
        T v = x[r * stride];                                                \
        U u;                                                                \
        if (v != v)                                                         \
            u = QNAN;                                                       \
        else if (v == 0)                                                    \
            u = 0;                                                          \
        else                                                                \
            memcpy(&u, &v, sizeof u);                                       \
        u = (u & SIGN) ? (U)~u : (U)(u | SIGN);                             \
        p[r].k = (uint64_t)u ^ flip;                                        \
        p[r].i = r;                                                         \
    }                                                                       \
}

#define KEYS_INT(NAME, T, U, SIGN)                                          \
static void                                                                 \
NAME(const void *x_, int64_t n, int64_t stride, pair *p, uint64_t flip)     \
{                                                                           \
    const T *x = x_;                                                        \
    for (int64_t r = 0; r < n; r++) {                                       \
        p[r].k = (uint64_t)(U)((U)x[r * stride] ^ (U)(SIGN)) ^ flip;        \
        p[r].i = r;                                                         \
    }                                                                       \
}

KEYS_FLOAT(keys_f32, float, uint32_t, 0x80000000u, 0x7fc00000u)
KEYS_FLOAT(keys_f64, double, uint64_t, 0x8000000000000000ull,
           0x7ff8000000000000ull)
KEYS_INT(keys_i8, int8_t, uint8_t, 0x80u)
KEYS_INT(keys_u8, uint8_t, uint8_t, 0)
KEYS_INT(keys_i16, int16_t, uint16_t, 0x8000u)
KEYS_INT(keys_i32, int32_t, uint32_t, 0x80000000u)
KEYS_INT(keys_i64, int64_t, uint64_t, 0x8000000000000000ull)

typedef void (*keys_fn)(const void *, int64_t, int64_t, pair *, uint64_t);

static const keys_fn keys_table[TFM_DTYPE_COUNT] = {
    [TFM_INT8] = keys_i8, [TFM_UINT8] = keys_u8, [TFM_INT16] = keys_i16,
    [TFM_INT32] = keys_i32, [TFM_INT64] = keys_i64,
    [TFM_FLOAT32] = keys_f32, [TFM_FLOAT64] = keys_f64,
};

static void
insertion_sort(pair *p, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        pair v = p[i];
        int64_t j = i;
        while (j > 0 && p[j - 1].k > v.k) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = v;
    }
}

/* Stable sort of p[0..n) by key; tmp has room for n. `bytes`: key width.
 * Passes whose byte is the same in every key are skipped. */
static void
sort_pairs(pair *p, pair *tmp, int64_t n, int bytes)
{
    if (n <= 64) {
        insertion_sort(p, n);
        return;
    }
    pair *src = p, *dst = tmp;
    for (int b = 0; b < bytes; b++) {
        int shift = 8 * b;
        int64_t cnt[256] = {0};
        for (int64_t i = 0; i < n; i++)
            cnt[(src[i].k >> shift) & 255]++;
        if (cnt[(src[0].k >> shift) & 255] == n)
            continue;
        int64_t sum = 0;
        for (int d = 0; d < 256; d++) {
            int64_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++)
            dst[cnt[(src[i].k >> shift) & 255]++] = src[i];
        pair *t = src;
        src = dst;
        dst = t;
    }
    if (src != p)
        memcpy(p, src, (size_t)n * sizeof *p);
}

/* The k smallest keys of p[0..n) into best[0..k), in order, ties by
 * position: for small k, one pass that mostly compares with the k-th. */
static void
select_small(const pair *p, int64_t n, int64_t k, pair *best)
{
    int64_t m = 0;
    for (int64_t r = 0; r < n; r++) {
        pair v = p[r];
        if (m == k && v.k >= best[k - 1].k)
            continue;
        int64_t j = m < k ? m++ : k - 1;
        while (j > 0 && best[j - 1].k > v.k) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = v;
    }
}

/* Writes n results of a line: values from the input line (so -0.0 and
 * NaN payloads survive) and indices. */
static void
emit(const char *x, int64_t xs, char *y, char *ix, int64_t ys,
     const pair *p, int64_t n, size_t es, bool wide)
{
    for (int64_t r = 0; r < n; r++) {
        memcpy(y + (size_t)(r * ys) * es, x + (size_t)(p[r].i * xs) * es,
               es);
        if (wide)
            ((int64_t *)ix)[r * ys] = p[r].i;
        else
            ((int32_t *)ix)[r * ys] = (int32_t)p[r].i;
    }
}

static uint64_t
flip_mask(size_t es, bool desc)
{
    if (!desc)
        return 0;
    return es == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * es)) - 1;
}

/* Runs line(q, buf) for each of `lines` lines, with a per-thread scratch
 * of `room` pairs. */
#define FOR_LINES(lines, room, parallel, BODY)                              \
    do {                                                                    \
        int oom = 0, par_ = (parallel);                                     \
        _Pragma("omp parallel if (par_)")                                   \
        {                                                                   \
            pair *buf = malloc((size_t)(room) * sizeof(pair));              \
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

tfm_code
tfm_k_sort(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout)
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
    keys_fn keys = keys_table[x->dtype];
    if (!keys)
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
    FOR_LINES(A * B, 2 * R, A * B > 1 && A * R * B >= TFM_PAR_MIN, {
        int64_t base = (q / B) * R * B + q % B;
        keys(px + (size_t)base * es, R, B, buf, flip);
        sort_pairs(buf, buf + R, R, (int)es);
        emit(px + (size_t)base * es, B, py + (size_t)base * es,
             pi + base * ies, B, buf, R, es, wide);
    });
    return TFM_OK;
}

tfm_code
tfm_k_topk(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout)
{
    (void)nin; (void)nout;
    const tfm_tensor *x = in[0];
    int64_t n = x->shape.dims[x->shape.ndim - 1], k = a->i[0];
    int64_t lines = tfm_tensor_numel(out[0]) / (k ? k : 1);
    keys_fn keys = keys_table[x->dtype];
    if (!keys)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(x->dtype));
    if (k == 0 || tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    size_t es = tfm_dtype_size(x->dtype);
    uint64_t flip = flip_mask(es, true);
    bool wide = out[1]->dtype == TFM_INT64;
    bool small = k <= 16 && 4 * k <= n;
    const char *px = tfm_tensor_data(x);
    char *py = tfm_tensor_data(out[0]), *pi = tfm_tensor_data(out[1]);
    int64_t ies = wide ? 8 : 4;
    FOR_LINES(lines, 2 * n, lines > 1 && lines * n >= TFM_PAR_MIN, {
        const char *xl = px + (size_t)(q * n) * es;
        keys(xl, n, 1, buf, flip);
        if (small) {
            select_small(buf, n, k, buf + n);
            emit(xl, 1, py + (size_t)(q * k) * es, pi + q * k * ies, 1,
                 buf + n, k, es, wide);
        } else {
            sort_pairs(buf, buf + n, n, (int)es);
            emit(xl, 1, py + (size_t)(q * k) * es, pi + q * k * ies, 1,
                 buf, k, es, wide);
        }
    });
    return TFM_OK;
}
