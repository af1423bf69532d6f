/* Tensors: allocation, views sharing buffers, element access for every
 * dtype, symbolic tensors, and huge shapes that must fail cleanly. */
#include "check.h"
#include "core/device.h"
#include "core/tensor.h"
#include "core/tstring.h"

static tfm_shape
S2(int64_t a, int64_t b)
{
    int64_t d[2] = {a, b};
    return tfm_shape_make(2, d);
}

TEST(new_and_live_counts)
{
    int64_t t0 = tfm_tensor_live_count(), b0 = tfm_buffer_live_count();
    tfm_shape s = S2(2, 3);
    tfm_tensor *t = tfm_tensor_new(TFM_FLOAT32, &s, TFM_CPU);
    CHECK(t != NULL);
    CHECK_EQ_INT(t->refcount, 1);
    CHECK_EQ_INT(tfm_tensor_numel(t), 6);
    CHECK_EQ_INT(tfm_tensor_nbytes(t), 24);
    CHECK(!tfm_tensor_is_symbolic(t));
    CHECK_EQ_INT(tfm_tensor_live_count(), t0 + 1);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0 + 1);
    tfm_tensor_incref(t);
    tfm_tensor_decref(t);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0 + 1);
    tfm_tensor_decref(t);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0);
}

TEST(ids_are_unique_across_reuse)
{
    tfm_shape s = S2(1, 1);
    tfm_tensor *a = tfm_tensor_new(TFM_INT32, &s, TFM_CPU);
    uint64_t ida = a->id;
    tfm_tensor_decref(a);           /* its struct goes to the freelist */
    tfm_tensor *b = tfm_tensor_new(TFM_INT32, &s, TFM_CPU);
    CHECK(b->id != ida);
    tfm_tensor_decref(b);
}

TEST(view_shares_buffer)
{
    int64_t b0 = tfm_buffer_live_count();
    tfm_shape s = S2(2, 3), flat = tfm_shape_make(1, (int64_t[]){6});
    tfm_tensor *t = tfm_tensor_new(TFM_INT32, &s, TFM_CPU);
    for (int i = 0; i < 6; i++)
        tfm_tensor_set_f64(t, i, i * 10);
    tfm_tensor *v = tfm_tensor_view(t->buf, 0, TFM_INT32, &flat, TFM_CPU);
    CHECK(v->buf == t->buf);
    CHECK_EQ_INT(t->buf->refcount, 2);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0 + 1);
    /* a view at an offset: the last row */
    tfm_shape row = tfm_shape_make(1, (int64_t[]){3});
    tfm_tensor *r = tfm_tensor_view(t->buf, 3 * sizeof(int32_t), TFM_INT32,
                                    &row, TFM_CPU);
    CHECK_EQ_INT(t->buf->refcount, 3);
    CHECK(tfm_tensor_get_f64(r, 0) == 30 && tfm_tensor_get_f64(r, 2) == 50);
    CHECK(tfm_tensor_get_f64(v, 5) == 50);
    /* the buffer lives while any view does, whatever the order */
    tfm_tensor_decref(t);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0 + 1);
    CHECK(tfm_tensor_get_f64(v, 4) == 40);
    tfm_tensor_decref(v);
    CHECK(tfm_tensor_get_f64(r, 1) == 40);
    tfm_tensor_decref(r);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0);
}

TEST(get_set_every_dtype)
{
    tfm_shape s = tfm_shape_make(1, (int64_t[]){3});
    for (int d = 0; d < TFM_DTYPE_COUNT; d++) {
        if (d == TFM_STRING)
            continue;       /* no numbers: see string_elements_are_owned */
        tfm_tensor *t = tfm_tensor_new((tfm_dtype)d, &s, TFM_CPU);
        CHECK(t != NULL);
        tfm_tensor_set_f64(t, 0, 0);
        tfm_tensor_set_f64(t, 1, 1);
        tfm_tensor_set_f64(t, 2, d == TFM_BOOL ? 1 : 100);
        CHECK(tfm_tensor_get_f64(t, 0) == 0);
        CHECK(tfm_tensor_get_f64(t, 1) == 1);
        CHECK(tfm_tensor_get_f64(t, 2) == (d == TFM_BOOL ? 1 : 100));
        tfm_tensor_decref(t);
    }
    tfm_tensor *x = tfm_tensor_scalar(TFM_FLOAT64, 2.5);
    CHECK(x && x->shape.ndim == 0 && tfm_tensor_get_f64(x, 0) == 2.5);
    tfm_tensor_decref(x);
    x = tfm_tensor_scalar(TFM_FLOAT16, 0.5);
    CHECK(x && *(uint16_t *)tfm_tensor_data(x) == 0x3800);
    tfm_tensor_decref(x);
}

TEST(empty_tensor)
{
    tfm_shape s = S2(0, 5);
    tfm_tensor *t = tfm_tensor_new(TFM_FLOAT64, &s, TFM_CPU);
    CHECK(t != NULL);
    CHECK_EQ_INT(tfm_tensor_numel(t), 0);
    CHECK_EQ_INT(tfm_tensor_nbytes(t), 0);
    tfm_tensor_decref(t);
}

