#include "tensor.h"
#include "bfloat16.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next_id = 1;
static int64_t live_tensors;

/* Tensor structs are recycled through a small freelist: eager code makes
 * and drops one per op. */
#define FREELIST_MAX 1024
static tfm_tensor *freelist[FREELIST_MAX];
static int freelist_n;

static tfm_tensor *
tensor_alloc(void)
{
    tfm_tensor *t = freelist_n ? freelist[--freelist_n]
                               : malloc(sizeof(tfm_tensor));
    if (!t) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM allocating a tensor");
        return NULL;
    }
    t->refcount = 1;
    t->id = next_id++;
    t->offset = 0;
    t->graph = NULL;
    t->node = -1;
    t->out_index = 0;
    live_tensors++;
    return t;
}

/* ResourceExhaustedError naming what was asked for, as TF's "OOM when
 * allocating tensor with shape[...] and type float" does. */
static void
oom(tfm_dtype dtype, const tfm_shape *shape, const char *why)
{
    char s[256];
    tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM when allocating tensor with "
              "shape %s and type %s: %s", tfm_shape_str(shape, s, sizeof s),
              tfm_dtype_name(dtype), why);
}

tfm_tensor *
tfm_tensor_new(tfm_dtype dtype, const tfm_shape *shape, int device)
{
    if ((unsigned)dtype >= TFM_DTYPE_COUNT) {
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "invalid dtype %d", (int)dtype);
        return NULL;
    }
    int64_t n = tfm_shape_numel(shape);
    if (n < 0) {
        tfm_error(TFM_ERR_INVALID_ARGUMENT,
                  "cannot allocate a tensor of unknown shape");
        return NULL;
    }
    size_t esz = tfm_dtype_size(dtype);
    if ((uint64_t)n > SIZE_MAX / esz) {
        oom(dtype, shape, "its size in bytes does not fit in memory "
            "addresses");
        return NULL;
    }
    if (dtype == TFM_STRING && device != TFM_CPU) {
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "string tensors live in host "
                  "memory only (as TF's); device %d asked for", device);
        return NULL;
    }
    tfm_buffer *b = tfm_buffer_new((size_t)n * esz, device);
    if (!b) {
        if (tfm_error_code() == TFM_ERR_RESOURCE_EXHAUSTED) {
            /* Keep the buffer's reason, less its "OOM when allocating". */
            static const char prefix[] = "OOM when allocating ";
            const char *m = tfm_error_message();
            char why[512];
            if (strncmp(m, prefix, sizeof prefix - 1) == 0)
                m += sizeof prefix - 1;
            snprintf(why, sizeof why, "%s", m);
            oom(dtype, shape, why);
        }
        return NULL;
    }
    tfm_tensor *t = tensor_alloc();
    if (!t) {
        tfm_buffer_decref(b);
        return NULL;
    }
    if (dtype == TFM_STRING) {
        /* Note [String elements]: every slot a valid b"". */
        memset(b->data, 0, b->nbytes);
        b->strings = 1;
    }
    t->dtype = dtype;
    t->shape = *shape;
    t->device = device;
    t->buf = b;
    return t;
}

tfm_tensor *
tfm_tensor_view(tfm_buffer *buf, size_t offset, tfm_dtype dtype,
                const tfm_shape *shape, int device)
{
    tfm_tensor *t = tensor_alloc();
    if (!t)
        return NULL;
    tfm_buffer_incref(buf);
    t->dtype = dtype;
    t->shape = *shape;
    t->device = device;
    t->buf = buf;
    t->offset = offset;
    return t;
}

tfm_tensor *
tfm_tensor_symbolic(tfm_dtype dtype, const tfm_shape *shape,
                    struct tfm_graph *graph, int node, int out_index)
{
    tfm_tensor *t = tensor_alloc();
    if (!t)
        return NULL;
    t->dtype = dtype;
    t->shape = *shape;
    t->device = 0;
    t->buf = NULL;
    t->graph = graph;
    t->node = node;
    t->out_index = out_index;
    return t;
}

tfm_tensor *
tfm_tensor_scalar(tfm_dtype dtype, double v)
{
    tfm_shape s = {0};
    tfm_tensor *t = tfm_tensor_new(dtype, &s, TFM_CPU);
    if (t)
        tfm_tensor_set_f64(t, 0, v);
    return t;
}

void
tfm_tensor_decref(tfm_tensor *t)
{
    if (--t->refcount > 0)
        return;
    if (t->buf)
        tfm_buffer_decref(t->buf);
    live_tensors--;
    if (freelist_n < FREELIST_MAX)
        freelist[freelist_n++] = t;
    else
        free(t);
}

double
tfm_tensor_get_f64(const tfm_tensor *t, int64_t i)
{
    const void *p = tfm_tensor_data(t);
    switch (t->dtype) {
    case TFM_BOOL: return ((const uint8_t *)p)[i] != 0;
    case TFM_INT8: return ((const int8_t *)p)[i];
    case TFM_UINT8: return ((const uint8_t *)p)[i];
    case TFM_INT16: return ((const int16_t *)p)[i];
    case TFM_INT32: return ((const int32_t *)p)[i];
    case TFM_INT64: return (double)((const int64_t *)p)[i];
    case TFM_FLOAT16: return tfm_half_to_float(((const uint16_t *)p)[i]);
    case TFM_BFLOAT16: return tfm_bf16_to_float(((const uint16_t *)p)[i]);
    case TFM_FLOAT32: return ((const float *)p)[i];
    case TFM_FLOAT64: return ((const double *)p)[i];
    /* complex: the real part (what a cast to float keeps) */
    case TFM_COMPLEX64: return ((const float *)p)[2 * i];
    case TFM_COMPLEX128: return ((const double *)p)[2 * i];
    case TFM_UINT16: return ((const uint16_t *)p)[i];
    case TFM_UINT32: return ((const uint32_t *)p)[i];
    case TFM_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

void
tfm_tensor_set_f64(tfm_tensor *t, int64_t i, double v)
{
    void *p = tfm_tensor_data(t);
    switch (t->dtype) {
    case TFM_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case TFM_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case TFM_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case TFM_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case TFM_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case TFM_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case TFM_FLOAT16: ((uint16_t *)p)[i] = tfm_float_to_half((float)v); break;
    case TFM_BFLOAT16: ((uint16_t *)p)[i] = tfm_float_to_bf16((float)v); break;
    case TFM_FLOAT32: ((float *)p)[i] = (float)v; break;
    case TFM_FLOAT64: ((double *)p)[i] = v; break;
    case TFM_COMPLEX64:
        ((float *)p)[2 * i] = (float)v;
        ((float *)p)[2 * i + 1] = 0;
        break;
    case TFM_COMPLEX128:
        ((double *)p)[2 * i] = v;
        ((double *)p)[2 * i + 1] = 0;
        break;
    /* Negative values wrap as from int64 (C leaves a negative double to
     * unsigned undefined). */
    case TFM_UINT16: ((uint16_t *)p)[i] = (uint16_t)(int64_t)v; break;
    case TFM_UINT32: ((uint32_t *)p)[i] = (uint32_t)(int64_t)v; break;
    case TFM_UINT64:
        ((uint64_t *)p)[i] = v >= 0 ? (uint64_t)v : (uint64_t)(int64_t)v;
        break;
    default: break;
    }
}

int64_t
tfm_tensor_live_count(void)
{
    return live_tensors;
}
