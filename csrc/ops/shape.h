/* Shape rules of the shape family (rows in ops_shape.def), and the
 * strided-slice plan that the rule and the kernels share. */
#ifndef TFM_OPS_SHAPE_H
#define TFM_OPS_SHAPE_H

#include "op.h"
#include "../kernels/cpu/slice_plan.h"

#define TFM_SHAPE_INFER(NAME)                                               \
    tfm_code NAME(tfm_op op, const tfm_meta *in, int nin,                   \
                  const tfm_attrs *a, tfm_meta *out, int *nout)

/* shape.c: reshaping and copying */
TFM_SHAPE_INFER(tfm_infer_reshape);
TFM_SHAPE_INFER(tfm_infer_transpose);
TFM_SHAPE_INFER(tfm_infer_expand_dims);
TFM_SHAPE_INFER(tfm_infer_squeeze);
TFM_SHAPE_INFER(tfm_infer_identity);
TFM_SHAPE_INFER(tfm_infer_concat);
TFM_SHAPE_INFER(tfm_infer_pack);
TFM_SHAPE_INFER(tfm_infer_unpack);
TFM_SHAPE_INFER(tfm_infer_split);
TFM_SHAPE_INFER(tfm_infer_tile);
TFM_SHAPE_INFER(tfm_infer_pad);
TFM_SHAPE_INFER(tfm_infer_reverse);
TFM_SHAPE_INFER(tfm_infer_broadcast_to);
TFM_SHAPE_INFER(tfm_infer_shape_of);
/* shape_index.c: slicing, gathering, scattering, selecting */
TFM_SHAPE_INFER(tfm_infer_slice);
TFM_SHAPE_INFER(tfm_infer_strided_slice);
TFM_SHAPE_INFER(tfm_infer_strided_slice_grad);
TFM_SHAPE_INFER(tfm_infer_gather);
TFM_SHAPE_INFER(tfm_infer_gather_nd);
TFM_SHAPE_INFER(tfm_infer_scatter);
TFM_SHAPE_INFER(tfm_infer_select);
TFM_SHAPE_INFER(tfm_infer_where);
/* shape_fill.c: tensors made from attributes */
TFM_SHAPE_INFER(tfm_infer_fill);
TFM_SHAPE_INFER(tfm_infer_range);
TFM_SHAPE_INFER(tfm_infer_linspace);
TFM_SHAPE_INFER(tfm_infer_one_hot);

#undef TFM_SHAPE_INFER

/* An InvalidArgumentError naming op when a tensor of dtype d and shape
 * s would span more bytes than int64 counts, zero dims aside (NumPy's
 * rule: every tensor that passes converts to an array). Every rule whose
 * output dims come from attributes or from arithmetic on dims calls it,
 * so that the error names the op (the allocator's does not) and no
 * count ever wraps. */
tfm_code tfm_check_size(const char *op, const tfm_shape *s, tfm_dtype d);

/* Whether v is a value of the integer dtype d. */
static inline int
tfm_int_fits(int64_t v, tfm_dtype d)
{
    switch (d) {
    case TFM_INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case TFM_UINT8: return v >= 0 && v <= UINT8_MAX;
    case TFM_INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case TFM_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case TFM_UINT16: return v >= 0 && v <= UINT16_MAX;
    case TFM_UINT32: return v >= 0 && v <= UINT32_MAX;
    case TFM_UINT64: return v >= 0;
    default: return 1;
    }
}

#endif
