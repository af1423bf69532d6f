#include "complex.h"

#include "../core/shape.h"

bool
tfm_op_takes_complex(tfm_op op)
{
    switch (op) {
    case TFM_OP_ADD: case TFM_OP_SUB: case TFM_OP_MUL: case TFM_OP_DIV:
    case TFM_OP_DIV_NO_NAN: case TFM_OP_POW:
    case TFM_OP_SQUARED_DIFFERENCE:
    case TFM_OP_EQUAL: case TFM_OP_NOT_EQUAL:
    case TFM_OP_NEG: case TFM_OP_SIGN: case TFM_OP_SQUARE:
    case TFM_OP_EXP: case TFM_OP_EXPM1: case TFM_OP_LOG: case TFM_OP_LOG1P:
    case TFM_OP_SQRT: case TFM_OP_RSQRT: case TFM_OP_RECIPROCAL:
    case TFM_OP_SIN: case TFM_OP_COS: case TFM_OP_TAN:
    case TFM_OP_SINH: case TFM_OP_COSH: case TFM_OP_TANH:
    case TFM_OP_SIGMOID:
        return true;
    default:
        return false;
    }
}

tfm_code
tfm_infer_complex(tfm_op op, const tfm_meta *in, int nin, const tfm_attrs *a,
                  tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    tfm_dtype r = in[0].dtype, i = in[1].dtype;
    if (r != i || (r != TFM_FLOAT32 && r != TFM_FLOAT64))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the real and imag "
                         "parts must both be float32 or both float64, got "
                         "%s and %s", tfm_ops[op].name, tfm_dtype_name(r),
                         tfm_dtype_name(i));
    *nout = 1;
    out[0].dtype = r == TFM_FLOAT32 ? TFM_COMPLEX64 : TFM_COMPLEX128;
    return tfm_shape_broadcast(tfm_ops[op].name, &in[0].shape,
                               &in[1].shape, &out[0].shape);
}

tfm_code
tfm_infer_complex_part(tfm_op op, const tfm_meta *in, int nin,
                       const tfm_attrs *a, tfm_meta *out, int *nout)
{
    (void)nin; (void)a;
    tfm_dtype d = in[0].dtype;
    if (!tfm_dtype_is_complex(d))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s expects complex64 "
                         "or complex128 inputs, got %s", tfm_ops[op].name,
                         tfm_dtype_name(d));
    *nout = 1;
    out[0].shape = in[0].shape;
    out[0].dtype = op == TFM_OP_CONJ ? d
                 : d == TFM_COMPLEX64 ? TFM_FLOAT32 : TFM_FLOAT64;
    return TFM_OK;
}
