"""WeakTensor: TF's weakly typed tensors, in dtype_conversion_mode "all"
and "safe" only.

A Python scalar (or a nested list of them) made a tensor without a
dtype is weak: tf.constant(1.2) is a weak float32, which yields to the
other operand's dtype (weak float32 + float16 is float16). Ops on only
weak inputs give weak results; promotion.py says which.

Note [One weak flag]: a tensor is weak when its class is
EagerWeakTensor (GraphWeakTensor while tracing; TF's names), a subclass
of the plain class with no slots of its own. Marking a fresh result is
one `__class__` store; the C object, the dispatcher and every fast path
stay as they are. So the C core never sees weakness (no header, no
field), and the legacy mode, which never makes a weak tensor, pays
nothing. TF's WeakTensor is an extension type that is not a tf.Tensor;
ours is one, so every tfmini function takes it. Weak results come from
the wrappers here, which `install` puts in tf's namespaces (as TF
patches its own) while a new mode is on and `uninstall` takes out
again."""
import builtins as _builtins

import numpy as _np

from ... import _C, _tensor
from ..._opids import ID as _ID
from ...ops import array_ops as _A
from ...ops import constant_op as _constant_op
from ...ops import math_ops as _M
from . import promotion as _P

_state = {"mode": "legacy"}


def _weak_repr(base):
    def __repr__(self):
        return base.__repr__(self)[:-1] + ", weak=True>"

    def __str__(self):
        return base.__str__(self)[:-1] + ", weak=True)"
    return __repr__, __str__


class EagerWeakTensor(_tensor.EagerTensor):
    """A weak tf.Tensor: see Note [One weak flag]."""

    __slots__ = ()
    _weak = True
    __repr__, __str__ = _weak_repr(_tensor.EagerTensor)

    def __neg__(self):
        return mark(_tensor.EagerTensor.__neg__(self))

    def __abs__(self):
        return mark(_tensor.EagerTensor.__abs__(self))

    def __invert__(self):
        return mark(_tensor.EagerTensor.__invert__(self))


class GraphWeakTensor(_tensor.SymbolicTensor):
    """A weak tensor of a graph being traced."""

    __slots__ = ()
    _weak = True
    __repr__, __str__ = _weak_repr(_tensor.SymbolicTensor)
    __neg__ = EagerWeakTensor.__neg__
    __abs__ = EagerWeakTensor.__abs__
    __invert__ = EagerWeakTensor.__invert__


_WEAK_OF = {_tensor.EagerTensor: EagerWeakTensor,
            _tensor.SymbolicTensor: GraphWeakTensor}


def is_weak(x):
    return getattr(x, "_weak", False)


def mark(t, weak=True):
    """t made weak, in place: only ever called on a fresh op result."""
    if weak and type(t) in _WEAK_OF and \
            t.dtype.name in _P._WEAK_KIND:
        t.__class__ = _WEAK_OF[type(t)]
    return t


def strong(t):
    """t, or a strong tensor of t's value where t is weak."""
    return _A.identity(t) if is_weak(t) else t


def _fresh(out, *inputs):
    # An op may hand an input back (a no-op cast): mark a new object.
    return _A.identity(out) if any(out is x for x in inputs) else out


def _to(x, dtype):
    if isinstance(x, _tensor.Tensor):
        return x if x.dtype == dtype else _M.cast(x, dtype)
    if hasattr(x, "_as_tensor"):          # Variables
        return _to(x._as_tensor(), dtype)
    return _constant_op.constant(x, dtype)


# ---- the binary ops: tf.add & co. and the operators ----------------------

def promote(x, y):
    """x and y as their promoted dtype, and whether the result is weak.
    Operands outside the lattice (strings, ...) are left to the op."""
    if isinstance(x, _tensor.Tensor) and isinstance(y, _tensor.Tensor) \
            and x._dtype_enum == y._dtype_enum:
        return x, y, is_weak(x) and is_weak(y)
    try:
        px, py = _P._pair(x), _P._pair(y)
    except (TypeError, ValueError):
        return x, y, False
    if _P._node(px) not in _P._EDGES or _P._node(py) not in _P._EDGES:
        return x, y, False
    dt, weak = _P.join_pairs(_state["mode"], (px, py))
    return _to(x, dt), _to(y, dt), weak


