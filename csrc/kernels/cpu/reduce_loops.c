/* The inner loops of the reductions, one set per (kind, dtype), and the
 * table that hands them out (reduce_impl.h). The drivers in reduce.c
 * split the work; these loops are serial. Compiled twice in a portable
 * build (reduce_loops_avx512.c, Note [ISA dispatch] in isa_dispatch.h):
 * entry points only through TFM_ISA_FN. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "isa_dispatch.h"
#include "reduce_impl.h"

/* ---- float sums: pairwise ------------------------------------------
 * NumPy's pairwise summation (leaves of 128 summed in 16 lanes of the
 * element type, so they vectorize fully), but every leaf and every pair
 * is added in double: float32 sums over 16M elements stay within an ulp
 * of the exact sum, at NumPy's speed. */
#define FLOAT_SUM(NAME, T)                                                  \
static double                                                               \
NAME##_pw(const T *restrict x, int64_t n)                                   \
{                                                                           \
    if (n <= 128) {                                                         \
        T l[16] = {0};                                                      \
        int64_t i = 0;                                                      \
        for (; i + 16 <= n; i += 16)                                        \
            for (int k = 0; k < 16; k++)                                    \
                l[k] += x[i + k];                                           \
        double s = 0;                                                       \
        for (int k = 0; k < 16; k++)                                        \
            s += (double)l[k];                                              \
        for (; i < n; i++)                                                  \
            s += (double)x[i];                                              \
        return s;                                                           \
    }                                                                       \
    int64_t h = (n / 2) & ~(int64_t)15;                                     \
    return NAME##_pw(x, h) + NAME##_pw(x + h, n - h);                       \
}                                                                           \
static void                                                                 \
NAME##_row(const void *x, int64_t n, const tfm_acc *aux, tfm_acc *acc)      \
{                                                                           \
    (void)aux;                                                              \
    acc->d += NAME##_pw(x, n);                                              \
}                                                                           \
static void                                                                 \
NAME##_col(const void *x_, int64_t rows, int64_t len, int64_t stride,       \
           const tfm_acc *aux, tfm_acc *acc)                                \
{                                                                           \
    (void)aux;                                                              \
    const T *x = x_;                                                        \
    double *restrict a = (double *)acc;                                     \
    int64_t r = 0;                                                          \
    /* Eight rows at a time, added pairwise in T: one accumulator load    \
     * and store per eight elements. */                                    \
    for (; r + 8 <= rows; r += 8) {                                         \
        const T *restrict x0 = x + r * stride, *restrict x1 = x0 + stride;  \
        const T *restrict x2 = x1 + stride, *restrict x3 = x2 + stride;     \
        const T *restrict x4 = x3 + stride, *restrict x5 = x4 + stride;     \
        const T *restrict x6 = x5 + stride, *restrict x7 = x6 + stride;     \
        for (int64_t j = 0; j < len; j++)                                   \
            a[j] += (double)(((x0[j] + x1[j]) + (x2[j] + x3[j])) +          \
                             ((x4[j] + x5[j]) + (x6[j] + x7[j])));          \
    }                                                                       \
    for (; r < rows; r++) {                                                 \
        const T *restrict xr = x + r * stride;                              \
        for (int64_t j = 0; j < len; j++)                                   \
            a[j] += (double)xr[j];                                          \
    }                                                                       \
}

/* ---- everything else ----------------------------------------------------
 * Rows: 8 independent lanes, then the tail. Columns: four rows combined
 * first, then one accumulator update per four elements.
 * T: element type; LT: lane type; F, CT: accumulator field and its type;
 * IDENT: the lanes' starting value; STEP(a, v): the combining step, which
 * must be symmetric (rows are combined pairwise). */
