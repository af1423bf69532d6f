/* Gradients of the reduce family (ops_reduce.def). A reduction's output
 * gradient is first given back its reduced dims (as size 1, the
 * keepdims shape), then broadcast against the input. */
#include <stdbool.h>

#include "grad_util.h"
#include "grads.h"
#include "reduce.h"

/* g with the reduced dims of x restored as size 1. */
static tfm_tensor *
kept(tfm_grad_scope *s, tfm_tensor *g, const tfm_tensor *x)
{
    const tfm_grad_ctx *c = s->c;
    tfm_shape k;
    if (!g)
        return NULL;
    if (c->attrs->i[0])             /* keepdims: already there */
        return g;
    if (tfm_reduce_kept_shape(c->op, &x->shape, c->attrs, &k))
        return NULL;
    return tfm_gs_reshape(s, g, &k);
}

/* The dims of x the op reduces. */
static int
reduced_axes(const tfm_grad_ctx *c, const tfm_tensor *x, int *axes)
{
    bool red[TFM_MAX_DIMS];
    int n = 0;
    if (tfm_reduce_axes(c->op, &x->shape, c->attrs, red))
        return -1;
    for (int d = 0; d < x->shape.ndim; d++)
        if (red[d])
            axes[n++] = d;
    return n;
}

/* t (broadcastable to x) as a tensor of x's shape. */
static tfm_tensor *
broadcast_like(tfm_grad_scope *s, tfm_tensor *t, tfm_tensor *x)
{
    if (!t)
        return NULL;
    if (tfm_shape_is_known(&x->shape)) {
        tfm_attrs a;
        tfm_attrs_init(&a);
        a.n_ints = x->shape.ndim;
        for (int d = 0; d < x->shape.ndim; d++)
            a.ints[d] = x->shape.dims[d];
        return tfm_gs_op1(s, TFM_OP_BROADCAST_TO, t, &a);
    }
    /* Unknown dims (tracing): let a broadcasting add find them. */
    return tfm_gs_op2(s, TFM_OP_ADD, tfm_gs_zeros_like(s, x), t, NULL);
}

static tfm_code
done(tfm_grad_scope *s, tfm_tensor **gin, tfm_tensor *d)
{
    gin[0] = tfm_gs_out(s, d);
    tfm_gs_end(s);
    return tfm_grad_finish(gin, 1, 1);
}

TFM_GRAD(tfm_grad_rule_sum)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    return done(&s, gin, broadcast_like(&s, kept(&s, g[0], c->in[0]),
                                        c->in[0]));
}

/* The number of elements each output element averages: a constant when
 * the reduced dims are known, else Size(x) / Size(y) at run time. */
static tfm_tensor *
count(tfm_grad_scope *s, tfm_tensor *x, tfm_tensor *y)
{
    int axes[TFM_MAX_DIMS];
    int n = reduced_axes(s->c, x, axes);
    double k = 1;
    int known = n >= 0;
    for (int i = 0; known && i < n; i++) {
        known = x->shape.dims[axes[i]] >= 0;
        k *= (double)x->shape.dims[axes[i]];
    }
    if (n < 0)
        return NULL;
    if (known)
        return tfm_gs_scalar(s, x, k);
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.dtype = TFM_INT64;
    tfm_tensor *nx = tfm_gs_cast(s, tfm_gs_op1(s, TFM_OP_SIZE, x, &a),
                                 x->dtype);
    tfm_tensor *ny = tfm_gs_cast(s, tfm_gs_op1(s, TFM_OP_SIZE, y, &a),
                                 x->dtype);
    return tfm_gs_op2(s, TFM_OP_DIV, nx, ny, NULL);
}

TFM_GRAD(tfm_grad_rule_mean)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0];
    tfm_tensor *gs = tfm_gs_op2(&s, TFM_OP_DIV, g[0],
                                count(&s, x, c->out[0]), NULL);
    return done(&s, gin, broadcast_like(&s, kept(&s, gs, x), x));
}

/* Max/Min: the gradient is shared equally by the elements that attain
 * the extreme (as TF). */
