/* The device seam (Note [Device seam] in core/device.h) through the
 * test-only fake device: ops placed there run its kernels, inputs cross
 * through its counted copies, and a device without a kernel runs the op
 * on the CPU. */
#include "check.h"

#include <string.h>

#include "runtime/device_fake.h"
#include "runtime/dispatch.h"

static tfm_tensor *
vec(const float *v, int n)
{
    tfm_shape s = {1, {n}};
    tfm_tensor *t = tfm_tensor_new(TFM_FLOAT32, &s, TFM_CPU);
    for (int i = 0; i < n; i++)
        ((float *)tfm_tensor_data(t))[i] = v[i];
    return t;
}

TEST(device_table)
{
    char name[128];
    CHECK(tfm_device_get(0) != NULL);
    CHECK(tfm_device_get(TFM_FAKE_DEVICE) == NULL);
    CHECK(tfm_fake_device_enable(1) == TFM_OK);
    CHECK(tfm_device_find("fake", 0) == TFM_FAKE_DEVICE);
    CHECK(tfm_device_find("FAKE", 1) == -1);
    CHECK(strcmp(tfm_device_name(TFM_FAKE_DEVICE, name, sizeof name),
                 "/job:localhost/replica:0/task:0/device:FAKE:0") == 0);
    CHECK(tfm_device_kctx(TFM_FAKE_DEVICE)->device ==
          tfm_device_get(TFM_FAKE_DEVICE));
    CHECK(tfm_device_register(0, NULL) != TFM_OK);
}

TEST(run_on_fake_device)
{
    const float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    tfm_tensor *x = vec(a, 3), *y = vec(b, 3), *out[1];
    tfm_tensor *in[2] = {x, y};
    tfm_fake_stats st;
    int n = 0;
    tfm_fake_device_stats(&st, 1);
    CHECK(tfm_run_kernel_on(TFM_OP_ADD, TFM_FAKE_DEVICE, in, 2, NULL, out,
                            &n) == TFM_OK);
    CHECK(n == 1 && out[0]->device == TFM_FAKE_DEVICE);
    tfm_fake_device_stats(&st, 1);
    CHECK(st.from_host == 2 && st.bytes_from_host == 24);
    tfm_tensor *h = tfm_tensor_to_host(out[0]);
    tfm_fake_device_stats(&st, 1);
    CHECK(st.to_host == 1 && h->device == TFM_CPU);
    CHECK(((float *)tfm_tensor_data(h))[2] == 33.0f);
    /* No kernel there: the CPU runs it, the result stays on the CPU. */
    tfm_fake_device_deny(TFM_OP_MUL);
    tfm_tensor *z[1];
    CHECK(tfm_run_kernel_on(TFM_OP_MUL, TFM_FAKE_DEVICE, in, 2, NULL, z,
                            &n) == TFM_OK);
    CHECK(z[0]->device == TFM_CPU);
    CHECK(((float *)tfm_tensor_data(z[0]))[1] == 40.0f);
    /* Into a buffer on the device, inputs from the host. */
    CHECK(tfm_run_kernel_into(TFM_OP_SUB, in, 2, NULL, out, 1) == TFM_OK);
    tfm_tensor_decref(h);
    h = tfm_tensor_to_host(out[0]);
    CHECK(((float *)tfm_tensor_data(h))[0] == -9.0f);
    tfm_tensor_decref(h);
    tfm_tensor_decref(z[0]);
    tfm_tensor_decref(out[0]);
    tfm_tensor_decref(x);
    tfm_tensor_decref(y);
    tfm_fake_device_stats(&st, 0);
    CHECK(st.live_buffers == 0);
    CHECK(tfm_fake_device_enable(0) == TFM_OK);
}

RUN_TESTS(T(device_table), T(run_on_fake_device))
