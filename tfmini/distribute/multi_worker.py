"""MultiWorkerMirroredStrategy: one replica per process (worker), the
workers started by mpirun and synchronized over MPI (collective.py).

Note [Workers are replicas]: each worker runs the same script; strategy.run
calls fn once, in a replica context whose replica_id_in_sync_group is the
worker's task id, and num_replicas_in_sync is the number of workers.
Values from run are this worker's own (its local results, as in TF's
multi-worker strategy with one device per worker); strategy.reduce and
the replica context's all_reduce combine them over MPI. Variables are
per process: a variable created under the strategy starts from the
chief's value (broadcast when made), and since every worker then applies
the same all-reduced gradients they stay equal. Datasets: every worker
reads the same global batches and keeps its slice (experimental_
distribute_dataset), or builds its own pipeline from an InputContext
(distribute_datasets_from_function)."""
import json
import os
import threading

from . import collective
from .replica import (ReplicaContext, _call_merge, _reduce_op,
                      _writes_hooked)
from .strategy import (Strategy, StrategyExtended, _check_replica_counts,
                       _check_run_call)
from .values import InputContext, PerReplica, ReduceOp, _split_sizes


class _Workers:
    """The replica context's group (replica.py tests `_group is not None`
    for "a replica of a multi-replica strategy")."""


class _WorkerReplicaContext(ReplicaContext):
    def __init__(self, strategy):
        super().__init__(strategy, strategy._comm.task_id, _group=_Workers())

    @property
    def devices(self):
        return tuple(self._strategy.extended.worker_devices)

    def all_reduce(self, reduce_op, value, options=None):
        return self._strategy._all_reduce(_reduce_op(reduce_op), value,
                                          options)

    def all_gather(self, value, axis, options=None):
        import tfmini as tf
        comm = self._strategy._comm
        return tf.nest.map_structure(
            lambda t: collective.gather(comm, t, axis), value)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        # One local replica: merge_fn sees this worker's values; its
        # reduce_to / reduce calls combine them over the workers.
        return _call_merge(self._strategy, merge_fn, tuple(args),
                           dict(kwargs or {}))


class _MultiWorkerExtended(StrategyExtended):
    @property
    def should_checkpoint(self):
        return self._strategy._comm.task_id == 0

    @property
    def should_save_summary(self):
        return self._strategy._comm.task_id == 0

    @property
    def _in_multi_worker_mode(self):
        return self._strategy._comm.size > 1

    def update(self, var, fn, args=(), kwargs=None, group=True):
        from .values import _select
        return fn(var, *_select(tuple(args), 0),
                  **_select(dict(kwargs or {}), 0))


class _ClusterResolver:
    """What strategy.cluster_resolver tells a script about its place:
    TF_CONFIG's task type and index when given, else worker <rank>."""

    def __init__(self, comm):
        from .cluster_resolver import ClusterSpec
        self.task_type = comm.task_type
        self.task_id = comm.task_index
        self.rpc_layer = None
        cluster = None
        if os.environ.get("TF_CONFIG"):
            cluster = json.loads(os.environ["TF_CONFIG"]).get("cluster")
        self._spec = ClusterSpec(cluster or {
            "worker": [f"mpi-rank-{r}" for r in range(comm.size)]})

    def cluster_spec(self):
        return self._spec

    def num_accelerators(self, *args, **kwargs):
        return {}


