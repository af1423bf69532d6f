/* Shape and dtype rules of the conv family: the only place its shape
 * errors are raised. Unknown dims (-1, while tracing) pass through. */
#include "conv.h"

#include <stdint.h>
#include <string.h>

#include "../kernels/cpu/conv.h"
#include "shape.h"

#define SHAPE_BUF 96

static const char *const pad_names[] = {"VALID", "SAME", "EXPLICIT"};

static int
is_pool(tfm_op op)
{
    return op == TFM_OP_MAX_POOL || op == TFM_OP_MAX_POOL_GRAD ||
           op == TFM_OP_MAX_POOL_GRAD_GRAD || op == TFM_OP_AVG_POOL ||
           op == TFM_OP_AVG_POOL_GRAD;
}

static tfm_code
check_attrs(tfm_op op, const tfm_attrs *a)
{
    const char *name = tfm_ops[op].name;
    const char *win = is_pool(op) ? "ksize" : "dilations";
    if (a->n_ints < 4)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: expected strides "
                         "and %s attributes (4 ints), got %d ints", name,
                         win, a->n_ints);
    if (a->ints[TFM_CONV_STRIDE_H] < 1 || a->ints[TFM_CONV_STRIDE_W] < 1)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: strides must be "
                         ">= 1, got [%lld,%lld]", name,
                         (long long)a->ints[TFM_CONV_STRIDE_H],
                         (long long)a->ints[TFM_CONV_STRIDE_W]);
    if (a->ints[TFM_CONV_WIN_H] < 1 || a->ints[TFM_CONV_WIN_W] < 1)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must be >= 1, "
                         "got [%lld,%lld]", name, win,
                         (long long)a->ints[TFM_CONV_WIN_H],
                         (long long)a->ints[TFM_CONV_WIN_W]);
    for (int k = 0; k < 4; k++)
        if (a->ints[k] > INT32_MAX)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: strides and %s "
                             "must fit in int32, got %lld", name, win,
                             (long long)a->ints[k]);
    int64_t mode = a->i[0];
    if (mode < TFM_PAD_VALID || mode > TFM_PAD_EXPLICIT ||
        (mode == TFM_PAD_EXPLICIT && is_pool(op)))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: padding must be "
                         "\"SAME\" or \"VALID\"%s (got code %lld)", name,
                         is_pool(op) ? "" : " or explicit",
                         (long long)mode);
    if (mode == TFM_PAD_EXPLICIT) {
        if (a->n_ints < TFM_CONV_PADS + 4)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: explicit "
                             "padding needs 4 pad sizes in ints[8..11]",
                             name);
        for (int k = 0; k < 4; k++)
            if (a->ints[TFM_CONV_PADS + k] < 0 ||
                a->ints[TFM_CONV_PADS + k] > INT32_MAX)
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: explicit "
                                 "paddings must be in [0, 2^31), got %lld",
                                 name,
                                 (long long)a->ints[TFM_CONV_PADS + k]);
    }
    return TFM_OK;
}

static tfm_code
check_float(tfm_op op, const tfm_meta *m, const char *what)
{
    if (tfm_dtype_is_float(m->dtype))
        return TFM_OK;
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must be float16, "
                     "bfloat16, float32 or float64, got %s", tfm_ops[op].name, what,
                     tfm_dtype_name(m->dtype));
}

static tfm_code
check_rank4(tfm_op op, const tfm_meta *m, const char *what)
{
    char s[SHAPE_BUF];
    if (m->shape.ndim == 4)
        return TFM_OK;
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s must be 4-D "
                     "(%s), got shape %s", tfm_ops[op].name, what,
                     strcmp(what, "filter") == 0
                         ? "[height, width, in_channels, out_channels]"
                         : "NHWC",
                     tfm_shape_str(&m->shape, s, sizeof s));
}

static tfm_code
same_dtype(tfm_op op, const tfm_meta *a, const char *an, const tfm_meta *b,
           const char *bn)
{
    if (a->dtype == b->dtype)
        return TFM_OK;
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s and %s must have "
                     "the same dtype, got %s and %s", tfm_ops[op].name, an,
                     bn, tfm_dtype_name(a->dtype), tfm_dtype_name(b->dtype));
}

