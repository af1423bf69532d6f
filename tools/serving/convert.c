/* JSON <-> tensors (convert.h). */
#include <math.h>
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

/* The shape of value, following first elements; -1 past max dims. */
static int
shape_of(const jnode *value, int64_t *dims, int max)
{
    int rank = 0;
    while (jp_is_array(value)) {
        if (rank == max)
            return -1;
        dims[rank++] = (int64_t)jp_count(value);
        value = jp_first(value);
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

static const char *
kind_of(const jnode *x)
{
    return jp_is_string(x) ? "a string" : jp_is_object(x) ? "an object" :
        jp_is_null(x) ? "null" : "a list";
}

static int
put(filler *f, const jnode *x)
{
    if (f->n >= f->cap) {
        snprintf(f->err, f->errlen, "the values do not form a tensor: "
                 "lists of unequal lengths");
        return -1;
    }
    double v;
    if (jp_is_number(x))
        v = jp_number(x);
    else if (jp_is_bool(x))
        v = jp_is_true(x);
    else {
        snprintf(f->err, f->errlen, "expected a number for a %s input, got "
                 "%s", tfmini_dtype_name(f->dtype), kind_of(x));
        return -1;
    }
    /* JSON has no infinity: this was a literal past a double's range
     * (TF Serving's parser refuses it too). */
    if (isinf(v)) {
        snprintf(f->err, f->errlen, "a number is too big to be stored in "
                 "a double");
        return -1;
    }
    int64_t i = f->n++;
    switch (f->dtype) {
    case TFMINI_FLOAT32: ((float *)f->data)[i] = (float)v; return 0;
    case TFMINI_FLOAT64: ((double *)f->data)[i] = v; return 0;
    case TFMINI_BOOL: ((uint8_t *)f->data)[i] = v != 0; return 0;
    default: break;
    }
    /* Integers: whole numbers in the dtype's range only. Numbers are
     * read as doubles, exact up to 2^53: past that an int64 could come
     * out silently rounded, so it is refused. */
    double lim = f->dtype == TFMINI_INT32 ? 2147483648.0
                                          : 9007199254740992.0;
    if (v != floor(v) || v >= lim || v < -lim) {
        snprintf(f->err, f->errlen, "expected a whole number in [%.0f, "
                 "%.0f) for a %s input, got %.17g", -lim, lim,
                 tfmini_dtype_name(f->dtype), v);
        return -1;
    }
    if (f->dtype == TFMINI_INT32)
        ((int32_t *)f->data)[i] = (int32_t)v;
    else
        ((int64_t *)f->data)[i] = (int64_t)v;
    return 0;
}

/* Fill from value, which must have shape dims[0..rank). */
static int
fill(filler *f, const jnode *value, const int64_t *dims, int rank)
{
    if (rank == 0)
        return put(f, value);
    if (!jp_is_array(value)) {
        snprintf(f->err, f->errlen, "the values do not form a tensor: "
                 "lists of unequal lengths or depths");
        return -1;
    }
    int64_t k = 0;
    const jnode *x = jp_first(value);
    for (; x && k < dims[0]; x = jp_next(x), k++)
        if (fill(f, x, dims + 1, rank - 1))
            return -1;
    if (x || k != dims[0]) {
        snprintf(f->err, f->errlen, "the values do not form a tensor: "
                 "lists of unequal lengths or depths");
        return -1;
    }
    return 0;
}

/* Instance k's value: the instance, or its member `member`. */
static const jnode *
instance(const jnode *x, const char *member)
{
    return member ? jp_get(x, member) : x;
}

TFM_Tensor *
json_to_tensor(const jnode *value, TFM_DataType dtype, int stack,
               const char *member, char *err, size_t errlen)
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
        rank = shape_of(instance(jp_first(value), member), dims + 1,
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
    size_t es = tfmini_dtype_size(dtype), bytes = (size_t)n * es;
    /* tfmini_tensor_new copies: a one-row request fills the stack. */
    _Alignas(16) char small[4096];
    filler f = {dtype, bytes <= sizeof small ? small : malloc(bytes ? bytes
                                                              : 1),
                0, n, err, errlen};
    if (!f.data) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int bad = 0;
    if (stack > 0) {
        /* The caller checked every instance has the member. */
        for (const jnode *x = jp_first(value); x && !bad; x = jp_next(x))
            bad = fill(&f, instance(x, member), dims + 1, rank - 1);
    } else {
        bad = fill(&f, value, dims, rank);
    }
    TFM_Tensor *t = NULL;
    if (!bad && f.n != n) {
        snprintf(err, errlen, "the values do not form a tensor");
        bad = 1;
    }
    if (!bad) {
        TFM_Status *st = tfmini_status_new();
        t = tfmini_tensor_new(dtype, dims, rank, f.data, bytes, st);
        if (!t)
            snprintf(err, errlen, "%s", tfmini_status_message(st));
        tfmini_status_free(st);
    }
    if (f.data != small)
        free(f.data);
    return t;
}
