/* Shape rules of the recurrent-cell ops. Every input is a matrix
 * [batch, width] whose width is the number of units U or, for the gate
 * blocks, 4U; unknown dims (-1) match anything. */
#include <stdio.h>
#include <string.h>

#include "rnn.h"

/* One input's expected width: U or 4U. */
typedef struct cell_arg {
    const char *name;
    int gates;          /* 1: width 4U, else U */
} cell_arg;

/* The error naming every argument's shape and dtype. */
static tfm_code
cell_error(tfm_op op, const tfm_meta *in, const cell_arg *args, int n,
           const char *why)
{
    char all[1024];
    size_t len = 0;
    all[0] = '\0';
    for (int k = 0; k < n && len < sizeof all; k++) {
        char s[160];
        int w = snprintf(all + len, sizeof all - len, "%s%s %s %s",
                         k ? ", " : "", args[k].name,
                         tfm_shape_str(&in[k].shape, s, sizeof s),
                         tfm_dtype_name(in[k].dtype));
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %s; got %s",
                     tfm_ops[op].name, why, all);
}

/* Checks the arguments; sets *batch and *units (-1 when unknown). */
static tfm_code
check_cell(tfm_op op, const tfm_meta *in, const cell_arg *args, int n,
           int64_t *batch, int64_t *units)
{
    tfm_dtype dt = in[0].dtype;
    if (dt != TFM_FLOAT32 && dt != TFM_FLOAT64)
        return cell_error(op, in, args, n, "the arguments must be float32 "
                          "or float64");
    for (int k = 1; k < n; k++)
        if (in[k].dtype != dt)
            return cell_error(op, in, args, n, "the arguments must all "
                              "have one dtype");
    *batch = -1;
    *units = -1;
    for (int k = 0; k < n; k++) {
        const tfm_shape *s = &in[k].shape;
        if (s->ndim != 2)
            return cell_error(op, in, args, n, "every argument must be a "
                              "matrix [batch, width]");
        int64_t b = s->dims[0], w = s->dims[1];
        if (b >= 0) {
            if (*batch >= 0 && *batch != b)
                return cell_error(op, in, args, n, "the batch sizes "
                                  "(first dims) differ");
            *batch = b;
        }
        if (w < 0)
            continue;
        if (args[k].gates && w % 4)
            return cell_error(op, in, args, n, "the gate blocks' width "
                              "must be 4 * units");
        int64_t u = args[k].gates ? w / 4 : w;
        if (*units >= 0 && *units != u)
            return cell_error(op, in, args, n, "the widths disagree (gate "
                              "blocks 4 * units wide, the others units)");
        *units = u;
    }
    return TFM_OK;
}

static tfm_meta
matrix(tfm_dtype dt, int64_t batch, int64_t width)
{
    tfm_meta m;
    m.dtype = dt;
    m.shape.ndim = 2;
    m.shape.dims[0] = batch;
    m.shape.dims[1] = width;
    return m;
}

tfm_code
tfm_infer_lstm_gates(tfm_op op, const tfm_meta *in, int nin,
                     const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    static const cell_arg args[] = {{"z", 1}, {"c_prev", 0}};
    int64_t b = -1, u = -1;
    tfm_code rc = check_cell(op, in, args, 2, &b, &u);
    if (rc)
        return rc;
    tfm_dtype dt = in[0].dtype;
    out[0] = matrix(dt, b, u);
    out[1] = matrix(dt, b, u);
    out[2] = matrix(dt, b, u < 0 ? -1 : 4 * u);
    *nout = 3;
    return TFM_OK;
}

tfm_code
tfm_infer_lstm_gates_grad(tfm_op op, const tfm_meta *in, int nin,
                          const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    static const cell_arg args[] = {{"dh", 0}, {"dc", 0}, {"gates", 1},
                                    {"c_prev", 0}, {"c", 0}};
    int64_t b = -1, u = -1;
    tfm_code rc = check_cell(op, in, args, 5, &b, &u);
    if (rc)
        return rc;
    tfm_dtype dt = in[0].dtype;
    out[0] = matrix(dt, b, u < 0 ? -1 : 4 * u);
    out[1] = matrix(dt, b, u);
    *nout = 2;
    return TFM_OK;
}

/* ---- the whole-sequence ops ----
 * Each argument's dims are spelled by letters: T steps, B batch, U
 * units, G gate blocks (4U). Unknown dims (-1) match anything. */
