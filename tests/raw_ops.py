"""Calling a C op by its TF name, past the Python API: for the ops that
have no public wrapper (the quantized ones) and for their error paths.
Shared by the tf.lite and quantized-op tests."""
import numpy as np

import tfmini as tf
from tfmini import _C

OPS = {row[0]: k for k, row in enumerate(_C.op_table())}


def call(op, inputs, **kw):
    """Runs op `op` (its TF name) on `inputs`, NumPy arrays made
    constants first, with the attributes in `kw` (ints, i, f, dtype);
    returns its first output as a NumPy array."""
    r = _C.call(OPS[op], tuple(tf.constant(x) if isinstance(x, np.ndarray)
                               else x for x in inputs), **kw)
    return np.asarray(r[0] if isinstance(r, (tuple, list)) else r)
