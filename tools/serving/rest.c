/* The endpoints (TF Serving's REST API, as documented for 2.x):
 *   GET  /v1/models/{name}[/versions/{v}]           version status
 *   GET  /v1/models/{name}[/versions/{v}]/metadata  signature defs
 *   POST /v1/models/{name}[/versions/{v}]:predict   row ("instances") or
 *                                                   columnar ("inputs")
 * Errors are {"error": "..."} with TF Serving's codes: 400 for a bad
 * request, 404 for an unknown model, version or path. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "jparse.h"
#include "jsonw.h"
#include "rest.h"

static reply
error(unsigned status, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_t *body = json_pack("{s:s}", "error", buf);
    if (!body) {
        /* jansson takes UTF-8 only, and a request's bytes (a signature
         * or input name) may be quoted in buf. */
        for (char *c = buf; *c; c++)
            if ((unsigned char)*c >= 0x80)
                *c = '?';
        body = json_pack("{s:s}", "error", buf);
    }
    return (reply){status, body, NULL, 0};
}

/* ---- metadata ---- */

static json_t *
tensor_info(json_t *spec_entry)
{
    /* spec_entry: [name, {"spec": [dtype, dims|null, name]}] */
    const char *name = json_string_value(json_array_get(spec_entry, 0));
    json_t *spec = json_object_get(json_array_get(spec_entry, 1), "spec");
    int dt = dtype_from_name(json_string_value(json_array_get(spec, 0)));
    json_t *dims = json_array_get(spec, 1);
    json_t *shape = json_object();
    if (json_is_array(dims)) {
        json_t *dim = json_array();
        size_t i;
        json_t *d;
        json_array_foreach(dims, i, d) {
            char size[24];
            snprintf(size, sizeof size, "%lld", json_is_integer(d) ?
                     (long long)json_integer_value(d) : -1LL);
            json_array_append_new(dim, json_pack("{s:s,s:s}", "size", size,
                                                 "name", ""));
        }
        json_object_set_new(shape, "dim", dim);
        json_object_set_new(shape, "unknown_rank", json_false());
    } else {
        json_object_set_new(shape, "unknown_rank", json_true());
    }
    char tname[256];
    snprintf(tname, sizeof tname, "%s:0", name ? name : "");
    return json_pack("{s:s,s:o,s:s}", "dtype",
                     dtype_tf_name((TFM_DataType)dt), "tensor_shape", shape,
                     "name", tname);
}

static json_t *
signature_def(json_t *sig)
{
    json_t *in = json_object(), *out = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(sig, "inputs"), i, e)
        json_object_set_new(in, json_string_value(json_array_get(e, 0)),
                            tensor_info(e));
    json_array_foreach(json_object_get(sig, "outputs"), i, e)
        json_object_set_new(out, json_string_value(json_array_get(e, 0)),
                            tensor_info(e));
    return json_pack("{s:o,s:o,s:s}", "inputs", in, "outputs", out,
                     "method_name", "tensorflow/serving/predict");
}

static reply
metadata(const char *name, version *v)
{
    json_t *defs = json_object();
    const char *key;
    json_t *sig;
    json_object_foreach(v->signatures, key, sig)
        json_object_set_new(defs, key, signature_def(sig));
    char ver[24];
    snprintf(ver, sizeof ver, "%lld", (long long)v->number);
    return (reply){200, json_pack(
        "{s:{s:s,s:s,s:s},s:{s:{s:o}}}", "model_spec", "name", name,
        "signature_name", "", "version", ver, "metadata", "signature_def",
        "signature_def", defs), NULL, 0};
}

static reply
status(version *v)
{
    char ver[24];
    snprintf(ver, sizeof ver, "%lld", (long long)v->number);
    return (reply){200, json_pack(
        "{s:[{s:s,s:s,s:{s:s,s:s}}]}", "model_version_status", "version",
        ver, "state", "AVAILABLE", "status", "error_code", "OK",
        "error_message", ""), NULL, 0};
}

/* ---- predict ---- */

