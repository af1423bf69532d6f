"""TF's conversion of NumPy operands for a binary op such as tf.add, in
the legacy dtype mode, where tfmini's own conversion refuses it.

TF's eager ops take the type of their inputs from the first one (a
tensor's dtype, or what the first value converts to alone), and convert
a later NumPy operand to that dtype as tf.constant(array, dtype) does,
with NumPy's cast: tf.add(tf.constant(1), np.array(1.7, np.float16)) is
the int32 2, and tf.add(1, np.array(1.5)) the int32 2. Python scalars
and lists are never cast so (1.5 as int32 stays an error). tfmini's C
conversion (csrc/python/convert.c) takes the other operand's dtype only
as a hint and refuses a float array for an int tensor; math_ops calls
this only after it did, so the common path pays nothing. The operators
(`x + array`) keep tfmini's refusal."""
import numpy as np

from .. import _C
from .._tensor import Tensor


def _is_numpy(v):
    return isinstance(v, (np.ndarray, np.generic))


def binary(op, x, y):
    """op on x and y converted TF's way, or None where that rule does not
    apply (no NumPy operand) or does not convert either."""
    if not (_is_numpy(x) or _is_numpy(y)):
        return None
    from .constant_op import convert_to_tensor
    try:
        a = x if isinstance(x, Tensor) else convert_to_tensor(x)
        b = y if isinstance(y, Tensor) else convert_to_tensor(y, a.dtype)
    except (TypeError, ValueError):
        return None
    return _C.binary(op, a, b)
