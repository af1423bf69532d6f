"""Norms and norm clipping: tf.norm, tf.clip_by_norm,
tf.clip_by_global_norm, tf.linalg.global_norm.

Composites over other ops, so they have gradients and trace for free.
They follow TF's formulas (not just its values) where the formula shows
in a gradient: clip_by_norm of an all-zero tensor has gradient one, not
NaN, because TF guards the square root with a where. See
ops/__init__.py for __all__/_NAMESPACES."""
import math
import numbers

from .._tensor import Tensor
from .array_ops import identity, ones_like, squeeze, stack, where
from .constant_op import convert_to_tensor
from .math_ops import (abs as _abs, cast, greater, maximum, minimum,
                       multiply, pow as _pow, sqrt)
from .reduce_ops import reduce_max, reduce_sum

__all__ = ["norm", "clip_by_norm", "clip_by_global_norm"]
_NAMESPACES = {"linalg": ["norm", "global_norm"]}

_MATRIX_ORDS = ("euclidean", "fro", 1, 2, math.inf)


def _as_tensor(x):
    if isinstance(x, Tensor):
        return x
    return convert_to_tensor(x)


def _is_number(o):
    return isinstance(o, numbers.Real) and not isinstance(o, bool)


def _norm_axis(axis):
    """axis as None, an int, or a tuple of two distinct ints; TF's
    ValueError otherwise."""
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    if _is_number(axis) and int(axis) == axis:
        return int(axis)
    ok = (isinstance(axis, (list, tuple)) and len(axis) == 2
          and all(isinstance(a, int) for a in axis) and axis[0] != axis[1])
    if not ok:
        shown = tuple(axis) if isinstance(axis, list) and len(axis) == 2 \
            else axis
        raise ValueError(f"'axis' must be None, an integer, or a tuple of "
                         f"2 unique integers, got {shown}")
    return tuple(axis)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """The vector norm of tensor (over all of it, or over axis), or the
    matrix norm over a pair of axes: ord 'euclidean'/'fro', 1, inf, or
    any p > 0 for vectors; 'euclidean'/'fro', 1, inf for matrices (2,
    the largest singular value, needs an SVD tfmini does not have)."""
    x = _as_tensor(tensor)
    absf = _abs
    if x.dtype.is_complex:
        # As TF: the euclidean norm sqrt(sum(x * conj(x))) keeps the
        # complex dtype (imaginary part 0); the others sum |x| (real).
        from .complex_ops import abs as absf, conj

    def squares():
        return x * conj(x) if x.dtype.is_complex else x * x

    axis = _norm_axis(axis)
    is_matrix = isinstance(axis, tuple)
    if is_matrix:
        if ord not in _MATRIX_ORDS:
            raise ValueError(f"'ord' must be a supported matrix norm in "
                             f"['euclidean', 'fro', 1, 2, inf], got {ord}")
    elif not (ord == "euclidean" or (_is_number(ord) and ord > 0)):
        raise ValueError(f"'ord' must be a supported vector norm, got "
                         f"{ord}")
    if is_matrix:
        rank = len(x._shape_tuple)
        rows, cols = (a % rank if rank else a for a in axis)
        if ord in ("euclidean", "fro"):
            out = sqrt(reduce_sum(squares(), axis=list(axis), keepdims=True))
        elif ord == 1:
            out = reduce_max(reduce_sum(absf(x), axis=rows, keepdims=True),
                             axis=cols, keepdims=True)
        elif ord == math.inf:
            out = reduce_max(reduce_sum(absf(x), axis=cols, keepdims=True),
                             axis=rows, keepdims=True)
        else:
            raise NotImplementedError(
                "tf.norm with ord=2 over two axes (the spectral norm) "
                "needs a singular value decomposition, which tfmini does "
                "not have")
    else:
        red = axis if axis is not None else None
        if ord == "euclidean":
            out = sqrt(reduce_sum(squares(), axis=red, keepdims=True))
        elif ord == 1:
            out = reduce_sum(absf(x), axis=red, keepdims=True)
        elif ord == math.inf:
            out = reduce_max(absf(x), axis=red, keepdims=True)
        else:
            p = float(ord)
            s = reduce_sum(_pow(absf(x), p), axis=red, keepdims=True)
            out = _pow(s, 1.0 / p)
    if keepdims:
        return out
    if axis is None:
        return squeeze(out)
    return squeeze(out, list(axis) if is_matrix else [axis])


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t scaled so that its L2 norm (over axes, or all of it) is at most
    clip_norm: t * clip_norm / max(l2norm(t), clip_norm)."""
    values = t._as_tensor() if hasattr(t, "_as_tensor") else _as_tensor(t)
    l2sum = reduce_sum(values * values, axes, keepdims=True)
    pred = greater(l2sum, 0)
    # A zero norm would give sqrt's gradient at 0 (inf) and then NaN.
    l2sum_safe = where(pred, l2sum, ones_like(l2sum))
    l2norm = where(pred, sqrt(l2sum_safe), l2sum)
    intermediate = multiply(values, clip_norm)
    return identity(intermediate / maximum(l2norm, clip_norm))


def _check_list(t_list):
    if isinstance(t_list, (Tensor, str, bytes)) or not hasattr(
            t_list, "__iter__"):
        raise TypeError(f"`t_list` should be a sequence of tensors. "
                        f"Received {type(t_list)}.")
    return [None if v is None else
            (v._as_tensor() if hasattr(v, "_as_tensor") else _as_tensor(v))
            for v in t_list]


def global_norm(t_list, name=None):
    """sqrt(sum of the squared L2 norms of the tensors); None entries are
    skipped. The tensors must share one float dtype."""
    values = [v for v in _check_list(t_list) if v is not None]
    if not values:
        raise ValueError("global_norm: `t_list` holds no tensors")
    half = [reduce_sum(v * v) / 2 for v in values]
    return sqrt(reduce_sum(stack(half)) * 2.0)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(each tensor scaled by clip_norm / max(global_norm, clip_norm),
    the global norm). An infinite norm makes every entry NaN, as in TF."""
    values = _check_list(t_list)
    if use_norm is None:
        use_norm = global_norm(values)
    use_norm = _as_tensor(use_norm)
    one = convert_to_tensor(1.0, dtype=use_norm.dtype)
    clip = convert_to_tensor(clip_norm, dtype=use_norm.dtype)
    scale = clip * minimum(one / use_norm, one / clip)
    # use_norm - use_norm is NaN when the norm is inf: poison the scale.
    scale = scale + (use_norm - use_norm)
    out = [None if v is None else identity(v * cast(scale, v.dtype))
           for v in values]
    return out, use_norm
