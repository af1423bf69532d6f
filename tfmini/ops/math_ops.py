"""Elementwise math: tf.add, tf.exp, tf.cast, ... (csrc/ops/ops_elementwise.def).

Binary functions take Python scalars and NumPy values like the operators
do: a non-tensor operand adopts the other operand's dtype (`tf.add(x, 1)`
keeps x's dtype; `tf.add(1, 2)` is int32), and two tensors of different
dtypes are an InvalidArgumentError naming the op and both dtypes."""
import numpy as np

from .. import _C
from .. import dtypes as _dtypes
from .._opids import ID
from .._tensor import PLAIN_TENSOR_TYPES as _PLAIN, Tensor
from . import numpy_operands as _numpy_operands

__all__ = [
    # arithmetic
    "add", "subtract", "multiply", "divide", "truediv", "realdiv",
    "truncatediv", "truncatemod", "maximum", "minimum", "pow", "scalar_mul",
    # unary
    "negative", "abs", "sign", "square", "sqrt", "exp", "floor", "round",
    "sigmoid", "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "asinh", "acosh", "atanh",
    # comparisons and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not",
    # dtypes and ranges
    "cast", "saturate_cast", "clip_by_value",
    # several operands
    "add_n",
]

_MATH_ONLY = [
    "floordiv", "floormod", "mod", "divide_no_nan", "squared_difference",
    "expm1", "log", "log1p", "rsqrt", "reciprocal", "reciprocal_no_nan",
    "erf", "erfc", "ceil", "rint", "logical_xor", "is_nan", "is_inf",
    "is_finite", "log_sigmoid",
]

_NAMESPACES = {
    "math": [n for n in __all__
             if n not in ("cast", "saturate_cast", "clip_by_value")]
    + _MATH_ONLY,
    "nn": ["sigmoid", "tanh"],
    "bitwise": ["bitwise_and", "bitwise_or", "bitwise_xor", "invert"],
}


# experimental_enable_numpy_behavior(dtype_conversion_mode="all"/"safe")
# sets this to a function(op, x, y) that runs op on both operands cast to
# TF's promoted dtype and marks weak results (experimental/numpy/
# weak_tensor.py); TF's math ops promote in those modes, not only the
# operators.
_promote_operands = None


def _set_promotion(fn):
    global _promote_operands
    _promote_operands = fn


def _binary(op_name, public, doc):
    op = ID[op_name]

    def f(x, y, name=None):
        if _promote_operands is not None:
            return _promote_operands(op, x, y)
        try:
            return _C.binary(op, x, y)
        except TypeError:
            # A NumPy operand TF would cast (numpy_operands.py).
            out = _numpy_operands.binary(op, x, y)
            if out is None:
                raise
            return out
    f.__name__ = f.__qualname__ = public
    f.__doc__ = doc + f"\n\nThe `{op_name}` op; broadcasts like NumPy."
    return f


def _unary(op_name, public, doc):
    op = ID[op_name]

    def f(x, name=None):
        return _C.unary(op, x)
    f.__name__ = f.__qualname__ = public
    f.__doc__ = doc + f"\n\nThe `{op_name}` op."
    return f


# ---- arithmetic -----------------------------------------------------------

add = _binary("AddV2", "add", "x + y elementwise.")
subtract = _binary("Sub", "subtract", "x - y elementwise.")
multiply = _binary("Mul", "multiply", "x * y elementwise.")
realdiv = _binary("RealDiv", "realdiv",
                  "x / y elementwise, for floating-point x and y.")
divide_no_nan = _binary("DivNoNan", "divide_no_nan",
                        "x / y elementwise, and 0 where y is 0 (floats).")
floordiv = _binary("FloorDiv", "floordiv",
                   "x // y elementwise, rounding toward -infinity (floats: "
                   "floor(x / y)). Integer division by zero is an "
                   "InvalidArgumentError.")
floormod = _binary("FloorMod", "floormod",
                   "x % y elementwise, with the sign of y (Python's %).")
mod = floormod
truncatediv = _binary("TruncateDiv", "truncatediv",
                      "x / y elementwise, rounding toward zero (C's /).")
