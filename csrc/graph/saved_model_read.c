/* Saved models: the checking reader, and calls into a loaded model
 * (the layout is Note [Saved model file] in saved_model.h). */
#include "saved_model_format.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/tstring.h"
#include "../runtime/graph_impl.h"

/* Longest string a file may hold (names, sites, print texts). */
#define MAX_STR (1u << 20)
#define MAX_DIM ((int64_t)1 << 40)

/* A node's payload kind in the file is the one its op's row names. */
_Static_assert(PAY_NONE == (int)TFM_PAYLOAD_NONE &&
               PAY_CONST == (int)TFM_PAYLOAD_CONST &&
               PAY_VAR == (int)TFM_PAYLOAD_VAR &&
               PAY_TEXT == (int)TFM_PAYLOAD_TEXT &&
               PAY_SUB == (int)TFM_PAYLOAD_SUB,
               "saved_model_format.h's PAY_* and op.h's tfm_payload differ");

/* Every read is bounds-checked against what is left of the file; the
 * first failure records a message naming what was being read and
 * where, and every later read fails too, so callers check once. */
typedef struct rbuf {
    const unsigned char *p;
    size_t n, pos;
    const char *origin;
    int failed;
} rbuf;

static tfm_code bad(rbuf *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static tfm_code
bad(rbuf *r, const char *fmt, ...)
{
    if (!r->failed) {
        char msg[300];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        tfm_error(TFM_ERR_DATA_LOSS, "saved model %s is corrupt: %s (at "
                  "byte %zu)", r->origin, msg, r->pos);
    }
    r->failed = 1;
    return TFM_ERR_DATA_LOSS;
}

static int
need(rbuf *r, size_t k, const char *what)
{
    if (r->failed)
        return 0;
    if (k > r->n - r->pos) {
        bad(r, "truncated: %s needs %lld more bytes", what,
            (long long)(k - (r->n - r->pos)));
        return 0;
    }
    return 1;
}

static uint64_t
get_le(rbuf *r, int bytes, const char *what)
{
    if (!need(r, (size_t)bytes, what))
        return 0;
    uint64_t v = 0;
    for (int k = 0; k < bytes; k++)
        v |= (uint64_t)r->p[r->pos + (size_t)k] << (8 * k);
    r->pos += (size_t)bytes;
    return v;
}

static unsigned
get_u8(rbuf *r, const char *what)
{
    return (unsigned)get_le(r, 1, what);
}

static uint32_t
get_u32(rbuf *r, const char *what)
{
    return (uint32_t)get_le(r, 4, what);
}

static int64_t
get_i64(rbuf *r, const char *what)
{
    return (int64_t)get_le(r, 8, what);
}

/* A count of items at least min_bytes each: no more than the rest of
 * the file can hold (so nothing is allocated for a lying count). */
static uint32_t
get_count(rbuf *r, size_t min_bytes, uint32_t limit, const char *what)
{
    uint32_t c = get_u32(r, what);
    if (r->failed)
        return 0;
    if (c > limit || (uint64_t)c * min_bytes > r->n - r->pos) {
        bad(r, "%s is %lld, more than the file can hold", what, (long long)c);
        return 0;
    }
    return c;
}

/* Whether p[0..n) is UTF-8 (no overlong forms, surrogates or code
 * points past U+10FFFF): names become Python strs, which need it. */
static int
utf8_ok(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2
                   : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!len || len > n - i)
            return 0;
        uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

/* A string into dst (cap bytes, NUL-terminated), or a malloc'ed copy
 * when dst is NULL. */
static char *
get_str(rbuf *r, char *dst, size_t cap, const char *what)
{
    uint32_t len = get_u32(r, what);
    if (r->failed)
        return NULL;
    if (len > MAX_STR || (dst && len >= cap)) {
        bad(r, "%s is %lld bytes long", what, (long long)len);
        return NULL;
    }
    if (!need(r, len, what))
        return NULL;
    if (memchr(r->p + r->pos, 0, len)) {
        bad(r, "%s holds a NUL byte", what);
        return NULL;
    }
    if (!utf8_ok(r->p + r->pos, len)) {
        bad(r, "%s is not UTF-8", what);
        return NULL;
    }
    char *s = dst ? dst : malloc((size_t)len + 1);
    if (!s) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM reading a saved model");
        r->failed = 1;
        return NULL;
    }
    memcpy(s, r->p + r->pos, len);
    s[len] = '\0';
    r->pos += len;
    return s;
}

