"""An element or none: what an iterator's get_next_as_optional() gives
(TF's tf.experimental.Optional), in eager code."""
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
        from ..ops.constant_op import constant
        return constant(self._has)

    def get_value(self, name=None):
        if not self._has:
            raise _errors.InvalidArgumentError(
                None, None, "The given optional does not have a value. "
                "[Op:OptionalGetValue]")
        return self._value
