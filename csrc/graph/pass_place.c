/* Placement: each kernel node gets the device it runs on, and a _Copy
 * node stands wherever a value crosses devices (Note [Device seam] in
 * core/device.h).
 *
 * A node asked for a device (the trace's tf.device scope, or its
 * inputs' device) runs there when the device has a kernel for its op,
 * else on the CPU (TF's soft placement); nodes nobody placed run on the
 * default device (tfm_default_device: a GPU when there is one, as in
 * TF) when it has a kernel, else on the CPU. An input made on another
 * device gets a _Copy to this node's device, one per value and device
 * however many nodes read it. The pass runs first in the pipeline, so
 * the passes after it see the copies: fusion never groups across one (a
 * _Copy is no elementwise op), and nodes they make take their inputs'
 * device. A value whose
 * device shows only at run time (a function input, an If or While
 * output) gets a _Copy when read off the CPU, which moves nothing when
 * the value is there already; read on the CPU, the executor copies it
 * when it arrives from elsewhere. A graph with no node off the CPU is
 * returned as it is. */
#include "passes.h"

#include <stdlib.h>

#include "../runtime/dispatch.h"

/* String tensors live in host memory (Note [String elements] in
 * core/tstring.h): a node that reads or makes one runs on the CPU
 * whatever its scope, as TF's host-memory string kernels do. */
static int
touches_strings(const tfm_graph *g, const tfm_node *nd)
{
    for (int j = 0; j < nd->nout; j++)
        if (nd->out[j].dtype == TFM_STRING)
            return 1;
    for (int i = 0; i < nd->nin; i++)
        if (tfm_graph_node(g, nd->in[i].node)->out[nd->in[i].out].dtype ==
            TFM_STRING)
            return 1;
    return 0;
}

static int
is_kernel_node(const tfm_node *n)
{
    return tfm_ops[n->op].cpu != NULL;
}

/* Where a dst node's outputs are, or -1 when known only at run time. */
static int
output_device(const tfm_node *n)
{
    switch (n->op) {
    case TFM_OP_CONST:
        return n->value->device;
    case TFM_OP_READ_VARIABLE:
    case TFM_OP_COPY:
        return n->device;
    case TFM_OP_PLACEHOLDER:    /* where the caller's value is */
    case TFM_OP_IF:
    case TFM_OP_WHILE:
        return -1;
    default:
        return is_kernel_node(n) ? (n->device < 0 ? 0 : n->device) : -1;
    }
}

static int
off_cpu(const tfm_graph *g)
{
    if (tfm_default_device > 0)
        return 1;
    for (int32_t k = 0; k < tfm_graph_node_count(g); k++) {
        const tfm_node *n = tfm_graph_node(g, k);
        if (n->device > 0 || (n->value && n->value->device > 0))
            return 1;
    }
    return 0;
}

tfm_graph *
tfm_pass_place(tfm_graph *g)
{
    if (!off_cpu(g)) {
        tfm_graph_incref(g);
        return g;
    }
    int32_t n = tfm_graph_node_count(g);
    tfm_rw rw;
    if (tfm_rw_begin(&rw, g))
        return NULL;
    /* Per src value: the last _Copy made of it and to where. */
    int32_t *copy = malloc(sizeof(int32_t) * ((size_t)rw.base[n] + 1));
    int32_t *copy_dev = malloc(sizeof(int32_t) * ((size_t)rw.base[n] + 1));
    if (!copy || !copy_dev) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM placing graph %s",
                  tfm_graph_name(g));
        goto fail;
    }
    for (int32_t s = 0; s < rw.base[n]; s++)
        copy_dev[s] = -1;
    for (int32_t k = 0; k < n; k++) {
        const tfm_node *nd = tfm_graph_node(g, k);
        if (!is_kernel_node(nd)) {
            if (tfm_rw_copy(&rw, k) < 0)
                goto fail;
            continue;
        }
        int want = nd->device < 0 ? tfm_default_device : nd->device;
        int dev = want > 0 && !touches_strings(g, nd)
                      ? tfm_place_op(nd->op, want) : 0;
        tfm_ref in[TFM_MAX_INPUTS];
        for (int i = 0; i < nd->nin; i++) {
            in[i] = tfm_rw_ref(&rw, nd->in[i]);
            int from = output_device(tfm_graph_node(rw.dst, in[i].node));
            /* A value whose device shows only at run time gets a _Copy
             * off the CPU (a no-op when it arrives there already), so
             * that the nodes after it, fused ones too, see its device. */
            if (from == dev || (from < 0 && dev == 0))
                continue;
            int32_t s = rw.base[nd->in[i].node] + nd->in[i].out;
            if (copy_dev[s] != dev) {
                tfm_attrs a;
                tfm_attrs_init(&a);
                a.i[0] = dev;
                const tfm_meta *m =
                    &tfm_graph_node(rw.dst, in[i].node)->out[in[i].out];
                int c = tfm_rw_add(&rw, TFM_OP_COPY, &in[i], 1, &a, m, 1,
                                   "copy", nd->site, NULL);
                if (c < 0)
                    goto fail;
                tfm_graph_set_device(rw.dst, c, dev);
                copy[s] = c;
                copy_dev[s] = dev;
            }
            in[i] = (tfm_ref){copy[s], 0};
        }
        int d = tfm_graph_copy_node(rw.dst, nd, in, NULL, 0);
        if (d < 0 || tfm_rw_copy_ctrl(&rw, k, d))
            goto fail;
        tfm_graph_set_device(rw.dst, d, dev);
        tfm_rw_set(&rw, k, d);
    }
    free(copy);
    free(copy_dev);
    return tfm_rw_finish(&rw);
fail:
    free(copy);
    free(copy_dev);
    tfm_rw_abort(&rw);
    return NULL;
}
