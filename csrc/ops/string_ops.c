/* Shape rules of the string family. See ops_string.def for each op's
 * inputs and attributes. */
#include "string_ops.h"

#define NAME (tfm_ops[op].name)
#define BAD(...) tfm_error(TFM_ERR_INVALID_ARGUMENT, __VA_ARGS__)

static tfm_code
want(tfm_op op, const tfm_meta *m, tfm_dtype d, const char *what)
{
    if (m->dtype == d)
        return TFM_OK;
    return BAD("%s: %s must be a %s "
               "tensor, got %s", NAME, what,
               tfm_dtype_name(d), tfm_dtype_name(m->dtype));
}

static tfm_code
want_scalar(tfm_op op, const tfm_meta *m, const char *what)
{
    char s[160];
    tfm_code rc = want(op, m, TFM_STRING, what);
    if (!rc && m->shape.ndim != 0)
        rc = BAD("%s: %s must be a scalar, "
                 "got shape %s", NAME, what,
                 tfm_shape_str(&m->shape, s, sizeof s));
    return rc;
}

static tfm_code
want_rank01(tfm_op op, const tfm_meta *m)
{
    char s[160];
    if (m->shape.ndim <= 1)
        return TFM_OK;
    return BAD("%s: input must be 0-D or "
               "1-D (a rank-%d input is split row by row in "
               "Python), got shape %s", NAME,
               m->shape.ndim, tfm_shape_str(&m->shape, s, sizeof s));
}

/* unit: BYTE or UTF8_CHAR (string_length, substr). */
static tfm_code
want_unit(tfm_op op, int64_t unit)
{
    if (unit < 0 || unit > 1)
        return BAD("%s: unit must be BYTE or UTF8_CHAR", NAME);
    return TFM_OK;
}

/* errors (i[0]) and encoding (i[3]) of unicode_decode and _encode. */
static tfm_code
want_unicode_attrs(tfm_op op, const tfm_attrs *a)
{
    if (a->i[0] < 0 || a->i[0] > 2)
        return BAD("%s: errors must be 'replace', 'ignore' or 'strict'",
                   NAME);
    if (a->i[3] < 0 || a->i[3] > 2)
        return BAD("%s: the encoding must be UTF-8, UTF-16-BE or "
                   "UTF-32-BE", NAME);
    return TFM_OK;
}

static tfm_code
one(tfm_dtype d, const tfm_shape *s, tfm_meta *out, int *nout)
{
    *nout = 1;
    out[0].dtype = d;
    out[0].shape = *s;
    return TFM_OK;
}

tfm_code
tfm_infer_string_length(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    if (!rc)
        rc = want_unit(op, a->i[0]);
    return rc ? rc : one(TFM_INT32, &in[0].shape, out, nout);
}

tfm_code
tfm_infer_string_unary(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    return rc ? rc : one(TFM_STRING, &in[0].shape, out, nout);
}

tfm_code
tfm_infer_string_join(tfm_op op, const tfm_meta *in, int nin,
                      const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    if (nin < 1)
        return BAD("%s needs a separator",
                   NAME);
    tfm_code rc = want_scalar(op, &in[0], "separator");
    if (rc)
        return rc;
    tfm_shape s = {0};
    int have = 0;
    for (int i = 1; i < nin; i++) {
        if ((rc = want(op, &in[i], TFM_STRING, "each input")))
            return rc;
        if (in[i].shape.ndim == 0)
            continue;
        if (!have) {
            s = in[i].shape;
            have = 1;
            continue;
        }
        int ok = s.ndim == in[i].shape.ndim;
        for (int d = 0; ok && d < s.ndim; d++) {
            int64_t x = s.dims[d], y = in[i].shape.dims[d];
            if (x >= 0 && y >= 0 && x != y)
                ok = 0;
            else if (x < 0)
                s.dims[d] = y;
        }
        if (!ok) {
            char p[160], q[160];
            return BAD("%s: inputs must be "
                       "scalars or of one shape, got %s and %s",
                       NAME,
                       tfm_shape_str(&s, p, sizeof p),
                       tfm_shape_str(&in[i].shape, q, sizeof q));
        }
    }
    return one(TFM_STRING, &s, out, nout);
}

tfm_code
tfm_infer_substr(tfm_op op, const tfm_meta *in, int nin,
                 const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    if (rc)
        return rc;
    if ((in[1].dtype != TFM_INT32 && in[1].dtype != TFM_INT64) ||
        in[2].dtype != in[1].dtype)
        return BAD("%s: pos and len must "
                   "be int32 or int64 of one dtype, got %s and %s",
                   NAME, tfm_dtype_name(in[1].dtype),
                   tfm_dtype_name(in[2].dtype));
    if ((rc = want_unit(op, a->i[0])))
        return rc;
    tfm_shape s;
    if ((rc = tfm_shape_broadcast(NAME, &in[0].shape,
                                  &in[1].shape, &s)) ||
        (rc = tfm_shape_broadcast(NAME, &s, &in[2].shape, &s)))
        return rc;
    return one(TFM_STRING, &s, out, nout);
}