static void
get_shape(rbuf *r, tfm_shape *s, int known, const char *what)
{
    unsigned nd = get_u8(r, what);
    s->ndim = 0;
    if (nd > TFM_MAX_DIMS) {
        bad(r, "%s has rank %lld", what, (long long)nd);
        return;
    }
    s->ndim = (int)nd;
    for (unsigned d = 0; d < nd; d++) {
        s->dims[d] = get_i64(r, what);
        /* No real tensor has a dim near 2^40: bigger ones could only
         * overflow the products that shape rules compute. */
        if (s->dims[d] < (known ? 0 : -1) || s->dims[d] > MAX_DIM) {
            bad(r, "%s has a dim of %lld", what, (long long)s->dims[d]);
            return;
        }
    }
}

static void
get_meta(rbuf *r, tfm_meta *m, int known, const char *what)
{
    unsigned d = get_u8(r, what);
    m->dtype = TFM_FLOAT32;
    if (!r->failed && d >= TFM_DTYPE_COUNT) {
        bad(r, "%s has an unknown dtype %lld", what, (long long)d);
        return;
    }
    m->dtype = (tfm_dtype)d;
    get_shape(r, &m->shape, known, what);
}

/* A string tensor's elements: numel times (u64 length, bytes), nbytes
 * in all (see put_tensor). */
static tfm_tensor *
get_strings(rbuf *r, const tfm_meta *m, uint64_t numel, uint64_t nbytes,
            const char *what)
{
    uint64_t left = (uint64_t)(r->n - r->pos);
    if (numel > left / 8 || nbytes > left || nbytes < numel * 8) {
        bad(r, "%s holds %lld bytes, not what its shape needs", what,
            (long long)nbytes);
        return NULL;
    }
    size_t end = r->pos + (size_t)nbytes;
    tfm_tensor *t = tfm_tensor_new(TFM_STRING, &m->shape, 0);
    if (!t) {
        r->failed = 1;
        return NULL;
    }
    tfm_str **v = tfm_tensor_strs(t);
    for (uint64_t i = 0; i < numel && !r->failed; i++) {
        uint64_t len = (uint64_t)get_i64(r, what);
        if (r->failed)
            break;
        if (len > end - r->pos) {
            bad(r, "%s: a string of %llu bytes runs past its tensor", what,
                (unsigned long long)len);
            break;
        }
        if (!(v[i] = tfm_str_new((const char *)r->p + r->pos,
                                 (int64_t)len))) {
            r->failed = 1;
            break;
        }
        tfm_str_incref(v[i]);
        r->pos += (size_t)len;
    }
    if (!r->failed && r->pos != end)
        bad(r, "%s: %zu bytes left over after its strings", what,
            end - r->pos);
    if (r->failed) {
        tfm_tensor_decref(t);
        return NULL;
    }
    return t;
}

static tfm_tensor *
get_tensor(rbuf *r, const char *what)
{
    tfm_meta m;
    get_meta(r, &m, 1, what);
    uint64_t nbytes = (uint64_t)get_i64(r, what);
    if (r->failed)
        return NULL;
    /* The element count, without overflow: each dim is bounded by the
     * bytes left, and the product is checked against them step by
     * step. */
    uint64_t numel = 1, left = (uint64_t)(r->n - r->pos);
    for (int d = 0; d < m.shape.ndim; d++) {
        uint64_t dim = (uint64_t)m.shape.dims[d];
        if (dim && numel > left / dim + 1) {
            bad(r, "%s claims %lld elements", what, (long long)numel);
            return NULL;
        }
        numel *= dim;
    }
    if (m.dtype == TFM_STRING)
        return get_strings(r, &m, numel, nbytes, what);
    size_t esize = tfm_dtype_size(m.dtype);
    if (numel > left / (esize ? esize : 1) || nbytes != numel * esize) {
        bad(r, "%s holds %lld bytes, not what its shape needs", what,
            (long long)nbytes);
        return NULL;
    }
    if (!need(r, (size_t)nbytes, what))
        return NULL;
    tfm_tensor *t = tfm_tensor_new(m.dtype, &m.shape, 0);
    if (!t) {
        r->failed = 1;
        return NULL;
    }
    if (nbytes)
        memcpy(tfm_tensor_data(t), r->p + r->pos, (size_t)nbytes);
    r->pos += (size_t)nbytes;
    return t;
}