TFM_GRAD(tfm_grad_rule_max)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0];
    int axes[TFM_MAX_DIMS];
    int n = reduced_axes(c, x, axes);
    tfm_tensor *yk = n < 0 ? NULL : kept(&s, c->out[0], x);
    tfm_tensor *ind = tfm_gs_cast(&s, tfm_gs_op2(&s, TFM_OP_EQUAL, x, yk,
                                                 NULL), x->dtype);
    tfm_tensor *num = tfm_gs_sum(&s, ind, axes, n, 1);
    tfm_tensor *share = tfm_gs_op2(&s, TFM_OP_DIV, ind, num, NULL);
    return done(&s, gin, tfm_gs_op2(&s, TFM_OP_MUL, share,
                                    kept(&s, g[0], x), NULL));
}

TFM_GRAD(tfm_grad_rule_min)
{
    return tfm_grad_rule_max(c, g, gin);
}

/* d logsumexp = exp(x - y) */
TFM_GRAD(tfm_grad_rule_reduce_logsumexp)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0];
    tfm_tensor *p = tfm_gs_op1(&s, TFM_OP_EXP,
                               tfm_gs_op2(&s, TFM_OP_SUB, x,
                                          kept(&s, c->out[0], x), NULL),
                               NULL);
    return done(&s, gin, tfm_gs_op2(&s, TFM_OP_MUL, p, kept(&s, g[0], x),
                                    NULL));
}

static tfm_tensor *
cumprod(tfm_grad_scope *s, tfm_tensor *t, int axis, int exclusive,
        int reverse)
{
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.i[0] = axis;
    a.i[1] = exclusive;
    a.i[2] = reverse;
    return tfm_gs_op1(s, TFM_OP_CUMPROD, t, &a);
}

/* Prod: each element's gradient is the product of the others, computed
 * with exclusive cumulative products from both sides (no division, so
 * zeros are exact). Several axes are first brought to the front and
 * flattened into one. */
TFM_GRAD(tfm_grad_rule_prod)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0], *others;
    int axes[TFM_MAX_DIMS];
    int n = reduced_axes(c, x, axes), r = x->shape.ndim;
    if (n < 0) {
        tfm_gs_end(&s);
        return tfm_error_code();
    }
    if (n == 1) {
        others = tfm_gs_op2(&s, TFM_OP_MUL, cumprod(&s, x, axes[0], 1, 0),
                            cumprod(&s, x, axes[0], 1, 1), NULL);
    } else {
        /* perm: reduced dims first; xt: [R, O]. */
        tfm_attrs tp, back;
        tfm_attrs_init(&tp);
        tfm_attrs_init(&back);
        int64_t rsize = 1, osize = 1;
        int red[TFM_MAX_DIMS] = {0};
        for (int i = 0; i < n; i++)
            red[axes[i]] = 1;
        tfm_shape tshape = {.ndim = r};
        tp.n_ints = back.n_ints = r;
        for (int d = 0, k = 0; d < r; d++)
            if (red[d])
                tp.ints[k++] = d;
        for (int d = 0, k = n; d < r; d++)
            if (!red[d])
                tp.ints[k++] = d;
        for (int k = 0; k < r; k++) {
            int64_t dim = x->shape.dims[tp.ints[k]];
            back.ints[tp.ints[k]] = k;
            tshape.dims[k] = dim;
            if (k < n)
                rsize = dim < 0 || rsize < 0 ? -1 : rsize * dim;
            else
                osize = dim < 0 || osize < 0 ? -1 : osize * dim;
        }
        tfm_shape flat = {.ndim = 2, .dims = {rsize, osize}};
        tfm_tensor *xt = tfm_gs_reshape(&s, tfm_gs_op1(&s, TFM_OP_TRANSPOSE,
                                                       x, &tp), &flat);
        tfm_tensor *o = tfm_gs_op2(&s, TFM_OP_MUL, cumprod(&s, xt, 0, 1, 0),
                                   cumprod(&s, xt, 0, 1, 1), NULL);
        others = tfm_gs_op1(&s, TFM_OP_TRANSPOSE,
                            tfm_gs_reshape(&s, o, &tshape), &back);
    }
    return done(&s, gin, tfm_gs_op2(&s, TFM_OP_MUL, others,
                                    kept(&s, g[0], x), NULL));
}

