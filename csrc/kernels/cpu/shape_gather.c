/* GatherV2, GatherNd, TensorScatterUpdate/Add. Indices are data, so
 * their range is checked here, in one serial pass before any copying
 * (errors are thread-local and must not be raised inside a parallel
 * region). */
#include "shape.h"

#include <stdio.h>
#include <string.h>

#include "loops.h"

/* "[i,j]": the position of flat element `flat` of shape s (dims < nd). */
static char *
position_str(const tfm_shape *s, int nd, int64_t flat, char *buf, size_t n)
{
    int64_t idx[TFM_MAX_DIMS];
    if (nd == 0) { /* TF writes a scalar index as "indices = 3" */
        buf[0] = '\0';
        return buf;
    }
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = s->dims[d] ? flat % s->dims[d] : 0;
        flat = s->dims[d] ? flat / s->dims[d] : 0;
    }
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < nd && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld",
                                 d ? "," : "", (long long)idx[d]);
    if (used < n)
        snprintf(buf + used, n - used, "]");
    return buf;
}

/* Copy rows of `len` elements: dst row k <- src row at src_off[k]
 * (elements), where src_off is computed on the fly by OFFSET(k). */
#define GATHER_ROWS(OFFSET)                                                 \
    do {                                                                    \
        TFM_PAR_FOR(rows * len >= TFM_PAR_MIN, k, rows,                     \
            int64_t so_ = (OFFSET);                                         \
            if (len == 1) {                                                 \
                switch (esz) {                                              \
                case 1: ((uint8_t *)o)[k] = ((const uint8_t *)s)[so_];      \
                        break;                                              \
                case 2: ((uint16_t *)o)[k] = ((const uint16_t *)s)[so_];    \
                        break;                                              \
                case 4: ((uint32_t *)o)[k] = ((const uint32_t *)s)[so_];    \
                        break;                                              \
                case 8: ((uint64_t *)o)[k] = ((const uint64_t *)s)[so_];    \
                        break;                                              \
                default: memcpy(o + k * e, s + so_ * e, esz);               \
                }                                                           \
            } else {                                                        \
                memcpy(o + k * len * e, s + so_ * e, (size_t)(len * e));    \
            }                                                               \
        );                                                                  \
    } while (0)

tfm_code
tfm_k_gather(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *ps = &in[0]->shape, *is = &in[1]->shape;
    int bd = (int)(a->i[1] < 0 ? a->i[1] + is->ndim : a->i[1]);
    int ax = (int)(a->i[0] < 0 ? a->i[0] + ps->ndim : a->i[0]);
    int64_t batch = 1, outer = 1, inner = 1, m = 1;
    for (int d = 0; d < bd; d++)
        batch *= ps->dims[d];
    for (int d = bd; d < ax; d++)
        outer *= ps->dims[d];
    for (int d = ax + 1; d < ps->ndim; d++)
        inner *= ps->dims[d];
    for (int d = bd; d < is->ndim; d++)
        m *= is->dims[d];
    int64_t limit = ps->dims[ax];
    const void *ip = tfm_tensor_data(in[1]);
    tfm_dtype idt = in[1]->dtype;
    int64_t nidx = tfm_tensor_numel(in[1]);
    for (int64_t k = 0; k < nidx; k++) {
        int64_t v = tfm_index_at(ip, idt, k);
        if (v < 0 || v >= limit) {
            char pos[128];
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: indices%s = "
                             "%lld is not in [0, %lld)", tfm_ops[op].name,
                             position_str(is, is->ndim, k, pos, sizeof pos),
                             (long long)v, (long long)limit);
        }
    }
    int64_t rows = batch * outer * m, len = inner;
    if (rows == 0 || len == 0)
        return TFM_OK;
    size_t esz = tfm_dtype_size(in[0]->dtype);
    int64_t e = (int64_t)esz;
    char *o = tfm_tensor_data(out[0]);
    const char *s = tfm_tensor_data(in[0]);
    /* Row k = ((b * outer + q) * m + j): params row ((b * outer + q) *
     * limit + idx[b * m + j]). */
    GATHER_ROWS(((k / m) * limit +
                 tfm_index_at(ip, idt, (k / (outer * m)) * m + k % m)) *
                inner);
    return TFM_OK;
}

/* Offset (in slices of the trailing dims) of index row k of an [n, depth]
 * index matrix into dims[0..depth); -1 if out of range. */
static inline int64_t
nd_offset(const void *ip, tfm_dtype idt, int64_t k, int depth,
          const int64_t *dims, const int64_t *slice_strides)
{
    int64_t off = 0;
    for (int j = 0; j < depth; j++) {
        int64_t v = tfm_index_at(ip, idt, k * depth + j);
        if (v < 0 || v >= dims[j])
            return -1;
        off += v * slice_strides[j];
    }
    return off;
}

/* Strides of dims[0..depth) counted in slices of dims[depth..). */
static int64_t
slice_strides(const tfm_shape *s, int depth, int64_t *st)
{
    int64_t inner = 1;
    for (int d = depth; d < s->ndim; d++)
        inner *= s->dims[d];
    int64_t acc = 1;
    for (int d = depth - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s->dims[d];
    }
    return inner;
}

static tfm_code
bad_nd_index(tfm_op op, const tfm_tensor *idx, int64_t k, int depth,
             const tfm_shape *into)
{
    char pos[128], val[256], shp[160];
    const void *ip = tfm_tensor_data(idx);
    size_t used = (size_t)snprintf(val, sizeof val, "[");
    for (int j = 0; j < depth && used < sizeof val; j++)
        used += (size_t)snprintf(val + used, sizeof val - used, "%s%lld",
                                 j ? ", " : "",
                                 (long long)tfm_index_at(ip, idx->dtype,
                                                         k * depth + j));
    if (used < sizeof val)
        snprintf(val + used, sizeof val - used, "]");
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: indices%s = %s does not "
                     "index into param shape %s", tfm_ops[op].name,
                     position_str(&idx->shape, idx->shape.ndim - 1, k, pos,
                                  sizeof pos),
                     val, tfm_shape_str(into, shp, sizeof shp));
}

