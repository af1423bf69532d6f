/* Exact algebraic simplification: rewrites that give the same bits.
 *
 *   x * 1, 1 * x, x / 1         -> x   (floats too: NaN stays NaN,
 *                                        signs and subnormals kept)
 *   x // 1, truncatediv(x, 1)   -> x   (integers)
 *   x + 0, 0 + x, x - 0         -> x   (integers; for floats only
 *                                        x + (-0.0) and x - (+0.0):
 *                                        -0.0 + +0.0 is +0.0)
 *   cast(x, x.dtype)            -> x   (not bool: that cast normalizes)
 *   identity(x)                 -> x
 *   transpose(x, identity perm) -> x
 *   transpose(transpose(x, p), q) -> transpose(x, p[q]), or x
 *   reshape(reshape(x, a), b)   -> reshape(x, b)
 *   reshape(x, x's own shape)   -> x
 *   x + tensor_scatter_add(zeros, [one index], u)
 *                               -> tensor_scatter_add(x, [one index], u)
 *                                  (Note [Sparse loop accumulators])
 *
 * "The constant is 1" means a Const node (on the CPU) whose every
 * element is exactly 1 in its dtype (0 and -0.0 likewise, bitwise).
 * A rule applies only when x's dtype and shape are the node's: the
 * constant may broadcast only along dims where it is 1 or equals a
 * known dim of x, so that it never changes the result's shape, even
 * for shapes unknown until run time. Rules that drop a node must not
 * drop an error either: reshape(reshape(x, a), b) merges only when the
 * inner reshape cannot fail for any x of its traced shape.
 *
 * Graph outputs stay distinct tensors (Note [Distinct outputs]). The
 * pipeline runs this pass twice: before folding (what the trace wrote)
 * and after CSE (constants that folding made). */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

enum value_kind { V_ONE, V_ZERO, V_POS_ZERO, V_NEG_ZERO };

/* Whether element bits b (of a dtype of size sz) are `kind`. Integers:
 * V_ONE is 1, every zero kind is 0. */
static int
element_is(tfm_dtype dt, const unsigned char *p, enum value_kind kind)
{
    uint64_t bits = 0;
    int64_t v = 0;
    switch (dt) {
    case TFM_INT8: v = *(const int8_t *)p; break;
    case TFM_UINT8: v = *(const uint8_t *)p; break;
    case TFM_INT16: { int16_t x; memcpy(&x, p, 2); v = x; break; }
    case TFM_INT32: { int32_t x; memcpy(&x, p, 4); v = x; break; }
    case TFM_INT64: case TFM_UINT64: memcpy(&v, p, 8); break;
    case TFM_UINT16: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
    case TFM_UINT32: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
    case TFM_FLOAT16: { uint16_t x; memcpy(&x, p, 2); bits = x; break; }
    case TFM_FLOAT32: { uint32_t x; memcpy(&x, p, 4); bits = x; break; }
    case TFM_FLOAT64: memcpy(&bits, p, 8); break;
    default: return 0;
    }
    if (!tfm_dtype_is_float(dt))
        return kind == V_ONE ? v == 1 : v == 0;
    static const uint64_t one[3] = {0x3c00u, 0x3f800000u,
                                    0x3ff0000000000000u};
    static const uint64_t sign[3] = {0x8000u, 0x80000000u,
                                     0x8000000000000000u};
    int w = dt == TFM_FLOAT16 ? 0 : dt == TFM_FLOAT32 ? 1 : 2;
    switch (kind) {
    case V_ONE: return bits == one[w];
    case V_ZERO: return (bits & ~sign[w]) == 0;
    case V_POS_ZERO: return bits == 0;
    case V_NEG_ZERO: return bits == sign[w];
    }
    return 0;
}

