/* Note [Elementwise formulas]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Each elementwise op's float formula is written once, in
 * ew_formulas.def, as a plain C expression over `x` (and `y`, and for
 * PARAM rows the attributes `prm` = a.f[0] and `iprm` = a.i[0]), of the
 * element type. Three readers expand the same rows:
 *
 *   - the CPU kernels: cpu/ew_float.c instantiates the float32 and
 *     float64 loops of every row (the loop templates of cpu/loops.h,
 *     with libmvec's vector functions: cpu/mvec.h) and the lookup that
 *     binary.c, unary.c, ew_math.c and ew_activation.c call for floats;
 *   - the native fused programs: graph/fused_native.c writes a row's
 *     text (stringified from the same macro argument) into the C source
 *     it compiles, and a row is what makes an op compilable at all
 *     (EW_NONE rows, and ops with no row, stay with the block
 *     evaluator);
 *   - later, CUDA kernels: the formulas call only C99 math functions and
 *     the helpers below, which compile as __device__ functions when
 *     TFM_EW_FN is defined so before this header.
 *
 * Integer semantics (wrapping, division by zero, negative powers) have
 * no native form and stay in the kernel files (cpu/ew_scalar.h).
 *
 * A formula evaluates every transcendental call it names for every
 * element and selects afterwards (tfm_ew_self / tfm_ew_seld: function
 * arguments are always evaluated), so `omp simd` loops vectorize it with
 * libmvec instead of branching per lane. Constants are literals, not
 * <math.h> macros: the native source is compiled with -std=c11, where
 * M_SQRT1_2 and friends are not declared. */
#ifndef TFM_KERNELS_EW_FORMULAS_H
#define TFM_KERNELS_EW_FORMULAS_H

#include <math.h>

#ifndef TFM_EW_FN
#define TFM_EW_FN static inline
#endif

/* The helper functions formulas may call, as one macro so that
 * fused_native.c can write the very same definitions into its source
 * (TFM_EW_STR(TFM_EW_HELPERS(static inline))). */
#define TFM_EW_HELPERS(FN)                                                   \
    FN float tfm_ew_self(int c, float a, float b) { return c ? a : b; }      \
    FN double tfm_ew_seld(int c, double a, double b) { return c ? a : b; }   \
    /* TF's FloorMod: fmod corrected to the sign of y. */                    \
    FN float tfm_ew_floormodf(float x, float y)                              \
    {                                                                        \
        float r = fmodf(x, y);                                               \
        return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;                 \
    }                                                                        \
    FN double tfm_ew_floormod(double x, double y)                            \
    {                                                                        \
        double r = fmod(x, y);                                               \
        return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;                 \
    }

TFM_EW_HELPERS(TFM_EW_FN)

/* Source text of macro arguments, after their macros are expanded. */
#define TFM_EW_STR_(...) #__VA_ARGS__
#define TFM_EW_STR(...) TFM_EW_STR_(__VA_ARGS__)

#endif
