"""tf.config: devices, threading, and the eager/traced switch."""
import collections

from . import _C


PhysicalDevice = collections.namedtuple("PhysicalDevice",
                                        ["name", "device_type"])


def _gpu_count():
    return 0


def list_physical_devices(device_type=None):
    devices = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    devices += [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU")
                for i in range(_gpu_count())]
    if device_type is not None:
        devices = [d for d in devices if d.device_type == device_type.upper()]
    return devices


def list_logical_devices(device_type=None):
    return [PhysicalDevice(d.name.replace("physical_", ""), d.device_type)
            for d in list_physical_devices(device_type)]


class threading:  # noqa: N801  (TF's namespace name)
    """tf.config.threading: thread counts for big kernels. As in TF, 0
    means "let the system choose" (here: OpenMP's default, all cores)."""

    _intra = 0
    _inter = 0
    _default = _C.get_num_threads()

    @staticmethod
    def set_intra_op_parallelism_threads(num_threads):
        n = int(num_threads)
        if n < 0:
            raise ValueError(f"num_threads must be >= 0, got {n}")
        threading._intra = n
        _C.set_num_threads(n or threading._default)

    @staticmethod
    def get_intra_op_parallelism_threads():
        return threading._intra

    @staticmethod
    def set_inter_op_parallelism_threads(num_threads):
        # Ops run one at a time in tfmini; kept for TF compatibility.
        n = int(num_threads)
        if n < 0:
            raise ValueError(f"num_threads must be >= 0, got {n}")
        threading._inter = n

    @staticmethod
    def get_inter_op_parallelism_threads():
        return threading._inter


_soft_placement = True


def set_soft_device_placement(enabled):
    """With soft placement (TF's default), a device that is not there
    (tf.device('/GPU:0') without a GPU) means the CPU."""
    global _soft_placement
    _soft_placement = bool(enabled)


def get_soft_device_placement():
    return _soft_placement


_run_eagerly = False


def run_functions_eagerly(run_eagerly):
    """Make every tf.function run its Python body eagerly (debugging)."""
    global _run_eagerly
    _run_eagerly = bool(run_eagerly)
    _C.set_run_eagerly(_run_eagerly)   # the C call path checks it


def functions_run_eagerly():
    return _run_eagerly