/* Whether ref r of g is a Const every element of which is `kind`. */
static int
const_is(const tfm_graph *g, tfm_ref r, enum value_kind kind)
{
    const tfm_node *n = tfm_graph_node(g, r.node);
    if (n->op != TFM_OP_CONST || !n->value || n->value->device != 0 ||
        tfm_tensor_is_symbolic(n->value))
        return 0;
    const tfm_tensor *t = n->value;
    if (t->dtype == TFM_BOOL)
        return 0;
    size_t sz = tfm_dtype_size(t->dtype);
    int64_t count = tfm_tensor_numel(t);
    const unsigned char *p = tfm_tensor_data(t);
    for (int64_t k = 0; k < count; k++)
        if (!element_is(t->dtype, p + (size_t)k * sz, kind))
            return 0;
    return 1;
}

static const tfm_meta *
meta_of(const tfm_graph *g, tfm_ref r)
{
    return &tfm_graph_node(g, r.node)->out[r.out];
}

static int
meta_equal(const tfm_meta *a, const tfm_meta *b)
{
    return a->dtype == b->dtype && tfm_shape_equal(&a->shape, &b->shape);
}

/* Whether broadcasting c against x leaves x's shape, whatever x's
 * unknown dims turn out to be. */
static int
broadcast_keeps(const tfm_shape *x, const tfm_shape *c)
{
    if (c->ndim > x->ndim)
        return 0;
    for (int d = 1; d <= c->ndim; d++) {
        int64_t cd = c->dims[c->ndim - d], xd = x->dims[x->ndim - d];
        if (cd != 1 && !(xd >= 0 && cd == xd))
            return 0;
    }
    return 1;
}

/* The value that, on `side` (0: left operand, 1: right), leaves the
 * other operand of op unchanged, or -1 where none is exact. */
static int
neutral(tfm_op op, tfm_dtype dt, int side)
{
    int is_float = tfm_dtype_is_float(dt);
    if (dt == TFM_BOOL)
        return -1;
    switch (op) {
    case TFM_OP_MUL:
        return V_ONE;
    case TFM_OP_ADD:
        return is_float ? V_NEG_ZERO : V_ZERO;
    case TFM_OP_SUB:
        return side == 1 ? (is_float ? V_POS_ZERO : V_ZERO) : -1;
    case TFM_OP_DIV:
        return side == 1 ? V_ONE : -1;
    case TFM_OP_FLOORDIV:
    case TFM_OP_TRUNCATEDIV:
        return side == 1 && !is_float ? V_ONE : -1;
    default:
        return -1;
    }
}

/* Binary op with a neutral constant: the other operand, or {-1, -1}. */
static tfm_ref
simplify_binary(const tfm_rw *rw, const tfm_node *n, const tfm_ref *in)
{
    const tfm_ref none = {-1, -1};
    for (int side = 1; side >= 0; side--) {
        tfm_ref c = in[side], x = in[1 - side];
        const tfm_meta *xm = meta_of(rw->dst, x);
        int kind = neutral(n->op, xm->dtype, side);
        if (kind < 0 || !meta_equal(xm, &n->out[0]) ||
            !broadcast_keeps(&xm->shape, &meta_of(rw->dst, c)->shape))
            continue;
        if (const_is(rw->dst, c, (enum value_kind)kind))
            return x;
    }
    return none;
}

static int
is_identity_perm(const int64_t *p, int n)
{
    for (int d = 0; d < n; d++)
        if (p[d] != d)
            return 0;
    return 1;
}

/* Whether reshape(x, s) is x itself for every x of shape xs: s names
 * every known dim of x and has its one -1 where x's one unknown dim is
 * (an empty x with an unknown dim is left alone: -1 is then
 * ambiguous). */
static int
reshape_is_noop(const tfm_shape *xs, const int64_t *s, int ns)
{
    int unknown = 0, zero = 0;
    if (ns != xs->ndim)
        return 0;
    for (int d = 0; d < ns; d++) {
        if (xs->dims[d] < 0) {
            unknown++;
            if (s[d] != -1)
                return 0;
        } else {
            zero |= xs->dims[d] == 0;
            if (s[d] != xs->dims[d])
                return 0;
        }
    }
    return unknown == 0 || (unknown == 1 && !zero);
}

/* Whether reshape(x, s) succeeds for every x of shape xs (traced: the
 * trace checked known shapes; with unknown dims, only an s with a -1
 * that every size of x divides into). */
