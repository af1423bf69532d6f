/* Softmax family kernels. Each works on slices: the input viewed as
 * [outer, n, inner] with n the softmax axis, so any axis is handled in
 * place (no transposes); the common last-axis case has inner == 1 and
 * walks memory contiguously. Slices run in parallel when big. Every
 * slice subtracts its max before exponentiating (no overflow) and sums
 * in double. */
#include <math.h>

#include "loops.h"
#include "nn.h"

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

#define SOFTMAX(T, EXP, LOG)                                                 \
static void                                                                  \
softmax_##T(const T *x, T *y, slices v, int take_log)                        \
{                                                                            \
    int64_t count = v.outer * v.inner, st = v.inner;                         \
    int big = count * v.n >= TFM_PAR_MIN;                                    \
    _Pragma("omp parallel for schedule(static) if(big)")                     \
    for (int64_t s = 0; s < count; s++) {                                    \
        const T *xs = x + slice_base(&v, s);                                 \
        T *ys = y + slice_base(&v, s);                                       \
        T m = -INFINITY;                                                     \
        for (int64_t i = 0; i < v.n; i++)                                    \
            m = xs[i * st] > m ? xs[i * st] : m;                             \
        double sum = 0;                                                      \
        if (take_log) {                                                      \
            for (int64_t i = 0; i < v.n; i++)                                \
                sum += EXP(xs[i * st] - m);                                  \
            T lse = (T)LOG(sum);                                             \
            for (int64_t i = 0; i < v.n; i++)                                \
                ys[i * st] = xs[i * st] - m - lse;                           \
        } else {                                                             \
            for (int64_t i = 0; i < v.n; i++) {                              \
                T e = EXP(xs[i * st] - m);                                   \
                ys[i * st] = e;                                              \
                sum += e;                                                    \
            }                                                                \
            T inv = (T)(1.0 / sum);                                          \
            for (int64_t i = 0; i < v.n; i++)                                \
                ys[i * st] *= inv;                                           \
        }                                                                    \
    }                                                                        \
}

SOFTMAX(float, expf, log)
SOFTMAX(double, exp, log)

tfm_code
tfm_k_softmax(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout)
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

#define SPARSE_XENT(T, EXP)                                                  \
static void                                                                  \
sparse_xent_##T(const T *x, const tfm_tensor *lt, const void *lp, T *loss,   \
                T *back, int64_t rows, int64_t n)                            \
{                                                                            \
    int big = rows * n >= TFM_PAR_MIN;                                       \
    _Pragma("omp parallel for schedule(static) if(big)")                     \
    for (int64_t r = 0; r < rows; r++) {                                     \
        const T *xr = x + r * n;                                             \
        T *br = back + r * n;                                                \
        int64_t label = label_at(lt, lp, r);                                 \
        T m = -INFINITY;                                                     \
        for (int64_t i = 0; i < n; i++)                                      \
            m = xr[i] > m ? xr[i] : m;                                       \
        double sum = 0;                                                      \
        for (int64_t i = 0; i < n; i++) {                                    \
            T e = EXP(xr[i] - m);                                            \
            br[i] = e;                                                       \
            sum += e;                                                        \
        }                                                                    \
        T inv = (T)(1.0 / sum);                                              \
        for (int64_t i = 0; i < n; i++)                                      \
            br[i] *= inv;                                                    \
        br[label] -= 1;                                                      \
        loss[r] = (T)(log(sum) - (double)(xr[label] - m));                   \
    }                                                                        \
}

SPARSE_XENT(float, expf)
SPARSE_XENT(double, exp)

tfm_code
tfm_k_sparse_xent(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout)
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

#define XENT(T, EXP)                                                         \
static void                                                                  \
xent_##T(const T *x, const T *lab, T *loss, T *back, slices v)               \
{                                                                            \
    int64_t count = v.outer * v.inner, st = v.inner;                         \
    int big = count * v.n >= TFM_PAR_MIN;                                    \
    _Pragma("omp parallel for schedule(static) if(big)")                     \
    for (int64_t s = 0; s < count; s++) {                                    \
        int64_t base = slice_base(&v, s);                                    \
        const T *xs = x + base, *ls = lab + base;                            \
        T *bs = back + base;                                                 \
        T m = -INFINITY;                                                     \
        for (int64_t i = 0; i < v.n; i++)                                    \
            m = xs[i * st] > m ? xs[i * st] : m;                             \
        double sum = 0;                                                      \
        for (int64_t i = 0; i < v.n; i++) {                                  \
            T e = EXP(xs[i * st] - m);                                       \
            bs[i * st] = e;                                                  \
            sum += e;                                                        \
        }                                                                    \
        double lse = log(sum), acc = 0;                                      \
        T inv = (T)(1.0 / sum);                                              \
        for (int64_t i = 0; i < v.n; i++) {                                  \
            T li = ls[i * st];                                               \
            acc += (double)li * (lse - (double)(xs[i * st] - m));            \
            bs[i * st] = bs[i * st] * inv - li;                              \
        }                                                                    \
        loss[s] = (T)acc;                                                    \
    }                                                                        \
}

XENT(float, expf)
XENT(double, exp)

tfm_code
tfm_k_xent(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout)
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
