/* Fused programs: building and block-by-block evaluation. See Note
 * [Fused programs] in fused.h. */
#include "fused.h"

#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/loops.h"
#include "../runtime/dispatch.h"
#include "passes.h"

/* ---- building ---- */

static int
is_float(tfm_dtype d)
{
    return d == TFM_FLOAT32 || d == TFM_FLOAT64;
}

int
tfm_fused_can_fuse(const tfm_graph *g, const tfm_node *n)
{
    if ((unsigned)n->op >= TFM_OP_COUNT ||
        !(tfm_ops[n->op].flags & TFM_OPF_ELEMENTWISE) ||
        !tfm_ops[n->op].cpu || n->nout != 1 || n->nin < 1 || n->nin > 2 ||
        !is_float(n->out[0].dtype) || !tfm_shape_is_known(&n->out[0].shape))
        return 0;
    for (int i = 0; i < n->nin; i++) {
        const tfm_meta *m = &tfm_graph_node(g, n->in[i].node)->out[n->in[i].out];
        /* Kernels that fail (integer division by zero) only exist for
         * integers, so float programs cannot fail inside a block, where
         * an error could not be reported (see run_blocks). */
        if (!is_float(m->dtype) || !tfm_shape_is_known(&m->shape))
            return 0;
    }
    return 1;
}

void
tfm_fused_uses(const tfm_graph *g, int32_t *uses, int32_t *consumer)
{
    int32_t n = tfm_graph_node_count(g);
    for (int32_t k = 0; k < n; k++)
        uses[k] = 0, consumer[k] = -1;
    for (int32_t k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        for (int i = 0; i < nd->nin; i++) {
            uses[nd->in[i].node]++;
            consumer[nd->in[i].node] = k;
        }
        for (int i = 0; i < nd->nctrl; i++)
            uses[nd->ctrl[i]] += 2;   /* never fused away */
    }
    for (int i = 0; i < tfm_graph_output_count(g); i++)
        uses[tfm_graph_output(g, i).node] += 2;
}

tfm_code
tfm_fuse_oom(void)
{
    return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM fusing a graph");
}

tfm_code
tfm_fuse_scratch_init(tfm_fuse_scratch *s, const tfm_graph *g)
{
    int32_t n = tfm_graph_node_count(g);
    size_t sz = (size_t)n + 1;
    s->n = n;
    s->uses = malloc(sizeof(int32_t) * 3 * sz);
    if (!s->uses) {
        s->consumer = s->role = NULL;
        return tfm_fuse_oom();
    }
    s->consumer = s->uses + sz;
    s->role = s->consumer + sz;
    tfm_fused_uses(g, s->uses, s->consumer);
    for (int32_t k = 0; k < n; k++)
        s->role[k] = -1;
    return TFM_OK;
}

void
tfm_fuse_scratch_free(tfm_fuse_scratch *s)
{
    free(s->uses);
    s->uses = s->consumer = s->role = NULL;
}

tfm_graph *
tfm_fuse_rewrite(tfm_graph *g, const int32_t *role, int matched,
                 tfm_fuse_emit_fn emit, void *ctx)
{
    if (!matched) {
        tfm_graph_incref(g);
        return g;
    }
    tfm_rw rw;
    if (tfm_rw_begin(&rw, g))
        return NULL;
    int32_t n = tfm_graph_node_count(g);
    for (int32_t k = 0; k < n; k++) {
        if (role[k] == -1 ? tfm_rw_copy(&rw, k) < 0
                          : emit(&rw, k, role[k], ctx) != TFM_OK) {
            tfm_rw_abort(&rw);
            return NULL;
        }
    }
    return tfm_rw_finish(&rw);
}

void
tfm_fused_init(tfm_fused_prog *p, int first_input)
{
    memset(p, 0, sizeof *p);
    p->first_input = first_input;
    p->nout = 1;
}

