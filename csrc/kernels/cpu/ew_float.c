/* The float loops of every row of ../ew_formulas.def (Note [Elementwise
 * formulas] in ../ew_formulas.h): one loop per (row, float dtype) from
 * loops.h, and the lookups the kernel files call for float dtypes.
 * Compiled twice in a portable build (ew_float_avx512.c, Note [ISA
 * dispatch] in isa_dispatch.h): entry points only through TFM_ISA_FN. */
#include "ew_float.h"
#include "isa_dispatch.h"

#include "../ew_formulas.h"
/* libm's vector variants, declared before the loops that call them. */
#include "mvec.h"

typedef void (*unary_fn)(const void *, void *, int64_t);
typedef void (*param_fn)(const void *, void *, int64_t, double, int);

/* PARAM rows: prm of the element type, and one loop per value of iprm
 * (0 or not), so that a formula's `iprm ? a : b` folds away instead of
 * being tested per element: PARAM_BODY_ is expanded once per value. */
#define PARAM_BODY_(T, EXPR, IPRM)                                           \
    {                                                                        \
        const int iprm = (IPRM);                                             \
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
    }
#define PARAM_LOOP_(NAME, T, EXPR)                                           \
static void                                                                  \
NAME(const void *pi_, void *po_, int64_t n, double prm_, int iprm_)          \
{                                                                            \
    const T *restrict pi = pi_;                                              \
    T *restrict po = po_;                                                    \
    const T prm = (T)prm_;                                                   \
    (void)prm;                                                               \
    if (iprm_)                                                               \
        PARAM_BODY_(T, EXPR, 1)                                              \
    else                                                                     \
        PARAM_BODY_(T, EXPR, 0)                                              \
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

/* The float loop of (op, d), in the member for its row's LOOP kind; all
 * NULL for OWN rows, other ops and other dtypes. */
typedef struct {
    tfm_ew_binary_fn binary;
    unary_fn unary;
    param_fn param;
} float_loops;

static float_loops
loops_of(tfm_op op, tfm_dtype d)
{
    float_loops l = {NULL, NULL, NULL};
#define SET_BINARY(OP) l.binary = PICK_(OP);
#define SET_UNARY(OP) l.unary = PICK_(OP);
#define SET_HEAVY(OP) l.unary = PICK_(OP);
#define SET_PARAM(OP) l.param = PICK_(OP);
#define SET_OWN(OP)
#define EW(OP, LOOP, F32, F64) case TFM_OP_##OP: SET_##LOOP(OP) break;
    switch (op) {
#include "../ew_formulas.def"
    default: break;
    }
#undef EW
#undef SET_BINARY
#undef SET_UNARY
#undef SET_HEAVY
#undef SET_PARAM
#undef SET_OWN
    return l;
}

tfm_ew_binary_fn
TFM_ISA_FN(tfm_ew_float_binary)(tfm_op op, tfm_dtype d)
{
    return loops_of(op, d).binary;
}

int
TFM_ISA_FN(tfm_ew_float_unary)(tfm_op op, const tfm_tensor *in,
                               tfm_tensor *out, const tfm_attrs *a)
{
    tfm_dtype d = in->dtype;
    const void *x = tfm_tensor_data(in);
    void *o = tfm_tensor_data(out);
    int64_t n = tfm_tensor_numel(in);
    float_loops l = loops_of(op, d);
    if (l.unary) {
        l.unary(x, o, n);
        return 1;
    }
    if (l.param) {
        l.param(x, o, n, a ? a->f[0] : 0.0, a ? a->i[0] != 0 : 0);
        return 1;
    }
    return 0;
}
