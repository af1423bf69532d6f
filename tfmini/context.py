"""Execution context: eager vs tracing, devices, threads."""
import contextlib

from . import _C
from .errors import InvalidArgumentError


def executing_eagerly():
    """True unless a tf.function is being traced on this thread."""
    from .function import _tracing
    return not _tracing()


def _parse_device(spec):
    """'/CPU:0', 'cpu:0', '/device:GPU:1', '/job:localhost/.../GPU:0' ->
    core device index (0 = CPU, 1 + n = GPU n; other kinds, such as the
    tests' FAKE:0, by the C device table)."""
    if spec is None or spec == "":
        return -1
    s = str(spec).upper()
    tail = s.rsplit("/", 1)[-1]
    if tail.startswith("DEVICE:"):
        tail = tail[len("DEVICE:"):]
    kind, _, num = tail.partition(":")
    try:
        n = int(num) if num else 0
    except ValueError:
        raise ValueError(f"Unknown device specification {spec!r}") from None
    if kind == "CPU":
        # Logical CPUs (tf.config.set_logical_device_configuration) are
        # all the one core device: they differ in the threads that use
        # them (tfmini/distribute), not in memory.
        from . import config
        if not 0 <= n < config._logical_cpu_count():
            raise ValueError(f"Unknown device {spec!r}: tfmini has "
                             f"{config._logical_cpu_count()} CPU "
                             "device(s)")
        return 0
    if kind == "GPU":
        from . import config
        if n >= config._gpu_count():
            if config.get_soft_device_placement():
                return 0
            raise InvalidArgumentError(
                f"Could not satisfy device specification {spec!r}: "
                f"{config._gpu_count()} GPU(s) found (soft device placement "
                "is off)")
        return 1 + n
    index = _C.device_find(kind, n)
    if index >= 0:
        return index
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
