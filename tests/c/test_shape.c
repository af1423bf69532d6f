/* Shapes: element counts, printing, NumPy broadcasting and its error
 * message, axis normalization, broadcast strides. */
#include "check.h"
#include "core/shape.h"

static tfm_shape
S(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t d[4] = {d0, d1, d2, d3};
    return tfm_shape_make(ndim, d);
}

static const char *
str(const tfm_shape *s)
{
    static char buf[8][128];
    static int k;
    k = (k + 1) % 8;
    return tfm_shape_str(s, buf[k], sizeof buf[k]);
}

TEST(numel)
{
    tfm_shape s = S(0, 0, 0, 0, 0);
    CHECK_EQ_INT(tfm_shape_numel(&s), 1);          /* scalar */
    s = S(2, 2, 3, 0, 0);
    CHECK_EQ_INT(tfm_shape_numel(&s), 6);
    s = S(3, 2, 0, 5, 0);
    CHECK_EQ_INT(tfm_shape_numel(&s), 0);
    s = S(2, 2, TFM_UNKNOWN_DIM, 0, 0);
    CHECK_EQ_INT(tfm_shape_numel(&s), -1);
    CHECK(!tfm_shape_is_known(&s));
    s = S(2, 2, 3, 0, 0);
    CHECK(tfm_shape_is_known(&s));
}

TEST(numel_saturates_instead_of_overflowing)
{
    /* 2^40 * 2^40 does not fit in int64: the count saturates (UBSan
     * would flag a wrapping multiply) and a zero dim still gives 0. */
    int64_t big = (int64_t)1 << 40;
    tfm_shape s = S(2, big, big, 0, 0);
    CHECK_EQ_INT(tfm_shape_numel(&s), INT64_MAX);
    s = S(3, big, big, 0, 0);
    CHECK_EQ_INT(tfm_shape_numel(&s), 0);
    s = S(4, big, big, 3, 7);
    CHECK_EQ_INT(tfm_shape_numel(&s), INT64_MAX);
    s = S(2, (int64_t)1 << 31, (int64_t)1 << 31, 0, 0);
    CHECK_EQ_INT(tfm_shape_numel(&s), (int64_t)1 << 62);
}

TEST(make_and_equal)
{
    int64_t dims[TFM_MAX_DIMS + 4] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    tfm_shape a = tfm_shape_make(3, dims), b = tfm_shape_make(3, dims);
    CHECK(tfm_shape_equal(&a, &b));
    b.dims[2] = 4;
    CHECK(!tfm_shape_equal(&a, &b));
    b = tfm_shape_make(2, dims);
    CHECK(!tfm_shape_equal(&a, &b));
    /* Rank beyond TFM_MAX_DIMS is clamped, never written past the end. */
    tfm_shape c = tfm_shape_make(TFM_MAX_DIMS + 4, dims);
    CHECK_EQ_INT(c.ndim, TFM_MAX_DIMS);
    c = tfm_shape_make(-3, dims);
    CHECK_EQ_INT(c.ndim, 0);
}

TEST(printing)
{
    tfm_shape s = S(0, 0, 0, 0, 0);
    CHECK_EQ_STR(str(&s), "[]");
    s = S(2, 2, 3, 0, 0);
    CHECK_EQ_STR(str(&s), "[2,3]");
    s = S(3, TFM_UNKNOWN_DIM, 3, 1, 0);
    CHECK_EQ_STR(str(&s), "[?,3,1]");
    /* A small buffer truncates but stays a terminated string. */
    char tiny[5];
    memset(tiny, 'x', sizeof tiny);
    s = S(4, 1000, 2000, 3000, 4000);
    tfm_shape_str(&s, tiny, sizeof tiny);
    CHECK(memchr(tiny, '\0', sizeof tiny) != NULL);
    CHECK_EQ_STR(tiny, "[100");
}

static void
check_bcast(tfm_shape a, tfm_shape b, tfm_shape want)
{
    tfm_shape out;
    tfm_error_clear();
    tfm_code rc = tfm_shape_broadcast("AddV2", &a, &b, &out);
    if (rc != TFM_OK || !tfm_shape_equal(&out, &want)) {
        char m[512];
        snprintf(m, sizeof m, "broadcast %s with %s gave %s (rc %d), want "
                 "%s", str(&a), str(&b), rc ? "error" : str(&out), rc,
                 str(&want));
        check_fail(__FILE__, __LINE__, m);
    }
    /* broadcasting is symmetric */
    rc = tfm_shape_broadcast("AddV2", &b, &a, &out);
    CHECK(rc == TFM_OK && tfm_shape_equal(&out, &want));
}

