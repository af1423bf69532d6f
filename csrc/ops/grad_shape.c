/* Gradients of the shape family (ops_shape.def). Ops that only move data
 * have an adjoint that moves it back (reshape back, transpose by the
 * inverse, split what was concatenated, pad what was sliced). Ops that
 * pick elements in ways that are awkward to invert (strided slices,
 * gathers, tiles, mirror pads) share one rule, see Note [Positions]. */
#include "grad_util.h"
#include "grads.h"
#include "shape.h"

static tfm_code
done(tfm_grad_scope *s, tfm_tensor **gin, int nin, unsigned need)
{
    tfm_gs_end(s);
    return tfm_grad_finish(gin, nin, need);
}

static tfm_code
unknown_shape(const tfm_grad_ctx *c, const tfm_tensor *x)
{
    char sb[128];
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: the gradient needs the "
                     "input's shape, which is not fully known: %s",
                     tfm_ops[c->op].name,
                     tfm_shape_str(&x->shape, sb, sizeof sb));
}

/* Note [Positions]: for an op whose every output element is a copy of
 * some element of input 0, run the op again (same attrs, same other
 * inputs) on the positions 0..n-1 of that input laid out in its shape:
 * the result says, for each output element, where it came from, and the
 * gradient is g scatter-added to those positions. One rule for
 * GatherV2, GatherNd, Tile and MirrorPad; repeated
 * positions (tiles, repeated gather indices) add up, as they must. */
static tfm_tensor *
scatter_to_positions(tfm_grad_scope *s, tfm_tensor *g)
{
    const tfm_grad_ctx *c = s->c;
    tfm_tensor *x = c->in[0];
    int64_t n = tfm_tensor_numel(x);
    if (!g)
        return NULL;
    if (n < 0) {
        unknown_shape(c, x);
        return NULL;
    }
    tfm_attrs ra;
    tfm_attrs_init(&ra);
    ra.dtype = n <= INT32_MAX ? TFM_INT32 : TFM_INT64;
    ra.i[1] = n;
    ra.i[2] = 1;
    tfm_tensor *pos = tfm_gs_reshape(s, tfm_gs_op0(s, TFM_OP_RANGE, &ra),
                                     &x->shape);
    tfm_tensor *in[TFM_MAX_INPUTS], *out[TFM_MAX_OUTPUTS];
    tfm_tensor *picked = NULL;
    int nout = 0;
    if (pos) {
        in[0] = pos;
        for (int k = 1; k < c->nin; k++)
            in[k] = c->in[k];
        if (!c->call(c->op, in, c->nin, c->attrs, out, &nout))
            picked = tfm_gs_keep(s, out[0]);
    }
    tfm_shape col = {.ndim = 2, .dims = {-1, 1}}, row = {.ndim = 1,
                                                        .dims = {-1}};
    tfm_shape flat = {.ndim = 1, .dims = {n}};
    tfm_tensor *zeros = tfm_gs_reshape(s, tfm_gs_zeros_of(s, x), &flat);
    tfm_tensor *sum = tfm_gs_op3(s, TFM_OP_TENSOR_SCATTER_ADD, zeros,
                                 tfm_gs_reshape(s, picked, &col),
                                 tfm_gs_reshape(s, g, &row), NULL);
    return tfm_gs_reshape(s, sum, &x->shape);
}

static tfm_code
positions_rule(const tfm_grad_ctx *c, tfm_tensor *const *g,
               tfm_tensor **gin)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    gin[0] = tfm_gs_out(&s, scatter_to_positions(&s, g[0]));
    return done(&s, gin, c->nin, 1);
}

/* GatherV2 on axis 0 without batch dims (x[i], embedding lookups, a
 * loop reading step i): g scatter-added at the indices' rows. The same
 * sum as Note [Positions], without the position map over all of x, and
 * in the form that a loop's gradient accumulator takes in place (Note
 * [Sparse loop accumulators] in graph/pass_simplify.c). */
