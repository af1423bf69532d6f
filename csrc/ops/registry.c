/* The op table, expanded from ops.def. */
#include "op.h"

#include <stdio.h>
#include <string.h>

#include "../kernels/cpu/kernels.h"
#include "families.h"

const tfm_op_def tfm_ops[TFM_OP_COUNT] = {
#define X(ENUM, NAME, NIN, NOUT, INFER, KERNEL, FLAGS) \
    [TFM_OP_##ENUM] = { NAME, NIN, NOUT, INFER, KERNEL, FLAGS },
#include "ops.def"
#undef X
};

/* What the graph code reads off a row's flags must agree with itself:
 * only graph-only ops are sources or carry a payload. (That exactly
 * the graph-only rows lack a CPU kernel is checked by tests/c, since a
 * function pointer is no constant expression.) */
#define X(ENUM, NAME, NIN, NOUT, INFER, KERNEL, FLAGS)                    \
    _Static_assert(((FLAGS) & TFM_OPF_GRAPH_ONLY) ||                      \
                   !((FLAGS) & (TFM_OPF_SOURCE |                          \
                                (7u << TFM_OPF_PAYLOAD_SHIFT))),          \
                   #ENUM ": SOURCE and a payload need GRAPH_ONLY");       \
    _Static_assert((((FLAGS) >> TFM_OPF_PAYLOAD_SHIFT) & 7) <=            \
                       TFM_PAYLOAD_PROG &&                                \
                   ((FLAGS) >> (TFM_OPF_PAYLOAD_SHIFT + 3)) == 0,         \
                   #ENUM ": unknown flag bits or payload kind");
#include "ops.def"
#undef X

int
tfm_op_lookup(const char *name)
{
    for (int i = 0; i < TFM_OP_COUNT; i++)
        if (strcmp(tfm_ops[i].name, name) == 0)
            return i;
    return -1;
}

tfm_code
tfm_op_infer(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
             tfm_meta *out, int *nout)
{
    tfm_code rc = tfm_ops[op].infer(op, in, nin, a, out, nout);
    if (rc)
        return rc;
    if (!tfm_op_takes_strings(op)) {
        /* Note [String elements]: only listed kernels know strings. */
        int str = 0;
        for (int i = 0; i < nin; i++)
            str |= in[i].dtype == TFM_STRING;
        for (int k = 0; k < *nout; k++)
            str |= out[k].dtype == TFM_STRING;
        if (str)
            /* InvalidArgumentError, as for every other dtype an op
             * lacks (TF's eager says NotFoundError: no kernel). */
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: no kernel for "
                             "dtype string (string tensors go through "
                             "tf.strings, ==, != and the copy ops)",
                             tfm_ops[op].name);
    }
    for (int k = 0; k < *nout; k++) {
        const tfm_shape *s = &out[k].shape;
        int64_t n = 1, bytes;
        int too_many = 0;
        for (int d = 0; d < s->ndim; d++)
            if (s->dims[d] > 0 && __builtin_mul_overflow(n, s->dims[d], &n))
                too_many = 1;
        if (!too_many && !__builtin_mul_overflow(
                n, (int64_t)tfm_dtype_size(out[k].dtype), &bytes))
            continue;
        /* As TF: too many elements is a bad argument, too many bytes
         * for that many elements a failed allocation. */
        char t[160];
        tfm_shape_str(s, t, sizeof t);
        if (too_many)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: a %s tensor of "
                             "shape %s would have more than 2^63 - 1 "
                             "elements", tfm_ops[op].name,
                             tfm_dtype_name(out[k].dtype), t);
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM when "
                         "allocating a %s tensor of shape %s: more than "
                         "2^63 bytes", tfm_ops[op].name,
                         tfm_dtype_name(out[k].dtype), t);
    }
    return TFM_OK;
}