static int
dim_ok(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

/* Output height and width of a window (kh x kw, dilated by dh, dw) slid
 * over x. `filter` only names the filter's shape in the error. */
static tfm_code
window_out(tfm_op op, const tfm_shape *x, int64_t kh, int64_t kw,
           int64_t dh, int64_t dw, const tfm_attrs *a,
           const tfm_shape *filter, int64_t *oh, int64_t *ow)
{
    int mode = (int)a->i[0];
    int64_t pads[4] = {0, 0, 0, 0};
    if (mode == TFM_PAD_EXPLICIT)
        memcpy(pads, a->ints + TFM_CONV_PADS, sizeof pads);
    int64_t pad;
    *oh = *ow = -1;
    int bad = 0;
    if (kh >= 0)
        bad |= tfm_conv_dim(x->dims[1], kh, a->ints[TFM_CONV_STRIDE_H], dh,
                            mode, pads[0], pads[1], oh, &pad);
    if (kw >= 0)
        bad |= tfm_conv_dim(x->dims[2], kw, a->ints[TFM_CONV_STRIDE_W], dw,
                            mode, pads[2], pads[3], ow, &pad);
    if (!bad)
        return TFM_OK;
    char xs[SHAPE_BUF], fs[SHAPE_BUF] = "";
    if (filter)
        tfm_shape_str(filter, fs, sizeof fs);
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the %s window "
                     "%lldx%lld (dilated: %lldx%lld) is larger than the "
                     "input %s with %s padding%s%s%s", tfm_ops[op].name,
                     filter ? "filter" : "pooling", (long long)kh,
                     (long long)kw, (long long)((kh - 1) * dh + 1),
                     (long long)((kw - 1) * dw + 1),
                     tfm_shape_str(x, xs, sizeof xs), pad_names[mode],
                     filter ? " (filter " : "", fs, filter ? ")" : "");
}

/* Shape of conv2d(x, filter) into *y; checks channels. */
static tfm_code
conv_shape(tfm_op op, const tfm_shape *x, const tfm_shape *f,
           const tfm_attrs *a, tfm_shape *y)
{
    char xs[SHAPE_BUF], fs[SHAPE_BUF];
    if (!dim_ok(x->dims[3], f->dims[2]))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input depth %lld "
                         "does not match the filter's in_channels %lld "
                         "(input %s, filter %s)", tfm_ops[op].name,
                         (long long)x->dims[3], (long long)f->dims[2],
                         tfm_shape_str(x, xs, sizeof xs),
                         tfm_shape_str(f, fs, sizeof fs));
    int64_t oh, ow;
    tfm_code rc = window_out(op, x, f->dims[0], f->dims[1],
                             a->ints[TFM_CONV_WIN_H],
                             a->ints[TFM_CONV_WIN_W], a, f, &oh, &ow);
    if (rc)
        return rc;
    int64_t dims[4] = {x->dims[0], oh, ow, f->dims[3]};
    *y = tfm_shape_make(4, dims);
    return TFM_OK;
}

/* dy (out_backprop) must have the shape the forward op would give. */
static tfm_code
check_out_backprop(tfm_op op, const tfm_shape *want, const tfm_shape *dy,
                   const char *ctx_name, const tfm_shape *ctx_shape)
{
    char ws[SHAPE_BUF], ds[SHAPE_BUF], cs[SHAPE_BUF];
    int ok = dy->ndim == 4;
    for (int k = 0; ok && k < 4; k++)
        ok = dim_ok(want->dims[k], dy->dims[k]);
    if (ok)
        return TFM_OK;
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: gradient shape %s does "
                     "not match the forward output shape %s (%s %s)",
                     tfm_ops[op].name, tfm_shape_str(dy, ds, sizeof ds),
                     tfm_shape_str(want, ws, sizeof ws), ctx_name,
                     tfm_shape_str(ctx_shape, cs, sizeof cs));
}