TFM_GRAD(tfm_grad_rule_gather)
{
    const tfm_shape *xs = &c->in[0]->shape;
    int rows_ok = c->attrs->i[0] == 0 && c->attrs->i[1] == 0 &&
                  xs->ndim >= 1 && g[0];
    for (int d = 1; rows_ok && d < xs->ndim; d++)
        rows_ok = xs->dims[d] >= 0;
    if (!rows_ok)
        return positions_rule(c, g, gin);
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_shape col = {.ndim = 2, .dims = {-1, 1}}, upd = *xs;
    upd.dims[0] = -1;
    gin[0] = tfm_gs_out(&s, tfm_gs_op3(
        &s, TFM_OP_TENSOR_SCATTER_ADD, tfm_gs_zeros_of(&s, c->in[0]),
        tfm_gs_reshape(&s, c->in[1], &col), tfm_gs_reshape(&s, g[0], &upd),
        NULL));
    return done(&s, gin, c->nin, 1);
}

TFM_GRAD(tfm_grad_rule_gather_nd) { return positions_rule(c, g, gin); }
TFM_GRAD(tfm_grad_rule_tile) { return positions_rule(c, g, gin); }
TFM_GRAD(tfm_grad_rule_mirror_pad) { return positions_rule(c, g, gin); }

/* StridedSlice: StridedSliceGrad puts g back (attrs: x's shape, then
 * the slice's). */
TFM_GRAD(tfm_grad_rule_strided_slice)
{
    const tfm_tensor *x = c->in[0];
    int r = x->shape.ndim;
    if (c->attrs->n_ints + r > TFM_MAX_ATTR_INTS)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "StridedSlice: gradient of "
                         "a slice spec of %d entries", c->attrs->n_ints / 3);
    tfm_attrs a = *c->attrs;
    a.n_ints = r + c->attrs->n_ints;
    for (int d = 0; d < r; d++)
        a.ints[d] = x->shape.dims[d];
    for (int k = 0; k < c->attrs->n_ints; k++)
        a.ints[r + k] = c->attrs->ints[k];
    a.i[5] = r;
    gin[0] = tfm_grad_op1(c->call, TFM_OP_STRIDED_SLICE_GRAD, g[0], &a);
    return tfm_grad_finish(gin, 1, 1);
}

/* StridedSliceGrad is linear in dy, and the slice is its adjoint. */
TFM_GRAD(tfm_grad_rule_strided_slice_grad)
{
    tfm_shape shape;
    tfm_attrs a;
    if (tfm_strided_slice_grad_attrs(c->attrs, &shape, &a))
        return tfm_error_code();
    gin[0] = tfm_grad_op1(c->call, TFM_OP_STRIDED_SLICE, g[0], &a);
    return tfm_grad_finish(gin, 1, 1);
}

/* Reshape, ExpandDims, Squeeze: the same elements in x's shape. */
static tfm_code
reshape_back(const tfm_grad_ctx *c, tfm_tensor *const *g, tfm_tensor **gin)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    gin[0] = tfm_gs_out(&s, tfm_gs_reshape(&s, g[0], &c->in[0]->shape));
    return done(&s, gin, 1, 1);
}

TFM_GRAD(tfm_grad_rule_reshape) { return reshape_back(c, g, gin); }
TFM_GRAD(tfm_grad_rule_squeeze) { return reshape_back(c, g, gin); }

/* ExpandDims: squeezing the new axis works for unknown dims too. */
TFM_GRAD(tfm_grad_rule_expand_dims)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    int rank = c->out[0]->shape.ndim;
    int64_t axis = c->attrs->i[0];
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.n_ints = 1;
    a.ints[0] = axis < 0 ? axis + rank : axis;
    gin[0] = tfm_gs_out(&s, tfm_gs_op1(&s, TFM_OP_SQUEEZE, g[0], &a));
    return done(&s, gin, 1, 1);
}

TFM_GRAD(tfm_grad_rule_identity)
{
    gin[0] = tfm_grad_ref(g[0]);
    return tfm_grad_finish(gin, 1, 1);
}

TFM_GRAD(tfm_grad_rule_transpose)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.n_ints = c->attrs->n_ints;
    for (int k = 0; k < a.n_ints; k++)
        a.ints[c->attrs->ints[k]] = k;
    gin[0] = tfm_gs_out(&s, tfm_gs_op1(&s, TFM_OP_TRANSPOSE, g[0], &a));
    return done(&s, gin, 1, 1);
}

TFM_GRAD(tfm_grad_rule_reverse)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    gin[0] = tfm_gs_out(&s, tfm_gs_op1(&s, TFM_OP_REVERSE, g[0], c->attrs));
    return done(&s, gin, 1, 1);
}

