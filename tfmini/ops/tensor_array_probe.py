"""The element shape of a TensorArray carried through a graph loop
before anything was written to it.

Note [TensorArray element shape probe]: in a graph a TensorArray is one
dense buffer [size, *element_shape] (Note [TensorArray in graphs]), so a
loop that carries it must know the element shape when the loop starts.
`ta = tf.TensorArray(tf.float32, size=n)` written only inside the loop
does not say it; TF's TensorArray learns it lazily. tfmini learns it as
AutoGraph learns the type of a variable created in a loop: the body is
traced once into a throwaway sub-graph, with each such TensorArray
replaced by a recorder whose writes note the shape of what they write.
The shape all writes agree on becomes the element shape."""
from .. import _C
from .._tensor import Tensor
from ..tensor_shape import TensorShape


class ProbeFailed(Exception):
    pass


def _recorder_class():
    from .tensor_array import TensorArray

    class Recorder(TensorArray):
        """A stand-in that only records written shapes."""

        def __init__(self, ta):          # noqa: D401 (no TensorArray init)
            self._dtype = ta._dtype
            self._element_shape = ta._element_shape
            self._dynamic_size = ta._dynamic_size
            self._clear_after_read = ta._clear_after_read
            self._infer_shape = ta._infer_shape
            self._read = set()
            self._buffer = None
            self._list = ta._list
            self.shapes = []

        def write(self, index, value, name=None):
            self.shapes.append(self._value(value).shape)
            return self

        def scatter(self, indices, value, name=None):
            self.shapes.append(self._value_rows(value).shape[1:])
            return self

        def unstack(self, value, name=None):
            return self.scatter(None, value)

        def _refuse(self, *args, **kwargs):
            raise ProbeFailed("the loop body reads the TensorArray before "
                              "writing to it")

        read = gather = stack = concat = _refuse

    return Recorder


def _placeholder(x, graph):
    from .constant_op import convert_to_tensor
    if isinstance(x, Tensor) or not hasattr(x, "_spec"):
        t = convert_to_tensor(x)
        return graph.placeholder(t.dtype._enum, t._shape_tuple, "probe")
    return x


def learn_element_shapes(body, structure, leaves, needs):
    """For the leaves (of loop_vars `structure`) at positions `needs`,
    TensorArrays of unknown element shape: trace body once and give each
    the shape its writes agree on. Raises ProbeFailed."""
    from ..nest import _pack as _pack_as
    from .tensor_array import TensorArray
    from ..trace_frames import _suspend_tapes
    recorder = _recorder_class()
    graph = _C.subgraph("tensor_array_probe")
    probes = {}
    args = []
    for k, x in enumerate(leaves):
        if k in needs:
            probes[k] = recorder(x)
            args.append(probes[k])
        elif isinstance(x, TensorArray):
            args.append(x)
        else:
            args.append(None)
    graph.push()
    try:
        args = [a if a is not None else _placeholder(x, graph)
                for a, x in zip(args, leaves)]
        with _suspend_tapes():
            body(*_pack_as(structure, args))
    except ProbeFailed:
        raise
    except (TypeError, ValueError, KeyError, NotImplementedError) as e:
        raise ProbeFailed(f"tracing the body once failed: "
                          f"{type(e).__name__}: {e}") from None
    finally:
        graph.pop()
    for k, p in probes.items():
        if not p.shapes:
            raise ProbeFailed("the loop body does not write to it")
        shape = TensorShape(p.shapes[0])
        for s in p.shapes[1:]:
            s = TensorShape(s)
            if s.rank != shape.rank:
                raise ProbeFailed(f"it is written values of shapes {shape} "
                                  f"and {s}")
            shape = TensorShape([a if a == b else None for a, b in
                                 zip(shape.as_list(), s.as_list())])
        if not shape.is_fully_defined():
            raise ProbeFailed(f"the values written to it have shape "
                              f"{shape}, not fully known")
        leaves[k]._element_shape = leaves[k]._element_shape.merge_with(shape)