int
tfm_fused_emit(tfm_fused_prog *p, const tfm_node *n, const int16_t *src)
{
    if (p->ninstr >= TFM_FUSED_MAX_INSTR)
        return -1;
    tfm_fused_instr *c = &p->code[p->ninstr];
    memset(c, 0, sizeof *c);
    c->op = (int16_t)n->op;
    c->nin = (int8_t)n->nin;
    c->dtype = (int8_t)n->out[0].dtype;
    for (int i = 0; i < n->nin; i++) {
        c->src[i] = src[i];
        if (src[i] <= TFM_FUSED_INPUT(0) &&
            TFM_FUSED_INPUT_INDEX(src[i]) >= p->nin)
            p->nin = TFM_FUSED_INPUT_INDEX(src[i]) + 1;
    }
    c->adtype = (int32_t)n->attrs->dtype;
    c->ai = n->attrs->i[0];
    c->af = n->attrs->f[0];
    return p->ninstr++;
}

void
tfm_fused_finish(tfm_fused_prog *p)
{
    int last[TFM_FUSED_MAX_INSTR], reg[TFM_FUSED_MAX_INSTR];
    int freelist[TFM_FUSED_MAX_INSTR], nfree = 0, nreg = 0;
    for (int i = 0; i < p->ninstr; i++)
        last[i] = i;
    for (int i = 0; i < p->ninstr; i++)
        for (int k = 0; k < p->code[i].nin; k++)
            if (p->code[i].src[k] >= 0)
                last[p->code[i].src[k]] = i;
    /* Linear scan: take a register before releasing the operands, so an
     * instruction never writes what it reads. */
    for (int i = 0; i < p->ninstr; i++) {
        tfm_fused_instr *c = &p->code[i];
        reg[i] = nfree ? freelist[--nfree] : nreg++;
        c->dst = (int16_t)reg[i];
        for (int k = 0; k < c->nin; k++) {
            int s = c->src[k];
            if (s >= 0 && last[s] == i && !(k == 1 && c->src[0] == s))
                freelist[nfree++] = reg[s];
        }
        /* A value nobody reads (only the output) is dead at once. */
        if (last[i] == i && i != p->ninstr - 1)
            freelist[nfree++] = reg[i];
    }
    for (int i = 0; i < p->ninstr; i++)
        for (int k = 0; k < p->code[i].nin; k++)
            if (p->code[i].src[k] >= 0)
                p->code[i].src[k] = (int16_t)reg[p->code[i].src[k]];
    p->nreg = nreg;
}

tfm_code
tfm_fused_attach(tfm_graph *g, int d, const tfm_fused_prog *p)
{
    size_t size = offsetof(tfm_fused_prog, code) +
                  sizeof(tfm_fused_instr) * (size_t)p->ninstr;
    tfm_fused_prog *q = tfm_graph_arena_alloc(g, size);
    if (!q)
        return tfm_error_code();
    memcpy(q, p, size);
    tfm_node *n = tfm_graph_node_mut(g, d);
    n->prog = q;
    n->prog_size = size;
    return TFM_OK;
}

/* ---- running ---- */

/* How a program input is read in a block: in place (full-size inputs),
 * as a scalar, from a tile (an input that repeats with a period dividing
 * the block size, such as a bias [C] against [N, C]: every block sees
 * the same values, repeated once per call into `tile`), or gathered per
 * block (other broadcasts). */
enum { IN_FULL, IN_SCALAR, IN_TILE, IN_GATHER };

typedef struct in_view {
    int kind;
    tfm_dtype dtype;
    const char *data;
    int64_t period;               /* > 0: input i is element i % period */
    char *tile;                   /* IN_TILE: block elements, owned */
    int gather;                   /* IN_GATHER: its scratch index */
    int64_t stride[TFM_MAX_DIMS]; /* IN_GATHER: per output dim, 0 = bcast */
} in_view;

typedef struct run_ctx {
    const tfm_fused_prog *p;
    const tfm_shape *shape;       /* the output's */
    int64_t n;                    /* its elements */
    tfm_dtype out_dtype;
    char *out;                    /* output data */
    char *xout[TFM_FUSED_MAX_OUT];  /* outputs 1.. (instructions' out) */
    in_view in[TFM_FUSED_MAX_IN];
    int ngather;
    tfm_attrs *attrs;             /* per instruction */
    int64_t block;
    tfm_fused_native_fn native;
} run_ctx;

/* A tensor over memory we do not own, for one kernel call: the kernels
 * read only dtype, shape and data, and never keep or free it. */
typedef struct view {
    tfm_buffer buf;
    tfm_tensor t;
} view;

