/* Elementwise fusion: each maximal tree of fusable elementwise ops
 * (tfm_fused_can_fuse) whose interior values have one reader, inside the
 * tree, becomes one _FusedElementwise node that graph/fused.c evaluates
 * block by block with no intermediate tensors (Note [Fused programs]).
 *
 * Trees grow from their root, the latest node of the group, towards the
 * inputs: in reverse creation order, a node no group took yet starts a
 * group and takes each input that is fusable, read only by the group
 * (every reader a member) and of the root's shape (so that every
 * register is block-shaped; a smaller operand, such as a bias, stays an
 * input and is broadcast as it is read). A value also read outside the
 * group joins only if those readers come after the root, and becomes an
 * extra output of the fused node; otherwise the tree ends there and the
 * value roots its own. The
 * fused node takes the root's place, name and source line, so program
 * order, graph outputs and error messages carry over; its inputs are the
 * tree's leaves, which all come before the root. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "fused.h"

static int
same_shape(const tfm_shape *a, const tfm_shape *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

typedef struct fuse_state {
    const tfm_graph *g;
    int32_t *uses, *consumer, *group;
    int32_t *inrefs;     /* reads from the group being grown */
    int32_t *rstart, *readers;  /* node m's readers: readers[rstart[m]..
                                 * rstart[m + 1]) */
    uint8_t *pinned;     /* a control edge points at it */
    uint8_t *ok;         /* fusable */
} fuse_state;

/* Whether m, read by the group rooted at r and by others, may join as
 * an extra output: every reader before the root is a member already (a
 * reader after it reads the fused node's output). */
static int
may_export(const fuse_state *fs, int32_t r, int32_t m)
{
    if (fs->pinned[m])
        return 0;
    for (int32_t i = fs->rstart[m]; i < fs->rstart[m + 1]; i++) {
        int32_t q = fs->readers[i];
        if (q <= r && fs->group[q] != r)
            return 0;
    }
    return 1;
}

/* Grow the group rooted at r; its members (ascending) into mem, their
 * count returned. A node joins once every read of it comes from the
 * group (inrefs counts those reads), so a value the tree reads twice,
 * such as y in y * y - y, is fused too; or, up to TFM_FUSED_MAX_OUT - 1
 * of them, when its other readers come after the root (may_export): the
 * fused node then outputs it too. */
static int
grow(fuse_state *fs, int32_t r, int32_t *mem)
{
    const tfm_graph *g = fs->g;
    const tfm_shape *shape = &tfm_graph_node(g, r)->out[0].shape;
    int nmem = 1, ext = tfm_graph_node(g, r)->nin;
    int32_t touched[2 * TFM_FUSED_MAX_INSTR];
    int ntouched = 0, nexport = 0;
    mem[0] = r;
    fs->group[r] = r;
    for (int i = 0; i < nmem; i++) {
        const tfm_node *nd = tfm_graph_node(g, mem[i]);
        for (int k = 0; k < nd->nin; k++) {
            int32_t m = nd->in[k].node;
            if (fs->inrefs[m]++ == 0)
                touched[ntouched++] = m;
            const tfm_node *mn = tfm_graph_node(g, m);
            if (fs->group[m] >= 0 || !fs->ok[m] || mn->nctrl ||
                !same_shape(&mn->out[0].shape, shape) ||
                nmem >= TFM_FUSED_MAX_INSTR ||
                ext - 1 + mn->nin > TFM_FUSED_MAX_IN)
                continue;
            int export = fs->inrefs[m] != fs->uses[m];
            if (export && (nexport >= TFM_FUSED_MAX_OUT - 1 ||
                           !may_export(fs, r, m)))
                continue;
            nexport += export;
            fs->group[m] = r;
            mem[nmem++] = m;
            ext += mn->nin - 1;
        }
    }
    for (int i = 0; i < ntouched; i++)
        fs->inrefs[touched[i]] = 0;
    /* Creation order is an order the program may run in. */
    for (int i = 1; i < nmem; i++)
        for (int j = i; j > 0 && mem[j - 1] > mem[j]; j--) {
            int32_t t = mem[j];
            mem[j] = mem[j - 1];
            mem[j - 1] = t;
        }
    return nmem;
}