# The binary ops whose result is weak where the promotion is (TF's list;
# tf.maximum, tf.math.squared_difference and comparisons are strong).
_KEEPS_WEAK = frozenset(_ID[n] for n in (
    "AddV2", "Sub", "Mul", "RealDiv", "DivNoNan", "FloorDiv", "FloorMod",
    "TruncateDiv", "TruncateMod", "Pow", "MulNoNan") if n in _ID)


def binary(op, x, y):
    """math_ops' binary op `op` on promoted operands (the hook that
    experimental_enable_numpy_behavior sets in math_ops)."""
    a, b, weak = promote(x, y)
    out = _M._C.binary(op, a, b)
    return mark(_fresh(out, a, b)) if weak and op in _KEEPS_WEAK else out


def _binary_fn(fn):
    """fn(x, y) (tf.math.truediv, tf.matmul, ...) on promoted operands,
    weak where both are."""
    def wrapper(x, y, *args, **kwargs):
        if _state["mode"] == "legacy":    # a reference kept from before
            return fn(x, y, *args, **kwargs)
        a, b, weak = promote(x, y)
        out = fn(a, b, *args, **kwargs)
        return mark(_fresh(out, a, b)) if weak else out
    wrapper.__name__ = wrapper.__qualname__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper


def weak_where_promoted(fn):
    """fn(x, y) weak where both operands are (tnp.matmul), in the new
    modes; in the legacy mode fn as it is."""
    def wrapper(x, y):
        out = fn(x, y)
        if _state["mode"] == "legacy":
            return out
        weak = _P.result_pair(_state["mode"], x, y)[1]
        return mark(_fresh(out, x, y), weak)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _flip(fn):
    return lambda a, b: fn(b, a)


def _equality(base):
    """== or != in the new modes: numbers promote by the lattice first,
    as TF's tensor_equals does (int32 tensor == 1.0 is [True, False] for
    [1, 2], where the C comparison alone found 1.0 no int32 and said
    False); then the C comparison (shapes that do not broadcast compare
    unequal, None and foreign objects are simply not equal)."""
    def op(x, y):
        if y is not None:
            x, y, _ = promote(x, y)
        return base(x, y)
    return op


def operators():
    """Tensor's operator methods in the new modes: TF's math ops (which
    promote and keep weakness), not tf.experimental.numpy's."""
    truediv = _binary_fn(_M.truediv)
    from ...ops import linalg_ops
    matmul = _binary_fn(linalg_ops.matmul)
    out = {}
    for name, fn in {"add": _M.add, "sub": _M.subtract,
                     "mul": _M.multiply, "truediv": truediv,
                     "floordiv": _M.floordiv, "mod": _M.floormod,
                     "pow": _M.pow, "matmul": matmul}.items():
        out[f"__{name}__"] = fn
        out[f"__r{name}__"] = _flip(fn)
    out["__eq__"] = _equality(_C.TensorBase.__eq__)
    out["__ne__"] = _equality(_C.TensorBase.__ne__)
    return out


# ---- ops of one operand, and tf.constant ---------------------------------

def _unary_fn(fn, dtype_at=None):
    """fn(x, ...) weak where x is weak: a WeakTensor, a Python number or a
    list of them (converted as TF's weak dtypes). A strong x, or a dtype
    argument (keyword, or positional at dtype_at), runs fn as it is."""
    def wrapper(*args, **kwargs):
        if not args or kwargs.get("dtype") is not None or \
                _state["mode"] == "legacy" or \
                dtype_at is not None and len(args) > dtype_at and \
                args[dtype_at] is not None:
            return fn(*args, **kwargs)
        x = args[0]
        if isinstance(x, _tensor.Tensor):
            if not is_weak(x):
                return fn(*args, **kwargs)
            return mark(_fresh(fn(*args, **kwargs), x))
        try:
            dt, weak = _P.result_pair(_state["mode"], x)
        except (TypeError, ValueError):
            return fn(*args, **kwargs)
        if not weak:
            return fn(*args, **kwargs)
        x = _to(x, dt)
        return mark(_fresh(fn(x, *args[1:], **kwargs), x))
    wrapper.__name__ = wrapper.__qualname__ = getattr(fn, "__name__", "op")
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper


