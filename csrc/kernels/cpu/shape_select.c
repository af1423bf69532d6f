/* SelectV2 (3-argument tf.where) and Where (coordinates of nonzeros). */
#include "shape.h"

#include "loops.h"

#define SELECT_SAME(T)                                                      \
    do {                                                                    \
        const T *x = px, *y = py;                                           \
        T *o = po;                                                          \
        if (n >= TFM_PAR_MIN) {                                             \
            _Pragma("omp parallel for simd")                                \
            for (int64_t k = 0; k < n; k++)                                 \
                o[k] = pc[k] ? x[k] : y[k];                                 \
        } else {                                                            \
            for (int64_t k = 0; k < n; k++)                                 \
                o[k] = pc[k] ? x[k] : y[k];                                 \
        }                                                                   \
    } while (0)

#define SELECT_ROWS(T)                                                      \
    do {                                                                    \
        const T *x = px, *y = py;                                           \
        T *o = po;                                                          \
        TFM_PAR_FOR(n >= TFM_PAR_MIN, r, rows,                              \
            int64_t oc = 0, ox = 0, oy = 0, q = r;                          \
            for (int d = nd - 2; d >= 0; d--) {                             \
                int64_t i = q % os->dims[d];                                \
                q /= os->dims[d];                                           \
                oc += i * sc[d];                                            \
                ox += i * sx[d];                                            \
                oy += i * sy[d];                                            \
            }                                                               \
            T *orow = o + r * len;                                          \
            for (int64_t j = 0; j < len; j++)                               \
                orow[j] = pc[oc + j * lc] ? x[ox + j * lx] : y[oy + j * ly];\
        );                                                                  \
    } while (0)

/* complex128's 16 bytes, copied as one value. */
typedef struct {
    uint64_t w[2];
} tfm_elem16;

#define BY_SIZE(MACRO)                                                      \
    switch (esz) {                                                          \
    case 1: MACRO(uint8_t); break;                                          \
    case 2: MACRO(uint16_t); break;                                         \
    case 4: MACRO(uint32_t); break;                                         \
    case 8: MACRO(uint64_t); break;                                         \
    default: MACRO(tfm_elem16); break;                                      \
    }

tfm_code
tfm_k_select(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *os = &out[0]->shape;
    int64_t n = tfm_shape_numel(os);
    if (n == 0)
        return TFM_OK;
    size_t esz = tfm_dtype_size(out[0]->dtype);
    const uint8_t *pc = tfm_tensor_data(in[0]);
    const void *px = tfm_tensor_data(in[1]), *py = tfm_tensor_data(in[2]);
    void *po = tfm_tensor_data(out[0]);
    if (tfm_tensor_numel(in[0]) == n && tfm_tensor_numel(in[1]) == n &&
        tfm_tensor_numel(in[2]) == n) {
        BY_SIZE(SELECT_SAME);
        return TFM_OK;
    }
    int64_t sc[TFM_MAX_DIMS], sx[TFM_MAX_DIMS], sy[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&in[0]->shape, os, sc);
    tfm_shape_broadcast_strides(&in[1]->shape, os, sx);
    tfm_shape_broadcast_strides(&in[2]->shape, os, sy);
    int nd = os->ndim;
    int64_t len = os->dims[nd - 1], rows = n / len;
    int64_t lc = sc[nd - 1], lx = sx[nd - 1], ly = sy[nd - 1];
    BY_SIZE(SELECT_ROWS);
    return TFM_OK;
}

/* Whether element k is nonzero (-0.0 is zero; NaN is not). */
static inline int
nonzero(const void *p, tfm_dtype d, int64_t k)
{
    switch (d) {
    case TFM_BOOL:
    case TFM_INT8:
    case TFM_UINT8: return ((const uint8_t *)p)[k] != 0;
    case TFM_INT16:
    case TFM_UINT16: return ((const int16_t *)p)[k] != 0;
    case TFM_UINT32: return ((const uint32_t *)p)[k] != 0;
    case TFM_UINT64: return ((const uint64_t *)p)[k] != 0;
    case TFM_FLOAT16:
    case TFM_BFLOAT16: return (((const uint16_t *)p)[k] & 0x7fff) != 0;
    case TFM_INT32: return ((const int32_t *)p)[k] != 0;
    case TFM_FLOAT32: return ((const float *)p)[k] != 0;
    case TFM_INT64: return ((const int64_t *)p)[k] != 0;
    case TFM_FLOAT64: return ((const double *)p)[k] != 0;
    case TFM_COMPLEX64:
        return ((const float *)p)[2 * k] != 0 ||
               ((const float *)p)[2 * k + 1] != 0;
    case TFM_COMPLEX128:
        return ((const double *)p)[2 * k] != 0 ||
               ((const double *)p)[2 * k + 1] != 0;
    default: return 0;
    }
}

tfm_code
tfm_k_where(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *s = &in[0]->shape;
    const void *p = tfm_tensor_data(in[0]);
    tfm_dtype d = in[0]->dtype;
    int64_t n = tfm_shape_numel(s), count = 0;
    for (int64_t k = 0; k < n; k++)
        count += nonzero(p, d, k);
    if (count != out[0]->shape.dims[0])
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the condition has "
                         "%lld nonzero elements, but the caller counted "
                         "%lld", tfm_ops[op].name, (long long)count,
                         (long long)out[0]->shape.dims[0]);
    int r = s->ndim;
    int64_t *o = tfm_tensor_data(out[0]);
    int64_t idx[TFM_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        if (nonzero(p, d, k)) {
            for (int j = 0; j < r; j++)
                *o++ = idx[j];
        }
        for (int j = r - 1; j >= 0; j--) {
            if (++idx[j] < s->dims[j])
                break;
            idx[j] = 0;
        }
    }
    return TFM_OK;
}
