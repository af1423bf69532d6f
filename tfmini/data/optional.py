"""An element or none: what an iterator's get_next_as_optional() gives
(TF's tf.experimental.Optional); in a graph its has_value is a tensor
(Note [Iterators pulled in a graph] in traced_next.py)."""
from .. import errors as _errors


class Optional:
    """has_value() is a bool tensor; get_value() the element, or TF's
    InvalidArgumentError when there is none."""

    def __init__(self, value, has_value, element_spec):
        self._value = value
        self._has = has_value
        self._spec = element_spec

    @staticmethod
    def from_value(value):
        from . import dataset as _ds
        from .transforms import _spec_of
        value = _ds._map_structure(_ds._to_tensor, value)
        return Optional(value, True, _ds._map_structure(_spec_of, value))

    @staticmethod
    def empty(element_spec):
        return Optional(None, False, element_spec)

    @property
    def element_spec(self):
        return self._spec

    def has_value(self, name=None):
        from .._tensor import Tensor
        from ..ops.constant_op import constant
        if isinstance(self._has, Tensor):
            return self._has          # known when the graph runs
        return constant(self._has)

    def get_value(self, name=None):
        from .._tensor import Tensor
        if isinstance(self._has, Tensor):
            return self._checked_value()
        if not self._has:
            raise _errors.InvalidArgumentError(
                None, None, "The given optional does not have a value. "
                "[Op:OptionalGetValue]")
        return self._value

    def _checked_value(self):
        """In a graph: the value through a node that raises TF's error
        when the run found none (never the placeholder's zeros)."""
        from .. import nest
        from ..ops.script_ops import py_function
        from ..tensor_spec import TensorSpec
        flat = nest.flatten(self._value)

        def check(has, *values):
            if not bool(has):
                raise _errors.InvalidArgumentError(
                    None, None, "The given optional does not have a "
                    "value.")
            return list(values)
        out = py_function(check, [self._has] + flat,
                          Tout=[TensorSpec(v.shape, v.dtype) for v in flat],
                          name="OptionalGetValue")
        return nest.pack_sequence_as(self._value, list(out))
