#include "variable.h"

#include <stdlib.h>
#include <string.h>

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
    v->value = tfm_tensor_new(init->dtype, &init->shape, init->device);
    if (!v->value) {
        free(v);
        return NULL;
    }
    memcpy(tfm_tensor_data(v->value), tfm_tensor_data(init),
           tfm_tensor_nbytes(init));
    v->refcount = 1;
    v->id = v->value->id;
    v->trainable = trainable;
    return v;
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
    if (!tfm_shape_equal(&value->shape, &v->value->shape)) {
        /* Unknown dims in a symbolic value are checked when it runs. */
        int ok = value->shape.ndim == v->value->shape.ndim;
        for (int i = 0; ok && i < value->shape.ndim; i++)
            ok = value->shape.dims[i] < 0 ||
                 value->shape.dims[i] == v->value->shape.dims[i];
        if (!ok || !tfm_tensor_is_symbolic(value))
            return tfm_error(TFM_ERR_VALUE, "%s: cannot assign a value of "
                             "shape %s to a variable of shape %s",
                             mode_names[mode],
                             tfm_shape_str(&value->shape, sa, sizeof sa),
                             tfm_shape_str(&v->value->shape, sb, sizeof sb));
    }
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
    if (dst->buf->refcount > 1) {
        /* Someone holds a read: write into a fresh buffer instead. */
        dst = tfm_tensor_new(v->value->dtype, &v->value->shape,
                             v->value->device);
        if (!dst)
            return tfm_error_code();
        dst->id = v->id;
    }
    if (mode == TFM_ASSIGN) {
        if (dst != value)
            memmove(tfm_tensor_data(dst), tfm_tensor_data(value),
                    tfm_tensor_nbytes(value));
    } else {
        tfm_op op = mode == TFM_ASSIGN_ADD ? TFM_OP_ADD : TFM_OP_SUB;
        tfm_tensor *in[2] = {v->value, value};
        tfm_attrs a;
        tfm_attrs_init(&a);
        rc = tfm_ops[op].cpu(op, in, 2, &a, &dst, 1);
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
