"""OpSpecs for the elementwise family (csrc/ops/ops_elementwise.def)."""
import math

import numpy as np

import tfmini as tf
from tfmini.ops import activation_ops as _act
from tfmini.ops import math_ops as _m   # tf.bitwise.* are gathered from it

from .opspec import FLOATS, OpSpec, away_from_zero, positive, uniform

INTS = ("int8", "uint8", "int16", "int32", "int64")
ALL = FLOATS + INTS
# uint16/32/64 go where TF has kernels for them (not Neg, Abs, Sign,
# SquaredDifference, TruncateMod, Pow).
WIDE_U = ("uint16", "uint32", "uint64")
ALL_U = ALL + WIDE_U
INTS_U = INTS + WIDE_U
WITH_BOOL = ALL + ("bool",)

# Broadcasting cases: equal shapes, scalars (rank 0) on either side, a
# row against a matrix, an outer product, empty tensors, and general
# broadcasts whose inner dims are strided or broadcast.
BROADCAST = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (4,)), ((4,), ()),
             ((), ()), ((4, 1), (1, 5)), ((0, 3), (3,)), ((0,), ()),
             ((3, 0), (1, 1)), ((2, 1, 3), (4, 1)), ((2, 3, 4), (2, 1, 4)),
             ((3, 1), (3, 4))]
# Fewer cases for ops whose loops are the same templates as above.
BROADCAST_SHORT = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (4,)),
                   ((4, 1), (1, 5)), ((0, 3), (3,)), ((2, 1, 3), (4, 1))]
UNARY = [((2, 3),), ((),), ((0, 4),), ((3, 1, 2),)]

# `/` on integers: TF's truediv table (NumPy would give float64 always).
TRUEDIV = {"int8": "float32", "uint8": "float32", "int16": "float32",
           "int32": "float64", "int64": "float64", "uint16": "float32",
           "uint32": "float64", "uint64": "float64"}


def small_ints(lo=-2, hi=2):
    """Small integers in [lo, hi] (as floats for float dtypes; bools as
    x > 0): many equal pairs, for comparisons."""
    def make(rng, shape, dtype):
        x = rng.integers(lo, hi + 1, size=shape)
        if np.dtype(dtype).kind == "b":
            return x > 0
        if np.dtype(dtype).kind == "u":
            x = np.abs(x)
        return x.astype(dtype)
    return make


def full_range():
    """Integers over the dtype's whole range (for bitwise ops)."""
    def make(rng, shape, dtype):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype,
                            endpoint=True)
    return make


def halves(lo=-3.0, hi=3.0):
    """Multiples of 0.5 (ties for rounding); integers for int dtypes."""
    def make(rng, shape, dtype):
        x = np.round(rng.uniform(lo, hi, size=shape) * 2) / 2
        if np.dtype(dtype).kind in "iu":
            x = np.round(x)
        return x.astype(dtype)
    return make


def with_zeros():
    """Small integer-valued numbers with zeros among them."""
    def make(rng, shape, dtype):
        return rng.integers(-2, 3, size=shape).astype(dtype)
    return make


def specials():
    """Finite numbers mixed with NaN and +-inf."""
    def make(rng, shape, dtype):
        x = rng.uniform(-2, 2, size=shape)
        pick = rng.integers(0, 4, size=shape)
        x = np.where(pick == 1, np.nan, x)
        x = np.where(pick == 2, np.inf, x)
        x = np.where(pick == 3, -np.inf, x)
        return x.astype(dtype)
    return make


def divisors():
    """Nonzero values; for unsigned dtypes, positive ones."""
    base = away_from_zero(1.0, 4.0)

    def make(rng, shape, dtype):
        x = base(rng, shape, "float64")
        x = np.where(x < 0, np.floor(x), np.ceil(x))
        if np.dtype(dtype).kind == "u":
            x = np.abs(x)
        return x.astype(dtype)
    return make


def _floordiv_ref(x, y):
    if x.dtype.kind == "f":
        return np.floor(x / y)      # TF: floor(x / y), not Python's divmod
    return np.floor_divide(x, y)


