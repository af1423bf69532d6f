/* The conv kernels' own bfloat16 path when oneDNN cannot take it (this
 * library is built without oneDNN, as a shape oneDNN refuses would be):
 * widen, compute in float32, round once. Checked bit for bit against
 * the float32 kernel on the same (bfloat16-exact) inputs, and against
 * the dispatcher's upcast, for Conv2D and both backprops. */
#include "check.h"
#include "core/bfloat16.h"
#include "kernels/cpu/conv.h"
#include "runtime/dispatch.h"

/* Values with few mantissa bits, so that bfloat16 holds them exactly. */
static tfm_tensor *
make(tfm_dtype d, const int64_t *dims, unsigned seed)
{
    tfm_shape s = tfm_shape_make(4, dims);
    tfm_tensor *t = tfm_tensor_new(d, &s, TFM_CPU);
    unsigned r = seed;
    for (int64_t i = 0; i < tfm_tensor_numel(t); i++) {
        r = r * 1103515245u + 12345u;
        float v = (float)((int)((r >> 16) % 61) - 30) / 16.0f;
        if (d == TFM_BFLOAT16)
            ((uint16_t *)tfm_tensor_data(t))[i] = tfm_float_to_bf16(v);
        else
            ((float *)tfm_tensor_data(t))[i] = v;
    }
    return t;
}

static void
attrs(tfm_attrs *a, int stride, int dil, int same)
{
    tfm_attrs_init(a);
    a->n_ints = 12;
    a->ints[TFM_CONV_STRIDE_H] = a->ints[TFM_CONV_STRIDE_W] = stride;
    a->ints[TFM_CONV_WIN_H] = a->ints[TFM_CONV_WIN_W] = dil;
    a->i[0] = same ? TFM_PAD_SAME : TFM_PAD_VALID;
}

/* Runs op three ways on x, f, dy: float32 through the dispatcher,
 * bfloat16 through the dispatcher (the upcast: no native bf16 here) and
 * bfloat16 straight into the kernel; all must agree bit for bit. */
static void
check_op(tfm_op op, const int64_t *xd, const int64_t *fd, const int64_t *yd,
         const tfm_attrs *a)
{
    int64_t t0 = tfm_tensor_live_count();
    tfm_tensor *f32[3] = {make(TFM_FLOAT32, xd, 1), make(TFM_FLOAT32, fd, 2),
                          make(TFM_FLOAT32, yd, 3)};
    tfm_tensor *b16[3] = {make(TFM_BFLOAT16, xd, 1),
                          make(TFM_BFLOAT16, fd, 2),
                          make(TFM_BFLOAT16, yd, 3)};
    int nin = op == TFM_OP_CONV2D ? 2 : 3;
    tfm_tensor *want = tfm_call1(op, f32, nin, a);
    tfm_tensor *up = tfm_call1(op, b16, nin, a);
    CHECK(want && up);
    if (want && up) {
        CHECK_EQ_INT(up->dtype, TFM_BFLOAT16);
        tfm_tensor *got = tfm_tensor_new(TFM_BFLOAT16, &want->shape,
                                         TFM_CPU);
        CHECK_EQ_INT(tfm_ops[op].cpu(op, b16, nin, a, &got, 1, NULL),
                     TFM_OK);
        const float *w = tfm_tensor_data(want);
        const uint16_t *g = tfm_tensor_data(got), *u = tfm_tensor_data(up);
        int64_t bad = 0, nonzero = 0;
        for (int64_t i = 0; i < tfm_tensor_numel(want); i++) {
            bad += g[i] != tfm_float_to_bf16(w[i]) || u[i] != g[i];
            nonzero += w[i] != 0;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK(nonzero > 0);
        tfm_tensor_decref(got);
    }
    if (want)
        tfm_tensor_decref(want);
    if (up)
        tfm_tensor_decref(up);
    for (int i = 0; i < 3; i++) {
        tfm_tensor_decref(f32[i]);
        tfm_tensor_decref(b16[i]);
    }
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
}

TEST(no_native_bf16_without_onednn)
{
    CHECK_EQ_INT(tfm_conv_bf16_native(), 0);
    CHECK_EQ_INT(tfm_kernel_takes(TFM_OP_CONV2D, TFM_BFLOAT16, TFM_CPU), 0);
    CHECK_EQ_INT(tfm_kernel_takes(TFM_OP_MATMUL, TFM_BFLOAT16, TFM_CPU), 1);
}

TEST(kernels_widen_and_round_once)
{
    static const tfm_op ops[] = {TFM_OP_CONV2D, TFM_OP_CONV2D_BACKPROP_INPUT,
                                 TFM_OP_CONV2D_BACKPROP_FILTER};
    tfm_attrs a;
    for (int k = 0; k < 3; k++) {
        /* 3x3 SAME, stride 1: y is [2, 7, 6, 5] */
        attrs(&a, 1, 1, 1);
        check_op(ops[k], (int64_t[]){2, 7, 6, 4}, (int64_t[]){3, 3, 4, 5},
                 (int64_t[]){2, 7, 6, 5}, &a);
        /* 2x2 VALID, stride 2, dilation 2 over 9x9: y is [1, 4, 4, 3] */
        attrs(&a, 2, 2, 0);
        check_op(ops[k], (int64_t[]){1, 9, 9, 2}, (int64_t[]){2, 2, 2, 3},
                 (int64_t[]){1, 4, 4, 3}, &a);
    }
}

RUN_TESTS(T(no_native_bf16_without_onednn), T(kernels_widen_and_round_once))