static tfm_code
check_sizes(tfm_op op, const tfm_attrs *a, const char *what)
{
    if (a->n_ints < TFM_CONV_SIZES + 4)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the two-input form "
                         "needs %s in ints[4..7]", tfm_ops[op].name, what);
    /* Only the sizes another input supplies may be -1 (input_sizes:
     * batch and depth; filter_sizes: in and out channels): a -1 window
     * size would leave the output's shape unknown even at run time. */
    int spatial0 = op == TFM_OP_CONV2D_BACKPROP_INPUT ? 1 : 0;
    for (int k = 0; k < 4; k++) {
        int64_t v = a->ints[TFM_CONV_SIZES + k];
        int spatial = k == spatial0 || k == spatial0 + 1;
        if (v < (spatial ? 0 : -1) || v > INT32_MAX)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s[%d] must be "
                             "in [0, 2^31)%s, got %lld", tfm_ops[op].name,
                             what, k, spatial ? "" : " (or -1: unknown)",
                             (long long)v);
    }
    return TFM_OK;
}

tfm_code
tfm_infer_conv2d(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                 tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc;
    if ((rc = check_attrs(op, a)) || (rc = check_rank4(op, &in[0], "input"))
        || (rc = check_rank4(op, &in[1], "filter"))
        || (rc = check_float(op, &in[0], "input"))
        || (rc = same_dtype(op, &in[0], "input", &in[1], "filter")))
        return rc;
    *nout = 1;
    out[0].dtype = in[0].dtype;
    if ((rc = conv_shape(op, &in[0].shape, &in[1].shape, a, &out[0].shape)))
        return rc;
    return tfm_check_size(tfm_ops[op].name, &out[0].shape,
                          out[0].dtype);
}

tfm_code
tfm_infer_conv2d_backprop_input(tfm_op op, const tfm_meta *in, int nin,
                                const tfm_attrs *a, tfm_meta *out,
                                int *nout)
{
    tfm_code rc;
    if (nin != 2 && nin != 3)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects 3 inputs "
                         "(input, filter, out_backprop) or 2 (filter, "
                         "out_backprop) with input_sizes, got %d",
                         tfm_ops[op].name, nin);
    const tfm_meta *f = &in[nin - 2], *dy = &in[nin - 1];
    if ((rc = check_attrs(op, a)) || (rc = check_rank4(op, f, "filter"))
        || (rc = check_rank4(op, dy, "out_backprop"))
        || (rc = check_float(op, f, "filter"))
        || (rc = same_dtype(op, f, "filter", dy, "out_backprop")))
        return rc;
    tfm_shape x;
    if (nin == 3) {
        if ((rc = check_rank4(op, &in[0], "input")))
            return rc;
        x = in[0].shape;
    } else {
        if ((rc = check_sizes(op, a, "input_sizes")))
            return rc;
        x = tfm_shape_make(4, a->ints + TFM_CONV_SIZES);
        if (x.dims[0] < 0)
            x.dims[0] = dy->shape.dims[0];
        if (x.dims[3] < 0)
            x.dims[3] = f->shape.dims[2];
    }
    tfm_shape want;
    if ((rc = conv_shape(op, &x, &f->shape, a, &want))
        || (rc = check_out_backprop(op, &want, &dy->shape, "input", &x)))
        return rc;
    *nout = 1;
    out[0].dtype = f->dtype;
    out[0].shape = x;
    if (x.dims[0] < 0)
        out[0].shape.dims[0] = dy->shape.dims[0];
    if (x.dims[3] < 0)
        out[0].shape.dims[3] = f->shape.dims[2];
    return tfm_check_size(tfm_ops[op].name, &out[0].shape,
                          out[0].dtype);
}

