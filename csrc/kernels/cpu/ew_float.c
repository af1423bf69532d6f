/* The float loops of every row of ../ew_formulas.def (Note [Elementwise
 * formulas] in ../ew_formulas.h): one loop per (row, float dtype) from
 * loops.h, and the lookups the kernel files call for float dtypes. */
#include "ew_float.h"

#include "../ew_formulas.h"
/* libm's vector variants, declared before the loops that call them. */
#include "mvec.h"

typedef void (*unary_fn)(const void *, void *, int64_t);
typedef void (*param_fn)(const void *, void *, int64_t, double, int);

/* PARAM rows: prm of the element type, and one loop per value of iprm
 * (0 or not), so that a formula's `iprm ? a : b` folds away instead of
 * being tested per element. */
#define PARAM_LOOP_(NAME, T, EXPR)                                           \
static void                                                                  \
NAME(const void *pi_, void *po_, int64_t n, double prm_, int iprm_)          \
{                                                                            \
    const T *restrict pi = pi_;                                              \
    T *restrict po = po_;                                                    \
    const T prm = (T)prm_;                                                   \
    (void)prm;                                                               \
    if (iprm_) {                                                             \
        const int iprm = 1;                                                  \
        (void)iprm;                                                          \
        if (n < TFM_PAR_MIN_HEAVY) {                                         \
            for (int64_t i = 0; i < n; i++) {                                \
                T x = pi[i]; po[i] = (T)(EXPR);                              \
            }                                                                \
        } else {                                                             \
            _Pragma("omp parallel for simd schedule(static)")                \
            for (int64_t i = 0; i < n; i++) {                                \
                T x = pi[i]; po[i] = (T)(EXPR);                              \
            }                                                                \
        }                                                                    \
    } else {                                                                 \
        const int iprm = 0;                                                  \
        (void)iprm;                                                          \
        if (n < TFM_PAR_MIN_HEAVY) {                                         \
            for (int64_t i = 0; i < n; i++) {                                \
                T x = pi[i]; po[i] = (T)(EXPR);                              \
            }                                                                \
        } else {                                                             \
            _Pragma("omp parallel for simd schedule(static)")                \
            for (int64_t i = 0; i < n; i++) {                                \
                T x = pi[i]; po[i] = (T)(EXPR);                              \
            }                                                                \
        }                                                                    \
    }                                                                        \
}

/* ---- the loops ---- */

#define LOOPS_BINARY(OP, F32, F64)                                           \
    TFM_BINARY_LOOP(OP##_f32, float, float, F32)                             \
    TFM_BINARY_LOOP(OP##_f64, double, double, F64)
#define LOOPS_UNARY(OP, F32, F64)                                            \
    TFM_UNARY_LOOP(OP##_f32, float, float, F32)                              \
    TFM_UNARY_LOOP(OP##_f64, double, double, F64)
#define LOOPS_HEAVY(OP, F32, F64)                                            \
    TFM_UNARY_LOOP_AT(OP##_f32, float, float, F32, TFM_PAR_MIN_HEAVY)        \
    TFM_UNARY_LOOP_AT(OP##_f64, double, double, F64, TFM_PAR_MIN_HEAVY)
#define LOOPS_PARAM(OP, F32, F64)                                            \
    PARAM_LOOP_(OP##_f32, float, F32)                                        \
    PARAM_LOOP_(OP##_f64, double, F64)
#define LOOPS_OWN(OP, F32, F64)

#define EW(OP, LOOP, F32, F64) LOOPS_##LOOP(OP, F32, F64)
#define EW_NONE(OP)
#include "../ew_formulas.def"
#undef EW

/* ---- the lookups ---- */

#define PICK_(OP) (d == TFM_FLOAT32 ? OP##_f32 : d == TFM_FLOAT64 ? OP##_f64 \
                                                    : NULL)

tfm_ew_binary_fn
tfm_ew_float_binary(tfm_op op, tfm_dtype d)
{
#define CASE_BINARY(OP) case TFM_OP_##OP: return PICK_(OP);
#define CASE_UNARY(OP)
#define CASE_HEAVY(OP)
#define CASE_PARAM(OP)
#define CASE_OWN(OP)
#define EW(OP, LOOP, F32, F64) CASE_##LOOP(OP)
    switch (op) {
#include "../ew_formulas.def"
    default: return NULL;
    }
#undef EW
#undef CASE_BINARY
#undef CASE_UNARY
#undef CASE_HEAVY
#undef CASE_PARAM
#undef CASE_OWN
}

static unary_fn
unary_loop(tfm_op op, tfm_dtype d)
{
#define CASE_BINARY(OP)
#define CASE_UNARY(OP) case TFM_OP_##OP: return PICK_(OP);
#define CASE_HEAVY(OP) case TFM_OP_##OP: return PICK_(OP);
#define CASE_PARAM(OP)
#define CASE_OWN(OP)
#define EW(OP, LOOP, F32, F64) CASE_##LOOP(OP)
    switch (op) {
#include "../ew_formulas.def"
    default: return NULL;
    }
#undef EW
#undef CASE_BINARY
#undef CASE_UNARY
#undef CASE_HEAVY
#undef CASE_PARAM
#undef CASE_OWN
}

static param_fn
param_loop(tfm_op op, tfm_dtype d)
{
#define CASE_BINARY(OP)
#define CASE_UNARY(OP)
#define CASE_HEAVY(OP)
#define CASE_PARAM(OP) case TFM_OP_##OP: return PICK_(OP);
#define CASE_OWN(OP)
#define EW(OP, LOOP, F32, F64) CASE_##LOOP(OP)
    switch (op) {
#include "../ew_formulas.def"
    default: return NULL;
    }
#undef EW
#undef CASE_BINARY
#undef CASE_UNARY
#undef CASE_HEAVY
#undef CASE_PARAM
#undef CASE_OWN
}

int
tfm_ew_float_unary(tfm_op op, const tfm_tensor *in, tfm_tensor *out,
                   const tfm_attrs *a)
{
    tfm_dtype d = in->dtype;
    const void *x = tfm_tensor_data(in);
    void *o = tfm_tensor_data(out);
    int64_t n = tfm_tensor_numel(in);
    unary_fn f = unary_loop(op, d);
    if (f) {
        f(x, o, n);
        return 1;
    }
    param_fn pf = param_loop(op, d);
    if (pf) {
        pf(x, o, n, a ? a->f[0] : 0.0, a ? a->i[0] != 0 : 0);
        return 1;
    }
    return 0;
}
