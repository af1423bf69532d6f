/* The C runtime's models: load, describe and run a saved model
 * (include/tfmini/tfmini.h) over graph/saved_model.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/saved_model.h"
#include "rt_impl.h"

struct TFM_Model {
    tfm_saved_model *sm;
    char *meta;             /* NUL-terminated copy, or NULL */
    size_t meta_len;
    char ***out_names;      /* [fn][k] "output_<k>" */
};

static void
free_names(TFM_Model *m)
{
    if (!m->out_names)
        return;
    for (int f = 0; f < m->sm->nfuncs; f++) {
        if (!m->out_names[f])
            continue;
        int n = tfm_graph_output_count(m->sm->funcs[f]->graph);
        for (int k = 0; k < n; k++)
            free(m->out_names[f][k]);
        free(m->out_names[f]);
    }
    free(m->out_names);
}

static int
make_names(TFM_Model *m)
{
    m->out_names = calloc((size_t)m->sm->nfuncs + 1, sizeof(char **));
    if (!m->out_names)
        return -1;
    for (int f = 0; f < m->sm->nfuncs; f++) {
        int n = tfm_graph_output_count(m->sm->funcs[f]->graph);
        m->out_names[f] = calloc((size_t)n + 1, sizeof(char *));
        if (!m->out_names[f])
            return -1;
        for (int k = 0; k < n; k++) {
            char buf[32];
            snprintf(buf, sizeof buf, "output_%d", k);
            if (!(m->out_names[f][k] = strdup(buf)))
                return -1;
        }
    }
    return 0;
}

TFM_Model *
tfmini_model_load(const char *export_dir, TFM_Status *status)
{
    if (!export_dir) {
        tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                    "tfmini_model_load: export_dir is NULL");
        return NULL;
    }
    TFM_Model *m = calloc(1, sizeof *m);
    if (!m) {
        tfm_rt_fail(status, TFMINI_RESOURCE_EXHAUSTED,
                    "tfmini_model_load: out of memory");
        return NULL;
    }
    tfm_rt_lock();
    m->sm = tfm_saved_model_load(export_dir);
    if (!m->sm) {
        tfm_rt_core_error(status);
        tfm_rt_unlock();
        free(m);
        return NULL;
    }
    tfm_rt_unlock();
    if (m->sm->meta) {
        m->meta = malloc(m->sm->meta_len + 1);
        if (m->meta) {
            memcpy(m->meta, m->sm->meta, m->sm->meta_len);
            m->meta[m->sm->meta_len] = '\0';
            m->meta_len = m->sm->meta_len;
        }
    }
    if ((m->sm->meta && !m->meta) || make_names(m)) {
        tfmini_model_free(m);
        tfm_rt_fail(status, TFMINI_RESOURCE_EXHAUSTED,
                    "tfmini_model_load: out of memory");
        return NULL;
    }
    tfm_rt_ok(status);
    return m;
}

void
tfmini_model_free(TFM_Model *m)
{
    if (!m)
        return;
    free_names(m);
    free(m->meta);
    tfm_rt_lock();
    tfm_saved_model_free(m->sm);
    tfm_rt_unlock();
    free(m);
}

int
tfmini_model_function_count(const TFM_Model *m)
{
    return m->sm->nfuncs;
}

static const tfm_graph *
graph_of(const TFM_Model *m, int fn)
{
    return fn >= 0 && fn < m->sm->nfuncs ? m->sm->funcs[fn]->graph : NULL;
}

const char *
tfmini_model_function_name(const TFM_Model *m, int fn)
{
    return graph_of(m, fn) ? m->sm->func_names[fn] : NULL;
}

int
tfmini_model_find(const TFM_Model *m, const char *name)
{
    return name ? tfm_saved_model_find(m->sm, name) : -1;
}

const char *
tfmini_model_meta(const TFM_Model *m, size_t *len)
{
    if (len)
        *len = m->meta_len;
    return m->meta;
}

int
tfmini_model_input_count(const TFM_Model *m, int fn)
{
    const tfm_graph *g = graph_of(m, fn);
    return g ? tfm_graph_input_count(g) : 0;
}

int
tfmini_model_output_count(const TFM_Model *m, int fn)
{
    const tfm_graph *g = graph_of(m, fn);
    return g ? tfm_graph_output_count(g) : 0;
}

/* Input i's placeholder, or NULL. */
static const tfm_node *
input_node(const TFM_Model *m, int fn, int i)
{
    const tfm_graph *g = graph_of(m, fn);
    if (!g || i < 0 || i >= tfm_graph_input_count(g))
        return NULL;
    return tfm_graph_node(g, tfm_graph_input(g, i));
}

