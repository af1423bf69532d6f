/* Slice and StridedSlice: a strided view of the input, copied out. */
#include "shape.h"

#include "slice_plan.h"

tfm_code
tfm_k_slice(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    int r = x->ndim;
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    int64_t st[TFM_MAX_DIMS], base = 0;
    tfm_row_strides(x, st);
    for (int d = 0; d < r; d++)
        base += a->ints[d] * st[d];
    size_t esz = tfm_dtype_size(in[0]->dtype);
    tfm_copy_strided(tfm_tensor_data(out[0]),
                     (const char *)tfm_tensor_data(in[0]) +
                         base * (int64_t)esz,
                     st, out[0]->shape.dims, r, esz);
    return TFM_OK;
}

tfm_code
tfm_k_strided_slice(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
{
    tfm_slice_plan p;
    tfm_code rc = tfm_strided_slice_plan(tfm_ops[op].name, &in[0]->shape,
                                         a, &p);
    if (rc)
        return rc;
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    int64_t st[TFM_MAX_DIMS];
    int64_t base = tfm_slice_plan_view(&p, &in[0]->shape, st);
    size_t esz = tfm_dtype_size(in[0]->dtype);
    tfm_copy_strided(tfm_tensor_data(out[0]),
                     (const char *)tfm_tensor_data(in[0]) +
                         base * (int64_t)esz,
                     st, p.len, p.ndim, esz);
    return TFM_OK;
}

/* Zeros, with dy copied onto the strided view that StridedSlice read. */
tfm_code
tfm_k_strided_slice_grad(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    tfm_shape shape;
    tfm_attrs sa;
    tfm_slice_plan p;
    tfm_code rc = tfm_strided_slice_grad_attrs(a, &shape, &sa);
    if (rc || (rc = tfm_strided_slice_plan(tfm_ops[op].name, &shape, &sa,
                                            &p)))
        return rc;
    size_t esz = tfm_dtype_size(out[0]->dtype);
    char zero[16] = {0};    /* up to complex128 */
    tfm_fill_bytes(tfm_tensor_data(out[0]), zero, tfm_tensor_numel(out[0]),
                   esz);
    if (tfm_tensor_numel(in[0]) == 0)
        return TFM_OK;
    int64_t st[TFM_MAX_DIMS], ds[TFM_MAX_DIMS];
    int64_t base = tfm_slice_plan_view(&p, &shape, st);
    int64_t acc = 1;
    for (int d = p.ndim - 1; d >= 0; d--) {
        ds[d] = acc;
        acc *= p.len[d];
    }
    tfm_copy_nd((char *)tfm_tensor_data(out[0]) + base * (int64_t)esz, st,
                tfm_tensor_data(in[0]), ds, p.len, p.ndim, esz);
    return TFM_OK;
}
