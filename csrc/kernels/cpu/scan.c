/* Cumsum and Cumprod along one axis, optionally exclusive (each output
 * leaves out its own element) and reversed (running from the end).
 * Floats accumulate in double (complex in double complex), integers
 * wrap like TF's. */
#include "reduce.h"

#include <complex.h>

#include "loops.h"
#include "reduce_impl.h"

/* Scans a [R, len] slab with row stride B: y[r, j] = op over x[.., j]. */
#define SCAN(NAME, T, AT, IDENT, OP)                                        \
static void                                                                 \
NAME(const void *x_, void *y_, int64_t R, int64_t len, int64_t B,           \
     bool excl, bool rev)                                                   \
{                                                                           \
    const T *x = x_;                                                        \
    T *y = y_;                                                              \
    int64_t step = rev ? -B : B, first = rev ? (R - 1) * B : 0;             \
    if (len == 1) {                                                         \
        AT acc = (AT)(IDENT);                                               \
        for (int64_t k = 0, o = first; k < R; k++, o += step) {             \
            AT v = (AT)x[o];                                                \
            if (excl) {                                                     \
                y[o] = (T)acc;                                              \
                acc = OP(acc, v);                                           \
            } else {                                                        \
                acc = OP(acc, v);                                           \
                y[o] = (T)acc;                                              \
            }                                                               \
        }                                                                   \
        return;                                                             \
    }                                                                       \
    AT acc[TFM_RED_TILE];                                                   \
    for (int64_t j = 0; j < len; j++)                                       \
        acc[j] = (AT)(IDENT);                                               \
    for (int64_t k = 0, o = first; k < R; k++, o += step) {                 \
        const T *restrict xr = x + o;                                       \
        T *restrict yr = y + o;                                             \
        if (excl) {                                                         \
            for (int64_t j = 0; j < len; j++) {                             \
                yr[j] = (T)acc[j];                                          \
                acc[j] = OP(acc[j], (AT)xr[j]);                             \
            }                                                               \
        } else {                                                            \
            for (int64_t j = 0; j < len; j++) {                             \
                acc[j] = OP(acc[j], (AT)xr[j]);                             \
                yr[j] = (T)acc[j];                                          \
            }                                                               \
        }                                                                   \
    }                                                                       \
}

#define ADD(a, v) ((a) + (v))
#define MUL(a, v) ((a) * (v))

/* Integers go through uint64 (wrapping, no signed overflow) and back via
 * int64 (the conversion keeps the low bits). */
#define SCAN_T(S, T, AT)                                                    \
    SCAN(cumsum_##S, T, AT, 0, ADD)                                         \
    SCAN(cumprod_##S, T, AT, 1, MUL)

SCAN_T(i8, int8_t, uint64_t)
SCAN_T(u8, uint8_t, uint64_t)
SCAN_T(i16, int16_t, uint64_t)
SCAN_T(i32, int32_t, uint64_t)
SCAN_T(i64, int64_t, uint64_t)
SCAN_T(u16, uint16_t, uint64_t)
SCAN_T(u32, uint32_t, uint64_t)
SCAN_T(u64, uint64_t, uint64_t)
SCAN_T(f32, float, double)
SCAN_T(f64, double, double)
SCAN_T(c64, float complex, double complex)
SCAN_T(c128, double complex, double complex)

typedef void (*scan_fn)(const void *, void *, int64_t, int64_t, int64_t,
                        bool, bool);

#define SC_ALL(K) { [TFM_INT8] = K##_i8, [TFM_UINT8] = K##_u8,              \
    [TFM_INT16] = K##_i16, [TFM_INT32] = K##_i32, [TFM_INT64] = K##_i64,     \
    [TFM_FLOAT32] = K##_f32, [TFM_FLOAT64] = K##_f64,                      \
    [TFM_UINT16] = K##_u16, [TFM_UINT32] = K##_u32, [TFM_UINT64] = K##_u64,  \
    [TFM_COMPLEX64] = K##_c64, [TFM_COMPLEX128] = K##_c128 }

static const scan_fn table[2][TFM_DTYPE_COUNT] = {
    SC_ALL(cumsum), SC_ALL(cumprod),
};

tfm_code
tfm_k_scan(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    const tfm_tensor *x = in[0];
    int rank = x->shape.ndim;
    int axis = (int)(a->i[0] < 0 ? a->i[0] + rank : a->i[0]);
    int64_t A = 1, R = x->shape.dims[axis], B = 1;
    for (int d = 0; d < axis; d++)
        A *= x->shape.dims[d];
    for (int d = axis + 1; d < rank; d++)
        B *= x->shape.dims[d];
    scan_fn f = table[op == TFM_OP_CUMPROD][x->dtype];
    if (!f)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(x->dtype));
    if (A * R * B == 0)
        return TFM_OK;
    const char *px = tfm_tensor_data(x);
    char *py = tfm_tensor_data(out[0]);
    size_t es = tfm_dtype_size(x->dtype);
    bool excl = a->i[1] != 0, rev = a->i[2] != 0;
    int64_t nt = (B + TFM_RED_TILE - 1) / TFM_RED_TILE;
    /* TFM_PAR_FOR: an omp if() that is false still wakes the pool. */
    TFM_PAR_FOR(A * R * B >= TFM_PAR_MIN, q, A * nt, {
        int64_t i = q / nt, j0 = (q % nt) * TFM_RED_TILE;
        int64_t len = B - j0 < TFM_RED_TILE ? B - j0 : TFM_RED_TILE;
        size_t off = (size_t)(i * R * B + j0) * es;
        f(px + off, py + off, R, len, B, excl, rev);
    });
    return TFM_OK;
}
