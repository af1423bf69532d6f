/* Activation kernels (tf.nn): Relu and Relu6 over every numeric dtype,
 * Elu, Selu, Softplus, Softsign, LeakyRelu and Gelu over floats. Each
 * body is straight-line (the transcendental part is computed for every
 * lane, then selected), so `omp simd` vectorizes it with libmvec. */
#include "elementwise.h"

#include "ew_scalar.h"
#include "loops.h"

/* The loops below are instantiated for uint8 too, where `x < 0` is
 * always false: that is intended. */
#pragma GCC diagnostic ignored "-Wtype-limits"

typedef void (*unary_fn)(const void *, void *, int64_t);
typedef void (*unary_param_fn)(const void *, void *, int64_t, double);

/* NaN passes through Relu and Relu6 (comparisons with NaN are false). */
#define RELU(x) ((x) < 0 ? 0 : (x))
#define RELU6(x) ((x) < 0 ? 0 : (x) > 6 ? 6 : (x))

#define INT_AND_FLOAT_LOOPS(OPNAME, EXPR)                                    \
    TFM_UNARY_LOOP(OPNAME##_i8, int8_t, int8_t, EXPR)                        \
    TFM_UNARY_LOOP(OPNAME##_u8, uint8_t, uint8_t, EXPR)                      \
    TFM_UNARY_LOOP(OPNAME##_i16, int16_t, int16_t, EXPR)                     \
    TFM_UNARY_LOOP(OPNAME##_i32, int32_t, int32_t, EXPR)                     \
    TFM_UNARY_LOOP(OPNAME##_i64, int64_t, int64_t, EXPR)                     \
    TFM_UNARY_LOOP(OPNAME##_f32, float, float, EXPR)                         \
    TFM_UNARY_LOOP(OPNAME##_f64, double, double, EXPR)

#define NUMERIC_TABLE(OPNAME)                                                \
    { [TFM_INT8] = OPNAME##_i8, [TFM_UINT8] = OPNAME##_u8,                   \
      [TFM_INT16] = OPNAME##_i16, [TFM_INT32] = OPNAME##_i32,                \
      [TFM_INT64] = OPNAME##_i64, [TFM_FLOAT32] = OPNAME##_f32,              \
      [TFM_FLOAT64] = OPNAME##_f64 }

INT_AND_FLOAT_LOOPS(relu, RELU(x))
INT_AND_FLOAT_LOOPS(relu6, RELU6(x))

#define FLOAT_LOOPS(OPNAME, EXPR32, EXPR64)                                  \
    TFM_UNARY_LOOP_AT(OPNAME##_f32, float, float, EXPR32,                    \
                      TFM_PAR_MIN_HEAVY)                                     \
    TFM_UNARY_LOOP_AT(OPNAME##_f64, double, double, EXPR64,                  \
                      TFM_PAR_MIN_HEAVY)

/* SELU's constants (Klambauer et al. 2017), as TF has them. */
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

static inline float
elu_1f(float x)
{
    float e = expm1f(x);
    return x > 0 ? x : e;
}

static inline double
elu_1d(double x)
{
    double e = expm1(x);
    return x > 0 ? x : e;
}

static inline float
selu_1f(float x)
{
    float e = (float)(SELU_SCALE * SELU_ALPHA) * expm1f(x);
    return x > 0 ? (float)SELU_SCALE * x : e;
}

static inline double
selu_1d(double x)
{
    double e = SELU_SCALE * SELU_ALPHA * expm1(x);
    return x > 0 ? SELU_SCALE * x : e;
}

/* log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, and exact for
 * large |x| in both directions. */
static inline float
softplus_1f(float x)
{
    return (x > 0 ? x : 0.0f) + log1pf(expf(-fabsf(x)));
}

static inline double
softplus_1d(double x)
{
    return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x)));
}

/* Exact GELU, x * Phi(x) = x/2 * erfc(-x / sqrt 2): erfc keeps the
 * relative accuracy for negative x, where 1 + erf(.) would cancel. */
static inline float
gelu_1f(float x)
{
    return 0.5f * x * erfcf(-x * (float)M_SQRT1_2);
}

static inline double
gelu_1d(double x)
{
    return 0.5 * x * erfc(-x * M_SQRT1_2);
}

/* GELU's tanh approximation (approximate=True). */
#define GELU_K 0.7978845608028654 /* sqrt(2 / pi) */
static inline float
gelu_tanh_1f(float x)
{
    float u = (float)GELU_K * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

static inline double
gelu_tanh_1d(double x)
{
    double u = GELU_K * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1.0 + tanh(u));
}

FLOAT_LOOPS(elu, elu_1f(x), elu_1d(x))
FLOAT_LOOPS(selu, selu_1f(x), selu_1d(x))
FLOAT_LOOPS(softplus, softplus_1f(x), softplus_1d(x))
FLOAT_LOOPS(softsign, x / (1.0f + fabsf(x)), x / (1.0 + fabs(x)))
FLOAT_LOOPS(gelu, gelu_1f(x), gelu_1d(x))
FLOAT_LOOPS(gelu_tanh, gelu_tanh_1f(x), gelu_tanh_1d(x))

TFM_UNARY_LOOP_PARAM(leaky_f32, float, float, x > 0 ? x : prm * x,
                     TFM_PAR_MIN)
TFM_UNARY_LOOP_PARAM(leaky_f64, double, double, x > 0 ? x : prm * x,
                     TFM_PAR_MIN)

static tfm_code
no_kernel(tfm_op op, tfm_dtype d)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                     "dtype %s", tfm_ops[op].name, tfm_dtype_name(d));
}

static unary_fn
float_fn(unary_fn f32, unary_fn f64, tfm_dtype d)
{
    return d == TFM_FLOAT32 ? f32 : d == TFM_FLOAT64 ? f64 : NULL;
}

tfm_code
tfm_k_activation(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    static const unary_fn relu[TFM_DTYPE_COUNT] = NUMERIC_TABLE(relu);
    static const unary_fn relu6[TFM_DTYPE_COUNT] = NUMERIC_TABLE(relu6);
    tfm_dtype d = in[0]->dtype;
    const void *x = tfm_tensor_data(in[0]);
    void *o = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    unary_fn f = NULL;
    switch (op) {
    case TFM_OP_RELU: f = relu[d]; break;
    case TFM_OP_RELU6: f = relu6[d]; break;
    case TFM_OP_ELU: f = float_fn(elu_f32, elu_f64, d); break;
    case TFM_OP_SELU: f = float_fn(selu_f32, selu_f64, d); break;
    case TFM_OP_SOFTPLUS: f = float_fn(softplus_f32, softplus_f64, d); break;
    case TFM_OP_SOFTSIGN: f = float_fn(softsign_f32, softsign_f64, d); break;
    case TFM_OP_GELU:
        f = a->i[0] ? float_fn(gelu_tanh_f32, gelu_tanh_f64, d)
                    : float_fn(gelu_f32, gelu_f64, d);
        break;
    case TFM_OP_LEAKY_RELU: {
        unary_param_fn pf = d == TFM_FLOAT32 ? leaky_f32
                          : d == TFM_FLOAT64 ? leaky_f64 : NULL;
        if (!pf)
            return no_kernel(op, d);
        pf(x, o, n, a->f[0]);
        return TFM_OK;
    }
    default: break;
    }
    if (!f)
        return no_kernel(op, d);
    f(x, o, n);
    return TFM_OK;
}
