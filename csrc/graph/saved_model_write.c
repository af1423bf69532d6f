/* Saved models: the writer (the layout is Note [Saved model file] in
 * saved_model.h). */
#include "saved_model_format.h"

#include "file_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/tstring.h"
#include "../runtime/graph_impl.h"

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
    /* The variable table: given ones first, then those found. */
    tfm_saved_variable *vars;
    int nvars, cap_vars;
} wbuf;

static void
put(wbuf *w, const void *src, size_t n)
{
    if (w->oom || n == 0)
        return;
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4096;
        while (cap < w->n + n)
            cap *= 2;
        unsigned char *p = realloc(w->p, cap);
        if (!p) {
            w->oom = 1;
            return;
        }
        w->p = p;
        w->cap = cap;
    }
    memcpy(w->p + w->n, src, n);
    w->n += n;
}

static void
put_u8(wbuf *w, unsigned v)
{
    unsigned char b = (unsigned char)v;
    put(w, &b, 1);
}

static void
put_u32(wbuf *w, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                          (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    put(w, b, 4);
}

static void
put_u64(wbuf *w, uint64_t v)
{
    put_u32(w, (uint32_t)v);
    put_u32(w, (uint32_t)(v >> 32));
}

static void
put_f64(wbuf *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    put_u64(w, bits);
}

static void
put_str(wbuf *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u32(w, (uint32_t)n);
    put(w, s, n);
}

static void
put_shape(wbuf *w, const tfm_shape *s)
{
    put_u8(w, (unsigned)s->ndim);
    for (int d = 0; d < s->ndim; d++)
        put_u64(w, (uint64_t)s->dims[d]);
}

static void
put_meta(wbuf *w, const tfm_meta *m)
{
    put_u8(w, (unsigned)m->dtype);
    put_shape(w, &m->shape);
}

static tfm_code
put_tensor(wbuf *w, const tfm_tensor *t, const char *what)
{
    if (tfm_tensor_is_symbolic(t) || t->device != 0)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "tf.saved_model.save: %s is "
                         "not a CPU tensor; only CPU values can be saved",
                         what);
    tfm_meta m = {t->dtype, t->shape};
    put_meta(w, &m);
    if (t->dtype == TFM_STRING) {
        /* Each element as u64 length + bytes (Note [String elements]:
         * the slots hold pointers, never written). */
        int64_t n = tfm_tensor_numel(t);
        tfm_str *const *v = tfm_tensor_strs(t);
        uint64_t total = 0;
        for (int64_t i = 0; i < n; i++)
            total += 8 + (uint64_t)tfm_str_len(v[i]);
        put_u64(w, total);
        for (int64_t i = 0; i < n; i++) {
            put_u64(w, (uint64_t)tfm_str_len(v[i]));
            put(w, tfm_str_data(v[i]), (size_t)tfm_str_len(v[i]));
        }
        return TFM_OK;
    }
    put_u64(w, (uint64_t)tfm_tensor_nbytes(t));
    put(w, tfm_tensor_data(t), tfm_tensor_nbytes(t));
    return TFM_OK;
}

/* Begin a section; returns where its length goes. */
static size_t
section_begin(wbuf *w, const char tag[4])
{
    put(w, tag, 4);
    size_t at = w->n;
    put_u64(w, 0);
    return at;
}

static void
section_end(wbuf *w, size_t at)
{
    if (w->oom)
        return;
    uint64_t len = (uint64_t)(w->n - at - 8);
    for (int k = 0; k < 8; k++)
        w->p[at + (size_t)k] = (unsigned char)(len >> (8 * k));
}

/* The table index of v, appending it when it is not listed. */
static int
var_index(wbuf *w, tfm_variable *v)
{
    for (int i = 0; i < w->nvars; i++)
        if (w->vars[i].var == v)
            return i;
    if (w->nvars == w->cap_vars) {
        int cap = w->cap_vars ? w->cap_vars * 2 : 16;
        tfm_saved_variable *t = realloc(w->vars, sizeof *t * (size_t)cap);
        if (!t) {
            w->oom = 1;
            return -1;
        }
        w->vars = t;
        w->cap_vars = cap;
    }
    w->vars[w->nvars].name = NULL;      /* named when written */
    w->vars[w->nvars].var = v;
    return w->nvars++;
}