def _strong_fn(fn):
    """fn whose result is never weak (tf.cast, tf.convert_to_tensor)."""
    def wrapper(*args, **kwargs):
        return strong(fn(*args, **kwargs))
    wrapper.__name__ = wrapper.__qualname__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper


def _constant(fn):
    """tf.constant: a Python value without a dtype is weak, and so is a
    weak tensor; with a dtype the result is strong."""
    def constant(value, dtype=None, shape=None, name=None):
        out = fn(value, dtype, shape, name)
        if _state["mode"] == "legacy":
            return out
        if dtype is not None:
            return strong(out) if out is value or is_weak(out) else out
        if isinstance(value, _tensor.Tensor):
            return out if out is value else mark(out, is_weak(value))
        if isinstance(value, (_np.ndarray, _np.generic)):
            return out
        try:
            weak = _P.result_pair(_state["mode"], value)[1]
        except (TypeError, ValueError):
            return out
        return mark(_fresh(out, value), weak)
    constant.__doc__ = fn.__doc__
    constant.__wrapped__ = fn
    return constant


# TF's lists (tensorflow/python/ops/weak_tensor_ops.py): the ops whose
# result is weak where their input is. tf.nn.relu is not among them.
UNARY = (
    "abs", "negative", "sign", "round", "sigmoid", "log_sigmoid", "ceil",
    "floor", "sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "erf", "erfc", "reciprocal", "reciprocal_no_nan",
    "rint", "square", "real", "imag", "conj", "angle", "softplus",
    "invert", "zeros_like", "ones_like", "clip_by_value", "reduce_sum",
    "reduce_prod", "reduce_mean", "reduce_max", "reduce_min",
    "reduce_std", "reduce_variance", "reduce_logsumexp",
    "reduce_euclidean_norm", "trace", "reshape", "expand_dims", "identity",
    "squeeze", "stop_gradient", "transpose", "matrix_transpose",
)
NN_UNARY = ("sigmoid", "tanh", "softplus", "relu6", "leaky_relu", "gelu",
            "elu", "selu", "softsign", "log_softmax", "swish")
BINARY = ("truediv", "divide", "matmul", "scalar_mul")
STRONG = ("cast", "convert_to_tensor")

_saved = {}


def _namespaces():
    import tfmini
    return (("tf", tfmini, UNARY + BINARY + STRONG + ("constant",)),
            ("math", tfmini.math, UNARY + BINARY),
            ("nn", tfmini.nn, NN_UNARY),
            ("linalg", tfmini.linalg, ("matmul", "matrix_transpose",
                                       "trace")),
            ("bitwise", getattr(tfmini, "bitwise", None), ("invert",)))


def install(mode):
    """The weak wrappers in tf's namespaces, for mode "all" or "safe"."""
    _state["mode"] = mode
    if _saved:
        return
    wrapped = {}
    for label, mod, names in _namespaces():
        if mod is None:
            continue
        for name in names:
            fn = getattr(mod, name, None)
            if fn is None:
                continue
            if id(fn) not in wrapped:
                if name in ("zeros_like", "ones_like"):
                    wrapped[id(fn)] = _unary_fn(fn, dtype_at=1)
                else:
                    make = (_constant if name == "constant" else
                            _binary_fn if name in BINARY else
                            _strong_fn if name in STRONG else _unary_fn)
                    wrapped[id(fn)] = make(fn)
            _saved[(label, name)] = (mod, fn)
            setattr(mod, name, wrapped[id(fn)])


def uninstall():
    """Back to the legacy mode: tf's own functions again."""
    _state["mode"] = "legacy"
    for (_label, name), (mod, fn) in _saved.items():
        setattr(mod, name, fn)
    _saved.clear()


def weak_alone(x):
    """For tf.experimental.numpy: whether a Python value x (no dtype
    given) makes a weak array."""
    return _state["mode"] != "legacy" and \
        not isinstance(x, (_builtins.bool, _np.ndarray, _np.generic,
                           _tensor.Tensor)) and _P._pair(x)[1]
