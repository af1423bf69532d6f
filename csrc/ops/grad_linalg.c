/* Gradients of the linalg family (ops_linalg.def). */
#include "grad_util.h"
#include "grads.h"

static tfm_tensor *
matmul(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b, int adj_a,
       int adj_b)
{
    tfm_attrs at;
    tfm_attrs_init(&at);
    at.i[0] = adj_a;
    at.i[1] = adj_b;
    return tfm_gs_op2(s, TFM_OP_MATMUL, a, b, &at);
}

/* BatchMatMulV2: z = op(x) @ op(y), op = transpose where adj is set.
 * The four cases of (adj_x, adj_y) as in TF; broadcast batch dims are
 * summed back by unbroadcast. An input whose gradient the tape will not
 * use is skipped (a whole matmul: data fed to a first layer). */
TFM_GRAD(tfm_grad_rule_matmul)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *x = c->in[0], *y = c->in[1], *gz = g[0];
    tfm_tensor *gx = NULL, *gy = NULL;
    int ax = c->attrs->i[0] != 0, ay = c->attrs->i[1] != 0;
    int wx = tfm_grad_wants(c, 0), wy = tfm_grad_wants(c, 1);
    if (!ax && !ay) {
        gx = wx ? matmul(&s, gz, y, 0, 1) : NULL;
        gy = wy ? matmul(&s, x, gz, 1, 0) : NULL;
    } else if (!ax && ay) {
        gx = wx ? matmul(&s, gz, y, 0, 0) : NULL;
        gy = wy ? matmul(&s, gz, x, 1, 0) : NULL;
    } else if (ax && !ay) {
        gx = wx ? matmul(&s, y, gz, 0, 1) : NULL;
        gy = wy ? matmul(&s, x, gz, 0, 0) : NULL;
    } else {
        gx = wx ? matmul(&s, y, gz, 1, 1) : NULL;
        gy = wy ? matmul(&s, gz, x, 1, 1) : NULL;
    }
    gin[0] = gx ? tfm_gs_unbroadcast(&s, gx, x) : NULL;
    gin[1] = gy ? tfm_gs_unbroadcast(&s, gy, y) : NULL;
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 2, (unsigned)(wx | wy << 1));
}

static tfm_tensor *
solve(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b, int adjoint)
{
    tfm_attrs at;
    tfm_attrs_init(&at);
    at.i[0] = adjoint;
    return tfm_gs_op2(s, TFM_OP_MATRIX_SOLVE, a, b, &at);
}

static tfm_tensor *
inverse(tfm_grad_scope *s, tfm_tensor *a, int adjoint)
{
    tfm_attrs at;
    tfm_attrs_init(&at);
    at.i[0] = adjoint;
    return tfm_gs_op1(s, TFM_OP_MATRIX_INVERSE, a, &at);
}

/* t[...] -> t[..., 1, 1], to scale whole matrices. */
static tfm_tensor *
per_matrix(tfm_grad_scope *s, tfm_tensor *t)
{
    tfm_attrs at;
    tfm_attrs_init(&at);
    at.i[0] = -1;
    t = tfm_gs_op1(s, TFM_OP_EXPAND_DIMS, t, &at);
    return tfm_gs_op1(s, TFM_OP_EXPAND_DIMS, t, &at);
}

/* The matrix gradient of a solve x = op(a)^-1 b, given gb = op(a)^-T g:
 * -gb x^T, or -x gb^T when op is the transpose. */
static tfm_tensor *
solve_matrix_grad(tfm_grad_scope *s, tfm_tensor *gb, tfm_tensor *x,
                  int adj)
{
    return tfm_gs_op1(s, TFM_OP_NEG, adj ? matmul(s, x, gb, 0, 1)
                                         : matmul(s, gb, x, 0, 1), NULL);
}

/* MatrixSolve: x = op(a)^-1 b. gb = op(a)^-T g (a solve with the other
 * adjoint); ga = -gb x^T, or -x gb^T when op is the transpose. */
