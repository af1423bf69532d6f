/* Slice and StridedSlice: a strided view of the input, copied out. */
#include "shape.h"

#include "../../ops/shape.h"

tfm_code
tfm_k_slice(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout)
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
                    const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    tfm_slice_plan p;
    tfm_code rc = tfm_strided_slice_plan(&in[0]->shape, a, &p);
    if (rc)
        return rc;
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    int64_t st[TFM_MAX_DIMS], base = 0;
    tfm_row_strides(&in[0]->shape, st);
    for (int d = 0; d < p.ndim; d++) {
        base += p.begin[d] * st[d];
        st[d] *= p.stride[d];
    }
    size_t esz = tfm_dtype_size(in[0]->dtype);
    tfm_copy_strided(tfm_tensor_data(out[0]),
                     (const char *)tfm_tensor_data(in[0]) +
                         base * (int64_t)esz,
                     st, p.len, p.ndim, esz);
    return TFM_OK;
}