TEST(huge_shapes_are_resource_exhausted)
{
    int64_t t0 = tfm_tensor_live_count(), b0 = tfm_buffer_live_count();
    int64_t big = (int64_t)1 << 40;
    tfm_shape shapes[] = {
        S2(big, big),                   /* 2^80 elements: overflows int64 */
        S2((int64_t)1 << 31, (int64_t)1 << 31),  /* 2^62: bytes overflow */
        S2((int64_t)1 << 20, (int64_t)1 << 30),  /* 4 PiB: beyond RAM */
        S2(INT64_MAX, 2),
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        tfm_error_clear();
        tfm_tensor *t = tfm_tensor_new(TFM_FLOAT32, &shapes[i], TFM_CPU);
        CHECK(t == NULL);
        CHECK_EQ_INT(tfm_error_code(), TFM_ERR_RESOURCE_EXHAUSTED);
        CHECK_HAS(tfm_error_message(), "OOM when allocating tensor with "
                  "shape [");
        CHECK_HAS(tfm_error_message(), "float32");
    }
    tfm_error_clear();
    tfm_tensor_new(TFM_INT8, &shapes[0], TFM_CPU);
    CHECK_HAS(tfm_error_message(), "[1099511627776,1099511627776]");
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0);
    tfm_error_clear();
}

TEST(bad_requests)
{
    int64_t t0 = tfm_tensor_live_count();
    tfm_shape s = S2(TFM_UNKNOWN_DIM, 3);
    tfm_error_clear();
    CHECK(tfm_tensor_new(TFM_FLOAT32, &s, TFM_CPU) == NULL);
    CHECK_EQ_INT(tfm_error_code(), TFM_ERR_INVALID_ARGUMENT);
    CHECK_HAS(tfm_error_message(), "unknown shape");
    s = S2(2, 3);
    CHECK(tfm_tensor_new((tfm_dtype)99, &s, TFM_CPU) == NULL);
    CHECK_EQ_INT(tfm_error_code(), TFM_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
    tfm_error_clear();
}

TEST(symbolic)
{
    int64_t b0 = tfm_buffer_live_count();
    tfm_shape s = S2(TFM_UNKNOWN_DIM, 3);
    tfm_tensor *t = tfm_tensor_symbolic(TFM_FLOAT32, &s, NULL, 4, 1);
    CHECK(t && tfm_tensor_is_symbolic(t));
    CHECK_EQ_INT(t->node, 4);
    CHECK_EQ_INT(t->out_index, 1);
    CHECK_EQ_INT(tfm_tensor_numel(t), -1);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0);
    tfm_tensor_decref(t);
}

TEST(many_tensors_recycle)
{
    /* more than the freelist holds, alive at once, then all freed */
    enum { N = 3000 };
    static tfm_tensor *ts[N];
    int64_t t0 = tfm_tensor_live_count(), b0 = tfm_buffer_live_count();
    tfm_shape s = S2(4, 4);
    for (int i = 0; i < N; i++)
        ts[i] = tfm_tensor_new(TFM_FLOAT32, &s, TFM_CPU);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0 + N);
    for (int i = 0; i < N; i++)
        tfm_tensor_decref(ts[i]);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0);
}

/* Note [String elements]: a string buffer owns one reference per slot;
 * copies take their own; a failed kernel's outputs free only the
 * strings it made. */
TEST(string_elements_are_owned)
{
    tfm_shape s = tfm_shape_make(1, (int64_t[]){2});
    tfm_tensor *a = tfm_tensor_new(TFM_STRING, &s, TFM_CPU);
    CHECK(a && tfm_tensor_strs(a)[0] == NULL && tfm_tensor_strs(a)[1] == NULL);
    tfm_str *ab = tfm_str_new("ab", 2);
    tfm_tensor_strs(a)[0] = ab;
    tfm_tensor_adopt_strings(a);
    CHECK(ab->refcount == 1 && tfm_str_len(ab) == 2);
    CHECK(tfm_str_len(tfm_tensor_strs(a)[1]) == 0);
    tfm_tensor *b = tfm_tensor_new(TFM_STRING, &s, TFM_CPU);
    CHECK(tfm_tensor_copy_into(b, a) == TFM_OK);
    CHECK(ab->refcount == 2);
    /* A failed kernel wrote a borrowed and a new string into out. */
    tfm_tensor *out = tfm_tensor_new(TFM_STRING, &s, TFM_CPU);
    tfm_tensor_strs(out)[0] = ab;
    tfm_tensor_strs(out)[1] = tfm_str_new("new", 3);
    tfm_strings_settle(&out, 1, TFM_ERR_INVALID_ARGUMENT);
    CHECK(tfm_tensor_strs(out)[0] == NULL && tfm_tensor_strs(out)[1] == NULL);
    CHECK(ab->refcount == 2);
    /* A kernel that succeeded: out takes its references. */
    tfm_tensor_strs(out)[0] = ab;
    tfm_strings_settle(&out, 1, TFM_OK);
    CHECK(ab->refcount == 3);
    tfm_tensor_decref(out);
    tfm_tensor_decref(b);
    CHECK(ab->refcount == 1);
    tfm_tensor_decref(a);
    CHECK(tfm_tensor_new(TFM_STRING, &s, 1) == NULL);  /* host only */
    tfm_error_clear();
}

RUN_TESTS(T(new_and_live_counts), T(string_elements_are_owned), T(ids_are_unique_across_reuse),
          T(view_shares_buffer), T(get_set_every_dtype), T(empty_tensor),
          T(huge_shapes_are_resource_exhausted), T(bad_requests),
          T(symbolic), T(many_tensors_recycle))
