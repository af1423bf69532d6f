"""Reductions, arg-reductions, scans and sorting: tf.reduce_sum,
tf.argmax, tf.cumsum, tf.sort, tf.math.top_k, ... (csrc/ops/ops_reduce.def,
whose comment gives each op's attributes)."""
import collections

import numpy as np

from .. import _C
from .. import dtypes as _dtypes
from .._opids import ID
from .._tensor import Tensor

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
           "reduce_prod", "reduce_all", "reduce_any", "reduce_logsumexp",
           "argmax", "argmin", "cumsum", "sort", "argsort"]
_NAMESPACES = {
    "math": ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
             "reduce_prod", "reduce_all", "reduce_any", "reduce_logsumexp",
             "reduce_std", "reduce_variance", "argmax", "argmin", "cumsum",
             "cumprod", "top_k"],
    "nn": ["top_k"],
}

_SUM, _MEAN, _PROD = ID["Sum"], ID["Mean"], ID["Prod"]
_MAX, _MIN, _ALL, _ANY = ID["Max"], ID["Min"], ID["All"], ID["Any"]
_LSE = ID["ReduceLogSumExp"]
_ARGMAX, _ARGMIN = ID["ArgMax"], ID["ArgMin"]
_CUMSUM, _CUMPROD = ID["Cumsum"], ID["Cumprod"]
_SORT, _TOPK = ID["Sort"], ID["TopKV2"]


def _static(value, what):
    """A Python value for an argument that tfmini needs at trace time
    (TF also accepts a tensor computed in the graph; tfmini does not)."""
    if isinstance(value, Tensor):
        if value._symbolic:
            raise TypeError(f"tfmini needs `{what}` as a Python value or "
                            f"an eager tensor, got the symbolic tensor "
                            f"{value}")
        return value.numpy()
    if hasattr(value, "_as_tensor"):              # a Variable
        return value._as_tensor().numpy()
    return value


_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _axes(axis):
    """(ints, i) attributes for a reduction over `axis`."""
    if axis is None:
        return (), 1
    # One Python int, the common case: np.asarray below costs a
    # microsecond, more than the tiny reduction itself.
    if type(axis) is int and _INT64_MIN <= axis <= _INT64_MAX:
        return (axis,), 0
    if type(axis) is list or type(axis) is tuple:
        for v in axis:
            if type(v) is not int or not _INT64_MIN <= v <= _INT64_MAX:
                break
        else:
            return tuple(axis), 0
    a = np.asarray(_static(axis, "axis"))
    if a.size == 0:
        return (), 0
    if a.dtype.kind not in "iu":
        raise TypeError(f"axis must be an int or a list of ints, got "
                        f"{axis!r}")
    if a.ndim > 1:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError(
            None, None, f"axis must be at most 1-D, got shape {a.shape}")
    return tuple(int(v) for v in a.reshape(-1)), 0


def _reduce(op, x, axis, keepdims):
    if axis is None and keepdims is False:
        return _C.call(op, (x,), None, _ALL_AXES)
    ints, all_axes = _axes(axis)
    return _C.call(op, (x,), ints, (1 if keepdims else 0, all_axes))


_ALL_AXES = (0, 1)      # i: (keepdims, all axes)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (None: all axes). Integer sums wrap like TF's."""
    return _reduce(_SUM, input_tensor, axis, keepdims)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis`. Integer means truncate toward zero, as in TF."""
    return _reduce(_MEAN, input_tensor, axis, keepdims)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(_MAX, input_tensor, axis, keepdims)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(_MIN, input_tensor, axis, keepdims)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(_PROD, input_tensor, axis, keepdims)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(_ALL, input_tensor, axis, keepdims)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(_ANY, input_tensor, axis, keepdims)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over `axis`, computed without overflow."""
    return _reduce(_LSE, input_tensor, axis, keepdims)


def _float_input(x, fname):
    from .constant_op import convert_to_tensor
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"{fname}: input must be either real or complex, "
                        f"got {x.dtype.name}")
    return x


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Population variance: mean((x - mean(x))**2) over `axis`."""
    from .math_ops import multiply, subtract
    x = _float_input(input_tensor, "reduce_variance")
    d = subtract(x, reduce_mean(x, axis, keepdims=True))
    return reduce_mean(multiply(d, d), axis, keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Population standard deviation over `axis`."""
    from .. import math as _math
    sqrt = getattr(_math, "sqrt", None)
    if sqrt is None:
        raise NotImplementedError("tf.math.reduce_std needs tf.math.sqrt, "
                                  "which this build of tfmini lacks")
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def _index_dtype(dtype, fname):
    d = _dtypes.as_dtype(dtype)
    if d not in (_dtypes.int32, _dtypes.int64):
        raise TypeError(f"{fname}: the index type must be int32 or int64, "
                        f"got {d.name}")
    return d._enum


def _int_arg(value, what):
    v = np.asarray(_static(value, what))
    if v.ndim != 0 or v.dtype.kind not in "iu":
        raise TypeError(f"{what} must be an int, got {value!r}")
    return int(v)


def argmax(input, axis=None, output_type=_dtypes.int64, name=None):
    """Index of the largest value along `axis` (None: 0); ties give the
    first index."""
    axis = 0 if axis is None else _int_arg(axis, "axis")
    return _C.call(_ARGMAX, (input,), i=(axis,),
                   dtype=_index_dtype(output_type, "argmax"))


def argmin(input, axis=None, output_type=_dtypes.int64, name=None):
    """Index of the smallest value along `axis` (None: 0); ties give the
    first index."""
    axis = 0 if axis is None else _int_arg(axis, "axis")
    return _C.call(_ARGMIN, (input,), i=(axis,),
                   dtype=_index_dtype(output_type, "argmin"))


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sum along `axis`; `exclusive` leaves each element out of
    its own sum, `reverse` runs from the end."""
    return _C.call(_CUMSUM, (x,), i=(_int_arg(axis, "axis"),
                                     1 if exclusive else 0,
                                     1 if reverse else 0))


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running product along `axis` (see cumsum)."""
    return _C.call(_CUMPROD, (x,), i=(_int_arg(axis, "axis"),
                                      1 if exclusive else 0,
                                      1 if reverse else 0))


def _direction(direction):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"Unknown direction: {direction!r} (expected "
                         f"'ASCENDING' or 'DESCENDING')")
    return 1 if direction == "DESCENDING" else 0


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """Sorted copy of `values` along `axis`."""
    desc = _direction(direction)
    return _C.call(_SORT, (values,), i=(_int_arg(axis, "axis"), desc),
                   dtype=_dtypes.int32._enum)[0]


def argsort(values, axis=-1, direction="ASCENDING", stable=False,
            name=None):
    """int32 indices that sort `values` along `axis`. The order is always
    stable (equal values keep their order), whatever `stable` says."""
    desc = _direction(direction)
    return _C.call(_SORT, (values,), i=(_int_arg(axis, "axis"), desc),
                   dtype=_dtypes.int32._enum)[1]


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, index_type=_dtypes.int32, name=None):
    """The k largest entries along the last axis and their indices,
    largest first (ties: lower index first)."""
    v, i = _C.call(_TOPK, (input,), i=(_int_arg(k, "k"),
                                       1 if sorted else 0),
                   dtype=_index_dtype(index_type, "top_k"))
    return TopKV2(v, i)
