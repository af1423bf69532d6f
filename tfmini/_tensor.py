"""tf.Tensor: the Python face of the C tensor (csrc/python/tensor_type.c).

Arithmetic operators live in C; this class adds what is not on a hot
path: printing, conversions, indexing and TF's attribute names."""
import numpy as np

from . import _C
from . import dtypes as _dtypes
from .errors import OperatorNotAllowedInGraphError
from .tensor_shape import TensorShape

_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def device_name(index):
    if index == 0:
        return _CPU
    return _C.device_name(index)


def _numpy_text(t, is_repr):
    """The value part of str/repr, as TF's numpy_text: NumPy's str, or for
    repr NumPy's repr, except that a scalar shows as the Python value
    (repr(a.item()): numpy=6.0, not numpy=np.float32(6.0))."""
    a = t.numpy()
    if isinstance(a, bytes):            # a string scalar: TF's b'...'
        text = repr(a)
    elif is_repr:
        text = repr(a.item()) if np.ndim(a) == 0 else repr(a)
    else:
        text = str(a)
    if "\n" in text:
        text = "\n" + text
    return text


class Tensor(_C.TensorBase):
    """A multi-dimensional array of one dtype: immutable, on a device."""

    __slots__ = ()

    # ---- attributes -------------------------------------------------
    @property
    def shape(self):
        return TensorShape(self._shape_tuple)

    def get_shape(self):
        return self.shape

    @property
    def dtype(self):
        return _dtypes.from_enum(self._dtype_enum)

    @property
    def device(self):
        if self._symbolic:
            return ""
        return device_name(self._device_index)

    @property
    def name(self):
        if not self._symbolic:
            raise AttributeError("Tensor.name is undefined when eager "
                                 "execution is enabled.")
        from .function import _symbolic_name
        return _symbolic_name(self)

    # ---- printing ---------------------------------------------------
    def __repr__(self):
        if self._symbolic:
            return (f"<tf.Tensor '{self.name}' shape={self.shape} "
                    f"dtype={self.dtype.name}>")
        return (f"<tf.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={_numpy_text(self, True)}>")

    def __str__(self):
        if self._symbolic:
            return (f'Tensor("{self.name}", shape={self.shape}, '
                    f"dtype={self.dtype.name})")
        return (f"tf.Tensor({_numpy_text(self, False)}, shape={self.shape}, "
                f"dtype={self.dtype.name})")

    def __format__(self, spec):
        # As TF: the value's own format (f"{t:.2f}" on a scalar; NumPy's
        # str for f"{t}" on an array).
        if self._symbolic:
            return format(str(self), spec)
        return format(self.numpy(), spec)

    # ---- conversions ------------------------------------------------
    def _eager_only(self, what):
        if self._symbolic:
            raise OperatorNotAllowedInGraphError(
                f"Using a symbolic tf.Tensor as a Python {what} is not "
                "allowed. You can attempt the following resolutions to the "
                "problem: If you are running in Graph mode, use Eager "
                "execution mode or decorate this function with @tf.function "
                "(with autograph=True, the default, Python control flow on "
                "tensors is converted to graph ops).")

    def __dlpack__(self, stream=None, **kwargs):
        from .experimental.dlpack import tensor_dlpack
        return tensor_dlpack(self, stream, **kwargs)

    def __dlpack_device__(self):
        from .experimental.dlpack import tensor_dlpack_device
        return tensor_dlpack_device(self)

    def __array__(self, dtype=None, copy=None):
        self._eager_only("array")
        if copy is False:
            raise ValueError("A tf.Tensor cannot be viewed as a NumPy array "
                             "without a copy (tensors are immutable); use "
                             "np.asarray(t) or memoryview(t)")
        a = self.numpy()                    # rank 0: numpy() is a scalar
        a = np.asarray(a, dtype=object if isinstance(a, bytes) else None)
        return a if dtype is None else a.astype(dtype, copy=False)

    def __bool__(self):
        self._eager_only("bool")
        return bool(self.numpy())

    def __float__(self):
        self._eager_only("float")
        return float(self.numpy())

    def __int__(self):
        self._eager_only("int")
        return int(self.numpy())

    def __index__(self):
        self._eager_only("integer")
        if not self.dtype.is_integer:
            raise TypeError(f"Only integer scalar tensors can be used as an "
                            f"index, got dtype {self.dtype.name}")
        return int(self.numpy())

    def __complex__(self):
        return complex(self.__float__())

    def __len__(self):
        dims = self._shape_tuple
        if not dims:
            raise TypeError("Scalar tensor has no `len()`")
        if dims[0] is None:
            raise TypeError("len is not well defined for a tensor whose "
                            "first dimension is unknown")
        return dims[0]

    def __iter__(self):
        # Not a generator itself: iter(scalar) must fail at once, as in TF.
        dims = self._shape_tuple
        if not dims:
            raise TypeError("Cannot iterate over a scalar tensor.")
        if dims[0] is None:
            raise TypeError("Cannot iterate over a tensor with unknown "
                            "first dimension.")
        return (self[i] for i in range(dims[0]))

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as "
                        "the key.")

    def __setitem__(self, key, value):
        raise TypeError("'Tensor' object does not support item assignment: "
                        "tensors are immutable (use tf.Variable, or "
                        "tf.tensor_scatter_nd_update)")

    def __delitem__(self, key):
        raise TypeError("'Tensor' object does not support item deletion: "
                        "tensors are immutable")

    def __reduce__(self):
        return _rebuild, (self.numpy(),)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def ref(self):
        return Reference(self)

    experimental_ref = ref

    # ---- ops that live in Python modules ----------------------------
    # __getitem__, __matmul__ and __rmatmul__ are installed by
    # tfmini.ops.array_ops and tfmini.ops.linalg_ops when they load (they
    # import this module, so it cannot import them).

    # NumPy defers to our reflected operators: ndarray + Tensor -> Tensor.
    __array_priority__ = 100


def _rebuild(value):
    return _C.constant(value)


class Reference:
    """A hashable handle on a tensor or variable (tensor.ref())."""

    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def deref(self):
        return self._obj

    def __hash__(self):
        return id(self._obj)

    def __eq__(self, other):
        return isinstance(other, Reference) and other._obj is self._obj

    def __repr__(self):
        return f"<Reference wrapping {self._obj!r}>"


class EagerTensor(Tensor):
    """A concrete tensor, as TF names its class: type(t).__name__ is
    'EagerTensor' in eager code and isinstance(t, tf.Tensor) holds."""

    __slots__ = ()


class SymbolicTensor(Tensor):
    """A tensor of a graph being traced (TF's SymbolicTensor)."""

    __slots__ = ()

    @property
    def numpy(self):
        # TF's SymbolicTensor has no numpy at all: hasattr() is False,
        # and code written for TF prints the AttributeError's text.
        raise AttributeError("'SymbolicTensor' object has no attribute "
                             "'numpy'")


# What `type(x) is Tensor` meant before the split: a plain tensor.
PLAIN_TENSOR_TYPES = (EagerTensor, SymbolicTensor)

_C._set_tensor_class(EagerTensor, SymbolicTensor)