typedef struct seq_arg {
    const char *name;
    const char *dims;
} seq_arg;

/* Checks the arguments; sets dims[] for T, B, U (-1 when unknown). */
static tfm_code
check_seq(tfm_op op, const tfm_meta *in, const seq_arg *args, int n,
          int64_t dims[3])
{
    cell_arg names[8];
    for (int k = 0; k < n; k++)
        names[k] = (cell_arg){args[k].name, 0};
    tfm_dtype dt = in[0].dtype;
    if (dt != TFM_FLOAT32 && dt != TFM_FLOAT64)
        return cell_error(op, in, names, n, "the arguments must be float32 "
                          "or float64");
    for (int k = 1; k < n; k++)
        if (in[k].dtype != dt)
            return cell_error(op, in, names, n, "the arguments must all "
                              "have one dtype");
    dims[0] = dims[1] = dims[2] = -1;
    for (int k = 0; k < n; k++) {
        const char *spec = args[k].dims;
        const tfm_shape *s = &in[k].shape;
        if (s->ndim != (int)strlen(spec))
            return cell_error(op, in, names, n, "the shapes must be xs "
                              "[T, B, 4U], states [B, U], stacks [T, B, U] "
                              "(gates [T, B, 4U]) and r [U, 4U]");
        for (int d = 0; d < s->ndim; d++) {
            int64_t v = s->dims[d];
            if (v < 0)
                continue;
            int at = spec[d] == 'T' ? 0 : spec[d] == 'B' ? 1 : 2;
            if (spec[d] == 'G') {
                if (v % 4)
                    return cell_error(op, in, names, n, "the gate blocks' "
                                      "width must be 4 * units");
                v /= 4;
            }
            if (dims[at] >= 0 && dims[at] != v)
                return cell_error(op, in, names, n, at == 0 ? "the numbers "
                                  "of steps differ" : at == 1 ? "the batch "
                                  "sizes differ" : "the widths disagree "
                                  "(units U, gate blocks 4U)");
            dims[at] = v;
        }
    }
    return TFM_OK;
}

static tfm_meta
stack3(tfm_dtype dt, int64_t t, int64_t batch, int64_t width)
{
    tfm_meta m = matrix(dt, batch, width);
    m.shape.ndim = 3;
    m.shape.dims[0] = t;
    m.shape.dims[1] = batch;
    m.shape.dims[2] = width;
    return m;
}

tfm_code
tfm_infer_lstm_sequence(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    static const seq_arg args[] = {{"xs", "TBG"}, {"h0", "BU"},
                                   {"c0", "BU"}, {"r", "UG"}};
    int64_t d[3];
    tfm_code rc = check_seq(op, in, args, 4, d);
    if (rc)
        return rc;
    tfm_dtype dt = in[0].dtype;
    int64_t g = d[2] < 0 ? -1 : 4 * d[2];
    out[0] = stack3(dt, d[0], d[1], d[2]);
    out[1] = stack3(dt, d[0], d[1], d[2]);
    out[2] = stack3(dt, d[0], d[1], g);
    out[3] = matrix(dt, d[1], d[2]);
    out[4] = matrix(dt, d[1], d[2]);
    *nout = 5;
    return TFM_OK;
}

tfm_code
tfm_infer_lstm_sequence_grad(tfm_op op, const tfm_meta *in, int nin,
                             const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    static const seq_arg args[] = {{"dh", "BU"}, {"dc", "BU"},
                                   {"hs", "TBU"}, {"cs", "TBU"},
                                   {"gates", "TBG"}, {"c", "BU"},
                                   {"r", "UG"}, {"d_out", "TBU"}};
    if (nin != 7 && nin != 8)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: takes 7 arguments "
                         "(dh, dc, hs, cs, gates, c, r) and d_out "
                         "optionally; got %d", tfm_ops[op].name, nin);
    int64_t d[3];
    tfm_code rc = check_seq(op, in, args, nin, d);
    if (rc)
        return rc;
    tfm_dtype dt = in[0].dtype;
    int64_t g = d[2] < 0 ? -1 : 4 * d[2];
    out[0] = stack3(dt, d[0], d[1], g);
    out[1] = matrix(dt, d[1], d[2]);
    out[2] = matrix(dt, d[1], d[2]);
    out[3] = matrix(dt, d[2], g);
    *nout = 4;
    return TFM_OK;
}
