"""Casts of NaN, infinities and out-of-range floats to int32 / int64 on
the GPU give the CPU's integers (cpu/cast.c: INT_MIN, x86's answer), not
a saturating conversion's (NaN to 0, +inf to INT_MAX). kernels.c's Cast
runs these on host copies today; ew.cu's k_cast now converts as the CPU
does (float_to_i32 / float_to_i64, checked on the host by
tests/test_cast_cuda_host.py), so the fallback can go, and this test
holds the values to the CPU's wherever the cast runs."""
import numpy as np
import pytest

import tfmini as tf

from gpu_util import CPU, GPU, GPU_NAME

SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 2.5, -2.5, 3e9,
            -3e9, 2147483647.75, -2147483648.75, 1e19, -1e19, 2.0**63,
            65504.0, -65504.0]


def cast_on(device, x, dst):
    with tf.device(device):
        return tf.cast(tf.constant(x), dst)


@pytest.mark.parametrize("src", ["float16", "bfloat16", "float32",
                                 "float64"])
@pytest.mark.parametrize("dst", [tf.int32, tf.int64], ids=str)
def test_special_floats_cast_to_the_cpus_integers(src, dst):
    with tf.device(CPU):
        x = tf.cast(tf.constant(np.array(SPECIALS, np.float64)),
                    getattr(tf, src)).numpy()
    want = cast_on(CPU, x, dst).numpy()
    got = cast_on(GPU, x, dst)
    assert got.device == GPU_NAME
    np.testing.assert_array_equal(got.numpy(), want)
