"""tf.Variable: mutable state over the C core (csrc/runtime/variable.c).

The C base (_C.VariableBase) holds the value and implements the
operators: arithmetic on a Variable reads its current value (a read the
gradient tapes see, see Note [Variable ids] in variable.h) and gives a
Tensor. Every op accepts a Variable wherever it accepts a Tensor."""
import enum
import weakref

import numpy as np

from . import _C
from . import dtypes as _dtypes
from . import name_scopes as _name_scope
from . import trace_frames as _trace_frames
from ._tensor import Reference, Tensor, _numpy_text, device_name
from .tensor_shape import TensorShape

__all__ = ["Variable", "VariableSynchronization", "VariableAggregation"]

_ASSIGN, _ASSIGN_ADD, _ASSIGN_SUB = 0, 1, 2

# Set by tfmini.distribute: writes from replica threads of a strategy
# with several replicas combine the replicas' values (its updates.py).
_replica_write = None
# Set by experimental_enable_numpy_behavior(dtype_conversion_mode="all" /
# "safe"): (variable, value, op name) -> the value in the variable's
# dtype, or TF's TypeError (experimental/numpy/promotion.py).
_promote_value = None
_WRITE_NAMES = ("assign", "assign_add", "assign_sub")
# Set by MultiWorkerMirroredStrategy: a new variable takes the chief's
# value on every worker (tfmini/distribute/multi_worker.py).
_on_create = None


class VariableSynchronization(enum.Enum):
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


def _shape_arg(shape, validate_shape):
    """Declared shape for _C: None (any), a tuple with None dims, or
    absent (the initial value's)."""
    if not validate_shape:
        return (None,)
    if shape is None:
        return ()
    s = TensorShape(shape)
    return (None if s.rank is None else tuple(s.as_list()),)


