/* Shape and dtype rules of the quantized ops (ops_quant.def), and the
 * gradient rule that says they are for inference only. */
#include "quant.h"

#include <math.h>

#include "conv.h"
#include "grads.h"
#include "shape.h"

static const char *
nm(tfm_op op)
{
    return tfm_ops[op].name;
}

static tfm_code
want_dtype(tfm_op op, const tfm_meta *m, const char *what, tfm_dtype d)
{
    if (m->dtype == d)
        return TFM_OK;
    char b[96];
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must be %s, got %s "
                     "%s", nm(op), what, tfm_dtype_name(d),
                     tfm_dtype_name(m->dtype),
                     tfm_shape_str(&m->shape, b, sizeof b));
}

static tfm_code
want_rank(tfm_op op, const tfm_meta *m, const char *what, int lo, int hi)
{
    if (m->shape.ndim >= lo && m->shape.ndim <= hi)
        return TFM_OK;
    char b[96];
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must have rank %d%s,"
                     " got shape %s", nm(op), what, lo,
                     hi > lo ? " or more" : "",
                     tfm_shape_str(&m->shape, b, sizeof b));
}

/* Two dims that must agree (unknown, -1, agrees with anything). */
static tfm_code
same_dim(tfm_op op, const tfm_meta *x, int ax, const char *xs,
         const tfm_meta *y, int ay, const char *ys)
{
    int64_t p = x->shape.dims[ax], q = y->shape.dims[ay];
    if (p < 0 || q < 0 || p == q)
        return TFM_OK;
    char b1[96], b2[96];
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s %s and %s %s do not "
                     "match (dim %d of one, %d of the other)", nm(op), xs,
                     tfm_shape_str(&x->shape, b1, sizeof b1), ys,
                     tfm_shape_str(&y->shape, b2, sizeof b2), ax, ay);
}

static tfm_code
check_qparams(tfm_op op, const tfm_attrs *a, int n_scales)
{
    for (int k = 0; k < n_scales; k++)
        if (!(a->f[k] > 0) || !isfinite(a->f[k]))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: scale must be "
                             "finite and > 0, got %g", nm(op), a->f[k]);
    for (int k = 1; k <= n_scales; k++)
        if (a->i[k] < -128 || a->i[k] > 127)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: zero_point "
                             "must be in [-128, 127], got %lld", nm(op),
                             (long long)a->i[k]);
    return TFM_OK;
}

static tfm_code
check_k(tfm_op op, int64_t k)
{
    if (k > TFM_QGEMM_MAX_K)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: inner dimension %lld"
                         " is over %d, where int32 sums of int8 products "
                         "may overflow", nm(op), (long long)k,
                         TFM_QGEMM_MAX_K);
    return TFM_OK;
}

/* scale [C] (and bias [C], int32) beside a weight whose last axis is C. */
static tfm_code
check_channels(tfm_op op, const tfm_meta *in, int nin, int w_axis)
{
    tfm_code rc;
    if ((rc = want_dtype(op, &in[2], "scale", TFM_FLOAT32))
        || (rc = want_rank(op, &in[2], "scale", 1, 1))
        || (rc = same_dim(op, &in[1], w_axis, "weights", &in[2], 0,
                          "scale")))
        return rc;
    if (nin == 4
        && ((rc = want_dtype(op, &in[3], "bias", TFM_INT32))
            || (rc = want_rank(op, &in[3], "bias", 1, 1))
            || (rc = same_dim(op, &in[1], w_axis, "weights", &in[3], 0,
                              "bias"))))
        return rc;
    return TFM_OK;
}

tfm_code
tfm_infer_quantize(tfm_op op, const tfm_meta *in, int nin,
                   const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc;
    if ((rc = want_dtype(op, &in[0], "input", TFM_FLOAT32))
        || (rc = check_qparams(op, a, 1)))
        return rc;
    *nout = 1;
    out[0].dtype = TFM_INT8;
    out[0].shape = in[0].shape;
    return TFM_OK;
}

tfm_code
tfm_infer_dequantize(tfm_op op, const tfm_meta *in, int nin,
                     const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc;
    if (nin != 1 && nin != 2)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "Dequantize expects 1 "
                         "input (per-tensor) or 2 (input, per-channel "
                         "scale), got %d", nin);
    if ((rc = want_dtype(op, &in[0], "input", TFM_INT8)))
        return rc;
    if (nin == 1) {
        if ((rc = check_qparams(op, a, 1)))
            return rc;
    } else if ((rc = want_rank(op, &in[0], "input", 1, TFM_MAX_DIMS))
               || (rc = want_dtype(op, &in[1], "scale", TFM_FLOAT32))
               || (rc = want_rank(op, &in[1], "scale", 1, 1))
               || (rc = same_dim(op, &in[0], in[0].shape.ndim - 1, "input",
                                 &in[1], 0, "scale"))) {
        return rc;
    }
    *nout = 1;
    out[0].dtype = TFM_FLOAT32;
    out[0].shape = in[0].shape;
    return TFM_OK;
}

