"""tf.config: devices, threading, and the eager/traced switch."""
import collections

from . import _C


PhysicalDevice = collections.namedtuple("PhysicalDevice",
                                        ["name", "device_type"])


# The CUDA backend registers every visible GPU (GPU n is device index
# 1 + n) once, here; without CUDA or a GPU it registers none and says why.
_cuda_built, _gpus, _why_no_gpu = _C.cuda_init()


def _gpu_count():
    return _gpus


def _default_to_gpu():
    """TF's rule: with a GPU, an op nobody placed runs there when it has a
    GPU kernel. TFMINI_GPU_DEFAULT=0 keeps such ops on the CPU."""
    import os
    if _gpus and os.environ.get("TFMINI_GPU_DEFAULT", "1") != "0":
        _C.set_default_device(1)


_default_to_gpu()


def list_physical_devices(device_type=None):
    devices = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    devices += [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU")
                for i in range(_gpu_count())]
    if device_type is not None:
        devices = [d for d in devices if d.device_type == device_type.upper()]
    return devices


LogicalDevice = collections.namedtuple("LogicalDevice",
                                       ["name", "device_type"])


class LogicalDeviceConfiguration:
    """One logical device carved out of a physical one
    (tf.config.LogicalDeviceConfiguration). For the CPU, n of them make n
    logical CPU devices that tf.distribute.MirroredStrategy can put a
    replica on each (the threads share the cores, see
    tfmini/distribute/replica.py); memory_limit is a GPU option."""

    def __init__(self, memory_limit=None, experimental_priority=None,
                 experimental_device_ordinal=None):
        self.memory_limit = memory_limit
        self.experimental_priority = experimental_priority
        self.experimental_device_ordinal = experimental_device_ordinal

    def __eq__(self, other):
        return isinstance(other, LogicalDeviceConfiguration) and \
            vars(self) == vars(other)

    def __repr__(self):
        return (f"LogicalDeviceConfiguration(memory_limit="
                f"{self.memory_limit}, experimental_priority="
                f"{self.experimental_priority}, "
                f"experimental_device_ordinal="
                f"{self.experimental_device_ordinal})")


_logical = {}       # physical device name -> [LogicalDeviceConfiguration]


def _physical(device):
    name = getattr(device, "name", device)
    for d in list_physical_devices():
        if d.name == name:
            return d
    raise ValueError(f"Unrecognized device: {device!r}")


def set_logical_device_configuration(device, logical_devices):
    """Split a physical device into logical ones (None: undo). Only the
    CPU can be split here (no GPU is built)."""
    d = _physical(device)
    if logical_devices is None:
        _logical.pop(d.name, None)
        return
    logical_devices = list(logical_devices)
    if not logical_devices:
        raise ValueError("logical_devices must not be empty (None undoes a "
                         "configuration)")
    for c in logical_devices:
        if not isinstance(c, LogicalDeviceConfiguration):
            raise ValueError(f"Expected LogicalDeviceConfiguration, got "
                             f"{type(c).__name__}")
        if d.device_type == "CPU" and c.memory_limit is not None:
            raise ValueError("Setting memory limit on CPU virtual devices "
                             "is currently not supported")
    _logical[d.name] = logical_devices


def get_logical_device_configuration(device):
    return _logical.get(_physical(device).name)


def _logical_cpu_count():
    return len(_logical.get("/physical_device:CPU:0", ())) or 1


def list_logical_devices(device_type=None):
    """Logical devices, numbered per type: a CPU split by
    set_logical_device_configuration gives /device:CPU:0..n-1."""
    out, count = [], {}
    for d in list_physical_devices(device_type):
        for _ in range(len(_logical.get(d.name, ())) or 1):
            i = count.get(d.device_type, 0)
            count[d.device_type] = i + 1
            out.append(LogicalDevice(f"/device:{d.device_type}:{i}",
                                     d.device_type))
    return out