static tfm_code
unsaveable(const tfm_graph *g, const tfm_node *n, const char *why)
{
    return tfm_error(TFM_ERR_VALUE, "tf.saved_model.save: node '%s' (%s) "
                     "of function '%s' cannot be saved: %s", n->name,
                     tfm_ops[n->op].name, tfm_graph_name(g), why);
}

static tfm_code put_graph(wbuf *w, const tfm_graph *g, int depth);

static tfm_code
put_node(wbuf *w, const tfm_graph *g, const tfm_node *n, int depth)
{
    if (n->op == TFM_OP_FUSED_ELEMENTWISE || n->op == TFM_OP_FUSED_MATMUL ||
        n->op == TFM_OP_COPY || n->prog)
        return unsaveable(g, n, "fused nodes are made by the optimizer; "
                          "save the graph as traced");
    if (n->op == TFM_OP_PRINT && n->attrs->i[0] != 1 && n->attrs->i[0] != 2)
        return unsaveable(g, n, "tf.print writes to a Python stream; only "
                          "sys.stdout and sys.stderr can be saved");
    if (n->op == TFM_OP_PY_FUNC)
        return unsaveable(g, n, "tf.py_function calls Python code, which a "
                          "saved model does not hold (a `for` loop over a "
                          "tf.data.Dataset in a tf.function pulls its "
                          "elements through one: iterate the dataset "
                          "outside the saved function)");
    put_str(w, tfm_ops[n->op].name);
    put_str(w, n->name);
    put_str(w, n->site);
    put_u32(w, (uint32_t)n->nin);
    for (int i = 0; i < n->nin; i++) {
        put_u32(w, (uint32_t)n->in[i].node);
        put_u32(w, (uint32_t)n->in[i].out);
    }
    put_u32(w, (uint32_t)n->nctrl);
    for (int i = 0; i < n->nctrl; i++)
        put_u32(w, (uint32_t)n->ctrl[i]);
    const tfm_attrs *a = n->attrs;
    put_u32(w, (uint32_t)a->n_ints);
    for (int i = 0; i < a->n_ints; i++)
        put_u64(w, (uint64_t)a->ints[i]);
    for (int i = 0; i < 6; i++)
        put_u64(w, (uint64_t)a->i[i]);
    for (int i = 0; i < 4; i++)
        put_f64(w, a->f[i]);
    put_u8(w, (unsigned)a->dtype);
    put_u32(w, (uint32_t)n->nout);
    for (int k = 0; k < n->nout; k++)
        put_meta(w, &n->out[k]);
    if (n->value) {
        put_u8(w, PAY_CONST);
        char what[300];
        snprintf(what, sizeof what, "the constant '%s' of function '%s'",
                 n->name, tfm_graph_name(g));
        return put_tensor(w, n->value, what);
    }
    if (n->var) {
        int k = var_index(w, n->var);
        put_u8(w, PAY_VAR);
        put_u32(w, (uint32_t)k);
        return TFM_OK;
    }
    if (n->text) {
        int count = n->op == TFM_OP_ASSERT ? n->nin : n->nin + 1;
        put_u8(w, PAY_TEXT);
        put_u32(w, (uint32_t)count);
        for (int i = 0; i < count; i++)
            put_str(w, n->text[i]);
        return TFM_OK;
    }
    if (n->sub[0] || n->sub[1]) {
        put_u8(w, PAY_SUB);
        for (int b = 0; b < 2; b++) {
            int m = tfm_graph_input_count(n->sub[b]);
            put_u32(w, (uint32_t)m);
            for (int i = 0; i < m; i++)
                put_u32(w, (uint32_t)n->submap[b][i]);
            tfm_code rc = put_graph(w, n->sub[b], depth + 1);
            if (rc)
                return rc;
        }
        return TFM_OK;
    }
    put_u8(w, PAY_NONE);
    return TFM_OK;
}

static tfm_code
put_graph(wbuf *w, const tfm_graph *g, int depth)
{
    if (depth > MAX_DEPTH)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "tf.saved_model.save: "
                         "control flow nested more than %d deep",
                         MAX_DEPTH);
    if (!tfm_graph_sealed(g))
        return tfm_error(TFM_ERR_VALUE, "tf.saved_model.save: function "
                         "'%s' is still being traced", tfm_graph_name(g));
    put_str(w, tfm_graph_name(g));
    int n = tfm_graph_node_count(g);
    put_u32(w, (uint32_t)n);
    for (int k = 0; k < n; k++) {
        tfm_code rc = put_node(w, g, tfm_graph_node(g, k), depth);
        if (rc)
            return rc;
    }
    int nout = tfm_graph_output_count(g);
    put_u32(w, (uint32_t)nout);
    for (int i = 0; i < nout; i++) {
        tfm_ref r = tfm_graph_output(g, i);
        put_u32(w, (uint32_t)r.node);
        put_u32(w, (uint32_t)r.out);
    }
    return TFM_OK;
}

