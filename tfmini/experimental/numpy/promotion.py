"""TF's new type promotion: experimental_enable_numpy_behavior(
dtype_conversion_mode="all" | "safe").

TF 2.21 promotes along a lattice (JAX's): Python scalars are weak (i*,
f*, c*) and sit below every dtype of their kind, and integers meet
floats at f*, so int32 + float16 is float16 rather than NumPy's float64.
SAFE mode refuses a promotion that makes a dtype neither input has, or
one that cannot hold every value of an input exactly (int32 + float32).
Both rules were checked against TF 2.21 for every pair of dtypes and
Python scalars (tests/test_tnp_promotion.py holds TF's table).

A WeakTensor (weak_tensor.py) is a node too: (dtype, weak=True) for
int32/int64 (i*), float32/float64 (f*) and complex128 (c*). Inputs fold
pairwise, as TF's result_type does; a weak result made only of weak (or
bool) inputs keeps the widest weak dtype of its kind (1 + 2.0 is a weak
float32), one with a strong input is made as _WEAK_RESULT (int8 + 1.0 is
a weak float64)."""
import builtins as _builtins

import numpy as _np

from ... import dtypes as _dtypes
from ..._tensor import Tensor as _Tensor

MODES = ("off", "legacy", "safe", "all")

# a -> the dtypes a promotes to directly.
_EDGES = {
    "bool": ("i*",), "i*": ("uint8", "int8"),
    "uint8": ("uint16", "int16"), "uint16": ("uint32", "int32"),
    "uint32": ("uint64", "int64"), "uint64": ("f*",),
    "int8": ("int16",), "int16": ("int32",), "int32": ("int64",),
    "int64": ("f*",), "f*": ("bfloat16", "float16", "c*"),
    "bfloat16": ("float32",), "float16": ("float32",),
    "float32": ("float64", "complex64"), "float64": ("complex128",),
    "c*": ("complex64",), "complex64": ("complex128",), "complex128": (),
}


def _above(a):
    seen, todo = [], [a]
    while todo:
        n = todo.pop(0)
        if n not in seen:
            seen.append(n)
            todo.extend(_EDGES[n])
    return seen


_UP = {n: _above(n) for n in _EDGES}
# What a weak result with a strong input is made as.
_WEAK_RESULT = {"i*": "int32", "f*": "float64", "c*": "complex128"}
_MANT = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53,
         "complex64": 24, "complex128": 53}
_IBITS = {"uint8": 8, "int8": 7, "uint16": 16, "int16": 15,
          "uint32": 32, "int32": 31, "uint64": 64, "int64": 63}


def _join(a, b):
    common = [n for n in _UP[a] if n in _UP[b]]
    return next(n for n in common if all(m in _UP[n] for m in common))


def _fits(x, r):
    """Whether dtype r holds every value of dtype x exactly."""
    if x in ("bool", r):
        return True
    if r in _IBITS:
        return x in _IBITS and _IBITS[x] <= _IBITS[r] and \
            (x.startswith("u") or not r.startswith("u"))
    if x in _IBITS:
        return _IBITS[x] <= _MANT[r]
    return _MANT[x] <= _MANT[r] and {x, r} != {"bfloat16", "float16"} and \
        (r.startswith("c") or not x.startswith("c"))


def _safe(a, b, r):
    for x, other in ((a, b), (b, a)):
        if x in (r, "i*", "bool"):
            continue
        if x == "f*":
            if r in _MANT or other == "bool":
                continue
            return False
        if x == "c*":
            if r in ("c*", "complex128") or r == other:
                continue
            return False
        if r == "f*" or other != r and not other.endswith("*"):
            return False
        if not _fits(x, _WEAK_RESULT.get(r, r)):
            return False
    return True


# A weak tensor's dtype -> its lattice node; other dtypes are never
# weak (a weak float16 cannot be made).
_WEAK_KIND = {"int32": "i*", "int64": "i*", "float32": "f*",
              "float64": "f*", "complex128": "c*"}
_WIDTH = {"int32": 0, "int64": 1, "float32": 0, "float64": 1,
          "complex128": 0}


_SCALAR = {float: ("float32", True), complex: ("complex128", True),
           _builtins.bool: ("bool", False)}


