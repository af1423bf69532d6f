/* Complex elementwise kernels (complex64 as C's float complex, complex128
 * as double complex): the complex family's own ops (Complex, Real, Imag,
 * Conj, ComplexAbs, Angle) and the complex loops of the arithmetic, math
 * and comparison ops, whose kernels hand complex inputs here. Binary ops
 * broadcast through the same plan (loops.h) as the real ones. Which ops
 * take complex at all is decided by ops/complex.c's list, so the shape
 * rule has refused the others before a kernel runs. */
#include "ew_complex.h"

#include <complex.h>
#include <math.h>

#include "loops.h"

typedef void (*binary_fn)(const void *, const void *, void *,
                          const tfm_bcast *);
typedef void (*unary_fn)(const void *, void *, int64_t);

/* One loop per (op, precision): F is the C function suffix (f for
 * float complex, nothing for double complex). */
#define CX_BINARY(S, T, F)                                                   \
    TFM_BINARY_LOOP(add_##S, T, T, x + y)                                    \
    TFM_BINARY_LOOP(sub_##S, T, T, x - y)                                    \
    TFM_BINARY_LOOP(mul_##S, T, T, x * y)                                    \
    TFM_BINARY_LOOP(div_##S, T, T, x / y)                                    \
    TFM_BINARY_LOOP(divnonan_##S, T, T, y == 0 ? 0 : x / y)                  \
    TFM_BINARY_LOOP(pow_##S, T, T, cpow##F(x, y))                            \
    TFM_BINARY_LOOP(sqdiff_##S, T, T, (x - y) * conj##F(x - y))              \
    TFM_BINARY_LOOP(eq_##S, T, uint8_t, x == y)                              \
    TFM_BINARY_LOOP(ne_##S, T, uint8_t, x != y)
CX_BINARY(c64, float complex, f)
CX_BINARY(c128, double complex, )

#define CX_UNARY(S, T, F)                                                    \
    TFM_UNARY_LOOP(neg_##S, T, T, -x)                                        \
    TFM_UNARY_LOOP(sign_##S, T, T, x == 0 ? 0 : x / cabs##F(x))              \
    TFM_UNARY_LOOP(square_##S, T, T, x * x)                                  \
    TFM_UNARY_LOOP(exp_##S, T, T, cexp##F(x))                                \
    TFM_UNARY_LOOP(expm1_##S, T, T, cexp##F(x) - 1)                          \
    TFM_UNARY_LOOP(log_##S, T, T, clog##F(x))                                \
    TFM_UNARY_LOOP(log1p_##S, T, T, clog##F(1 + x))                          \
    TFM_UNARY_LOOP(sqrt_##S, T, T, csqrt##F(x))                              \
    TFM_UNARY_LOOP(rsqrt_##S, T, T, 1 / csqrt##F(x))                         \
    TFM_UNARY_LOOP(recip_##S, T, T, 1 / x)                                   \
    TFM_UNARY_LOOP(sin_##S, T, T, csin##F(x))                                \
    TFM_UNARY_LOOP(cos_##S, T, T, ccos##F(x))                                \
    TFM_UNARY_LOOP(tan_##S, T, T, ctan##F(x))                                \
    TFM_UNARY_LOOP(sinh_##S, T, T, csinh##F(x))                              \
    TFM_UNARY_LOOP(cosh_##S, T, T, ccosh##F(x))                              \
    TFM_UNARY_LOOP(tanh_##S, T, T, ctanh##F(x))                              \
    TFM_UNARY_LOOP(sigmoid_##S, T, T, 1 / (1 + cexp##F(-x)))                 \
    TFM_UNARY_LOOP(conj_##S, T, T, conj##F(x))                               \
    TFM_UNARY_LOOP(real_##S, T, CX_R, creal##F(x))                           \
    TFM_UNARY_LOOP(imag_##S, T, CX_R, cimag##F(x))                           \
    TFM_UNARY_LOOP(abs_##S, T, CX_R, cabs##F(x))                             \
    TFM_UNARY_LOOP(angle_##S, T, CX_R, carg##F(x))
#define CX_R float
CX_UNARY(c64, float complex, f)
#undef CX_R
#define CX_R double
CX_UNARY(c128, double complex, )
#undef CX_R

/* The real and imaginary parts meet in Complex: CMPLX keeps a NaN or
 * infinite part as it is (x + I*y would mix them). */
TFM_BINARY_LOOP(make_c64, float, float complex, CMPLXF(x, y))
TFM_BINARY_LOOP(make_c128, double, double complex, CMPLX(x, y))

#define PICK(NAME) (c64 ? NAME##_c64 : NAME##_c128)

static binary_fn
binary_for(tfm_op op, int c64)
{
    switch (op) {
    case TFM_OP_ADD: return PICK(add);
    case TFM_OP_SUB: return PICK(sub);
    case TFM_OP_MUL: return PICK(mul);
    case TFM_OP_DIV: return PICK(div);
    case TFM_OP_DIV_NO_NAN: return PICK(divnonan);
    case TFM_OP_POW: return PICK(pow);
    case TFM_OP_SQUARED_DIFFERENCE: return PICK(sqdiff);
    case TFM_OP_EQUAL: return PICK(eq);
    case TFM_OP_NOT_EQUAL: return PICK(ne);
    default: return NULL;
    }
}

static unary_fn
unary_for(tfm_op op, int c64)
{
    switch (op) {
    case TFM_OP_NEG: return PICK(neg);
    case TFM_OP_SIGN: return PICK(sign);
    case TFM_OP_SQUARE: return PICK(square);
    case TFM_OP_EXP: return PICK(exp);
    case TFM_OP_EXPM1: return PICK(expm1);
    case TFM_OP_LOG: return PICK(log);
    case TFM_OP_LOG1P: return PICK(log1p);
    case TFM_OP_SQRT: return PICK(sqrt);
    case TFM_OP_RSQRT: return PICK(rsqrt);
    case TFM_OP_RECIPROCAL: return PICK(recip);
    case TFM_OP_SIN: return PICK(sin);
    case TFM_OP_COS: return PICK(cos);
    case TFM_OP_TAN: return PICK(tan);
    case TFM_OP_SINH: return PICK(sinh);
    case TFM_OP_COSH: return PICK(cosh);
    case TFM_OP_TANH: return PICK(tanh);
    case TFM_OP_SIGMOID: return PICK(sigmoid);
    case TFM_OP_CONJ: return PICK(conj);
    case TFM_OP_REAL: return PICK(real);
    case TFM_OP_IMAG: return PICK(imag);
    case TFM_OP_COMPLEX_ABS: return PICK(abs);
    case TFM_OP_ANGLE: return PICK(angle);
    default: return NULL;
    }
}

static tfm_code
run_binary(binary_fn f, tfm_tensor *const *in, tfm_tensor *out)
{
    tfm_bcast p;
    tfm_bcast_plan(&in[0]->shape, &in[1]->shape, &out->shape, &p);
    if (p.n)
        f(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
          tfm_tensor_data(out), &p);
    return TFM_OK;
}

tfm_code
tfm_k_complex_ew(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)a; (void)nout; (void)ctx;
    tfm_dtype d = in[0]->dtype;
    int c64 = d == TFM_COMPLEX64;
    if (!tfm_dtype_is_complex(d))
        return tfm_error(TFM_ERR_INTERNAL, "%s: complex kernel given %s",
                         tfm_ops[op].name, tfm_dtype_name(d));
    if (nin == 2) {
        binary_fn f = binary_for(op, c64);
        if (f)
            return run_binary(f, in, out[0]);
    } else {
        unary_fn f = unary_for(op, c64);
        if (f) {
            f(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
              tfm_tensor_numel(in[0]));
            return TFM_OK;
        }
    }
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for dtype "
                     "%s", tfm_ops[op].name, tfm_dtype_name(d));
}

tfm_code
tfm_k_complex(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    if (op == TFM_OP_COMPLEX)
        return run_binary(in[0]->dtype == TFM_FLOAT32 ? make_c64 : make_c128,
                          in, out[0]);
    return tfm_k_complex_ew(op, in, nin, a, out, nout, ctx);
}