static int
reshape_cannot_fail(const tfm_shape *xs, const int64_t *s, int ns)
{
    if (tfm_shape_is_known(xs))
        return 1;
    int64_t known = 1, prod = 1;
    int minus = 0;
    for (int d = 0; d < xs->ndim; d++)
        if (xs->dims[d] >= 0)
            known *= xs->dims[d];
    for (int d = 0; d < ns; d++) {
        if (s[d] == -1)
            minus++;
        else if (s[d] < 0)
            return 0;
        else
            prod *= s[d];
    }
    return minus == 1 && prod > 0 && known % prod == 0;
}

/* Note [Sparse loop accumulators]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The gradient of a loop body that reads row i of an outer tensor x
 * (x[i], tf.gather(x, i): every RNN step reading its input) is x-sized:
 * zeros with row i set (the GatherV2 rule in ops/grad_shape.c), and the
 * gradient loop adds it to its accumulator for x (acc + that). Done as
 * written, every iteration fills and adds all of x, O(n^2) over n
 * iterations. Rewritten as one scatter-add of the row into the
 * accumulator, it is a row's work, and the executor writes it over the
 * accumulator, which the loop hands to its body (Note [Writing over a
 * loop variable] in exec.c).
 *
 * Only for a scatter of one index (the indices' shape [1, K]) into a
 * Const or Fill of +0: x + (+0 + u) and x + u are then the same
 * number, but for the sign of a zero sum (-0 + -0). With several
 * indices, repeated ones would be summed in another order. */
static int
is_pos_zeros(const tfm_graph *g, tfm_ref r)
{
    const tfm_node *n = tfm_graph_node(g, r.node);
    if (n->op == TFM_OP_FILL && !n->nctrl)
        return const_is(g, n->in[0], V_POS_ZERO);
    return const_is(g, r, V_POS_ZERO);
}

/* x + scatter_add(zeros, idx, u) (either order) as scatter_add(x, idx,
 * u): 1 if rewritten, 0 if not, -1 on error. */
static int
sparse_accumulate(tfm_rw *rw, int k, const tfm_ref *in)
{
    const tfm_node *n = tfm_graph_node(rw->src, k);
    if (n->nin != 2 || !tfm_dtype_is_float(n->out[0].dtype))
        return 0;
    for (int side = 0; side < 2; side++) {
        const tfm_node *sc = tfm_graph_node(rw->dst, in[side].node);
        tfm_ref x = in[1 - side];
        if (sc->op != TFM_OP_TENSOR_SCATTER_ADD || sc->nctrl ||
            sc->nin != 3 || !meta_equal(meta_of(rw->dst, x), &n->out[0]) ||
            !meta_equal(&sc->out[0], &n->out[0]) ||
            !is_pos_zeros(rw->dst, sc->in[0]))
            continue;
        const tfm_shape *is = &meta_of(rw->dst, sc->in[1])->shape;
        if (is->ndim != 2 || is->dims[0] != 1)
            continue;
        tfm_node tmp = *sc;
        tmp.name = n->name;
        tmp.site = n->site;
        tfm_ref args[3] = {x, sc->in[1], sc->in[2]};
        int d = tfm_graph_copy_node(rw->dst, &tmp, args, NULL, 0);
        if (d < 0)
            return -1;
        tfm_rw_set(rw, k, d);
        return 1;
    }
    return 0;
}

/* Add n (a src node) to dst with inputs in[] and attributes a instead
 * of its own, keeping its name, line and outputs. */
static int
copy_with(tfm_rw *rw, int k, const tfm_ref *in, const tfm_attrs *a)
{
    tfm_node tmp = *tfm_graph_node(rw->src, k);
    tmp.attrs = a;
    int d = tfm_graph_copy_node(rw->dst, &tmp, in, NULL, 0);
    if (d >= 0)
        tfm_rw_set(rw, k, d);
    return d;
}

/* Simplify src node k, whose inputs in dst are in[]: 1 if it became an
 * existing ref or a new node, 0 if nothing applies, -1 on error. */