class MultiWorkerMirroredStrategy(Strategy):
    """tf.distribute.MultiWorkerMirroredStrategy over MPI: launch with
    `mpirun -np N python train.py` (Note [Workers are replicas]). A
    TF_CONFIG cluster spec is accepted: its task index is the worker's
    task id (MPI gives the transport). Without mpirun it is one worker."""

    def __init__(self, cluster_resolver=None, communication_options=None):
        from .experimental import CommunicationOptions
        self._comm = comm = collective.get()
        if cluster_resolver is not None:
            mine = (comm.task_type, comm.task_index)
            theirs = (getattr(cluster_resolver, "task_type", None),
                      getattr(cluster_resolver, "task_id", None))
            if None not in theirs and theirs != mine:
                raise ValueError(
                    f"cluster_resolver names task {theirs[0]}:{theirs[1]}, "
                    f"but this process is {mine[0]}:{mine[1]} (from "
                    f"TF_CONFIG, else the MPI rank); MPI is the transport "
                    f"and mpirun starts the tasks")
        opts = communication_options or CommunicationOptions()
        if not isinstance(opts, CommunicationOptions):
            raise ValueError(f"communication_options must be a tf."
                             f"distribute.experimental.CommunicationOptions"
                             f", got {type(opts).__name__}")
        self._timeout = opts.timeout_seconds
        self._bucket_bytes = opts.bytes_per_pack or None
        super().__init__([f"/job:worker/replica:0/task:{comm.task_id}/"
                          f"device:CPU:0"])
        self._extended = _MultiWorkerExtended(self, self._extended._devices)
        self._resolver = _ClusterResolver(comm)
        # Note [Overlapped gradient all-reduce] (overlap.py); False gives
        # the all-at-once all-reduce after the backward pass.
        self._overlap = True
        _install_variable_hook()
        if comm.size > 1:
            from . import overlap
            overlap.install()
            _install_metric_hook()

    @property
    def num_replicas_in_sync(self):
        return self._comm.size

    @property
    def cluster_resolver(self):
        return self._resolver

    # ---- collectives ----------------------------------------------------
    def _overlap_backend(self):
        from . import overlap
        if self._comm.mpi is None or self._comm.size == 1:
            return None
        return overlap.MpiBackend(self._comm, self._comm.timeout
                                  if self._timeout is None
                                  else self._timeout)

    def _all_reduce(self, reduce_op, value, options=None):
        import tfmini as tf
        from . import overlap
        timeout = getattr(options, "timeout_seconds", None) or self._timeout
        flat = tf.nest.flatten(value)
        if not flat:
            return value
        mean_over = self._comm.size if reduce_op == ReduceOp.MEAN else 0
        sums, rest = overlap.take(flat)
        out = [None] * len(flat)
        for i, a in enumerate(sums):
            if a is not None:
                t = a if isinstance(a, tf.Tensor) else \
                    tf.constant(a, dtype=flat[i].dtype)
                out[i] = t / tf.cast(mean_over, t.dtype) if mean_over else t
        if rest:
            fresh = collective.allreduce(
                self._comm, [flat[i] for i in rest], "sum", mean_over,
                timeout, self._bucket_bytes)
            for i, t in zip(rest, fresh):
                out[i] = t
        return tf.nest.pack_sequence_as(value, out)

    # ---- running ----------------------------------------------------------
    def run(self, fn, args=(), kwargs=None, options=None):
        """fn(*args, **kwargs) on this worker's replica. A PerReplica
        argument with one component per worker (or one in all) gives
        this worker's."""
        from .values import _select
        _check_run_call(args)
        kwargs = dict(kwargs or {})
        args, kwargs = self._own_parts((tuple(args), kwargs))
        _check_replica_counts((args, kwargs), 1)
        with self.scope():
            _writes_hooked(+1)
            try:
                with _WorkerReplicaContext(self):
                    return fn(*_select(args, 0), **_select(kwargs, 0))
            finally:
                _writes_hooked(-1)

    def _own_parts(self, x):
        """PerReplica values split over every worker's replica (Keras's
        fit splits a global batch so): this worker's part."""
        n = self._comm.size
        if isinstance(x, PerReplica):
            if len(x) == n and n > 1:
                return PerReplica(x[self._comm.task_id])
            return x
        t = type(x)
        if t is list or t is tuple:
            return t(self._own_parts(v) for v in x)
        if t is dict:
            return {k: self._own_parts(v) for k, v in x.items()}
        return x

    def reduce(self, reduce_op, value, axis):
        """This worker's values (a PerReplica's components or one tensor)
        combined over every worker."""
        import tfmini as tf
        reduce_op = _reduce_op(reduce_op)
        values = list(value) if isinstance(value, PerReplica) else [value]
        values = [tf.convert_to_tensor(v) for v in values]
        if axis is None:
            total = values[0]
            for v in values[1:]:
                total = total + v
            total, = collective.allreduce(self._comm, [total], "sum",
                                          timeout=self._timeout)
            if reduce_op == ReduceOp.MEAN:
                total = total / tf.cast(self.num_replicas_in_sync *
                                        len(values), total.dtype)
            return total
        sums = [tf.reduce_sum(v, axis=axis) for v in values]
        total = sums[0]
        for s in sums[1:]:
            total = total + s
        if reduce_op == ReduceOp.SUM:
            total, = collective.allreduce(self._comm, [total], "sum",
                                          timeout=self._timeout)
            return total
        count = sum(tf.cast(tf.shape(v)[axis], total.dtype)
                    for v in values)
        total, count = collective.allreduce(
            self._comm, [total, tf.reshape(count, [1])], "sum",
            timeout=self._timeout)
        return total / count[0]

    def experimental_local_results(self, value):
        if isinstance(value, PerReplica):
            return tuple(value)
        return (value,)

    def gather(self, value, axis):
        import tfmini as tf
        values = list(value) if isinstance(value, PerReplica) else [value]
        local = values[0] if len(values) == 1 else \
            tf.concat([tf.convert_to_tensor(v) for v in values], axis=axis)
        return collective.gather(self._comm, local, axis)

    def experimental_distribute_dataset(self, dataset, options=None):
        return _WorkerDataset(self, dataset)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        comm = self._comm
        return dataset_fn(InputContext(comm.size, comm.task_id, comm.size))

    experimental_distribute_datasets_from_function = \
        distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn):
        from .values import _ValueContext
        return value_fn(_ValueContext(self._comm.task_id, self._comm.size))

    def _across_workers(self, model, kind, out):
        """Keras's distributed step output on this worker -> what every
        worker sees: predict's outputs gathered in task order (each
        worker predicted its slice of the batch); fit's and evaluate's
        metrics are already over all workers' examples (the step read
        them with _global_logs)."""
        import tfmini as tf
        if kind == "predict":
            return tf.nest.map_structure(
                lambda t: collective.gather(self._comm, t, 0), out)
        return out

    def _global_logs(self, model):
        """model's metric results over all workers (Note [Metrics read
        across workers]), in one all-reduce for all of them."""
        metrics = list(model.metrics)
        return _read_summed(self, metrics,
                            lambda: {m.name: m.result() for m in metrics})


