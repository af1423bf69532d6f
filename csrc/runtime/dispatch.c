#include "dispatch.h"

#include <stdio.h>
#include <string.h>

#include "../core/bfloat16.h"
#include "../core/tstring.h"
#include "../kernels/cpu/cpu_takes.h"
#include "../kernels/cpu/string_kernels.h"
#include "../kernels/cuda/cuda.h"
#include "tape.h"
#include "trace.h"

static _Thread_local int device_scope = -1;   /* per thread, as in TF */
static tfm_unlock_fn unlock_hook;
int tfm_log_placement;
int tfm_default_device = -1;
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
            const tfm_attrs *a, tfm_tensor *const *out, int nout,
            const tfm_kctx *ctx)
{
    tfm_code rc;
    if (!unlock_hook || work_size(in, nin, out, nout) < UNLOCK_MIN_ELEMENTS) {
        rc = k(op, in, nin, a, out, nout, ctx);
    } else {
        void *token = unlock_hook();
        rc = k(op, in, nin, a, out, nout, ctx);
        relock_hook(token);
    }
    tfm_strings_settle(out, nout, rc);
    return rc;
}

void
tfm_log_device_placement(tfm_op op, int device)
{
    char name[128];
    fprintf(stderr, "Executing op %s in device %s\n", tfm_ops[op].name,
            tfm_device_name(device, name, sizeof name));
    fflush(stderr);
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

tfm_kernel_fn
tfm_kernel_for(tfm_op op, int device)
{
    if (device == TFM_CPU)
        return tfm_ops[op].cpu;
    const tfm_device *d = tfm_device_get(device);
    return d && d->kernels ? ((const tfm_kernel_fn *)d->kernels)[op] : NULL;
}

int
tfm_place_op(tfm_op op, int device)
{
    if (device == TFM_CPU || tfm_kernel_for(op, device))
        return device;
    return TFM_CPU;
}

static tfm_code
no_device(tfm_op op, int device)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: no device with index "
                     "%d (tfmini was built without CUDA, or no GPU is "
                     "present)", tfm_ops[op].name, device);
}

int
tfm_kernel_takes(tfm_op op, tfm_dtype d, int device)
{
    if (device == TFM_CPU || !tfm_dtype_is_half16(d) ||
        (tfm_ops[op].flags & TFM_OPF_ANY_DTYPE))
        return tfm_cpu_kernel_takes(op, d);
    /* A GPU's cuBLASLt matmul and 16-bit kernels take the 16-bit floats
     * themselves (kernels/cuda/kernels.c's takes_half); other kernels on
     * a device take float16 as the CPU's do, bfloat16 never. */
    const tfm_device *dv = tfm_device_get(device);
    if (dv && tfm_cuda_takes_half(dv->kernels, (int)op, (int)d))
        return 1;
    return d == TFM_FLOAT16 && tfm_cpu_kernel_takes(op, d);
}

static int
needs_half_upcast(tfm_op op, int device, tfm_tensor *const *in, int nin,
                  const tfm_meta *out, int nout)
{
    for (int i = 0; i < nin; i++)
        if (!tfm_kernel_takes(op, in[i]->dtype, device))
            return 1;
    for (int i = 0; i < nout; i++)
        if (!tfm_kernel_takes(op, out[i].dtype, device))
            return 1;
    return 0;
}

static tfm_tensor *
cast(tfm_tensor *t, tfm_dtype to, int device)
{
    tfm_attrs a;
    tfm_attrs_init(&a);
    a.dtype = to;
    tfm_tensor *o = NULL;
    int n = 0;
    if (tfm_run_kernel_on(TFM_OP_CAST, device, &t, 1, &a, &o, &n))
        return NULL;
    return o;
}

/* Kernels for float16 and bfloat16 are optional: without one, compute
 * in float32 and round the results back (TF's documented behaviour on
 * CPU). */