static void
get_attrs(rbuf *r, tfm_attrs *a)
{
    tfm_attrs_init(a);
    uint32_t n = get_u32(r, "attribute list");
    if (!r->failed && n > TFM_MAX_ATTR_INTS) {
        bad(r, "%s has %lld entries", "attribute list", (long long)n);
        return;
    }
    a->n_ints = (int)n;
    for (uint32_t i = 0; i < n; i++)
        a->ints[i] = get_i64(r, "attribute list");
    for (int i = 0; i < 6; i++)
        a->i[i] = get_i64(r, "attributes");
    for (int i = 0; i < 4; i++) {
        uint64_t bits = (uint64_t)get_i64(r, "attributes");
        memcpy(&a->f[i], &bits, 8);
    }
    unsigned d = get_u8(r, "attributes");
    if (!r->failed && d >= TFM_DTYPE_COUNT) {
        bad(r, "%s name an unknown dtype %lld", "attributes", (long long)d);
        return;
    }
    a->dtype = (tfm_dtype)d;
}

typedef struct reader {
    rbuf r;
    tfm_saved_model *m;
} reader;

static int
meta_equal(const tfm_meta *a, const tfm_meta *b)
{
    return a->dtype == b->dtype && tfm_shape_equal(&a->shape, &b->shape);
}

static const tfm_meta *
ref_meta(const tfm_graph *g, tfm_ref r)
{
    return &tfm_graph_node(g, r.node)->out[r.out];
}

/* Why node n (inputs already checked to exist) is inconsistent, or
 * NULL. These are the invariants the executor relies on: outputs as the
 * op's shape rule gives them, payloads of the right kind and size,
 * sub-graphs that fit their node. Errors the rule itself raises are
 * left set for the caller. */
static const char *
check_node(const tfm_graph *g, const tfm_node *n, const tfm_meta *in)
{
    const tfm_op_def *d = &tfm_ops[n->op];
    static char why[200];
    if (d->n_inputs >= 0 && n->nin != d->n_inputs)
        return "wrong number of inputs";
    if (tfm_op_payload(n->op) == TFM_PAYLOAD_PROG)
        return "fused nodes are never saved";
    switch (n->op) {
    case TFM_OP_COPY:
        return "device copies are never saved";
    case TFM_OP_PY_FUNC:
        /* It would call whatever Python function has its token here. */
        return "tf.py_function nodes are never saved";
    case TFM_OP_PRINT:
        if (n->attrs->i[0] != 1 && n->attrs->i[0] != 2)
            return "tf.print to an unknown stream";
        /* The executor computes no outputs for a print or an assert: a
         * node reading one would read a tensor that never exists. */
        if (n->nout)
            return "a print has no outputs";
        return NULL;
    case TFM_OP_ASSERT:
        if (n->nin < 1)
            return "tf.Assert without a condition";
        if (n->nout)
            return "an assert has no outputs";
        return NULL;
    case TFM_OP_ASSIGN_VARIABLE:
    case TFM_OP_ASSIGN_ADD_VARIABLE:
    case TFM_OP_ASSIGN_SUB_VARIABLE:
        if (n->nout)
            return "an assign has no outputs";
        if (in[0].dtype != n->var->value->dtype)
            return "an assign of another dtype than its variable";
        return NULL;
    case TFM_OP_IF: {
        if (n->nin < 1)
            return "If without a predicate";
        for (int k = 0; k < n->nout; k++) {
            for (int b = 0; b < 2; b++) {
                const tfm_graph *s = n->sub[b];
                if (tfm_graph_output_count(s) != n->nout)
                    return "If branches with another output count";
                const tfm_meta *o = ref_meta(s, tfm_graph_output(s, k));
                if (o->dtype != n->out[k].dtype ||
                    o->shape.ndim != n->out[k].shape.ndim)
                    return "If output that differs from its branches";
                for (int j = 0; j < o->shape.ndim; j++)
                    if (n->out[k].shape.dims[j] >= 0 &&
                        n->out[k].shape.dims[j] != o->shape.dims[j])
                        return "If output that differs from its branches";
            }
        }
        if (n->nout == 0 && (tfm_graph_output_count(n->sub[0]) ||
                             tfm_graph_output_count(n->sub[1])))
            return "If branches with another output count";
        return NULL;
    }
    case TFM_OP_WHILE: {
        int64_t nvars = n->attrs->i[0], has_max = n->attrs->i[1];
        if (has_max != 0 && has_max != 1)
            return "While with a bad maximum_iterations flag";
        if (nvars < 0 || nvars + has_max > n->nin || nvars != n->nout)
            return "While with a bad loop variable count";
        const tfm_graph *c = n->sub[0], *b = n->sub[1];
        if (tfm_graph_input_count(c) < nvars ||
            tfm_graph_input_count(b) < nvars)
            return "While body or condition without its loop variables";
        if (tfm_graph_output_count(c) != 1 ||
            ref_meta(c, tfm_graph_output(c, 0))->dtype != TFM_BOOL)
            return "While condition that is not one bool";
        if (tfm_graph_output_count(b) != nvars)
            return "While body with another output count";
        for (int k = 0; k < nvars; k++) {
            const tfm_meta *ci = &tfm_graph_node(c, tfm_graph_input(c, k))
                                      ->out[0];
            const tfm_meta *bi = &tfm_graph_node(b, tfm_graph_input(b, k))
                                      ->out[0];
            const tfm_meta *bo = ref_meta(b, tfm_graph_output(b, k));
            if (n->submap[0][k] != k || n->submap[1][k] != k)
                return "While with a misplaced loop variable";
            if (!meta_equal(ci, bi) || !meta_equal(bi, &n->out[k]) ||
                bo->dtype != bi->dtype || bo->shape.ndim != bi->shape.ndim ||
                in[k].dtype != bi->dtype ||
                in[k].shape.ndim != bi->shape.ndim)
                return "While loop variable of inconsistent dtype or rank";
        }
        return NULL;
    }
    default:
        break;
    }
    /* Kernel ops and the metadata state ops: the shape rule must give
     * back exactly the saved outputs (kernels write into buffers sized
     * from these). */
    tfm_meta want[TFM_MAX_OUTPUTS];
    int nout = d->n_outputs > 0 ? d->n_outputs : 0;
    if (tfm_op_infer(n->op, in, n->nin, n->attrs, want, &nout))
        return "";          /* the rule's own error */
    if (nout != n->nout) {
        snprintf(why, sizeof why, "it has %d outputs but its shape rule "
                 "gives %d", (int)n->nout, nout);
        return why;
    }
    for (int k = 0; k < nout; k++)
        if (!meta_equal(&want[k], &n->out[k])) {
            char a[128], b[128];
            snprintf(why, sizeof why, "output %d is %s%s but its shape "
                     "rule gives %s%s", k, tfm_dtype_name(n->out[k].dtype),
                     tfm_shape_str(&n->out[k].shape, a, sizeof a),
                     tfm_dtype_name(want[k].dtype),
                     tfm_shape_str(&want[k].shape, b, sizeof b));
            return why;
        }
    if (n->op == TFM_OP_CONST &&
        (!n->value || !tfm_meta_admits(&n->out[0], n->value) ||
         !tfm_shape_equal(&n->value->shape, &n->out[0].shape)))
        return "constant whose value does not match its output";
    if (n->op == TFM_OP_READ_VARIABLE &&
        n->var->value->dtype != n->out[0].dtype)
        return "read of another dtype than its variable";
    return NULL;
}