def _truncdiv_ref(x, y):
    if x.dtype.kind == "f":
        return np.trunc(x / y)
    if x.dtype.kind == "u":
        return x // y
    q = np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))
    return (q * np.sign(x.astype(np.int64)) *
            np.sign(y.astype(np.int64))).astype(x.dtype)


def _divide_ref(x, y):
    return np.true_divide(x, y).astype(TRUEDIV.get(x.dtype.name, x.dtype))


def _vectorized(fn):
    f = np.vectorize(fn, otypes=[np.float64])
    return lambda x: f(x.astype(np.float64)).astype(x.dtype)


_erf = _vectorized(math.erf)
_erfc = _vectorized(math.erfc)


def _gelu_ref(x):
    return (0.5 * x * _erfc(-x / np.sqrt(2).astype(x.dtype))).astype(x.dtype)


def _gelu_tanh_ref(x):
    u = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
    return (0.5 * x * (1 + np.tanh(u))).astype(x.dtype)


SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


def _selu_ref(x):
    return np.where(x > 0, SELU_SCALE * x,
                    SELU_SCALE * SELU_ALPHA * np.expm1(x)).astype(x.dtype)


def _relu_grad_ref(g, f):
    with np.errstate(invalid="ignore"):     # NaN features: 0, as TF
        return np.where(f > 0, g, 0).astype(g.dtype)


def zeros_and_specials():
    """Finite numbers mixed with 0, -0, NaN and +-inf (ReluGrad's
    features)."""
    def make(rng, shape, dtype):
        x = rng.uniform(-2, 2, size=shape)
        pick = rng.integers(0, 6, size=shape)
        for k, v in enumerate([0.0, -0.0, np.nan, np.inf, -np.inf], 1):
            x = np.where(pick == k, v, x)
        return x.astype(dtype)
    return make


# ReluGrad takes equal shapes only (as TF).
SAME_SHAPES = [((2, 3), (2, 3)), ((), ()), ((0, 4), (0, 4)),
               ((3, 1, 2), (3, 1, 2))]


def _binary(name, fn, ref, op, dtypes=ALL, shapes=BROADCAST_SHORT, **kw):
    return OpSpec(name, fn, ref, shapes, dtypes, ops=[op], **kw)


def _unary(name, fn, ref, op, dtypes=FLOATS, inputs=None, grad=(0,), **kw):
    return OpSpec(name, fn, ref, UNARY, dtypes,
                  inputs=[inputs] if inputs else None, grad=grad, ops=[op],
                  **kw)


def _cast(to, grad=(), inputs=uniform(-3.0, 3.0)):
    return OpSpec(f"cast_to_{to}", lambda x: tf.cast(x, to),
                  lambda x: x.astype(to), UNARY,
                  WITH_BOOL + ("float16",), inputs=[inputs],
                  grad=grad, ops=["Cast"])