static tfm_tensor *
make_view(view *v, void *data, tfm_dtype dtype, int64_t len)
{
    memset(&v->buf, 0, sizeof v->buf);
    v->buf.refcount = 1;
    v->buf.data = data;
    v->buf.nbytes = (size_t)(len < 0 ? 1 : len) * tfm_dtype_size(dtype);
    memset(&v->t, 0, sizeof v->t);
    v->t.refcount = 1;
    v->t.dtype = dtype;
    v->t.shape.ndim = len < 0 ? 0 : 1;
    v->t.shape.dims[0] = len < 0 ? 1 : len;   /* len < 0: a scalar */
    v->t.buf = &v->buf;
    return &v->t;
}

/* Gather elements [start, start + len) of input iv broadcast to the
 * output shape into dst: an odometer over the output's index, copying
 * or filling runs of the last dim. */
static void
gather(const run_ctx *c, const in_view *iv, int64_t start, int64_t len,
       char *dst)
{
    const tfm_shape *s = c->shape;
    size_t es = tfm_dtype_size(iv->dtype);
    int nd = s->ndim;
    int64_t idx[TFM_MAX_DIMS], off = 0, rem = start;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % s->dims[d];
        rem /= s->dims[d];
        off += idx[d] * iv->stride[d];
    }
    int64_t inner = s->dims[nd - 1], is = iv->stride[nd - 1];
    while (len > 0) {
        int64_t run = inner - idx[nd - 1];
        if (run > len)
            run = len;
        const char *src = iv->data + (size_t)off * es;
        if (is == 1) {
            memcpy(dst, src, (size_t)run * es);
        } else if (es == 4) {
            for (int64_t i = 0; i < run; i++)
                memcpy(dst + i * 4, src, 4);
        } else {
            for (int64_t i = 0; i < run; i++)
                memcpy(dst + i * 8, src, 8);
        }
        dst += (size_t)run * es;
        len -= run;
        /* Next row: back to the row's start, then carry. */
        off -= idx[nd - 1] * is;
        idx[nd - 1] = 0;
        for (int d = nd - 2; d >= 0; d--) {
            off += iv->stride[d];
            if (++idx[d] < s->dims[d])
                break;
            off -= idx[d] * iv->stride[d];
            idx[d] = 0;
        }
    }
}

/* The program over output elements [start, start + len). scratch holds
 * nreg registers then ngather gathered inputs, block elements each. */
static tfm_code
run_block(const run_ctx *c, int64_t start, int64_t len, char *scratch)
{
    const tfm_fused_prog *p = c->p;
    size_t rb = (size_t)c->block * 8;
    tfm_dtype rdt[TFM_FUSED_MAX_INSTR];
    char *gat = scratch + rb * (size_t)p->nreg;
    size_t oes = tfm_dtype_size(c->out_dtype);
    for (int k = 0; k < p->nin; k++)
        if (c->in[k].kind == IN_GATHER)
            gather(c, &c->in[k], start, len, gat + rb * c->in[k].gather);
    for (int i = 0; i < p->ninstr; i++) {
        const tfm_fused_instr *ins = &p->code[i];
        view v[3];
        tfm_tensor *a[2], *o;
        for (int k = 0; k < ins->nin; k++) {
            int s = ins->src[k];
            if (s >= 0) {
                a[k] = make_view(&v[k], scratch + rb * (size_t)s, rdt[s],
                                 len);
            } else if (s == TFM_FUSED_BASE) {
                a[k] = make_view(&v[k], c->out + (size_t)start * oes,
                                 c->out_dtype, len);
            } else {
                const in_view *iv = &c->in[TFM_FUSED_INPUT_INDEX(s)];
                size_t es = tfm_dtype_size(iv->dtype);
                char *d = iv->kind == IN_FULL
                          ? (char *)iv->data + (size_t)start * es
                          : iv->kind == IN_SCALAR ? (char *)iv->data
                          : iv->kind == IN_TILE ? iv->tile
                          : gat + rb * iv->gather;
                a[k] = make_view(&v[k], d, iv->dtype,
                                 iv->kind == IN_SCALAR ? -1 : len);
            }
        }
        /* The last instruction of a plain fused node writes the output;
         * a matmul's epilogue reads the output, so it writes a register
         * and copies (kernels assume their output aliases no input). */
        int direct = i == p->ninstr - 1 && p->first_input == 0;
        o = direct ? make_view(&v[2], c->out + (size_t)start * oes,
                               c->out_dtype, len)
                   : make_view(&v[2], scratch + rb * (size_t)ins->dst,
                               (tfm_dtype)ins->dtype, len);
        rdt[ins->dst] = (tfm_dtype)ins->dtype;
        tfm_code rc = tfm_ops[ins->op].cpu((tfm_op)ins->op, a, ins->nin,
                                           &c->attrs[i], &o, 1,
                                           &tfm_kctx_cpu);
        if (rc)
            return rc;
        if (ins->out > 0) {
            size_t es = tfm_dtype_size((tfm_dtype)ins->dtype);
            memcpy(c->xout[ins->out] + (size_t)start * es,
                   tfm_tensor_data(o), (size_t)len * es);
        }
    }
    if (p->first_input)
        memcpy(c->out + (size_t)start * oes,
               scratch + rb * (size_t)p->code[p->ninstr - 1].dst,
               (size_t)len * oes);
    return TFM_OK;
}