TEST(broadcast_ok)
{
    check_bcast(S(2, 2, 3, 0, 0), S(2, 2, 3, 0, 0), S(2, 2, 3, 0, 0));
    check_bcast(S(2, 2, 3, 0, 0), S(1, 3, 0, 0, 0), S(2, 2, 3, 0, 0));
    check_bcast(S(0, 0, 0, 0, 0), S(1, 4, 0, 0, 0), S(1, 4, 0, 0, 0));
    check_bcast(S(2, 4, 1, 0, 0), S(2, 1, 5, 0, 0), S(2, 4, 5, 0, 0));
    check_bcast(S(3, 2, 1, 3, 0), S(2, 4, 1, 0, 0), S(3, 2, 4, 3, 0));
    check_bcast(S(2, 0, 3, 0, 0), S(1, 3, 0, 0, 0), S(2, 0, 3, 0, 0));
    check_bcast(S(1, 0, 0, 0, 0), S(1, 1, 0, 0, 0), S(1, 0, 0, 0, 0));
    check_bcast(S(0, 0, 0, 0, 0), S(0, 0, 0, 0, 0), S(0, 0, 0, 0, 0));
    /* unknown dims (tracing): trust the known side, keep unknown vs 1 */
    check_bcast(S(1, TFM_UNKNOWN_DIM, 0, 0, 0), S(1, 3, 0, 0, 0),
                S(1, 3, 0, 0, 0));
    check_bcast(S(1, TFM_UNKNOWN_DIM, 0, 0, 0), S(1, 1, 0, 0, 0),
                S(1, TFM_UNKNOWN_DIM, 0, 0, 0));
    check_bcast(S(2, TFM_UNKNOWN_DIM, 3, 0, 0), S(1, 3, 0, 0, 0),
                S(2, TFM_UNKNOWN_DIM, 3, 0, 0));
}

TEST(broadcast_error_names_op_and_shapes)
{
    tfm_shape a = S(2, 2, 3, 0, 0), b = S(1, 4, 0, 0, 0), out = S(0, 0, 0,
                                                                  0, 0);
    tfm_shape before = out;
    tfm_error_clear();
    CHECK_EQ_INT(tfm_shape_broadcast("AddV2", &a, &b, &out),
                 TFM_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tfm_error_code(), TFM_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(tfm_error_message(),
                 "Incompatible shapes for AddV2: [2,3] vs [4]");
    CHECK(tfm_shape_equal(&out, &before));     /* untouched on error */
    a = S(2, 0, 3, 0, 0);
    b = S(1, 2, 0, 0, 0);
    CHECK_EQ_INT(tfm_shape_broadcast("Mul", &a, &b, &out),
                 TFM_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(tfm_error_message(), "Incompatible shapes for Mul: [0,3] "
                 "vs [2]");
    tfm_error_clear();
}

TEST(axis)
{
    int ax = -7;
    CHECK_EQ_INT(tfm_shape_axis("Sum", 1, 3, &ax), TFM_OK);
    CHECK_EQ_INT(ax, 1);
    CHECK_EQ_INT(tfm_shape_axis("Sum", -1, 3, &ax), TFM_OK);
    CHECK_EQ_INT(ax, 2);
    CHECK_EQ_INT(tfm_shape_axis("Sum", -3, 3, &ax), TFM_OK);
    CHECK_EQ_INT(ax, 0);
    CHECK_EQ_INT(tfm_shape_axis("Sum", 3, 3, &ax), TFM_ERR_INVALID_ARGUMENT);
    CHECK_HAS(tfm_error_message(), "Sum");
    CHECK_HAS(tfm_error_message(), "axis 3");
    CHECK_HAS(tfm_error_message(), "rank 3");
    CHECK_EQ_INT(tfm_shape_axis("Sum", -4, 3, &ax),
                 TFM_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tfm_shape_axis("Sum", (int64_t)1 << 40, 3, &ax),
                 TFM_ERR_INVALID_ARGUMENT);
    tfm_error_clear();
}

TEST(broadcast_strides)
{
    int64_t st[TFM_MAX_DIMS];
    tfm_shape from = S(1, 3, 0, 0, 0), to = S(2, 2, 3, 0, 0);
    tfm_shape_broadcast_strides(&from, &to, st);
    CHECK_EQ_INT(st[0], 0);
    CHECK_EQ_INT(st[1], 1);
    from = S(2, 4, 1, 0, 0);
    to = S(2, 4, 5, 0, 0);
    tfm_shape_broadcast_strides(&from, &to, st);
    CHECK_EQ_INT(st[0], 1);
    CHECK_EQ_INT(st[1], 0);
    from = S(3, 2, 3, 4, 0);
    to = from;
    tfm_shape_broadcast_strides(&from, &to, st);
    CHECK_EQ_INT(st[0], 12);
    CHECK_EQ_INT(st[1], 4);
    CHECK_EQ_INT(st[2], 1);
}

RUN_TESTS(T(numel), T(numel_saturates_instead_of_overflowing),
          T(make_and_equal), T(printing), T(broadcast_ok),
          T(broadcast_error_names_op_and_shapes), T(axis),
          T(broadcast_strides))
