"""What the tests/gpu files share: the device names, float tolerances,
running one op on a device, reading the placement log, and the
extension's C counters (absent in a build without CUDA, hence None)."""
import ctypes

import numpy as np

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

GPU = "/GPU:0"
CPU = "/CPU:0"
GPU_NAME = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU_NAME = "/job:localhost/replica:0/task:0/device:CPU:0"
FLOATS = [np.float32, np.float64]


def tol(dtype):
    """The GPU against the CPU: a few ulps (summation orders differ)."""
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else \
        dict(rtol=1e-11, atol=1e-11)


def on(device, op, ins, **kw):
    """op's outputs on device, as a list."""
    with tf.device(device):
        out = _C.call(ID[op], tuple(tf.constant(v) for v in ins), **kw)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def placed(err):
    """{(op, device)} of the "Executing op" lines of a placement log."""
    out = set()
    for line in err.splitlines():
        if line.startswith("Executing op "):
            op, _, dev = line[len("Executing op "):].partition(" in device ")
            out.add((op, dev))
    return out


def logged(capfd, fn):
    """fn()'s result and the placement log of its ops."""
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    try:
        out = fn()
    finally:
        tf.debugging.set_log_device_placement(False)
    return out, placed(capfd.readouterr().err)


def both(capfd, fn):
    """fn() under the GPU and under the CPU: (gpu result, cpu result, the
    ops the GPU run placed)."""
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    try:
        with tf.device(GPU):
            g = fn()
    finally:
        tf.debugging.set_log_device_placement(False)
    where = placed(capfd.readouterr().err)
    with tf.device(CPU):
        c = fn()
    return g, c, where


def on_gpu_only(where, ops):
    """Each of ops ran on the GPU, none on the CPU (a placement log)."""
    for op in ops:
        assert (op, GPU_NAME) in where, (op, sorted(where))
        assert (op, CPU_NAME) not in where, (op, sorted(where))


def bits_equal(g, c, device=GPU_NAME):
    """g (a tensor or a list of them) on device, equal to c bit for bit."""
    def as_list(v):
        return list(v) if isinstance(v, (list, tuple)) else [v]
    for a, b in zip(as_list(g), as_list(c)):
        assert a.device == device, a.device
        an, bn = a.numpy(), b.numpy()
        assert an.shape == bn.shape and an.dtype == bn.dtype
        assert an.tobytes() == bn.tobytes(), (an, bn)


def c_fn(name, restype, argtypes=()):
    """A C function of the extension, or None in a build without it (the
    CUDA stub has none of the GPU counters)."""
    try:
        f = getattr(ctypes.CDLL(_C.__file__), name)
    except AttributeError:
        return None
    f.restype, f.argtypes = restype, list(argtypes)
    return f


def cudnn_version():
    f = c_fn("tfm_cuda_cudnn_version", ctypes.c_int)
    return f() if f else 0
