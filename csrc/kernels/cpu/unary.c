/* Unary kernels over every numeric dtype (Neg, Abs, Sign, Square, Round):
 * float dtypes run the loops of ../ew_formulas.def (ew_float.c), integer
 * dtypes one loop per (op, dtype) from loops.h. Float-only math is in
 * ew_math.c, activations in ew_activation.c. */
#include "elementwise.h"

#include "ew_float.h"
#include "ew_scalar.h"
#include "loops.h"

/* The loops below are instantiated for uint8 too, where `x < 0` is
 * always false: that is intended. */
#pragma GCC diagnostic ignored "-Wtype-limits"

typedef void (*unary_fn)(const void *, void *, int64_t);

#define INT_LOOPS(OPNAME, EXPR)                                              \
    TFM_UNARY_LOOP(OPNAME##_i8, int8_t, int8_t, EXPR)                        \
    TFM_UNARY_LOOP(OPNAME##_u8, uint8_t, uint8_t, EXPR)                      \
    TFM_UNARY_LOOP(OPNAME##_i16, int16_t, int16_t, EXPR)                     \
    TFM_UNARY_LOOP(OPNAME##_i32, int32_t, int32_t, EXPR)                     \
    TFM_UNARY_LOOP(OPNAME##_i64, int64_t, int64_t, EXPR)

#define INT_TABLE(OPNAME)                                                    \
    { [TFM_INT8] = OPNAME##_i8, [TFM_UINT8] = OPNAME##_u8,                   \
      [TFM_INT16] = OPNAME##_i16, [TFM_INT32] = OPNAME##_i32,                \
      [TFM_INT64] = OPNAME##_i64 }

INT_LOOPS(neg, tfm_wneg(x))
INT_LOOPS(abs, tfm_abs(x))
INT_LOOPS(sign, tfm_sign(x))
INT_LOOPS(square, tfm_wmul(x, x))
/* Integers are already round. */
INT_LOOPS(round, x)

tfm_code
tfm_k_unary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    if (tfm_ew_float_unary(op, in[0], out[0], a))
        return TFM_OK;
    static const unary_fn neg[TFM_DTYPE_COUNT] = INT_TABLE(neg);
    static const unary_fn abs[TFM_DTYPE_COUNT] = INT_TABLE(abs);
    static const unary_fn sign[TFM_DTYPE_COUNT] = INT_TABLE(sign);
    static const unary_fn square[TFM_DTYPE_COUNT] = INT_TABLE(square);
    static const unary_fn round[TFM_DTYPE_COUNT] = INT_TABLE(round);
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
