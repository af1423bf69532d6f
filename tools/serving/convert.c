/* JSON <-> tensors (convert.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"

#define MAX_ELEMENTS ((int64_t)1 << 28)

const char *
dtype_tf_name(TFM_DataType d)
{
    static const char *const names[] = {
        "DT_BOOL", "DT_INT8", "DT_UINT8", "DT_INT16", "DT_INT32",
        "DT_INT64", "DT_HALF", "DT_FLOAT", "DT_DOUBLE"};
    return (unsigned)d < 9 ? names[d] : "DT_INVALID";
}

int
dtype_from_name(const char *name)
{
    for (int d = 0; d < 9; d++)
        if (name && strcmp(tfmini_dtype_name((TFM_DataType)d), name) == 0)
            return d;
    return -1;
}

/* The shape of value, following first elements; -1 past TFMINI_MAX_DIMS. */
static int
shape_of(json_t *value, int64_t *dims, int max)
{
    int rank = 0;
    while (json_is_array(value)) {
        if (rank == max)
            return -1;
        dims[rank++] = (int64_t)json_array_size(value);
        value = json_array_size(value) ? json_array_get(value, 0) : NULL;
    }
    return rank;
}

typedef struct filler {
    TFM_DataType dtype;
    char *data;
    int64_t n, cap;
    char *err;
    size_t errlen;
} filler;

static int
put(filler *f, json_t *x)
{
    if (f->n >= f->cap) {
        snprintf(f->err, f->errlen, "the values do not form a tensor: "
                 "lists of unequal lengths");
        return -1;
    }
    double v;
    if (json_is_integer(x))
        v = (double)json_integer_value(x);
    else if (json_is_real(x))
        v = json_real_value(x);
    else if (json_is_boolean(x))
        v = json_is_true(x);
    else {
        snprintf(f->err, f->errlen, "expected a number for a %s input, got "
                 "%s", tfmini_dtype_name(f->dtype), json_is_string(x) ?
                 "a string" : json_is_object(x) ? "an object" :
                 json_is_null(x) ? "null" : "a list");
        return -1;
    }
    int64_t i = f->n++;
    switch (f->dtype) {
    case TFMINI_FLOAT32: ((float *)f->data)[i] = (float)v; break;
    case TFMINI_FLOAT64: ((double *)f->data)[i] = v; break;
    case TFMINI_INT32: ((int32_t *)f->data)[i] = (int32_t)v; break;
    case TFMINI_INT64: ((int64_t *)f->data)[i] = (int64_t)v; break;
    case TFMINI_BOOL: ((uint8_t *)f->data)[i] = v != 0; break;
    default: return -1;
    }
    return 0;
}

/* Fill from value, which must have shape dims[0..rank). */
static int
fill(filler *f, json_t *value, const int64_t *dims, int rank)
{
    if (rank == 0)
        return put(f, value);
    if (!json_is_array(value) || (int64_t)json_array_size(value) != dims[0]) {
        snprintf(f->err, f->errlen, "the values do not form a tensor: "
                 "lists of unequal lengths or depths");
        return -1;
    }
    size_t i;
    json_t *x;
    json_array_foreach(value, i, x)
        if (fill(f, x, dims + 1, rank - 1))
            return -1;
    return 0;
}

TFM_Tensor *
json_to_tensor(json_t *value, TFM_DataType dtype, int stack, char *err,
               size_t errlen)
{
    if (dtype != TFMINI_FLOAT32 && dtype != TFMINI_FLOAT64 &&
        dtype != TFMINI_INT32 && dtype != TFMINI_INT64 &&
        dtype != TFMINI_BOOL) {
        snprintf(err, errlen, "inputs of dtype %s are not served",
                 tfmini_dtype_name(dtype));
        return NULL;
    }
    int64_t dims[TFMINI_MAX_DIMS];
    int rank;
    if (stack > 0) {
        dims[0] = stack;
        rank = shape_of(json_array_get(value, 0), dims + 1,
                        TFMINI_MAX_DIMS - 1);
        rank = rank < 0 ? -1 : rank + 1;
    } else {
        rank = shape_of(value, dims, TFMINI_MAX_DIMS);
    }
    if (rank < 0) {
        snprintf(err, errlen, "the value has more than %d dimensions",
                 TFMINI_MAX_DIMS);
        return NULL;
    }
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        n *= dims[d];
        if (n > MAX_ELEMENTS) {
            snprintf(err, errlen, "the value has too many elements");
            return NULL;
        }
    }
    size_t es = tfmini_dtype_size(dtype);
    filler f = {dtype, malloc((size_t)(n ? n : 1) * es), 0, n, err, errlen};
    if (!f.data) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int bad = fill(&f, value, dims, rank);
    TFM_Tensor *t = NULL;
    if (!bad && f.n != n) {
        snprintf(err, errlen, "the values do not form a tensor");
        bad = 1;
    }
    if (!bad) {
        TFM_Status *st = tfmini_status_new();
        t = tfmini_tensor_new(dtype, dims, rank, f.data, (size_t)n * es, st);
        if (!t)
            snprintf(err, errlen, "%s", tfmini_status_message(st));
        tfmini_status_free(st);
    }
    free(f.data);
    return t;
}

static json_t *
element(const TFM_Tensor *t, int64_t i)
{
    const void *p = tfmini_tensor_data(t);
    switch (tfmini_tensor_dtype(t)) {
    case TFMINI_FLOAT32: return json_real(((const float *)p)[i]);
    case TFMINI_FLOAT64: return json_real(((const double *)p)[i]);
    case TFMINI_INT8: return json_integer(((const int8_t *)p)[i]);
    case TFMINI_UINT8: return json_integer(((const uint8_t *)p)[i]);
    case TFMINI_INT16: return json_integer(((const int16_t *)p)[i]);
    case TFMINI_INT32: return json_integer(((const int32_t *)p)[i]);
    case TFMINI_INT64: return json_integer(((const int64_t *)p)[i]);
    case TFMINI_BOOL: return json_boolean(((const uint8_t *)p)[i]);
    default: return json_null();
    }
}

static json_t *
nest(const TFM_Tensor *t, int d, int64_t *at)
{
    if (d == tfmini_tensor_rank(t))
        return element(t, (*at)++);
    json_t *a = json_array();
    for (int64_t k = 0; k < tfmini_tensor_dim(t, d); k++)
        json_array_append_new(a, nest(t, d + 1, at));
    return a;
}

json_t *
tensor_to_json(const TFM_Tensor *t, int64_t row)
{
    int64_t at = 0;
    if (row < 0)
        return nest(t, 0, &at);
    int64_t per = 1;
    for (int d = 1; d < tfmini_tensor_rank(t); d++)
        per *= tfmini_tensor_dim(t, d);
    at = row * per;
    return nest(t, 1, &at);
}
