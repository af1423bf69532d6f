/* Kernels that make tensors from shapes and attributes: Shape, Size,
 * Rank, Fill, ZerosLike, OnesLike, Range, LinSpace, OneHot. */
#include "shape.h"

#include <string.h>

#include "loops.h"

static void
store_int(tfm_tensor *t, int64_t k, int64_t v)
{
    if (t->dtype == TFM_INT64)
        ((int64_t *)tfm_tensor_data(t))[k] = v;
    else
        ((int32_t *)tfm_tensor_data(t))[k] = (int32_t)v;
}

tfm_code
tfm_k_shape_of(tfm_op op, tfm_tensor *const *in, int nin,
               const tfm_attrs *a, tfm_tensor *const *out, int nout,
               const tfm_kctx *ctx)
{
    const tfm_shape *s = &in[0]->shape;
    if (op == TFM_OP_SHAPE) {
        for (int d = 0; d < s->ndim; d++)
            store_int(out[0], d, s->dims[d]);
    } else if (op == TFM_OP_SIZE) {
        int64_t n = tfm_shape_numel(s);
        if (out[0]->dtype == TFM_INT32 && n > INT32_MAX)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %lld elements "
                             "do not fit in int32 (use out_type=tf.int64)",
                             tfm_ops[op].name, (long long)n);
        store_int(out[0], 0, n);
    } else {
        store_int(out[0], 0, s->ndim);
    }
    return TFM_OK;
}

tfm_code
tfm_k_fill(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    int64_t n = tfm_tensor_numel(out[0]);
    size_t esz = tfm_dtype_size(out[0]->dtype);
    char elem[16] = {0};   /* up to complex128 */
    if (n == 0)
        return TFM_OK;
    if (op == TFM_OP_FILL) {
        memcpy(elem, tfm_tensor_data(in[0]), esz);
    } else if (op == TFM_OP_ONES_LIKE) {
        tfm_tensor_set_f64(out[0], 0, 1.0);
        memcpy(elem, tfm_tensor_data(out[0]), esz);
    }
    tfm_fill_bytes(tfm_tensor_data(out[0]), elem, n, esz);
    return TFM_OK;
}

#define RANGE_LOOP(T, START, DELTA)                                         \
    do {                                                                    \
        T *o = tfm_tensor_data(out[0]);                                     \
        TFM_PAR_FOR(n >= TFM_PAR_MIN, k, n,                                 \
                    o[k] = (T)((START) + k * (DELTA)););                    \
    } while (0)

tfm_code
tfm_k_range(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    int64_t n = tfm_tensor_numel(out[0]);
    int64_t is = a->i[0], id = a->i[2];
    double fs = a->f[0], fd = a->f[2];
    switch (out[0]->dtype) {
    case TFM_INT8: RANGE_LOOP(int8_t, is, id); break;
    case TFM_UINT8: RANGE_LOOP(uint8_t, is, id); break;
    case TFM_INT16: RANGE_LOOP(int16_t, is, id); break;
    case TFM_INT32: RANGE_LOOP(int32_t, is, id); break;
    case TFM_INT64: RANGE_LOOP(int64_t, is, id); break;
    case TFM_FLOAT32: RANGE_LOOP(float, fs, fd); break;
    case TFM_FLOAT64: RANGE_LOOP(double, fs, fd); break;
    default:
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(out[0]->dtype));
    }
    return TFM_OK;
}

tfm_code
tfm_k_linspace(tfm_op op, tfm_tensor *const *in, int nin,
               const tfm_attrs *a, tfm_tensor *const *out, int nout,
               const tfm_kctx *ctx)
{
    int64_t n = tfm_tensor_numel(out[0]);
    double start = a->f[0], stop = a->f[1];
    double step = n > 1 ? (stop - start) / (double)(n - 1) : 0;
    switch (out[0]->dtype) {
    case TFM_FLOAT32: RANGE_LOOP(float, start, step); break;
    case TFM_FLOAT64: RANGE_LOOP(double, start, step); break;
    default:
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(out[0]->dtype));
    }
    /* The end point exactly, not start + (n - 1) * step rounded. */
    if (n > 1)
        tfm_tensor_set_f64(out[0], n - 1, stop);
    return TFM_OK;
}

tfm_code
tfm_k_one_hot(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *is = &in[0]->shape;
    int64_t n = tfm_tensor_numel(out[0]);
    if (n == 0)
        return TFM_OK;
    size_t esz = tfm_dtype_size(out[0]->dtype);
    int64_t depth = a->i[0];
    int ax = a->i[1] < 0 ? is->ndim : (int)a->i[1];
    int64_t suffix = 1;
    for (int d = ax; d < is->ndim; d++)
        suffix *= is->dims[d];
    char *o = tfm_tensor_data(out[0]);
    const char *on = tfm_tensor_data(in[1]);
    tfm_fill_bytes(o, tfm_tensor_data(in[2]), n, esz);
    const void *ip = tfm_tensor_data(in[0]);
    int64_t m = tfm_tensor_numel(in[0]);
    for (int64_t k = 0; k < m; k++) {
        int64_t v = tfm_index_at(ip, in[0]->dtype, k);
        if (v < 0 || v >= depth)
            continue;
        int64_t pre = k / suffix, suf = k % suffix;
        memcpy(o + ((pre * depth + v) * suffix + suf) * (int64_t)esz, on,
               esz);
    }
    return TFM_OK;
}
