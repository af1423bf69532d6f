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
            from ..context import executing_eagerly
            if not executing_eagerly():
                # In a graph this may be the branch of a tf.cond that
                # never runs (TF's own use: cond(o.has_value(),
                # o.get_value, ...)): the error waits for a run.
                placeholder = self._empty_in_graph()
                if placeholder is not None:
                    return placeholder
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

    def _empty_in_graph(self):
        """get_value of an empty optional in a graph: zeros of the
        element spec through the run-time check (unknown dims as 0, an
        unknown rank as a scalar: never seen, the check raises first);
        None where the spec is not tensors' or its dtype has no zeros
        (strings): get_value then raises while tracing, as before."""
        from .. import nest
        from ..ops.array_ops import zeros
        from ..ops.constant_op import constant
        from ..tensor_spec import TensorSpec
        specs = nest.flatten(self._spec)
        if not specs or not all(isinstance(s, TensorSpec) for s in specs):
            return None
        try:
            value = nest.pack_sequence_as(self._spec, [
                zeros([] if s.shape.rank is None else
                      [d or 0 for d in s.shape.as_list()], s.dtype)
                for s in specs])
        except (TypeError, ValueError):     # no zeros of its dtype
            return None
        return Optional(value, constant(False), self._spec)._checked_value()
