/* Activation kernels (tf.nn): float dtypes run the loops of
 * ../ew_formulas.def (ew_float.c: Relu, Relu6, Elu, Selu, Softplus,
 * Softsign, LeakyRelu, Gelu); Relu and Relu6 also take integer dtypes,
 * whose loops are here. */
#include "elementwise.h"

#include "ew_float.h"
#include "int_loops.h"

/* The loops below are instantiated for unsigned types too, where `x < 0` is
 * always false: that is intended. */
#pragma GCC diagnostic ignored "-Wtype-limits"

typedef void (*unary_fn)(const void *, void *, int64_t);

#define RELU(x) ((x) < 0 ? 0 : (x))
#define RELU6(x) ((x) < 0 ? 0 : (x) > 6 ? 6 : (x))

TFM_INT_LOOPS(TFM_UNARY_LOOP, relu, RELU(x))
TFM_INT_LOOPS(TFM_UNARY_LOOP, relu6, RELU6(x))

tfm_code
tfm_k_activation(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    if (tfm_ew_float_unary(op, in[0], out[0], a))
        return TFM_OK;
    static const unary_fn relu[TFM_DTYPE_COUNT] = TFM_INT_TABLE(relu);
    static const unary_fn relu6[TFM_DTYPE_COUNT] = TFM_INT_TABLE(relu6);
    tfm_dtype d = in[0]->dtype;
    unary_fn f = op == TFM_OP_RELU ? relu[d]
               : op == TFM_OP_RELU6 ? relu6[d] : NULL;
    if (!f)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name, tfm_dtype_name(d));
    f(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
      tfm_tensor_numel(in[0]));
    return TFM_OK;
}