truncatemod = _binary("TruncateMod", "truncatemod",
                      "x % y elementwise, with the sign of x (C's fmod).")
maximum = _binary("Maximum", "maximum",
                  "max(x, y) elementwise; NaN if either is NaN.")
minimum = _binary("Minimum", "minimum",
                  "min(x, y) elementwise; NaN if either is NaN.")
pow = _binary("Pow", "pow",
              "x ** y elementwise. Integers to negative integer powers are "
              "an InvalidArgumentError.")
squared_difference = _binary("SquaredDifference", "squared_difference",
                             "(x - y) ** 2 elementwise.")
atan2 = _binary("Atan2", "atan2",
                "atan(y / x) elementwise, in the quadrant of (x, y). "
                "Note the order: atan2(y, x).")


def _as_tensor(x, dtype=None, dtype_hint=None):
    from .constant_op import convert_to_tensor
    return convert_to_tensor(x, dtype=dtype, dtype_hint=dtype_hint)


# Where `/` on integers goes (TF's truediv table); None: stays.
_TRUEDIV = {"int8": "float32", "uint8": "float32", "int16": "float32",
            "int32": "float64", "int64": "float64", "uint16": "float32",
            "uint32": "float64", "uint64": "float64"}


def truediv(x, y, name=None):
    """x / y with Python 3 semantics: integers are cast to floats first
    (8 and 16 bit to float32, 32 and 64 bit to float64). x and y must
    have the same dtype (TypeError otherwise)."""
    if (type(x) in _PLAIN and type(y) in _PLAIN and
            x._dtype_enum == y._dtype_enum and x._dtype_enum in _FLOATS):
        return _C.binary(_DIV, x, y)
    x = _as_tensor(x)
    y = _as_tensor(y, dtype_hint=x.dtype)
    if x.dtype != y.dtype:
        raise TypeError(f"`x` and `y` must have the same dtype, got "
                        f"{x.dtype!r} != {y.dtype!r}.")
    if x.dtype.is_bool:
        raise TypeError(f"Invalid dtype {x.dtype!r} in __truediv__")
    to = _TRUEDIV.get(x.dtype.name)
    if to is not None:
        x, y = cast(x, to), cast(y, to)
    return _C.binary(_DIV, x, y)


def divide(x, y, name=None):
    """x / y, exactly as the operator: integers are cast to floats first
    (see truediv); a non-tensor x takes y's dtype."""
    if not isinstance(x, Tensor):
        if hasattr(x, "_as_tensor"):        # Variables and friends
            x = x._as_tensor()
        else:
            y_dtype = getattr(y, "dtype", None) if _is_tensor(y) else None
            x = _as_tensor(x, dtype=y_dtype)
    return x / y


def scalar_mul(scalar, x, name=None):
    """scalar * x, for a scalar (Python number or rank-0 tensor)."""
    s = scalar if _is_tensor(scalar) else None
    if s is not None and s.shape.rank != 0:
        raise ValueError(f"Only scalar multiply works, got shape "
                         f"{s.shape}")
    return _C.binary(_MUL, scalar, x)


def _is_tensor(x):
    return isinstance(x, Tensor) or hasattr(x, "_as_tensor")


_DIV, _MUL, _CAST = ID["RealDiv"], ID["Mul"], ID["Cast"]
_FLOATS = {_dtypes.as_dtype(n)._enum for n in ("float16", "float32",
                                                "float64")}

# ---- unary ------------------------------------------------------------------

negative = _unary("Neg", "negative", "-x elementwise.")
abs = _unary("Abs", "abs", "|x| elementwise.")
sign = _unary("Sign", "sign",
              "-1, 0 or 1 elementwise by the sign of x (NaN stays NaN).")
