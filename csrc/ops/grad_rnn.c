/* Gradients of the recurrent-cell ops (ops_rnn.def). LSTMGates' rule is
 * its own backward op, LSTMGatesGrad, which reads only what the forward
 * saved (gates, c_prev, c): a gradient loop never reruns the gate math.
 * LSTMGatesGrad's rule (second order) is the product rule over its
 * elementwise formula, written with elementwise ops. */
#include "grad_util.h"
#include "grads.h"

/* More temporaries than one scope holds: a few scopes used in turn. */
#define NSCOPES 4
typedef struct scopes {
    tfm_grad_scope s[NSCOPES];
    int k;
} scopes;

static void
scopes_begin(scopes *S, const tfm_grad_ctx *c)
{
    for (int k = 0; k < NSCOPES; k++)
        tfm_gs_begin(&S->s[k], c);
    S->k = 0;
}

static void
scopes_end(scopes *S)
{
    for (int k = 0; k < NSCOPES; k++)
        tfm_gs_end(&S->s[k]);
}

/* The scope with room for a few more (split keeps four at once). */
static tfm_grad_scope *
room(scopes *S)
{
    if (S->s[S->k].n > TFM_GRAD_SCOPE_MAX - 4 && S->k < NSCOPES - 1)
        S->k++;
    return &S->s[S->k];
}

static tfm_tensor *
mul(scopes *S, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(room(S), TFM_OP_MUL, a, b, NULL);
}

static tfm_tensor *
add(scopes *S, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(room(S), TFM_OP_ADD, a, b, NULL);
}

static tfm_tensor *
sub(scopes *S, tfm_tensor *a, tfm_tensor *b)
{
    return tfm_gs_op2(room(S), TFM_OP_SUB, a, b, NULL);
}

/* one - x */
static tfm_tensor *
rsub1(scopes *S, tfm_tensor *x)
{
    if (!x)
        return NULL;
    return sub(S, tfm_gs_scalar(room(S), x, 1.0), x);
}

static tfm_tensor *
scaled(scopes *S, tfm_tensor *x, double k)
{
    if (!x)
        return NULL;
    return mul(S, tfm_gs_scalar(room(S), x, k), x);
}

/* x's four gate blocks along axis 1 into part[4]; 0 or an error. */
static tfm_code
split4(scopes *S, const tfm_grad_ctx *c, tfm_tensor *x, tfm_tensor **part)
{
    for (int k = 0; k < 4; k++)
        part[k] = NULL;
    if (!x)
        return tfm_error_code();
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.i[0] = 1;
    a.i[1] = 4;
    tfm_tensor *out[4] = {NULL, NULL, NULL, NULL};
    int n = 0;
    tfm_code rc = c->call(TFM_OP_SPLIT, &x, 1, &a, out, &n);
    if (rc)
        return rc;
    tfm_grad_scope *s = room(S);
    for (int k = 0; k < n; k++) {
        tfm_tensor *t = tfm_gs_keep(s, out[k]);
        if (k < 4)
            part[k] = t;
    }
    return n == 4 ? TFM_OK : tfm_error(TFM_ERR_INTERNAL, "%s gradient: "
                                       "Split gave %d parts, not 4",
                                       tfm_ops[c->op].name, n);
}

/* concat(part[0..3], axis 1), a new reference. */
static tfm_tensor *
concat4(const tfm_grad_ctx *c, tfm_tensor *const *part)
{
    for (int k = 0; k < 4; k++)
        if (!part[k])
            return NULL;
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.i[0] = 1;
    tfm_tensor *out = NULL;
    int n = 0;
    if (c->call(TFM_OP_CONCAT, part, 4, &a, &out, &n))
        return NULL;
    return out;
}

/* s(1 - s): the sigmoid's derivative from its value. */
static tfm_tensor *
dsig(scopes *S, tfm_tensor *s)
{
    return mul(S, s, rsub1(S, s));
}

/* 1 - t^2: tanh's derivative from its value. */
static tfm_tensor *
dtanh(scopes *S, tfm_tensor *t)
{
    return rsub1(S, mul(S, t, t));
}

/* dz, dc_prev = LSTMGatesGrad(dh, dc, gates, c_prev, c); a gradient of
 * the gates output itself (only when a caller uses it) adds its
 * activation derivatives. */
TFM_GRAD(tfm_grad_rule_lstm_gates)
{
    scopes S;
    scopes_begin(&S, c);
    tfm_tensor *dh = g[0] ? g[0] : tfm_gs_zeros_of(room(&S), c->out[0]);
    tfm_tensor *dc = g[1] ? g[1] : tfm_gs_zeros_of(room(&S), c->out[1]);
    tfm_tensor *res[2] = {NULL, NULL};
    if (dh && dc) {
        tfm_tensor *args[5] = {dh, dc, c->out[2], c->in[1], c->out[1]};
        int n = 0;
        if (c->call(TFM_OP_LSTM_GATES_GRAD, args, 5, NULL, res, &n) ==
            TFM_OK) {
            tfm_gs_keep(room(&S), res[0]);
            tfm_gs_keep(room(&S), res[1]);
        }
    }
    tfm_tensor *dz = res[0];
    if (g[2] && dz) {
        tfm_tensor *q[4];
        if (split4(&S, c, c->out[2], q) == TFM_OK) {
            tfm_tensor *deriv[4] = {dsig(&S, q[0]), dsig(&S, q[1]),
                                    dtanh(&S, q[2]), dsig(&S, q[3])};
            tfm_tensor *whole = tfm_gs_keep(room(&S), concat4(c, deriv));
            dz = add(&S, dz, mul(&S, g[2], whole));
        } else {
            dz = NULL;
        }
    }
    gin[0] = tfm_gs_out(room(&S), dz);
    gin[1] = tfm_gs_out(room(&S), res[1]);
    scopes_end(&S);
    return tfm_grad_finish(gin, 2, 3);
}

