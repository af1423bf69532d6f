"""Elementwise math: tf.add, tf.exp, tf.cast, ... (csrc/ops/ops_elementwise.def)."""
from .. import _C
from .. import dtypes as _dtypes
from .._opids import ID

__all__ = ["add", "subtract", "multiply", "cast"]

_ADD, _SUB, _MUL, _CAST = ID["AddV2"], ID["Sub"], ID["Mul"], ID["Cast"]


def add(x, y, name=None):
    return _C.binary(_ADD, x, y)


def subtract(x, y, name=None):
    return _C.binary(_SUB, x, y)


def multiply(x, y, name=None):
    return _C.binary(_MUL, x, y)


def cast(x, dtype, name=None):
    return _C.call(_CAST, (x,), dtype=_dtypes.as_dtype(dtype)._enum)