static tfm_graph *get_graph(reader *rd, int depth);

/* What get_node reads a node into: on the heap, since get_node recurses
 * once per level of control flow and these are tens of kilobytes. */
typedef struct node_space {
    char name[300];
    tfm_attrs attrs;
    tfm_ref in[TFM_MAX_INPUTS];
    tfm_meta out[TFM_MAX_OUTPUTS], inm[TFM_MAX_INPUTS];
} node_space;

static tfm_code read_node(reader *rd, tfm_graph *g, int index, int depth,
                          node_space *sp);

/* Read one node into g. */
static tfm_code
get_node(reader *rd, tfm_graph *g, int index, int depth)
{
    node_space *sp = malloc(sizeof *sp);
    if (!sp) {
        rd->r.failed = 1;
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
    }
    tfm_code rc = read_node(rd, g, index, depth, sp);
    free(sp);
    return rc;
}

static tfm_code
read_node(reader *rd, tfm_graph *g, int index, int depth, node_space *sp)
{
    rbuf *r = &rd->r;
    char opname[128];
    char *name = sp->name;
    char *site = NULL;
    tfm_node n;
    tfm_ref *in = sp->in;
    tfm_meta *out = sp->out, *inm = sp->inm;
    int32_t *ctrl = NULL;
    char **texts = NULL;
    tfm_graph *sub[2] = {NULL, NULL};
    int32_t *map[2] = {NULL, NULL};
    int ntexts = 0, node = -1;
    memset(&n, 0, sizeof n);

    if (!get_str(r, opname, sizeof opname, "an op name"))
        return TFM_ERR_DATA_LOSS;
    int op = tfm_op_lookup(opname);
    if (op < 0) {
        r->failed = 1;
        return tfm_error(TFM_ERR_DATA_LOSS, "saved model %s: node %d of "
                         "graph '%s' has op '%s', which this tfmini does "
                         "not know", r->origin, index, tfm_graph_name(g),
                         opname);
    }
    n.op = (tfm_op)op;
    if (!get_str(r, name, sizeof sp->name, "a node name"))
        return TFM_ERR_DATA_LOSS;
    if (!name[0])
        return bad(r, "%s is empty", "a node name");
    n.name = name;
    site = get_str(r, NULL, 0, "a node's site");
    if (!site)
        goto fail;
    n.site = *site ? site : NULL;
    uint32_t nin = get_count(r, 8, TFM_MAX_INPUTS, "an input count");
    n.nin = (int32_t)nin;
    for (uint32_t i = 0; i < nin && !r->failed; i++) {
        in[i].node = (int32_t)get_u32(r, "an input");
        in[i].out = (int32_t)get_u32(r, "an input");
        if (!r->failed &&
            ((uint32_t)in[i].node >= (uint32_t)index ||
             (uint32_t)in[i].out >=
                 (uint32_t)tfm_graph_node(g, in[i].node)->nout)) {
            bad(r, "node '%s' reads a node output that does not come "
                "before it", name);
            goto fail;
        }
        if (!r->failed)
            inm[i] = *ref_meta(g, in[i]);
    }
    n.in = in;
    uint32_t nctrl = get_count(r, 4, UINT32_MAX, "a control edge count");
    if (nctrl && !r->failed) {
        ctrl = malloc(sizeof *ctrl * nctrl);
        if (!ctrl) {
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
            goto fail;
        }
    }
    for (uint32_t i = 0; i < nctrl && !r->failed; i++) {
        uint32_t c = get_u32(r, "a control edge");
        if (!r->failed && c >= (uint32_t)index) {
            bad(r, "node '%s' waits for a node that does not come before "
                "it", name);
            goto fail;
        }
        ctrl[i] = (int32_t)c;
    }
    get_attrs(r, &sp->attrs);
    n.attrs = &sp->attrs;
    uint32_t nout = get_count(r, 2, TFM_MAX_OUTPUTS, "an output count");
    n.nout = (int32_t)nout;
    for (uint32_t k = 0; k < nout && !r->failed; k++)
        get_meta(r, &out[k], 0, "an output");
    n.out = out;
    unsigned kind = get_u8(r, "a payload kind");
    if (r->failed)
        goto fail;
    /* The file's payload kinds are the op table's (checked at the top);
     * a fused node has none in the file and is refused by check_node. */
    int want_kind = (int)tfm_op_payload(n.op);
    if (want_kind == TFM_PAYLOAD_PROG)
        want_kind = PAY_NONE;
    if (kind != (unsigned)want_kind) {
        bad(r, "node '%s' has the wrong payload for its op", name);
        goto fail;
    }
    if (kind == PAY_CONST) {
        n.value = get_tensor(r, "a constant");
        if (!n.value)
            goto fail;
    } else if (kind == PAY_VAR) {
        uint32_t k = get_u32(r, "a variable index");
        if (!r->failed && k >= (uint32_t)rd->m->nvars) {
            bad(r, "node '%s' uses variable %lld, which is not in the "
                "file", name, (long long)k);
            goto fail;
        }
        if (!r->failed)
            n.var = rd->m->vars[k];
    } else if (kind == PAY_TEXT) {
        uint32_t count = get_count(r, 4, TFM_MAX_INPUTS + 1, "a text count");
        int want = n.op == TFM_OP_ASSERT ? n.nin : n.nin + 1;
        if (!r->failed && (int)count != want) {
            bad(r, "node '%s' has %lld texts for its inputs", name, (long long)count);
            goto fail;
        }
        if (r->failed)
            goto fail;
        texts = calloc((size_t)count + 1, sizeof *texts);
        if (!texts) {
            tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
            goto fail;
        }
        for (uint32_t i = 0; i < count && !r->failed; i++, ntexts++)
            texts[i] = get_str(r, NULL, 0, "a print text");
        n.text = (const char *const *)texts;
    } else if (kind == PAY_SUB) {
        for (int b = 0; b < 2 && !r->failed; b++) {
            uint32_t m = get_count(r, 4, TFM_MAX_INPUTS, "a sub-graph map");
            map[b] = malloc(sizeof(int32_t) * ((size_t)m + 1));
            if (!map[b]) {
                tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
                goto fail;
            }
            for (uint32_t i = 0; i < m && !r->failed; i++) {
                map[b][i] = (int32_t)get_u32(r, "a sub-graph map");
                if (!r->failed && (uint32_t)map[b][i] >= nin) {
                    bad(r, "node '%s' maps a sub-graph input to its input "
                        "%lld, which it does not have", name, (long long)map[b][i]);
                    goto fail;
                }
            }
            if (r->failed)
                goto fail;
            sub[b] = get_graph(rd, depth + 1);
            if (!sub[b])
                goto fail;
            if ((uint32_t)tfm_graph_input_count(sub[b]) != m) {
                bad(r, "node '%s' maps %lld sub-graph inputs, not what its "
                    "sub-graph takes", name, (long long)m);
                goto fail;
            }
            n.sub[b] = sub[b];
            n.submap[b] = map[b];
        }
    }
    if (r->failed)
        goto fail;
    const char *why = check_node(g, &n, inm);
    if (why) {
        char prior[400] = "";
        if (!*why)
            snprintf(prior, sizeof prior, ": %s", tfm_error_message());
        tfm_error(TFM_ERR_DATA_LOSS, "saved model %s is corrupt: node '%s' "
                  "(%s) of graph '%s': %s%s", r->origin, name, opname,
                  tfm_graph_name(g), why, prior);
        r->failed = 1;
        goto fail;
    }
    node = tfm_graph_copy_node(g, &n, in, ctrl, (int)nctrl);
fail:
    free(site);
    free(ctrl);
    for (int i = 0; i < ntexts; i++)
        free(texts[i]);
    free(texts);
    for (int b = 0; b < 2; b++) {
        free(map[b]);
        if (sub[b])
            tfm_graph_decref(sub[b]);
    }
    if (n.value)
        tfm_tensor_decref(n.value);
    if (node >= 0)
        return TFM_OK;
    if (!r->failed && tfm_error_code() == TFM_OK)
        bad(r, "node '%s' could not be added", name);
    r->failed = 1;
    return tfm_error_code();
}

