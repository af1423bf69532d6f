#include "dispatch.h"

#include <stdio.h>
#include <string.h>

#include "tape.h"
#include "trace.h"

static _Thread_local int device_scope = -1;   /* per thread, as in TF */
static tfm_unlock_fn unlock_hook;
static tfm_relock_fn relock_hook;

/* Elements touched above which a kernel runs without the caller's lock. */
#define UNLOCK_MIN_ELEMENTS 65536

void
tfm_set_lock_hooks(tfm_unlock_fn unlock, tfm_relock_fn relock)
{
    unlock_hook = unlock;
    relock_hook = relock;
}

tfm_code
tfm_run_unlocked(tfm_code (*fn)(void *), void *ctx, int64_t work)
{
    if (!unlock_hook || work < UNLOCK_MIN_ELEMENTS)
        return fn(ctx);
    void *token = unlock_hook();
    tfm_code rc = fn(ctx);
    relock_hook(token);
    return rc;
}

static int64_t
work_size(tfm_tensor *const *in, int nin, tfm_tensor *const *out, int nout)
{
    int64_t n = 0;
    for (int i = 0; i < nin; i++)
        n += tfm_tensor_numel(in[i]);
    for (int i = 0; i < nout; i++)
        n += tfm_tensor_numel(out[i]);
    return n;
}

/* k on in -> out, without the caller's lock when the work is big. */
static tfm_code
call_kernel(tfm_kernel_fn k, tfm_op op, tfm_tensor *const *in, int nin,
            const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    if (!unlock_hook || work_size(in, nin, out, nout) < UNLOCK_MIN_ELEMENTS)
        return k(op, in, nin, a, out, nout);
    void *token = unlock_hook();
    tfm_code rc = k(op, in, nin, a, out, nout);
    relock_hook(token);
    return rc;
}

int
tfm_device_scope(void)
{
    return device_scope;
}

void
tfm_device_set_scope(int device)
{
    device_scope = device;
}

static tfm_code
check_arity(tfm_op op, int nin)
{
    const tfm_op_def *d = &tfm_ops[op];
    if (nin < 0 || nin > TFM_MAX_INPUTS)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %d inputs is out "
                         "of range", d->name, nin);
    if (d->n_inputs >= 0 && nin != d->n_inputs)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s expects %d inputs, got %d", d->name,
                         d->n_inputs, nin);
    return TFM_OK;
}

tfm_code
tfm_infer(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_meta *out, int *nout)
{
    tfm_meta meta[TFM_MAX_INPUTS];
    tfm_code rc = check_arity(op, nin);
    if (rc)
        return rc;
    for (int i = 0; i < nin; i++) {
        meta[i].dtype = in[i]->dtype;
        meta[i].shape = in[i]->shape;
    }
    *nout = tfm_ops[op].n_outputs > 0 ? tfm_ops[op].n_outputs : 0;
    return tfm_op_infer(op, meta, nin, a, out, nout);
}

static tfm_kernel_fn
kernel_for(tfm_op op, int device)
{
    return device == TFM_CPU ? tfm_ops[op].cpu : tfm_op_cuda[op];
}

static int
needs_f16_upcast(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_meta *out, int nout)
{
    if (tfm_ops[op].flags & (TFM_OPF_F16 | TFM_OPF_ANY_DTYPE))
        return 0;
    for (int i = 0; i < nin; i++)
        if (in[i]->dtype == TFM_FLOAT16)
            return 1;
    for (int i = 0; i < nout; i++)
        if (out[i].dtype == TFM_FLOAT16)
            return 1;
    return 0;
}

static tfm_tensor *
cast(tfm_tensor *t, tfm_dtype to)
{
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.dtype = to;
    tfm_tensor *o = NULL;
    int n = 0;
    if (tfm_run_kernel(TFM_OP_CAST, &t, 1, &a, &o, &n))
        return NULL;
    return o;
}

/* Kernels for float16 are optional: without one, compute in float32 and
 * round the results back (TF's documented behaviour on CPU). */
