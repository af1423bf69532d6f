/* PadV2 (constant) and MirrorPad (REFLECT, SYMMETRIC). */
#include "shape.h"

#include <string.h>

/* Source index, inside [0, n), of padded position k (k < 0 or k >= n). */
static int64_t
mirror_index(int64_t k, int64_t n, int symmetric)
{
    if (k < 0)
        return symmetric ? -k - 1 : -k;
    return symmetric ? 2 * n - 1 - k : 2 * n - 2 - k;
}

/* v (which the shape rule checked fits) as one element of dtype d. */
static void
int_elem(tfm_dtype d, int64_t v, char *elem)
{
    int8_t i8 = (int8_t)v;
    uint8_t u8 = (uint8_t)v;
    int16_t i16 = (int16_t)v;
    int32_t i32 = (int32_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (d) {
    case TFM_INT8: memcpy(elem, &i8, 1); break;
    case TFM_UINT8: memcpy(elem, &u8, 1); break;
    case TFM_INT16: memcpy(elem, &i16, 2); break;
    case TFM_INT32: memcpy(elem, &i32, 4); break;
    case TFM_UINT16: memcpy(elem, &u16, 2); break;
    case TFM_UINT32: memcpy(elem, &u32, 4); break;
    default: memcpy(elem, &v, 8); break;
    }
}

tfm_code
tfm_k_pad(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape, *os = &out[0]->shape;
    int r = x->ndim;
    size_t esz = tfm_dtype_size(in[0]->dtype);
    int64_t e = (int64_t)esz;
    int64_t n = tfm_shape_numel(os);
    if (n == 0)
        return TFM_OK;
    char *o = tfm_tensor_data(out[0]);
    int64_t ost[TFM_MAX_DIMS], ist[TFM_MAX_DIMS], base = 0;
    tfm_row_strides(os, ost);
    tfm_row_strides(x, ist);
    for (int d = 0; d < r; d++)
        base += a->ints[2 * d] * ost[d];
    if (op == TFM_OP_PAD) {
        if (n != tfm_shape_numel(x)) {
            /* The constant, written once in the output's dtype, then
             * repeated; the interior is overwritten below. */
            char elem[16];          /* up to complex128 */
            if (a->i[1] && tfm_dtype_is_int(out[0]->dtype)) {
                int_elem(out[0]->dtype, a->i[2], elem);
            } else {
                tfm_tensor_set_f64(out[0], 0, a->f[0]);
                memcpy(elem, o, esz);
            }
            tfm_fill_bytes(o, elem, n, esz);
        }
        tfm_copy_nd(o + base * e, ost, tfm_tensor_data(in[0]), ist,
                    x->dims, r, esz);
        return TFM_OK;
    }
    /* Mirror: copy the input in, then fill the borders dim by dim from
     * the innermost out. When dim d is done, every row whose indices in
     * dims < d are interior is complete in dims >= d; so each border
     * slab of dim d (interior in dims < d, whole in dims > d) is a copy
     * of a slab already complete. */
    tfm_copy_nd(o + base * e, ost, tfm_tensor_data(in[0]), ist, x->dims, r,
                esz);
    int symmetric = a->i[0] == 1;
    for (int d = r - 1; d >= 0; d--) {
        int64_t lo = a->ints[2 * d], hi = a->ints[2 * d + 1];
        if (lo == 0 && hi == 0)
            continue;
        int64_t dims[TFM_MAX_DIMS], off = 0;
        for (int k = 0; k < r; k++) {
            dims[k] = k < d ? x->dims[k] : k == d ? 1 : os->dims[k];
            if (k < d)
                off += a->ints[2 * k] * ost[k];
        }
        int64_t nd = x->dims[d];
        for (int64_t p = 0; p < lo + hi; p++) {
            int64_t k = p < lo ? p - lo : nd + (p - lo);
            int64_t dst_at = p < lo ? p : lo + nd + (p - lo);
            int64_t src_at = lo + mirror_index(k, nd, symmetric);
            tfm_copy_nd(o + (off + dst_at * ost[d]) * e, ost,
                        o + (off + src_at * ost[d]) * e, ost, dims, r, esz);
        }
    }
    return TFM_OK;
}
