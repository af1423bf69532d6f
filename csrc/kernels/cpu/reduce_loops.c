/* The inner loops of the reductions, one set per (kind, dtype), and the
 * table that hands them out (reduce_impl.h). The drivers in reduce.c
 * split the work; these loops are serial. */
#include <math.h>

#include "reduce_impl.h"

/* ---- float sums: pairwise in double ---------------------------------
 * Like NumPy's pairwise summation (blocks of 128, 8 lanes) but with
 * double partials, so float32 sums lose nothing over 16M elements. */
#define FLOAT_SUM(NAME, T)                                                  \
static double                                                               \
NAME##_pw(const T *restrict x, int64_t n)                                   \
{                                                                           \
    if (n <= 128) {                                                         \
        double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};                             \
        int64_t i = 0;                                                      \
        for (; i + 8 <= n; i += 8)                                          \
            for (int k = 0; k < 8; k++)                                     \
                l[k] += (double)x[i + k];                                   \
        double s = ((l[0] + l[1]) + (l[2] + l[3])) +                        \
                   ((l[4] + l[5]) + (l[6] + l[7]));                         \
        for (; i < n; i++)                                                  \
            s += (double)x[i];                                              \
        return s;                                                           \
    }                                                                       \
    int64_t h = (n / 2) & ~(int64_t)7;                                      \
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
    for (int64_t r = 0; r < rows; r++) {                                    \
        const T *restrict xr = x + r * stride;                              \
        for (int64_t j = 0; j < len; j++)                                   \
            acc[j].d += (double)xr[j];                                      \
    }                                                                       \
}

/* ---- everything else: 8 independent lanes, then the tail -------------
 * T: element type; LT: lane type; F, CT: accumulator field and its type;
 * IDENT: the lanes' starting value; STEP(a, v): the combining step. */
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
static void                                                                 \
NAME##_col(const void *x_, int64_t rows, int64_t len, int64_t stride,       \
           const tfm_acc *aux, tfm_acc *acc)                                \
{                                                                           \
    (void)aux;                                                              \
    const T *x = x_;                                                        \
    for (int64_t r = 0; r < rows; r++) {                                    \
        const T *restrict xr = x + r * stride;                              \
        for (int64_t j = 0; j < len; j++) {                                 \
            CT v = (CT)xr[j];                                               \
            acc[j].F = (CT)STEP(acc[j].F, v);                               \
        }                                                                   \
    }                                                                       \
}

#define ADD(a, v) ((a) + (v))
#define MUL(a, v) ((a) * (v))
/* NaN wins: once the accumulator is NaN, neither test replaces it. */
#define FMAX(a, v) (((v) > (a) || (v) != (v)) ? (v) : (a))
#define FMIN(a, v) (((v) < (a) || (v) != (v)) ? (v) : (a))
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

LANES(prod_f32, float, double, d, double, 1, MUL)
LANES(prod_f64, double, double, d, double, 1, MUL)
LANES(max_f32, float, float, d, double, -INFINITY, FMAX)
LANES(max_f64, double, double, d, double, -INFINITY, FMAX)
LANES(min_f32, float, float, d, double, INFINITY, FMIN)
LANES(min_f64, double, double, d, double, INFINITY, FMIN)
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
    for (int64_t r = 0; r < rows; r++) {                                    \
        const T *restrict xr = x + r * stride;                              \
        for (int64_t j = 0; j < len; j++)                                   \
            acc[j].d += exp((double)xr[j] - aux[j].d);                      \
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
COMB(comb_all, i, AND)
COMB(comb_any, i, OR)

/* ---- the table -------------------------------------------------------- */
typedef struct {
    tfm_red_row_fn row;
    tfm_red_col_fn col;
} loops;

#define L(NAME) { NAME##_row, NAME##_col }
#define INT_ROW(K) \
    [TFM_INT8] = L(K##_i8), [TFM_UINT8] = L(K##_u8), \
    [TFM_INT16] = L(K##_i16), [TFM_INT32] = L(K##_i32), \
    [TFM_INT64] = L(K##_i64)

static const loops table[TFM_RED_KIND_COUNT][TFM_DTYPE_COUNT] = {
    [TFM_RED_SUM] = { INT_ROW(sum), [TFM_FLOAT32] = L(sum_f32),
                      [TFM_FLOAT64] = L(sum_f64) },
    [TFM_RED_PROD] = { INT_ROW(prod), [TFM_FLOAT32] = L(prod_f32),
                       [TFM_FLOAT64] = L(prod_f64) },
    [TFM_RED_MAX] = { INT_ROW(max), [TFM_FLOAT32] = L(max_f32),
                      [TFM_FLOAT64] = L(max_f64) },
    [TFM_RED_MIN] = { INT_ROW(min), [TFM_FLOAT32] = L(min_f32),
                      [TFM_FLOAT64] = L(min_f64) },
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
    default: return INT64_MAX;
    }
}

bool
tfm_reducer_get(tfm_red_kind k, tfm_dtype d, tfm_reducer *r)
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
        r->comb = fl ? comb_max_d : comb_max_i;
        if (fl)
            r->identity.d = -INFINITY;
        else
            r->identity.i = int_lowest(d);
        break;
    case TFM_RED_MIN:
        r->comb = fl ? comb_min_d : comb_min_i;
        if (fl)
            r->identity.d = INFINITY;
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
