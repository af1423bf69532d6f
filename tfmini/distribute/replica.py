"""Replica threads, the replica context, and the all-reduce between them.

Note [Replica threads]: strategy.run(fn) over n > 1 replicas runs fn in
n threads, replica i in thread i. Eagerly the threads run at once:
tapes, name scopes and device scopes are per thread in tfmini, and big
kernels release the GIL, so replicas overlap, each with its own OpenMP
thread count (omp_set_num_threads is per thread in libgomp; the cores
are shared out between replicas). While a tf.function is traced the
threads join the caller's trace (they push its graph) and take turns
(a baton lock), as TF's MirroredStrategy threads do: the trace holds
every replica's ops and the executor runs them. A function's first
eager run takes turns too, since layers build themselves on first
use. Replicas meet at all_reduce and merge_call: each writes its value into a shared slot,
waits at a barrier, one of them combines the slots, and a second wait
hands the result to all. A replica that raises breaks the barrier, so
the others stop instead of waiting forever; run() re-raises its error.
"""
import threading
import weakref

from .. import _C
from .. import trace_frames as _trace_frames
from .values import PerReplica, ReduceOp, _regroup, _select

_local = threading.local()
_seen = weakref.WeakSet()      # functions run eagerly once already


def _state():
    s = getattr(_local, "state", None)
    if s is None:
        s = _local.state = _ThreadState()
    return s


class _ThreadState:
    __slots__ = ("scopes", "replica", "cross_replica")

    def __init__(self):
        self.scopes = []          # strategies whose scope() is entered
        self.replica = None       # this thread's ReplicaContext
        self.cross_replica = 0    # > 0 inside a merge_call's merge_fn


