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
/* Where plan p reads in a row-major tensor of shape s (the one it was
 * resolved against): returns the offset, in elements, of the view's
 * first element, and sets st[d] to the step of input dim d (the row
 * stride times the plan's stride, negative when it runs backwards).
 * StridedSlice and its gradient on both devices copy through this view;
 * one function, so they cannot disagree on where it is. */
int64_t tfm_slice_plan_view(const tfm_slice_plan *p, const tfm_shape *s,
                            int64_t *st);
/* StridedSliceGrad's attrs: the input shape, and StridedSlice's attrs
 * (the spec after the shape). */
tfm_code tfm_strided_slice_grad_attrs(const tfm_attrs *a, tfm_shape *shape,
                                      tfm_attrs *slice);

#endif
