"""next() inside a tf.function on an iterator made outside it, and
`for x in dataset` in one (Note [Dataset loops in a graph] below).

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
import contextlib
import threading
import weakref

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


_local = threading.local()
_warned = weakref.WeakSet()


def _reshuffled(ds, depth=0):
    """Whether ds's pipeline, as far as its links show, holds a shuffle
    that gives a new order on each iteration."""
    if depth > 64 or ds is None:
        return False
    if getattr(ds, "_reshuffles", False):
        return True
    parents = [getattr(ds, "_spec_from", None)]
    for attr in ("_mapped_from", "_batched_from", "_padded_from"):
        link = getattr(ds, attr, None)
        parents.append(link[0] if link else None)
    parents += _nest._flatten(getattr(ds, "_zipped_from", None) or [])
    return any(_reshuffled(p, depth + 1) for p in parents)


def warn_unrolled(ds):
    """A `for` loop over ds unrolled while tracing (its elements are not
    plain tensors): the trace holds the elements read now. Where a
    shuffle reorders them on each iteration, say that TF's calls would
    see new orders (from_generator says so for its generator)."""
    if not _reshuffled(ds):
        return
    if ds in _warned:
        return
    _warned.add(ds)
    import logging
    logging.getLogger("tfmini").warning(
        "A shuffled dataset (%s) is iterated while a tf.function is "
        "traced, and tfmini cannot read its elements in the graph (they "
        "are not plain numeric tensors): the loop is unrolled, so every "
        "call of the traced function sees the order read now (TF's "
        "reshuffle on each call).", type(ds).__name__)


def probing():
    """Whether loop_spec reads a dataset's first element now (so that
    from_generator does not warn of an unrolled loop)."""
    return getattr(_local, "probing", False)


def loop_spec(ds):
    """The element_spec of a dataset that a `for` loop while tracing
    reads in the graph (Note [Dataset loops in a graph]), or None where
    the loop unrolls: elements that are not plain tensors, and datasets
    made while tracing whose elements are graph tensors (from the
    function's arguments, say), which only the trace can compute."""
    from .dataset import Dataset
    from .map_trace import known_spec
    if not isinstance(ds, Dataset):
        return None
    spec = known_spec(ds)
    if spec is None:
        try:
            spec = ds.element_spec
        except (ValueError, TypeError):
            return None
    if _unranked(spec):
        spec = _ranked(ds, spec)
    if spec is None or not plain_spec(spec):
        return None
    if getattr(ds, "_made_tracing", False) and \
            not getattr(ds, "_eager_elements", False) and \
            _symbolic_elements(ds):
        return None
    return spec


def _unranked(spec):
    from ..tensor_spec import TensorSpec
    return any(type(s) is TensorSpec and s.shape.rank is None
               for s in _nest._flatten(spec))


def _ranked(ds, spec):
    """spec with an unknown rank made the first element's, its dims
    unknown (from_generator's output_types give no shapes; tfmini's
    graphs need ranks, and an element of another rank is the pull's
    error), or None for an empty dataset. Unrolled, the loop read this
    element at trace time too."""
    from ..tensor_spec import TensorSpec
    with _probing():
        first = next(iter(ds), None)
    if first is None:
        return None
    leaves = _nest._flatten(spec)
    values = _nest._flatten(first)
    if len(values) != len(leaves):
        return None
    out = [TensorSpec([None] * len(v.shape), s.dtype)
           if type(s) is TensorSpec and s.shape.rank is None and
           hasattr(v, "shape") else s for s, v in zip(leaves, values)]
    return _nest._pack(spec, out)


def _symbolic_elements(ds):
    from .._tensor import Tensor
    with _probing():
        try:
            for element in ds:
                return any(isinstance(x, Tensor) and x._symbolic
                           for x in _nest._flatten(element))
        except Exception:       # unrolled, the loop raises it as before
            return True
    return False


@contextlib.contextmanager
def _probing():
    outer = probing()
    _local.probing = True
    try:
        yield
    finally:
        _local.probing = outer


# Note [Dataset loops in a graph]: `for x in dataset` while a tf.function
# traces is a graph while loop over the dataset, as TF's (its AutoGraph
# stages the loop over the dataset's iterator), so each call reads the
# dataset again: a reshuffle, the generator run anew, and a graph whose
# size does not grow with the data. Four EagerPyFunc nodes do it: "open"
# before the loop makes a fresh Python iterator for this run and returns
# a token naming it (so concurrent runs of one graph never share one);
# the loop test pulls the next element into the run's buffer and says
# whether there was one; the body takes it; "close" after the loop
# drops the run. Test and take get the token and the iteration number
# as inputs, and close the loop's final token, so the While orders them.
# A run that ends by an error never closes: at most _OPEN_RUNS runs stay
# open, the oldest dropped first. Under a recording tape the gradient
# reruns the body per iteration (Note [Control flow gradients]): take
# then keeps the run's elements by iteration number, and the rerun gets
# the same one, for the last _KEPT runs.
#
# The loop unrolls at trace time as before where the graph cannot pull:
# elements that are not plain numeric tensors (EagerPyFunc has no string
# outputs), and datasets made while tracing whose elements are graph
# tensors (a map over an argument: loop_spec reads their first element
# to tell). An element spec of unknown rank takes the first element's.
# A dataset from outside the trace is held weakly (an argument keys its
# trace by identity); one made while tracing lives with the graph, and
# its seeded shuffles read their first order on each call, as TF makes
# such a dataset anew on each call.
_OPEN_RUNS = 64
_KEPT = 4


def _bools():
    from ..ops.constant_op import constant
    return constant(True), constant(False)


class _Run:
    __slots__ = ("it", "buf", "taken")

    def __init__(self, it):
        self.it = it
        self.buf = None
        self.taken = None


class DatasetLoop:
    """The nodes of one staged `for x in dataset` (Note [Dataset loops
    in a graph])."""

    def __init__(self, dataset, spec, keep):
        import collections
        # A dataset from outside the trace (an argument keys the trace
        # by identity) is not kept alive by the graph's nodes, which
        # live as long as the process (script_ops' registry).
        self._dataset = (lambda: dataset) if getattr(
            dataset, "_made_tracing", False) else weakref.ref(dataset)
        self._spec = spec
        self._leaves = _nest._flatten(spec)
        self._keep = keep
        self._runs = collections.OrderedDict()
        self._kept = collections.OrderedDict()
        self._lock = threading.Lock()
        self._tokens = iter(range(1, 2**62))

    def open(self):
        """The node that starts a run: an int64 token."""
        import numpy as np
        from ..ops.script_ops import py_function

        def start():
            dataset = self._dataset()
            if dataset is None:
                raise _errors.FailedPreconditionError(
                    None, None, "DatasetLoopOpen: the dataset this `for` "
                    "loop reads was deleted")
            it = iter(dataset)
            with self._lock:
                token = next(self._tokens)
                self._runs[token] = _Run(it)
                while len(self._runs) > _OPEN_RUNS:
                    self._runs.popitem(last=False)
            return np.int64(token)
        return py_function(start, [], Tout=_dtypes.int64,
                           name="DatasetLoopOpen")

    def _run(self, token, what):
        token = int(token)
        with self._lock:
            run = self._runs.get(token) or self._kept.get(token)
        if run is None:
            raise _errors.InvalidArgumentError(
                None, None, f"{what}: the run of this `for` loop over a "
                f"dataset was dropped (more than {_OPEN_RUNS} runs of "
                f"it were open at once)")
        return run

    def has_next(self, token, i):
        """The loop test's node: a bool, the next element buffered."""
        from ..ops.script_ops import py_function
        yes, no = _bools()

        def pull(token, i):
            run = self._run(token, "DatasetLoopHasNext")
            try:
                run.buf = _nest._flatten(next(run.it))
            except StopIteration:
                run.buf = None
                return no
            return yes
        return py_function(pull, [token, i], Tout=_dtypes.bool,
                           name="DatasetLoopHasNext")

    def take(self, token, i):
        """The body's node: the element the test buffered (under a tape,
        element i of the run)."""
        from ..ops.script_ops import py_function

        def get(token, i):
            run = self._run(token, "DatasetLoopTake")
            if run.taken is not None and int(i) < len(run.taken):
                return run.taken[int(i)]
            element, run.buf = run.buf, None
            if element is None:
                raise _errors.InternalError(
                    None, None, "DatasetLoopTake: no element buffered")
            if self._keep:
                if run.taken is None:
                    run.taken = []
                run.taken.append(element)
            return element
        out = py_function(get, [token, i], Tout=list(self._leaves),
                          name="DatasetLoopTake")
        return _nest._pack(self._spec, list(out))

    def close(self, token):
        """The node after the loop that drops the run (kept a while
        under a tape, for the gradient)."""
        from ..ops.script_ops import py_function

        def end(token):
            token = int(token)
            with self._lock:
                run = self._runs.pop(token, None)
                if run is not None and self._keep:
                    run.it = run.buf = None
                    self._kept[token] = run
                    while len(self._kept) > _KEPT:
                        self._kept.popitem(last=False)
            return []
        py_function(end, [token], Tout=[], name="DatasetLoopClose")