square = _unary("Square", "square", "x * x elementwise.")
sqrt = _unary("Sqrt", "sqrt", "Square root elementwise (floats).")
rsqrt = _unary("Rsqrt", "rsqrt", "1 / sqrt(x) elementwise (floats).")
reciprocal = _unary("Reciprocal", "reciprocal", "1 / x elementwise (floats).")
exp = _unary("Exp", "exp", "e ** x elementwise (floats).")
expm1 = _unary("Expm1", "expm1", "e ** x - 1 elementwise, exact near 0.")
log = _unary("Log", "log", "Natural logarithm elementwise (floats).")
log1p = _unary("Log1p", "log1p", "log(1 + x) elementwise, exact near 0.")
sin = _unary("Sin", "sin", "Sine elementwise (floats).")
cos = _unary("Cos", "cos", "Cosine elementwise (floats).")
tan = _unary("Tan", "tan", "Tangent elementwise (floats).")
asin = _unary("Asin", "asin", "Arcsine elementwise (floats).")
acos = _unary("Acos", "acos", "Arccosine elementwise (floats).")
atan = _unary("Atan", "atan", "Arctangent elementwise (floats).")
sinh = _unary("Sinh", "sinh", "Hyperbolic sine elementwise (floats).")
cosh = _unary("Cosh", "cosh", "Hyperbolic cosine elementwise (floats).")
tanh = _unary("Tanh", "tanh", "Hyperbolic tangent elementwise (floats).")
asinh = _unary("Asinh", "asinh", "Inverse hyperbolic sine (floats).")
acosh = _unary("Acosh", "acosh", "Inverse hyperbolic cosine (floats).")
atanh = _unary("Atanh", "atanh", "Inverse hyperbolic tangent (floats).")
sigmoid = _unary("Sigmoid", "sigmoid", "1 / (1 + e ** -x) elementwise.")
erf = _unary("Erf", "erf", "The Gauss error function elementwise.")
erfc = _unary("Erfc", "erfc", "1 - erf(x) elementwise, exact for large x.")
floor = _unary("Floor", "floor", "Largest integer <= x elementwise.")
ceil = _unary("Ceil", "ceil", "Smallest integer >= x elementwise.")
rint = _unary("Rint", "rint", "Nearest integer, halves to even.")
round = _unary("Round", "round",
               "Nearest integer elementwise, halves to even (banker's "
               "rounding); integers are returned unchanged.")
is_nan = _unary("IsNan", "is_nan", "Where x is NaN (bool).")
is_inf = _unary("IsInf", "is_inf", "Where x is +-infinity (bool).")
is_finite = _unary("IsFinite", "is_finite",
                   "Where x is neither NaN nor infinite (bool).")


def reciprocal_no_nan(x, name=None):
    """1 / x elementwise, and 0 where x is 0."""
    return _C.binary(ID["DivNoNan"], 1, x)


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return negative(_C.unary(ID["Softplus"], negative(x)))


# ---- comparisons and logic --------------------------------------------------

equal = _binary("Equal", "equal", "x == y elementwise (bool).")
not_equal = _binary("NotEqual", "not_equal", "x != y elementwise (bool).")
less = _binary("Less", "less", "x < y elementwise (bool).")
less_equal = _binary("LessEqual", "less_equal", "x <= y elementwise (bool).")
greater = _binary("Greater", "greater", "x > y elementwise (bool).")
greater_equal = _binary("GreaterEqual", "greater_equal",
                        "x >= y elementwise (bool).")
logical_and = _binary("LogicalAnd", "logical_and", "x AND y (bools).")
logical_or = _binary("LogicalOr", "logical_or", "x OR y (bools).")
logical_xor = _binary("LogicalXor", "logical_xor", "x XOR y (bools).")
logical_not = _unary("LogicalNot", "logical_not", "NOT x (bools).")
bitwise_and = _binary("BitwiseAnd", "bitwise_and", "x & y (integers).")
bitwise_or = _binary("BitwiseOr", "bitwise_or", "x | y (integers).")
bitwise_xor = _binary("BitwiseXor", "bitwise_xor", "x ^ y (integers).")
invert = _unary("Invert", "invert", "~x: flips every bit (integers).")

# ---- dtypes and ranges ------------------------------------------------------


def cast(x, dtype, name=None):
    """x as dtype. Floats to integers truncate toward zero; anything to
    bool is `x != 0`. A tensor that already has dtype is returned as is."""
    if type(dtype) is not _dtypes.DType:
        dtype = _dtypes.as_dtype(dtype)
    enum = dtype._enum
    if isinstance(x, Tensor):
        x_enum = x._dtype_enum
        if x_enum == enum:
            return x
        if x_enum in _COMPLEX_ENUMS and enum not in _COMPLEX_ENUMS:
            _warn_complex_cast(x, dtype)
    return _C.call(_CAST, (x,), None, None, None, enum)


