"""tf.TensorArray: a list of tensors of one dtype, for accumulating
results in loops. tf.cond and tf.while_loop (control_flow_ops.py) carry
it through graph control flow as its dense buffer (Note [TensorArray in
graphs] below)."""
import numpy as np

from .. import dtypes as _dtypes
from .._tensor import Tensor
from ..errors import InvalidArgumentError, OutOfRangeError
from ..tensor_shape import TensorShape

__all__ = ["TensorArray"]


def _is_tensor(x):
    return isinstance(x, Tensor) or (hasattr(x, "_as_tensor") and
                                     not isinstance(x, type))


def _is_variable(x):
    return hasattr(x, "_as_tensor") and not isinstance(x, (Tensor, type))


def _as_tensor(x, dtype=None):
    from .constant_op import convert_to_tensor
    return convert_to_tensor(x, dtype=dtype)


# Note [TensorArray in graphs]: eagerly a TensorArray is a Python list of
# tensors and write() changes it in place (as TF's eager TensorArray). A
# graph loop can only carry tensors, so a TensorArray that is a loop
# variable (or a tf.cond output) becomes one dense tensor, its buffer,
# of shape [size, *element_shape]: reads gather from it and writes are
# functional updates (tensor_scatter_nd_update) returning a new
# TensorArray, which is why code must use the value write() returns. The
# buffer needs the element shape, so such a TensorArray must know it
# (from element_shape= or an earlier write).

