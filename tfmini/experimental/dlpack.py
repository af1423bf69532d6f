"""tf.experimental.dlpack: zero-copy exchange with NumPy, PyTorch, JAX
and any other DLPack library (csrc/python/dlpack.c, Note [DLPack
lifetimes]).

to_dlpack(t) gives a "dltensor" capsule over t's buffer; the buffer
stays alive until the consumer is done with it, even after t is gone.
from_dlpack(x) takes a capsule or any object with __dlpack__ (a NumPy
array, a torch tensor, a JAX array) and returns a tensor over the same
memory, which stays alive as long as the tensor does. It copies only
when it must: strided (non C-contiguous) or misaligned memory, an
empty tensor, or a read-only NumPy array (which NumPy will not export
over DLPack 0.6); `last_import_copied()` says whether the latest call did.
Host memory only; dtypes bool, int8/16/32/64, uint8/16/32/64, float16/32/64.

Tensors are immutable: an exported tensor's memory must not be written
through the consumer's view (DLPack 0.6 has no read-only flag, so
np.from_dlpack hands back a writable array, as with TensorFlow)."""
import threading

from .. import _C

_state = threading.local()


def to_dlpack(tf_tensor):
    """A DLPack capsule sharing tf_tensor's memory (a Variable exports
    its current value)."""
    value = getattr(tf_tensor, "value", None)
    if not hasattr(tf_tensor, "_symbolic") and callable(value):
        tf_tensor = value()
    return _C.to_dlpack(tf_tensor)


def from_dlpack(dlcapsule):
    """A tf.Tensor over the memory of a DLPack capsule or of an object
    with __dlpack__."""
    if hasattr(dlcapsule, "__dlpack__"):
        device = getattr(dlcapsule, "__dlpack_device__", None)
        if device is not None:
            kind, _ = device()
            if kind not in (1, 3):          # kDLCPU, kDLCUDAHost
                raise ValueError(
                    f"from_dlpack: the tensor is on DLPack device type "
                    f"{kind}; tfmini imports host memory only: move it "
                    f"to the CPU first")
        try:
            dlcapsule = dlcapsule.__dlpack__(stream=None)
        except BufferError:
            # A read-only NumPy array: DLPack 0.6 cannot flag read-only
            # memory, so NumPy refuses to export it. Copy it instead.
            if not hasattr(dlcapsule, "__array__"):
                raise
            import numpy as np
            tensor, _ = _C.from_dlpack(
                np.array(dlcapsule, copy=True).__dlpack__(stream=None))
            _state.copied = True
            return tensor
    tensor, copied = _C.from_dlpack(dlcapsule)
    _state.copied = bool(copied)
    return tensor


def last_import_copied():
    """Whether the latest from_dlpack on this thread copied the data
    (strided or misaligned source) instead of sharing it."""
    return getattr(_state, "copied", None)


def tensor_dlpack(tensor, stream=None, max_version=None, dl_device=None,
                  copy=None):
    """Tensor.__dlpack__: the Python array API's producer protocol
    (stream is ignored: tfmini's CPU memory needs no synchronization)."""
    if dl_device is not None and tuple(dl_device) != \
            tensor_dlpack_device(tensor):
        raise BufferError(f"__dlpack__: cannot export to device "
                          f"{dl_device}: the tensor is on "
                          f"{tensor_dlpack_device(tensor)}")
    if copy:
        tensor = _copy(tensor)
    return _C.to_dlpack(tensor)


def _copy(tensor):
    import numpy as np
    from .. import constant
    return constant(np.array(tensor.numpy(), copy=True))


def tensor_dlpack_device(tensor):
    """Tensor.__dlpack_device__: (kDLCPU=1, 0) or (kDLCUDA=2, n)."""
    name = getattr(tensor, "device", "") or ""
    if "GPU" in name.upper():
        return (2, int(name.rsplit(":", 1)[-1]))
    return (1, 0)