/* Build the program of the group rooted at r (members mem[0..nmem)) and
 * its node in rw's output. */
static tfm_code
emit_group(fuse_state *fs, tfm_rw *rw, int32_t r, const int32_t *mem,
           int nmem)
{
    const tfm_graph *g = fs->g;
    tfm_fused_prog *p = malloc(sizeof *p);
    tfm_ref ext[TFM_FUSED_MAX_IN];
    int next = 0;
    int16_t index_of[TFM_FUSED_MAX_INSTR];
    if (!p)
        return tfm_fuse_oom();
    tfm_fused_init(p, 0);
    for (int i = 0; i < nmem; i++) {
        const tfm_node *nd = tfm_graph_node(g, mem[i]);
        int16_t src[2];
        for (int k = 0; k < nd->nin; k++) {
            tfm_ref in = nd->in[k];
            int j;
            for (j = 0; j < i && mem[j] != in.node; j++)
                ;
            if (j < i) {
                src[k] = index_of[j];
                continue;
            }
            for (j = 0; j < next && (ext[j].node != in.node ||
                                     ext[j].out != in.out); j++)
                ;
            if (j == next)
                ext[next++] = in;
            src[k] = (int16_t)TFM_FUSED_INPUT(j);
        }
        index_of[i] = (int16_t)tfm_fused_emit(p, nd, src);
    }
    /* Members read outside the group are outputs 1, 2, ... */
    const tfm_node *root = tfm_graph_node(g, r);
    tfm_meta metas[TFM_FUSED_MAX_OUT];
    int32_t exported[TFM_FUSED_MAX_OUT];
    metas[0] = root->out[0];
    for (int i = 0; i < nmem - 1; i++) {
        int reads = 0;
        for (int j = i + 1; j < nmem; j++) {
            const tfm_node *q = tfm_graph_node(g, mem[j]);
            for (int k = 0; k < q->nin; k++)
                reads += q->in[k].node == mem[i];
        }
        if (reads < fs->uses[mem[i]] && p->nout < TFM_FUSED_MAX_OUT) {
            p->code[index_of[i]].out = (int16_t)p->nout;
            exported[p->nout] = mem[i];
            metas[p->nout++] = tfm_graph_node(g, mem[i])->out[0];
        }
    }
    tfm_fused_finish(p);
    tfm_ref in[TFM_FUSED_MAX_IN];
    for (int j = 0; j < next; j++)
        in[j] = tfm_rw_ref(rw, ext[j]);
    int d = tfm_rw_add(rw, TFM_OP_FUSED_ELEMENTWISE, in, next, NULL,
                       metas, p->nout, root->name, root->site, NULL);
    tfm_code rc = d < 0 ? tfm_error_code() : TFM_OK;
    if (!rc)
        rc = tfm_rw_copy_ctrl(rw, r, d);
    if (!rc)
        rc = tfm_fused_attach(rw->dst, d, p);
    if (!rc) {
        tfm_rw_alias(rw, r, 0, (tfm_ref){d, 0});
        for (int k = 1; k < p->nout; k++)
            tfm_rw_alias(rw, exported[k], 0, (tfm_ref){d, k});
    }
    free(p);
    return rc;
}

