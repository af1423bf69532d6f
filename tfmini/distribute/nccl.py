"""NCCL all-reduce between the GPUs of one process, for MirroredStrategy
over GPUs (the C extension tfmini.distribute._nccl, csrc/python/nccl/nccl_ext.c,
built with the CUDA backend when NCCL is found)."""


def available():
    try:
        from . import _nccl  # noqa: F401
    except ImportError:
        return False
    return True


def version():
    from . import _nccl
    return _nccl.version()


def all_reduce(tensors, op="sum"):
    """One tensor per GPU (same shape and dtype) -> their sum (or max,
    min), one copy on each tensor's GPU."""
    import tfmini as tf
    from ..experimental.dlpack import to_dlpack
    try:
        from . import _nccl
    except ImportError:
        raise ImportError("NCCL all-reduce needs tfmini built with the CUDA "
                          "backend and NCCL (nccl.h and libnccl, e.g. the "
                          "CUDA toolkit's or Debian's libnccl-dev)") from None
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype or t.shape != tensors[0].shape:
            raise ValueError(
                f"NCCL all-reduce: tensors of different dtypes or shapes: "
                f"{tensors[0].dtype.name}{tensors[0].shape.as_list()} vs "
                f"{t.dtype.name}{t.shape.as_list()}")
    outs = []
    for t in tensors:
        if "GPU" not in t.device.upper():
            raise ValueError(f"NCCL all-reduce: a tensor on {t.device}; "
                             f"every tensor must be in GPU memory")
        with tf.device(t.device):
            # A fresh buffer per output: NCCL writes into it.
            outs.append(tf.zeros(t.shape, t.dtype) + tf.zeros([], t.dtype))
    _nccl.allreduce([to_dlpack(t) for t in tensors],
                    [to_dlpack(o) for o in outs], op)
    return outs