/* A node is at least: op, name and site lengths, three counts, the
 * attributes and a payload kind. */
#define MIN_NODE_BYTES (4 * 3 + 4 * 3 + 4 + 8 * 6 + 8 * 4 + 1 + 1)

static tfm_graph *
get_graph(reader *rd, int depth)
{
    rbuf *r = &rd->r;
    char name[300];
    if (depth > MAX_DEPTH) {
        bad(r, "control flow nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    if (!get_str(r, name, sizeof name, "a graph name"))
        return NULL;
    tfm_graph *g = tfm_graph_new(name);
    if (!g) {
        r->failed = 1;
        return NULL;
    }
    uint32_t n = get_count(r, MIN_NODE_BYTES, INT32_MAX, "a node count");
    for (uint32_t k = 0; k < n && !r->failed; k++)
        if (get_node(rd, g, (int)k, depth))
            break;
    uint32_t nout = get_count(r, 8, TFM_MAX_INPUTS * 64, "an output count");
    tfm_ref *outs = malloc(sizeof *outs * ((size_t)nout + 1));
    if (!outs && !r->failed) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
        r->failed = 1;
    }
    for (uint32_t i = 0; i < nout && !r->failed; i++) {
        outs[i].node = (int32_t)get_u32(r, "a graph output");
        outs[i].out = (int32_t)get_u32(r, "a graph output");
        if (!r->failed &&
            ((uint32_t)outs[i].node >= n ||
             (uint32_t)outs[i].out >=
                 (uint32_t)tfm_graph_node(g, outs[i].node)->nout))
            bad(r, "an output of graph '%s' (number %lld) is no node "
                "output", name, (long long)i);
    }
    if (!r->failed && tfm_graph_set_outputs(g, outs, (int)nout))
        r->failed = 1;
    free(outs);
    if (r->failed) {
        tfm_graph_decref(g);
        return NULL;
    }
    tfm_graph_seal(g);
    return g;
}

static tfm_code
get_variables(reader *rd, size_t end)
{
    rbuf *r = &rd->r;
    tfm_saved_model *m = rd->m;
    if (m->vars)
        return bad(r, "%s appears twice", "the variable table");
    /* A variable is at least a name length, two flags, a rank, a dtype,
     * a rank and a byte count. */
    uint32_t n = get_count(r, 4 + 2 + 1 + 1 + 1 + 8, INT32_MAX,
                           "the variable count");
    m->vars = calloc((size_t)n + 1, sizeof *m->vars);
    m->var_names = calloc((size_t)n + 1, sizeof *m->var_names);
    if (!m->vars || !m->var_names)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
    for (uint32_t i = 0; i < n && !r->failed; i++) {
        char *name = get_str(r, NULL, 0, "a variable name");
        if (!name)
            break;
        m->var_names[m->nvars] = name;
        unsigned trainable = get_u8(r, "a variable");
        unsigned any_rank = get_u8(r, "a variable");
        tfm_shape declared;
        get_shape(r, &declared, 0, "a variable's shape");
        tfm_tensor *value = get_tensor(r, "a variable's value");
        if (!value)
            break;
        tfm_variable *v = tfm_variable_new(value, trainable != 0);
        tfm_tensor_decref(value);
        if (!v) {
            r->failed = 1;
            break;
        }
        m->vars[m->nvars++] = v;
        if (tfm_variable_set_shape(v, &declared, any_rank != 0)) {
            char msg[300];
            snprintf(msg, sizeof msg, "%s", tfm_error_message());
            tfm_error(TFM_ERR_DATA_LOSS, "saved model %s is corrupt: "
                      "variable '%s': %s", r->origin, name, msg);
            r->failed = 1;
            break;
        }
    }
    if (!r->failed && r->pos != end)
        bad(r, "%s has %lld bytes left over", "the variable table",
            (long long)(end - r->pos));
    return r->failed ? tfm_error_code() : TFM_OK;
}

static tfm_code
get_function(reader *rd, size_t end)
{
    rbuf *r = &rd->r;
    tfm_saved_model *m = rd->m;
    if (!m->vars)
        return bad(r, "%s comes before the variable table", "a function");
    char *name = get_str(r, NULL, 0, "a function name");
    if (!name)
        return tfm_error_code();
    uint32_t share = get_u32(r, "a function");
    tfm_graph *g = NULL;
    if (!r->failed && share != NO_SHARE) {
        if (share >= (uint32_t)m->nfuncs) {
            free(name);
            return bad(r, "a function shares the graph of function "
                       "%u, which comes later", share);
        }
        g = m->funcs[share]->graph;
        tfm_graph_incref(g);
    } else if (!r->failed) {
        g = get_graph(rd, 0);
    }
    if (!g) {
        free(name);
        return tfm_error_code();
    }
    if (r->pos != end) {
        free(name);
        tfm_graph_decref(g);
        return bad(r, "%s has %lld bytes left over", "a function",
                   (long long)(end - r->pos));
    }
    tfm_concrete *cf = tfm_concrete_new(g);
    tfm_graph_decref(g);
    if (!cf) {
        free(name);
        return tfm_error_code();
    }
    m->funcs[m->nfuncs] = cf;
    m->func_names[m->nfuncs++] = name;
    return TFM_OK;
}

tfm_saved_model *
tfm_saved_model_decode(const unsigned char *data, size_t n,
                       const char *origin)
{
    reader rd;
    memset(&rd, 0, sizeof rd);
    rbuf *r = &rd.r;
    r->p = data;
    r->n = n;
    r->origin = origin ? origin : "<memory>";
    if (n < 8 || memcmp(data, tfm_saved_model_magic, 8) != 0) {
        tfm_error(TFM_ERR_DATA_LOSS, "%s is not a tfmini saved model (its "
                  "first bytes are not the format's magic)", r->origin);
        return NULL;
    }
    r->pos = 8;
    uint32_t version = get_u32(r, "the format version");
    if (r->failed)
        return NULL;
    if (version != TFM_SAVED_MODEL_VERSION) {
        tfm_error(TFM_ERR_DATA_LOSS, "saved model %s has format version "
                  "%u; this tfmini reads version %d", r->origin, version,
                  TFM_SAVED_MODEL_VERSION);
        return NULL;
    }
    if (n < 16) {
        bad(r, "truncated: %s is missing", "the checksum");
        return NULL;
    }
    uint32_t want = (uint32_t)data[n - 4] | (uint32_t)data[n - 3] << 8 |
                    (uint32_t)data[n - 2] << 16 | (uint32_t)data[n - 1] << 24;
    if (tfm_crc32(0, data, n - 4) != want) {
        tfm_error(TFM_ERR_DATA_LOSS, "saved model %s is corrupt: its "
                  "checksum does not match (the file was truncated or "
                  "changed after it was written)", r->origin);
        return NULL;
    }
    r->n = n - 4;       /* the sections end at the checksum */
    tfm_saved_model *m = calloc(1, sizeof *m);
    if (!m) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
        return NULL;
    }
    rd.m = m;
    /* Function slots: no more than the sections the file can hold. */
    size_t max_funcs = (r->n - r->pos) / 12 + 1;
    m->funcs = calloc(max_funcs, sizeof *m->funcs);
    m->func_names = calloc(max_funcs, sizeof *m->func_names);
    if (!m->funcs || !m->func_names) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
        goto fail;
    }
    while (r->pos < r->n) {
        char tag[5] = {0};
        if (!need(r, 12, "a section header"))
            goto fail;
        memcpy(tag, r->p + r->pos, 4);
        /* It goes into messages: printable ASCII only. */
        for (int k = 0; k < 4; k++)
            if (tag[k] < 0x20 || tag[k] > 0x7e)
                tag[k] = '?';
        r->pos += 4;
        uint64_t len = (uint64_t)get_i64(r, "a section length");
        if (len > r->n - r->pos) {
            bad(r, "section '%s' is %lld bytes, more than the file has",
                tag, (long long)len);
            goto fail;
        }
        size_t end = r->pos + (size_t)len;
        tfm_code rc = TFM_OK;
        if (strcmp(tag, "META") == 0) {
            if (m->meta) {
                bad(r, "%s appears twice", "the META section");
                goto fail;
            }
            m->meta = malloc((size_t)len + 1);
            if (!m->meta) {
                tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
                goto fail;
            }
            memcpy(m->meta, r->p + r->pos, (size_t)len);
            m->meta_len = (size_t)len;
            r->pos = end;
        } else if (strcmp(tag, "VARS") == 0) {
            rc = get_variables(&rd, end);
        } else if (strcmp(tag, "FUNC") == 0) {
            rc = get_function(&rd, end);
        } else {
            bad(r, "unknown section '%s'", tag);
            goto fail;
        }
        if (rc || r->failed)
            goto fail;
    }
    if (!m->vars) {
        bad(r, "%s is missing", "the variable table");
        goto fail;
    }
    return m;