/* fs->rstart, readers and pinned for g's n nodes. */
static tfm_code
index_readers(fuse_state *fs, int32_t n)
{
    const tfm_graph *g = fs->g;
    int32_t total = 0;
    fs->rstart = calloc((size_t)n + 2, sizeof(int32_t));
    fs->pinned = calloc((size_t)n + 1, 1);
    if (!fs->rstart || !fs->pinned)
        goto oom;
    for (int32_t k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        for (int i = 0; i < nd->nin; i++)
            fs->rstart[nd->in[i].node + 1]++;
        for (int i = 0; i < nd->nctrl; i++)
            fs->pinned[nd->ctrl[i]] = 1;
        total += nd->nin;
    }
    for (int32_t k = 0; k < n; k++)
        fs->rstart[k + 1] += fs->rstart[k];
    fs->readers = malloc(sizeof(int32_t) * ((size_t)total + 1));
    int32_t *fill = malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!fs->readers || !fill) {
        free(fill);
        goto oom;
    }
    memcpy(fill, fs->rstart, sizeof(int32_t) * (size_t)n);
    for (int32_t k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        for (int i = 0; i < nd->nin; i++)
            fs->readers[fill[nd->in[i].node]++] = k;
    }
    free(fill);
    return TFM_OK;
oom:
    return tfm_fuse_oom();
}

static tfm_graph *
fuse(tfm_graph *g)
{
    tfm_fuse_scratch s;
    if (tfm_fuse_scratch_init(&s, g))
        return NULL;
    int32_t n = s.n;
    size_t sz = (size_t)n + 1;
    /* group[] starts as the scratch's role[]: -1, no group yet. */
    fuse_state fs = {.g = g, .uses = s.uses, .consumer = s.consumer,
                     .group = s.role,
                     .inrefs = calloc(sz, sizeof(int32_t)),
                     .ok = calloc(sz, 1)};
    int32_t *count = calloc(sz, sizeof(int32_t));
    int32_t mem[TFM_FUSED_MAX_INSTR];
    int32_t **members = calloc(sz, sizeof(int32_t *));
    tfm_graph *out = NULL;
    int groups = 0;
    if (!fs.inrefs || !fs.ok || !count || !members) {
        tfm_fuse_oom();
        goto done;
    }
    if (index_readers(&fs, n))
        goto done;
    for (int32_t k = 0; k < n; k++)
        fs.ok[k] = (uint8_t)tfm_fused_can_fuse(g, tfm_graph_node(g, k));
    for (int32_t r = n - 1; r >= 0; r--) {
        if (fs.group[r] >= 0 || !fs.ok[r])
            continue;
        int nmem = grow(&fs, r, mem);
        if (nmem < 2) {
            fs.group[r] = -1;
            continue;
        }
        members[r] = malloc(sizeof(int32_t) * (size_t)nmem);
        if (!members[r]) {
            tfm_fuse_oom();
            goto done;
        }
        memcpy(members[r], mem, sizeof(int32_t) * (size_t)nmem);
        count[r] = nmem;
        groups++;
    }
    if (!groups) {
        tfm_graph_incref(g);
        out = g;
        goto done;
    }
    tfm_rw rw;
    if (tfm_rw_begin(&rw, g))
        goto done;
    for (int32_t k = 0; k < n; k++) {
        if (count[k]) {
            if (emit_group(&fs, &rw, k, members[k], count[k])) {
                tfm_rw_abort(&rw);
                goto done;
            }
        } else if (fs.group[k] < 0 && tfm_rw_copy(&rw, k) < 0) {
            tfm_rw_abort(&rw);
            goto done;
        }
    }
    out = tfm_rw_finish(&rw);
done:
    for (int32_t k = 0; members && k < n; k++)
        free(members[k]);
    free(members);
    free(count);
    tfm_fuse_scratch_free(&s);
    free(fs.inrefs);
    free(fs.rstart);
    free(fs.readers);
    free(fs.pinned);
    free(fs.ok);
    return out;
}

tfm_graph *
tfm_pass_fuse(tfm_graph *g)
{
    tfm_graph *u = tfm_fuse_prepare_updates(g);
    if (!u)
        return NULL;
    tfm_graph *out = fuse(u);
    if (out == u && u != g) {
        /* Nothing fused: the expanded updates would only be slower. */
        tfm_graph_decref(out);
        tfm_graph_incref(g);
        out = g;
    }
    tfm_graph_decref(u);
    return out;
}
