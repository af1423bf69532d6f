"""tf.experimental.numpy: the NumPy API over tfmini tensors.

tnp.ndarray is tf.Tensor. Functions take arrays, tensors and Python
values and follow NumPy's type promotion (int32 + float32 -> float64);
Python scalars are weak (they take the other operand's kind). Creating
from a Python float gives float64, or float32 after
experimental_enable_numpy_behavior(prefer_float32=True). That call also
gives tensors NumPy's methods (reshape, astype, T, ravel, sum, ...), makes
their operators promote mixed dtypes as NumPy does and lets them take
NumPy's advanced indices (lists, bool masks), as TF's does; like TF's, it
changes every tensor for the rest of the process. With
dtype_conversion_mode "all" or "safe" arrays made from Python values are
weak (weak_tensor.py), as TF's are."""
import builtins as _builtins

import numpy as _np

from ... import dtypes as _dtypes
from ...ops import array_ops as _A
from ...ops import constant_op as _C
from ...ops import linalg_ops as _L
from ...ops import math_ops as _M
from ...ops import reduce_ops as _R
from ..._tensor import Tensor as ndarray
from . import promotion as _promotion
from . import random  # noqa: F401
from . import weak_tensor

bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8 = _np.uint8
float16, float32, float64 = _np.float16, _np.float32, _np.float64
newaxis = None
pi, e, inf, nan = _np.pi, _np.e, _np.inf, _np.nan

_state = {"prefer_float32": False, "enabled": False, "mode": "legacy"}


def _default_float():
    return _np.float32 if _state["prefer_float32"] else _np.float64


def _new_mode():
    return _state["mode"] in ("all", "safe")


def _creation_float():
    # TF's tnp.zeros, tnp.eye, ... make float32 (and int32 for `int`)
    # in the new modes, though tnp.add(1, 2.5) stays float64 there.
    return _np.float32 if _new_mode() else _default_float()


def _np_dtype(dtype):
    return None if dtype is None else \
        _dtypes.as_dtype(dtype).as_numpy_dtype


def asarray(a, dtype=None):
    """a as a tensor (a tensor is returned as it is, cast to dtype)."""
    if isinstance(a, ndarray):
        if dtype is not None and a.dtype != _dtypes.as_dtype(dtype):
            return _M.cast(a, dtype)
        return a
    if hasattr(a, "_as_tensor"):
        return asarray(a._as_tensor(), dtype)
    if dtype is None:
        arr = _np.asarray(a)
        python = not isinstance(a, (_np.ndarray, _np.generic))
        if python and _state["mode"] in ("all", "safe"):
            # TF's weak dtypes for Python values: int32, float32,
            # complex128 (tfmini's tensors are never weak).
            if arr.dtype.kind in "iu":
                if arr.size and not (-2**31 <= arr.min() and
                                     arr.max() < 2**31):
                    raise OverflowError(f"Python int {a} too large to "
                                        f"convert to np.int32")
                arr = arr.astype(_np.int32)
            elif arr.dtype.kind == "f":
                arr = arr.astype(_np.float32)
        elif arr.dtype == _np.float64 and python:
            arr = arr.astype(_default_float())
    else:
        arr = _np.asarray(a, dtype=_np_dtype(dtype))
    out = _C.constant(arr)
    if dtype is None and weak_tensor.weak_alone(a):
        weak_tensor.mark(out)             # TF: tnp.array(1) is weak
    return out


array = asarray


def copy(a):
    """A new tensor equal to a, placed on the current device (as TF's
    tnp.copy): identity runs under the caller's device scope."""
    return _A.identity(asarray(a))


def _is_weak(x):
    return isinstance(x, (_builtins.bool, int, float)) and \
        not isinstance(x, _np.generic)


def result_type(*args):
    """NumPy's promotion of the arguments' dtypes (Python scalars weak);
    TF's lattice in dtype_conversion_mode "all" or "safe"."""
    if _state["mode"] in ("all", "safe"):
        return _promotion.result_dtype(_state["mode"], *args).as_numpy_dtype
    return _numpy_result_type(*args)


def _python_dtype(x):
    dt = _np.asarray(x).dtype
    return _np.dtype(_default_float()) if dt == _np.float64 else dt