class _WorkerDataset:
    """strategy.experimental_distribute_dataset(ds) on a worker: each
    global batch split along axis 0 as TF splits it over all replicas;
    this worker keeps its slice."""

    def __init__(self, strategy, dataset):
        self._strategy = strategy
        self._dataset = dataset

    def __iter__(self):
        import tfmini as tf
        comm = self._strategy._comm
        for element in self._dataset:
            def mine(t):
                if t is None:
                    return None
                t = tf.convert_to_tensor(t)
                n = t.shape[0] if t.shape.rank else None
                if n is None:
                    raise ValueError(
                        f"Cannot split a batch of shape {t.shape} over "
                        f"{comm.size} workers: the batch dimension must be "
                        f"known")
                sizes = _split_sizes(n, comm.size)
                start = sum(sizes[:comm.task_id])
                return t[start:start + sizes[comm.task_id]]
            yield tf.nest.map_structure(mine, element)

    @property
    def element_spec(self):
        return getattr(self._dataset, "element_spec", None)


def _on_variable_created(var):
    """tf.Variable's creation hook: under a multi-worker strategy, the
    new variable takes the chief's value (Note [Workers are replicas])
    and remembers its strategy (for reads across workers)."""
    from .strategy import get_strategy
    s = get_strategy()
    if isinstance(s, MultiWorkerMirroredStrategy) and s._comm.size > 1:
        collective.broadcast_variable(s._comm, var)
        var._worker_strategy = s


def _install_variable_hook():
    from .. import variables
    variables._on_create = _on_variable_created


# Note [Metrics read across workers]: TF makes a Keras metric's variables
# SUM-aggregated ON_READ, so that metric.result() read outside a replica
# (a custom loop's epoch summary, Keras's logs) sums every replica's state.
# Here each worker holds its own state: result() of a metric made under a
# multi-worker strategy sums the state variables over the workers (one
# all-reduce), computes the result from the sums, and puts the local
# values back, so each worker keeps accumulating its own examples and a
# later read does not count them twice. Read in a tf.function, the same
# happens in the graph: the state is read, all-reduced by a traced
# collective (Note [Collectives in a trace]), assigned, the result
# computed, and the local values assigned back; the graph's side-effect
# order (Note [Side-effect order] in csrc/runtime/graph.c) keeps the
# result's reads between the two assigns. Inside strategy.run (a replica
# context) result() reads the local state, as a replica's read of a
# sync-on-read variable does in TF. Every worker must read the same
# metrics in the same order (it is a collective).
_summing = threading.local()


def _read_summed(strategy, metrics, fn):
    import numpy as np
    import tfmini as tf
    from .. import _C
    from ..variables import _ASSIGN
    variables = [v for m in metrics for v in m.variables]
    if strategy._comm.size == 1 or not variables or \
            getattr(_summing, "depth", 0):
        return fn()
    if _C.tracing():
        return _read_summed_traced(strategy, variables, fn)
    local = [np.array(v.numpy(), order="C", copy=True) for v in variables]
    summed = [a.copy() for a in local]
    strategy._comm.allreduce(summed, "sum", strategy._timeout)
    _summing.depth = 1
    try:
        for v, a in zip(variables, summed):
            v._assign(tf.constant(a, dtype=v.dtype), _ASSIGN)
        # A snapshot: the variables take their local values back below.
        return tf.nest.map_structure(
            lambda t: tf.constant(np.array(t)), fn())
    finally:
        _summing.depth = 0
        for v, a in zip(variables, local):
            v._assign(tf.constant(a, dtype=v.dtype), _ASSIGN)


def _read_summed_traced(strategy, variables, fn):
    """_read_summed's graph form (Note [Metrics read across workers])."""
    from ..variables import _ASSIGN
    local = [v.read_value() for v in variables]
    summed = collective.allreduce(strategy._comm, local, "sum",
                                  timeout=strategy._timeout)
    _summing.depth = 1
    try:
        for v, t in zip(variables, summed):
            v._assign(t, _ASSIGN)
        return fn()
    finally:
        _summing.depth = 0
        for v, t in zip(variables, local):
            v._assign(t, _ASSIGN)


def _metric_read(metric, fn):
    """keras.metrics' _read_hook (Note [Metrics read across workers])."""
    from .replica import current_replica
    if getattr(_summing, "depth", 0) or current_replica() is not None:
        return fn()
    strategy = None
    for v in metric.variables:
        strategy = getattr(v, "_worker_strategy", None)
        if strategy is not None:
            break
    if strategy is None:
        return fn()
    return _read_summed(strategy, [metric], fn)


def _install_metric_hook():
    from ..keras import metrics
    metrics._read_hook = _metric_read
