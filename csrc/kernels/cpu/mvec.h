/* glibc's libmvec: vector variants of libm functions (_ZGVdN8v_expf,
 * _ZGVeN16v_expf, ...), 8 or 16 lanes per call instead of 1. glibc
 * declares them only under -ffast-math, which we do not use (it would
 * break NaN and inf handling); the functions themselves are within 4 ulp
 * and set no errno (-fno-math-errno). Including this header after
 * <math.h> declares them, so `omp simd` loops and the vectorizer call
 * them.
 *
 * The rows are X(type, name, arguments): one list for two readers, the
 * kernels (through these declarations) and graph/fused_native.c, which
 * writes the same declarations into the C source of the fused programs
 * it compiles at run time. */
#ifndef TFM_KERNELS_MVEC_H
#define TFM_KERNELS_MVEC_H

#define TFM_MVEC_FUNCS(X)                                                    \
    X(float, expf, 1)                                                        \
    X(double, exp, 1)                                                        \
    X(float, logf, 1)                                                        \
    X(double, log, 1)                                                        \
    X(float, sinf, 1)                                                        \
    X(double, sin, 1)                                                        \
    X(float, cosf, 1)                                                        \
    X(double, cos, 1)                                                        \
    X(float, powf, 2)                                                        \
    X(double, pow, 2)

/* Added in glibc 2.35. */
#define TFM_MVEC_FUNCS_2_35(X)                                               \
    X(float, expm1f, 1)                                                      \
    X(double, expm1, 1)                                                      \
    X(float, log1pf, 1)                                                      \
    X(double, log1p, 1)                                                      \
    X(float, tanf, 1)                                                        \
    X(double, tan, 1)                                                        \
    X(float, tanhf, 1)                                                       \
    X(double, tanh, 1)                                                       \
    X(float, erff, 1)                                                        \
    X(double, erf, 1)                                                        \
    X(float, erfcf, 1)                                                       \
    X(double, erfc, 1)                                                       \
    X(float, asinf, 1)                                                       \
    X(double, asin, 1)                                                       \
    X(float, acosf, 1)                                                       \
    X(double, acos, 1)                                                       \
    X(float, atanf, 1)                                                       \
    X(double, atan, 1)                                                       \
    X(float, sinhf, 1)                                                       \
    X(double, sinh, 1)                                                       \
    X(float, coshf, 1)                                                       \
    X(double, cosh, 1)                                                       \
    X(float, asinhf, 1)                                                      \
    X(double, asinh, 1)                                                      \
    X(float, acoshf, 1)                                                      \
    X(double, acosh, 1)                                                      \
    X(float, atanhf, 1)                                                      \
    X(double, atanh, 1)                                                      \
    X(float, atan2f, 2)                                                      \
    X(double, atan2, 2)

#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__clang__)
#define TFM_MVEC_ARGS_1_(T) T
#define TFM_MVEC_ARGS_2_(T) T, T
#define TFM_MVEC_DECL_(T, F, N)                                              \
    __attribute__((simd("notinbranch"))) T F(TFM_MVEC_ARGS_##N##_(T));
TFM_MVEC_FUNCS(TFM_MVEC_DECL_)
#if __GLIBC_PREREQ(2, 35)
TFM_MVEC_FUNCS_2_35(TFM_MVEC_DECL_)
#endif
#undef TFM_MVEC_DECL_
#endif

#endif