# An enum set: from_enum(...).is_complex cost a third of a tiny cast.
_COMPLEX_ENUMS = frozenset((_dtypes.complex64._enum,
                            _dtypes.complex128._enum))


def _warn_complex_cast(x, dtype):
    import logging
    logging.getLogger("tfmini").warning(
        "You are casting an input of type %s to an incompatible dtype %s.  "
        "This will discard the imaginary part and may not be what you "
        "intended.", x.dtype.name, dtype.name)


def _bound_in(value_dtype, limit, below):
    """limit (a Python number) as a value_dtype number that does not
    exceed it (below=False: not above it; below=True: not under it)."""
    b = np.array(limit).astype(value_dtype.as_numpy_dtype)
    if value_dtype.is_floating:
        exact = float(b)
        if (not below and exact > limit) or (below and exact < limit):
            b = np.nextafter(b, b.dtype.type(np.inf if below else -np.inf))
    return b


def saturate_cast(value, dtype, name=None):
    """cast(value, dtype), with values first clamped to dtype's range so
    that nothing wraps around."""
    value = _as_tensor(value)
    dtype = _dtypes.as_dtype(dtype)
    vd = value.dtype
    if not dtype.is_bool and not vd.is_bool:
        # Floats to integers clamp even when the float type's finite range
        # fits: +-inf would otherwise cast to INT_MIN. TF 2.21 clamps them
        # to the float type's largest finite value (float16 inf -> 65504).
        to_int = vd.is_floating and dtype.is_integer
        # As Python numbers: NumPy would compare in the narrower type.
        vmin, vmax, dmin, dmax = (x.item() if hasattr(x, "item") else x
                                  for x in (vd.min, vd.max, dtype.min,
                                            dtype.max))
        if vmin < dmin or to_int:
            value = maximum(value, _bound_in(vd, max(vmin, dmin),
                                             below=True))
        if vmax > dmax or to_int:
            value = minimum(value, _bound_in(vd, min(vmax, dmax),
                                             below=False))
    return cast(value, dtype)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """t with values below clip_value_min raised to it and values above
    clip_value_max lowered to it. The bounds broadcast to t's shape but
    may not enlarge it (ValueError); a bound of another dtype than t is
    a TypeError, as in TF."""
    if not isinstance(t, Tensor):
        t = t._as_tensor() if hasattr(t, "_as_tensor") else _as_tensor(t)
    upper = minimum(t, clip_value_max)
    _check_clip_shape(t, upper)
    out = maximum(upper, clip_value_min)
    _check_clip_shape(t, out)
    return out


def _check_clip_shape(t, result):
    if t._shape_tuple == result._shape_tuple:
        return
    want, got = t.shape, result.shape
    if not want.is_compatible_with(got):
        raise ValueError(f"clip_by_value: the clip values would broadcast "
                         f"t of shape {want} to shape {got}; they must "
                         f"be scalars or broadcast to t's shape")


def add_n(inputs, name=None):
    """The elementwise sum of a list of tensors of one dtype and shape
    (tf.add_n), as a chain of AddV2 (so it traces and differentiates)."""
    if isinstance(inputs, Tensor) or hasattr(inputs, "_as_tensor"):
        inputs = [inputs]
    inputs = list(inputs)
    if not inputs:
        raise ValueError("inputs must be a non-empty list of tensors, got "
                         "an empty list")
    from .constant_op import convert_to_tensor
    ts = [convert_to_tensor(t) for t in inputs]
    first = ts[0]
    for t in ts[1:]:
        if t.dtype != first.dtype or tuple(t.shape) != tuple(first.shape):
            raise ValueError(
                f"AddN: all inputs must have the same dtype and shape, got "
                f"{first.dtype.name}{list(first.shape)} and "
                f"{t.dtype.name}{list(t.shape)}")
    total = ts[0]
    for t in ts[1:]:
        total = add(total, t)
    return total