TFM_GRAD(tfm_grad_rule_matrix_solve)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *a = c->in[0], *x = c->out[0];
    int adj = c->attrs->i[0] != 0;
    tfm_tensor *gb = solve(&s, a, g[0], !adj);
    tfm_tensor *ga = NULL;
    if (tfm_grad_wants(c, 0))
        ga = solve_matrix_grad(&s, gb, x, adj);
    gin[0] = ga ? tfm_gs_out(&s, ga) : NULL;
    gin[1] = tfm_grad_wants(c, 1) ? tfm_gs_out(&s, gb) : NULL;
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 2, (unsigned)(tfm_grad_wants(c, 0) |
                                              tfm_grad_wants(c, 1) << 1));
}

/* MatrixInverse: y = op(a)^-1. ga = -y^T g y^T, or -y g^T y when op is
 * the transpose. */
TFM_GRAD(tfm_grad_rule_matrix_inverse)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *y = c->out[0];
    int adj = c->attrs->i[0] != 0;
    tfm_tensor *inner = matmul(&s, g[0], y, adj, !adj);
    tfm_tensor *ga = tfm_gs_op1(&s, TFM_OP_NEG,
                                matmul(&s, y, inner, !adj, 0), NULL);
    gin[0] = tfm_gs_out(&s, ga);
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 1, 1);
}

/* MatrixDeterminant: d det(a) / da = det(a) a^-T. */
TFM_GRAD(tfm_grad_rule_matrix_determinant)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *scale = per_matrix(&s, tfm_gs_op2(&s, TFM_OP_MUL, g[0],
                                                  c->out[0], NULL));
    gin[0] = tfm_gs_out(&s, tfm_gs_op2(&s, TFM_OP_MUL, scale,
                                       inverse(&s, c->in[0], 1), NULL));
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 1, 1);
}

/* LogMatrixDeterminant: d log|det(a)| / da = a^-T; the sign is
 * piecewise constant (no gradient). */
TFM_GRAD(tfm_grad_rule_log_matrix_determinant)
{
    if (!g[1]) {
        gin[0] = NULL;
        return TFM_OK;
    }
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    gin[0] = tfm_gs_out(&s, tfm_gs_op2(&s, TFM_OP_MUL, per_matrix(&s, g[1]),
                                       inverse(&s, c->in[0], 1), NULL));
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 1, 1);
}

static tfm_tensor *
band(tfm_grad_scope *s, tfm_tensor *t, int64_t lower, int64_t upper)
{
    tfm_attrs at;
    tfm_attrs_init(&at);
    at.i[0] = lower;
    at.i[1] = upper;
    return tfm_gs_op1(s, TFM_OP_MATRIX_BAND_PART, t, &at);
}

static tfm_tensor *
trisolve(tfm_grad_scope *s, tfm_tensor *a, tfm_tensor *b, int lower,
         int adjoint)
{
    tfm_attrs at;
    tfm_attrs_init(&at);
    at.i[0] = lower;
    at.i[1] = adjoint;
    return tfm_gs_op2(s, TFM_OP_MATRIX_TRIANGULAR_SOLVE, a, b, &at);
}

/* t with its last two dims swapped. */
static tfm_tensor *
swap_last(tfm_grad_scope *s, tfm_tensor *t)
{
    tfm_attrs at;
    tfm_attrs_init(&at);
    int r = t->shape.ndim;
    at.n_ints = r;
    for (int k = 0; k < r; k++)
        at.ints[k] = k;
    at.ints[r - 2] = r - 1;
    at.ints[r - 1] = r - 2;
    return tfm_gs_op1(s, TFM_OP_TRANSPOSE, t, &at);
}

/* MatrixBandPart is linear and masks: its gradient is the same band of
 * the incoming gradient. */
TFM_GRAD(tfm_grad_rule_band_part)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    gin[0] = tfm_gs_out(&s, band(&s, g[0], c->attrs->i[0], c->attrs->i[1]));
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 1, 1);
}

/* Cholesky: a = L L^T. From da = dL L^T + L dL^T, L^-1 dL is the lower
 * triangle of L^-1 da L^-T with its diagonal halved (phi), so
 * <gL, dL> = <L^-T phi(L^T gL) L^-1, da>; a is symmetric, so the result
 * is symmetrized: ga = (G + G^T) / 2 with G = L^-T phi(L^T gL) L^-1. */
