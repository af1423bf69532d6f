"""Cached calls whose GPU steps use values computed on the host (Shape's,
a reduction's count) under CUDA graphs (Note [CUDA graphs for cached
calls]): with TFMINI_CUDA_GRAPHS=1 every call must equal the plain run
(TFMINI_CUDA_GRAPHS=0), whether exec_cugraph.c replays it or refuses the
graph because a captured copy touched host memory. A replayed upload
from a kernel's stack would give stale numbers from the second call on.
Skips without a GPU (conftest.py)."""
import numpy as np
import pytest

import tfmini as tf

from gpu_util import GPU


def calls(monkeypatch, on, signature):
    monkeypatch.setenv("TFMINI_CUDA_GRAPHS", "1" if on else "0")

    def body(x):
        with tf.device(GPU):
            n = tf.cast(tf.shape(x)[0], tf.float32)
            size = tf.cast(tf.size(x), tf.float32)
            return x * n + tf.reduce_mean(x, axis=0) - size

    f = tf.function(body, input_signature=signature)
    rng = np.random.default_rng(0)
    out = []
    for k in range(6):
        v = (rng.standard_normal((5, 3)) + k).astype(np.float32)
        with tf.device(GPU):
            out.append(f(tf.constant(v)).numpy())
    return out


@pytest.mark.parametrize("signature", [
    None, [tf.TensorSpec([None, 3], tf.float32)]], ids=["known", "unknown"])
def test_host_values_are_never_stale_in_a_replay(monkeypatch, signature):
    got = calls(monkeypatch, True, signature)
    want = calls(monkeypatch, False, signature)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6,
                                   err_msg=f"call {k}")
