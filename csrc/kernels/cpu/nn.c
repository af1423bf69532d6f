/* Softmax family kernels. Each works on slices: the input viewed as
 * [outer, n, inner] with n the softmax axis, so any axis is handled in
 * place (no transposes); the common last-axis case has inner == 1 and
 * walks memory contiguously. Slices run in parallel when big. Every
 * slice subtracts its max before exponentiating (no overflow) and sums
 * in double. */
#include <math.h>

#include "loops.h"
#include "nn.h"

/* libmvec's exp: the `omp simd` row loops below compute 16 (AVX-512)
 * or 8 exps per call. */
#include "mvec.h"

typedef struct slices {
    int64_t outer, n, inner;
} slices;

static slices
slices_of(const tfm_shape *s, int axis)
{
    slices v = {1, s->dims[axis], 1};
    for (int d = 0; d < axis; d++)
        v.outer *= s->dims[d];
    for (int d = axis + 1; d < s->ndim; d++)
        v.inner *= s->dims[d];
    return v;
}

static inline int64_t
slice_base(const slices *v, int64_t s)
{
    return (s / v->inner) * v->n * v->inner + s % v->inner;
}

/* Rows along the last axis (the common case) go in chunks of about
 * CHUNK elements: per-row max, x - max into the output, then a single
 * vector exp pass over the whole chunk, then per-row sums. One long exp
 * loop keeps libmvec busy even for rows of 10 classes (a vector call
 * per short row, or scalar exps mixed with vector code, cost several
 * times more), and the chunk stays in L1 across the passes. */
#define CHUNK 2048

#define EXP_ROWS(T, EXP)                                                     \
static void                                                                  \
exp_rows_##T(const T *restrict x, T *restrict e, int64_t rows, int64_t n,    \
             T *restrict m, double *restrict sum)                            \
{                                                                            \
    for (int64_t r = 0; r < rows; r++) {                                     \
        const T *xr = x + r * n;                                             \
        T *er = e + r * n;                                                   \
        T mr = -INFINITY;                                                    \
        _Pragma("omp simd reduction(max:mr)")                                \
        for (int64_t i = 0; i < n; i++)                                      \
            mr = xr[i] > mr ? xr[i] : mr;                                    \
        _Pragma("omp simd")                                                  \
        for (int64_t i = 0; i < n; i++)                                      \
            er[i] = xr[i] - mr;                                              \
        m[r] = mr;                                                           \
    }                                                                        \
    int64_t total = rows * n;                                                \
    _Pragma("omp simd")                                                      \
    for (int64_t i = 0; i < total; i++)                                      \
        e[i] = EXP(e[i]);                                                    \
    for (int64_t r = 0; r < rows; r++) {                                     \
        const T *er = e + r * n;                                             \
        double sr = 0;                                                       \
        _Pragma("omp simd reduction(+:sr)")                                  \
        for (int64_t i = 0; i < n; i++)                                      \
            sr += er[i];                                                     \
        sum[r] = sr;                                                         \
    }                                                                        \
}

EXP_ROWS(float, expf)
EXP_ROWS(double, exp)

/* Runs the body (the variadic part) for each chunk of whole rows, in
 * parallel when big. It sees the chunk's first row r0, its row count
 * `rows`, and m[] and sum[] (max and sum of exps per row) after
 * exp_rows_T(x, E) has put the exps of the chunk into E. */
#define FOR_ROW_CHUNKS(T, x, E, nrows, n, ...)                               \
    do {                                                                     \
        int64_t per_ = (n) >= CHUNK ? 1 : CHUNK / (n);                       \
        int big_ = (nrows) * (n) >= TFM_PAR_MIN;                             \
        TFM_PAR_FOR(big_, c_, ((nrows) + per_ - 1) / per_,                   \
            int64_t r0 = c_ * per_;                                          \
            int64_t rows = (nrows) - r0 < per_ ? (nrows) - r0 : per_;        \
            T m[CHUNK];                                                      \
            double sum[CHUNK];                                               \
            exp_rows_##T((x) + r0 * (n), (E) + r0 * (n), rows, (n), m, sum); \
            __VA_ARGS__                                                      \
        );                                                                   \
    } while (0)

