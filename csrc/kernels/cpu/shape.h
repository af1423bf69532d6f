/* CPU kernels of the shape family (rows in ops/ops_shape.def), and the
 * byte-moving primitives they share. Copies are dtype-agnostic: they move
 * elements by size, so one kernel serves every dtype. */
#ifndef TFM_KERNELS_CPU_SHAPE_H
#define TFM_KERNELS_CPU_SHAPE_H

#include "../../ops/op.h"

#define TFM_SHAPE_KERNEL(NAME)                                              \
    tfm_code NAME(tfm_op op, tfm_tensor *const *in, int nin,                \
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,     \
                  const tfm_kctx *ctx)

/* shape_copy.c */
TFM_SHAPE_KERNEL(tfm_k_copy);           /* Reshape, ExpandDims, Squeeze,
                                           Identity */
TFM_SHAPE_KERNEL(tfm_k_transpose);
TFM_SHAPE_KERNEL(tfm_k_concat);         /* ConcatV2, Pack */
TFM_SHAPE_KERNEL(tfm_k_split);          /* Unpack, Split, SplitV */
TFM_SHAPE_KERNEL(tfm_k_tile);
TFM_SHAPE_KERNEL(tfm_k_reverse);
TFM_SHAPE_KERNEL(tfm_k_broadcast_to);
/* shape_pad.c */
TFM_SHAPE_KERNEL(tfm_k_pad);            /* PadV2, MirrorPad */
/* shape_slice.c */
TFM_SHAPE_KERNEL(tfm_k_slice);
TFM_SHAPE_KERNEL(tfm_k_strided_slice);
TFM_SHAPE_KERNEL(tfm_k_strided_slice_grad);
/* shape_gather.c */
TFM_SHAPE_KERNEL(tfm_k_gather);
TFM_SHAPE_KERNEL(tfm_k_gather_nd);
TFM_SHAPE_KERNEL(tfm_k_scatter);        /* TensorScatterUpdate/Add */
/* shape_select.c */
TFM_SHAPE_KERNEL(tfm_k_select);
TFM_SHAPE_KERNEL(tfm_k_where);
/* shape_fill.c */
TFM_SHAPE_KERNEL(tfm_k_shape_of);       /* Shape, Size, Rank */
TFM_SHAPE_KERNEL(tfm_k_fill);           /* Fill, ZerosLike, OnesLike */
TFM_SHAPE_KERNEL(tfm_k_range);
TFM_SHAPE_KERNEL(tfm_k_linspace);
TFM_SHAPE_KERNEL(tfm_k_one_hot);

#undef TFM_SHAPE_KERNEL

/* Most dims a copy plan takes: Tile views its output as 2 * rank dims. */
#define TFM_COPY_MAX_DIMS (2 * TFM_MAX_DIMS)

/* Copy the ndim-dimensional view of src (element strides sstride, which
 * may be negative or 0) onto the view of dst (element strides dstride).
 * Dims are merged where both views allow; contiguous runs use memcpy;
 * a transposing copy runs in cache-sized tiles; big copies use every
 * core. dst's view must not overlap itself or src. */
void tfm_copy_nd(void *dst, const int64_t *dstride, const void *src,
                 const int64_t *sstride, const int64_t *dims, int ndim,
                 size_t esz);
/* tfm_copy_nd onto a contiguous, row-major dst. */
void tfm_copy_strided(void *dst, const void *src, const int64_t *sstride,
                      const int64_t *dims, int ndim, size_t esz);
/* memcpy on all cores when it is big. */
void tfm_memcpy_par(void *dst, const void *src, size_t nbytes);
/* n copies of the esz-byte element at elem. */
void tfm_fill_bytes(void *dst, const void *elem, int64_t n, size_t esz);
/* Row-major element strides of s. */
void tfm_row_strides(const tfm_shape *s, int64_t *strides);

/* The product of dims[from..to). */
static inline int64_t
tfm_dims_prod(const int64_t *dims, int from, int to)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= dims[d];
    return n;
}

/* ConcatV2 and Pack as rows: the output's dims before the axis (i[0],
 * negative from the end) are *outer rows of *row elements, each the
 * inputs' rows one after another. The CPU and GPU kernels share it. */
static inline void
tfm_concat_rows(const tfm_shape *os, int64_t axis, int64_t *outer,
                int64_t *row)
{
    int ax = (int)(axis < 0 ? axis + os->ndim : axis);
    *outer = tfm_dims_prod(os->dims, 0, ax);
    *row = tfm_dims_prod(os->dims, ax, os->ndim);
}

/* Element i of an integer tensor's data, as int64. */
static inline int64_t
tfm_index_at(const void *p, tfm_dtype d, int64_t i)
{
    switch (d) {
    case TFM_INT32: return ((const int32_t *)p)[i];
    case TFM_INT64: return ((const int64_t *)p)[i];
    case TFM_INT8: return ((const int8_t *)p)[i];
    case TFM_UINT8: return ((const uint8_t *)p)[i];
    case TFM_INT16: return ((const int16_t *)p)[i];
    case TFM_UINT16: return ((const uint16_t *)p)[i];
    case TFM_UINT32: return ((const uint32_t *)p)[i];
    case TFM_UINT64: return (int64_t)((const uint64_t *)p)[i];
    default: return 0;
    }
}

#endif