def _numpy_result_type(*args):
    # TF's tnp.add & co. promote so in every mode (tnp.add(1, 2) is int64
    # there even in mode "all"), and give strong tensors.
    strong = [_np_dtype(a.dtype) if isinstance(a, ndarray) else
              _np.asarray(a).dtype for a in args if not _is_weak(a)]
    weak = [a for a in args if _is_weak(a)]
    if not strong:
        return _np.result_type(*[_python_dtype(w) for w in weak]).type
    out = _np.result_type(*strong)
    if _builtins.any(isinstance(w, float) for w in weak) and \
            not _np.issubdtype(out, _np.inexact):
        out = _np.dtype(_default_float())
    return _np.dtype(out).type


def _promote(*args):
    dt = result_type(*args)
    return [asarray(a, dt) for a in args]


def _float(x):
    x = asarray(x)
    if x.dtype.is_floating:
        return x
    return _M.cast(x, _default_float())


def _binary(fn, to_float=False):
    def f(x1, x2):
        dt = _numpy_result_type(x1, x2)
        a, b = asarray(x1, dt), asarray(x2, dt)
        if to_float:
            a, b = _float(a), _float(b)
        return weak_tensor.strong(fn(a, b))
    f.__name__ = getattr(fn, "__name__", "binary")
    return f


add = _binary(_M.add)
subtract = _binary(_M.subtract)
multiply = _binary(_M.multiply)
true_divide = divide = _binary(_M.truediv, to_float=True)
floor_divide = _binary(_M.floordiv)
mod = remainder = _binary(_M.floormod)
power = _binary(_M.pow)
maximum = _binary(_M.maximum)
minimum = _binary(_M.minimum)
equal = _binary(_M.equal)
not_equal = _binary(_M.not_equal)
less = _binary(_M.less)
less_equal = _binary(_M.less_equal)
greater = _binary(_M.greater)
greater_equal = _binary(_M.greater_equal)
logical_and = _binary(_M.logical_and)
logical_or = _binary(_M.logical_or)
arctan2 = _binary(_M.atan2, to_float=True)


def matmul(x1, x2):
    a, b = _promote(x1, x2)
    return _L.matmul(a, b)


def dot(a, b):
    a, b = _promote(a, b)
    if a.shape.rank == 0 or b.shape.rank == 0:
        return a * b
    if b.shape.rank == 1:
        return _R.reduce_sum(a * b, axis=-1)
    return _L.tensordot(a, b, [[a.shape.rank - 1], [b.shape.rank - 2]])


def _weak_float(x):
    # A weak integer becomes a weak float32 (TF: tnp.sqrt(1) is one).
    if weak_tensor.is_weak(x) and not x.dtype.is_floating and \
            not x.dtype.is_complex:
        return _M.cast(x, _np.float32)
    return _float(x)


def _unary(fn, to_float=False):
    def f(x):
        x = asarray(x)
        weak = weak_tensor.is_weak(x)
        out = fn(_weak_float(x) if to_float else x)
        return weak_tensor.mark(out, weak) if out is not x else out
    f.__name__ = getattr(fn, "__name__", "unary")
    return f


sqrt = _unary(_M.sqrt, True)
exp = _unary(_M.exp, True)
log = _unary(_M.log, True)
sin = _unary(_M.sin, True)
cos = _unary(_M.cos, True)
tan = _unary(_M.tan, True)
tanh = _unary(_M.tanh, True)
floor = _unary(_M.floor, True)
ceil = _unary(_M.ceil, True)
abs = absolute = _unary(_M.abs)  # noqa: A001
negative = _unary(_M.negative)
square = _unary(_M.square)
sign = _unary(_M.sign)
logical_not = _unary(_M.logical_not)


def _reduction(fn, to_float=False):
    def f(a, axis=None, dtype=None, keepdims=False):
        a = asarray(a, dtype)
        weak = weak_tensor.is_weak(a)
        if to_float:
            a = _weak_float(a)
        out = fn(a, axis=axis, keepdims=keepdims)
        return weak_tensor.mark(out, weak) if out is not a else out
    return f


sum = _reduction(_R.reduce_sum)  # noqa: A001
prod = _reduction(_R.reduce_prod)
mean = _reduction(_R.reduce_mean, True)
amax = max = _reduction(_R.reduce_max)  # noqa: A001
amin = min = _reduction(_R.reduce_min)  # noqa: A001
all = _reduction(_R.reduce_all)  # noqa: A001
any = _reduction(_R.reduce_any)  # noqa: A001


def std(a, axis=None, keepdims=False):
    from ... import math as _math
    return _math.reduce_std(_float(a), axis=axis, keepdims=keepdims)


def var(a, axis=None, keepdims=False):
    from ... import math as _math
    return _math.reduce_variance(_float(a), axis=axis, keepdims=keepdims)


