/* Shape and dtype rules of the quantized ops (ops_quant.def), and the
 * gradient rule that says they are for inference only. */
#include "quant.h"

#include <math.h>

#include "../kernels/cpu/conv.h"
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

/* One output of in[0]'s shape and dtype d. */
static tfm_code
same_shape(const tfm_meta *in, tfm_dtype d, tfm_meta *out, int *nout)
{
    *nout = 1;
    out[0].dtype = d;
    out[0].shape = in[0].shape;
    return TFM_OK;
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
    return same_shape(in, TFM_INT8, out, nout);
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
    return same_shape(in, TFM_FLOAT32, out, nout);
}

/* The FC rules' output, packed or not: input [..., K] -> [..., N]. */
static tfm_code
fc_out(tfm_op op, const tfm_meta *in, int64_t N, tfm_dtype d,
       tfm_meta *out, int *nout)
{
    *nout = 1;
    out[0].dtype = d;
    out[0].shape = in[0].shape;
    out[0].shape.dims[in[0].shape.ndim - 1] = N;
    return tfm_check_size(nm(op), &out[0].shape, d);
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
    return fc_out(op, in, in[1].shape.dims[1], d, out, nout);
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
check_act(tfm_op op, const tfm_attrs *a)
{
    if (a->i[3] < TFM_QACT_NONE || a->i[3] > TFM_QACT_RELU6)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: activation must be "
                         "0 (none), 1 (Relu) or 2 (Relu6), got %lld",
                         nm(op), (long long)a->i[3]);
    return TFM_OK;
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
    return check_act(op, a);
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

/* ---- the packed forms (Note [Packed int8 weights] in qgemm.h) ---- */

/* A vector of C values of dtype d (scale, column sums, bias). */
static tfm_code
check_vec(tfm_op op, const tfm_meta *m, const char *what, tfm_dtype d,
          int64_t c)
{
    tfm_code rc;
    if ((rc = want_dtype(op, m, what, d))
        || (rc = want_rank(op, m, what, 1, 1)))
        return rc;
    if (m->shape.dims[0] >= 0 && m->shape.dims[0] != c) {
        char b[96];
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s has shape %s, "
                         "expected [%lld] (one per output channel)", nm(op),
                         what, tfm_shape_str(&m->shape, b, sizeof b),
                         (long long)c);
    }
    return TFM_OK;
}

/* Inputs 1..3 of a packed op: weights packed from [K, N] (K unknown:
 * -1), scale f32 [N] (N, also unknown: -1, is its length) and int32
 * [N] (offset or column sums, `what`). *n gets N. */
static tfm_code
check_packed(tfm_op op, const tfm_meta *in, int64_t K, const char *what,
             int64_t *n)
{
    tfm_code rc;
    if ((rc = want_dtype(op, &in[2], "scale", TFM_FLOAT32))
        || (rc = want_rank(op, &in[2], "scale", 1, 1)))
        return rc;
    int64_t N = *n = in[2].shape.dims[0];
    if ((rc = want_dtype(op, &in[1], "packed weights", TFM_INT8))
        || (rc = want_rank(op, &in[1], "packed weights", 1, 1))
        || (rc = check_k(op, K))
        || (rc = check_vec(op, &in[3], what, TFM_INT32, N)))
        return rc;
    int64_t have = in[1].shape.dims[0];
    if (K >= 0 && N >= 0 && have >= 0 && have != TFM_QPACK_BYTES(K, N)) {
        char b[96];
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: packed weights %s "
                         "do not hold [K=%lld, N=%lld] weights, which pack "
                         "to [%lld]", nm(op),
                         tfm_shape_str(&in[1].shape, b, sizeof b),
                         (long long)K, (long long)N,
                         (long long)TFM_QPACK_BYTES(K, N));
    }
    return TFM_OK;
}

/* Input int8, or float32 quantized on the way in; output int8 or, with
 * dtype float32, dequantized on the way out. */
static tfm_code
check_static(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
             tfm_dtype *out_dtype)
{
    tfm_code rc;
    (void)nin;
    if (in[0].dtype != TFM_INT8 && in[0].dtype != TFM_FLOAT32) {
        char b[96];
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input must be int8 "
                         "or float32, got %s %s", nm(op),
                         tfm_dtype_name(in[0].dtype),
                         tfm_shape_str(&in[0].shape, b, sizeof b));
    }
    if ((rc = check_qparams(op, a, 2)) || (rc = check_act(op, a)))
        return rc;
    /* The dtype attribute is the output's: int8, or float32 (also the
     * default of an unset attribute) for the dequantized int8. */
    if (a->dtype != TFM_INT8 && a->dtype != TFM_FLOAT32)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: output dtype must "
                         "be int8 or float32, got %s", nm(op),
                         tfm_dtype_name((tfm_dtype)a->dtype));
    *out_dtype = a->dtype;
    return TFM_OK;
}

tfm_code
tfm_infer_quantized_fc_packed(tfm_op op, const tfm_meta *in, int nin,
                              const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc;
    tfm_dtype d;
    if ((rc = check_static(op, in, nin, a, &d))
        || (rc = want_rank(op, &in[0], "input", 2, TFM_MAX_DIMS)))
        return rc;
    int r = in[0].shape.ndim;
    int64_t N;
    if ((rc = check_packed(op, in, in[0].shape.dims[r - 1], "offset", &N)))
        return rc;
    return fc_out(op, in, N, d, out, nout);
}