/* Block size: the registers and broadcast inputs of one block fit in
 * about 96 KiB (a core's L1 and then some: 2048-4096 elements measured
 * clearly faster than 8192+ on a chain of cheap ops, single-threaded),
 * between 1024 and 4096 elements, a multiple of 64 so vector loops stay
 * aligned. */
static int64_t
block_size(int nbuf)
{
    int64_t b = (96 * 1024) / (8 * (int64_t)(nbuf + 1));
    b = b < 1024 ? 1024 : b > 4096 ? 4096 : b;
    return b & ~(int64_t)63;
}

/* A node below the parallel size, block after block on this thread:
 * no parallel region and, when the scratch fits, no allocation. In a
 * loop body these nodes run once per iteration, where a parallel region
 * (even one its if() keeps serial: libgomp still wakes its futexes) and
 * a malloc/free of its 8-100 KiB scratch cost more than its arithmetic. */
static __attribute__((noinline)) tfm_code
run_small(const run_ctx *c, size_t scratch)
{
    _Alignas(64) char stack[64 * 1024];
    char *mem = scratch <= sizeof stack ? stack
                : aligned_alloc(64, (scratch + 63) & ~(size_t)63);
    if (!mem)
        return TFM_ERR_INTERNAL;
    int failed = 0;
    for (int64_t start = 0; start < c->n && !failed; start += c->block) {
        int64_t len = c->n - start < c->block ? c->n - start : c->block;
        failed = run_block(c, start, len, mem) != 0;
    }
    if (mem != stack)
        free(mem);
    return failed ? TFM_ERR_INTERNAL : TFM_OK;
}

static tfm_code
run_blocks(void *ctx)
{
    const run_ctx *c = ctx;
    int64_t n = c->n;
    int64_t bs = c->block;
    int64_t nblocks = (n + bs - 1) / bs;
    size_t scratch = (size_t)bs * 8 * (size_t)(c->p->nreg + c->ngather);
    int failed = 0;
    if (nblocks <= 1 || n < TFM_PAR_MIN)
        return run_small(c, scratch);
    /* Parallel over blocks; the kernels inside see fewer than
     * TFM_PAR_MIN elements and stay serial. */
    #pragma omp parallel
    {
        char *mem = aligned_alloc(64, (scratch + 63) & ~(size_t)63);
        int bad = mem == NULL;
        #pragma omp for schedule(static)
        for (int64_t b = 0; b < nblocks; b++) {
            if (bad)
                continue;
            int64_t start = b * bs, len = n - start < bs ? n - start : bs;
            if (run_block(c, start, len, mem))
                bad = 1;
        }
        if (bad) {
            #pragma omp atomic write
            failed = 1;
        }
        free(mem);
    }
    /* An error raised on a worker thread stays in that thread's status:
     * the caller reruns op by op (run_ops) to report it. */
    return failed ? TFM_ERR_INTERNAL : TFM_OK;
}

