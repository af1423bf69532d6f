"""tf.debugging.set_log_device_placement: where each op runs.

When on, every op that runs (eagerly, or a kernel step of a tf.function)
writes TF's line to stderr:

    Executing op AddV2 in device /job:localhost/replica:0/task:0/device:CPU:0

An op sent to a device without a kernel for it (soft placement) shows
the CPU, where it ran."""
from . import _C

_on = False


def set_log_device_placement(enabled):
    """Turn device placement logging on or off (TF's signature)."""
    global _on
    _on = bool(enabled)
    _C.set_log_device_placement(_on)


def get_log_device_placement():
    return _on