class Variable(_C.VariableBase):
    """A tensor whose value can change: tf.Variable."""

    # NumPy defers to our reflected operators: ndarray + Variable.
    __array_priority__ = 100

    def __new__(cls, *args, **kwargs):
        # As TF: tf.Variable(...) makes a ResourceVariable, a subclass.
        if cls is Variable:
            cls = ResourceVariable
        return super().__new__(cls)

    def __init__(self, initial_value=None, trainable=None,
                 validate_shape=True, caching_device=None, name=None,
                 variable_def=None, dtype=None, import_scope=None,
                 constraint=None,
                 synchronization=VariableSynchronization.AUTO,
                 aggregation=VariableAggregation.NONE, shape=None,
                 experimental_enable_variable_lifting=True):
        if variable_def is not None:
            raise NotImplementedError("tf.Variable(variable_def=...) is a "
                                      "TF1 graph feature; tfmini does not "
                                      "support it")
        if initial_value is None:
            raise ValueError("The `initial_value` arg (`None`) must be "
                             "specified as a `Tensor` or a Python callable "
                             "(such as a tf.initializers object).")
        if constraint is not None and not callable(constraint):
            raise ValueError(f"The `constraint` argument must be a "
                             f"callable. Received: {constraint!r}")
        synchronization = VariableSynchronization(synchronization)
        if synchronization == VariableSynchronization.ON_READ:
            if trainable:
                raise ValueError("Synchronization value can be set to "
                                 "VariableSynchronization.ON_READ only for "
                                 "non-trainable variables. You have "
                                 "specified trainable=True and "
                                 "synchronization=VariableSynchronization."
                                 "ON_READ.")
            trainable = False
        elif trainable is None:
            trainable = True
        enum_ = -1 if dtype is None else _dtypes.as_dtype(dtype)._enum
        # While a tf.function is traced, variables are made eagerly
        # outside its graph (only on the first trace; an initial value
        # computed in the trace is lifted out of it), then captured.
        with _trace_frames._variable_creation_scope():
            if callable(initial_value):
                initial_value = initial_value()
            initial_value = _trace_frames._lift_to_eager(initial_value)
            if isinstance(initial_value, _C.VariableBase):
                initial_value = initial_value._read()
            self._init(initial_value, enum_, bool(trainable),
                       *_shape_arg(shape, validate_shape))
            if _on_create is not None:
                _on_create(self)
        self._name = (_name_scope.current_scope() +
                      (name if name is not None else "Variable") + ":0")
        self._constraint = constraint
        self._synchronization = synchronization
        self._aggregation = VariableAggregation(aggregation)

    # ---- attributes -------------------------------------------------
    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        return _dtypes.from_enum(self._dtype_enum)

    @property
    def shape(self):
        return TensorShape(self._shape_tuple)

    def get_shape(self):
        return self.shape

    @property
    def device(self):
        return device_name(self._device_index)

    @property
    def constraint(self):
        return self._constraint

    @property
    def synchronization(self):
        return self._synchronization

    @property
    def aggregation(self):
        return self._aggregation

    # ---- reading ----------------------------------------------------
    def value(self):
        """The current value, as a Tensor."""
        return self._read()

    def read_value(self):
        """The current value, as a Tensor."""
        return self._read()

    def _as_tensor(self):
        return self._read()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()                    # rank 0: numpy() is a scalar
        a = np.asarray(a, dtype=object if isinstance(a, bytes) else None)
        return a if dtype is None else a.astype(dtype, copy=False)

    # ---- writing ----------------------------------------------------
    def _write(self, value, mode, read_value):
        if _promote_value is not None:
            value = _promote_value(self, value, _WRITE_NAMES[mode])
        if _replica_write is None or \
                not _replica_write(self, value, mode):
            self._assign(value, mode)
        return _UnreadVariable(self) if read_value else None

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Write value (same dtype and shape) into the variable. With
        read_value, returns TF's UnreadVariable: the same variable under
        another face, whose reads see the value at the time of reading."""
        try:
            return self._write(value, _ASSIGN, read_value)
        except ValueError:
            # The core checks the shapes (it knows no variable names); TF
            # words this error in the variable's terms. Only on failure,
            # so the assign path itself pays nothing.
            got = _shape_of(value)
            if got is None or self.shape.is_compatible_with(got):
                raise
            raise ValueError(
                f"Cannot assign value to variable ' {self.name}': Shape "
                f"mismatch.The variable shape {self.shape}, and the "
                f"assigned value shape {got} are incompatible.") from None

    def assign_add(self, delta, use_locking=None, name=None,
                   read_value=True):
        return self._write(delta, _ASSIGN_ADD, read_value)

    def assign_sub(self, delta, use_locking=None, name=None,
                   read_value=True):
        return self._write(delta, _ASSIGN_SUB, read_value)

    # Sparse updates: the functional tf.tensor_scatter_nd_* of the value,
    # assigned back (so they trace, and tapes see an assign).
    def _scatter_nd(self, kind, indices, updates):
        from .ops import array_ops
        fn = getattr(array_ops, "tensor_scatter_nd_" + kind)
        self.assign(fn(self._read(), indices, updates))
        return self

    def scatter_nd_update(self, indices, updates, name=None):
        return self._scatter_nd("update", indices, updates)

    def scatter_nd_add(self, indices, updates, name=None):
        return self._scatter_nd("add", indices, updates)

    def scatter_nd_sub(self, indices, updates, name=None):
        return self._scatter_nd("sub", indices, updates)

    def scatter_nd_min(self, indices, updates, name=None):
        return self._scatter_nd("min", indices, updates)

    def scatter_nd_max(self, indices, updates, name=None):
        return self._scatter_nd("max", indices, updates)

    def sparse_read(self, indices, name=None):
        """The rows of the value at indices (tf.gather along axis 0)."""
        from .ops import array_ops
        return array_ops.gather(self._read(), indices)

    def gather_nd(self, indices, name=None):
        from .ops import array_ops
        return array_ops.gather_nd(self._read(), indices)

    # ---- printing ---------------------------------------------------
    def __repr__(self):
        if not self._initialized:
            return f"<tf.Variable '{self._name}' (uninitialized)>"
        from .context import executing_eagerly
        if not executing_eagerly():
            # As TF: while tracing, a variable's value is not shown.
            return (f"<tf.Variable '{self.name}' shape={self.shape} "
                    f"dtype={self.dtype.name}>")
        return (f"<tf.Variable '{self.name}' shape={self.shape} "
                f"dtype={self.dtype.name}, "
                f"numpy={_numpy_text(self, True)}>")

    __str__ = __repr__

    def __format__(self, spec):
        return format(self._read(), spec)

    # ---- conversions ------------------------------------------------
    def __bool__(self):
        return bool(self._read())

    def __float__(self):
        return float(self._read())

    def __int__(self):
        return int(self._read())

    def __index__(self):
        return self._read().__index__()

    def __complex__(self):
        return complex(self.__float__())

    # No __len__: TF's variables have none (len(v) is a TypeError there,
    # though iterating over v works).

    def __iter__(self):
        return iter(self._read())

    def __hash__(self):
        raise TypeError("Variable is unhashable. Instead, use variable.ref() "
                        f"as the key. (Variable: {self!r})")

    def ref(self):
        """A hashable handle on this variable (for sets and dicts)."""
        return Reference(self)

    experimental_ref = ref

    def __deepcopy__(self, memo):
        with _name_scope.name_scope(""):     # the name is already full
            copy = Variable(self.numpy(), trainable=self.trainable,
                            name=self._name[:-2],
                            constraint=self._constraint,
                            synchronization=self._synchronization,
                            aggregation=self._aggregation,
                            shape=self._shape_tuple)
        memo[id(self)] = copy
        return copy

    def __reduce__(self):
        return _rebuild, (self.numpy(), self.trainable, self._name[:-2])

    # ---- indexing ---------------------------------------------------
    def __getitem__(self, key):
        from .ops import array_ops
        t = array_ops._getitem(self._read(), key)
        return _SlicedValue._wrap(t, self, key)

    def __setitem__(self, key, value):
        raise TypeError(f"'{type(self).__name__}' object does not support "
                        "item assignment: use v[...].assign(value)")

    def __delitem__(self, key):
        raise TypeError(f"'{type(self).__name__}' object does not support "
                        "item deletion")

    # As TF: `v += x` would silently rebind v to a Tensor (the C base has
    # no in-place slots, so Python falls back to +); refuse it instead.
    def __iadd__(self, other):
        _no_inplace("+", "variable.assign_add(value)")

    def __isub__(self, other):
        _no_inplace("-", "variable.assign_sub(value)")

    def __imul__(self, other):
        _no_inplace("*", "var.assign(var * value)")

    def __itruediv__(self, other):
        _no_inplace("/", "var.assign(var / value)")

    def __ipow__(self, other):
        _no_inplace("**", "var.assign(var ** value)")

    def __matmul__(self, other):
        from .ops import linalg_ops
        return linalg_ops.matmul(self, other)

    def __rmatmul__(self, other):
        from .ops import linalg_ops
        return linalg_ops.matmul(other, self)


def _shape_of(value):
    """value's shape as a TensorShape, or None where it has none (a
    ragged list)."""
    shape = getattr(value, "shape", None)
    try:
        return TensorShape(np.shape(value) if shape is None else shape)
    except (TypeError, ValueError):
        return None


def _no_inplace(op, use):
    raise RuntimeError(f"`variable {op}= value` with `tf.Variable`s is not "
                       f"supported. Use `{use}` to modify the variable, or "
                       f"`out = variable {op} value` if you need to get a "
                       "new output Tensor.")


class ResourceVariable(Variable):
    """What tf.Variable(...) makes, as TF names it."""


class _UnreadVariable(Variable):
    """What assign returns (TF's _UnreadVariable): the written variable
    under a second face named 'UnreadVariable'. It shares the variable's
    value; writes go through the variable itself."""

    def __init__(self, parent):
        self._alias(parent)
        self._parent = parent

    @property
    def name(self):
        return "UnreadVariable"

    def __getattr__(self, attr):
        # Python-side state (constraint, aggregation, ...) is the parent's.
        if attr == "_parent":
            raise AttributeError(attr)
        return getattr(self._parent, attr)

    def _write(self, value, mode, read_value):
        return self._parent._write(value, mode, read_value)

    def __reduce__(self):
        return self._parent.__reduce__()


def _rebuild(value, trainable, name):
    with _name_scope.name_scope(""):     # the name is already full
        return Variable(value, trainable=trainable, name=name)


class _SlicedValue(Tensor):
    """v[key]: a Tensor that also knows where it came from, so that
    v[key].assign(x) writes into v (TF's sliced variable assignment).
    Same layout as Tensor; the origin lives in a side table keyed by the
    tensor's identity and dropped with it."""

    __slots__ = ()
    _origins = {}

    @classmethod
    def _wrap(cls, t, var, key):
        t.__class__ = cls
        k = id(t)
        cls._origins[k] = (weakref.ref(var), key)
        weakref.finalize(t, cls._origins.pop, k, None)
        return t

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Write value into the slice of the variable this came from (TF's
        strided-slice assignment), with ops: it works while tracing."""
        import tfmini as tf
        origin = self._origins.get(id(self))
        var = origin[0]() if origin else None
        if var is None:
            raise ValueError("the variable this slice was taken from no "
                             "longer exists")
        from .ops import array_ops
        shape = var._value_shape
        n = int(np.prod(shape)) if shape else 1
        # Where each element of the slice lives in the flat variable.
        pos = array_ops._getitem(tf.reshape(tf.range(n), shape), origin[1])
        value = tf.convert_to_tensor(value, dtype=var.dtype)
        try:
            fits = np.broadcast_shapes(tuple(value.shape),
                                       tuple(pos.shape)) == tuple(pos.shape)
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"Cannot assign a value of shape {value.shape} "
                             f"to a slice of shape {pos.shape} of a "
                             f"variable of shape {var.shape}")
        value = tf.broadcast_to(value, pos.shape)
        new = tf.tensor_scatter_nd_update(tf.reshape(var.read_value(), [n]),
                                          tf.reshape(pos, [-1, 1]),
                                          tf.reshape(value, [-1]))
        var.assign(tf.reshape(new, shape))
        return var if read_value else None