def _pair(x):
    """x's (dtype name, weak): Python scalars and lists of them are weak
    (int32, float32, complex128), as are WeakTensors."""
    p = _SCALAR.get(type(x))            # the common operands first
    if p is not None:
        return p
    if type(x) is int and -2**31 <= x < 2**31:
        return ("int32", True)
    if isinstance(x, _Tensor):
        name = x.dtype.name
        return (name, getattr(x, "_weak", False) and name in _WEAK_KIND)
    if isinstance(x, (_builtins.bool, int, float, complex)) and \
            not isinstance(x, _np.generic):
        if isinstance(x, _builtins.bool):
            return ("bool", False)
        if isinstance(x, int):
            if not -2**31 <= x < 2**31:
                raise OverflowError(f"Python int {x} too large to convert "
                                    f"to np.int32")
            return ("int32", True)
        return ("complex128", True) if isinstance(x, complex) else \
            ("float32", True)
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = _np.asarray(x).dtype
        if isinstance(x, (list, tuple)) and _python_numbers(x):
            # Python numbers in a list are weak too (TF: int8 + [1, 2]
            # is int8); a list holding tensors or NumPy values is not.
            weak = {"b": ("bool", False), "i": ("int32", True),
                    "u": ("int32", True), "f": ("float32", True),
                    "c": ("complex128", True)}.get(dt.kind)
            if weak is not None:
                return weak
    return (_dtypes.as_dtype(dt).name, False)


def _python_numbers(x):
    if isinstance(x, (list, tuple)):
        return all(_python_numbers(v) for v in x)
    return isinstance(x, (_builtins.bool, int, float, complex)) and \
        not isinstance(x, _np.generic)


def _node(p):
    return _WEAK_KIND[p[0]] if p[1] else p[0]


def _kind(x):
    """x's lattice node: a dtype name, or i*/f*/c* where x is weak."""
    return _node(_pair(x))


def _describe(p):
    return f"({_dtypes.as_dtype(p[0])}, weak={p[1]})"


def _pair_safe(a, b, j):
    if all(w or n == "bool" for n, w in (a, b)):
        return True                   # weak with weak: never refused
    for (n, w), (m, v) in ((a, b), (b, a)):
        # A weak float64 widens nothing: an integer fits or it does not.
        if w and n == "float64" and j == "f*" and not v:
            return _fits(m, "float64")
    return _safe(_node(a), _node(b), j)


_JOINED = {}


def _join_pair(mode, a, b):
    key = (mode, a, b)
    r = _JOINED.get(key)
    if r is None:
        r = _JOINED[key] = _join_pair_uncached(mode, a, b)
    return r


def _join_pair_uncached(mode, a, b):
    j = _join(_node(a), _node(b))
    if mode == "safe" and not _pair_safe(a, b, j):
        raise TypeError(
            f"In promotion mode PromoMode.SAFE, implicit dtype promotion"
            f" between {_describe(a)} and {_describe(b)} is disallowed."
            f" You need to explicitly specify the dtype in your op, or "
            f"relax your dtype promotion rules (such as from SAFE mode "
            f"to ALL mode).")
    if not j.endswith("*"):
        return (j, False)
    if all(w or n == "bool" for n, w in (a, b)):
        same = [n for n, w in (a, b) if w and _WEAK_KIND[n] == j]
        return (max(same, key=_WIDTH.get), True)
    return (_WEAK_RESULT[j], True)


def result_pair(mode, *args):
    """(tfmini DType, weak) that args promote to in mode "all" or
    "safe"; TypeError, in TF's words, where SAFE refuses."""
    return join_pairs(mode, [_pair(a) for a in args])


def join_pairs(mode, pairs):
    """result_pair of (dtype name, weak) pairs."""
    r = pairs[0]
    for p in pairs[1:]:
        r = _join_pair(mode, r, p)
    return _dtypes.as_dtype(r[0]), r[1]


def result_dtype(mode, *args):
    """The dtype (a tfmini DType) args promote to in mode "all" or
    "safe"; TypeError, in TF's words, where SAFE refuses."""
    return result_pair(mode, *args)[0]


def variable_value(mode, var, value, op):
    """value as var's dtype where TF's promotion keeps that dtype (int16
    into an int32 variable); TF's TypeError where it would change it."""
    dt = getattr(value, "dtype", None)
    if dt is None and not isinstance(value, (_builtins.bool, int, float,
                                             complex)):
        return value                  # lists and such: converted as ever
    if dt is not None and _dtypes.as_dtype(dt) == var.dtype:
        return value
    if result_dtype(mode, var, value) != var.dtype:
        try:
            shown = value.numpy()
        except AttributeError:        # a Python scalar, or a traced tensor
            shown = value
        raise TypeError(
            f"Variable dtype is immutable. Calling {op} of Variable (with "
            f"dtype {var.dtype}) on {shown} requires converting {shown} to "
            f"{var.dtype}. This is disabled in the current promotion "
            f"semantics. Please convert {shown} manually before calling "
            f"{op}.")
    if dt is None:
        return value                  # a Python scalar converts as ever
    from ...ops import math_ops
    return math_ops.cast(value, var.dtype)
