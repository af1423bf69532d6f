#include "state.h"

#include "../core/tstring.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tfm_code
tfm_infer_from_attrs(tfm_op op, const tfm_meta *in, int nin,
                     const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)in; (void)nin;
    if (a->n_ints > TFM_MAX_DIMS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: rank %d is more "
                         "than %d", tfm_ops[op].name, a->n_ints,
                         TFM_MAX_DIMS);
    if ((unsigned)a->dtype >= TFM_DTYPE_COUNT)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: invalid dtype %d",
                         tfm_ops[op].name, (int)a->dtype);
    out[0].dtype = a->dtype;
    out[0].shape.ndim = a->n_ints;
    for (int i = 0; i < a->n_ints; i++) {
        if (a->ints[i] < -1)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: dim %d is %lld",
                             tfm_ops[op].name, i, (long long)a->ints[i]);
        out[0].shape.dims[i] = a->ints[i];
    }
    *nout = 1;
    return TFM_OK;
}

tfm_code
tfm_infer_sink(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
               tfm_meta *out, int *nout)
{
    (void)op; (void)in; (void)nin; (void)a; (void)out;
    *nout = 0;
    return TFM_OK;
}

tfm_code
tfm_infer_control(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                  tfm_meta *out, int *nout)
{
    (void)in; (void)nin; (void)a; (void)out; (void)nout;
    if (tfm_op_payload(op) != TFM_PAYLOAD_SUB)   /* the fused ops */
        return tfm_error(TFM_ERR_INTERNAL, "%s: made only by the graph "
                         "optimizer; it has no eager form",
                         tfm_ops[op].name);
    return tfm_error(TFM_ERR_INTERNAL, "%s: its outputs come from its "
                     "sub-graphs (made by tfm_graph_%s)", tfm_ops[op].name,
                     op == TFM_OP_IF ? "if" : "while");
}

/* ---- text ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void
put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void
puts_(sbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* Shortest form that reads back exactly, as TF's FloatToBuffer and
 * DoubleToBuffer: %.6g (%.15g) when it round-trips, else %.9g (%.17g). */
static void
put_float(sbuf *b, double v, int is_double)
{
    char s[64];
    if (isnan(v)) {
        puts_(b, signbit(v) ? "-nan" : "nan");
        return;
    }
    if (isinf(v)) {
        puts_(b, v < 0 ? "-inf" : "inf");
        return;
    }
    if (is_double) {
        snprintf(s, sizeof s, "%.*g", DBL_DIG, v);
        if (strtod(s, NULL) != v)
            snprintf(s, sizeof s, "%.*g", DBL_DIG + 2, v);
    } else {
        float f = (float)v;
        snprintf(s, sizeof s, "%.*g", FLT_DIG, (double)f);
        if (strtof(s, NULL) != f)
            snprintf(s, sizeof s, "%.*g", FLT_DIG + 3, (double)f);
    }
    puts_(b, s);
}

/* A string element as TF's PrintV2 shows it: quoted, with absl's
 * Utf8SafeCEscape (bytes >= 0x80 kept, so UTF-8 text stays readable);
 * a scalar string prints bare (as TF's tf.print and format show it). */
static void
put_string(sbuf *b, const tfm_tensor *t, int64_t i)
{
    const tfm_str *x = tfm_tensor_strs(t)[i];
    const char *p = tfm_str_data(x);
    int64_t n = tfm_str_len(x);
    if (t->shape.ndim == 0) {
        put(b, p, (size_t)n);
        return;
    }
    puts_(b, "\"");
    for (int64_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)p[k];
        char e[8];
        switch (c) {
        case '\n': puts_(b, "\\n"); break;
        case '\r': puts_(b, "\\r"); break;
        case '\t': puts_(b, "\\t"); break;
        case '"': puts_(b, "\\\""); break;
        case '\'': puts_(b, "\\'"); break;
        case '\\': puts_(b, "\\\\"); break;
        default:
            if (c < 0x20 || c == 0x7f) {
                snprintf(e, sizeof e, "\\%03o", c);
                puts_(b, e);
            } else {
                put(b, (const char *)p + k, 1);
            }
        }
    }
    puts_(b, "\"");
}

static void
put_element(sbuf *b, const tfm_tensor *t, int64_t i)
{
    const void *p = tfm_tensor_data(t);
    char s[32];
    switch (t->dtype) {
    case TFM_STRING:
        put_string(b, t, i);
        return;
    case TFM_BOOL:
        puts_(b, ((const uint8_t *)p)[i] ? "1" : "0");
        return;
    case TFM_INT64:
        snprintf(s, sizeof s, "%" PRId64, ((const int64_t *)p)[i]);
        break;
    case TFM_UINT64:
        snprintf(s, sizeof s, "%" PRIu64, ((const uint64_t *)p)[i]);
        break;
    case TFM_FLOAT16:
    case TFM_BFLOAT16:
    case TFM_FLOAT32:
        put_float(b, tfm_tensor_get_f64(t, i), 0);
        return;
    case TFM_FLOAT64:
        put_float(b, ((const double *)p)[i], 1);
        return;
    default:
        snprintf(s, sizeof s, "%lld", (long long)tfm_tensor_get_f64(t, i));
        break;
    }
    puts_(b, s);
}

static void
dim_spacing(sbuf *b, int dim, int ndim)
{
    if (dim == ndim - 1) {
        puts_(b, " ");
        return;
    }
    for (int j = 0; j < ndim - dim - 1; j++)
        puts_(b, "\n");
    for (int j = 0; j <= dim; j++)
        puts_(b, " ");
}

