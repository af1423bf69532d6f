/* ArgMax and ArgMin: the first index of the largest (smallest) value
 * along one axis; the first NaN beats every number (as NumPy). */
#include "reduce.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "loops.h"
#include "reduce_impl.h"

/* better(v, b): v replaces the best so far b. A NaN best is never
 * replaced; a NaN v replaces any number. */
#define BETTER_MAX(v, b) ((v) > (b) || ((v) != (v) && (b) == (b)))
#define BETTER_MIN(v, b) ((v) < (b) || ((v) != (v) && (b) == (b)))

/* row(x, n): index of the best of x[0..n), n >= 1: the best value in a
 * vectorizable pass, then the first index holding it (or the first NaN);
 * better(x, i, j): x[i] beats x[j];
 * col(x, R, len, B, idx): idx[j] = the best r of x[r * B + j], j < len. */
#define ARG_COMMON(NAME, T, BETTER)                                         \
static int                                                                  \
NAME##_better(const void *x_, int64_t i, int64_t j)                         \
{                                                                           \
    const T *x = x_;                                                        \
    return BETTER(x[i], x[j]);                                              \
}                                                                           \
static void                                                                 \
NAME##_col(const void *x_, int64_t R, int64_t len, int64_t B,               \
           int64_t *idx)                                                    \
{                                                                           \
    const T *x = x_;                                                        \
    T b[TFM_RED_TILE];                                                      \
    for (int64_t j = 0; j < len; j++) {                                     \
        b[j] = x[j];                                                        \
        idx[j] = 0;                                                         \
    }                                                                       \
    for (int64_t r = 1; r < R; r++) {                                       \
        const T *restrict xr = x + r * B;                                   \
        for (int64_t j = 0; j < len; j++) {                                 \
            T v = xr[j];                                                    \
            if (BETTER(v, b[j])) {                                          \
                b[j] = v;                                                   \
                idx[j] = r;                                                 \
            }                                                               \
        }                                                                   \
    }                                                                       \
}

#define ARG_INT(NAME, T, CMP, BETTER)                                       \
static int64_t                                                              \
NAME##_row(const void *x_, int64_t n)                                       \
{                                                                           \
    const T *restrict x = x_;                                               \
    T m = x[0];                                                             \
    for (int64_t i = 1; i < n; i++)                                         \
        m = x[i] CMP m ? x[i] : m;                                          \
    int64_t i = 0;                                                          \
    while (x[i] != m)                                                       \
        i++;                                                                \
    return i;                                                               \
}                                                                           \
ARG_COMMON(NAME, T, BETTER)

/* Floats: whole-register compares (see FLOAT_MINMAX in reduce_loops.c),
 * NaNs noted in a mask. */
#define ARG_FLOAT(NAME, T, VT, VI, CMP, BETTER)                             \
static int64_t                                                              \
NAME##_row(const void *x_, int64_t n)                                       \
{                                                                           \
    enum { W = (int)(sizeof(VT) / sizeof(T)) };                             \
    const T *x = x_;                                                        \
    T m = x[0];                                                             \
    bool nan = false;                                                       \
    int64_t i = 0;                                                          \
    if (n >= W) {                                                           \
        VT vm;                                                              \
        VI bad = {0};                                                       \
        for (int k = 0; k < W; k++)                                         \
            vm[k] = m;                                                      \
        for (; i + W <= n; i += W) {                                        \
            VT v;                                                           \
            memcpy(&v, x + i, sizeof v);                                    \
            VI c = (VI)(v CMP vm);                                          \
            vm = (VT)(((VI)v & c) | ((VI)vm & ~c));                         \
            bad |= (VI)(v != v);                                            \
        }                                                                   \
        for (int k = 0; k < W; k++) {                                       \
            m = vm[k] CMP m ? vm[k] : m;                                    \
            nan |= bad[k] != 0;                                             \
        }                                                                   \
    }                                                                       \
    for (; i < n; i++) {                                                    \
        m = x[i] CMP m ? x[i] : m;                                          \
        nan |= x[i] != x[i];                                                \
    }                                                                       \
    i = 0;                                                                  \
    if (nan) {                                                              \
        while (x[i] == x[i])                                                \
            i++;                                                            \
        return i;                                                           \
    }                                                                       \
    /* The first m: whole registers until one holds it. */                 \
    VT vm;                                                                  \
    for (int k = 0; k < W; k++)                                             \
        vm[k] = m;                                                          \
    for (; i + W <= n; i += W) {                                            \
        VT v;                                                               \
        memcpy(&v, x + i, sizeof v);                                        \
        VI e = (VI)(v == vm);                                               \
        bool hit = false;                                                   \
        for (int k = 0; k < W; k++)                                         \
            hit |= e[k] != 0;                                               \
        if (hit)                                                            \
            break;                                                          \
    }                                                                       \
    while (x[i] != m)                                                       \
        i++;                                                                \
    return i;                                                               \
}                                                                           \
ARG_COMMON(NAME, T, BETTER)

typedef float vf32 __attribute__((vector_size(64)));
typedef int32_t vi32 __attribute__((vector_size(64)));
typedef double vf64 __attribute__((vector_size(64)));
typedef int64_t vi64 __attribute__((vector_size(64)));