int
tfm_fused_input_kind(const tfm_shape *out, const tfm_shape *in,
                     int64_t *period)
{
    int64_t n = tfm_shape_numel(out), tn = tfm_shape_numel(in);
    *period = 0;
    if (tn == n)
        return TFM_FUSED_IN_FULL;
    if (tn == 1)
        return TFM_FUSED_IN_SCALAR;
    /* Periodic: in, without its leading 1s, is out's trailing dims. */
    int lead = 0;
    while (lead < in->ndim && in->dims[lead] == 1)
        lead++;
    int nk = in->ndim - lead;
    if (nk > out->ndim)
        return TFM_FUSED_IN_OTHER;
    for (int j = 0; j < nk; j++)
        if (in->dims[lead + j] != out->dims[out->ndim - nk + j])
            return TFM_FUSED_IN_OTHER;
    *period = tn;
    return TFM_FUSED_IN_PERIODIC;
}

/* The compiled program (Note [Native fused programs]) over chunks of
 * the output, on all cores for big nodes. */
static tfm_code
run_native(void *ctx)
{
    const run_ctx *c = ctx;
    const void *in[TFM_FUSED_MAX_IN];
    void *out[TFM_FUSED_MAX_OUT];
    for (int k = 0; k < c->p->nin; k++)
        in[k] = c->in[k].data;
    out[0] = c->out;
    for (int k = 1; k < c->p->nout; k++)
        out[k] = c->xout[k];
    const int64_t chunk = 16384;
    int64_t n = c->n, nchunks = (n + chunk - 1) / chunk;
    #pragma omp parallel for schedule(static) if(nchunks > 1 && n >= TFM_PAR_MIN)
    for (int64_t b = 0; b < nchunks; b++) {
        int64_t start = b * chunk;
        c->native(in, out, start, n - start < chunk ? n - start : chunk);
    }
    return TFM_OK;
}

/* Node inputs -> the program's input views; 0 on success. */
static int
classify(run_ctx *c, tfm_tensor *const *in)
{
    const tfm_shape *s = c->shape;
    for (int k = 0; k < c->p->nin; k++) {
        const tfm_tensor *t = in[c->p->first_input + k];
        in_view *iv = &c->in[k];
        iv->tile = NULL;
        iv->dtype = t->dtype;
        iv->data = tfm_tensor_data(t);
        if (t->shape.ndim > s->ndim)
            return -1;
        int kind = tfm_fused_input_kind(s, &t->shape, &iv->period);
        if (kind == TFM_FUSED_IN_FULL) {
            iv->kind = IN_FULL;
        } else if (kind == TFM_FUSED_IN_SCALAR) {
            iv->kind = IN_SCALAR;
        } else {
            iv->kind = IN_GATHER;
            int64_t st = 1;
            for (int d = s->ndim - 1; d >= 0; d--) {
                int td = d - (s->ndim - t->shape.ndim);
                int64_t dim = td >= 0 ? t->shape.dims[td] : 1;
                if (dim != 1 && dim != s->dims[d])
                    return -1;
                iv->stride[d] = dim == 1 ? 0 : st;
                st *= dim;
            }
        }
    }
    return 0;
}

/* The block size, and how broadcast inputs are read: a block that is a
 * multiple of the first periodic input's period lets every input with
 * that period be a tile, made once here. */
static tfm_code
plan_inputs(run_ctx *c)
{
    const tfm_fused_prog *p = c->p;
    int nbroad = 0;
    for (int k = 0; k < p->nin; k++)
        nbroad += c->in[k].kind == IN_GATHER;
    int64_t bs = block_size(p->nreg + nbroad);
    /* A small node is one block no bigger than itself: its scratch then
     * fits run_small's stack buffer. */
    if (c->n < bs)
        bs = (c->n + 63) & ~(int64_t)63;
    for (int k = 0; k < p->nin; k++)
        if (c->in[k].kind == IN_GATHER && c->in[k].period > 0 &&
            c->in[k].period <= bs) {
            bs -= bs % c->in[k].period;
            break;
        }
    c->block = bs;
    c->ngather = 0;
    for (int k = 0; k < p->nin; k++) {
        in_view *iv = &c->in[k];
        if (iv->kind != IN_GATHER)
            continue;
        if (iv->period <= 0 || bs % iv->period) {
            iv->gather = c->ngather++;
            continue;
        }
        size_t es = tfm_dtype_size(iv->dtype);
        size_t chunk = (size_t)iv->period * es;
        iv->tile = malloc((size_t)bs * es);
        if (!iv->tile)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM running a "
                             "fused node");
        for (int64_t r = 0; r < bs / iv->period; r++)
            memcpy(iv->tile + (size_t)r * chunk, iv->data, chunk);
        iv->kind = IN_TILE;
    }
    return TFM_OK;
}