TFM_GRAD(tfm_grad_rule_broadcast_to)
{
    gin[0] = tfm_grad_unbroadcast(c->call, tfm_grad_ref(g[0]), c->in[0]);
    return tfm_grad_finish(gin, 1, 1);
}

/* ConcatV2: split g back into the inputs' sizes along the axis. */
TFM_GRAD(tfm_grad_rule_concat)
{
    int rank = c->in[0]->shape.ndim, axis;
    if (tfm_shape_axis(tfm_ops[c->op].name, c->attrs->i[0], rank, &axis))
        return tfm_error_code();
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.i[0] = axis;
    a.n_ints = c->nin;
    int unknown = 0;
    for (int k = 0; k < c->nin; k++) {
        a.ints[k] = c->in[k]->shape.dims[axis];
        unknown += a.ints[k] < 0;
    }
    if (unknown > 1)
        return unknown_shape(c, c->in[0]);
    int n = 0;
    tfm_code rc = c->call(TFM_OP_SPLIT_V, g, 1, &a, gin, &n);
    if (!rc && n != c->nin) {
        for (int k = 0; k < n; k++)
            tfm_tensor_decref(gin[k]);
        return tfm_error(TFM_ERR_INTERNAL, "ConcatV2 gradient: SplitV gave "
                         "%d parts for %d inputs", n, c->nin);
    }
    return rc;
}

/* Pack (tf.stack): unpack g along the axis. */
TFM_GRAD(tfm_grad_rule_pack)
{
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.i[0] = c->attrs->i[0];
    a.i[1] = c->nin;
    int n = 0;
    return c->call(TFM_OP_UNPACK, g, 1, &a, gin, &n);
}

/* The output gradients, with zeros for outputs that have none. */
static int
grads_or_zeros(tfm_grad_scope *s, tfm_tensor *const *g, tfm_tensor **all)
{
    const tfm_grad_ctx *c = s->c;
    for (int k = 0; k < c->nout; k++) {
        all[k] = g[k] ? g[k] : tfm_gs_zeros_of(s, c->out[k]);
        if (!all[k])
            return -1;
    }
    return 0;
}

/* The output gradients joined back along the op's axis (i[0]) by
 * `join`, which undoes the op. */
static tfm_code
join_grads(const tfm_grad_ctx *c, tfm_tensor *const *g, tfm_tensor **gin,
           tfm_op join)
{
    tfm_grad_scope s;
    tfm_tensor *all[TFM_MAX_OUTPUTS];
    tfm_gs_begin(&s, c);
    if (!grads_or_zeros(&s, g, all)) {
        tfm_attrs a;
        tfm_attrs_init(&a);
        a.i[0] = c->attrs->i[0];
        int n = 0;
        c->call(join, all, c->nout, &a, gin, &n);
    }
    return done(&s, gin, 1, 1);
}

/* Unpack: stack the output gradients back. */
TFM_GRAD(tfm_grad_rule_unpack) { return join_grads(c, g, gin, TFM_OP_PACK); }

/* Split, SplitV: concatenate the output gradients. */
TFM_GRAD(tfm_grad_rule_split) { return join_grads(c, g, gin, TFM_OP_CONCAT); }

TFM_GRAD(tfm_grad_rule_split_v) { return tfm_grad_rule_split(c, g, gin); }

/* PadV2: the gradient is the unpadded middle of g. */
TFM_GRAD(tfm_grad_rule_pad)
{
    const tfm_tensor *x = c->in[0];
    if (!tfm_shape_is_known(&x->shape))
        return unknown_shape(c, x);
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    int r = x->shape.ndim;
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.n_ints = 2 * r;
    for (int d = 0; d < r; d++) {
        a.ints[d] = c->attrs->ints[2 * d];
        a.ints[r + d] = x->shape.dims[d];
    }
    gin[0] = tfm_gs_out(&s, tfm_gs_op1(&s, TFM_OP_SLICE, g[0], &a));
    return done(&s, gin, 1, 1);
}