static tfm_code
run_half_upcast(tfm_op op, int device, tfm_tensor *const *in, int nin,
               const tfm_attrs *a, const tfm_meta *meta, tfm_tensor **out,
               int *nout)
{
    tfm_tensor *up[TFM_MAX_INPUTS];
    tfm_code rc = TFM_OK;
    int i;
    for (i = 0; i < nin; i++) {
        up[i] = tfm_dtype_is_half16(in[i]->dtype)
                    ? cast(in[i], TFM_FLOAT32, device)
                    : (tfm_tensor_incref(in[i]), in[i]);
        if (!up[i]) {
            rc = tfm_error_code();
            goto done;
        }
    }
    tfm_attrs a32 = *a;
    if (tfm_dtype_is_half16(a32.dtype))
        a32.dtype = TFM_FLOAT32;
    rc = tfm_run_kernel_on(op, device, up, nin, &a32, out, nout);
    for (int k = 0; !rc && k < *nout; k++) {
        if (tfm_dtype_is_half16(meta[k].dtype) &&
            out[k]->dtype == TFM_FLOAT32) {
            tfm_tensor *h = cast(out[k], meta[k].dtype, device);
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
    return tfm_run_kernel_on(op, -1, in, nin, a, out, nout);
}

tfm_code
tfm_run_kernel_on(tfm_op op, int device, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor **out, int *nout)
{
    tfm_meta meta[TFM_MAX_OUTPUTS];
    tfm_attrs none, sized;
    if (!a) {
        tfm_attrs_init(&none);
        a = &none;
    }
    /* Outputs sized by the data (string splits): counted first. */
    int presized = tfm_string_presize(op, in, nin, a, &sized);
    if (presized < 0) {
        *nout = 0;
        return tfm_error_code();
    }
    if (presized)
        a = &sized;
    tfm_code rc = tfm_infer(op, in, nin, a, meta, nout);
    if (rc) {
        *nout = 0;
        return rc;
    }
    if (device < 0)
        device = device_scope;
    if (device < 0) {
        /* No scope: where the inputs are (the first not on the CPU). */
        device = TFM_CPU;
        for (int i = 0; i < nin && device == TFM_CPU; i++)
            device = in[i]->device;
        if (device == TFM_CPU && tfm_default_device > 0 &&
            tfm_kernel_for(op, tfm_default_device))
            device = tfm_default_device;
    }
    if (device != TFM_CPU) {
        if (!tfm_device_get(device))
            return no_device(op, device);
        /* Soft placement: no kernel there runs it on the CPU; so does
         * any op on strings, which live in host memory (as in TF). */
        device = tfm_place_op(op, device);
        for (int i = 0; i < nin && device != TFM_CPU; i++)
            if (in[i]->dtype == TFM_STRING)
                device = TFM_CPU;
        for (int j = 0; j < *nout && device != TFM_CPU; j++)
            if (meta[j].dtype == TFM_STRING)
                device = TFM_CPU;
    }
    tfm_kernel_fn k = tfm_kernel_for(op, device);
    if (!k)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s has no CPU kernel",
                         tfm_ops[op].name);
    /* Inputs that live elsewhere are copied to the op's device (TF's
     * _Send/_Recv in eager: EagerExecute copies them the same way). */
    tfm_tensor *moved[TFM_MAX_INPUTS];
    int nmoved = 0;
    for (int i = 0; i < nin && !nmoved; i++)
        nmoved = in[i]->device != device ? nin : 0;
    if (nmoved) {
        for (int i = 0; i < nin; i++)
            moved[i] = NULL;
        for (int i = 0; i < nin; i++)
            if (!(moved[i] = tfm_tensor_to_device(in[i], device))) {
                rc = name_the_op(op);
                goto release;
            }
        in = moved;
    }
    if (tfm_log_placement)
        tfm_log_device_placement(op, device);
    if (needs_half_upcast(op, device, in, nin, meta, *nout)) {
        rc = run_half_upcast(op, device, in, nin, a, meta, out, nout);
        goto release;
    }
    int made;
    for (made = 0; made < *nout; made++) {
        out[made] = tfm_tensor_new(meta[made].dtype, &meta[made].shape,
                                   device);
        if (!out[made]) {
            rc = name_the_op(op);
            goto fail;
        }
    }
    rc = call_kernel(k, op, in, nin, a, out, *nout, tfm_device_kctx(device));
    if (!rc)
        goto release;
fail:
    while (made-- > 0)
        tfm_tensor_decref(out[made]);
    *nout = 0;
release:
    if (rc)
        *nout = 0;
    for (int i = 0; i < nmoved; i++)
        if (moved[i])
            tfm_tensor_decref(moved[i]);
    return rc;
}

tfm_code
tfm_run_kernel_into(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    int device = nout > 0 ? out[0]->device : TFM_CPU;
    int all_there = 1;
    for (int i = 0; i < nin; i++)
        all_there &= in[i]->device == device;
    tfm_kernel_fn k = tfm_kernel_for(op, device);
    if (device == TFM_CPU && all_there)
        return call_kernel(k, op, in, nin, a, out, nout, &tfm_kctx_cpu);
    /* Through the device's copies: inputs onto the outputs' device, or,
     * with no kernel there, everything through the CPU. */
    tfm_tensor *moved[TFM_MAX_INPUTS], *tmp[TFM_MAX_OUTPUTS];
    int run_on = k ? device : TFM_CPU, nm = 0, nt = 0;
    tfm_code rc = TFM_OK;
    if (!k)
        k = tfm_ops[op].cpu;
    if (!k)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s has no CPU kernel",
                         tfm_ops[op].name);
    for (nm = 0; nm < nin; nm++)
        if (!(moved[nm] = tfm_tensor_to_device(in[nm], run_on))) {
            rc = name_the_op(op);
            goto done;
        }
    for (nt = 0; nt < nout; nt++) {
        tmp[nt] = run_on == device
                      ? (tfm_tensor_incref(out[nt]), out[nt])
                      : tfm_tensor_new(out[nt]->dtype, &out[nt]->shape,
                                       run_on);
        if (!tmp[nt]) {
            rc = name_the_op(op);
            goto done;
        }
    }
    if (tfm_log_placement)
        tfm_log_device_placement(op, run_on);
    rc = call_kernel(k, op, moved, nin, a, tmp, nout,
                     tfm_device_kctx(run_on));
    for (int j = 0; !rc && run_on != device && j < nout; j++)
        rc = tfm_tensor_copy_into(out[j], tmp[j]);
done:
    while (nm-- > 0)
        tfm_tensor_decref(moved[nm]);
    while (nt-- > 0)
        tfm_tensor_decref(tmp[nt]);
    return rc;
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