static void
free_tiles(run_ctx *c)
{
    for (int k = 0; k < c->p->nin; k++) {
        free(c->in[k].tile);
        c->in[k].tile = NULL;
    }
}

/* The program op by op on whole tensors through the dispatcher (which
 * records on tapes when `recorded`): the unfused computation. */
static tfm_code
run_ops(const tfm_node *nd, tfm_tensor *const *in, tfm_tensor **out,
        int recorded)
{
    const tfm_fused_prog *p = nd->prog;
    tfm_tensor *reg[TFM_FUSED_MAX_INSTR] = {0}, *base = NULL, *val = NULL;
    tfm_code rc = TFM_OK;
    tfm_code (*call)(tfm_op, tfm_tensor *const *, int, const tfm_attrs *,
                     tfm_tensor **, int *) = recorded ? tfm_call
                                                      : tfm_run_kernel;
    int nout;
    if (p->first_input) {
        rc = call(TFM_OP_MATMUL, in, 2, nd->attrs, &base, &nout);
        if (rc)
            return rc;
    }
    for (int i = 0; i < p->ninstr; i++) {
        const tfm_fused_instr *ins = &p->code[i];
        tfm_tensor *a[2];
        tfm_attrs at;
        tfm_attrs_init(&at);
        at.dtype = (tfm_dtype)ins->adtype;
        at.i[0] = ins->ai;
        at.f[0] = ins->af;
        for (int k = 0; k < ins->nin; k++) {
            int s = ins->src[k];
            a[k] = s >= 0 ? reg[s] : s == TFM_FUSED_BASE ? base
                 : in[p->first_input + TFM_FUSED_INPUT_INDEX(s)];
        }
        rc = call((tfm_op)ins->op, a, ins->nin, &at, &val, &nout);
        if (rc)
            goto done;
        if (ins->out > 0) {
            tfm_tensor_incref(val);
            out[ins->out] = val;
        }
        if (reg[ins->dst])
            tfm_tensor_decref(reg[ins->dst]);
        reg[ins->dst] = val;
    }
    out[0] = reg[p->code[p->ninstr - 1].dst];
    reg[p->code[p->ninstr - 1].dst] = NULL;
done:
    for (int k = 1; rc && k < p->nout; k++)
        if (out[k]) {
            tfm_tensor_decref(out[k]);
            out[k] = NULL;
        }
    for (int r = 0; r < p->nreg; r++)
        if (reg[r])
            tfm_tensor_decref(reg[r]);
    if (base)
        tfm_tensor_decref(base);
    return rc;
}

static void
drop_planned(tfm_tensor **planned, int n)
{
    for (int k = 0; k < n; k++)
        if (planned[k])
            tfm_tensor_decref(planned[k]);
}

static void
drop_outputs(tfm_tensor *o, tfm_tensor **out, int nout)
{
    tfm_tensor_decref(o);
    for (int k = 1; k < nout; k++) {
        tfm_tensor_decref(out[k]);
        out[k] = NULL;
    }
}