def _gpu_index(device, what):
    """'GPU:0', '/device:GPU:0', '/physical_device:GPU:0' or a
    PhysicalDevice -> n; a CPU or unknown device is a ValueError."""
    name = device.name if isinstance(device, (PhysicalDevice,
                                              LogicalDevice)) else device
    tail = str(name).upper().rsplit("/", 1)[-1]
    for prefix in ("PHYSICAL_DEVICE:", "DEVICE:"):
        if tail.startswith(prefix):
            tail = tail[len(prefix):]
    kind, _, num = tail.partition(":")
    if kind != "GPU":
        raise ValueError(f"{what} is only supported for GPU devices, got "
                         f"{name!r}")
    try:
        n = int(num or 0)
    except ValueError:
        raise ValueError(f"{what}: bad device name {name!r}") from None
    if not 0 <= n < _gpus:
        why = f": {_why_no_gpu}" if not _gpus else ""
        raise ValueError(f"{what}: no device {name!r} ({_gpus} GPU(s)"
                         f"{why})")
    return n


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


class optimizer:  # noqa: N801  (TF's namespace name)
    """tf.config.optimizer: which graph passes tf.function uses.

    tfmini's passes (docs/GRAPH_OPTIMIZER.md) are named
      arithmetic        exact algebraic simplification (x*1, x+0, ...)
      constant_folding  subgraphs of constants evaluated once
      cse               common-subexpression elimination
      dce               dead-code elimination
      epilogue          matmul + bias + activation in one node
      fusion            elementwise chains in one pass over memory
      memory            buffer reuse and in-place execution
      native            big fused nodes compiled to machine code
    and each can be switched by that name. TF's option names map onto
    them: arithmetic_optimization (arithmetic and cse), constant_folding,
    remapping (epilogue and fusion), disable_model_pruning (dce off),
    memory_optimization, and disable_meta_optimizer (all off);
    debug_stripper leaves tf.Assert (and the assert_* checks),
    check_numerics and tf.print out of later traces, as TF's pass does
    (_strips_debug_ops); TF's other options are accepted and change
    nothing here. The settings
    apply to functions traced afterwards, as in TF: a trace keeps the
    plan it was compiled with. The environment variable
    TFMINI_GRAPH_PASSES_OFF (comma-separated names, or "all") switches
    passes off when tfmini is imported. TFMINI_NATIVE=0 keeps native
    code off for every function, whatever its options (README, "The
    native compiler and its cache")."""

    _tf_map = {
        "arithmetic_optimization": ("arithmetic", "cse"),
        "constant_folding": ("constant_folding",),
        "remapping": ("epilogue", "fusion"),
        "memory_optimization": ("memory",),
    }
    _tf_ignored = frozenset([
        "layout_optimizer", "shape_optimization", "dependency_optimization",
        "loop_optimization", "function_optimization", "debug_stripper",
        "scoped_allocator_optimization", "pin_to_host_optimization",
        "implementation_selector", "auto_mixed_precision",
        "min_graph_nodes"])
    _set = {}

    @staticmethod
    def set_experimental_options(options):
        passes = {}
        names = _C.graph_passes()
        for key, value in dict(options).items():
            if key in names:
                passes[key] = bool(value)
            elif key in optimizer._tf_map:
                for name in optimizer._tf_map[key]:
                    passes[name] = bool(value)
            elif key == "disable_model_pruning":
                passes["dce"] = not value
            elif key == "disable_meta_optimizer":
                for name in names:
                    passes[name] = not value
            elif key not in optimizer._tf_ignored:
                raise ValueError(
                    f"tf.config.optimizer.set_experimental_options: unknown "
                    f"option {key!r}; tfmini's passes are "
                    f"{sorted(names)}")
            optimizer._set[key] = value
        _C.set_graph_passes(passes)

    @staticmethod
    def get_experimental_options():
        """The options set so far (as TF), every tfmini pass's state under
        its own name, and TF's names for them as the passes now stand (so
        that a saved dict restores what it read)."""
        out = dict(optimizer._set)
        passes = _C.graph_passes()
        for key, names in optimizer._tf_map.items():
            out[key] = all(passes[name] for name in names)
        out["disable_model_pruning"] = not passes["dce"]
        out["disable_meta_optimizer"] = not any(passes.values())
        out.update(passes)
        return out

    @staticmethod
    def _strips_debug_ops():
        """Whether a trace now leaves out its debug ops (Assert nodes,
        check_numerics, tf.print): TF's debug_stripper, off by default
        and, like every Grappler pass, off under disable_meta_optimizer."""
        s = optimizer._set
        return bool(s.get("debug_stripper")) and \
            not s.get("disable_meta_optimizer")


