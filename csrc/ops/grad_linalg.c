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
