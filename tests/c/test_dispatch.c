/* The op table and the dispatcher, from C alone: AddV2 through tfm_call,
 * its errors, float16 through the float32 fallback, no leaks on any path,
 * and the lock hooks around big kernels. */
#include "check.h"
#include "runtime/dispatch.h"

static tfm_tensor *
vec_f32(int64_t n, const float *v)
{
    tfm_shape s = tfm_shape_make(1, &n);
    tfm_tensor *t = tfm_tensor_new(TFM_FLOAT32, &s, TFM_CPU);
    for (int64_t i = 0; i < n; i++)
        ((float *)tfm_tensor_data(t))[i] = v[i];
    return t;
}

static tfm_tensor *
filled(tfm_dtype d, int ndim, const int64_t *dims, double start)
{
    tfm_shape s = tfm_shape_make(ndim, dims);
    tfm_tensor *t = tfm_tensor_new(d, &s, TFM_CPU);
    for (int64_t i = 0; i < tfm_tensor_numel(t); i++)
        tfm_tensor_set_f64(t, i, start + (double)i);
    return t;
}

TEST(table_is_consistent)
{
    for (int i = 0; i < TFM_OP_COUNT; i++) {
        CHECK(tfm_ops[i].name != NULL && tfm_ops[i].name[0] != '\0');
        CHECK(tfm_ops[i].infer != NULL);
        CHECK_EQ_INT(tfm_op_lookup(tfm_ops[i].name), i);   /* unique */
        /* The graph code takes GRAPH_ONLY for "no kernel": the executor
         * would call a NULL kernel for a row that breaks this. */
        int graph_only = (tfm_ops[i].flags & TFM_OPF_GRAPH_ONLY) != 0;
        CHECK_EQ_INT(graph_only, tfm_ops[i].cpu == NULL);
    }
    CHECK_EQ_INT(tfm_op_payload(TFM_OP_WHILE), TFM_PAYLOAD_SUB);
    CHECK_EQ_INT(tfm_op_payload(TFM_OP_ADD), TFM_PAYLOAD_NONE);
    CHECK_EQ_INT(tfm_op_lookup("AddV2"), TFM_OP_ADD);
    CHECK_EQ_INT(tfm_op_lookup("NoSuchOp"), -1);
}

TEST(add_same_shape)
{
    int64_t t0 = tfm_tensor_live_count();
    float av[] = {1, 2, 3}, bv[] = {10, 20, 30};
    tfm_tensor *in[2] = {vec_f32(3, av), vec_f32(3, bv)}, *out[1] = {NULL};
    int nout = 0;
    CHECK_EQ_INT(tfm_call(TFM_OP_ADD, in, 2, NULL, out, &nout), TFM_OK);
    CHECK_EQ_INT(nout, 1);
    CHECK_EQ_INT(out[0]->dtype, TFM_FLOAT32);
    CHECK_EQ_INT(out[0]->shape.ndim, 1);
    CHECK_EQ_INT(out[0]->shape.dims[0], 3);
    for (int i = 0; i < 3; i++)
        CHECK(((float *)tfm_tensor_data(out[0]))[i] == av[i] + bv[i]);
    CHECK(out[0]->buf != in[0]->buf && out[0]->buf != in[1]->buf);
    tfm_tensor_decref(out[0]);
    tfm_tensor_decref(in[0]);
    tfm_tensor_decref(in[1]);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
}

TEST(add_broadcasts_every_numeric_dtype)
{
    static const tfm_dtype dts[] = {TFM_INT8, TFM_UINT8, TFM_INT16,
                                    TFM_INT32, TFM_INT64, TFM_FLOAT32,
                                    TFM_FLOAT64};
    int64_t t0 = tfm_tensor_live_count(), b0 = tfm_buffer_live_count();
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        /* [2,1,3] + [4,1] -> [2,4,3] */
        int64_t da[3] = {2, 1, 3}, db[2] = {4, 1};
        tfm_tensor *in[2] = {filled(dts[k], 3, da, 0),
                             filled(dts[k], 2, db, 10)};
        tfm_tensor *o = tfm_call1(TFM_OP_ADD, in, 2, NULL);
        CHECK(o != NULL);
        if (!o)
            continue;
        CHECK_EQ_INT(o->dtype, dts[k]);
        CHECK_EQ_INT(o->shape.ndim, 3);
        CHECK(o->shape.dims[0] == 2 && o->shape.dims[1] == 4 &&
              o->shape.dims[2] == 3);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 3; l++) {
                    double want = (i * 3 + l) + (10 + j);
                    double got = tfm_tensor_get_f64(o, (i * 4 + j) * 3 + l);
                    if (got != want) {
                        char m[128];
                        snprintf(m, sizeof m, "%s [%d,%d,%d]: %g != %g",
                                 tfm_dtype_name(dts[k]), i, j, l, got, want);
                        check_fail(__FILE__, __LINE__, m);
                    }
                }
        tfm_tensor_decref(o);
        tfm_tensor_decref(in[0]);
        tfm_tensor_decref(in[1]);
    }
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0);
}