def _passes_from_environment():
    import os
    text = os.environ.get("TFMINI_GRAPH_PASSES_OFF", "").strip()
    if not text:
        return
    names = _C.graph_passes()
    off = names if text == "all" else [s.strip() for s in text.split(",")
                                       if s.strip()]
    _C.set_graph_passes({name: False for name in off})


_passes_from_environment()


class experimental:  # noqa: N801  (TF's namespace name)
    """tf.config.experimental: device memory, TF32, and the older names
    of the logical-device calls. As in TF, memory statistics exist for
    GPUs only: get_memory_info and reset_memory_stats raise ValueError
    for a CPU device (and for a device that is not there), and
    set_memory_growth refuses a non-GPU device. The usual loop
    `for g in list_physical_devices('GPU'): set_memory_growth(g, True)`
    runs unchanged with or without a GPU."""

    VirtualDeviceConfiguration = LogicalDeviceConfiguration
    set_virtual_device_configuration = staticmethod(
        set_logical_device_configuration)
    get_virtual_device_configuration = staticmethod(
        get_logical_device_configuration)

    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)
    _growth = {}

    @staticmethod
    def _device(device):
        name = device.name if isinstance(device, PhysicalDevice) \
            else str(device)
        short = name.upper().split("DEVICE:")[-1].lstrip("/")
        for d in list_physical_devices():
            if d.name.upper().endswith(":" + short) or \
                    d.name.upper().endswith("/" + short):
                return d
        raise ValueError(f"No matching devices found for '{name}'")

    @staticmethod
    def get_memory_info(device):
        """{'current': bytes held by tensors now, 'peak': the most since
        the last reset} of a GPU (the allocator's pool may hold more:
        Note [GPU allocator] in csrc/kernels/cuda/device.c)."""
        d = experimental._device(device)
        if d.device_type != "GPU":
            raise ValueError(f"get_memory_info is only supported for GPU "
                             f"devices, not {d.device_type} (device "
                             f"{device!r}): TF keeps memory statistics for "
                             f"GPU and TPU only")
        info = _C.gpu_memory_info(_gpu_index(d, "get_memory_info"))
        return {"current": info["current"], "peak": info["peak"]}

    @staticmethod
    def get_memory_usage(device):
        return experimental.get_memory_info(device)["current"]

    @staticmethod
    def reset_memory_stats(device):
        d = experimental._device(device)
        if d.device_type != "GPU":
            raise ValueError(f"reset_memory_stats is not supported for "
                             f"{d.device_type} devices (device {device!r})")
        _C.gpu_memory_info(_gpu_index(d, "reset_memory_stats"), True)

    _tf32 = True

    @staticmethod
    def enable_tensor_float_32_execution(enabled):
        """TF32 tensor cores for float32 matmuls on GPU (TF's default:
        on)."""
        experimental._tf32 = bool(enabled)
        _C.set_tf32(experimental._tf32)

    @staticmethod
    def tensor_float_32_execution_enabled():
        return experimental._tf32

    @staticmethod
    def set_memory_growth(device, enable):
        if not isinstance(device, PhysicalDevice) or \
                device not in list_physical_devices():
            raise ValueError("Unrecognized device: " + repr(device))
        if device.device_type != "GPU":
            raise ValueError("Cannot set memory growth on non-GPU and "
                             "non-Pluggable devices")
        experimental._growth[device.name] = bool(enable)

    @staticmethod
    def get_memory_growth(device):
        if not isinstance(device, PhysicalDevice) or \
                device not in list_physical_devices():
            raise ValueError("Unrecognized device: " + repr(device))
        return experimental._growth.get(device.name, False)

    @staticmethod
    def get_visible_devices(device_type=None):
        return list_physical_devices(device_type)

    @staticmethod
    def set_visible_devices(devices, device_type=None):
        if isinstance(devices, PhysicalDevice):
            devices = [devices]
        for d in devices:
            if d not in list_physical_devices():
                raise ValueError("Unrecognized device: " + repr(d))
        if device_type in (None, "CPU") and not any(
                d.device_type == "CPU" for d in devices):
            raise ValueError("tfmini runs on the CPU: the CPU must stay "
                             "visible")

    @staticmethod
    def get_device_details(device):
        if not isinstance(device, PhysicalDevice):
            raise ValueError("get_device_details takes a PhysicalDevice")
        return {}


get_visible_devices = experimental.get_visible_devices
set_visible_devices = experimental.set_visible_devices