tfm_code
tfm_infer_regex(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                tfm_meta *out, int *nout)
{
    (void)a;
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    if (!rc)
        rc = want_scalar(op, &in[1], "pattern");
    if (!rc && nin == 3)
        rc = want_scalar(op, &in[2], "rewrite");
    if (rc)
        return rc;
    return one(op == TFM_OP_REGEX_FULL_MATCH ? TFM_BOOL : TFM_STRING,
               &in[0].shape, out, nout);
}

tfm_code
tfm_infer_string_to_number(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    if (rc)
        return rc;
    if (a->dtype != TFM_FLOAT32 && a->dtype != TFM_FLOAT64 &&
        a->dtype != TFM_INT32 && a->dtype != TFM_INT64)
        return BAD("%s: out_type must be "
                   "float32, float64, int32 or int64, got %s",
                   NAME, tfm_dtype_name(a->dtype));
    return one(a->dtype, &in[0].shape, out, nout);
}

tfm_code
tfm_infer_as_string(tfm_op op, const tfm_meta *in, int nin,
                    const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_dtype d = in[0].dtype;
    if (d == TFM_STRING)
        return one(TFM_STRING, &in[0].shape, out, nout);
    if (!tfm_dtype_is_int(d) && !tfm_dtype_is_float(d) && d != TFM_BOOL)
        return BAD("%s: no kernel for "
                   "dtype %s", NAME, tfm_dtype_name(d));
    int is_float = tfm_dtype_is_float(d);
    if (!is_float && (a->i[0] >= 0 || a->i[1] || a->i[2]))
        return BAD("%s: precision, "
                   "scientific and shortest apply to floats only, "
                   "not %s", NAME, tfm_dtype_name(d));
    if (a->i[1] && a->i[2])
        return BAD("%s: cannot select "
                   "both scientific and shortest notation",
                   NAME);
    if (a->i[0] < -1 || a->i[0] > 100 || a->i[3] < -1 || a->i[3] > 1000)
        return BAD("%s: precision %lld or "
                   "width %lld is too large", NAME,
                   (long long)a->i[0], (long long)a->i[3]);
    return one(TFM_STRING, &in[0].shape, out, nout);
}

tfm_code
tfm_infer_reduce_join(tfm_op op, const tfm_meta *in, int nin,
                      const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    if (!rc)
        rc = want_scalar(op, &in[1], "separator");
    if (rc)
        return rc;
    int r = in[0].shape.ndim;
    int drop[TFM_MAX_DIMS] = {0};
    for (int k = 0; k < a->n_ints; k++) {
        int64_t ax = a->ints[k];
        if (ax < 0 || ax >= r || drop[ax])
            return BAD("%s: axis %lld is "
                       "repeated or out of range for a rank-%d input",
                       NAME, (long long)ax, r);
        drop[ax] = 1;
    }
    if (a->i[1])
        for (int d = 0; d < r; d++)
            drop[d] = 1;
    *nout = 1;
    out[0].dtype = TFM_STRING;
    out[0].shape.ndim = 0;
    for (int d = 0; d < r; d++) {
        if (!drop[d])
            out[0].shape.dims[out[0].shape.ndim++] = in[0].shape.dims[d];
        else if (a->i[0])
            out[0].shape.dims[out[0].shape.ndim++] = 1;
    }
    return TFM_OK;
}

tfm_code
tfm_infer_string_hash(tfm_op op, const tfm_meta *in, int nin,
                      const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    if (rc)
        return rc;
    if (a->i[0] < 1)
        return BAD("%s: num_buckets must "
                   "be >= 1, got %lld", NAME,
                   (long long)a->i[0]);
    return one(TFM_INT64, &in[0].shape, out, nout);
}

tfm_code
tfm_infer_unicode_script(tfm_op op, const tfm_meta *in, int nin,
                         const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    tfm_code rc = want(op, &in[0], TFM_INT32, "input");
    if (rc)
        return rc;
    return one(TFM_INT32, &in[0].shape, out, nout);
}

/* (values [N], row_splits [n+1]) with N = i[5] (-1 unknown). */
static tfm_code
ragged(const tfm_meta *x, const tfm_attrs *a, tfm_dtype values, int first,
       tfm_meta *out, int *nout)
{
    *nout = 2;
    tfm_meta *v = &out[first], *s = &out[1 - first];
    v->dtype = values;
    v->shape.ndim = 1;
    v->shape.dims[0] = a->i[5] >= 0 ? a->i[5] : -1;
    s->dtype = TFM_INT64;
    s->shape.ndim = 1;
    int64_t n = x->shape.ndim == 0 ? 1 : x->shape.dims[0];
    s->shape.dims[0] = n < 0 ? -1 : n + 1;
    return TFM_OK;
}

