/* The matmul epilogue: MatMul (BatchMatMulV2, any adjoints) followed by
 * a chain of elementwise ops on its result (the bias add and activation
 * of a Dense layer: AddV2(x @ w, b) then Relu) becomes one _FusedMatMul
 * node. The matmul writes the output; the chain then runs on it in place,
 * block by block while each block is in cache (graph/fused.c), with no
 * tensor for the pre-bias or pre-activation value.
 *
 * The chain follows single readers: each link is fusable
 * (tfm_fused_can_fuse), the only reader of the previous link, of the
 * matmul's shape and dtype (the result is computed in the matmul's
 * buffer); its other operand, if any, becomes an input of the node. The
 * node takes the last link's place and name and the matmul's line. It
 * runs before elementwise fusion, so a Dense layer's bias and activation
 * go to its matmul rather than to a separate fused node. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../core/shape.h"
#include "fused.h"

#define MAX_CHAIN 16

static int
same_meta(const tfm_meta *a, const tfm_meta *b)
{
    return a->dtype == b->dtype && tfm_shape_equal(&a->shape, &b->shape);
}

/* The chain after matmul node k into chain[] (chain[0] = k); returns its
 * length (1: nothing to fuse). */
static int
find_chain(const tfm_graph *g, const int32_t *uses, const int32_t *consumer,
           const uint8_t *taken, int32_t k, int32_t *chain)
{
    const tfm_node *mm = tfm_graph_node(g, k);
    int len = 1, ext = 0;
    chain[0] = k;
    if (mm->nout != 1 || !tfm_shape_is_known(&mm->out[0].shape) ||
        (mm->out[0].dtype != TFM_FLOAT32 && mm->out[0].dtype != TFM_FLOAT64))
        return 1;
    int32_t cur = k;
    while (len < MAX_CHAIN && uses[cur] == 1 && consumer[cur] >= 0) {
        int32_t c = consumer[cur];
        const tfm_node *cn = tfm_graph_node(g, c);
        if (taken[c] || cn->nctrl || !tfm_fused_can_fuse(g, cn) ||
            !same_meta(&cn->out[0], &mm->out[0]) ||
            ext + cn->nin - 1 > TFM_FUSED_MAX_IN)
            break;
        ext += cn->nin - 1;
        chain[len++] = c;
        cur = c;
    }
    return len;
}

static tfm_code
emit_chain(tfm_rw *rw, const int32_t *chain, int len)
{
    const tfm_graph *g = rw->src;
    const tfm_node *mm = tfm_graph_node(g, chain[0]);
    const tfm_node *last = tfm_graph_node(g, chain[len - 1]);
    tfm_fused_prog *p = malloc(sizeof *p);
    tfm_ref in[2 + TFM_FUSED_MAX_IN];
    int nin = 2;
    if (!p)
        return tfm_fuse_oom();
    tfm_fused_init(p, 2);
    in[0] = tfm_rw_ref(rw, mm->in[0]);
    in[1] = tfm_rw_ref(rw, mm->in[1]);
    for (int i = 1; i < len; i++) {
        const tfm_node *nd = tfm_graph_node(g, chain[i]);
        int16_t src[2];
        for (int k = 0; k < nd->nin; k++) {
            if (nd->in[k].node == chain[i - 1]) {
                src[k] = i == 1 ? TFM_FUSED_BASE : (int16_t)(i - 2);
            } else {
                src[k] = (int16_t)TFM_FUSED_INPUT(nin - 2);
                in[nin++] = tfm_rw_ref(rw, nd->in[k]);
            }
        }
        tfm_fused_emit(p, nd, src);
    }
    tfm_fused_finish(p);
    int d = tfm_rw_add(rw, TFM_OP_FUSED_MATMUL, in, nin, mm->attrs,
                       last->out, 1, last->name, mm->site, NULL);
    tfm_code rc = d < 0 ? tfm_error_code() : TFM_OK;
    if (!rc)
        rc = tfm_rw_copy_ctrl(rw, chain[0], d);
    if (!rc)
        rc = tfm_fused_attach(rw->dst, d, p);
    if (!rc)
        tfm_rw_set(rw, chain[len - 1], d);
    free(p);
    return rc;
}

/* Links are skipped until the last, which emits the node; the chain is
 * the matmul's readers, one by one, up to k. */
static tfm_code
emit_role(tfm_rw *rw, int32_t k, int32_t head, void *scratch)
{
    const tfm_fuse_scratch *s = scratch;
    int32_t chain[MAX_CHAIN];
    int32_t c = head;
    int len = 0;
    if (s->consumer[k] >= 0 && s->role[s->consumer[k]] == head &&
        s->uses[k] == 1)
        return TFM_OK;
    chain[len++] = c;
    while (c != k) {
        c = s->consumer[c];
        chain[len++] = c;
    }
    return emit_chain(rw, chain, len);
}

tfm_graph *
tfm_pass_epilogue(tfm_graph *g)
{
    tfm_fuse_scratch s;
    if (tfm_fuse_scratch_init(&s, g))
        return NULL;
    int32_t n = s.n;
    int32_t *head = s.role;  /* chain -> matmul */
    uint8_t *taken = calloc((size_t)n + 1, 1);
    int32_t chain[MAX_CHAIN];
    tfm_graph *out = NULL;
    int found = 0;
    if (!taken) {
        tfm_fuse_oom();
        goto done;
    }
    for (int32_t k = 0; k < n; k++) {
        if (tfm_graph_node(g, k)->op != TFM_OP_MATMUL)
            continue;
        int len = find_chain(g, s.uses, s.consumer, taken, k, chain);
        if (len < 2)
            continue;
        for (int i = 0; i < len; i++) {
            taken[chain[i]] = 1;
            head[chain[i]] = k;
        }
        found = 1;
    }
    out = tfm_fuse_rewrite(g, head, found, emit_role, &s);
done:
    tfm_fuse_scratch_free(&s);
    free(taken);
    return out;
}