/* TF's PrintOneDimV2: `ends` elements from each end of every dim. */
static void
put_dim(sbuf *b, const tfm_tensor *t, int dim, int64_t ends, int64_t at)
{
    int ndim = t->shape.ndim;
    if (dim == ndim) {
        put_element(b, t, at);
        return;
    }
    puts_(b, "[");
    int64_t count = t->shape.dims[dim];
    int64_t start_of_end = count - ends > ends ? count - ends : ends;
    int64_t stride = 1;
    for (int i = dim + 1; i < ndim; i++)
        stride *= t->shape.dims[i];
    for (int64_t i = 0; i < ends && i < count; i++) {
        if (i > 0)
            dim_spacing(b, dim, ndim);
        put_dim(b, t, dim + 1, ends, at + stride * i);
    }
    if (count > 2 * ends) {
        dim_spacing(b, dim, ndim);
        puts_(b, "...");
    }
    for (int64_t i = start_of_end; i < count; i++) {
        dim_spacing(b, dim, ndim);
        put_dim(b, t, dim + 1, ends, at + stride * i);
    }
    puts_(b, "]");
}

static void
format_into(sbuf *b, const tfm_tensor *t, int summarize)
{
    int64_t n = tfm_tensor_numel(t);
    int64_t limit = summarize < 0 || summarize > n ? n : summarize;
    if (t->shape.ndim == 0) {
        for (int64_t i = 0; i < limit; i++)
            put_element(b, t, i);
        if (n > limit)
            puts_(b, "...");
        return;
    }
    put_dim(b, t, 0, limit, 0);
}

char *
tfm_format_tensor(const tfm_tensor *t, int summarize)
{
    if (tfm_tensor_is_symbolic(t)) {
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "PrintV2: cannot format a "
                  "symbolic tensor");
        return NULL;
    }
    if (t->device != 0) {
        tfm_error(TFM_ERR_UNIMPLEMENTED, "PrintV2: copy GPU tensors to the "
                  "CPU to print them");
        return NULL;
    }
    sbuf b = {0};
    puts_(&b, "");
    format_into(&b, t, summarize);
    if (b.oom) {
        free(b.p);
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM formatting a tensor");
        return NULL;
    }
    return b.p;
}

static tfm_print_fn print_hook;

void
tfm_print_set_hook(tfm_print_fn fn)
{
    print_hook = fn;
}

tfm_code
tfm_print_write(const char *text, int stream)
{
    if (print_hook)
        return print_hook(text, stream) ? tfm_error_code() : TFM_OK;
    FILE *f = stream == 1 ? stdout : stderr;
    fputs(text, f);
    fflush(f);
    return TFM_OK;
}

char *
tfm_format_line(const char *const *texts, tfm_tensor *const *t, int n,
                int summarize)
{
    sbuf b = {0};
    puts_(&b, texts[0] ? texts[0] : "");
    for (int i = 0; i < n; i++) {
        if (tfm_tensor_is_symbolic(t[i]) || t[i]->device != 0) {
            free(b.p);
            tfm_error(TFM_ERR_INVALID_ARGUMENT, "input %d to format is not "
                      "a concrete CPU tensor", i);
            return NULL;
        }
        format_into(&b, t[i], summarize);
        puts_(&b, texts[i + 1] ? texts[i + 1] : "");
    }
    if (b.oom) {
        free(b.p);
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM formatting tensors");
        return NULL;
    }
    return b.p;
}

tfm_code
tfm_print_tensors(const char *const *texts, tfm_tensor *const *t, int n,
                  int stream, int summarize)
{
    char *line = tfm_format_line(texts, t, n, summarize);
    if (!line)
        return tfm_error_code();
    tfm_code rc = tfm_print_write(line, stream);
    free(line);
    return rc;
}

/* ---- EagerPyFunc ------------------------------------------------------ */

tfm_code
tfm_infer_py_func(tfm_op op, const tfm_meta *in, int nin,
                  const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)in; (void)nin;
    const char *name = tfm_ops[op].name;
    int n = a->n_ints, k = 0;
    if (n < 1 || a->ints[0] < 0 || a->ints[0] > TFM_MAX_OUTPUTS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: ints must start "
                         "with the output count (0..%d)", name,
                         TFM_MAX_OUTPUTS);
    int count = (int)a->ints[k++];
    for (int j = 0; j < count; j++) {
        if (k + 2 > n)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: ints end "
                             "before output %d's dtype and rank", name, j);
        int64_t dt = a->ints[k++], rank = a->ints[k++];
        if (dt < 0 || dt >= TFM_DTYPE_COUNT)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: output %d has "
                             "invalid dtype %lld", name, j, (long long)dt);
        if (rank < 0 || rank > TFM_MAX_DIMS || k + rank > n)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: output %d has "
                             "invalid rank %lld", name, j, (long long)rank);
        out[j].dtype = (tfm_dtype)dt;
        out[j].shape.ndim = (int)rank;
        for (int d = 0; d < rank; d++) {
            int64_t v = a->ints[k++];
            /* -1: known when the function returns (Note [py_function
             * outputs of unknown shape] in graph/exec.c). */
            if (v < -1 || v > ((int64_t)1 << 40))
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: output %d "
                                 "dim %d is %lld", name, j, d,
                                 (long long)v);
            out[j].shape.dims[d] = v;
        }
    }
    if (k != n)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %d ints after the "
                         "last output", name, n - k);
    *nout = count;
    return TFM_OK;
}

static tfm_py_func_fn py_func_hook;

void
tfm_py_func_set_hook(tfm_py_func_fn fn)
{
    py_func_hook = fn;
}

tfm_code
tfm_k_py_func(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    if (!py_func_hook)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: no Python to "
                         "call (a py_function runs only in the process "
                         "that traced it)", tfm_ops[op].name);
    return py_func_hook(a->i[0], in, nin, out, nout) ? tfm_error_code()
                                                     : TFM_OK;
}