tfm_code
tfm_infer_conv2d_backprop_filter(tfm_op op, const tfm_meta *in, int nin,
                                 const tfm_attrs *a, tfm_meta *out,
                                 int *nout)
{
    tfm_code rc;
    if (nin != 2 && nin != 3)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects 3 inputs "
                         "(input, filter, out_backprop) or 2 (input, "
                         "out_backprop) with filter_sizes, got %d",
                         tfm_ops[op].name, nin);
    const tfm_meta *x = &in[0], *dy = &in[nin - 1];
    if ((rc = check_attrs(op, a)) || (rc = check_rank4(op, x, "input"))
        || (rc = check_rank4(op, dy, "out_backprop"))
        || (rc = check_float(op, x, "input"))
        || (rc = same_dtype(op, x, "input", dy, "out_backprop")))
        return rc;
    tfm_shape f;
    if (nin == 3) {
        if ((rc = check_rank4(op, &in[1], "filter")))
            return rc;
        f = in[1].shape;
    } else {
        if ((rc = check_sizes(op, a, "filter_sizes")))
            return rc;
        f = tfm_shape_make(4, a->ints + TFM_CONV_SIZES);
    }
    tfm_shape want;
    if ((rc = conv_shape(op, &x->shape, &f, a, &want))
        || (rc = check_out_backprop(op, &want, &dy->shape, "filter", &f)))
        return rc;
    *nout = 1;
    out[0].dtype = x->dtype;
    out[0].shape = f;
    if (f.dims[2] < 0)
        out[0].shape.dims[2] = x->shape.dims[3];
    if (f.dims[3] < 0)
        out[0].shape.dims[3] = dy->shape.dims[3];
    return tfm_check_size(tfm_ops[op].name, &out[0].shape,
                          out[0].dtype);
}

/* The fused gradient ops' second output (their rule has filled
 * out[0]): db, [channels] of x's dtype, float32 or float64 only. */
static tfm_code
bias_grad_out(tfm_op op, const tfm_meta *x, int64_t channels,
              tfm_meta *out, int *nout)
{
    if (x->dtype != TFM_FLOAT32 && x->dtype != TFM_FLOAT64)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: only float32 and "
                         "float64, got %s", tfm_ops[op].name,
                         tfm_dtype_name(x->dtype));
    *nout = 2;
    out[1].dtype = x->dtype;
    out[1].shape = tfm_shape_make(1, &channels);
    return TFM_OK;
}

/* Conv2DBackpropFilter's rule, and db: [out_channels] (dy's last dim). */
tfm_code
tfm_infer_conv2d_backprop_filter_bias(tfm_op op, const tfm_meta *in,
                                      int nin, const tfm_attrs *a,
                                      tfm_meta *out, int *nout)
{
    tfm_code rc = tfm_infer_conv2d_backprop_filter(op, in, nin, a, out, nout);
    return rc ? rc : bias_grad_out(op, &in[0], out[0].shape.dims[3], out,
                                   nout);
}

/* Shape of a pooling of x. */
static tfm_code
pool_shape(tfm_op op, const tfm_meta *x, const tfm_attrs *a, tfm_shape *y)
{
    tfm_code rc;
    if ((rc = check_attrs(op, a)) || (rc = check_rank4(op, x, "input"))
        || (rc = check_float(op, x, "input")))
        return rc;
    int64_t oh, ow;
    rc = window_out(op, &x->shape, a->ints[TFM_CONV_WIN_H],
                    a->ints[TFM_CONV_WIN_W], 1, 1, a, NULL, &oh, &ow);
    if (rc)
        return rc;
    int64_t dims[4] = {x->shape.dims[0], oh, ow, x->shape.dims[3]};
    *y = tfm_shape_make(4, dims);
    return tfm_check_size(tfm_ops[op].name, y, x->dtype);
}

tfm_code
tfm_infer_pool(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    (void)nin;
    *nout = 1;
    out[0].dtype = in[0].dtype;
    return pool_shape(op, &in[0], a, &out[0].shape);
}

static tfm_code
check_like(tfm_op op, const tfm_meta *m, const char *what,
           const tfm_meta *ref, const tfm_shape *want)
{
    char ms[SHAPE_BUF], ws[SHAPE_BUF];
    tfm_code rc = same_dtype(op, ref, "orig_input", m, what);
    if (rc)
        return rc;
    int ok = m->shape.ndim == want->ndim;
    for (int k = 0; ok && k < want->ndim; k++)
        ok = dim_ok(m->shape.dims[k], want->dims[k]);
    if (ok)
        return TFM_OK;
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s has shape %s, "
                     "expected %s", tfm_ops[op].name, what,
                     tfm_shape_str(&m->shape, ms, sizeof ms),
                     tfm_shape_str(want, ws, sizeof ws));
}