/* The function for signature `key` and its entry, or an error reply. */
static int
find_signature(version *v, const char *key, json_t **sig, int *fn,
               reply *err)
{
    *sig = json_object_get(v->signatures, key);
    *fn = *sig ? tfmini_model_find(v->model, key) : -1;
    if (!*sig || *fn < 0) {
        *err = error(400, "Serving signature name: \"%s\" not found in "
                     "signature def", key);
        return -1;
    }
    json_t *ins = json_object_get(*sig, "inputs");
    json_t *outs = json_object_get(*sig, "outputs");
    if (json_array_size(ins) != (size_t)tfmini_model_input_count(
            v->model, *fn) || json_array_size(outs) != (size_t)
            tfmini_model_output_count(v->model, *fn)) {
        *err = error(500, "signature \"%s\" disagrees with its function",
                     key);
        return -1;
    }
    return 0;
}

/* A predict between parsing and replying: its job (first, so that the
 * job's wake context finds it) and what the reply needs. */
struct rest_pending {
    predict_job job;
    served_model *s;
    version *v;             /* held until rest_finish */
    json_t *out_specs;      /* v's */
    int instances, rows;
    int heap;               /* 0: the thread's own (see predict) */
};

/* A predict that is not queued starts and ends in one call on one
 * thread: it uses that thread's pending, kept from one request to the
 * next. A fresh one would be a 3 KiB calloc a request, which glibc
 * serves from its large bins after consolidating the fast ones. */
static __thread rest_pending thread_pending;

/* The thread's pending, emptied (msg is left: it is written before it
 * is read). */
static rest_pending *
pending_reuse(void)
{
    rest_pending *p = &thread_pending;
    predict_job *j = &p->job;
    j->model = NULL;
    j->fn = j->nin = j->nout = 0;
    memset(j->in, 0, sizeof j->in);
    memset(j->out, 0, sizeof j->out);
    j->code = TFMINI_OK;
    j->msg[0] = '\0';
    j->wake = NULL;
    j->ctx = NULL;
    j->rows = j->enqueued_us = 0;
    j->next = NULL;
    p->s = NULL;
    p->v = NULL;
    p->out_specs = NULL;
    p->instances = p->rows = 0;
    p->heap = 0;
    return p;
}

static void
pending_free(rest_pending *p)
{
    for (int i = 0; i < MAX_IO; i++) {
        tfmini_tensor_free(p->job.in[i]);
        tfmini_tensor_free(p->job.out[i]);
        p->job.in[i] = p->job.out[i] = NULL;
    }
    served_model_release(p->s, p->v);
    p->s = NULL;
    p->v = NULL;
    if (p->heap)
        free(p);
}

