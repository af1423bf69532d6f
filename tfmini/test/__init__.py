"""tf.test: what scripts ask of the build and the devices (TF's
tf.test.is_built_with_cuda, gpu_device_name, experimental.sync_devices)."""
from .. import _C, config
from . import experimental  # noqa: F401


def is_built_with_cuda():
    """Whether this build has the CUDA backend (a GPU may still be absent)."""
    return bool(_C.cuda_built())


def is_built_with_gpu_support():
    return is_built_with_cuda()


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """Deprecated in TF as here: prefer tf.config.list_physical_devices."""
    return bool(config.list_physical_devices("GPU"))


def gpu_device_name():
    """'/device:GPU:0' when a GPU is present, else '' (as TF)."""
    gpus = config.list_logical_devices("GPU")
    return gpus[0].name if gpus else ""
