"""tf.test's build and device questions, and sync_devices, on the CPU."""
import tfmini as tf
from tfmini import _C


def test_build_and_gpu_questions_agree_with_the_core():
    assert tf.test.is_built_with_cuda() is bool(_C.cuda_built())
    assert tf.test.is_built_with_gpu_support() == tf.test.is_built_with_cuda()
    has_gpu = bool(tf.config.list_physical_devices("GPU"))
    assert tf.test.is_gpu_available() is has_gpu
    assert tf.test.gpu_device_name() == ("/device:GPU:0" if has_gpu else "")


def test_sync_devices_returns_after_cpu_work():
    x = tf.constant([1.0, 2.0]) * 3.0
    assert tf.test.experimental.sync_devices() is None
    assert x.numpy().tolist() == [3.0, 6.0]
