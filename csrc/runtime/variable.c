#include "variable.h"

#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "tape.h"
#include "trace.h"

static const char *const mode_names[] = {"assign", "assign_add",
                                         "assign_sub"};

tfm_variable *
tfm_variable_new(tfm_tensor *init, int trainable)
{
    if (tfm_tensor_is_symbolic(init)) {
        tfm_error(TFM_ERR_VALUE, "a variable's initial value must be "
                  "concrete (create variables outside traced code, or "
                  "under tf.init_scope())");
        return NULL;
    }
    tfm_variable *v = malloc(sizeof *v);
    if (!v) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM creating a variable");
        return NULL;
    }
    /* As in TF, a variable lives on the tf.device scope's device, else
     * where its initial value is. */
    int device = tfm_device_scope() >= 0 ? tfm_device_scope()
                                         : init->device;
    v->value = tfm_tensor_new(init->dtype, &init->shape, device);
    if (!v->value) {
        free(v);
        return NULL;
    }
    if (tfm_tensor_copy_into(v->value, init)) {
        tfm_tensor_decref(v->value);
        free(v);
        return NULL;
    }
    v->refcount = 1;
    v->id = v->value->id;
    v->trainable = trainable;
    v->shape = init->shape;
    v->any_rank = 0;
    v->owner = NULL;
    return v;
}

/* Whether a value of shape s fits the declared shape of v. */
static int
fits(const tfm_variable *v, const tfm_shape *s)
{
    if (v->any_rank)
        return 1;
    if (s->ndim != v->shape.ndim)
        return 0;
    for (int i = 0; i < s->ndim; i++)
        if (v->shape.dims[i] >= 0 && s->dims[i] >= 0 &&
            s->dims[i] != v->shape.dims[i])
            return 0;
    return 1;
}

tfm_code
tfm_variable_set_shape(tfm_variable *v, const tfm_shape *shape, int any_rank)
{
    char sa[128], sb[128];
    tfm_shape old = v->shape;
    int old_any = v->any_rank;
    v->shape = *shape;
    v->any_rank = any_rank;
    if (!fits(v, &v->value->shape)) {
        v->shape = old;
        v->any_rank = old_any;
        return tfm_error(TFM_ERR_VALUE, "The initial value's shape (%s) is "
                         "not compatible with the explicitly supplied "
                         "`shape` argument (%s).",
                         tfm_shape_str(&v->value->shape, sa, sizeof sa),
                         tfm_shape_str(shape, sb, sizeof sb));
    }
    return TFM_OK;
}

tfm_tensor *
tfm_variable_handle(tfm_variable *v)
{
    tfm_tensor *t = tfm_tensor_view(v->value->buf, v->value->offset,
                                    v->value->dtype, &v->value->shape,
                                    v->value->device);
    if (t)
        t->id = v->id;          /* see Note [Variable ids] */
    return t;
}

void
tfm_variable_decref(tfm_variable *v)
{
    if (--v->refcount > 0)
        return;
    tfm_tensor_decref(v->value);
    free(v);
}

tfm_code
tfm_variable_read(tfm_variable *v, tfm_tensor **out)
{
    if (tfm_tape_active_count > 0)
        tfm_tape_variable_accessed(v);
    if (tfm_trace_graph())
        return tfm_trace_read_variable(v, out);
    tfm_tensor *t = tfm_tensor_view(v->value->buf, v->value->offset,
                                    v->value->dtype, &v->value->shape,
                                    v->value->device);
    if (!t)
        return tfm_error_code();
    t->id = v->id;          /* see Note [Variable ids] */
    *out = t;
    return TFM_OK;
}

