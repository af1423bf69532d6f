/* Unary kernels over every numeric dtype (Neg, Abs, Sign, Square, Round):
 * float dtypes run the loops of ../ew_formulas.def (ew_float.c), integer
 * dtypes one loop per (op, dtype) from loops.h. Float-only math is in
 * ew_math.c, activations in ew_activation.c. */
#include "elementwise.h"
#include "ew_complex.h"

#include "ew_float.h"
#include "ew_scalar.h"
#include "int_loops.h"

/* The loops below are instantiated for unsigned types too, where `x < 0` is
 * always false: that is intended. */
#pragma GCC diagnostic ignored "-Wtype-limits"

typedef void (*unary_fn)(const void *, void *, int64_t);

/* TF has no Neg, Abs or Sign for uint16/32/64: their NULL entries raise. */
TFM_INT8_64_LOOPS(TFM_UNARY_LOOP, neg, tfm_wneg(x))
TFM_INT8_64_LOOPS(TFM_UNARY_LOOP, abs, tfm_abs(x))
TFM_INT8_64_LOOPS(TFM_UNARY_LOOP, sign, tfm_sign(x))
TFM_INT_LOOPS(TFM_UNARY_LOOP, square, tfm_wmul(x, x))
/* Integers are already round. */
TFM_INT_LOOPS(TFM_UNARY_LOOP, round, x)

tfm_code
tfm_k_unary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    if (tfm_dtype_is_complex(in[0]->dtype))
        return tfm_k_complex_ew(op, in, nin, a, out, nout, ctx);
    if (tfm_ew_float_unary(op, in[0], out[0], a))
        return TFM_OK;
    static const unary_fn neg[TFM_DTYPE_COUNT] = TFM_INT8_64_TABLE(neg);
    static const unary_fn abs[TFM_DTYPE_COUNT] = TFM_INT8_64_TABLE(abs);
    static const unary_fn sign[TFM_DTYPE_COUNT] = TFM_INT8_64_TABLE(sign);
    static const unary_fn square[TFM_DTYPE_COUNT] = TFM_INT_TABLE(square);
    static const unary_fn round[TFM_DTYPE_COUNT] = TFM_INT_TABLE(round);
    tfm_dtype d = in[0]->dtype;
    unary_fn f = NULL;
    switch (op) {
    case TFM_OP_NEG: f = neg[d]; break;
    case TFM_OP_ABS: f = abs[d]; break;
    case TFM_OP_SIGN: f = sign[d]; break;
    case TFM_OP_SQUARE: f = square[d]; break;
    case TFM_OP_ROUND: f = round[d]; break;
    default: break;
    }
    if (!f)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s has no kernel for dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(d));
    f(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
      tfm_tensor_numel(in[0]));
    return TFM_OK;
}