TEST(add_scalar_and_empty)
{
    int64_t d3[1] = {3}, d0[2] = {0, 3};
    tfm_tensor *s = tfm_tensor_scalar(TFM_FLOAT64, 0.5);
    tfm_tensor *v = filled(TFM_FLOAT64, 1, d3, 1);
    tfm_tensor *e = filled(TFM_FLOAT64, 2, d0, 0);
    tfm_tensor *in[2] = {s, v};
    tfm_tensor *o = tfm_call1(TFM_OP_ADD, in, 2, NULL);
    CHECK(o && tfm_tensor_get_f64(o, 2) == 3.5);
    tfm_tensor_decref(o);
    in[0] = e;
    in[1] = v;
    o = tfm_call1(TFM_OP_ADD, in, 2, NULL);
    CHECK(o && o->shape.ndim == 2 && o->shape.dims[0] == 0 &&
          o->shape.dims[1] == 3);
    tfm_tensor_decref(o);
    in[0] = s;
    in[1] = s;
    o = tfm_call1(TFM_OP_ADD, in, 2, NULL);
    CHECK(o && o->shape.ndim == 0 && tfm_tensor_get_f64(o, 0) == 1.0);
    tfm_tensor_decref(o);
    tfm_tensor_decref(s);
    tfm_tensor_decref(v);
    tfm_tensor_decref(e);
}

TEST(errors_name_op_shapes_and_dtypes_and_leak_nothing)
{
    int64_t t0 = tfm_tensor_live_count(), b0 = tfm_buffer_live_count();
    int64_t d23[2] = {2, 3}, d4[1] = {4};
    tfm_tensor *a = filled(TFM_FLOAT32, 2, d23, 0);
    tfm_tensor *b = filled(TFM_FLOAT32, 1, d4, 0);
    tfm_tensor *c = filled(TFM_INT32, 1, d4, 0);
    tfm_tensor *out[TFM_MAX_OUTPUTS] = {NULL};
    int nout = 0;

    tfm_tensor *ab[2] = {a, b};
    tfm_error_clear();
    CHECK_EQ_INT(tfm_call(TFM_OP_ADD, ab, 2, NULL, out, &nout),
                 TFM_ERR_INVALID_ARGUMENT);
    CHECK(out[0] == NULL);
    CHECK_EQ_STR(tfm_error_message(),
                 "Incompatible shapes for AddV2: [2,3] vs [4]");

    tfm_tensor *bc[2] = {b, c};
    CHECK(tfm_call1(TFM_OP_ADD, bc, 2, NULL) == NULL);
    CHECK_EQ_INT(tfm_error_code(), TFM_ERR_INVALID_ARGUMENT);
    CHECK_HAS(tfm_error_message(), "AddV2");
    CHECK_HAS(tfm_error_message(), "float32");
    CHECK_HAS(tfm_error_message(), "int32");

    /* wrong arity */
    CHECK(tfm_call1(TFM_OP_ADD, ab, 1, NULL) == NULL);
    CHECK_HAS(tfm_error_message(), "AddV2 expects 2 inputs, got 1");
    CHECK(tfm_call1(TFM_OP_ADD, ab, -1, NULL) == NULL);
    CHECK_EQ_INT(tfm_error_code(), TFM_ERR_INVALID_ARGUMENT);

    /* bool is not numeric */
    tfm_tensor *p = filled(TFM_BOOL, 1, d4, 0);
    tfm_tensor *pp[2] = {p, p};
    CHECK(tfm_call1(TFM_OP_ADD, pp, 2, NULL) == NULL);
    CHECK_HAS(tfm_error_message(), "bool");

    /* a device that is not there: an error, never a CPU fallback */
    tfm_device_set_scope(1);
    tfm_tensor *aa[2] = {a, a};
    CHECK(tfm_call1(TFM_OP_ADD, aa, 2, NULL) == NULL);
    CHECK(tfm_error_code() != TFM_OK);
    tfm_device_set_scope(-1);

    tfm_tensor_decref(a);
    tfm_tensor_decref(b);
    tfm_tensor_decref(c);
    tfm_tensor_decref(p);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0);
    tfm_error_clear();
}