tfm_code
tfm_infer_string_split(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    if (!rc)
        rc = want_rank01(op, &in[0]);
    if (!rc && nin == 2)
        rc = want_scalar(op, &in[1], "sep");
    return rc ? rc : ragged(&in[0], a, TFM_STRING, 0, out, nout);
}

tfm_code
tfm_infer_unicode_decode(tfm_op op, const tfm_meta *in, int nin,
                         const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = want(op, &in[0], TFM_STRING, "input");
    if (!rc)
        rc = want_rank01(op, &in[0]);
    if (!rc)
        rc = want_unicode_attrs(op, a);
    if (!rc)
        rc = ragged(&in[0], a, TFM_INT32, 1, out, nout);
    if (!rc && op == TFM_OP_UNICODE_DECODE_WITH_OFFSETS) {
        out[2].dtype = TFM_INT64;
        out[2].shape = out[1].shape;
        *nout = 3;
    }
    return rc;
}

tfm_code
tfm_infer_unicode_encode(tfm_op op, const tfm_meta *in, int nin,
                         const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = want(op, &in[0], TFM_INT32, "input_values");
    if (!rc)
        rc = want(op, &in[1], TFM_INT64, "input_splits");
    if (!rc && (in[0].shape.ndim != 1 || in[1].shape.ndim != 1)) {
        char p[160], q[160];
        rc = BAD("%s: input_values and "
                 "input_splits must be 1-D, got %s and %s",
                 NAME,
                 tfm_shape_str(&in[0].shape, p, sizeof p),
                 tfm_shape_str(&in[1].shape, q, sizeof q));
    }
    if (!rc && in[1].shape.dims[0] == 0)
        rc = BAD("%s: input_splits must "
                 "have at least one element", NAME);
    if (!rc)
        rc = want_unicode_attrs(op, a);
    if (rc)
        return rc;
    tfm_shape s = {1, {in[1].shape.dims[0] < 0 ? -1
                                               : in[1].shape.dims[0] - 1}};
    return one(TFM_STRING, &s, out, nout);
}

tfm_code
tfm_infer_decode_raw(tfm_op op, const tfm_meta *in, int nin,
                     const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin;
    tfm_code rc = want(op, &in[0], TFM_STRING, "bytes");
    if (rc)
        return rc;
    if (a->dtype == TFM_STRING || (unsigned)a->dtype >= TFM_DTYPE_COUNT)
        return BAD("%s: out_type must be "
                   "numeric, got %s", NAME,
                   tfm_dtype_name(a->dtype));
    if (in[0].shape.ndim >= TFM_MAX_DIMS)
        return BAD("%s: input of rank %d "
                   "leaves no room for the decoded dim",
                   NAME, in[0].shape.ndim);
    tfm_shape s = in[0].shape;
    s.dims[s.ndim++] = a->i[5] >= 0 ? a->i[5] : -1;
    return one(a->dtype, &s, out, nout);
}

tfm_code
tfm_infer_string_format(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)a;
    if (nin < 2)
        return BAD("%s needs a template "
                   "and a placeholder", NAME);
    tfm_code rc = want_scalar(op, &in[0], "template");
    if (!rc)
        rc = want_scalar(op, &in[1], "placeholder");
    tfm_shape s = {0};
    return rc ? rc : one(TFM_STRING, &s, out, nout);
}

int
tfm_op_takes_strings(tfm_op op)
{
    if (tfm_ops[op].flags & TFM_OPF_GRAPH_ONLY)
        return op != TFM_OP_FUSED_ELEMENTWISE && op != TFM_OP_FUSED_MATMUL &&
               op != TFM_OP_ASSIGN_ADD_VARIABLE &&
               op != TFM_OP_ASSIGN_SUB_VARIABLE;
    switch (op) {
#define X(ENUM, NAME, NIN, NOUT, INFER, KERNEL, FLAGS) case TFM_OP_##ENUM:
#include "ops_string.def"
#undef X
    case TFM_OP_EQUAL: case TFM_OP_NOT_EQUAL: case TFM_OP_ADD:
    case TFM_OP_RESHAPE: case TFM_OP_TRANSPOSE: case TFM_OP_EXPAND_DIMS:
    case TFM_OP_SQUEEZE: case TFM_OP_IDENTITY: case TFM_OP_CONCAT:
    case TFM_OP_PACK: case TFM_OP_UNPACK: case TFM_OP_SPLIT:
    case TFM_OP_SPLIT_V: case TFM_OP_TILE: case TFM_OP_REVERSE:
    case TFM_OP_BROADCAST_TO: case TFM_OP_SLICE: case TFM_OP_STRIDED_SLICE:
    case TFM_OP_GATHER: case TFM_OP_GATHER_ND:
    case TFM_OP_TENSOR_SCATTER_UPDATE: case TFM_OP_SELECT:
    case TFM_OP_SHAPE: case TFM_OP_SIZE: case TFM_OP_RANK: case TFM_OP_FILL:
        return 1;
    default:
        return 0;
    }
}