/* Any axis with inner > 1: strided slices, scalar. */
#define STRIDED_SOFTMAX(T, EXP, LOG)                                         \
static void                                                                  \
strided_softmax_##T(const T *x, T *y, slices v, int take_log)                \
{                                                                            \
    int64_t count = v.outer * v.inner, st = v.inner;                         \
    int big = count * v.n >= TFM_PAR_MIN;                                    \
    TFM_PAR_FOR(big, s, count,                                               \
        const T *xs = x + slice_base(&v, s);                                 \
        T *ys = y + slice_base(&v, s);                                       \
        T m = -INFINITY;                                                     \
        for (int64_t i = 0; i < v.n; i++)                                    \
            m = xs[i * st] > m ? xs[i * st] : m;                             \
        double sum = 0;                                                      \
        for (int64_t i = 0; i < v.n; i++) {                                  \
            T e = EXP(xs[i * st] - m);                                       \
            ys[i * st] = e;                                                  \
            sum += e;                                                        \
        }                                                                    \
        T lse = (T)LOG(sum), inv = (T)(1.0 / sum);                           \
        for (int64_t i = 0; i < v.n; i++)                                    \
            ys[i * st] = take_log ? (xs[i * st] - m) - lse                   \
                                  : ys[i * st] * inv;                        \
    );                                                                       \
}

STRIDED_SOFTMAX(float, expf, log)
STRIDED_SOFTMAX(double, exp, log)

#define SOFTMAX(T)                                                           \
static void                                                                  \
softmax_##T(const T *x, T *y, slices v, int take_log)                        \
{                                                                            \
    if (v.inner != 1) {                                                      \
        strided_softmax_##T(x, y, v, take_log);                              \
        return;                                                              \
    }                                                                        \
    int64_t n = v.n;                                                         \
    if (n == 0)                                                              \
        return;                                                              \
    FOR_ROW_CHUNKS(T, x, y, v.outer, n, {                                    \
        for (int64_t r = 0; r < rows; r++) {                                 \
            const T *xr = x + (r0 + r) * n;                                  \
            T *yr = y + (r0 + r) * n;                                        \
            if (take_log) {                                                  \
                /* (x - m) first, then - lse: exact for big logits. */       \
                T mr = m[r], lse = (T)log(sum[r]);                           \
                _Pragma("omp simd")                                          \
                for (int64_t i = 0; i < n; i++)                              \
                    yr[i] = (xr[i] - mr) - lse;                              \
            } else {                                                         \
                T inv = (T)(1.0 / sum[r]);                                   \
                _Pragma("omp simd")                                          \
                for (int64_t i = 0; i < n; i++)                              \
                    yr[i] *= inv;                                            \
            }                                                                \
        }                                                                    \
    });                                                                      \
}

SOFTMAX(float)
SOFTMAX(double)

tfm_code
tfm_k_softmax(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    int axis;
    tfm_code rc = tfm_shape_axis(tfm_ops[op].name, a->i[0],
                                 in[0]->shape.ndim, &axis);
    if (rc)
        return rc;
    slices v = slices_of(&in[0]->shape, axis);
    int take_log = op == TFM_OP_LOG_SOFTMAX;
    if (in[0]->dtype == TFM_FLOAT32)
        softmax_float(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]), v,
                      take_log);
    else
        softmax_double(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]), v,
                       take_log);
    return TFM_OK;
}

/* ---- sparse cross entropy (last axis) ---------------------------------- */

static inline int64_t
label_at(const tfm_tensor *l, const void *p, int64_t r)
{
    return l->dtype == TFM_INT32 ? ((const int32_t *)p)[r]
                                 : ((const int64_t *)p)[r];
}

#define SPARSE_XENT(T)                                                       \
static void                                                                  \
sparse_xent_##T(const T *x, const tfm_tensor *lt, const void *lp, T *loss,   \
                T *back, int64_t nrows, int64_t n)                           \
{                                                                            \
    FOR_ROW_CHUNKS(T, x, back, nrows, n, {                                   \
        for (int64_t r = 0; r < rows; r++) {                                 \
            int64_t row = r0 + r, label = label_at(lt, lp, row);             \
            T *br = back + row * n;                                          \
            T inv = (T)(1.0 / sum[r]);                                       \
            _Pragma("omp simd")                                              \
            for (int64_t i = 0; i < n; i++)                                  \
                br[i] *= inv;                                                \
            br[label] -= 1;                                                  \
            loss[row] = (T)(log(sum[r]) - (double)(x[row * n + label] -      \
                                                   m[r]));                   \
        }                                                                    \
    });                                                                      \
}

SPARSE_XENT(float)
SPARSE_XENT(double)

