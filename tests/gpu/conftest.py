"""tests/gpu: what needs a CUDA GPU. Every test here skips, saying why,
on a machine without one (or a build without CUDA)."""
import os
import sys

import pytest

# tests/ on the path, for `from specs import SPECS`.
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

import tfmini as tf  # noqa: E402
from gpu_util import cudnn_version  # noqa: E402


@pytest.fixture(autouse=True)
def _need_gpu():
    if not tf.config._gpu_count():
        pytest.skip(f"no CUDA GPU: {tf.config._why_no_gpu}")
    # Exact float32 matmuls, so that GPU and CPU agree to float32's
    # tolerances; the benchmark measures TF32.
    old = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    yield
    tf.config.experimental.enable_tensor_float_32_execution(old)
    tf.debugging.set_log_device_placement(False)


@pytest.fixture
def cudnn():
    if not cudnn_version():
        pytest.skip("built without cuDNN: the convolutions soft-place on "
                    "the CPU")