tfm_code
tfm_k_gather_nd(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout,
                const tfm_kctx *ctx)
{
    const tfm_shape *ps = &in[0]->shape, *is = &in[1]->shape;
    int depth = (int)is->dims[is->ndim - 1];
    int64_t st[TFM_MAX_DIMS];
    int64_t len = slice_strides(ps, depth, st);
    int64_t rows = 1;
    for (int d = 0; d < is->ndim - 1; d++)
        rows *= is->dims[d];
    const void *ip = tfm_tensor_data(in[1]);
    tfm_dtype idt = in[1]->dtype;
    for (int64_t k = 0; k < rows; k++)
        if (nd_offset(ip, idt, k, depth, ps->dims, st) < 0)
            return bad_nd_index(op, in[1], k, depth, ps);
    if (rows == 0 || len == 0)
        return TFM_OK;
    size_t esz = tfm_dtype_size(in[0]->dtype);
    int64_t e = (int64_t)esz;
    char *o = tfm_tensor_data(out[0]);
    const char *s = tfm_tensor_data(in[0]);
    GATHER_ROWS(nd_offset(ip, idt, k, depth, ps->dims, st) * len);
    return TFM_OK;
}

/* COMBINE(a_ = old, b_ = update) is the new value. As in TF, a NaN
 * update never wins min or max, and a NaN already there stays. */
#define SCATTER_COMBINE(T, COMBINE)                                         \
    do {                                                                    \
        T *o_ = (T *)o;                                                     \
        const T *u_ = (const T *)u;                                         \
        for (int64_t k = 0; k < rows; k++) {                                \
            int64_t off = nd_offset(ip, idt, k, depth, ts->dims, st) * len; \
            for (int64_t j = 0; j < len; j++) {                             \
                T a_ = o_[off + j], b_ = u_[k * len + j];                   \
                o_[off + j] = (T)(COMBINE);                                 \
            }                                                               \
        }                                                                   \
    } while (0)
#define SCATTER_ADD(T) SCATTER_COMBINE(T, a_ + b_)
#define SCATTER_MIN(T) SCATTER_COMBINE(T, b_ < a_ ? b_ : a_)
#define SCATTER_MAX(T) SCATTER_COMBINE(T, b_ > a_ ? b_ : a_)
#define SCATTER_SWITCH(MODE)                                                \
    switch (in[0]->dtype) {                                                 \
    case TFM_INT8: MODE(int8_t); break;                                     \
    case TFM_UINT8: MODE(uint8_t); break;                                   \
    case TFM_INT16: MODE(int16_t); break;                                   \
    case TFM_INT32: MODE(int32_t); break;                                   \
    case TFM_INT64: MODE(int64_t); break;                                   \
    case TFM_UINT16: MODE(uint16_t); break;                                 \
    case TFM_UINT32: MODE(uint32_t); break;                                 \
    case TFM_UINT64: MODE(uint64_t); break;                                 \
    case TFM_FLOAT32: MODE(float); break;                                   \
    case TFM_FLOAT64: MODE(double); break;                                  \
    default:                                                                \
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "  \
                         "dtype %s", tfm_ops[op].name,                      \
                         tfm_dtype_name(in[0]->dtype));                     \
    }

/* Updates land in index order: with repeated indices, the last update
 * wins (TF leaves the order unspecified) and adds accumulate. */
tfm_code
tfm_k_scatter(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *ts = &in[0]->shape, *is = &in[1]->shape;
    int depth = (int)is->dims[is->ndim - 1];
    int64_t st[TFM_MAX_DIMS];
    int64_t len = slice_strides(ts, depth, st);
    int64_t rows = 1;
    for (int d = 0; d < is->ndim - 1; d++)
        rows *= is->dims[d];
    const void *ip = tfm_tensor_data(in[1]);
    tfm_dtype idt = in[1]->dtype;
    for (int64_t k = 0; k < rows; k++)
        if (nd_offset(ip, idt, k, depth, ts->dims, st) < 0)
            return bad_nd_index(op, in[1], k, depth, ts);
    char *o = tfm_tensor_data(out[0]);
    const char *u = tfm_tensor_data(in[2]);
    /* The executor may hand in the input as the output (Note [Writing
     * over a loop variable] in graph/exec.c). */
    if (o != (const char *)tfm_tensor_data(in[0]))
        tfm_memcpy_par(o, tfm_tensor_data(in[0]), tfm_tensor_nbytes(out[0]));
    if (rows == 0 || len == 0)
        return TFM_OK;
    size_t esz = tfm_dtype_size(in[0]->dtype);
    if (op == TFM_OP_TENSOR_SCATTER_UPDATE) {
        for (int64_t k = 0; k < rows; k++) {
            int64_t off = nd_offset(ip, idt, k, depth, ts->dims, st) * len;
            memcpy(o + off * (int64_t)esz, u + k * len * (int64_t)esz,
                   (size_t)len * esz);
        }
        return TFM_OK;
    }
    if (op == TFM_OP_TENSOR_SCATTER_MIN)
        SCATTER_SWITCH(SCATTER_MIN)
    else if (op == TFM_OP_TENSOR_SCATTER_MAX)
        SCATTER_SWITCH(SCATTER_MAX)
    else
        SCATTER_SWITCH(SCATTER_ADD)
    return TFM_OK;
}