static tfm_code
check_value(tfm_variable *v, tfm_tensor *value, tfm_assign_mode mode)
{
    char sa[128], sb[128];
    if (value->dtype != v->value->dtype)
        return tfm_error(TFM_ERR_VALUE, "%s: cannot assign a %s value to a "
                         "%s variable", mode_names[mode],
                         tfm_dtype_name(value->dtype),
                         tfm_dtype_name(v->value->dtype));
    /* assign() may change the shape within the declared one; the others
     * combine with the current value elementwise. Unknown dims in a
     * symbolic value are checked when it runs. */
    const tfm_shape *want;
    int ok;
    if (mode == TFM_ASSIGN) {
        want = &v->shape;
        ok = fits(v, &value->shape);
    } else {
        want = &v->value->shape;
        ok = value->shape.ndim == want->ndim;
        for (int i = 0; ok && i < want->ndim; i++)
            ok = value->shape.dims[i] < 0 ||
                 value->shape.dims[i] == want->dims[i];
    }
    /* As TF: assign() checks shapes up front (ValueError); the others
     * fail in their kernel (InvalidArgumentError, also a ValueError). */
    if (!ok)
        return tfm_error(mode == TFM_ASSIGN ? TFM_ERR_VALUE
                                            : TFM_ERR_INVALID_ARGUMENT,
                         "%s: Shape mismatch: cannot assign a value of "
                         "shape %s to a variable of shape %s",
                         mode_names[mode],
                         tfm_shape_str(&value->shape, sa, sizeof sa),
                         tfm_shape_str(want, sb, sizeof sb));
    return TFM_OK;
}

tfm_code
tfm_variable_assign(tfm_variable *v, tfm_tensor *value, tfm_assign_mode mode)
{
    tfm_code rc = check_value(v, value, mode);
    if (rc)
        return rc;
    if (tfm_trace_graph() || tfm_tensor_is_symbolic(value))
        return tfm_trace_assign_variable(v, value, mode);
    return tfm_variable_assign_now(v, value, mode);
}

tfm_code
tfm_variable_assign_now(tfm_variable *v, tfm_tensor *value,
                        tfm_assign_mode mode)
{
    tfm_code rc = check_value(v, value, mode);
    if (rc)
        return rc;
    tfm_tensor *dst = v->value;
    int reshaped = !tfm_shape_equal(&value->shape, &dst->shape);
    if (dst->buf->refcount > 1 || reshaped) {
        /* Someone holds a read (or the shape changes): write into a
         * fresh buffer instead. */
        dst = tfm_tensor_new(v->value->dtype, &value->shape,
                             v->value->device);
        if (!dst)
            return tfm_error_code();
        dst->id = v->id;
    }
    if (mode == TFM_ASSIGN) {
        /* Through the devices' copies: the value may live elsewhere. */
        if (dst != value && (rc = tfm_tensor_copy_into(dst, value))) {
            if (dst != v->value)
                tfm_tensor_decref(dst);
            return rc;
        }
    } else {
        tfm_op op = mode == TFM_ASSIGN_ADD ? TFM_OP_ADD : TFM_OP_SUB;
        tfm_tensor *in[2] = {v->value, value};
        tfm_attrs a;
        tfm_attrs_init(&a);
        if (tfm_kernel_takes(op, dst->dtype, dst->device)) {
            /* In place, on the variable's device (elementwise kernels
             * allow out == in; a value elsewhere is copied over). */
            rc = tfm_run_kernel_into(op, in, 2, &a, &dst, 1);
        } else {
            /* float16, bfloat16 (computed in float32): the general
             * path, whose result becomes the value. */
            tfm_tensor *sum = NULL;
            int n = 0;
            rc = tfm_run_kernel(op, in, 2, &a, &sum, &n);
            if (!rc && sum->device != v->value->device) {
                tfm_tensor *moved = tfm_tensor_to_device(sum,
                                                         v->value->device);
                tfm_tensor_decref(sum);
                if (!(sum = moved))
                    rc = tfm_error_code();
            }
            if (!rc) {
                if (dst != v->value)
                    tfm_tensor_decref(dst);
                dst = sum;
                dst->id = v->id;
            }
        }
        if (rc) {
            if (dst != v->value)
                tfm_tensor_decref(dst);
            return rc;
        }
    }
    if (dst != v->value) {
        tfm_tensor_decref(v->value);
        v->value = dst;
    }
    return TFM_OK;
}