/* Second order: with tc = tanh(c), t1 = 1 - tc^2 and the forward
 *   dct = dc + dh o t1
 *   dz = (dct c~ i(1-i), dct c_prev f(1-f), dct i (1-c~^2),
 *         dh tc o(1-o)),  dc_prev = dct f,
 * and upstream gradients (ui, uf, ug, uo) of dz and v of dc_prev, the
 * gradient reaching dct is a = ui c~ i(1-i) + uf c_prev f(1-f)
 * + ug i (1-c~^2) + v f, and each input's follows by the product rule. */
TFM_GRAD(tfm_grad_rule_lstm_gates_grad)
{
    scopes S;
    scopes_begin(&S, c);
    tfm_tensor *dh = c->in[0], *dc = c->in[1], *cp = c->in[3];
    tfm_tensor *gz = g[0] ? g[0] : tfm_gs_zeros_of(room(&S), c->out[0]);
    tfm_tensor *v = g[1] ? g[1] : tfm_gs_zeros_of(room(&S), c->out[1]);
    tfm_tensor *q[4], *u[4];
    split4(&S, c, c->in[2], q);
    split4(&S, c, gz, u);
    tfm_tensor *i = q[0], *f = q[1], *gg = q[2], *o = q[3];
    tfm_tensor *tc = tfm_gs_op1(room(&S), TFM_OP_TANH, c->in[4], NULL);
    tfm_tensor *t1 = dtanh(&S, tc);
    tfm_tensor *si = dsig(&S, i), *sf = dsig(&S, f), *so = dsig(&S, o);
    tfm_tensor *tg = dtanh(&S, gg);
    tfm_tensor *dct = add(&S, dc, mul(&S, dh, mul(&S, o, t1)));
    tfm_tensor *a = add(&S, add(&S, mul(&S, u[0], mul(&S, gg, si)),
                                mul(&S, u[1], mul(&S, cp, sf))),
                        add(&S, mul(&S, u[2], mul(&S, i, tg)),
                            mul(&S, v, f)));
    tfm_tensor *uo_so = mul(&S, u[3], so);
    /* d dh = uo tc o(1-o) + a o t1 */
    tfm_tensor *g_dh = add(&S, mul(&S, uo_so, tc), mul(&S, a, mul(&S, o,
                                                                  t1)));
    /* d c_prev = uf dct f(1-f) */
    tfm_tensor *g_cp = mul(&S, u[1], mul(&S, dct, sf));
    /* d c = (uo dh o(1-o) - 2 a dh o tc) t1 */
    tfm_tensor *g_c = mul(&S, mul(&S, dh, sub(&S, uo_so,
                                              scaled(&S, mul(&S, a, mul(&S, o,
                                                                       tc)),
                                                     2.0))), t1);
    /* gates: i: dct (ui c~ (1-2i) + ug (1-c~^2));
     * f: dct (uf c_prev (1-2f) + v);  c~: dct (ui i(1-i) - 2 ug i c~);
     * o: dh (uo tc (1-2o) + a t1) */
    tfm_tensor *one_2i = rsub1(&S, scaled(&S, i, 2.0));
    tfm_tensor *one_2f = rsub1(&S, scaled(&S, f, 2.0));
    tfm_tensor *one_2o = rsub1(&S, scaled(&S, o, 2.0));
    tfm_tensor *parts[4];
    parts[0] = mul(&S, dct, add(&S, mul(&S, u[0], mul(&S, gg, one_2i)),
                                mul(&S, u[2], tg)));
    parts[1] = mul(&S, dct, add(&S, mul(&S, u[1], mul(&S, cp, one_2f)), v));
    parts[2] = mul(&S, dct, sub(&S, mul(&S, u[0], si),
                                scaled(&S, mul(&S, u[2], mul(&S, i, gg)),
                                       2.0)));
    parts[3] = mul(&S, dh, add(&S, mul(&S, u[3], mul(&S, tc, one_2o)),
                               mul(&S, a, t1)));
    gin[0] = tfm_gs_out(room(&S), g_dh);
    gin[1] = tfm_gs_out(room(&S), a);
    gin[2] = concat4(c, parts);
    gin[3] = tfm_gs_out(room(&S), g_cp);
    gin[4] = tfm_gs_out(room(&S), g_c);
    scopes_end(&S);
    return tfm_grad_finish(gin, 5, 0x1f);
}