/* [..., K] x [K, N] -> [..., N], both ranks checked by the caller. */
static tfm_code
fc_shape(tfm_op op, const tfm_meta *in, tfm_meta *out, tfm_dtype d,
         int *nout)
{
    tfm_code rc;
    int r = in[0].shape.ndim;
    if ((rc = same_dim(op, &in[0], r - 1, "input", &in[1], 0, "weights"))
        || (rc = check_k(op, in[1].shape.dims[0])))
        return rc;
    *nout = 1;
    out[0].dtype = d;
    out[0].shape = in[0].shape;
    out[0].shape.dims[r - 1] = in[1].shape.dims[1];
    return tfm_check_size(nm(op), &out[0].shape, d);
}

tfm_code
tfm_infer_qmatmul_accum(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc;
    if ((rc = want_dtype(op, &in[0], "a", TFM_INT8))
        || (rc = want_dtype(op, &in[1], "b", TFM_INT8))
        || (rc = want_rank(op, &in[0], "a", 2, 2))
        || (rc = want_rank(op, &in[1], "b", 2, 2)))
        return rc;
    if (a->i[1] < -128 || a->i[1] > 127)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: zero_point must be "
                         "in [-128, 127], got %lld", nm(op),
                         (long long)a->i[1]);
    return fc_shape(op, in, out, TFM_INT32, nout);
}

tfm_code
tfm_infer_hybrid_fc(tfm_op op, const tfm_meta *in, int nin,
                    const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    tfm_code rc;
    if ((rc = want_dtype(op, &in[0], "input", TFM_FLOAT32))
        || (rc = want_dtype(op, &in[1], "weights", TFM_INT8))
        || (rc = want_rank(op, &in[0], "input", 2, TFM_MAX_DIMS))
        || (rc = want_rank(op, &in[1], "weights", 2, 2))
        || (rc = check_channels(op, in, nin, 1)))
        return rc;
    return fc_shape(op, in, out, TFM_FLOAT32, nout);
}

static tfm_code
check_quantized(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a)
{
    tfm_code rc;
    if (nin != 3 && nin != 4)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects 3 inputs "
                         "(input, weights, scale) or 4 (and bias), got %d",
                         nm(op), nin);
    if ((rc = want_dtype(op, &in[0], "input", TFM_INT8))
        || (rc = want_dtype(op, &in[1], "weights", TFM_INT8))
        || (rc = check_qparams(op, a, 2)))
        return rc;
    if (a->i[3] < TFM_QACT_NONE || a->i[3] > TFM_QACT_RELU6)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: activation must be "
                         "0 (none), 1 (Relu) or 2 (Relu6), got %lld",
                         nm(op), (long long)a->i[3]);
    return TFM_OK;
}

tfm_code
tfm_infer_quantized_fc(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc;
    if ((rc = check_quantized(op, in, nin, a))
        || (rc = want_rank(op, &in[0], "input", 2, TFM_MAX_DIMS))
        || (rc = want_rank(op, &in[1], "weights", 2, 2))
        || (rc = check_channels(op, in, nin, 1)))
        return rc;
    return fc_shape(op, in, out, TFM_INT8, nout);
}

tfm_code
tfm_infer_quantized_conv2d(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc;
    if ((rc = check_quantized(op, in, nin, a))
        || (rc = want_rank(op, &in[0], "input", 4, 4))
        || (rc = want_rank(op, &in[1], "filter", 4, 4))
        || (rc = check_channels(op, in, nin, 3)))
        return rc;
    /* Conv2D's rule gives the geometry (and its errors, under this op's
     * name); it wants float inputs, so it sees the shapes as float32. */
    tfm_meta f[2] = {{TFM_FLOAT32, in[0].shape}, {TFM_FLOAT32, in[1].shape}};
    if ((rc = tfm_infer_conv2d(op, f, 2, a, out, nout)))
        return rc;
    const int64_t *w = in[1].shape.dims;
    if (w[0] >= 0 && w[1] >= 0 && w[2] >= 0
        && (rc = check_k(op, w[0] * w[1] * w[2])))
        return rc;
    out[0].dtype = TFM_INT8;
    return TFM_OK;
}

TFM_GRAD(tfm_grad_rule_quantized)
{
    (void)g;
    (void)gin;
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: quantized ops are for "
                     "inference only and have no gradient; differentiate "
                     "the float model instead", nm(c->op));
}