#define ARG_BOTH(S, T)                                                      \
    ARG_INT(amax_##S, T, >, BETTER_MAX)                                     \
    ARG_INT(amin_##S, T, <, BETTER_MIN)

ARG_BOTH(i8, int8_t)
ARG_BOTH(u8, uint8_t)
ARG_BOTH(i16, int16_t)
ARG_BOTH(i32, int32_t)
ARG_BOTH(i64, int64_t)
ARG_BOTH(u16, uint16_t)
ARG_BOTH(u32, uint32_t)
ARG_BOTH(u64, uint64_t)
ARG_FLOAT(amax_f32, float, vf32, vi32, >, BETTER_MAX)
ARG_FLOAT(amin_f32, float, vf32, vi32, <, BETTER_MIN)
ARG_FLOAT(amax_f64, double, vf64, vi64, >, BETTER_MAX)
ARG_FLOAT(amin_f64, double, vf64, vi64, <, BETTER_MIN)

typedef struct {
    int64_t (*row)(const void *, int64_t);
    int (*better)(const void *, int64_t, int64_t);
    void (*col)(const void *, int64_t, int64_t, int64_t, int64_t *);
} arg_loops;

#define AL(NAME) { NAME##_row, NAME##_better, NAME##_col }
#define AL_ALL(K) { [TFM_BOOL] = AL(K##_u8), [TFM_INT8] = AL(K##_i8),       \
    [TFM_UINT8] = AL(K##_u8), [TFM_INT16] = AL(K##_i16),                    \
    [TFM_INT32] = AL(K##_i32), [TFM_INT64] = AL(K##_i64),                   \
    [TFM_FLOAT32] = AL(K##_f32), [TFM_FLOAT64] = AL(K##_f64),               \
    [TFM_UINT16] = AL(K##_u16), [TFM_UINT32] = AL(K##_u32),                 \
    [TFM_UINT64] = AL(K##_u64) }

static const arg_loops table[2][TFM_DTYPE_COUNT] = {
    AL_ALL(amax), AL_ALL(amin),
};

static inline void
put_index(void *o, bool wide, int64_t k, int64_t v)
{
    if (wide)
        ((int64_t *)o)[k] = v;
    else
        ((int32_t *)o)[k] = (int32_t)v;
}

static int
max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* A few long rows: best of each block in parallel, then the blocks in
 * order (an equal later block never wins, so the first index stays). */
static tfm_code
rows_blocked(const arg_loops *L, const char *x, size_t es, int64_t A,
             int64_t R, void *o, bool wide)
{
    int64_t nb = (R + TFM_RED_BLOCK - 1) / TFM_RED_BLOCK;
    int64_t *best = malloc((size_t)(A * nb) * sizeof *best);
    if (!best)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "ArgMax/ArgMin: out "
                         "of memory");
    #pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < A * nb; q++) {
        int64_t a = q / nb, r0 = (q % nb) * TFM_RED_BLOCK;
        int64_t len = R - r0 < TFM_RED_BLOCK ? R - r0 : TFM_RED_BLOCK;
        best[q] = r0 + L->row(x + (size_t)(a * R + r0) * es, len);
    }
    for (int64_t a = 0; a < A; a++) {
        const char *xr = x + (size_t)(a * R) * es;
        int64_t bi = best[a * nb];
        for (int64_t k = 1; k < nb; k++)
            if (L->better(xr, best[a * nb + k], bi))
                bi = best[a * nb + k];
        put_index(o, wide, a, bi);
    }
    free(best);
    return TFM_OK;
}

tfm_code
tfm_k_argreduce(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout,
                const tfm_kctx *ctx)
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
    const arg_loops *L = &table[op == TFM_OP_ARGMIN][x->dtype];
    if (!L->row)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(x->dtype));
    if (A * B == 0)
        return TFM_OK;
    const char *px = tfm_tensor_data(x);
    size_t es = tfm_dtype_size(x->dtype);
    void *o = tfm_tensor_data(out[0]);
    bool wide = out[0]->dtype == TFM_INT64;
    int64_t total = A * R * B;
    if (B == 1) {
        if (R > TFM_RED_BLOCK && A < 4 * max_threads())
            return rows_blocked(L, px, es, A, R, o, wide);
        TFM_PAR_FOR(total >= TFM_PAR_MIN, i, A,
                    put_index(o, wide, i,
                              L->row(px + (size_t)(i * R) * es, R)););
        return TFM_OK;
    }
    int64_t nt = (B + TFM_RED_TILE - 1) / TFM_RED_TILE;
    /* TFM_PAR_FOR: an omp if() that is false still wakes the pool. */
    TFM_PAR_FOR(total >= TFM_PAR_MIN, q, A * nt, {
        int64_t i = q / nt, j0 = (q % nt) * TFM_RED_TILE;
        int64_t len = B - j0 < TFM_RED_TILE ? B - j0 : TFM_RED_TILE;
        int64_t idx[TFM_RED_TILE];
        L->col(px + (size_t)(i * R * B + j0) * es, R, len, B, idx);
        for (int64_t j = 0; j < len; j++)
            put_index(o, wide, i * B + j0 + j, idx[j]);
    });
    return TFM_OK;
}