static tfm_code
put_variables(wbuf *w)
{
    size_t at = section_begin(w, "VARS");
    put_u32(w, (uint32_t)w->nvars);
    for (int i = 0; i < w->nvars; i++) {
        const tfm_variable *v = w->vars[i].var;
        char name[64];
        if (!w->vars[i].name)
            snprintf(name, sizeof name, "variable_%d", i);
        put_str(w, w->vars[i].name ? w->vars[i].name : name);
        put_u8(w, v->trainable != 0);
        put_u8(w, v->any_rank != 0);
        put_shape(w, &v->shape);
        char what[128];
        snprintf(what, sizeof what, "the value of variable %d", i);
        tfm_code rc = put_tensor(w, v->value, what);
        if (rc)
            return rc;
    }
    section_end(w, at);
    return TFM_OK;
}

tfm_code
tfm_saved_model_encode(const tfm_saved_function *fns, int nfns,
                       const tfm_saved_variable *vars, int nvars,
                       const void *meta, size_t meta_len,
                       unsigned char **out, size_t *nout)
{
    wbuf w;
    memset(&w, 0, sizeof w);
    tfm_code rc = TFM_OK;
    *out = NULL;
    *nout = 0;
    for (int i = 0; i < nvars; i++) {
        int k = var_index(&w, vars[i].var);
        if (k >= 0 && !w.vars[k].name)
            w.vars[k].name = vars[i].name;
    }
    put(&w, tfm_saved_model_magic, 8);
    put_u32(&w, TFM_SAVED_MODEL_VERSION);
    if (meta) {
        size_t at = section_begin(&w, "META");
        put(&w, meta, meta_len);
        section_end(&w, at);
    }
    /* Functions first (they find the variables), then the variables;
     * a reader wants the variables first, so write the functions to
     * their own buffer and splice. */
    wbuf f;
    memset(&f, 0, sizeof f);
    f.vars = w.vars;
    f.nvars = w.nvars;
    f.cap_vars = w.cap_vars;
    w.vars = NULL;
    for (int i = 0; i < nfns && !rc; i++) {
        size_t at = section_begin(&f, "FUNC");
        put_str(&f, fns[i].name);
        int share = -1;
        for (int j = 0; j < i; j++)
            if (fns[j].graph == fns[i].graph) {
                share = j;
                break;
            }
        put_u32(&f, share < 0 ? NO_SHARE : (uint32_t)share);
        if (share < 0)
            rc = put_graph(&f, fns[i].graph, 0);
        section_end(&f, at);
    }
    w.vars = f.vars;
    w.nvars = f.nvars;
    w.cap_vars = f.cap_vars;
    if (!rc)
        rc = put_variables(&w);
    if (!rc)
        put(&w, f.p, f.n);
    if (!rc && !w.oom && !f.oom)
        put_u32(&w, tfm_crc32(0, w.p, w.n));
    free(f.p);
    free(w.vars);
    if (!rc && (w.oom || f.oom))
        rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM encoding a saved "
                       "model");
    if (rc) {
        free(w.p);
        return rc;
    }
    *out = w.p;
    *nout = w.n;
    return TFM_OK;
}

tfm_code
tfm_saved_model_save(const char *export_dir, const tfm_saved_function *fns,
                     int nfns, const tfm_saved_variable *vars, int nvars,
                     const void *meta, size_t meta_len)
{
    unsigned char *data;
    size_t n;
    tfm_code rc = tfm_saved_model_encode(fns, nfns, vars, nvars, meta,
                                         meta_len, &data, &n);
    if (rc)
        return rc;
    if (mkdir(export_dir, 0777) != 0 && errno != EEXIST) {
        free(data);
        return tfm_error(TFM_ERR_NOT_FOUND, "tf.saved_model.save: cannot "
                         "make the directory %s: %s", export_dir,
                         strerror(errno));
    }
    char *path = tfm_saved_model_path(export_dir, TFM_SAVED_MODEL_FILE);
    rc = path ? tfm_file_write_atomic(path, data, n, "tf.saved_model.save")
         : tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM saving a model");
    free(path);
    free(data);
    return rc;
}
