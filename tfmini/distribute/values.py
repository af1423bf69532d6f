"""Distributed values: ReduceOp, PerReplica, InputContext and the
datasets that hand each replica its slice of a batch."""
import enum

import numpy as np

__all__ = ["ReduceOp", "PerReplica", "InputContext", "InputOptions"]


class ReduceOp(enum.Enum):
    """How values from several replicas combine (tf.distribute.ReduceOp)."""
    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        from ..variables import VariableAggregation
        aggregation = VariableAggregation(aggregation)
        if aggregation == VariableAggregation.SUM:
            return ReduceOp.SUM
        if aggregation == VariableAggregation.MEAN:
            return ReduceOp.MEAN
        raise ValueError(f"Could not convert from `tf.VariableAggregation` "
                         f"{aggregation} to `tf.distribute.ReduceOp` type")


# Note [PerReplica is a namedtuple]: a PerReplica holds one value per
# replica. It is a namedtuple (one class per replica count) so that
# tf.function binds its components as inputs and rebuilds it inside the
# trace: the custom-loop pattern passes a dataset's PerReplica batches
# straight to a traced step. Code here that walks arguments stops at a
# PerReplica (_select) instead of walking into it.
_types = {}


class PerReplica(tuple):
    """One value per replica (tf.distribute's PerReplica)."""
    __slots__ = ()
    _fields = ()

    def __new__(cls, *values):
        if cls is PerReplica:
            if len(values) == 1 and isinstance(values[0], (list, tuple)):
                values = tuple(values[0])
            return _per_replica_type(len(values))(*values)
        return tuple.__new__(cls, values)

    @property
    def values(self):
        return tuple(self)

    def _show(self, fmt):
        inner = ",\n".join(f"  {i}: {fmt(v)}" for i, v in enumerate(self))
        return "PerReplica:{\n" + inner + "\n}"

    def __repr__(self):
        if self and all(_is_spec(v) for v in self):
            # A distributed dataset's element_spec (TF's PerReplicaSpec).
            return "PerReplicaSpec(" + ", ".join(map(repr, self)) + ")"
        return self._show(repr)

    # As TF's: print() shows each value's str, tf.Tensor(...).
    def __str__(self):
        if self and all(_is_spec(v) for v in self):
            return repr(self)
        return self._show(str)


def _is_spec(x):
    from ..tensor_spec import TensorSpec
    return isinstance(x, TensorSpec)


def _per_replica_type(n):
    t = _types.get(n)
    if t is None:
        t = type(f"PerReplica{n}", (PerReplica,),
                 {"__slots__": (), "__module__": __name__,
                  "_fields": tuple(f"replica_{i}" for i in range(n))})
        _types[n] = t
    return t