tfm_code
tfm_k_sparse_xent(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,
                  const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)a;
    const tfm_tensor *f = in[0], *l = in[1];
    int64_t n = f->shape.dims[f->shape.ndim - 1];
    int64_t rows = tfm_tensor_numel(l);
    const void *lp = tfm_tensor_data(l);
    /* Checked before any work, on the calling thread (which owns the
     * error slot). */
    for (int64_t r = 0; r < rows; r++) {
        int64_t label = label_at(l, lp, r);
        if (label < 0 || label >= n)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Received a "
                             "label value of %lld which is outside the "
                             "valid range of [0, %lld). (labels[%lld])",
                             tfm_ops[op].name, (long long)label,
                             (long long)n, (long long)r);
    }
    if (rows == 0)
        return TFM_OK;
    if (f->dtype == TFM_FLOAT32)
        sparse_xent_float(tfm_tensor_data(f), l, lp, tfm_tensor_data(out[0]),
                          tfm_tensor_data(out[1]), rows, n);
    else
        sparse_xent_double(tfm_tensor_data(f), l, lp,
                           tfm_tensor_data(out[0]), tfm_tensor_data(out[1]),
                           rows, n);
    return TFM_OK;
}

/* ---- dense cross entropy (any axis) ------------------------------------ */

/* One slice's loss and backprop, given its max, sum of exps and the exps
 * already in bs: loss = sum l * (lse - (x - m)), backprop = e / sum - l. */
#define XENT_SLICE(T, xs, ls, bs, st, n, mr, sr, lossp)                      \
    do {                                                                     \
        double lse_ = log(sr), acc_ = 0;                                     \
        T inv_ = (T)(1.0 / (sr));                                            \
        _Pragma("omp simd reduction(+:acc_)")                                \
        for (int64_t i = 0; i < (n); i++) {                                  \
            T li = (ls)[i * (st)];                                           \
            acc_ += (double)li * (lse_ - (double)((xs)[i * (st)] - (mr)));   \
            (bs)[i * (st)] = (bs)[i * (st)] * inv_ - li;                     \
        }                                                                    \
        *(lossp) = (T)acc_;                                                  \
    } while (0)

#define XENT(T, EXP)                                                         \
static void                                                                  \
xent_##T(const T *x, const T *lab, T *loss, T *back, slices v)               \
{                                                                            \
    int64_t n = v.n, st = v.inner;                                           \
    if (st == 1) {                                                           \
        if (n == 0) {                                                        \
            for (int64_t s = 0; s < v.outer; s++)                            \
                loss[s] = 0;                                                 \
            return;                                                          \
        }                                                                    \
        FOR_ROW_CHUNKS(T, x, back, v.outer, n, {                             \
            for (int64_t r = 0; r < rows; r++) {                             \
                int64_t row = r0 + r;                                        \
                XENT_SLICE(T, x + row * n, lab + row * n, back + row * n,    \
                           1, n, m[r], sum[r], &loss[row]);                  \
            }                                                                \
        });                                                                  \
        return;                                                              \
    }                                                                        \
    int64_t count = v.outer * v.inner;                                       \
    int big = count * n >= TFM_PAR_MIN;                                      \
    TFM_PAR_FOR(big, s, count,                                               \
        int64_t base = slice_base(&v, s);                                    \
        const T *xs = x + base, *ls = lab + base;                            \
        T *bs = back + base;                                                 \
        T m = -INFINITY;                                                     \
        for (int64_t i = 0; i < n; i++)                                      \
            m = xs[i * st] > m ? xs[i * st] : m;                             \
        double sum = 0;                                                      \
        for (int64_t i = 0; i < n; i++) {                                    \
            T e = EXP(xs[i * st] - m);                                       \
            bs[i * st] = e;                                                  \
            sum += e;                                                        \
        }                                                                    \
        XENT_SLICE(T, xs, ls, bs, st, n, m, sum, &loss[s]);                  \
    );                                                                       \
}

XENT(float, expf)
XENT(double, exp)

tfm_code
tfm_k_xent(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    int axis;
    tfm_code rc = tfm_shape_axis(tfm_ops[op].name, a->i[0],
                                 in[0]->shape.ndim, &axis);
    if (rc)
        return rc;
    slices v = slices_of(&in[0]->shape, axis);
    if (in[0]->dtype == TFM_FLOAT32)
        xent_float(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                   tfm_tensor_data(out[0]), tfm_tensor_data(out[1]), v);
    else
        xent_double(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                    tfm_tensor_data(out[0]), tfm_tensor_data(out[1]), v);
    return TFM_OK;
}