/* Slice: g padded with zeros back to x's shape. */
TFM_GRAD(tfm_grad_rule_slice)
{
    const tfm_tensor *x = c->in[0];
    if (!tfm_shape_is_known(&x->shape))
        return unknown_shape(c, x);
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    int r = x->shape.ndim;
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.n_ints = 2 * r;
    for (int d = 0; d < r; d++) {
        int64_t begin = c->attrs->ints[d], size = c->attrs->ints[r + d];
        if (size < 0)
            size = x->shape.dims[d] - begin;
        a.ints[2 * d] = begin;
        a.ints[2 * d + 1] = x->shape.dims[d] - begin - size;
    }
    gin[0] = tfm_gs_out(&s, tfm_gs_op1(&s, TFM_OP_PAD, g[0], &a));
    return done(&s, gin, 1, 1);
}

/* TensorScatterUpdate(t, idx, u): t's gradient loses the overwritten
 * positions; u's is g at them. */
TFM_GRAD(tfm_grad_rule_tensor_scatter_update)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *idx = c->in[1];
    gin[0] = tfm_gs_out(&s, tfm_gs_op3(&s, TFM_OP_TENSOR_SCATTER_UPDATE,
                                       g[0], idx,
                                       tfm_gs_zeros_of(&s, c->in[2]),
                                       NULL));
    gin[2] = tfm_gs_out(&s, tfm_gs_op2(&s, TFM_OP_GATHER_ND, g[0], idx,
                                       NULL));
    return done(&s, gin, 3, 5);
}

TFM_GRAD(tfm_grad_rule_tensor_scatter_add)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    gin[0] = tfm_grad_ref(g[0]);
    gin[2] = tfm_gs_out(&s, tfm_gs_op2(&s, TFM_OP_GATHER_ND, g[0], c->in[1],
                                       NULL));
    return done(&s, gin, 3, 5);
}

/* TensorScatterMin/Max(x, idx, u): g goes to the inputs equal to the
 * result, shared equally among ties (as TF). Every position has at
 * least one such input, so the count never is zero. */
TFM_GRAD(tfm_grad_rule_tensor_scatter_minmax)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0], *idx = c->in[1], *u = c->in[2];
    tfm_tensor *y = c->out[0];
    tfm_tensor *xwin = tfm_gs_cast(&s, tfm_gs_op2(&s, TFM_OP_EQUAL, x, y,
                                                  NULL), x->dtype);
    tfm_tensor *uwin = tfm_gs_cast(
        &s, tfm_gs_op2(&s, TFM_OP_EQUAL, u,
                       tfm_gs_op2(&s, TFM_OP_GATHER_ND, y, idx, NULL),
                       NULL), x->dtype);
    tfm_tensor *ties = tfm_gs_op3(&s, TFM_OP_TENSOR_SCATTER_ADD, xwin, idx,
                                  uwin, NULL);
    tfm_tensor *share = tfm_gs_op2(&s, TFM_OP_DIV, g[0], ties, NULL);
    gin[0] = tfm_gs_out(&s, tfm_gs_op2(&s, TFM_OP_MUL, share, xwin, NULL));
    gin[2] = tfm_gs_out(&s, tfm_gs_op2(
        &s, TFM_OP_MUL, tfm_gs_op2(&s, TFM_OP_GATHER_ND, share, idx, NULL),
        uwin, NULL));
    return done(&s, gin, 3, 5);
}

/* SelectV2(cond, x, y): g goes to x where cond holds, to y elsewhere. */
TFM_GRAD(tfm_grad_rule_select)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *cond = c->in[0], *zeros = tfm_gs_zeros_like(&s, g[0]);
    tfm_tensor *gx = tfm_gs_op3(&s, TFM_OP_SELECT, cond, g[0], zeros, NULL);
    tfm_tensor *gy = tfm_gs_op3(&s, TFM_OP_SELECT, cond, zeros, g[0], NULL);
    gin[1] = tfm_gs_unbroadcast(&s, gx, c->in[1]);
    gin[2] = tfm_gs_unbroadcast(&s, gy, c->in[2]);
    return done(&s, gin, 3, 6);
}

/* Fill(value): every element is the value, so its gradient is the sum. */
TFM_GRAD(tfm_grad_rule_fill)
{
    tfm_attrs a;
    tfm_attrs_init(&a);
    int axes[TFM_MAX_DIMS];
    for (int d = 0; d < g[0]->shape.ndim; d++)
        axes[d] = d;
    gin[0] = tfm_grad_sum(c->call, g[0], axes, g[0]->shape.ndim, 0);
    return tfm_grad_finish(gin, 1, 1);
}
