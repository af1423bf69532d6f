/* Float-only unary math: exp, log, trigonometry, erf, sigmoid, ... and
 * the float predicates IsNan/IsInf/IsFinite. Loops call libm through its
 * vector variants (see ew_scalar.h), so `omp simd` runs them 8 or 16
 * lanes at a time; their per-element cost also justifies a lower
 * threshold for going parallel. */
#include "elementwise.h"

#include "ew_scalar.h"
#include "loops.h"

typedef void (*unary_fn)(const void *, void *, int64_t);

#define MATH_LOOPS(OPNAME, EXPR32, EXPR64)                                   \
    TFM_UNARY_LOOP_AT(OPNAME##_f32, float, float, EXPR32,                    \
                      TFM_PAR_MIN_HEAVY)                                     \
    TFM_UNARY_LOOP_AT(OPNAME##_f64, double, double, EXPR64,                  \
                      TFM_PAR_MIN_HEAVY)

/* Cheap ones (a few instructions per element). */
#define CHEAP_LOOPS(OPNAME, EXPR32, EXPR64)                                  \
    TFM_UNARY_LOOP(OPNAME##_f32, float, float, EXPR32)                       \
    TFM_UNARY_LOOP(OPNAME##_f64, double, double, EXPR64)

MATH_LOOPS(exp, expf(x), exp(x))
MATH_LOOPS(expm1, expm1f(x), expm1(x))
MATH_LOOPS(log, logf(x), log(x))
MATH_LOOPS(log1p, log1pf(x), log1p(x))
MATH_LOOPS(sin, sinf(x), sin(x))
MATH_LOOPS(cos, cosf(x), cos(x))
MATH_LOOPS(tan, tanf(x), tan(x))
MATH_LOOPS(asin, asinf(x), asin(x))
MATH_LOOPS(acos, acosf(x), acos(x))
MATH_LOOPS(atan, atanf(x), atan(x))
MATH_LOOPS(sinh, sinhf(x), sinh(x))
MATH_LOOPS(cosh, coshf(x), cosh(x))
MATH_LOOPS(tanh, tanhf(x), tanh(x))
MATH_LOOPS(asinh, asinhf(x), asinh(x))
MATH_LOOPS(acosh, acoshf(x), acosh(x))
MATH_LOOPS(atanh, atanhf(x), atanh(x))
MATH_LOOPS(erf, erff(x), erf(x))
MATH_LOOPS(erfc, erfcf(x), erfc(x))
/* 1 / (1 + e^-x): e^-x overflows to inf for x < -88 and the result is
 * then exactly 0, the right limit. */
MATH_LOOPS(sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)))
CHEAP_LOOPS(sqrt, sqrtf(x), sqrt(x))
CHEAP_LOOPS(rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
CHEAP_LOOPS(recip, 1.0f / x, 1.0 / x)
CHEAP_LOOPS(floor, floorf(x), floor(x))
CHEAP_LOOPS(ceil, ceilf(x), ceil(x))
CHEAP_LOOPS(rint, rintf(x), rint(x))

#define PRED_LOOPS(OPNAME, EXPR)                                             \
    TFM_UNARY_LOOP(OPNAME##_f32, float, uint8_t, EXPR)                       \
    TFM_UNARY_LOOP(OPNAME##_f64, double, uint8_t, EXPR)

PRED_LOOPS(isnan, x != x)
PRED_LOOPS(isinf, fabs((double)x) == (double)INFINITY)
PRED_LOOPS(isfinite, fabs((double)x) < (double)INFINITY)

typedef struct {
    unary_fn f32, f64;
} float_pair;

#define PAIR(OPNAME) { OPNAME##_f32, OPNAME##_f64 }

static const float_pair *
lookup(tfm_op op)
{
    static const float_pair exp_ = PAIR(exp), expm1_ = PAIR(expm1),
        log_ = PAIR(log), log1p_ = PAIR(log1p), sin_ = PAIR(sin),
        cos_ = PAIR(cos), tan_ = PAIR(tan), asin_ = PAIR(asin),
        acos_ = PAIR(acos), atan_ = PAIR(atan), sinh_ = PAIR(sinh),
        cosh_ = PAIR(cosh), tanh_ = PAIR(tanh), asinh_ = PAIR(asinh),
        acosh_ = PAIR(acosh), atanh_ = PAIR(atanh), erf_ = PAIR(erf),
        erfc_ = PAIR(erfc), sigmoid_ = PAIR(sigmoid), sqrt_ = PAIR(sqrt),
        rsqrt_ = PAIR(rsqrt), recip_ = PAIR(recip), floor_ = PAIR(floor),
        ceil_ = PAIR(ceil), rint_ = PAIR(rint), isnan_ = PAIR(isnan),
        isinf_ = PAIR(isinf), isfinite_ = PAIR(isfinite);
    switch (op) {
    case TFM_OP_EXP: return &exp_;
    case TFM_OP_EXPM1: return &expm1_;
    case TFM_OP_LOG: return &log_;
    case TFM_OP_LOG1P: return &log1p_;
    case TFM_OP_SIN: return &sin_;
    case TFM_OP_COS: return &cos_;
    case TFM_OP_TAN: return &tan_;
    case TFM_OP_ASIN: return &asin_;
    case TFM_OP_ACOS: return &acos_;
    case TFM_OP_ATAN: return &atan_;
    case TFM_OP_SINH: return &sinh_;
    case TFM_OP_COSH: return &cosh_;
    case TFM_OP_TANH: return &tanh_;
    case TFM_OP_ASINH: return &asinh_;
    case TFM_OP_ACOSH: return &acosh_;
    case TFM_OP_ATANH: return &atanh_;
    case TFM_OP_ERF: return &erf_;
    case TFM_OP_ERFC: return &erfc_;
    case TFM_OP_SIGMOID: return &sigmoid_;
    case TFM_OP_SQRT: return &sqrt_;
    case TFM_OP_RSQRT: return &rsqrt_;
    case TFM_OP_RECIPROCAL: return &recip_;
    case TFM_OP_FLOOR: return &floor_;
    case TFM_OP_CEIL: return &ceil_;
    case TFM_OP_RINT: return &rint_;
    case TFM_OP_IS_NAN: return &isnan_;
    case TFM_OP_IS_INF: return &isinf_;
    case TFM_OP_IS_FINITE: return &isfinite_;
    default: return NULL;
    }
}

tfm_code
tfm_k_math(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)a; (void)nout;
    const float_pair *p = lookup(op);
    tfm_dtype d = in[0]->dtype;
    unary_fn f = !p ? NULL : d == TFM_FLOAT32 ? p->f32
               : d == TFM_FLOAT64 ? p->f64 : NULL;
    if (!f)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s has no kernel for dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(d));
    f(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
      tfm_tensor_numel(in[0]));
    return TFM_OK;
}