/* MaxPoolGrad (x, y, dy) -> dx and MaxPoolGradGrad (x, y, ddx) -> ddy. */
tfm_code
tfm_infer_max_pool_grad(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_shape y;
    tfm_code rc = pool_shape(op, &in[0], a, &y);
    if (rc || (rc = check_like(op, &in[1], "orig_output", &in[0], &y)))
        return rc;
    int grad_of_input = op == TFM_OP_MAX_POOL_GRAD_GRAD;
    rc = check_like(op, &in[2], "grad", &in[0],
                    grad_of_input ? &in[0].shape : &y);
    if (rc)
        return rc;
    *nout = 1;
    out[0].dtype = in[0].dtype;
    out[0].shape = grad_of_input ? y : in[0].shape;
    return TFM_OK;
}

/* MaxPoolGrad's checks; then dx like x and db [channels]. */
tfm_code
tfm_infer_fused_max_pool_grad(tfm_op op, const tfm_meta *in, int nin,
                              const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc = tfm_infer_max_pool_grad(op, in, nin, a, out, nout);
    return rc ? rc : bias_grad_out(op, &in[0], in[0].shape.dims[3], out,
                                   nout);
}

tfm_code
tfm_infer_avg_pool_grad(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_shape y;
    tfm_code rc = pool_shape(op, &in[0], a, &y);
    if (rc || (rc = check_like(op, &in[1], "grad", &in[0], &y)))
        return rc;
    *nout = 1;
    out[0].dtype = in[0].dtype;
    out[0].shape = in[0].shape;
    return TFM_OK;
}

/* Depthwise: filter [kh, kw, in, multiplier], output depth in *
 * multiplier. */
static tfm_code
depthwise_shape(tfm_op op, const tfm_shape *x, const tfm_shape *f,
                const tfm_attrs *a, tfm_shape *y)
{
    char xs[SHAPE_BUF], fs[SHAPE_BUF];
    if (!dim_ok(x->dims[3], f->dims[2]))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input depth %lld "
                         "does not match the filter's in_channels %lld "
                         "(input %s, filter %s: [height, width, "
                         "in_channels, channel_multiplier])",
                         tfm_ops[op].name, (long long)x->dims[3],
                         (long long)f->dims[2],
                         tfm_shape_str(x, xs, sizeof xs),
                         tfm_shape_str(f, fs, sizeof fs));
    int64_t oh, ow;
    tfm_code rc = window_out(op, x, f->dims[0], f->dims[1],
                             a->ints[TFM_CONV_WIN_H],
                             a->ints[TFM_CONV_WIN_W], a, f, &oh, &ow);
    if (rc)
        return rc;
    int64_t c = x->dims[3] >= 0 ? x->dims[3] : f->dims[2];
    int64_t m = f->dims[3];
    int64_t dims[4] = {x->dims[0], oh, ow, c >= 0 && m >= 0 ? c * m : -1};
    *y = tfm_shape_make(4, dims);
    return TFM_OK;
}

/* The three depthwise ops share their checks: x, f and (backprops) dy,
 * all 4-D, float, one dtype; *y the forward output's shape. */
static tfm_code
depthwise_check(tfm_op op, const tfm_meta *x, const tfm_meta *f,
                const tfm_meta *dy, const tfm_attrs *a, tfm_shape *y)
{
    tfm_code rc;
    if ((rc = check_attrs(op, a)) || (rc = check_rank4(op, x, "input"))
        || (rc = check_rank4(op, f, "filter"))
        || (rc = check_float(op, x, "input"))
        || (rc = same_dtype(op, x, "input", f, "filter")))
        return rc;
    if (dy && ((rc = check_rank4(op, dy, "out_backprop"))
               || (rc = same_dtype(op, x, "input", dy, "out_backprop"))))
        return rc;
    if ((rc = depthwise_shape(op, &x->shape, &f->shape, a, y)))
        return rc;
    if (dy)
        return check_out_backprop(op, y, &dy->shape, "filter", &f->shape);
    return TFM_OK;
}

tfm_code
tfm_infer_depthwise_conv2d(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = depthwise_check(op, &in[0], &in[1], NULL, a,
                                  &out[0].shape);
    if (rc)
        return rc;
    *nout = 1;
    out[0].dtype = in[0].dtype;
    return tfm_check_size(tfm_ops[op].name, &out[0].shape, out[0].dtype);
}