#define LANES(NAME, T, LT, F, CT, IDENT, STEP)                              \
static void                                                                 \
NAME##_row(const void *x_, int64_t n, const tfm_acc *aux, tfm_acc *acc)     \
{                                                                           \
    (void)aux;                                                              \
    const T *restrict x = x_;                                               \
    LT l[8];                                                                \
    int64_t i = 0;                                                          \
    for (int k = 0; k < 8; k++)                                             \
        l[k] = (LT)(IDENT);                                                 \
    for (; i + 8 <= n; i += 8)                                              \
        for (int k = 0; k < 8; k++) {                                       \
            LT v = (LT)x[i + k];                                            \
            l[k] = (LT)STEP(l[k], v);                                       \
        }                                                                   \
    LT a = (LT)acc->F;                                                      \
    for (int k = 0; k < 8; k++)                                             \
        a = (LT)STEP(a, l[k]);                                              \
    for (; i < n; i++) {                                                    \
        LT v = (LT)x[i];                                                    \
        a = (LT)STEP(a, v);                                                 \
    }                                                                       \
    acc->F = (CT)a;                                                         \
}                                                                           \
LANES_COL(NAME, T, CT, STEP)

#define LANES_COL(NAME, T, CT, STEP)                                        \
static void                                                                 \
NAME##_col(const void *x_, int64_t rows, int64_t len, int64_t stride,       \
           const tfm_acc *aux, tfm_acc *acc)                                \
{                                                                           \
    (void)aux;                                                              \
    const T *x = x_;                                                        \
    CT *restrict ac = (CT *)acc;                                            \
    int64_t r = 0;                                                          \
    for (; r + 4 <= rows; r += 4) {                                         \
        const T *restrict x0 = x + r * stride, *restrict x1 = x0 + stride;  \
        const T *restrict x2 = x1 + stride, *restrict x3 = x2 + stride;     \
        for (int64_t j = 0; j < len; j++) {                                 \
            CT v0 = (CT)x0[j], v1 = (CT)x1[j], v2 = (CT)x2[j];              \
            CT v3 = (CT)x3[j];                                              \
            CT v01 = (CT)STEP(v0, v1), v23 = (CT)STEP(v2, v3);              \
            CT v = (CT)STEP(v01, v23);                                      \
            ac[j] = (CT)STEP(ac[j], v);                                     \
        }                                                                   \
    }                                                                       \
    for (; r < rows; r++) {                                                 \
        const T *restrict xr = x + r * stride;                              \
        for (int64_t j = 0; j < len; j++) {                                 \
            CT v = (CT)xr[j];                                               \
            ac[j] = (CT)STEP(ac[j], v);                                     \
        }                                                                   \
    }                                                                       \
}

#define ADD(a, v) ((a) + (v))
#define MUL(a, v) ((a) * (v))
/* NaN wins: once the accumulator is NaN, neither test replaces it. */
#define FMAX(a, v) ((((v) > (a)) | ((v) != (v))) ? (v) : (a))
#define FMIN(a, v) ((((v) < (a)) | ((v) != (v))) ? (v) : (a))
#define IMAX(a, v) ((v) > (a) ? (v) : (a))
#define IMIN(a, v) ((v) < (a) ? (v) : (a))
#define AND(a, v) ((a) & ((v) != 0))
#define OR(a, v) ((a) | ((v) != 0))

FLOAT_SUM(sum_f32, float)
FLOAT_SUM(sum_f64, double)

/* Integer sums and products wrap (modulo 2^64, then the dtype's width:
 * the same bits TF's wrapping arithmetic gives), without C's undefined
 * signed overflow. */
