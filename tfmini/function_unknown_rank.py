"""The ConcreteFunction of a signature with unknown-rank TensorSpecs:
`f.get_concrete_function(tf.TensorSpec(None, tf.float32))` and
`@tf.function(input_signature=[tf.TensorSpec(None)])`.

Note [Unknown rank]: tfmini's graphs know the rank of every tensor (the
C core's shape inference, fusion and memory plan rely on it), so an
unknown-rank spec is not traced into one graph as TF does. Instead the
user-facing object behaves as TF's and the graphs inside stay
rank-specialized:

- A RankGenericConcreteFunction stands for the unknown-rank signature. Its
  structured_input_signature, printed signature and function_type show the
  spec of unknown rank, and calling it (or the tf.function it came from)
  with tensors of any rank runs the trace for that rank pattern, made on
  first need with every dim None and kept (one graph per rank, like one
  per shape). The C call cache holds those rank traces, never this object.
- TF traces such a signature once: so does experimental_get_tracing_count
  here, and the rank traces are not counted, listed or warned about. Their
  Python side effects (print) do run once per rank: they are real traces.
- get_concrete_function has no tensor to take a rank from: it traces the
  first of PROBE_RANKS that traces without error (all of them failing
  raises the first error).
- Output types: TF infers them with an unknown rank. Here they are the
  outputs of the rank traces made so far, generalized: a dim that differs
  becomes None, a rank that differs makes the spec unknown-rank. x * 2
  then shows shape <unknown>, tf.reduce_sum(x) shape () and tf.shape(x)
  shape (None,), as in TF. When only one rank was traced, asking for the
  output types traces a second one (the next probe rank) first. The
  structured_outputs are TensorSpecs (TF's are symbolic tensors of the
  unknown shape, which a tfmini graph cannot hold).
- A saved model keeps one graph per rank: the ranks traced so far and
  SAVED_RANKS (every unknown-rank argument the same rank; a rank whose
  trace fails is left out). A loaded function called with another rank
  raises a ValueError naming the ranks it has (saved_model/load.py).

The C core could carry an unknown rank only by deferring shape inference
and the memory plan to the first run of each rank, which is what the rank
traces do, with the rank traces cached in Python."""
import weakref

from . import _C
from .function import ConcreteFunction, _strong_objects, _weak_objects
from .tensor_spec import TensorSpec
from .function_structures import (
    _LEAF, _flatten_leaves, _forget_objects, _is_namedtuple, _leaf_spec,
    _map_leaves, _pack_outputs)

__all__ = []

# The rank get_concrete_function traces first (and the one for the second
# trace of the output types), in order of preference: rank 1 and 2 fit
# most code (indexing fails on a scalar), rank 0 comes last.
PROBE_RANKS = (1, 2, 3, 4, 0)
# The ranks a saved model keeps besides those already traced.
SAVED_RANKS = (0, 1, 2, 3, 4)


def has_unknown_rank(canonical):
    return any(isinstance(x, TensorSpec) and x._dims is None
               for x in _flatten_leaves(canonical, []))


def with_ranks(canonical, at, ranks):
    """canonical with its leaves at flat positions `at` replaced by specs
    of these ranks (all dims None), keeping dtype and name."""
    leaves = [_leaf_spec(x) for x in _flatten_leaves(canonical, [])]
    for i, r in zip(at, ranks):
        s = leaves[i]
        leaves[i] = TensorSpec([None] * r, s.dtype, s.name)
    it = iter(leaves)
    return [_map_leaves(lambda _: next(it), v) for v in canonical], leaves


def _rank(x):
    dims = _leaf_spec(x)._dims
    return None if dims is None else len(dims)


def _general(specs):
    """The most specific spec every spec of the list fits (ranks may
    differ)."""
    first = specs[0]
    dims = first._dims
    for s in specs[1:]:
        if dims is None or s._dims is None or len(s._dims) != len(dims):
            return TensorSpec(None, first.dtype)
        dims = [a if a == b else None for a, b in zip(dims, s._dims)]
    return TensorSpec(dims, first.dtype)