/* Read req into p's input tensors; 0, or -1 with *r set. */
static int
predict_inputs(rest_pending *p, const jnode *req, reply *r)
{
    version *v = p->v;
    if (!jp_is_object(req)) {
        *r = error(400, "the request body must be a JSON object");
        return -1;
    }
    const jnode *key = jp_get(req, "signature_name");
    if (key && !jp_is_string(key)) {
        *r = error(400, "signature_name must be a string");
        return -1;
    }
    json_t *sig;
    int fn;
    if (find_signature(v, key ? jp_string(key) : "serving_default", &sig,
                       &fn, r))
        return -1;
    const jnode *instances = jp_get(req, "instances");
    const jnode *inputs = jp_get(req, "inputs");
    if (!!instances == !!inputs) {
        *r = error(400, "the request must have exactly one of "
                   "\"instances\" (row format) or \"inputs\" (columnar "
                   "format)");
        return -1;
    }
    json_t *in_specs = json_object_get(sig, "inputs");
    p->out_specs = json_object_get(sig, "outputs");
    int nin = (int)json_array_size(in_specs);
    int nout = (int)json_array_size(p->out_specs);
    if (nin > MAX_IO || nout > MAX_IO) {
        *r = error(400, "the signature has too many inputs or outputs");
        return -1;
    }
    p->job.model = v->model;
    p->job.fn = fn;
    p->job.nin = nin;
    p->job.nout = nout;
    p->instances = instances != NULL;
    if (instances) {
        size_t rows = jp_count(instances);
        if (!jp_is_array(instances) || rows == 0) {
            *r = error(400, "\"instances\" must be a non-empty list");
            return -1;
        }
        if (rows > INT32_MAX) {
            *r = error(400, "\"instances\" has too many rows");
            return -1;
        }
        p->rows = (int)rows;
    }
    char err[512];
    for (int i = 0; i < nin; i++) {
        const char *name = json_string_value(json_array_get(
            json_array_get(in_specs, i), 0));
        TFM_DataType dt = tfmini_model_input_dtype(v->model, fn, i);
        const jnode *value = NULL;
        const char *member = NULL;
        if (instances && nin == 1 &&
            !jp_is_object(jp_first(instances))) {
            value = instances;
        } else if (instances) {
            /* Rows of named inputs: input i is member `name` of each. */
            value = instances;
            member = name ? name : "";
            size_t k = 0;
            for (const jnode *row = jp_first(instances); row;
                 row = jp_next(row), k++)
                if (!jp_get(row, member)) {
                    *r = error(400, "instance %zu has no input \"%s\"", k,
                               member);
                    return -1;
                }
        } else if (jp_is_object(inputs)) {
            value = jp_get(inputs, name ? name : "");
            if (!value) {
                *r = error(400, "\"inputs\" has no input \"%s\"", name);
                return -1;
            }
        } else if (nin == 1) {
            value = inputs;
        } else {
            *r = error(400, "\"inputs\" must be an object naming the %d "
                       "inputs", nin);
            return -1;
        }
        p->job.in[i] = json_to_tensor(value, dt, p->rows, member, err,
                                      sizeof err);
        if (!p->job.in[i]) {
            *r = error(400, "input \"%s\": %s", name, err);
            return -1;
        }
    }
    return 0;
}

static const char *
output_name(rest_pending *p, int j)
{
    const char *n = json_string_value(json_array_get(
        json_array_get(p->out_specs, j), 0));
    return n ? n : "";
}

/* The reply to a predict that has run. */
static reply
predict_reply(rest_pending *p)
{
    predict_job *job = &p->job;
    int nout = job->nout, rows = p->rows;
    TFM_Tensor **out = job->out;
    if (job->code != TFMINI_OK)
        return error(job->code == TFMINI_RESOURCE_EXHAUSTED ? 503 : 400,
                     "%s", job->msg);
    if (p->instances)
        for (int j = 0; j < nout; j++)
            if (tfmini_tensor_rank(out[j]) == 0 ||
                tfmini_tensor_dim(out[j], 0) != rows)
                return error(400, "output %d does not have one row per "
                             "instance: use the columnar format "
                             "(\"inputs\")", j);
    /* Written as text (jsonw.h): no tree, no allocation per number. */
    jbuf *b = jb_thread();
    if (p->instances) {
        jb_str(b, "{\"predictions\":[");
        for (int k = 0; k < rows; k++) {
            if (k)
                jb_put(b, ",", 1);
            if (nout == 1) {
                jb_tensor(b, out[0], k);
                continue;
            }
            jb_put(b, "{", 1);
            for (int j = 0; j < nout; j++) {
                if (j)
                    jb_put(b, ",", 1);
                jb_quoted(b, output_name(p, j));
                jb_put(b, ":", 1);
                jb_tensor(b, out[j], k);
            }
            jb_put(b, "}", 1);
        }
        jb_str(b, "]}");
    } else if (nout == 1) {
        jb_str(b, "{\"outputs\":");
        jb_tensor(b, out[0], -1);
        jb_str(b, "}");
    } else {
        jb_str(b, "{\"outputs\":{");
        for (int j = 0; j < nout; j++) {
            if (j)
                jb_put(b, ",", 1);
            jb_quoted(b, output_name(p, j));
            jb_put(b, ":", 1);
            jb_tensor(b, out[j], -1);
        }
        jb_str(b, "}}");
    }
    if (b->failed)
        return error(503, "out of memory for the reply");
    return (reply){200, NULL, b->p, b->len};
}