#define INT_KINDS(S, T, LO, HI)                                             \
LANES(sum_##S, T, uint64_t, u, uint64_t, 0, ADD)                            \
LANES(prod_##S, T, uint64_t, u, uint64_t, 1, MUL)                           \
LANES(max_##S, T, T, i, int64_t, LO, IMAX)                                  \
LANES(min_##S, T, T, i, int64_t, HI, IMIN)

INT_KINDS(i8, int8_t, INT8_MIN, INT8_MAX)
INT_KINDS(u8, uint8_t, 0, UINT8_MAX)
INT_KINDS(i16, int16_t, INT16_MIN, INT16_MAX)
INT_KINDS(i32, int32_t, INT32_MIN, INT32_MAX)
INT_KINDS(i64, int64_t, INT64_MIN, INT64_MAX)
INT_KINDS(u16, uint16_t, 0, UINT16_MAX)
INT_KINDS(u32, uint32_t, 0, UINT32_MAX)
/* uint64's max and min keep the accumulator unsigned: past INT64_MAX the
 * signed field would compare wrong. */
LANES(sum_u64, uint64_t, uint64_t, u, uint64_t, 0, ADD)
LANES(prod_u64, uint64_t, uint64_t, u, uint64_t, 1, MUL)
LANES(max_u64, uint64_t, uint64_t, u, uint64_t, 0, IMAX)
LANES(min_u64, uint64_t, uint64_t, u, uint64_t, UINT64_MAX, IMIN)

LANES(prod_f32, float, double, d, double, 1, MUL)
LANES(prod_f64, double, double, d, double, 1, MUL)
/* Float max/min rows: whole-register compares and blends (GCC vector
 * extensions, one register wide), with NaNs noted in a mask so that NaN
 * still wins. A plain loop cannot be vectorized here without
 * -ffast-math. */
#define FLOAT_MINMAX(NAME, T, VT, VI, CMP, IDENT, STEP)                     \
static void                                                                 \
NAME##_row(const void *x_, int64_t n, const tfm_acc *aux, tfm_acc *acc)     \
{                                                                           \
    (void)aux;                                                              \
    enum { W = (int)(sizeof(VT) / sizeof(T)) };                             \
    const T *x = x_;                                                        \
    VT m;                                                                   \
    VI bad = {0};                                                           \
    int64_t i = 0;                                                          \
    for (int k = 0; k < W; k++)                                             \
        m[k] = (IDENT);                                                     \
    for (; i + W <= n; i += W) {                                            \
        VT v;                                                               \
        memcpy(&v, x + i, sizeof v);                                        \
        VI c = (VI)(v CMP m);                                               \
        m = (VT)(((VI)v & c) | ((VI)m & ~c));                               \
        bad |= (VI)(v != v);                                                \
    }                                                                       \
    T a = (T)acc->d;                                                        \
    bool nan = false;                                                       \
    for (int k = 0; k < W; k++) {                                           \
        a = STEP(a, m[k]);                                                  \
        nan |= bad[k] != 0;                                                 \
    }                                                                       \
    for (; i < n; i++)                                                      \
        a = STEP(a, x[i]);                                                  \
    acc->d = nan ? (double)NAN : (double)a;                                 \
}

/* The register's width: GCC does not split a wider compare-and-blend
 * into halves but turns it into scalar branches, 20x slower (seen for
 * 64-byte vectors under -march=x86-64-v3). The AVX-512 copy
 * (reduce_loops_avx512.c) has __AVX512F__ from its target pragma. */
#if defined(__AVX512F__)
#define RED_VBYTES 64
#elif defined(__AVX__)
#define RED_VBYTES 32
#else
#define RED_VBYTES 16
#endif
typedef float vf32 __attribute__((vector_size(RED_VBYTES)));
typedef int32_t vi32 __attribute__((vector_size(RED_VBYTES)));
typedef double vf64 __attribute__((vector_size(RED_VBYTES)));
typedef int64_t vi64 __attribute__((vector_size(RED_VBYTES)));

FLOAT_MINMAX(fmax_f32, float, vf32, vi32, >, -INFINITY, FMAX)
FLOAT_MINMAX(fmax_f64, double, vf64, vi64, >, -INFINITY, FMAX)
FLOAT_MINMAX(fmin_f32, float, vf32, vi32, <, INFINITY, FMIN)
FLOAT_MINMAX(fmin_f64, double, vf64, vi64, <, INFINITY, FMIN)
LANES_COL(max_f32, float, double, FMAX)
LANES_COL(max_f64, double, double, FMAX)
LANES_COL(min_f32, float, double, FMIN)
LANES_COL(min_f64, double, double, FMIN)
LANES(all_b, uint8_t, int, i, int64_t, 1, AND)
LANES(any_b, uint8_t, int, i, int64_t, 0, OR)

/* exp(x - shift) summed in double; shift = aux (per row or per column). */
#define SUMEXP(NAME, T)                                                     \
static void                                                                 \
NAME##_row(const void *x_, int64_t n, const tfm_acc *aux, tfm_acc *acc)     \
{                                                                           \
    const T *restrict x = x_;                                               \
    double m = aux->d, s = 0;                                               \
    for (int64_t i = 0; i < n; i++)                                         \
        s += exp((double)x[i] - m);                                         \
    acc->d += s;                                                            \
}                                                                           \
static void                                                                 \
NAME##_col(const void *x_, int64_t rows, int64_t len, int64_t stride,       \
           const tfm_acc *aux, tfm_acc *acc)                                \
{                                                                           \
    const T *x = x_;                                                        \
    double *restrict a = (double *)acc;                                     \
    const double *m = (const double *)aux;                                  \
    for (int64_t r = 0; r < rows; r++) {                                    \
        const T *restrict xr = x + r * stride;                              \
        for (int64_t j = 0; j < len; j++)                                   \
            a[j] += exp((double)xr[j] - m[j]);                              \
    }                                                                       \
}

SUMEXP(sumexp_f32, float)
SUMEXP(sumexp_f64, double)

/* ---- combining partial accumulators --------------------------------- */
#define COMB(NAME, F, STEP)                                                 \
static void                                                                 \
NAME(tfm_acc *dst, const tfm_acc *src, int64_t n)                           \
{                                                                           \
    for (int64_t j = 0; j < n; j++)                                         \
        dst[j].F = STEP(dst[j].F, src[j].F);                                \
}

COMB(comb_sum_d, d, ADD)
COMB(comb_sum_u, u, ADD)
COMB(comb_prod_d, d, MUL)
COMB(comb_prod_u, u, MUL)
COMB(comb_max_d, d, FMAX)
COMB(comb_min_d, d, FMIN)
COMB(comb_max_i, i, IMAX)
COMB(comb_min_i, i, IMIN)
COMB(comb_max_u, u, IMAX)
COMB(comb_min_u, u, IMIN)
COMB(comb_all, i, AND)
COMB(comb_any, i, OR)

/* ---- the table -------------------------------------------------------- */
typedef struct {
    tfm_red_row_fn row;
    tfm_red_col_fn col;
} loops;

#define L(NAME) { NAME##_row, NAME##_col }
#define LF(NAME) { f##NAME##_row, NAME##_col }
#define INT_ROW(K) \
    [TFM_INT8] = L(K##_i8), [TFM_UINT8] = L(K##_u8), \
    [TFM_INT16] = L(K##_i16), [TFM_INT32] = L(K##_i32), \
    [TFM_INT64] = L(K##_i64), [TFM_UINT16] = L(K##_u16), \
    [TFM_UINT32] = L(K##_u32), [TFM_UINT64] = L(K##_u64)

static const loops table[TFM_RED_KIND_COUNT][TFM_DTYPE_COUNT] = {
    [TFM_RED_SUM] = { INT_ROW(sum), [TFM_FLOAT32] = L(sum_f32),
                      [TFM_FLOAT64] = L(sum_f64) },
    [TFM_RED_PROD] = { INT_ROW(prod), [TFM_FLOAT32] = L(prod_f32),
                       [TFM_FLOAT64] = L(prod_f64) },
    [TFM_RED_MAX] = { INT_ROW(max), [TFM_FLOAT32] = LF(max_f32),
                      [TFM_FLOAT64] = LF(max_f64) },
    [TFM_RED_MIN] = { INT_ROW(min), [TFM_FLOAT32] = LF(min_f32),
                      [TFM_FLOAT64] = LF(min_f64) },
    [TFM_RED_ALL] = { [TFM_BOOL] = L(all_b) },
    [TFM_RED_ANY] = { [TFM_BOOL] = L(any_b) },
    [TFM_RED_SUMEXP] = { [TFM_FLOAT32] = L(sumexp_f32),
                         [TFM_FLOAT64] = L(sumexp_f64) },
};

static int64_t
int_lowest(tfm_dtype d)
{
    switch (d) {
    case TFM_INT8: return INT8_MIN;
    case TFM_INT16: return INT16_MIN;
    case TFM_INT32: return INT32_MIN;
    case TFM_INT64: return INT64_MIN;
    default: return 0;
    }
}

static int64_t
int_highest(tfm_dtype d)
{
    switch (d) {
    case TFM_INT8: return INT8_MAX;
    case TFM_UINT8: return UINT8_MAX;
    case TFM_INT16: return INT16_MAX;
    case TFM_INT32: return INT32_MAX;
    case TFM_UINT16: return UINT16_MAX;
    case TFM_UINT32: return UINT32_MAX;
    default: return INT64_MAX;
    }
}

bool
TFM_ISA_FN(tfm_reducer_get)(tfm_red_kind k, tfm_dtype d, tfm_reducer *r)
{
    if ((unsigned)k >= TFM_RED_KIND_COUNT || (unsigned)d >= TFM_DTYPE_COUNT
        || !table[k][d].row)
        return false;
    bool fl = tfm_dtype_is_float(d);
    r->row = table[k][d].row;
    r->col = table[k][d].col;
    switch (k) {
    case TFM_RED_SUM:
    case TFM_RED_SUMEXP:
        r->comb = fl ? comb_sum_d : comb_sum_u;
        if (fl)
            r->identity.d = 0;
        else
            r->identity.u = 0;
        break;
    case TFM_RED_PROD:
        r->comb = fl ? comb_prod_d : comb_prod_u;
        if (fl)
            r->identity.d = 1;
        else
            r->identity.u = 1;
        break;
    case TFM_RED_MAX:
        r->comb = fl ? comb_max_d : d == TFM_UINT64 ? comb_max_u : comb_max_i;
        if (fl)
            r->identity.d = -INFINITY;
        else
            r->identity.i = int_lowest(d);
        break;
    case TFM_RED_MIN:
        r->comb = fl ? comb_min_d : d == TFM_UINT64 ? comb_min_u : comb_min_i;
        if (fl)
            r->identity.d = INFINITY;
        else if (d == TFM_UINT64)
            r->identity.u = UINT64_MAX;
        else
            r->identity.i = int_highest(d);
        break;
    case TFM_RED_ALL:
        r->comb = comb_all;
        r->identity.i = 1;
        break;
    case TFM_RED_ANY:
        r->comb = comb_any;
        r->identity.i = 0;
        break;
    default:
        return false;
    }
    return true;
}

/* ---- complex sums and products --------------------------------------
 * In double complex whatever the dtype, as the float loops add in
 * double. Serial and plain: complex reductions are rare and small. */
#define COMPLEX_REDUCE(T)                                                   \
    do {                                                                    \
        const T *xs = src;                                                  \
        T *o = tfm_tensor_data(y);                                          \
        for (int64_t i = 0; i < A; i++)                                     \
            for (int64_t j = 0; j < B; j++) {                               \
                double complex s = k == TFM_RED_PROD ? 1 : 0;               \
                const T *v = xs + i * R * B + j;                            \
                for (int64_t r = 0; r < R; r++)                             \
                    s = k == TFM_RED_PROD ? s * (double complex)v[r * B]    \
                                          : s + (double complex)v[r * B];   \
                o[i * B + j] = (T)(mean ? s / (double)count : s);           \
            }                                                               \
    } while (0)

tfm_code
TFM_ISA_FN(tfm_red_complex)(tfm_red_kind k, bool mean, const tfm_red_plan *p,
                            const tfm_tensor *x, tfm_tensor *y,
                            int64_t count)
{
    int64_t A = p->a, R = p->r, B = p->b;
    size_t es = tfm_dtype_size(x->dtype);
    const void *src = tfm_tensor_data(x);
    void *tmp = NULL;
    if (p->gather && A * R > 0) {
        if (!(tmp = malloc((size_t)(A * R) * es)))
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "reduction: out "
                             "of memory gathering %lld elements",
                             (long long)(A * R));
        tfm_gather_strided(src, tmp, es, p->ndim, p->dims, p->strides);
        src = tmp;
    }
    if (x->dtype == TFM_COMPLEX64)
        COMPLEX_REDUCE(float complex);
    else
        COMPLEX_REDUCE(double complex);
    free(tmp);
    return TFM_OK;
}
