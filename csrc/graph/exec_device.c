/* See exec_device.h. */
#include "exec_device.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/state.h"
#include "../runtime/dispatch.h"
#include "fused.h"
#include "fused_epilogue.h"

double
tfm_exec_scalar(tfm_tensor *t)
{
    if (t->device == 0)
        return tfm_tensor_get_f64(t, 0);
    tfm_tensor *h = tfm_tensor_to_host(t);
    if (!h)
        return __builtin_nan("");
    double v = tfm_tensor_get_f64(h, 0);
    tfm_tensor_decref(h);
    return v;
}

tfm_code
tfm_exec_print(const tfm_node *n, tfm_tensor *const *in)
{
    tfm_tensor *host[TFM_MAX_INPUTS];
    tfm_code rc = TFM_OK;
    int i;
    for (i = 0; i < n->nin; i++)
        if (!(host[i] = tfm_tensor_to_host(in[i]))) {
            rc = tfm_error_code();
            break;
        }
    if (!rc)
        rc = tfm_print_tensors(n->text, host, n->nin, (int)n->attrs->i[0],
                               (int)n->attrs->i[1]);
    while (i-- > 0)
        tfm_tensor_decref(host[i]);
    return rc;
}

tfm_code
tfm_exec_assert_failed(const tfm_node *n, tfm_tensor *const *data)
{
    tfm_tensor *host[TFM_MAX_INPUTS] = {NULL};
    int i;
    for (i = 0; i < n->nin - 1; i++)
        if (!(host[i] = tfm_tensor_to_host(data[i])))
            break;
    char *text = i == n->nin - 1
                     ? tfm_format_line(n->text, host, i, (int)n->attrs->i[1])
                     : NULL;
    while (i-- > 0)
        tfm_tensor_decref(host[i]);
    if (!text)
        return tfm_error_code();
    tfm_code rc = tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s", text);
    free(text);
    return rc;
}

tfm_code
tfm_exec_copy(const tfm_node *n, tfm_tensor *x, tfm_tensor **out,
              int recorded)
{
    if (!tfm_device_get(n->device))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "_Copy to device %d, "
                         "which is not there", n->device);
    if (!recorded)
        return (*out = tfm_tensor_to_device(x, n->device)) ? TFM_OK
                                                          : tfm_error_code();
    int old = tfm_device_scope(), nout = 0;
    tfm_device_set_scope(n->device);
    tfm_code rc = tfm_call(TFM_OP_IDENTITY, &x, 1, NULL, out, &nout);
    tfm_device_set_scope(old);
    return rc;
}

/* The device's own kernel for the whole program (a GPU's is
 * fused_nvrtc.c's; another device's, its table's entry), when it has
 * one and takes the program: 1 when it ran (*rc its result), 0 to run
 * the program op by op. */
static int
fused_kernel(const tfm_node *n, tfm_tensor *const *in, tfm_tensor **out,
             tfm_code *rc)
{
    const tfm_device *d = tfm_device_get(n->device);
    tfm_kernel_fn k = d && strcmp(d->kind, "GPU") == 0
                          ? tfm_fused_gpu_kernel()
                          : tfm_kernel_for(n->op, n->device);
    tfm_tensor *t[TFM_FUSED_MAX_OUT];
    tfm_fused_attrs fa;
    if (!k || !n->prog || n->nout > TFM_FUSED_MAX_OUT)
        return 0;
    for (int j = 0; j < n->nout; j++)
        if (out[j] || !tfm_shape_is_known(&n->out[j].shape))
            return 0;
    if (n->attrs)
        fa.a = *n->attrs;
    else
        tfm_attrs_init(&fa.a);
    fa.prog = n->prog;
    int j;
    for (j = 0; j < n->nout; j++)
        if (!(t[j] = tfm_tensor_new(n->out[j].dtype, &n->out[j].shape,
                                    n->device)))
            break;
    *rc = j < n->nout ? tfm_error_code()
                      : k(n->op, in, n->nin, &fa.a, t, n->nout,
                          tfm_device_kctx(n->device));
    if (!*rc) {
        for (int i = 0; i < n->nout; i++)
            out[i] = t[i];
        return 1;
    }
    while (j-- > 0)
        tfm_tensor_decref(t[j]);
    if (*rc != TFM_ERR_UNIMPLEMENTED)
        return 1;
    tfm_error_clear();      /* declined: the program runs op by op */
    *rc = TFM_OK;
    return 0;
}