/* Cumsum: the adjoint is the cumsum the other way. */
TFM_GRAD(tfm_grad_rule_cumsum)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_attrs a = *c->attrs;
    a.i[2] = !a.i[2];
    return done(&s, gin, tfm_gs_op1(&s, TFM_OP_CUMSUM, g[0], &a));
}

/* Cumprod (as TF): cumsum(y * g) the other way, divided by x (0 where x
 * is 0). */
TFM_GRAD(tfm_grad_rule_cumprod)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_attrs a = *c->attrs;
    a.i[2] = !a.i[2];
    tfm_tensor *t = tfm_gs_op1(&s, TFM_OP_CUMSUM,
                               tfm_gs_op2(&s, TFM_OP_MUL, c->out[0], g[0],
                                          NULL), &a);
    return done(&s, gin, tfm_gs_op2(&s, TFM_OP_DIV_NO_NAN, t, c->in[0],
                                    NULL));
}

/* g (shaped like idx) scattered into zeros shaped like x, where along
 * `axis` element j of g goes to position idx[..., j, ...] and the other
 * dims keep their coordinate: the adjoint of taking x's elements along
 * an axis (Sort, TopKV2). */
static tfm_tensor *
scatter_along(tfm_grad_scope *s, tfm_tensor *x, tfm_tensor *idx, int axis,
              tfm_tensor *g)
{
    int r = idx->shape.ndim;
    tfm_tensor *coords[TFM_MAX_DIMS];
    if (!tfm_shape_is_known(&idx->shape)) {
        char sb[128];
        tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: gradient needs a known "
                  "shape, got %s", tfm_ops[s->c->op].name,
                  tfm_shape_str(&idx->shape, sb, sizeof sb));
        return NULL;
    }
    for (int d = 0; d < r; d++) {
        if (d == axis) {
            coords[d] = idx;
            continue;
        }
        /* range(n_d), shaped [1..n_d..1], broadcast to idx's shape */
        tfm_attrs ra, rs, bt;
        tfm_attrs_init(&ra);
        ra.dtype = idx->dtype;
        ra.i[1] = idx->shape.dims[d];
        ra.i[2] = 1;
        tfm_attrs_init(&rs);
        tfm_attrs_init(&bt);
        rs.n_ints = bt.n_ints = r;
        for (int k = 0; k < r; k++) {
            rs.ints[k] = k == d ? idx->shape.dims[d] : 1;
            bt.ints[k] = idx->shape.dims[k];
        }
        tfm_tensor *rg = tfm_gs_op0(s, TFM_OP_RANGE, &ra);
        coords[d] = tfm_gs_op1(s, TFM_OP_BROADCAST_TO,
                               tfm_gs_op1(s, TFM_OP_RESHAPE, rg, &rs), &bt);
    }
    tfm_tensor *nd = NULL;
    tfm_tensor *out[TFM_MAX_OUTPUTS];
    int nout = 0, ok = 1;
    for (int d = 0; d < r; d++)
        ok &= coords[d] != NULL;
    if (ok) {
        tfm_attrs pa;
        tfm_attrs_init(&pa);
        pa.i[0] = r;               /* coordinates on a new last axis */
        if (!s->c->call(TFM_OP_PACK, coords, r, &pa, out, &nout))
            nd = tfm_gs_keep(s, out[0]);
    }
    return tfm_gs_op3(s, TFM_OP_TENSOR_SCATTER_ADD,
                      tfm_gs_zeros_of(s, x), nd, g, NULL);
}

TFM_GRAD(tfm_grad_rule_sort)
{
    if (!g[0])
        return TFM_OK;              /* only the indices were used */
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0];
    int axis;
    if (tfm_shape_axis(tfm_ops[c->op].name, c->attrs->i[0], x->shape.ndim,
                       &axis)) {
        tfm_gs_end(&s);
        return tfm_error_code();
    }
    return done(&s, gin, scatter_along(&s, x, c->out[1], axis, g[0]));
}

TFM_GRAD(tfm_grad_rule_topk)
{
    if (!g[0])
        return TFM_OK;
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0];
    return done(&s, gin, scatter_along(&s, x, c->out[1], x->shape.ndim - 1,
                                       g[0]));
}
