"""ew.cu's float to int32 / int64 conversion, run on the host (issue 21):
a plain conversion on the GPU saturates (NaN to 0, +inf to INT_MAX),
while cpu/cast.c gives x86's answer, INT_MIN, to NaN, infinities and
values out of range; for that reason kernels.c still runs these casts
on host copies. ew.cu's casts now go through float_to_i32 /
float_to_i64 (host and device functions), built here with nvcc into a
host program and compared with the CPU kernel value by value, from
float64 and float32 sources. tests/gpu/test_gpu_cast_specials.py holds
the GPU's casts to the CPU's values."""
import subprocess

import numpy as np
import pytest
from cuda_host_util import nvcc_program

import tfmini as tf


HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "kernels/cuda/ew.cu"

/* Each argument v: float_to_i32(v), float_to_i64(v), and the same of
 * (float)v, as k_cast converts a float64 or float32 element. */
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        double v = strtod(argv[i], 0);
        printf("%d %lld %d %lld\n", float_to_i32(v),
               (long long)float_to_i64(v), float_to_i32((float)v),
               (long long)float_to_i64((float)v));
    }
    return 0;
}
"""

SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 2.5,
            -2.5, 3e9, -3e9, 2147483647.0, 2147483647.75, 2147483648.0,
            -2147483648.0, -2147483648.75, -2147483649.0, 2147483520.0,
            1e19, -1e19, 2.0**63, -2.0**63, 9.2e18, -9.3e18, 1e-300]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    # PTX only: the host functions are what runs; no ptxas pass needed.
    return nvcc_program(tmp_path_factory, "cast_cu", HARNESS,
                        gencode="compute_80", optimize=False)[0]


def _cpu(src, dst):
    with tf.device("/CPU:0"):
        return tf.cast(tf.constant(np.array(SPECIALS, src)), dst).numpy()


def test_float_to_int_is_the_cpus_cast(harness):
    out = subprocess.run([harness] + [repr(v) for v in SPECIALS],
                         capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    got = np.array([int(v) for v in out], np.int64).reshape(-1, 4)
    np.testing.assert_array_equal(got[:, 0], _cpu(np.float64, tf.int32))
    np.testing.assert_array_equal(got[:, 1], _cpu(np.float64, tf.int64))
    np.testing.assert_array_equal(got[:, 2], _cpu(np.float32, tf.int32))
    np.testing.assert_array_equal(got[:, 3], _cpu(np.float32, tf.int64))
    # Not a saturating conversion: NaN and +inf are INT_MIN, as on x86.
    assert got[0, 0] == got[1, 0] == -2**31