SPECS = [
    # ---- arithmetic ----
    _binary("add", tf.add, np.add, "AddV2", ALL_U, shapes=BROADCAST, grad=(0, 1),
            second_order=True),
    _binary("subtract", tf.subtract, np.subtract, "Sub", ALL_U,
            shapes=BROADCAST,
            grad=(0, 1), second_order=True),
    _binary("multiply", tf.multiply, np.multiply, "Mul", ALL_U,
            shapes=BROADCAST,
            grad=(0, 1), second_order=True),
    _binary("maximum", tf.maximum, np.maximum, "Maximum", ALL_U,
            grad=(0, 1),
            second_order=True),
    _binary("minimum", tf.minimum, np.minimum, "Minimum", ALL_U,
            grad=(0, 1),
            second_order=True),
    _binary("squared_difference", tf.math.squared_difference,
            lambda x, y: np.square(x - y), "SquaredDifference",
            grad=(0, 1), second_order=True),
    _binary("pow", tf.pow, np.power, "Pow", FLOATS,
            inputs=[positive(0.5, 2.0), uniform(-2.0, 2.0)], grad=(0, 1),
            second_order=True),
    _binary("pow_int", tf.pow, np.power, "Pow", INTS,
            inputs=[small_ints(-3, 3), small_ints(0, 4)]),
    _binary("realdiv", tf.realdiv, np.true_divide, "RealDiv", FLOATS,
            inputs=[uniform(), away_from_zero()], grad=(0, 1),
            second_order=True),
    _binary("divide", tf.divide, _divide_ref, "RealDiv", ALL_U,
            inputs=[uniform(-9.0, 9.0), divisors()], grad=(0, 1)),
    _binary("divide_no_nan", tf.math.divide_no_nan, np.true_divide,
            "DivNoNan", FLOATS, inputs=[uniform(), away_from_zero()],
            grad=(0, 1), second_order=True),
    _binary("divide_no_nan_zeros", tf.math.divide_no_nan,
            lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y))
            .astype(x.dtype), "DivNoNan", FLOATS,
            inputs=[uniform(), with_zeros()]),
    _binary("floordiv", tf.math.floordiv, _floordiv_ref, "FloorDiv",
            ALL_U, shapes=BROADCAST, inputs=[uniform(-9.0, 9.0), divisors()]),
    _binary("floormod", tf.math.floormod, np.mod, "FloorMod", ALL_U,
            shapes=BROADCAST, inputs=[uniform(-9.0, 9.0), divisors()],
            grad=(0, 1), second_order=True),
    _binary("truncatediv", tf.truncatediv, _truncdiv_ref, "TruncateDiv",
            ALL_U, inputs=[uniform(-9.0, 9.0), divisors()]),
    _binary("truncatemod", tf.truncatemod, np.fmod, "TruncateMod",
            inputs=[uniform(-9.0, 9.0), divisors()]),
    _binary("atan2", tf.atan2, np.arctan2, "Atan2", FLOATS,
            inputs=[uniform(), away_from_zero()], grad=(0, 1),
            second_order=True),
    # ---- comparisons and logic ----
    _binary("equal", tf.equal, np.equal, "Equal", WITH_BOOL + WIDE_U,
            shapes=BROADCAST, inputs=[small_ints()] * 2),
    _binary("not_equal", tf.not_equal, np.not_equal, "NotEqual",
            WITH_BOOL + WIDE_U,
            inputs=[small_ints()] * 2),
    _binary("less", tf.less, np.less, "Less", ALL_U, inputs=[small_ints()] * 2),
    _binary("less_equal", tf.less_equal, np.less_equal, "LessEqual", ALL_U,
            inputs=[small_ints()] * 2),
    _binary("greater", tf.greater, np.greater, "Greater", ALL_U,
            inputs=[small_ints()] * 2),
    _binary("greater_equal", tf.greater_equal, np.greater_equal,
            "GreaterEqual", ALL_U, inputs=[small_ints()] * 2),
    _binary("logical_and", tf.logical_and, np.logical_and, "LogicalAnd",
            ("bool",), shapes=BROADCAST),
    _binary("logical_or", tf.logical_or, np.logical_or, "LogicalOr",
            ("bool",)),
    _binary("logical_xor", tf.math.logical_xor, np.logical_xor,
            "LogicalXor", ("bool",)),
    _unary("logical_not", tf.logical_not, np.logical_not, "LogicalNot",
           ("bool",), grad=()),
    _binary("bitwise_and", _m.bitwise_and, np.bitwise_and, "BitwiseAnd",
            INTS_U, inputs=[full_range()] * 2),
    _binary("bitwise_or", _m.bitwise_or, np.bitwise_or, "BitwiseOr", INTS_U,
            inputs=[full_range()] * 2),
    _binary("bitwise_xor", _m.bitwise_xor, np.bitwise_xor, "BitwiseXor",
            INTS_U, inputs=[full_range()] * 2),
    _unary("invert", _m.invert, np.invert, "Invert", INTS_U, full_range(),
           grad=()),
    # ---- unary over every numeric dtype ----
    _unary("negative", tf.negative, np.negative, "Neg", ALL,
           second_order=True),
    _unary("abs", tf.abs, np.abs, "Abs", ALL, away_from_zero(),
           second_order=True),
    _unary("sign", tf.sign, np.sign, "Sign", ALL, away_from_zero()),
    _unary("square", tf.square, np.square, "Square", ALL_U,
           second_order=True),
    _unary("round", tf.round, np.round, "Round", ALL_U, halves(), grad=()),
    # ---- float math ----
    _unary("sqrt", tf.sqrt, np.sqrt, "Sqrt", inputs=positive(),
           second_order=True),
    _unary("rsqrt", tf.math.rsqrt, lambda x: 1 / np.sqrt(x), "Rsqrt",
           inputs=positive(), second_order=True),
    _unary("reciprocal", tf.math.reciprocal, np.reciprocal, "Reciprocal",
           inputs=away_from_zero(), second_order=True),
    _unary("exp", tf.exp, np.exp, "Exp", inputs=uniform(-3.0, 3.0),
           second_order=True),
    _unary("expm1", tf.math.expm1, np.expm1, "Expm1", second_order=True),
    _unary("log", tf.math.log, np.log, "Log", inputs=positive(),
           second_order=True),
    _unary("log1p", tf.math.log1p, np.log1p, "Log1p",
           inputs=uniform(-0.5, 2.0), second_order=True),
    _unary("sin", tf.sin, np.sin, "Sin", inputs=uniform(-4.0, 4.0),
           second_order=True),
    _unary("cos", tf.cos, np.cos, "Cos", inputs=uniform(-4.0, 4.0),
           second_order=True),
    _unary("tan", tf.tan, np.tan, "Tan", inputs=uniform(-1.2, 1.2),
           second_order=True),
    _unary("asin", tf.asin, np.arcsin, "Asin", inputs=uniform(-0.9, 0.9),
           second_order=True),
    _unary("acos", tf.acos, np.arccos, "Acos", inputs=uniform(-0.9, 0.9),
           second_order=True),
    _unary("atan", tf.atan, np.arctan, "Atan", second_order=True),
    _unary("sinh", tf.sinh, np.sinh, "Sinh", second_order=True),
    _unary("cosh", tf.cosh, np.cosh, "Cosh", second_order=True),
    _unary("tanh", tf.tanh, np.tanh, "Tanh", inputs=uniform(-4.0, 4.0),
           second_order=True),
    _unary("asinh", tf.asinh, np.arcsinh, "Asinh", second_order=True),
    _unary("acosh", tf.acosh, np.arccosh, "Acosh", inputs=uniform(1.1, 3.0),
           second_order=True),
    _unary("atanh", tf.atanh, np.arctanh, "Atanh",
           inputs=uniform(-0.9, 0.9), second_order=True),
    _unary("sigmoid", tf.sigmoid, lambda x: 1 / (1 + np.exp(-x)), "Sigmoid",
           inputs=uniform(-6.0, 6.0), second_order=True),
    _unary("erf", tf.math.erf, _erf, "Erf", second_order=True),
    _unary("erfc", tf.math.erfc, _erfc, "Erfc", second_order=True),
    _unary("floor", tf.floor, np.floor, "Floor", inputs=halves(), grad=()),
    _unary("ceil", tf.math.ceil, np.ceil, "Ceil", inputs=halves(), grad=()),
    _unary("rint", tf.math.rint, np.rint, "Rint", inputs=halves(), grad=()),
    _unary("is_nan", tf.math.is_nan, np.isnan, "IsNan", inputs=specials(),
           grad=()),
    _unary("is_inf", tf.math.is_inf, np.isinf, "IsInf", inputs=specials(),
           grad=()),
    _unary("is_finite", tf.math.is_finite, np.isfinite, "IsFinite",
           inputs=specials(), grad=()),
    # ---- activations ----
    _unary("relu", tf.nn.relu, lambda x: np.maximum(x, 0).astype(x.dtype),
           "Relu", ALL_U, away_from_zero(), second_order=True),
    _unary("relu6", tf.nn.relu6,
           lambda x: np.clip(x, 0, 6).astype(x.dtype), "Relu6", ALL_U,
           uniform(-8.0, 8.0), second_order=True),
    # Relu's gradient (no public API). The features stay away from the
    # kink so that finite differences see its gradient, 0.
    OpSpec("relu_grad", _act._relu_grad, _relu_grad_ref, SAME_SHAPES, ALL,
           inputs=[uniform(), away_from_zero()], grad=(0, 1),
           ops=["ReluGrad"], second_order=True),
    OpSpec("relu_grad_specials", _act._relu_grad, _relu_grad_ref,
           SAME_SHAPES, FLOATS,
           inputs=[zeros_and_specials(), zeros_and_specials()],
           ops=["ReluGrad"]),
    _unary("elu", tf.nn.elu,
           lambda x: np.where(x > 0, x, np.expm1(x)).astype(x.dtype), "Elu",
           inputs=away_from_zero(0.1, 3.0), second_order=True),
    _unary("selu", tf.nn.selu, _selu_ref, "Selu",
           inputs=away_from_zero(0.1, 3.0), second_order=True),
    _unary("softplus", tf.nn.softplus, lambda x: np.logaddexp(x, 0)
           .astype(x.dtype), "Softplus", inputs=uniform(-30.0, 30.0),
           second_order=True),
    _unary("softsign", tf.nn.softsign, lambda x: x / (1 + np.abs(x)),
           "Softsign", second_order=True),
    _unary("leaky_relu", tf.nn.leaky_relu,
           lambda x: np.where(x > 0, x, 0.2 * x).astype(x.dtype),
           "LeakyRelu", inputs=away_from_zero(0.1, 3.0), second_order=True),
    _unary("leaky_relu_alpha", lambda x: tf.nn.leaky_relu(x, alpha=0.01),
           lambda x: np.where(x > 0, x, 0.01 * x).astype(x.dtype),
           "LeakyRelu", inputs=away_from_zero(0.1, 3.0)),
    _unary("gelu", tf.nn.gelu, _gelu_ref, "Gelu",
           inputs=uniform(-5.0, 5.0), second_order=True),
    _unary("gelu_approximate", lambda x: tf.nn.gelu(x, approximate=True),
           _gelu_tanh_ref, "Gelu", inputs=uniform(-5.0, 5.0),
           second_order=True),
    # ---- cast ----
    _cast("bool"), _cast("int8"), _cast("uint8"), _cast("int16"),
    _cast("int32"), _cast("int64"), _cast("float16"), _cast("float32"),
    _cast("float64", grad=(0,)),
    # Negative floats to unsigned have no C (so no NumPy) meaning: their
    # TF values are checked in test_dtypes_unsigned.py.
    _cast("uint16", inputs=uniform(0.0, 9.0)),
    _cast("uint32", inputs=uniform(0.0, 9.0)),
    _cast("uint64", inputs=uniform(0.0, 9.0)),
    OpSpec("cast_from_unsigned", lambda x: tf.cast(x, "float64"),
           lambda x: x.astype("float64"), UNARY, WIDE_U,
           inputs=[full_range()], ops=["Cast"]),
]

