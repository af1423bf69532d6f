"""Loop variables first bound inside a loop over tensors (and a `return`
inside one), as TF's AutoGraph handles them.

Note [Variables created in loops]: a graph loop carries values of known
dtype and rank from the start, but `for e in t: last = e` binds `last`
only inside. As TF does (autograph/operators/control_flow.py,
_try_handling_undefineds), the body is traced once beforehand into a
throwaway sub-graph, with the defined loop variables as placeholders, to
learn what the undefined ones become; they then enter the loop as zeros
of that dtype and shape (dims unknown after one iteration enter as 0 and
get a None shape invariant). The loop also carries a flag set by the
body, and a graph assertion fails the call, with TF's message, when the
loop ran zero times and the placeholder zeros would be read. A `return`
inside the loop is the same case: the converted code's return value is
a loop variable undefined before the loop.

While probing, a tensor `if` in the body cannot be staged when a branch
leaves such a variable unbound (the `return` in one branch); both
branches then run inline in the probe graph and the state after it takes
each variable from the branch that bound it (see probe_if)."""
import threading

import numpy as np

from .. import _C
from .._tensor import Tensor
from .. import nest as _nest
from ..ops import control_flow_ops as _cf
from ..tensor_shape import TensorShape

_local = threading.local()


def probing():
    """Whether a loop body is being traced to learn its variables."""
    return getattr(_local, "graph", None) is not None


class _ProbeFailed(Exception):
    pass


def _placeholder_value(like, invariant):
    """(zeros like `like`, shape invariant or None)."""
    if isinstance(like, bool) or isinstance(like, (int, float)):
        return type(like)(), None
    if isinstance(like, (np.generic, np.ndarray)):
        like = _cf._as_tensor(like)
    if hasattr(like, "_as_tensor") and not isinstance(like, (Tensor, type)):
        like = like._as_tensor()
    if isinstance(like, Tensor):
        from ..ops.array_ops import zeros
        shape = TensorShape(invariant) if invariant is not None \
            else like.shape
        if shape.rank is None:
            raise _ProbeFailed(f"its rank is not known after one iteration "
                               f"({like})")
        dims = [0 if d is None else d for d in shape.as_list()]
        dynamic = any(d is None for d in like.shape.as_list())
        return zeros(dims, like.dtype), (shape if dynamic or invariant
                                         is not None else None)
    if _nest.is_nested(like):
        leaves = _nest.flatten(like)
        made = [_placeholder_value(v, None) for v in leaves]
        if any(inv is not None for _, inv in made):
            raise _ProbeFailed("it is a nested structure whose shapes change "
                               "between iterations")
        return _nest._pack(like, [v for v, _ in made]), None
    raise _ProbeFailed(f"it becomes a {type(like).__name__} ({like!r}); "
                       f"a loop can only create Tensor, int, float, bool "
                       f"or a list, tuple or dict of these")


def _probe_input(v, probe):
    """A defined loop variable as the real loop's body will see it: a
    placeholder of its dtype and shape (Python numbers become tensors in
    the loop, so their values must not be seen)."""
    def leaf(x):
        t = None
        if isinstance(x, Tensor):
            t = x
        elif isinstance(x, (bool, int, float, np.generic, np.ndarray)):
            t = _cf._as_tensor(x)
        elif hasattr(x, "_as_tensor") and not isinstance(x, type):
            t = x._as_tensor()
        if t is None or probe is None:
            return x if t is None else t
        return probe.placeholder(t.dtype._enum, t._shape_tuple, "probe")
    return _nest._map(leaf, v)


def handle_undefineds(body, get_state, set_state, init, nulls, invariants,
                      in_block):
    """Stage one iteration of body in a throwaway graph; returns (new
    initial values, shape invariants for them or None per variable) or
    raises _ProbeFailed with the reason. set_state(init) afterwards."""
    from ..trace_frames import _suspend_tapes
    probe = _C.subgraph("loop_probe") if _C.tracing() else None
    inputs = tuple(v if n else _probe_input(v, probe)
                   for v, n in zip(init, nulls))
    outer = getattr(_local, "graph", None)
    _local.graph = probe if probe is not None else True
    try:
        if probe is not None:
            probe.push()
        try:
            with _suspend_tapes():
                set_state(inputs)
                with in_block():
                    body()
                first = tuple(get_state())
        except (UnboundLocalError, TypeError, ValueError, KeyError) as e:
            raise _ProbeFailed(f"{type(e).__name__}: {e}") from None
        finally:
            if probe is not None:
                probe.pop()
    finally:
        _local.graph = outer
        set_state(init)
    new, invs = [], []
    for v, n, f, inv in zip(init, nulls, first, invariants):
        if not n:
            new.append(v)
            invs.append(None)
            continue
        if type(f).__name__ in ("Undefined", "UndefinedReturnValue"):
            raise _ProbeFailed("the loop body does not bind it on every "
                               "path")
        value, extra = _placeholder_value(f, inv)
        new.append(value)
        invs.append(extra)
    return tuple(new), invs


def zero_iterations_message(symbol_names, nulls, init):
    names = ["the function return value"
             if type(v).__name__ == "UndefinedReturnValue" else name
             for name, n, v in zip(symbol_names, nulls, init) if n]
    return (f"loop must iterate at least once to initialize "
            f"{', '.join(names)}")


def _is_unbound(v):
    return type(v).__name__ in ("Undefined", "UndefinedReturnValue")


def _relaxed(a, b):
    """One probe value standing for a or b (a tensor `if`'s output): a
    when they agree, else a placeholder of the shape both fit."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if not (ta and tb) or a.dtype != b.dtype or a.shape == b.shape:
        return a
    sa, sb = a.shape, b.shape
    if sa.rank is None or sb.rank is None or sa.rank != sb.rank:
        dims = None
    else:
        dims = [x if x == y else None
                for x, y in zip(sa.as_list(), sb.as_list())]
    graph = _local.graph
    if graph is True or dims is None:   # no trace (values are real), or
        return a                        # ranks differ: the loop will say
    return graph.placeholder(a.dtype._enum, dims, "probe")


def probe_if(body, orelse, get_state, set_state, nouts, in_block):
    """A tensor `if` met while probing a loop body: both branches inline
    in the probe graph; each variable then comes from the branch that
    bound it (both: a value of the shape both fit)."""
    init = tuple(get_state())
    set_state(init)
    with in_block():
        body()
    main = tuple(get_state())[:nouts]
    set_state(init)
    with in_block():
        orelse()
    alt = tuple(get_state())[:nouts]
    merged = []
    for a, b in zip(main, alt):
        if _is_unbound(a):
            merged.append(b)
        elif _is_unbound(b):
            merged.append(a)
        elif _nest.is_nested(a) and _nest._mismatch(a, b, True) is None:
            merged.append(_nest._pack(a, [
                _relaxed(x, y) for x, y in zip(_nest.flatten(a),
                                               _nest.flatten(b))]))
        else:
            merged.append(_relaxed(a, b))
    set_state(tuple(merged) + init[nouts:])