static tfm_code
run_f16_upcast(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
               const tfm_meta *meta, tfm_tensor **out, int *nout)
{
    tfm_tensor *up[TFM_MAX_INPUTS];
    tfm_code rc = TFM_OK;
    int i;
    for (i = 0; i < nin; i++) {
        up[i] = in[i]->dtype == TFM_FLOAT16 ? cast(in[i], TFM_FLOAT32)
                                            : (tfm_tensor_incref(in[i]), in[i]);
        if (!up[i]) {
            rc = tfm_error_code();
            goto done;
        }
    }
    tfm_attrs a32 = *a;
    if (a32.dtype == TFM_FLOAT16)
        a32.dtype = TFM_FLOAT32;
    rc = tfm_run_kernel(op, up, nin, &a32, out, nout);
    for (int k = 0; !rc && k < *nout; k++) {
        if (meta[k].dtype == TFM_FLOAT16 && out[k]->dtype == TFM_FLOAT32) {
            tfm_tensor *h = cast(out[k], TFM_FLOAT16);
            if (!h) {
                rc = tfm_error_code();
                for (int j = 0; j < *nout; j++)
                    tfm_tensor_decref(out[j]);
                break;
            }
            tfm_tensor_decref(out[k]);
            out[k] = h;
        }
    }
done:
    while (i-- > 0)
        tfm_tensor_decref(up[i]);
    return rc;
}

/* The current error (an allocation's: the core knows no ops) again,
 * prefixed with the op's name, as every error a user sees is. */
static tfm_code
name_the_op(tfm_op op)
{
    tfm_code code = tfm_error_code();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tfm_error_message());
    return tfm_error(code ? code : TFM_ERR_INTERNAL, "%s: %s",
                     tfm_ops[op].name, msg);
}

tfm_code
tfm_run_kernel(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
               tfm_tensor **out, int *nout)
{
    tfm_meta meta[TFM_MAX_OUTPUTS];
    tfm_attrs none;
    if (!a) {
        tfm_attrs_init(&none);
        a = &none;
    }
    tfm_code rc = tfm_infer(op, in, nin, a, meta, nout);
    if (rc) {
        *nout = 0;
        return rc;
    }
    int device = device_scope >= 0 ? device_scope
                                   : (nin > 0 ? in[0]->device : TFM_CPU);
    for (int i = 0; i < nin; i++)
        if (in[i]->device != device)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                             "%s: input %d is on device %d but the op runs "
                             "on device %d", tfm_ops[op].name, i,
                             in[i]->device, device);
    tfm_kernel_fn k = kernel_for(op, device);
    if (!k)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s has no %s kernel",
                         tfm_ops[op].name, device ? "GPU" : "CPU");
    if (needs_f16_upcast(op, in, nin, meta, *nout))
        return run_f16_upcast(op, in, nin, a, meta, out, nout);
    int made;
    for (made = 0; made < *nout; made++) {
        out[made] = tfm_tensor_new(meta[made].dtype, &meta[made].shape,
                                   device);
        if (!out[made]) {
            rc = name_the_op(op);
            goto fail;
        }
    }
    rc = call_kernel(k, op, in, nin, a, out, *nout);
    if (!rc)
        return TFM_OK;
fail:
    while (made-- > 0)
        tfm_tensor_decref(out[made]);
    *nout = 0;
    return rc;
}

tfm_code
tfm_run_kernel_into(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    return call_kernel(tfm_ops[op].cpu, op, in, nin, a, out, nout);
}

tfm_code
tfm_call(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor **out, int *nout)
{
    tfm_attrs none;
    if (!a) {
        tfm_attrs_init(&none);
        a = &none;
    }
    tfm_code rc;
    int symbolic = tfm_trace_graph() != NULL;
    for (int i = 0; !symbolic && i < nin; i++)
        symbolic = tfm_tensor_is_symbolic(in[i]);
    if (symbolic)
        rc = tfm_trace_add_op(op, in, nin, a, out, nout);
    else
        rc = tfm_run_kernel(op, in, nin, a, out, nout);
    if (rc)
        return rc;
    if (tfm_tape_active_count > 0) {
        rc = tfm_tape_record(op, in, nin, a, out, *nout);
        if (rc) {
            for (int i = 0; i < *nout; i++)
                tfm_tensor_decref(out[i]);
            *nout = 0;
        }
    }
    return rc;
}

tfm_tensor *
tfm_call1(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a)
{
    tfm_tensor *out[TFM_MAX_OUTPUTS];
    int n = 0;
    if (tfm_call(op, in, nin, a, out, &n))
        return NULL;
    for (int i = 1; i < n; i++)
        tfm_tensor_decref(out[i]);
    if (n < 1) {
        tfm_error(TFM_ERR_INTERNAL, "%s produced no output",
                  tfm_ops[op].name);
        return NULL;
    }
    return out[0];
}