def _select(x, i):
    """Replica i's view of an argument structure: a PerReplica gives its
    i-th component, containers are walked, anything else is shared."""
    if isinstance(x, PerReplica):
        return x[i]
    t = type(x)
    if t is list:
        return [_select(v, i) for v in x]
    if t is tuple:
        return tuple(_select(v, i) for v in x)
    if t is dict:
        return {k: _select(v, i) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return t(*[_select(v, i) for v in x])
    return x


def _regroup(values):
    """The replicas' results, one structure: leaves that differ become
    PerReplica; a leaf every replica returned identically stays itself."""
    first = values[0]
    t = type(first)
    if not isinstance(first, PerReplica) and all(type(v) is t
                                                 for v in values):
        if t is list or t is tuple:
            if all(len(v) == len(first) for v in values):
                out = [_regroup([v[k] for v in values])
                       for k in range(len(first))]
                return out if t is list else tuple(out)
        if t is dict and all(v.keys() == first.keys() for v in values):
            return {k: _regroup([v[k] for v in values]) for k in first}
    if all(v is first for v in values):
        return first
    return PerReplica(*values)


class InputContext:
    """What an input function needs to know to build its pipeline
    (tf.distribute.InputContext)."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0,
                 num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync

    @property
    def input_pipeline_id(self):
        return self._input_pipeline_id

    @property
    def num_input_pipelines(self):
        return self._num_input_pipelines

    def get_per_replica_batch_size(self, global_batch_size):
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(
                f"The `global_batch_size` {global_batch_size} is not "
                f"divisible by `num_replicas_in_sync` "
                f"{self._num_replicas_in_sync}")
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self):
        return (f"tf.distribute.InputContext(input pipeline id "
                f"{self._input_pipeline_id}, total: "
                f"{self._num_input_pipelines})")


class InputOptions:
    """tf.distribute.InputOptions: accepted; in one process every option
    means the same placement (host memory shared by all replicas)."""

    def __init__(self, experimental_fetch_to_device=None,
                 experimental_replication_mode=None,
                 experimental_place_dataset_on_device=False,
                 experimental_per_replica_buffer_size=1):
        self.experimental_fetch_to_device = experimental_fetch_to_device
        self.experimental_replication_mode = experimental_replication_mode
        self.experimental_place_dataset_on_device = \
            experimental_place_dataset_on_device
        self.experimental_per_replica_buffer_size = \
            experimental_per_replica_buffer_size


def _split_sizes(n, parts):
    """TF's rebatching: a batch of n over parts replicas, as evenly as
    possible, the first replicas taking one more."""
    base, rem = divmod(n, parts)
    return [base + (1 if i < rem else 0) for i in range(parts)]


def _split_batch(element, parts):
    """A global batch (a structure of tensors) as one structure whose
    leaves are PerReplica slices along the batch axis."""
    import tfmini as tf

    def split(t):
        if t is None:
            return None
        if not isinstance(t, tf.Tensor):
            t = tf.convert_to_tensor(t)
        n = t.shape[0] if t.shape.rank else None
        if n is None:
            raise ValueError(f"Cannot split a batch of shape {t.shape} over "
                             f"{parts} replicas: the batch dimension must "
                             f"be known")
        out, start = [], 0
        for size in _split_sizes(n, parts):
            out.append(t[start:start + size])
            start += size
        return PerReplica(*out)
    if parts == 1:
        return tf.nest.map_structure(lambda t: PerReplica(t), element)
    return tf.nest.map_structure(split, element)


class DistributedDataset:
    """strategy.experimental_distribute_dataset(ds): each element is the
    dataset's global batch split along axis 0 into one slice per replica
    (a structure with PerReplica leaves)."""

    def __init__(self, strategy, dataset):
        self._strategy = strategy
        self._dataset = dataset

    def __iter__(self):
        n = self._strategy.num_replicas_in_sync

        def split():
            for element in self._dataset:
                yield _split_batch(element, n)
        return DistributedIterator(split(), self)

    @property
    def element_spec(self):
        """The dataset's spec with each leaf once per replica, in a
        PerReplica (TF's PerReplicaSpec): as a tf.function's
        input_signature it binds the PerReplica batches this yields, and
        the trace sees them as PerReplica again."""
        import tfmini as tf
        spec = getattr(self._dataset, "element_spec", None)
        if spec is None:
            return None
        n = self._strategy.num_replicas_in_sync
        return tf.nest.map_structure(lambda s: PerReplica(*[s] * n), spec)


class DistributedIterator:
    """iter(distributed dataset): next() / get_next() give the replicas'
    slices of the next global batch; get_next_as_optional() an Optional
    of them, empty at the end (eager code)."""

    def __init__(self, it, dataset):
        from .. import _C
        self._it = it
        self._dataset = dataset
        self._traced = _C.tracing()

    def __iter__(self):
        from .. import _C
        if not self._traced and _C.tracing():
            raise NotImplementedError(
                "a Python loop over a distributed iterator made outside a "
                "tf.function, while tracing it, would never end in tfmini "
                "(its graphs have no iterator loop): call next() on it")
        return self

    def __next__(self):
        from .. import _C
        if not self._traced and _C.tracing():
            # Pulled when the graph runs, as tf.data's iterators
            # (data/traced_next.py).
            from ..data import traced_next
            spec = self._dataset.element_spec
            if not traced_next.plain_spec(spec):
                raise NotImplementedError(
                    "next() on a distributed iterator made outside a "
                    "tf.function, while tracing it: tfmini pulls elements "
                    "of plain numeric or bool tensors in a graph, and "
                    "this dataset's are not. Call next() outside and pass "
                    "the element in.")
            return traced_next.traced_next(lambda: next(self._it), spec)
        return next(self._it)

    def get_next(self):
        return self.__next__()

    def get_next_as_optional(self):
        from .. import _C
        from ..data.optional import Optional
        if not self._traced and _C.tracing():
            # Pulled when the graph runs (data/traced_next.py).
            from ..data import traced_next
            spec = self._dataset.element_spec
            if traced_next.plain_spec(spec):
                return traced_next.traced_optional(lambda: next(self._it),
                                                   spec)
        try:
            value = self.__next__()
        except StopIteration:
            return Optional.empty(self._dataset.element_spec)
        return Optional(value, True, self._dataset.element_spec)

    @property
    def element_spec(self):
        return self._dataset.element_spec


class DistributedDatasetsFromFunction:
    """strategy.distribute_datasets_from_function(fn): fn(InputContext)
    builds a per-replica-batched dataset; one process is one input
    pipeline, so the replicas take its consecutive elements in turn."""

    def __init__(self, strategy, dataset_fn):
        self._strategy = strategy
        n = strategy.num_replicas_in_sync
        self._dataset = dataset_fn(InputContext(1, 0, n))

    def __iter__(self):
        import tfmini as tf
        n = self._strategy.num_replicas_in_sync
        it = iter(self._dataset)
        while True:
            group = []
            for _ in range(n):
                try:
                    group.append(next(it))
                except StopIteration:
                    return        # as TF: an incomplete last group is dropped
            yield tf.nest.map_structure(lambda *xs: PerReplica(*xs), *group)


def _concat(values, axis):
    import tfmini as tf
    vals = [tf.convert_to_tensor(v) for v in values]
    if any(v.shape.rank == 0 for v in vals):
        raise ValueError("strategy.gather needs values of rank >= 1, got a "
                         "scalar")
    return tf.concat(vals, axis=axis)


def _is_numpy(x):
    return isinstance(x, (np.ndarray, np.generic))


class _ValueContext:
    """tf.distribute.experimental.ValueContext: which replica a value
    function is making a value for."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self._replica_id = replica_id_in_sync_group
        self._num = num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id

    @property
    def num_replicas_in_sync(self):
        return self._num