class RankGenericConcreteFunction(ConcreteFunction):
    """A ConcreteFunction whose signature has unknown-rank specs (Note
    [Unknown rank]). Made by Function._generic; it runs the rank traces
    of its Function."""

    def __init__(self, function, canonical):
        # Not ConcreteFunction's __init__: there is no graph of its own.
        _C.ConcreteBase.__init__(self)
        # Weakly, as a trace holds nothing of its Function: the Function
        # holds this object, and a cycle would outlive `del f`.
        self._function_ref = weakref.ref(function)
        self._function_name = function._name
        self._binder = function._binder
        # The signature with objects held weakly (traces rebuild it).
        canonical = [_map_leaves(_leaf_spec, v) for v in canonical]
        self._args = [_weak_objects(v) for v in canonical]
        self._canonical_specs = [_forget_objects(v) for v in canonical]
        self._leaf_specs = _flatten_leaves(canonical, [])
        self._unknown = [i for i, s in enumerate(self._leaf_specs)
                         if s._dims is None]
        self._by_rank = {}          # rank pattern -> ConcreteFunction
        self._rank_keys = {}        # rank pattern -> relaxed key
        self._relaxed_key = None
        self._keys = set()

    # ---- the rank traces ----
    def ranks_of(self, leaves):
        """The rank pattern of the leaves at the unknown-rank positions
        (None where a leaf is itself of unknown rank)."""
        return tuple(_rank(leaves[i]) for i in self._unknown)

    def accepts(self, canonical, leaves):
        """Whether a call (or spec) of this structure, these Python values
        and these leaves is one this signature takes."""
        if len(leaves) != len(self._leaf_specs):
            return False
        for i, (spec, leaf) in enumerate(zip(self._leaf_specs, leaves)):
            have = _leaf_spec(leaf)
            if have.dtype != spec.dtype:
                return False
            if spec._dims is not None and (
                    have._dims is None or len(have._dims) != len(spec._dims)
                    or any(w is not None and w != h
                           for w, h in zip(spec._dims, have._dims))):
                return False
        ranks = tuple(0 if r is None else r for r in self.ranks_of(leaves))
        mine = self._rank_keys.get(ranks)
        if mine is None:
            inst, _ = with_ranks(self._strong_args(), self._unknown, ranks)
            mine = self._rank_keys[ranks] = \
                self._owner()._key(inst, True)[0]
        theirs, _ = with_ranks(canonical, self._unknown, ranks)
        return self._owner()._key(theirs, True)[0] == mine

    def _owner(self):
        function = self._function_ref()
        if function is None:
            raise ReferenceError(
                f"ConcreteFunction {self._function_name}: the tf.function "
                f"it came from is gone, so it cannot trace a new rank "
                f"(tfmini traces an unknown-rank signature once per rank)")
        return function

    def _strong_args(self):
        return [_strong_objects(v) for v in self._args]

    def for_ranks(self, ranks):
        """The trace for this rank pattern, traced on first need."""
        c = self._by_rank.get(ranks)
        if c is None:
            c = self._owner()._rank_trace(self, ranks)   # stores it
        return c

    def probe(self, exclude=()):
        """Trace the first rank of PROBE_RANKS (every unknown-rank leaf
        that rank) not in exclude that traces; raise the first error when
        none does."""
        first = None
        for r in PROBE_RANKS:
            ranks = (r,) * len(self._unknown)
            if ranks in exclude:
                continue
            try:
                return self.for_ranks(ranks)
            except Exception as e:      # noqa: BLE001 (re-raised below)
                first = first or e
        if first is None:
            return None
        raise first

    def traces(self):
        return list(self._by_rank.values())

    def saveable_traces(self):
        """The rank traces a saved model keeps (Note [Unknown rank])."""
        for r in SAVED_RANKS:
            try:
                self.for_ranks((r,) * len(self._unknown))
            except Exception:           # noqa: BLE001 (that rank is left out)
                pass
        return sorted(self._by_rank.items())

    def _run(self, leaves):
        leaves = list(leaves)
        return self.for_ranks(self.ranks_of(leaves))._run(leaves)

    @property
    def _last_call(self):
        return max((c._last_call for c in self._by_rank.values()),
                   default=0)

    # ---- what the user sees: the first rank trace's graph, and types
    # generalized over the rank traces ----
    def _first(self):
        return next(iter(self._by_rank.values()))

    @property
    def graph(self):
        return self._first().graph

    @property
    def optimized_graph(self):
        return self._first().optimized_graph

    @property
    def inputs(self):
        return self._first().inputs

    @property
    def outputs(self):
        return self._first().outputs

    @property
    def _out_kind(self):
        return self._first()._out_kind

    @property
    def _out_structure(self):
        return self._first()._out_structure

    def general_output_specs(self):
        """One TensorSpec per flat output, generalized over the rank
        traces (a second one traced first when there is only one)."""
        if len(self._by_rank) < 2:
            try:
                self.probe(exclude=tuple(self._by_rank))
            except Exception:           # noqa: BLE001 (one trace it is)
                pass
        traces = self.traces()
        first = traces[0]
        flats = [[TensorSpec(o._shape_tuple, o.dtype) for o in c.outputs]
                 for c in traces]
        if any(c._out_structure != first._out_structure or
               len(f) != len(flats[0]) for c, f in zip(traces, flats)):
            # Python code that returns a different structure per rank.
            return [TensorSpec(None, s.dtype) for s in flats[0]]
        return [_general(list(col)) for col in zip(*flats)]

    @property
    def structured_outputs(self):
        return _pack_outputs(self._first()._structure_raw,
                             self.general_output_specs())

    def output_specs(self):
        """The structure of the outputs with a TensorSpec per tensor (as
        saved_model/save.py's _output_specs of a plain trace)."""
        it = iter(self.general_output_specs())

        def walk(s):
            if s is _LEAF:
                return next(it)
            t = type(s)
            if t is list or t is tuple:
                return t(walk(v) for v in s)
            if t is dict:
                return {k: walk(v) for k, v in s.items()}
            if _is_namedtuple(s):
                return t(*[walk(v) for v in s])
            return s

        return walk(self._out_structure)
