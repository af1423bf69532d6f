"""TF's new type promotion: experimental_enable_numpy_behavior(
dtype_conversion_mode="all" | "safe").

TF 2.21 promotes along a lattice (JAX's): Python scalars are weak (i*,
f*, c*) and sit below every dtype of their kind, and integers meet
floats at f*, so int32 + float16 is float16 rather than NumPy's float64.
SAFE mode refuses a promotion that makes a dtype neither input has, or
one that cannot hold every value of an input exactly (int32 + float32).
Both rules were checked against TF 2.21 for every pair of dtypes and
Python scalars (tests/test_tnp_promotion.py holds TF's table).

tfmini has no WeakTensor: a tensor is never weak, so a weak result
(int8 + 1.0 is a weak float64 in TF) comes back as a plain tensor of
that dtype."""
import builtins as _builtins

import numpy as _np

from ... import dtypes as _dtypes

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
# What a weak result is made as; a weak float or complex joined with
# bool alone keeps the Python scalar's own dtype.
_WEAK_RESULT = {"i*": "int32", "f*": "float64", "c*": "complex128"}
_WEAK_ALONE = {"i*": "int32", "f*": "float32", "c*": "complex128"}
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


def _kind(x):
    """x's lattice node: a dtype name, or i*/f*/c* for a Python scalar."""
    if isinstance(x, (_builtins.bool, int, float, complex)) and \
            not isinstance(x, _np.generic):
        if isinstance(x, _builtins.bool):
            return "bool"
        return {int: "i*", float: "f*", complex: "c*"}[type(x)] \
            if type(x) in (int, float, complex) else "f*"
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = _np.asarray(x).dtype
        if isinstance(x, (list, tuple)):
            # Python numbers in a list are weak too (TF: int8 + [1, 2]
            # is int8).
            weak = {"b": "bool", "i": "i*", "u": "i*", "f": "f*",
                    "c": "c*"}.get(dt.kind)
            if weak is not None:
                return weak
    return _dtypes.as_dtype(dt).name


def _describe(k):
    weak = k.endswith("*")
    name = _WEAK_ALONE[k] if weak else k
    return f"({_dtypes.as_dtype(name)}, weak={weak})"


def result_dtype(mode, *args):
    """The dtype (a tfmini DType) args promote to in mode "all" or
    "safe"; TypeError, in TF's words, where SAFE refuses."""
    kinds = [_kind(a) for a in args]
    r = kinds[0]
    for k in kinds[1:]:
        j = _join(r, k)
        if mode == "safe" and not _safe(r, k, j):
            raise TypeError(
                f"In promotion mode PromoMode.SAFE, implicit dtype promotion"
                f" between {_describe(r)} and {_describe(k)} is disallowed."
                f" You need to explicitly specify the dtype in your op, or "
                f"relax your dtype promotion rules (such as from SAFE mode "
                f"to ALL mode).")
        r = j
    if r.endswith("*"):
        alone = all(k in ("bool", r) for k in kinds)
        r = (_WEAK_ALONE if alone else _WEAK_RESULT)[r]
    return _dtypes.as_dtype(r)


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


def promote_operands(mode, x, y):
    """x and y cast to their promoted dtype, for tf.add & co. Operands of
    a dtype outside the lattice (strings, ...) are left to the op."""
    dx, dy = getattr(x, "dtype", None), getattr(y, "dtype", None)
    if dx is not None and dx == dy:
        return x, y                   # the common case: nothing to do
    try:
        kinds = (_kind(x), _kind(y))
    except (TypeError, ValueError):
        return x, y
    if any(k not in _EDGES for k in kinds):
        return x, y
    dt = result_dtype(mode, x, y)
    from ...ops import constant_op, math_ops
    out = []
    for v, d in ((x, dx), (y, dy)):
        if d is None:
            v = constant_op.constant(v, dt)
        elif _dtypes.as_dtype(d) != dt:
            v = math_ops.cast(v, dt)
        out.append(v)
    return tuple(out)