/* A backprop's output has the shape of the operand it is the gradient
 * of (0: the input, 1: the filter) and that operand's dtype; its batch
 * and depth, where unknown, follow from the other operands. */
static tfm_code
depthwise_backprop(tfm_op op, const tfm_meta *in, const tfm_attrs *a,
                   int of, tfm_meta *out, int *nout)
{
    tfm_shape y;
    tfm_code rc = depthwise_check(op, &in[0], &in[1], &in[2], a, &y);
    if (rc)
        return rc;
    *nout = 1;
    out[0].dtype = in[of].dtype;
    out[0].shape = in[of].shape;
    int64_t *d = out[0].shape.dims;
    if (of == 0 && d[0] < 0)
        d[0] = in[2].shape.dims[0];
    if (of == 0 && d[3] < 0)
        d[3] = in[1].shape.dims[2];
    if (of == 1 && d[2] < 0)
        d[2] = in[0].shape.dims[3];
    return tfm_check_size(tfm_ops[op].name, &out[0].shape, out[0].dtype);
}

tfm_code
tfm_infer_depthwise_backprop_input(tfm_op op, const tfm_meta *in, int nin,
                                   const tfm_attrs *a, tfm_meta *out,
                                   int *nout)
{
    (void)nin;
    return depthwise_backprop(op, in, a, 0, out, nout);
}

tfm_code
tfm_infer_depthwise_backprop_filter(tfm_op op, const tfm_meta *in, int nin,
                                    const tfm_attrs *a, tfm_meta *out,
                                    int *nout)
{
    (void)nin;
    return depthwise_backprop(op, in, a, 1, out, nout);
}

/* _FusedConv2D(x, f[, bias[, residual]]): Conv2D's rule, then bias
 * [out_channels] of the same dtype, a residual of the output's shape and
 * dtype, and an activation code in i[1]. Only float32 and float64 (the
 * pass makes no other). */
tfm_code
tfm_infer_fused_conv2d(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    if (nin < 2 || nin > 4)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s takes 2 to 4 inputs "
                         "(input, filter[, bias[, residual]]), got %d",
                         tfm_ops[op].name, nin);
    tfm_code rc = tfm_infer_conv2d(op, in, 2, a, out, nout);
    if (rc)
        return rc;
    char bs[SHAPE_BUF];
    if (nin == 4) {
        char ys[SHAPE_BUF];
        const tfm_meta *r = &in[3];
        int same = r->shape.ndim == out[0].shape.ndim;
        for (int d = 0; same && d < r->shape.ndim; d++)
            same = dim_ok(r->shape.dims[d], out[0].shape.dims[d]);
        if (!same)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: residual must "
                             "have the output's shape %s, got %s",
                             tfm_ops[op].name,
                             tfm_shape_str(&out[0].shape, ys, sizeof ys),
                             tfm_shape_str(&r->shape, bs, sizeof bs));
        if ((rc = same_dtype(op, &in[0], "input", r, "residual")))
            return rc;
    }
    const tfm_meta *b = nin > 2 ? &in[2] : NULL;
    if (b && (b->shape.ndim != 1 ||
              !dim_ok(b->shape.dims[0], in[1].shape.dims[3])))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: bias must be "
                         "[out_channels] = [%lld], got shape %s",
                         tfm_ops[op].name, (long long)in[1].shape.dims[3],
                         tfm_shape_str(&b->shape, bs, sizeof bs));
    if (b && (rc = same_dtype(op, &in[0], "input", b, "bias")))
        return rc;
    if (in[0].dtype != TFM_FLOAT32 && in[0].dtype != TFM_FLOAT64)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: only float32 and "
                         "float64, got %s", tfm_ops[op].name,
                         tfm_dtype_name(in[0].dtype));
    if (a->i[1] < 0 || a->i[1] >= TFM_CONV_ACT_COUNT)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: activation code "
                         "%lld is not one of 0..%d", tfm_ops[op].name,
                         (long long)a->i[1], TFM_CONV_ACT_COUNT - 1);
    return TFM_OK;
}