TEST(float16_through_float32)
{
    int64_t t0 = tfm_tensor_live_count(), b0 = tfm_buffer_live_count();
    int64_t d[1] = {4};
    tfm_tensor *a = filled(TFM_FLOAT16, 1, d, 0.5);   /* .5 1.5 2.5 3.5 */
    tfm_tensor *b = filled(TFM_FLOAT16, 1, d, 1000);
    tfm_tensor *in[2] = {a, b};
    tfm_tensor *o = tfm_call1(TFM_OP_ADD, in, 2, NULL);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_INT(o->dtype, TFM_FLOAT16);
        /* half spacing is 0.5 in [512, 1024): the sums are exact */
        for (int i = 0; i < 4; i++)
            CHECK(tfm_tensor_get_f64(o, i) == 1000.5 + 2 * i);
        tfm_tensor_decref(o);
    }
    tfm_tensor_decref(a);
    tfm_tensor_decref(b);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
    CHECK_EQ_INT(tfm_buffer_live_count(), b0);
}

TEST(int_overflow_wraps)
{
    tfm_tensor *a = tfm_tensor_scalar(TFM_INT32, 2147483647.0);
    tfm_tensor *b = tfm_tensor_scalar(TFM_INT32, 1);
    tfm_tensor *in[2] = {a, b};
    tfm_tensor *o = tfm_call1(TFM_OP_ADD, in, 2, NULL);
    CHECK(o && *(int32_t *)tfm_tensor_data(o) == INT32_MIN);
    if (o)
        tfm_tensor_decref(o);
    tfm_tensor_decref(a);
    tfm_tensor_decref(b);
}

static int unlocks, relocks;
static int token;

static void *
unlock(void)
{
    unlocks++;
    return &token;
}

static void
relock(void *t)
{
    CHECK(t == &token);
    relocks++;
}

TEST(big_kernels_run_unlocked)
{
    int64_t small[1] = {16}, big[1] = {1 << 18};
    tfm_set_lock_hooks(unlock, relock);
    tfm_tensor *s = filled(TFM_FLOAT32, 1, small, 0);
    tfm_tensor *ss[2] = {s, s};
    tfm_tensor *o = tfm_call1(TFM_OP_ADD, ss, 2, NULL);
    CHECK_EQ_INT(unlocks, 0);
    tfm_tensor_decref(o);
    tfm_tensor *g = filled(TFM_FLOAT32, 1, big, 0);
    tfm_tensor *gg[2] = {g, g};
    o = tfm_call1(TFM_OP_ADD, gg, 2, NULL);
    CHECK_EQ_INT(unlocks, 1);
    CHECK_EQ_INT(relocks, 1);
    CHECK(o && tfm_tensor_get_f64(o, (1 << 18) - 1) == 2.0 * ((1 << 18) - 1));
    tfm_tensor_decref(o);
    tfm_set_lock_hooks(NULL, NULL);
    tfm_tensor_decref(s);
    tfm_tensor_decref(g);
}

TEST(cast_every_pair)
{
    int64_t t0 = tfm_tensor_live_count();
    int64_t d[1] = {3};
    for (int from = 0; from < TFM_DTYPE_COUNT; from++)
        for (int to = 0; to < TFM_DTYPE_COUNT; to++) {
            if (from == TFM_STRING || to == TFM_STRING)
                continue;       /* TF casts no strings */
            tfm_tensor *x = filled((tfm_dtype)from, 1, d, 0);  /* 0 1 2 */
            if (from == TFM_BOOL)
                tfm_tensor_set_f64(x, 2, 1);
            tfm_attrs a;
            tfm_attrs_init(&a);
            a.dtype = (tfm_dtype)to;
            tfm_tensor *y = tfm_call1(TFM_OP_CAST, &x, 1, &a);
            CHECK(y != NULL);
            if (y) {
                CHECK_EQ_INT(y->dtype, to);
                for (int i = 0; i < 3; i++) {
                    double want = tfm_tensor_get_f64(x, i);
                    if (to == TFM_BOOL)
                        want = want != 0;
                    CHECK(tfm_tensor_get_f64(y, i) == want);
                }
                tfm_tensor_decref(y);
            }
            tfm_tensor_decref(x);
        }
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
}

RUN_TESTS(T(table_is_consistent), T(add_same_shape),
          T(add_broadcasts_every_numeric_dtype), T(add_scalar_and_empty),
          T(errors_name_op_shapes_and_dtypes_and_leak_nothing),
          T(float16_through_float32), T(int_overflow_wraps),
          T(big_kernels_run_unlocked), T(cast_every_pair))