/* A _FusedMatMul on a GPU as one cublasLtMatmul with an epilogue, when
 * its program is one (Note [Matmul epilogues on the GPU] in
 * fused_epilogue.c): 1 when it ran (*rc its result), 0 to run the
 * matmul and then the program as before. */
static int
matmul_epilogue(const tfm_node *n, tfm_tensor *const *in, tfm_tensor **out,
                tfm_code *rc)
{
#ifdef TFMINI_WITH_CUDA
    const tfm_device *d = tfm_device_get(n->device);
    const tfm_fused_prog *p = n->prog;
    tfm_shape shapes[TFM_FUSED_MAX_IN];
    tfm_dtype dtypes[TFM_FUSED_MAX_IN];
    int bias, done = 0;
    if (!d || strcmp(d->kind, "GPU") != 0 || !p || n->nout != 1 ||
        out[0] || n->nin < 2 || p->nin != n->nin - 2 ||
        !tfm_shape_is_known(&n->out[0].shape))
        return 0;
    for (int k = 0; k < p->nin; k++) {
        shapes[k] = in[2 + k]->shape;
        dtypes[k] = in[2 + k]->dtype;
    }
    int epi = tfm_fused_epilogue(p, n->out[0].dtype, &n->out[0].shape,
                                 shapes, dtypes, &bias);
    if (epi == TFM_LT_EPI_NONE)
        return 0;
    tfm_attrs none;
    tfm_attrs_init(&none);
    tfm_tensor *t = tfm_tensor_new(n->out[0].dtype, &n->out[0].shape,
                                   n->device);
    if (!t) {
        /* No room now: the general path may still find it. */
        tfm_error_clear();
        return 0;
    }
    *rc = tfm_cuda_matmul_epilogue(in, n->attrs ? n->attrs : &none, epi,
                                   bias >= 0 ? in[2 + bias] : NULL, t,
                                   tfm_device_kctx(n->device), &done);
    if (*rc || !done) {
        tfm_tensor_decref(t);
        return *rc != TFM_OK;
    }
    out[0] = t;
    return 1;
#else
    (void)n;
    (void)in;
    (void)out;
    (void)rc;
    return 0;
#endif
}

tfm_code
tfm_exec_fused_on_device(const tfm_node *n, tfm_tensor *const *in,
                         tfm_tensor **out, int recorded)
{
    tfm_tensor *moved[TFM_MAX_INPUTS];
    tfm_code rc = TFM_OK;
    int i;
    for (i = 0; i < n->nin; i++)
        if (!(moved[i] = tfm_tensor_to_device(in[i], n->device))) {
            rc = tfm_error_code();
            break;
        }
    /* Replayed under a tape, the ops run one by one so that it records
     * them. */
    int ran = 0;
    if (!rc && !recorded)
        ran = n->op == TFM_OP_FUSED_ELEMENTWISE
                  ? fused_kernel(n, moved, out, &rc)
                  : n->op == TFM_OP_FUSED_MATMUL
                        ? matmul_epilogue(n, moved, out, &rc) : 0;
    if (!rc && !ran) {
        /* Otherwise the fused program runs op by op (fused.c's
         * run_ops), each op where the scope says. */
        int old = tfm_device_scope();
        tfm_device_set_scope(n->device);
        rc = tfm_fused_run(n, moved, out, recorded, NULL, 0);
        tfm_device_set_scope(old);
    }
    while (i-- > 0)
        tfm_tensor_decref(moved[i]);
    return rc;
}