TFM_GRAD(tfm_grad_rule_cholesky)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *l = c->out[0];
    tfm_tensor *p = matmul(&s, l, g[0], 1, 0);
    tfm_tensor *half = tfm_gs_scalar(&s, p, 0.5);
    tfm_tensor *phi = tfm_gs_op2(&s, TFM_OP_SUB, band(&s, p, -1, 0),
                                 tfm_gs_op2(&s, TFM_OP_MUL, half,
                                            band(&s, p, 0, 0), NULL),
                                 NULL);
    /* y = L^-T phi; z = L^-T y^T = (y L^-1)^T = G^T. */
    tfm_tensor *y = trisolve(&s, l, phi, 1, 1);
    tfm_tensor *z = trisolve(&s, l, swap_last(&s, y), 1, 1);
    tfm_tensor *ga = tfm_gs_op2(&s, TFM_OP_MUL, half,
                                tfm_gs_op2(&s, TFM_OP_ADD, z,
                                           swap_last(&s, z), NULL), NULL);
    gin[0] = tfm_gs_out(&s, ga);
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 1, 1);
}

/* MatrixTriangularSolve: x = op(T)^-1 b. gb = op(T)^-T g (a solve with
 * the other adjoint); the full-matrix gradient -gb x^T (or -x gb^T when
 * op is the transpose) is kept on T's triangle only, the other one
 * being unread. Broadcast batch dims are summed back. */
TFM_GRAD(tfm_grad_rule_triangular_solve)
{
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_tensor *a = c->in[0], *x = c->out[0];
    int lower = c->attrs->i[0] != 0, adj = c->attrs->i[1] != 0;
    int wa = tfm_grad_wants(c, 0), wb = tfm_grad_wants(c, 1);
    tfm_tensor *gb = trisolve(&s, a, g[0], lower, !adj);
    tfm_tensor *ga = NULL;
    if (wa) {
        ga = band(&s, solve_matrix_grad(&s, gb, x, adj), lower ? -1 : 0,
                  lower ? 0 : -1);
    }
    gin[0] = ga ? tfm_gs_unbroadcast(&s, ga, a) : NULL;
    gin[1] = wb ? tfm_gs_unbroadcast(&s, gb, c->in[1]) : NULL;
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 2, (unsigned)(wa | wb << 1));
}

/* Svd, through the singular values only (tf.linalg.svd(compute_uv=
 * False), norms): ds_k / da = u_k v_k^T, so ga = u diag(gs) v^T =
 * (u * gs[..., None, :]) @ v^T. A gradient reaching u or v (TF's long
 * rule, with its 1 / (s_i^2 - s_j^2) terms) is not written yet: an
 * error, never a wrong gradient. */
TFM_GRAD(tfm_grad_rule_svd)
{
    if (g[1] || g[2])
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "Svd: tfmini has the "
                         "gradient through the singular values only, not "
                         "through u or v");
    if (!g[0]) {
        gin[0] = NULL;
        return TFM_OK;
    }
    const tfm_shape *xs = &c->in[0]->shape;
    int r = xs->ndim;
    if (c->attrs->i[0] && xs->dims[r - 2] != xs->dims[r - 1])
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "Svd: the gradient of a "
                         "full_matrices=True SVD of a non-square matrix is "
                         "not written yet; use full_matrices=False");
    tfm_grad_scope s;
    tfm_gs_begin(&s, c);
    tfm_shape row = g[0]->shape;           /* [..., P] -> [..., 1, P] */
    row.dims[row.ndim] = row.dims[row.ndim - 1];
    row.dims[row.ndim - 1] = 1;
    row.ndim++;
    tfm_tensor *scaled = tfm_gs_op2(&s, TFM_OP_MUL, c->out[1],
                                    tfm_gs_reshape(&s, g[0], &row), NULL);
    gin[0] = tfm_gs_out(&s, matmul(&s, scaled, c->out[2], 0, 1));
    tfm_gs_end(&s);
    return tfm_grad_finish(gin, 1, 1);
}