class ReplicaContext:
    """tf.distribute.ReplicaContext: what code running on one replica can
    ask and do together with the other replicas."""

    def __init__(self, strategy, replica_id_in_sync_group, _group=None):
        self._strategy = strategy
        self._replica_id = int(replica_id_in_sync_group)
        self._group = _group
        self._loss_scale = None   # set by Keras fit's distributed step

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        import tfmini as tf
        return tf.constant(self._replica_id, tf.int32)

    @property
    def devices(self):
        return (self._strategy.extended.worker_devices[self._replica_id],)

    def all_reduce(self, reduce_op, value, options=None):
        """Every replica's value (a structure of tensors) combined with
        reduce_op; every replica gets the same result."""
        reduce_op = _reduce_op(reduce_op)
        if self._group is None:
            return value
        return self._group.exchange(
            self._replica_id, value,
            lambda values: _reduce_values(reduce_op, values), "all_reduce")

    def all_gather(self, value, axis, options=None):
        if self._group is None:
            return value
        import tfmini as tf

        def combine(values):
            return tf.nest.map_structure(
                lambda *xs: tf.concat(list(xs), axis=axis), *values)
        return self._group.exchange(self._replica_id, value, combine,
                                    "all_gather")

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Call merge_fn(strategy, *args, **kwargs) once, in cross-replica
        context, with each argument regrouped over the replicas (values
        that differ become PerReplica); every replica gets its result (a
        PerReplica result, its own component)."""
        kwargs = kwargs or {}
        if self._group is None:
            return _call_merge(self._strategy, merge_fn, args, kwargs)
        strategy = self._strategy

        def combine(values):
            all_args = _regroup([a for a, _ in values])
            all_kwargs = _regroup([k for _, k in values])
            return _call_merge(strategy, merge_fn, all_args, all_kwargs)
        result = self._group.exchange(self._replica_id, (tuple(args),
                                                         dict(kwargs)),
                                      combine, "merge_call")
        return _select(result, self._replica_id)

    def __enter__(self):
        st = _state()
        self._saved = st.replica
        st.replica = self
        return self

    def __exit__(self, *exc):
        _state().replica = self._saved


def _call_merge(strategy, merge_fn, args, kwargs):
    st = _state()
    st.cross_replica += 1
    try:
        return merge_fn(strategy, *args, **kwargs)
    finally:
        st.cross_replica -= 1


def _reduce_op(op):
    from ..variables import VariableAggregation
    if isinstance(op, VariableAggregation):
        return ReduceOp.from_variable_aggregation(op)
    if isinstance(op, str):
        try:
            return ReduceOp[op.upper()]
        except KeyError:
            raise ValueError(f"Unknown reduce op {op!r}: use "
                             f"tf.distribute.ReduceOp.SUM or MEAN") from None
    if not isinstance(op, ReduceOp):
        raise ValueError(f"Unknown reduce op {op!r}: use "
                         f"tf.distribute.ReduceOp.SUM or MEAN")
    return op


def _on_distinct_gpus(xs):
    devices = [x.device.upper() for x in xs]
    return all("GPU" in d for d in devices) and \
        len(set(devices)) == len(devices)


def _reduce_values(reduce_op, values):
    """values: one structure per replica -> the structure of their sums
    (or means), computed with tfmini ops in the calling thread, or with
    NCCL when they lie on different GPUs."""
    import tfmini as tf
    from . import nccl

    def combine(*xs):
        xs = [tf.convert_to_tensor(x) for x in xs]
        if len(xs) > 1 and _on_distinct_gpus(xs) and nccl.available():
            # Every replica's GPU gets the sum; the first one's is kept.
            total = nccl.all_reduce(xs)[0]
            if reduce_op == ReduceOp.MEAN:
                total = total / tf.cast(len(xs), total.dtype)
            return total
        total = xs[0]
        for x in xs[1:]:
            if x.dtype != total.dtype or \
                    tuple(x.shape) != tuple(total.shape):
                raise ValueError(
                    f"all_reduce: replicas gave values of different dtypes "
                    f"or shapes: {total.dtype.name}{list(total.shape)} vs "
                    f"{x.dtype.name}{list(x.shape)}")
            total = total + x
        if reduce_op == ReduceOp.MEAN:
            total = total / tf.cast(len(xs), total.dtype)
        return total
    return tf.nest.map_structure(combine, *values)


class _Group:
    """The n replica threads of one strategy.run: slots, a barrier, and in
    a trace the baton that lets one thread build the graph at a time."""

    def __init__(self, n, baton, tracing):
        self.n = n
        self.tracing = tracing
        self.barrier = threading.Barrier(n)
        self.baton = baton
        self.slots = [None] * n
        self.result = None
        self.error = None

    def _wait(self):
        if self.baton is not None:
            self.baton.release()
        try:
            return self.barrier.wait()
        finally:
            if self.baton is not None:
                self.baton.acquire()

    def exchange(self, i, value, combine, what):
        """Replica i's part of a collective call named `what`; every
        replica must make the same calls in the same order (and the
        end of fn counts as one, so a replica that skipped a call is an
        error, not a hang)."""
        if _C.tracing() and not self.tracing:
            # Each replica would be tracing its own graph: combining
            # their symbolic values needs collective ops in the graphs,
            # which tfmini does not have.
            self.barrier.abort()
            raise NotImplementedError(
                f"{what} inside a tf.function called on each replica "
                f"(strategy.run(tf.function(fn))) is not supported by "
                f"tfmini: put the tf.function around the code that calls "
                f"strategy.run instead, as TF's guides do")
        self.slots[i] = (what, value)
        if self._wait() == 0:
            whats = [w for w, _ in self.slots]
            if any(w != whats[0] for w in whats):
                self.result = _Mismatch(whats)
            else:
                try:
                    self.result = combine([v for _, v in self.slots]) \
                        if combine is not None else None
                except BaseException:
                    self.barrier.abort()
                    raise
        self._wait()
        result = self.result
        if isinstance(result, _Mismatch):
            raise RuntimeError(
                f"strategy.run: the replicas made different collective "
                f"calls at the same point ({', '.join(result.whats)}); "
                f"every replica must call all_reduce, merge_call and "
                f"apply_gradients the same way")
        return result


class _Mismatch:
    def __init__(self, whats):
        self.whats = [f"replica {i}: {w}" for i, w in enumerate(whats)]


def _omp_share(n):
    """OpenMP threads for each of n replicas: the intra-op setting (or
    every core) shared out, at least one each."""
    from .. import config
    total = config.threading.get_intra_op_parallelism_threads() or \
        config.threading._default
    return max(1, total // n)


def _device_of(strategy, i):
    """A GPU replica runs under its GPU; CPU replicas share the host (the
    logical CPUs are one memory, Note [Shared variables])."""
    import contextlib
    dev = strategy.extended.worker_devices[i]
    if "GPU" not in dev:
        return contextlib.nullcontext()
    import tfmini as tf
    return tf.device(dev)


def run_replicas(strategy, fn, args, kwargs):
    """fn on every replica of strategy; the results regrouped."""
    n = strategy.num_replicas_in_sync
    if n == 1:
        with ReplicaContext(strategy, 0), _device_of(strategy, 0):
            return _regroup([fn(*_select(args, 0), **_select(kwargs, 0))])
    tracing = _C.tracing()
    frame = None
    if tracing:
        frames = _trace_frames._frames()
        if not frames:
            raise RuntimeError("strategy.run while tracing needs a "
                               "tf.function trace on this thread")
        frame = frames[-1]
    # A function's first eager run also takes turns: layers and
    # optimizer slots are built on first use, and replicas running at
    # once would each build them (TF's replica threads always take
    # turns). Later runs of the same function run at once.
    key = getattr(fn, "__func__", fn)
    try:
        first = key not in _seen
        if first:
            _seen.add(key)
    except TypeError:             # not weakly referenceable
        first = True
    baton = threading.Lock() if tracing or first else None
    group = _Group(n, baton, tracing)
    results = [None] * n
    errors = [None] * n
    share = _omp_share(n)
    scopes = list(_state().scopes)
    from ..name_scopes import current_scope as _current_name_scope
    prefix = _current_name_scope()

    def body(i):
        st = _state()
        st.scopes = list(scopes)
        if frame is not None:
            _trace_frames._frames().append(frame)
            frame.graph.push()
        else:
            _C.set_num_threads(share)
        if baton is not None:
            baton.acquire()
        try:
            from ..name_scopes import name_scope
            ctx = ReplicaContext(strategy, i, group)
            with ctx, _device_of(strategy, i), \
                    name_scope(f"{prefix}replica_{i}/" if i else prefix):
                results[i] = fn(*_select(args, i), **_select(kwargs, i))
                group.exchange(i, None, None, "the end of fn")
        except BaseException as e:     # noqa: BLE001 (re-raised by run)
            errors[i] = e
            group.barrier.abort()
        finally:
            if baton is not None:
                baton.release()
            if frame is not None:
                frame.graph.pop()
                _trace_frames._frames().pop()

    threads = [threading.Thread(target=body, args=(i,),
                                name=f"replica_{i}", daemon=True)
               for i in range(n)]
    _writes_hooked(+1)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        _writes_hooked(-1)
    real = [e for e in errors if e is not None and
            not isinstance(e, threading.BrokenBarrierError)]
    if real:
        raise real[0]
    if any(e is not None for e in errors):
        raise RuntimeError("strategy.run: a replica stopped at an "
                           "all_reduce or merge_call the others never "
                           "reached (replicas must make the same "
                           "collective calls in the same order)")
    return _regroup(results)


_runs_lock = threading.Lock()
_runs = 0


def _writes_hooked(delta):
    """Variable writes go through tfmini/distribute/updates.py only while
    some run() has replica threads (so other code pays nothing)."""
    global _runs
    from .. import variables
    from .updates import replica_write
    with _runs_lock:
        _runs += delta
        variables._replica_write = replica_write if _runs else None


def current_replica():
    st = _state()
    if st.cross_replica:
        return None
    return st.replica


def in_cross_replica():
    st = _state()
    if st.cross_replica:
        return True
    return st.replica is None and bool(st.scopes)


def _in_multi_replica():
    """In a replica thread of a strategy with more than one replica (not
    inside a merge_fn): writes to shared state must be combined."""
    r = current_replica()
    return r is not None and r._group is not None


__all__ = ["ReplicaContext", "PerReplica"]