tfm_code
tfm_infer_hybrid_fc_packed(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc;
    if (nin != 4 && nin != 5)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects 4 inputs "
                         "(input, packed weights, scale, column sums) or 5 "
                         "(and bias), got %d", nm(op), nin);
    if ((rc = want_dtype(op, &in[0], "input", TFM_FLOAT32))
        || (rc = want_rank(op, &in[0], "input", 2, TFM_MAX_DIMS))
        || (rc = check_act(op, a)))
        return rc;
    int r = in[0].shape.ndim;
    int64_t N;
    if ((rc = check_packed(op, in, in[0].shape.dims[r - 1], "column sums",
                           &N))
        || (nin == 5
            && (rc = check_vec(op, &in[4], "bias", TFM_FLOAT32, N))))
        return rc;
    return fc_out(op, in, N, TFM_FLOAT32, out, nout);
}

/* The output shape of a packed conv, after its filter's sizes (which
 * its packed weights do not say: ints[4..7], Conv2D's input_sizes
 * slots), the input's channels, the packed weights and in[3] (`what`)
 * are checked; *n is the number of output channels. */
static tfm_code
conv_packed_shape(tfm_op op, const tfm_meta *in, const tfm_attrs *a,
                  const char *what, tfm_meta *out, int *nout, int64_t *n)
{
    tfm_code rc;
    if ((rc = want_rank(op, &in[0], "input", 4, 4)))
        return rc;
    const int64_t *f = a->ints + TFM_CONV_SIZES;
    for (int k = 0; k < 4; k++)
        if (a->n_ints < TFM_CONV_SIZES + 4 || f[k] <= 0 || f[k] > (1 << 20))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: filter sizes "
                             "(ints[4..7]: kh, kw, in, out) must be "
                             "positive, got [%lld,%lld,%lld,%lld]", nm(op),
                             (long long)f[0], (long long)f[1],
                             (long long)f[2], (long long)f[3]);
    int64_t c = in[0].shape.dims[3];
    if (c >= 0 && c != f[2]) {
        char b[96];
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input %s has %lld "
                         "channels, the filter [%lld,%lld,%lld,%lld] wants "
                         "%lld", nm(op),
                         tfm_shape_str(&in[0].shape, b, sizeof b),
                         (long long)c, (long long)f[0], (long long)f[1],
                         (long long)f[2], (long long)f[3], (long long)f[2]);
    }
    int64_t N;
    if ((rc = check_packed(op, in, f[0] * f[1] * f[2], what, &N)))
        return rc;
    if (N >= 0 && N != f[3])
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: scale has %lld "
                         "values, the filter [%lld,%lld,%lld,%lld] has %lld "
                         "output channels", nm(op), (long long)N,
                         (long long)f[0], (long long)f[1], (long long)f[2],
                         (long long)f[3], (long long)f[3]);
    *n = f[3];
    tfm_meta m[2] = {{TFM_FLOAT32, in[0].shape},
                     {TFM_FLOAT32, tfm_shape_make(4, f)}};
    return tfm_infer_conv2d(op, m, 2, a, out, nout);
}

tfm_code
tfm_infer_quantized_conv2d_packed(tfm_op op, const tfm_meta *in, int nin,
                                  const tfm_attrs *a, tfm_meta *out,
                                  int *nout)
{
    tfm_code rc;
    tfm_dtype d;
    int64_t n;
    if ((rc = check_static(op, in, nin, a, &d))
        || (rc = conv_packed_shape(op, in, a, "offset", out, nout, &n)))
        return rc;
    out[0].dtype = d;
    return TFM_OK;
}

tfm_code
tfm_infer_hybrid_conv2d_packed(tfm_op op, const tfm_meta *in, int nin,
                               const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc;
    int64_t n;
    if (nin != 4 && nin != 5)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects 4 inputs "
                         "(input, packed weights, scale, column sums) or 5 "
                         "(and bias), got %d", nm(op), nin);
    if ((rc = want_dtype(op, &in[0], "input", TFM_FLOAT32))
        || (rc = check_act(op, a))
        || (rc = conv_packed_shape(op, in, a, "column sums", out, nout,
                                   &n))
        || (nin == 5
            && (rc = check_vec(op, &in[4], "bias", TFM_FLOAT32, n))))
        return rc;
    out[0].dtype = TFM_FLOAT32;
    return TFM_OK;
}

tfm_code
tfm_infer_quantized_pool(tfm_op op, const tfm_meta *in, int nin,
                         const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc;
    if ((rc = want_dtype(op, &in[0], "input", TFM_INT8))
        || (rc = want_rank(op, &in[0], "input", 4, 4)))
        return rc;
    if (a->i[0] == TFM_PAD_EXPLICIT)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: padding must be "
                         "VALID or SAME", nm(op));
    tfm_meta m = {TFM_FLOAT32, in[0].shape};
    if ((rc = tfm_infer_pool(op, &m, nin, a, out, nout)))
        return rc;
    out[0].dtype = TFM_INT8;
    return TFM_OK;
}

tfm_code
tfm_infer_quantized_softmax(tfm_op op, const tfm_meta *in, int nin,
                            const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc;
    if ((rc = want_dtype(op, &in[0], "input", TFM_INT8))
        || (rc = want_rank(op, &in[0], "input", 1, TFM_MAX_DIMS)))
        return rc;
    if (!(a->f[0] > 0) || !isfinite(a->f[0]) || !(a->f[1] > 0)
        || !isfinite(a->f[1]))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input scale (f[0]) "
                         "and beta (f[1]) must be finite and > 0, got %g "
                         "and %g", nm(op), a->f[0], a->f[1]);
    return same_shape(in, TFM_INT8, out, nout);
}