static int
simplify_node(tfm_rw *rw, int k, const tfm_ref *in)
{
    const tfm_node *n = tfm_graph_node(rw->src, k);
    const tfm_meta *out = &n->out[0];
    tfm_ref x = {-1, -1};
    if (n->nctrl || n->nout != 1)
        return 0;
    switch (n->op) {
    case TFM_OP_ADD:
    case TFM_OP_SUB:
    case TFM_OP_MUL:
    case TFM_OP_DIV:
    case TFM_OP_FLOORDIV:
    case TFM_OP_TRUNCATEDIV:
        if (n->nin == 2)
            x = simplify_binary(rw, n, in);
        if (x.node < 0 && n->op == TFM_OP_ADD) {
            int r = sparse_accumulate(rw, k, in);
            if (r)
                return r;
        }
        break;
    case TFM_OP_IDENTITY:
        x = in[0];
        break;
    case TFM_OP_CAST:
        if (meta_of(rw->dst, in[0])->dtype != TFM_BOOL &&
            n->attrs->dtype == meta_of(rw->dst, in[0])->dtype)
            x = in[0];
        break;
    case TFM_OP_TRANSPOSE: {
        const tfm_meta *im = meta_of(rw->dst, in[0]);
        int r = n->attrs->n_ints;
        if (r != im->shape.ndim)
            break;
        if (is_identity_perm(n->attrs->ints, r)) {
            x = in[0];
            break;
        }
        const tfm_node *inner = tfm_graph_node(rw->dst, in[0].node);
        if (inner->op != TFM_OP_TRANSPOSE || inner->nctrl ||
            inner->attrs->n_ints != r)
            break;
        /* y = transpose(x, p): y.dims[i] = x.dims[p[i]]; z = transpose(y,
         * q): z.dims[i] = y.dims[q[i]] = x.dims[p[q[i]]]. */
        tfm_attrs a = *n->attrs;
        for (int d = 0; d < r; d++) {
            int64_t q = n->attrs->ints[d];
            if (q < 0 || q >= r)
                return 0;
            a.ints[d] = inner->attrs->ints[q];
        }
        if (is_identity_perm(a.ints, r)) {
            x = inner->in[0];
            break;
        }
        return copy_with(rw, k, &inner->in[0], &a) < 0 ? -1 : 1;
    }
    case TFM_OP_RESHAPE: {
        const tfm_meta *im = meta_of(rw->dst, in[0]);
        const tfm_node *inner = tfm_graph_node(rw->dst, in[0].node);
        tfm_ref src = in[0];
        if (inner->op == TFM_OP_RESHAPE && !inner->nctrl &&
            reshape_cannot_fail(&meta_of(rw->dst, inner->in[0])->shape,
                                inner->attrs->ints, inner->attrs->n_ints)) {
            src = inner->in[0];
            im = meta_of(rw->dst, src);
        }
        if (reshape_is_noop(&im->shape, n->attrs->ints, n->attrs->n_ints)) {
            x = src;
            break;
        }
        if (src.node != in[0].node || src.out != in[0].out)
            return copy_with(rw, k, &src, n->attrs) < 0 ? -1 : 1;
        break;
    }
    default:
        break;
    }
    if (x.node < 0 || !meta_equal(meta_of(rw->dst, x), out))
        return 0;
    tfm_rw_alias(rw, k, 0, x);
    return 1;
}

/* simplify_node for a node whose inputs all reached dst; 0 (a copy)
 * for one whose input was dropped. */
static int
simplify_step(tfm_rw *rw, int k, void *arg)
{
    (void)arg;
    const tfm_node *nd = tfm_graph_node(rw->src, k);
    tfm_ref in[TFM_MAX_INPUTS];
    for (int i = 0; i < nd->nin; i++) {
        in[i] = tfm_rw_ref(rw, nd->in[i]);
        if (in[i].node < 0)
            return 0;
    }
    return simplify_node(rw, k, in);
}

tfm_graph *
tfm_pass_simplify(tfm_graph *g)
{
    return tfm_rw_each_node(g, simplify_step, NULL);
}
