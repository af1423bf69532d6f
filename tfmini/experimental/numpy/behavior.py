"""experimental_enable_numpy_behavior: tensors get NumPy's methods, their
operators NumPy's type promotion, and indexing NumPy's advanced indices
(evaluated eagerly: NumPy computes which items, tf.gather takes them, so
gradients flow)."""
import numpy as np

from ... import _tensor
from ...ops import array_ops as _A
from ...ops import constant_op as _C
from ...ops import math_ops as _M

__all__ = ["experimental_enable_numpy_behavior"]

_installed = {}


def _tnp():
    from ... import experimental
    return experimental.numpy


def _is_basic(key):
    items = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice))
               or (isinstance(k, _tensor.Tensor) and k.shape.rank == 0
                   and k.dtype.is_integer)
               for k in items)


def _advanced_getitem(basic):
    def getitem(self, key):
        if _is_basic(key):
            return basic(self, key)
        if self._symbolic:
            raise TypeError("NumPy advanced indexing of a traced tensor: "
                            "use tf.gather or tf.boolean_mask")
        items = key if isinstance(key, tuple) else (key,)
        items = tuple(k.numpy() if isinstance(k, _tensor.Tensor) else k
                      for k in items)
        shape = self.shape.as_list()
        positions = np.arange(int(np.prod(shape)),
                              dtype=np.int64).reshape(shape)[items]
        flat = _A.gather(_A.reshape(self, [-1]),
                         _C.constant(positions.reshape(-1)))
        return _A.reshape(flat, list(positions.shape))
    return getitem


def _numpy_equality(base, tnp):
    """== or != under NumPy behavior ("legacy" mode): numbers promote by
    NumPy's rules first, as TF's tensor_equals does there (int32 [1, 2]
    == 1.0 is [True, False]; the plain comparison found 1.0 no int32 and
    said False); a value NumPy cannot promote with (None, a string, a
    foreign object) or that overflows the promoted dtype goes to the
    plain comparison, which says unequal."""
    def op(x, y):
        try:
            dt = tnp._numpy_result_type(x, y)
        except (TypeError, ValueError):
            return base(x, y)
        if np.dtype(dt).kind not in "biufc":
            return base(x, y)
        try:
            x, y = tnp.asarray(x, dt), tnp.asarray(y, dt)
        except OverflowError:       # uint8 tensor == -1: never equal
            pass
        return base(x, y)
    return op


def _methods(tnp):
    T = _tensor.Tensor
    ops = {"add": tnp.add, "sub": tnp.subtract, "mul": tnp.multiply,
           "truediv": tnp.true_divide, "floordiv": tnp.floor_divide,
           "mod": tnp.mod, "pow": tnp.power, "matmul": tnp.matmul}
    out = {}
    for name, fn in ops.items():
        out[f"__{name}__"] = (lambda f: lambda a, b: f(a, b))(fn)
        out[f"__r{name}__"] = (lambda f: lambda a, b: f(b, a))(fn)
    for name, fn in {"lt": tnp.less, "le": tnp.less_equal,
                     "gt": tnp.greater, "ge": tnp.greater_equal}.items():
        out[f"__{name}__"] = (lambda f: lambda a, b: f(a, b))(fn)
    from ... import _C as _core
    out["__eq__"] = _numpy_equality(_core.TensorBase.__eq__, tnp)
    out["__ne__"] = _numpy_equality(_core.TensorBase.__ne__, tnp)
    out.update({
        "reshape": lambda self, *shape, order="C": tnp.reshape(
            self, shape[0] if len(shape) == 1 else shape),
        "astype": lambda self, dtype: tnp.weak_tensor.strong(
            _M.cast(self, dtype)),
        "ravel": lambda self: tnp.ravel(self),
        "flatten": lambda self: tnp.ravel(self),
        "transpose": lambda self, *axes: tnp.transpose(
            self, axes[0] if len(axes) == 1 else (axes or None)),
        "T": property(lambda self: tnp.transpose(self)),
        "size": property(lambda self: tnp.size(self)),
        "tolist": lambda self: self.numpy().tolist(),
        "clip": lambda self, lo, hi: tnp.clip(self, lo, hi),
        "data": property(lambda self: self),
        "__pos__": lambda self: self,
        # Around the tensor's own __getitem__, never around the one an
        # earlier call installed (each call nested one more wrapper).
        "__getitem__": _advanced_getitem(
            _installed.get("__getitem__") or T.__getitem__),
    })
    # TF 2.21 adds these three reductions, and not sum or prod.
    for name in ("mean", "max", "min"):
        out[name] = (lambda f: lambda self, *a, **k: f(self, *a, **k))(
            getattr(tnp, name))
    return out


def experimental_enable_numpy_behavior(prefer_float32=False,
                                       dtype_conversion_mode="legacy"):
    """Turn on NumPy behavior for all tensors (for the process).
    dtype_conversion_mode "all" or "safe" promotes mixed dtypes by TF's
    lattice (promotion.py) and makes Python values weak tensors
    (weak_tensor.py); "legacy" (and "off") promotes as NumPy does."""
    tnp = _tnp()
    if dtype_conversion_mode not in tnp._promotion.MODES:
        raise ValueError(
            f"The provided promotion mode {dtype_conversion_mode} does not "
            f"exist. Make sure the provided dtype conversion mode is one of "
            f"the followings: 'off', 'legacy', 'safe' or 'all'.")
    tnp._state["mode"] = dtype_conversion_mode
    new = dtype_conversion_mode in ("all", "safe")
    weak = tnp.weak_tensor
    _M._set_promotion(weak.binary if new else None)
    from ... import variables
    variables._promote_value = (
        lambda var, value, op: tnp._promotion.variable_value(
            dtype_conversion_mode, var, value, op)) if new else None
    if new:
        weak.install(dtype_conversion_mode)
    else:
        weak.uninstall()
    tnp._state["prefer_float32"] = bool(prefer_float32)
    tnp._state["enabled"] = True
    T = _tensor.Tensor
    methods = _methods(tnp)
    if new:
        # TF's operators are its math ops here (they promote by the
        # lattice and keep weakness), not tnp's functions.
        methods.update(weak.operators())
    # What an earlier mode installed and this one does not (the new
    # modes' == and !=) is the tensor's own again.
    for name, orig in _installed.items():
        if name not in methods:
            if orig is not None:
                setattr(T, name, orig)
            elif name in T.__dict__:
                delattr(T, name)
    for name, value in methods.items():
        if name not in _installed:
            _installed[name] = T.__dict__.get(name)
        setattr(T, name, value)
    if new:
        # TF compares as ever there: no promotion, Python scalars take
        # the tensor's dtype (float32 > int8 is an error).
        for name in ("__lt__", "__le__", "__gt__", "__ge__"):
            if _installed.get(name) is None:
                delattr(T, name)
            else:
                setattr(T, name, _installed[name])
