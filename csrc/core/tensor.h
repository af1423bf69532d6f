/* A tensor: dtype, shape, device and either a buffer (concrete) or a
 * reference to a graph node output (symbolic, while tracing). Immutable
 * once made; always row-major contiguous from buf->data + offset.
 *
 * Like buffers, tensors are made and refcounted only under the caller's
 * lock (the GIL in the binding); see buffer.h. */
#ifndef TFM_TENSOR_H
#define TFM_TENSOR_H

#include "buffer.h"
#include "dtype.h"
#include "shape.h"

struct tfm_graph;

typedef struct tfm_tensor {
    int64_t refcount;
    uint64_t id;              /* unique per tensor: the tape's key */
    tfm_dtype dtype;
    tfm_shape shape;
    int device;               /* index in the device table (device.h) */
    tfm_buffer *buf;          /* NULL when symbolic */
    size_t offset;            /* bytes into buf->data */
    /* Symbolic tensors: which graph node output this is. */
    struct tfm_graph *graph;
    int32_t node;
    int32_t out_index;
} tfm_tensor;

/* New concrete tensor with a fresh, uninitialized buffer. */
tfm_tensor *tfm_tensor_new(tfm_dtype dtype, const tfm_shape *shape,
                           int device);
/* New concrete tensor sharing buf (increfs it). */
tfm_tensor *tfm_tensor_view(tfm_buffer *buf, size_t offset, tfm_dtype dtype,
                            const tfm_shape *shape, int device);
/* New symbolic tensor (no buffer). */
tfm_tensor *tfm_tensor_symbolic(tfm_dtype dtype, const tfm_shape *shape,
                                struct tfm_graph *graph, int node,
                                int out_index);
/* Scalar of dtype holding v (converted). */
tfm_tensor *tfm_tensor_scalar(tfm_dtype dtype, double v);

static inline void
tfm_tensor_incref(tfm_tensor *t)
{
    t->refcount++;
}
void tfm_tensor_decref(tfm_tensor *t);

static inline void *
tfm_tensor_data(const tfm_tensor *t)
{
    return (char *)t->buf->data + t->offset;
}

static inline int64_t
tfm_tensor_numel(const tfm_tensor *t)
{
    return tfm_shape_numel(&t->shape);
}

static inline size_t
tfm_tensor_nbytes(const tfm_tensor *t)
{
    return (size_t)tfm_shape_numel(&t->shape) * tfm_dtype_size(t->dtype);
}

static inline int
tfm_tensor_is_symbolic(const tfm_tensor *t)
{
    return t->buf == NULL;
}

/* Element i as double / store double into element i (any dtype). Slow
 * path for scalars, printing and reference kernels; never in hot loops. */
double tfm_tensor_get_f64(const tfm_tensor *t, int64_t i);
void tfm_tensor_set_f64(tfm_tensor *t, int64_t i, double v);

int64_t tfm_tensor_live_count(void);

#endif