# Composites of the ops above (no C row of their own).
SPECS += [
    OpSpec("clip_by_value", lambda t: tf.clip_by_value(t, 0, 1),
           lambda t: np.clip(t, 0, 1).astype(t.dtype), UNARY, ALL,
           grad=(0,)),
    OpSpec("clip_by_value_tensors", tf.clip_by_value,
           lambda t, lo, hi: np.minimum(np.maximum(t, lo), hi), [
               ((2, 3), (), ()), ((2, 3), (3,), (2, 1)), ((0, 2), (), (2,))],
           FLOATS, inputs=[uniform(-3.0, 3.0), uniform(-2.0, -0.5),
                           uniform(0.5, 2.0)], grad=(0, 1, 2)),
    OpSpec("silu", tf.nn.silu, lambda x: x / (1 + np.exp(-x)), UNARY,
           grad=(0,)),
    OpSpec("log_sigmoid", tf.math.log_sigmoid,
           lambda x: -np.logaddexp(0, -x).astype(x.dtype), UNARY,
           inputs=[uniform(-30.0, 30.0)], grad=(0,)),
    OpSpec("reciprocal_no_nan", tf.math.reciprocal_no_nan,
           lambda x: np.where(x == 0, 0, 1 / np.where(x == 0, 1, x))
           .astype(x.dtype), UNARY, inputs=[with_zeros()]),
]