tfm_code
tfm_fused_run(const tfm_node *nd, tfm_tensor *const *in, tfm_tensor **out,
              int recorded, tfm_fused_native_fn native, int keep_lock)
{
    const tfm_fused_prog *p = nd->prog;
    /* Outputs the memory plan placed (Note [Memory plan] in exec.c):
     * ours to use or drop. */
    tfm_tensor *planned[TFM_FUSED_MAX_OUT] = {NULL};
    int nplanned = nd->nout < TFM_FUSED_MAX_OUT ? nd->nout
                                                : TFM_FUSED_MAX_OUT;
    for (int k = 0; k < nplanned; k++) {
        planned[k] = out[k];
        out[k] = NULL;
    }
    if (!p || p->ninstr < 1 || p->nout != nd->nout) {
        drop_planned(planned, nplanned);
        return tfm_error(TFM_ERR_INTERNAL, "%s node '%s' has no program",
                         tfm_ops[nd->op].name, nd->name);
    }
    int fast = !recorded && tfm_device_scope() <= 0;
    for (int i = 0; fast && i < nd->nin; i++)
        fast = in[i]->device == 0;
    if (!fast) {
        drop_planned(planned, nplanned);
        return run_ops(nd, in, out, recorded);
    }

    run_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.out_dtype = nd->out[0].dtype;
    tfm_tensor *o = planned[0];
    int was_planned = o != NULL;
    planned[0] = NULL;
    if (p->first_input) {
        int nout;
        tfm_code rc = o ? tfm_run_kernel_into(TFM_OP_MATMUL, in, 2,
                                              nd->attrs, &o, 1)
                        : tfm_run_kernel(TFM_OP_MATMUL, in, 2, nd->attrs,
                                         &o, &nout);
        if (rc) {
            if (o)
                tfm_tensor_decref(o);
            drop_planned(planned, nplanned);
            return rc;
        }
    } else if (!o) {
        o = tfm_tensor_new(c.out_dtype, &nd->out[0].shape, 0);
        if (!o) {
            drop_planned(planned, nplanned);
            return tfm_error_code();
        }
    }
    /* The first output may be the memory of an input (in place) only
     * for a single-output _FusedElementwise: see exec.c's plan. */
    int in_place = was_planned && !p->first_input && nd->nout == 1;
    for (int k = 1; k < p->nout; k++) {
        out[k] = planned[k] ? planned[k]
                 : tfm_tensor_new(nd->out[k].dtype, &nd->out[k].shape, 0);
        planned[k] = NULL;
        if (!out[k]) {
            tfm_code rc = tfm_error_code();
            for (int j = 1; j < k; j++) {
                tfm_tensor_decref(out[j]);
                out[j] = NULL;
            }
            tfm_tensor_decref(o);
            drop_planned(planned, nplanned);
            return rc;
        }
        c.xout[k] = tfm_tensor_data(out[k]);
    }
    c.shape = &o->shape;
    int64_t n = tfm_tensor_numel(o);
    if (n == 0) {
        out[0] = o;
        return TFM_OK;
    }
    if (o->dtype != c.out_dtype || classify(&c, in)) {
        drop_outputs(o, out, p->nout);
        return run_ops(nd, in, out, recorded);
    }
    c.out = tfm_tensor_data(o);
    c.n = n;
    if (native) {
        /* The plan compiled it for these shapes: no input is a
         * broadcast other than scalar or periodic. */
        c.native = native;
        tfm_code rc = keep_lock ? run_native(&c)
                      : tfm_run_unlocked(run_native, &c, n * (p->nin + 1));
        if (rc) {
            drop_outputs(o, out, p->nout);
            return rc;
        }
        out[0] = o;
        return TFM_OK;
    }
    if (plan_inputs(&c)) {
        free_tiles(&c);
        drop_outputs(o, out, p->nout);
        return tfm_error_code();
    }
    tfm_attrs at[TFM_FUSED_MAX_INSTR];
    for (int i = 0; i < p->ninstr; i++) {
        tfm_attrs_init(&at[i]);
        at[i].dtype = (tfm_dtype)p->code[i].adtype;
        at[i].i[0] = p->code[i].ai;
        at[i].f[0] = p->code[i].af;
    }
    c.attrs = at;
    /* Big programs run without the interpreter's lock, like big
     * kernels (tfm_run_kernel): nothing below touches a refcount. */
    tfm_code rc = tfm_run_unlocked(run_blocks, &c,
                                   n * (p->nin + 1));
    free_tiles(&c);
    if (rc && in_place) {
        /* The output shares an input's memory, now partly overwritten:
         * rerunning op by op would read it. */
        drop_outputs(o, out, p->nout);
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s node '%s': a "
                         "block of the fused program failed (out of "
                         "memory for its scratch?)", tfm_ops[nd->op].name,
                         nd->name);
    }
    if (rc) {
        drop_outputs(o, out, p->nout);
        return run_ops(nd, in, out, recorded);
    }
    out[0] = o;
    return TFM_OK;
}
