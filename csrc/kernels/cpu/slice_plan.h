/* Strided-slice plans: shared by StridedSlice's shape rule (ops/) and its
 * kernels, so it lives at the lower layer. */
#ifndef TFM_KERNELS_CPU_SLICE_PLAN_H
#define TFM_KERNELS_CPU_SLICE_PLAN_H

#include "../../ops/op.h"

/* A strided slice resolved against an input shape: for every input dim
 * d, the first index begin[d], the step stride[d] and the count len[d]
 * (len -1 when the dim is unknown and the count cannot be known). The
 * output shape adds new axes and drops shrunk dims. */
typedef struct tfm_slice_plan {
    int ndim;                        /* input rank */
    int64_t begin[TFM_MAX_DIMS];
    int64_t stride[TFM_MAX_DIMS];
    int64_t len[TFM_MAX_DIMS];
    tfm_shape out;
} tfm_slice_plan;

/* Resolve StridedSlice attrs (see ops_shape.def) against shape `in`.
 * Errors name `op` (StridedSlice or StridedSliceGrad): bad spec, zero
 * stride, shrunk index out of range. */
tfm_code tfm_strided_slice_plan(const char *op, const tfm_shape *in,
                                const tfm_attrs *a, tfm_slice_plan *p);
/* StridedSliceGrad's attrs: the input shape, and StridedSlice's attrs
 * (the spec after the shape). */
tfm_code tfm_strided_slice_grad_attrs(const tfm_attrs *a, tfm_shape *shape,
                                      tfm_attrs *slice);

#endif
