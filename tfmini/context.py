"""Execution context: eager vs tracing, devices, threads."""
import contextlib

from . import _C


def executing_eagerly():
    """True unless a tf.function is being traced on this thread."""
    from . import function
    return not function._tracing()


def _parse_device(spec):
    """'/CPU:0', 'cpu:0', '/device:GPU:1', '/job:localhost/.../GPU:0' ->
    core device index (0 = CPU, 1 + n = GPU n)."""
    if spec is None or spec == "":
        return -1
    s = str(spec).upper()
    tail = s.rsplit("/", 1)[-1]
    if tail.startswith("DEVICE:"):
        tail = tail[len("DEVICE:"):]
    kind, _, num = tail.partition(":")
    n = int(num) if num else 0
    if kind == "CPU":
        if n != 0:
            raise ValueError(f"Unknown device {spec!r}: tfmini has one CPU "
                             "device, /CPU:0")
        return 0
    if kind == "GPU":
        from .config import _gpu_count
        if n >= _gpu_count():
            raise ValueError(f"Device {spec!r} is not available: "
                             f"{_gpu_count()} GPU(s) found")
        return 1 + n
    raise ValueError(f"Unknown device specification {spec!r}")


@contextlib.contextmanager
def device(name):
    """tf.device: run the ops in the block on the named device."""
    index = _parse_device(name)
    old = _C.set_device_scope(index)
    try:
        yield
    finally:
        _C.set_device_scope(old)