static const tfm_meta *
output_meta(const TFM_Model *m, int fn, int i)
{
    const tfm_graph *g = graph_of(m, fn);
    if (!g || i < 0 || i >= tfm_graph_output_count(g))
        return NULL;
    tfm_ref r = tfm_graph_output(g, i);
    return &tfm_graph_node(g, r.node)->out[r.out];
}

const char *
tfmini_model_input_name(const TFM_Model *m, int fn, int i)
{
    const tfm_node *n = input_node(m, fn, i);
    return n ? n->name : NULL;
}

const char *
tfmini_model_output_name(const TFM_Model *m, int fn, int i)
{
    return output_meta(m, fn, i) ? m->out_names[fn][i] : NULL;
}

TFM_DataType
tfmini_model_input_dtype(const TFM_Model *m, int fn, int i)
{
    const tfm_node *n = input_node(m, fn, i);
    return n ? (TFM_DataType)n->out[0].dtype : (TFM_DataType)-1;
}

TFM_DataType
tfmini_model_output_dtype(const TFM_Model *m, int fn, int i)
{
    const tfm_meta *mt = output_meta(m, fn, i);
    return mt ? (TFM_DataType)mt->dtype : (TFM_DataType)-1;
}

static int
copy_shape(const tfm_meta *mt, int64_t *dims, int max_dims)
{
    if (!mt)
        return -1;
    for (int d = 0; d < mt->shape.ndim && d < max_dims && dims; d++)
        dims[d] = mt->shape.dims[d];
    return mt->shape.ndim;
}

int
tfmini_model_input_shape(const TFM_Model *m, int fn, int i, int64_t *dims,
                         int max_dims)
{
    const tfm_node *n = input_node(m, fn, i);
    return copy_shape(n ? &n->out[0] : NULL, dims, max_dims);
}

int
tfmini_model_output_shape(const TFM_Model *m, int fn, int i, int64_t *dims,
                          int max_dims)
{
    return copy_shape(output_meta(m, fn, i), dims, max_dims);
}

TFM_Code
tfmini_model_run(TFM_Model *m, int fn, TFM_Tensor *const *inputs, int nin,
                 TFM_Tensor **outputs, int nout, TFM_Status *status)
{
    if (!m)
        return tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                           "tfmini_model_run: the model is NULL");
    const tfm_graph *g = graph_of(m, fn);
    if (!g)
        return tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                           "tfmini_model_run: the model has no function %d "
                           "(it has %d)", fn, m->sm->nfuncs);
    const char *name = m->sm->func_names[fn];
    int want_in = tfm_graph_input_count(g), want_out = tfm_graph_output_count(g);
    if (nout > 0 && outputs)
        memset(outputs, 0, sizeof(TFM_Tensor *) * (size_t)nout);
    if (nin != want_in || (nin > 0 && !inputs))
        return tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                           "tfmini_model_run: '%s' takes %d inputs, got %d",
                           name, want_in, nin);
    if (nout != want_out || (nout > 0 && !outputs))
        return tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                           "tfmini_model_run: '%s' gives %d outputs, room "
                           "was given for %d", name, want_out, nout);
    tfm_tensor *in_local[16], *out_local[16];
    tfm_tensor **in = nin <= 16 ? in_local : malloc(sizeof *in * nin);
    tfm_tensor **out = nout <= 16 ? out_local : calloc(nout, sizeof *out);
    TFM_Tensor **wrap = calloc((size_t)nout + 1, sizeof *wrap);
    TFM_Code rc = TFMINI_OK;
    if (!in || !out || !wrap) {
        rc = tfm_rt_fail(status, TFMINI_RESOURCE_EXHAUSTED,
                         "tfmini_model_run: out of memory");
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        if (!inputs[i]) {
            rc = tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                             "tfmini_model_run: input %d ('%s') of '%s' is "
                             "NULL", i, tfmini_model_input_name(m, fn, i),
                             name);
            goto done;
        }
        in[i] = inputs[i]->t;
    }
    for (int k = 0; k < nout; k++)
        if (!(wrap[k] = malloc(sizeof(TFM_Tensor)))) {
            rc = tfm_rt_fail(status, TFMINI_RESOURCE_EXHAUSTED,
                             "tfmini_model_run: out of memory");
            goto done;
        }
    memset(out, 0, sizeof *out * (size_t)nout);
    tfm_rt_lock();
    if (tfm_saved_model_call(m->sm, fn, in, nin, out) != TFM_OK)
        rc = tfm_rt_core_error(status);
    tfm_rt_unlock();
    if (rc == TFMINI_OK) {
        for (int k = 0; k < nout; k++) {
            wrap[k]->t = out[k];
            outputs[k] = wrap[k];
            wrap[k] = NULL;
        }
        tfm_rt_ok(status);
    }
done:
    if (wrap)
        for (int k = 0; k < nout; k++)
            free(wrap[k]);
    free(wrap);
    if (in != in_local)
        free(in);
    if (out != out_local)
        free(out);
    return rc;
}
