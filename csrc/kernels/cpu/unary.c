/* Unary elementwise kernels, one loop per (op, dtype) from loops.h. */
#include "elementwise.h"

#include "loops.h"

typedef void (*unary_fn)(const void *, void *, int64_t);

TFM_UNARY_LOOP(neg_f32, float, float, -x)
TFM_UNARY_LOOP(neg_f64, double, double, -x)
TFM_UNARY_LOOP(neg_i32, int32_t, int32_t, -x)
TFM_UNARY_LOOP(neg_i64, int64_t, int64_t, -x)

static unary_fn
lookup(tfm_op op, tfm_dtype d)
{
    static const unary_fn neg[TFM_DTYPE_COUNT] = {
        [TFM_FLOAT32] = neg_f32, [TFM_FLOAT64] = neg_f64,
        [TFM_INT32] = neg_i32, [TFM_INT64] = neg_i64,
    };
    switch (op) {
    case TFM_OP_NEG: return neg[d];
    default: return NULL;
    }
}

tfm_code
tfm_k_unary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout)
{
    (void)nin; (void)a; (void)nout;
    unary_fn f = lookup(op, in[0]->dtype);
    if (!f)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s has no kernel for dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(in[0]->dtype));
    f(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
      tfm_tensor_numel(in[0]));
    return TFM_OK;
}
