/* Float-only unary math: exp, log, trigonometry, erf, sigmoid, ...
 * (the loops of ../ew_formulas.def, in ew_float.c) and the float
 * predicates IsNan/IsInf/IsFinite, which have bool results and so no
 * formula there. */
#include "elementwise.h"
#include "ew_complex.h"

#include "ew_float.h"
#include "ew_scalar.h"
#include "loops.h"

typedef void (*unary_fn)(const void *, void *, int64_t);

#define PRED_LOOPS(OPNAME, EXPR)                                             \
    TFM_UNARY_LOOP(OPNAME##_f32, float, uint8_t, EXPR)                       \
    TFM_UNARY_LOOP(OPNAME##_f64, double, uint8_t, EXPR)

PRED_LOOPS(isnan, x != x)
PRED_LOOPS(isinf, fabs((double)x) == (double)INFINITY)
PRED_LOOPS(isfinite, fabs((double)x) < (double)INFINITY)

tfm_code
tfm_k_math(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    if (tfm_dtype_is_complex(in[0]->dtype))
        return tfm_k_complex_ew(op, in, nin, a, out, nout, ctx);
    if (tfm_ew_float_unary(op, in[0], out[0], a))
        return TFM_OK;
    tfm_dtype d = in[0]->dtype;
    int f64 = d == TFM_FLOAT64;
    unary_fn f = d != TFM_FLOAT32 && !f64 ? NULL
               : op == TFM_OP_IS_NAN ? (f64 ? isnan_f64 : isnan_f32)
               : op == TFM_OP_IS_INF ? (f64 ? isinf_f64 : isinf_f32)
               : op == TFM_OP_IS_FINITE ? (f64 ? isfinite_f64 : isfinite_f32)
               : NULL;
    if (!f)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s has no kernel for dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(d));
    f(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
      tfm_tensor_numel(in[0]));
    return TFM_OK;
}