class TensorArray:
    """A list of tensors of one dtype, for accumulating results in loops:
    ta = ta.write(i, x); ta.stack()."""

    def __init__(self, dtype, size=None, dynamic_size=None,
                 clear_after_read=None, tensor_array_name=None, handle=None,
                 flow=None, infer_shape=True, element_shape=None,
                 colocate_with_first_write_call=True, name=None):
        if handle is not None:
            raise ValueError("TensorArray handles are not supported in "
                             "tfmini.")
        if size is None:
            raise ValueError("Size must be declared for TensorArrays.")
        self._dtype = _dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = (True if clear_after_read is None
                                  else bool(clear_after_read))
        self._infer_shape = infer_shape
        self._element_shape = TensorShape(element_shape)
        self._read = set()
        self._buffer = None
        self._list = [None] * self._static_int(size, "size")

    # -- state -------------------------------------------------------
    @staticmethod
    def _static_int(x, what):
        if _is_tensor(x):
            t = _as_tensor(x)
            if t._symbolic:
                raise NotImplementedError(
                    f"tfmini: a TensorArray {what} must be known when the "
                    f"function is traced, got the symbolic tensor {t}")
            x = t.numpy()
        return int(x)

    def _spec(self):
        return (self._dtype, self._element_shape, self._dynamic_size,
                self._clear_after_read, self._infer_shape)

    def _dense(self):
        """The buffer [size, *element_shape]: unwritten elements zeros."""
        if self._buffer is not None:
            return self._buffer
        from .array_ops import stack, zeros
        shape = self._element_shape
        if not shape.is_fully_defined():
            raise ValueError(
                f"tfmini: a TensorArray carried through graph control flow "
                f"needs a fully known element shape, got {shape}; pass "
                f"element_shape= to tf.TensorArray or write to it before "
                f"the loop")
        if not self._list:
            return zeros([0] + shape.as_list(), self._dtype)
        return stack([v if v is not None else
                      zeros(shape.as_list(), self._dtype)
                      for v in self._list])

    def _to_components(self):
        return [self._dense()]

    def _component_invariants(self, invariant):
        """Shape invariant of the buffer (invariant, if given, is that of
        the elements)."""
        elem = TensorShape(invariant) if invariant is not None else \
            self._element_shape
        if elem.rank is None:
            elem = self._element_shape
        n = None if self._dynamic_size else len(self)
        return [TensorShape([n] + elem.as_list())]

    @classmethod
    def _from_components(cls, spec, tensors):
        ta = cls.__new__(cls)
        (ta._dtype, ta._element_shape, ta._dynamic_size,
         ta._clear_after_read, ta._infer_shape) = spec
        ta._read = set()
        ta._buffer = tensors[0]
        ta._list = None
        return ta

    def __len__(self):
        if self._buffer is not None:
            n = self._buffer._shape_tuple[0]
            if n is None:
                raise TypeError("The size of this TensorArray is only known "
                                "when the function runs; use size()")
            return n
        return len(self._list)

    # -- attributes ---------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return self._element_shape

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def handle(self):
        return None

    @property
    def flow(self):
        from .constant_op import constant
        return constant(0)

    def identity(self):
        return self

    def __repr__(self):
        return (f"<tf.TensorArray dtype={self._dtype.name} size="
                f"{self.size()} element_shape={self._element_shape}>")

    # -- access -------------------------------------------------------
    def _index(self, index, what):
        if _is_tensor(index):
            t = _as_tensor(index)
            if t._symbolic:
                return t
            index = t.numpy()
        index = int(index)
        if index < 0:
            raise OutOfRangeError(None, None, f"{what} negative indices "
                                  f"(index {index}) is not allowed.")
        return index

    def _value(self, value):
        if isinstance(value, Tensor) or _is_variable(value):
            t = _as_tensor(value)
        else:
            t = _as_tensor(value, dtype=self._dtype)
        if t.dtype != self._dtype:
            raise InvalidArgumentError(
                None, None, f"TensorArray dtype is {self._dtype.name} but "
                f"Op is trying to write dtype {t.dtype.name} ")
        if not self._element_shape.is_compatible_with(t.shape):
            raise ValueError(f"Incompatible shape for value ({t.shape}), "
                             f"expected ({self._element_shape})")
        return t

    def read(self, index, name=None):
        """The element at index (zeros if never written)."""
        i = self._index(index, "Reading from")
        if self._buffer is not None or isinstance(i, Tensor):
            from .array_ops import gather
            return gather(self._dense(), i)
        if i >= len(self._list):
            raise OutOfRangeError(None, None, f"Tried to read from index {i} "
                                  f"but array size is: {len(self._list)} ")
        t = self._list[i]
        if t is None:
            if i in self._read:
                raise InvalidArgumentError(
                    None, None, f"Could not read index {i} twice because it "
                    f"was cleared after a previous read (perhaps try "
                    f"setting clear_after_read = false?)")
            t = self._zeros_element(i)
        if self._clear_after_read:
            self._list[i] = None
            self._read.add(i)
        return t

    def _zeros_element(self, i):
        from .array_ops import zeros
        if not self._element_shape.is_fully_defined():
            raise ValueError(f"Could not read index {i} of a TensorArray "
                             f"whose element shape is not known "
                             f"({self._element_shape}) and that was never "
                             f"written")
        return zeros(self._element_shape.as_list(), self._dtype)

    def write(self, index, value, name=None):
        """Write value at index; returns the TensorArray to use from now
        on (eagerly this one, changed in place)."""
        i = self._index(index, "Writing to")
        if self._buffer is not None or isinstance(i, Tensor):
            value = self._value(value)
            ta = self._dense_write(i, value)
            if self._infer_shape:
                ta._element_shape = ta._element_shape.merge_with(value.shape)
            return ta
        if i >= len(self._list) and not self._dynamic_size:
            raise OutOfRangeError(
                None, None, f"Tried to write to index {i} but array is not "
                f"resizeable and size is: {len(self._list)} ")
        value = self._value(value)
        if self._infer_shape:
            self._element_shape = self._element_shape.merge_with(value.shape)
        if i >= len(self._list):
            self._list.extend([None] * (i - len(self._list) + 1))
        self._list[i] = value
        return self

    def _dense_write(self, i, value):
        from .array_ops import reshape, tensor_scatter_nd_update, expand_dims
        buf = self._dense()
        if isinstance(i, int):
            n = buf._shape_tuple[0]
            if n is not None and i >= n:
                if not self._dynamic_size:
                    raise OutOfRangeError(
                        None, None, f"Tried to write to index {i} but array "
                        f"is not resizeable and size is: {n} ")
                from .array_ops import concat, zeros
                buf = concat([buf, zeros([i - n + 1] + list(
                    buf._shape_tuple[1:]), self._dtype)], 0)
        elif self._dynamic_size:
            raise NotImplementedError(
                "tfmini: writing a dynamic_size TensorArray at an index "
                "known only when the function runs is not supported yet; "
                "give the TensorArray a fixed size")
        idx = reshape(_as_tensor(i, _dtypes.int32) if not isinstance(
            i, Tensor) else i, [1, 1])
        new = tensor_scatter_nd_update(buf, idx, expand_dims(value, 0))
        return TensorArray._from_components(self._spec(), [new])

    def stack(self, name=None):
        """All elements stacked along a new dim 0."""
        if self._buffer is not None:
            return self._buffer
        if not self._list:
            if not self._element_shape.is_fully_defined():
                raise ValueError("Cannot stack an empty TensorArray whose "
                                 "element shape is not known")
        return self._dense()

    def gather(self, indices, name=None):
        """The elements at indices, stacked."""
        from .array_ops import gather, stack
        idx = _as_tensor(indices)
        if self._buffer is not None or idx._symbolic:
            return gather(self._dense(), idx)
        vals = []
        for i in np.asarray(idx.numpy()).reshape(-1):
            i = int(i)
            if i < 0 or i >= len(self._list):
                raise OutOfRangeError(None, None, f"Tried to read from index "
                                      f"{i} but array size is: "
                                      f"{len(self._list)} ")
            v = self._list[i]
            vals.append(v if v is not None else self._zeros_element(i))
        if not vals:
            return self._dense()[:0]
        return stack(vals)

    def concat(self, name=None):
        """The elements concatenated along their dim 0."""
        from .array_ops import concat, reshape
        if self._buffer is not None:
            dims = self._buffer._shape_tuple
            if len(dims) < 2:
                raise InvalidArgumentError(None, None, "Concat saw a scalar "
                                           "shape but requires at least "
                                           "vectors.")
            return reshape(self._buffer, [-1] + list(dims[2:]))
        vals = [v if v is not None else self._zeros_element(i)
                for i, v in enumerate(self._list)]
        for i, v in enumerate(vals):
            if not v._shape_tuple:
                raise InvalidArgumentError(
                    None, None, f"Concat saw a scalar shape at index {i} but "
                    f"requires at least vectors.")
        if not vals:
            return self._dense()
        return concat(vals, 0)

    def unstack(self, value, name=None):
        """Fill the array with value's slices along dim 0."""
        from .array_ops import unstack
        value = self._value_rows(value)
        if self._buffer is not None or value._symbolic:
            n = value._shape_tuple[0]
            if self._buffer is not None and not self._dynamic_size and \
                    n is not None and n > len(self):
                raise ValueError(f"Cannot unstack {n} tensors into a "
                                 f"TensorArray of static size {len(self)} ")
            if self._infer_shape:
                self._element_shape = self._element_shape.merge_with(
                    value.shape[1:])
            return TensorArray._from_components(self._spec(), [value])
        rows = unstack(value)
        if len(rows) > len(self._list) and not self._dynamic_size:
            raise ValueError(f"Cannot unstack {len(rows)} tensors into a "
                             f"TensorArray of static size "
                             f"{len(self._list)} ")
        if self._infer_shape:
            self._element_shape = self._element_shape.merge_with(
                value.shape[1:])
        self._list = list(rows)
        self._read = set()
        return self

    def _value_rows(self, value):
        t = _as_tensor(value) if _is_tensor(value) else \
            _as_tensor(value, self._dtype)
        if t.dtype != self._dtype:
            raise InvalidArgumentError(
                None, None, f"TensorArray dtype is {self._dtype.name} but "
                f"Op is trying to write dtype {t.dtype.name} ")
        if not t._shape_tuple:
            raise ValueError("Cannot unstack a scalar into a TensorArray")
        return t

    def scatter(self, indices, value, name=None):
        """Write value's slices at indices."""
        from .array_ops import unstack
        idx = _as_tensor(indices)
        if idx._symbolic:
            raise NotImplementedError("tfmini: TensorArray.scatter needs "
                                      "indices known when traced")
        ta = self
        for i, row in zip(np.asarray(idx.numpy()).reshape(-1),
                          unstack(self._value_rows(value))):
            ta = ta.write(int(i), row)
        return ta

    def size(self, name=None):
        """The number of elements, as an int32 scalar tensor."""
        from .constant_op import constant
        if self._buffer is not None and self._buffer._shape_tuple[0] is None:
            from .array_ops import shape
            return shape(self._buffer)[0]
        return constant(len(self), _dtypes.int32)

    def close(self, name=None):
        if self._list is not None:
            del self._list[:]