fail:
    if (tfm_error_code() == TFM_OK)
        bad(r, "%s could not be read", "the file");
    tfm_saved_model_free(m);
    return NULL;
}

tfm_saved_model *
tfm_saved_model_load(const char *export_dir)
{
    char *path = tfm_saved_model_path(export_dir, TFM_SAVED_MODEL_FILE);
    if (!path) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM loading a model");
        return NULL;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        tfm_error(TFM_ERR_NOT_FOUND, "SavedModel file does not exist at: "
                  "%s (%s)", path, strerror(errno));
        free(path);
        return NULL;
    }
    unsigned char *data = NULL;
    long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0)
        size = ftell(fp);
    if (size >= 0 && fseek(fp, 0, SEEK_SET) == 0)
        data = malloc((size_t)size + 1);
    tfm_saved_model *m = NULL;
    if (!data) {
        tfm_error(TFM_ERR_DATA_LOSS, "cannot read %s", path);
    } else if (fread(data, 1, (size_t)size, fp) != (size_t)size) {
        tfm_error(TFM_ERR_DATA_LOSS, "reading %s failed", path);
    } else {
        m = tfm_saved_model_decode(data, (size_t)size, path);
    }
    fclose(fp);
    free(data);
    free(path);
    return m;
}

void
tfm_saved_model_free(tfm_saved_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nfuncs; i++) {
        tfm_concrete_decref(m->funcs[i]);
        free(m->func_names[i]);
    }
    for (int i = 0; m->var_names && m->var_names[i]; i++)
        free(m->var_names[i]);
    for (int i = 0; i < m->nvars; i++)
        tfm_variable_decref(m->vars[i]);
    free(m->funcs);
    free(m->func_names);
    free(m->vars);
    free(m->var_names);
    free(m->meta);
    free(m);
}

int
tfm_saved_model_find(const tfm_saved_model *m, const char *name)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (strcmp(m->func_names[i], name) == 0)
            return i;
    return -1;
}

tfm_code
tfm_saved_model_call(const tfm_saved_model *m, int fn,
                     tfm_tensor *const *in, int nin, tfm_tensor **out)
{
    if (fn < 0 || fn >= m->nfuncs)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "the saved model has no "
                         "function %d (it has %d)", fn, m->nfuncs);
    return tfm_concrete_call(m->funcs[fn], in, nin, out);
}
