"""next() inside a tf.function on an iterator made outside it.

Note [Iterators pulled in a graph]: TF reads such an iterator with graph
ops (IteratorGetNext on its resource), so each call of the function
takes the next element. tfmini's graphs hold no iterator resources;
instead next() while tracing becomes one EagerPyFunc node (the
tf.py_function machinery, ops/script_ops.py) that pulls one element from
the Python iterator each time the graph runs, with the dataset's
element_spec as its outputs (unknown dimensions take each element's own
size). The end of the data is TF's OutOfRangeError, raised by the call.
The graph holds that iterator: a call with another iterator traces
again (TF keeps one trace per element spec), and such a graph cannot be
saved. Only elements of plain numeric or bool tensors are pulled this
way; others keep the error that says to iterate inside the function.
"""
from .. import dtypes as _dtypes
from .. import errors as _errors
from .. import nest as _nest


def _plain(spec):
    from ..tensor_spec import TensorSpec
    return (type(spec) is TensorSpec and spec.shape.rank is not None and
            spec.dtype != _dtypes.string)


def pull_spec(iterator):
    """The element_spec an in-graph next() pulls, or None where tfmini
    cannot pull it so."""
    ds = iterator._dataset
    if ds is None:
        return None
    spec = ds.element_spec
    return spec if plain_spec(spec) else None


def plain_spec(spec):
    """Whether spec's leaves are all plain numeric or bool tensors."""
    leaves = _nest._flatten(spec)
    return bool(leaves) and all(_plain(s) for s in leaves)


def traced_next(pull_element, spec):
    """The next element (pull_element() eagerly) as graph tensors: one
    node that pulls it on each run (see Note [Iterators pulled in a
    graph])."""
    from ..ops.script_ops import py_function
    leaves = _nest._flatten(spec)

    def pull():
        try:
            element = pull_element()
        except StopIteration:
            raise _errors.OutOfRangeError(None, None,
                                          "End of sequence") from None
        return _nest._flatten(element)
    name = "IteratorGetNext"
    out = py_function(pull, [], Tout=list(leaves), name=name)
    return _nest._pack(spec, list(out))


def _empty_of(spec):
    """A placeholder of spec's dtype, an unknown dimension 0: what an
    empty Optional's node returns (never handed out: get_value checks)."""
    import numpy as np
    from ..ops.constant_op import constant
    shape = [0 if d is None else d for d in spec.shape.as_list()]
    return constant(np.zeros(shape, spec.dtype.as_numpy_dtype),
                    dtype=spec.dtype)


def traced_optional(pull, spec):
    """get_next_as_optional() in a graph: one node that pulls the next
    element on each run, with a bool saying whether there was one."""
    from ..ops.script_ops import py_function
    from ..tensor_spec import TensorSpec
    from .optional import Optional
    leaves = _nest._flatten(spec)

    def pull_flat():
        try:
            element = pull()
        except StopIteration:
            return [False] + [_empty_of(s) for s in leaves]
        return [True] + _nest._flatten(element)
    out = py_function(pull_flat, [],
                      Tout=[TensorSpec((), _dtypes.bool)] + list(leaves),
                      name="IteratorGetNextAsOptional")
    return Optional(_nest._pack(spec, list(out[1:])), out[0], spec)
