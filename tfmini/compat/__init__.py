"""tf.compat: the string and number helpers TF code calls through
tf.compat, and the v1/v2 API names.

v2 is tfmini itself. v1 exists so that TF2 code that only imports
`tensorflow.compat.v1` (every migration guide does) runs; tfmini has
no TF1 API, so each name looked up on it is an AttributeError that
says so (see v1.py).
"""
import numbers as _numbers

import numpy as _np

from ..tensor_shape import Dimension as _Dimension
from ..tensor_shape import TensorShape as _TensorShape
from . import v1  # noqa: F401

bytes_or_text_types = (bytes, str)
integral_types = (_numbers.Integral, _np.integer)
real_types = (_numbers.Real, _np.integer, _np.floating)
complex_types = (_numbers.Complex, _np.number)


def as_bytes(bytes_or_text, encoding="utf-8"):
    """str is encoded; bytes and bytearray are returned as bytes."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got "
                    f"{bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8"):
    """bytes are decoded; str is returned as it is."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got "
                    f"{bytes_or_text!r}")


as_str = as_text


def as_str_any(value, encoding="utf-8"):
    """bytes decoded, anything else through str()."""
    if isinstance(value, bytes):
        return as_str(value, encoding)
    return str(value)


def path_to_str(path):
    """A PathLike's file-system path; anything else as it is."""
    if hasattr(path, "__fspath__"):
        return as_str_any(path.__fspath__())
    return path


def dimension_value(dimension):
    """A dim's int or None, from a Dimension (TensorShape.dims) or an int."""
    if isinstance(dimension, _Dimension):
        return dimension.value
    return dimension


def dimension_at_index(shape, index):
    """shape's dim `index` as a Dimension (Dimension(None) where the
    rank is unknown)."""
    shape = _TensorShape(shape)
    if shape.rank is None:
        return _Dimension(None)
    return shape.dims[index]


def __getattr__(name):
    # v2 is the package itself, imported lazily (tfmini imports compat).
    if name == "v2":
        import tfmini
        return tfmini
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