reply
rest_finish(rest_pending *p)
{
    reply r = predict_reply(p);
    pending_free(p);
    return r;
}

/* Run (or with a batcher, queue) the predict in body on s's version v,
 * whose reference it takes over. */
static reply
predict(served_model *s, version *v, const char *body, size_t len,
        const rest_defer *defer, rest_pending **queued)
{
    /* Only a predict that may be queued needs a pending of its own. */
    rest_pending *p;
    if (defer && defer->batcher) {
        if (!(p = calloc(1, sizeof *p))) {
            served_model_release(s, v);
            return error(503, "out of memory");
        }
        p->heap = 1;
    } else {
        p = pending_reuse();
    }
    p->s = s;
    p->v = v;
    /* The request tree lives in this thread's arena (jparse.h) until
     * jp_end: it is read into tensors and dropped before the run. */
    char err[512];
    const jnode *req = jp_parse(body, len, err, sizeof err);
    reply r;
    int bad = req ? predict_inputs(p, req, &r) : -1;
    if (!req)
        r = error(400, "%s", err);
    jp_end();
    if (bad) {
        pending_free(p);
        return r;
    }
    if (defer && defer->batcher) {
        p->job.wake = defer->wake;
        p->job.ctx = defer->ctx;
        int how = batcher_submit(defer->batcher, &p->job);
        if (how == 0) {
            *queued = p;
            return (reply){0, NULL, NULL, 0};
        }
        if (how < 0) {
            r = error(503, "%s", p->job.msg);
            pending_free(p);
            return r;
        }
    }
    job_run(&p->job);
    return rest_finish(p);
}

/* ---- routing ---- */

reply
rest_handle(served_model **models, int nmodels, const char *method,
            const char *url, const char *body, size_t len,
            const rest_defer *defer, rest_pending **queued)
{
    static const char prefix[] = "/v1/models/";
    if (strncmp(url, prefix, sizeof prefix - 1) != 0)
        return error(404, "Malformed request: %s %s", method, url);
    char path[512];
    snprintf(path, sizeof path, "%s", url + sizeof prefix - 1);
    /* name[/versions/N][/metadata | :predict] */
    char *verb = strrchr(path, ':');
    if (verb)
        *verb++ = '\0';
    char *rest = strchr(path, '/');
    if (rest)
        *rest++ = '\0';
    long long want = -1;
    int is_meta = 0;
    if (rest && strncmp(rest, "versions/", 9) == 0) {
        char *end;
        want = strtoll(rest + 9, &end, 10);
        if (end == rest + 9 || want < 0)
            return error(404, "Malformed request: %s %s", method, url);
        rest = *end == '/' ? end + 1 : *end ? (char *)"?" : NULL;
    }
    if (rest) {
        if (strcmp(rest, "metadata") != 0)
            return error(404, "Malformed request: %s %s", method, url);
        is_meta = 1;
    }
    if (verb && (strcmp(verb, "predict") != 0 || is_meta))
        return error(404, "Malformed request: %s %s", method, url);
    int post = strcmp(method, "POST") == 0;
    if (verb ? !post : strcmp(method, "GET") != 0)
        return error(405, "%s %s: use %s", method, url,
                     verb ? "POST" : "GET");
    served_model *s = NULL;
    for (int i = 0; i < nmodels && !s; i++)
        if (strcmp(served_model_name(models[i]), path) == 0)
            s = models[i];
    if (!s)
        return error(404, "Servable not found for request: Latest(%s)",
                     path);
    version *v = served_model_acquire(s);
    reply r;
    if (!v || (want >= 0 && v->number != want)) {
        r = want >= 0 ? error(404, "Servable not found for request: "
                              "Specific(%s, %lld)", path, want)
                      : error(404, "Servable not found for request: "
                              "Latest(%s)", path);
    } else if (is_meta) {
        r = metadata(path, v);
    } else if (!verb) {
        r = status(v);
    } else {
        return predict(s, v, body, len, defer, queued);
    }
    if (v)
        served_model_release(s, v);
    return r;
}