def argmax(a, axis=None):
    a = asarray(a)
    if axis is None:
        a, axis = _A.reshape(a, [-1]), 0
    return _M.cast(_R.argmax(a, axis=axis), _np.int64)


def argmin(a, axis=None):
    a = asarray(a)
    if axis is None:
        a, axis = _A.reshape(a, [-1]), 0
    return _M.cast(_R.argmin(a, axis=axis), _np.int64)


def _keeps_weak(fn):
    """fn(a, ...) weak where a is (TF's list: reshape, transpose, ...)."""
    def f(a, *args, **kwargs):
        a = asarray(a)
        out = fn(a, *args, **kwargs)
        return weak_tensor.mark(out, weak_tensor.is_weak(a)) \
            if out is not a else out
    f.__name__ = fn.__name__
    f.__doc__ = fn.__doc__
    return f


# ---- creation -----------------------------------------------------------

def _shape(shape):
    return [int(shape)] if isinstance(shape, (int, _np.integer)) else \
        [int(d) for d in shape]


def zeros(shape, dtype=float):
    return asarray(_np.zeros(_shape(shape), _creation_dtype(dtype)))


def ones(shape, dtype=float):
    return asarray(_np.ones(_shape(shape), _creation_dtype(dtype)))


empty = zeros


def full(shape, fill_value, dtype=None):
    v = asarray(fill_value, dtype)
    return _A.fill(_shape(shape), v)


def _creation_dtype(dtype):
    if dtype is int and _new_mode():
        return _np.int32
    return _creation_float() if dtype is float or dtype is None else \
        _np_dtype(dtype)


def zeros_like(a, dtype=None):
    return _A.zeros_like(asarray(a), dtype)


def ones_like(a, dtype=None):
    return _A.ones_like(asarray(a), dtype)


def full_like(a, fill_value, dtype=None):
    a = asarray(a)
    return _A.fill(a.shape.as_list(), asarray(fill_value,
                                              dtype or a.dtype))


def arange(start, stop=None, step=1, dtype=None):
    vals = _np.arange(start, stop, step) if stop is not None else \
        _np.arange(start)
    if dtype is None and weak_tensor.weak_alone(
            [v for v in (start, stop, step) if v is not None]):
        # TF: tnp.arange(3) is a weak int32 in the new modes.
        vals = vals.astype(_np.int32 if vals.dtype.kind in "iu"
                           else _np.float32)
        return weak_tensor.mark(_C.constant(vals))
    if dtype is None and vals.dtype == _np.float64:
        dtype = _creation_float()
    return asarray(vals, dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    return asarray(_np.linspace(start, stop, num, endpoint),
                   dtype or _creation_float())


def eye(N, M=None, k=0, dtype=float):  # noqa: N803 (NumPy's names)
    return asarray(_np.eye(N, M, k, dtype=_creation_dtype(dtype)))


identity = eye


# ---- shapes -------------------------------------------------------------

def reshape(a, newshape, order="C"):
    return _A.reshape(asarray(a), _shape(newshape))


def ravel(a):
    return _A.reshape(asarray(a), [-1])


def transpose(a, axes=None):
    return _A.transpose(asarray(a), axes)


def expand_dims(a, axis):
    return _A.expand_dims(asarray(a), axis)


def squeeze(a, axis=None):
    return _A.squeeze(asarray(a), axis)


def concatenate(arys, axis=0):
    return _A.concat(_promote(*arys), axis)


def stack(arrays, axis=0):
    return _A.stack(_promote(*arrays), axis)


def where(condition, x=None, y=None):
    if x is None and y is None:
        raise NotImplementedError("tnp.where(condition) alone")
    x, y = _promote(x, y)
    return _A.where(asarray(condition, bool_), x, y)


def clip(a, a_min, a_max):
    return minimum(maximum(a, a_min), a_max)


def broadcast_to(array, shape):
    return _A.broadcast_to(asarray(array), _shape(shape))


def shape(a):
    return tuple(asarray(a).shape.as_list())


def ndim(a):
    return asarray(a).shape.rank


def size(a):
    return int(_np.prod(asarray(a).shape.as_list()))


def allclose(a, b, rtol=1e-5, atol=1e-8):
    return _np.allclose(asarray(a).numpy(), asarray(b).numpy(), rtol, atol)


for _name in ("reshape", "ravel", "transpose", "expand_dims", "squeeze",
              "copy", "zeros_like", "ones_like"):
    globals()[_name] = _keeps_weak(globals()[_name])
matmul = weak_tensor.weak_where_promoted(matmul)

from .behavior import experimental_enable_numpy_behavior  # noqa: E402,F401
