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

#endif
