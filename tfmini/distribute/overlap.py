"""Gradient all-reduce overlapped with the backward pass.

Note [Overlapped gradient all-reduce]: in an eager step on a worker of a
MultiWorkerMirroredStrategy (more than one worker), tape.gradient hands
each source's gradient to a Session as soon as the tape's walk has passed
the last op that adds to it (Note [Gradient ready hook] in
csrc/runtime/tape.h). The Session packs gradients, in the order they
complete, into buckets of about bucket_bytes and starts each bucket's
non-blocking all-reduce the moment it fills, then polls the buckets in
flight at every later gradient (Open MPI moves a collective on only inside
MPI calls; Note [Progress thread] in csrc/python/mpi/mpi_ext.c makes them
meanwhile too): the first layers' backward runs while the last layers'
gradients travel, as in Horovod and PyTorch DDP. tape.gradient still
returns this worker's own gradients (TF's semantics: the caller may clip
or change them); the sums wait in a table keyed by the returned tensors,
and when the optimizer's all-reduce (or any SUM/MEAN all_reduce) is asked
for exactly those tensors it waits for their buckets instead of reducing
them again. A gradient the caller replaced is reduced afresh; sums nobody
asked for are waited for and dropped at the next backward pass. Every
worker walks the same tape, so all start the same buckets in the same
order, as MPI requires. In a trace the same happens with graph nodes
(Note [Overlapped all-reduce in a trace] in overlap_traced.py). Plain
tape use (no such strategy) never gets here: backprop's hook is one None
check."""
import threading
import time

import numpy as np

_FLOATS = (np.float32, np.float64)


class Stats:
    """What the overlapped all-reduce did, for tests and benchmarks."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.backward_passes = 0
        self.buckets = 0
        # Buckets whose all-reduce started while the tape was still
        # walking (before the earliest layers' gradients existed).
        self.buckets_started_in_backward = 0
        # Summed over backward passes: how long before the walk ended its
        # first bucket started (the window in which the backward pass can
        # hide communication).
        self.lead_seconds = 0.0
        self.reused = 0           # gradients whose sum came from a bucket
        self.wait_seconds = 0.0   # blocked waiting for buckets


stats = Stats()


class MpiBackend:
    """Buckets over the MPI extension's iallreduce (Note [Started
    all-reduces] in csrc/python/mpi/mpi_ext.c)."""

    def __init__(self, comm, timeout):
        self.comm = comm
        self.timeout = timeout

    def start(self, arrays):
        from .collective import _as_tf_errors
        with _as_tf_errors():
            return self.comm.mpi.iallreduce(arrays, "sum")

    def poll(self, handles):
        from .collective import _as_tf_errors
        with _as_tf_errors():
            for h in handles:
                h.test()

    def wait(self, handles):
        from .collective import _as_tf_errors
        with _as_tf_errors():
            self.comm.mpi.wait(list(handles), self.timeout)


class _Bucket:
    __slots__ = ("handle", "arrays", "done")

    def __init__(self, handle, arrays):
        self.handle = handle
        self.arrays = arrays
        self.done = False


class Session:
    """One backward pass's buckets: called by the tape as on_ready(j, g);
    finish(flat) then adds the gradients the walk did not report (those
    of sources no recorded op read, zeros, ...) and starts the last
    bucket."""

    def __init__(self, backend, bucket_bytes, n_sources):
        self.backend = backend
        self.bucket_bytes = bucket_bytes
        self.arrays = [None] * n_sources
        self.bucket_of = [None] * n_sources
        self.buckets = []
        self.open = []            # source indices of the filling bucket
        self.open_bytes = 0
        self.walking = True
        self.started_at = []      # perf_counter() of buckets started walking

    def __call__(self, j, grad):
        self._add(j, grad)
        self.backend.poll([b.handle for b in self.buckets if not b.done])

    def _add(self, j, grad):
        if self.arrays[j] is not None:
            return
        dtype = grad.dtype.as_numpy_dtype
        if dtype not in _FLOATS:
            return                # reduced afresh by the caller's all-reduce
        # numpy() is already a fresh array of the tensor's own: MPI may
        # write the sum into it.
        a = np.ascontiguousarray(grad.numpy())
        if self.open and self.arrays[self.open[0]].dtype != a.dtype:
            self._start()
        self.arrays[j] = a
        self.open.append(j)
        self.open_bytes += a.nbytes
        if self.open_bytes >= self.bucket_bytes:
            self._start()

    def _start(self):
        if not self.open:
            return
        arrays = [self.arrays[j] for j in self.open]
        bucket = _Bucket(self.backend.start(arrays), arrays)
        for j in self.open:
            self.bucket_of[j] = bucket
        self.buckets.append(bucket)
        stats.buckets += 1
        if self.walking:
            stats.buckets_started_in_backward += 1
            self.started_at.append(time.perf_counter())
        self.open, self.open_bytes = [], 0

    def finish(self, flat):
        """After the walk: flat is what tape.gradient returns."""
        self.walking = False
        end = time.perf_counter()
        if self.started_at:
            stats.lead_seconds += end - self.started_at[0]
        stats.backward_passes += 1
        for j, g in enumerate(flat):
            if g is not None:
                self._add(j, g)
        self._start()
        entries = {}
        for j, g in enumerate(flat):
            if g is not None and self.bucket_of[j] is not None:
                entries[id(g)] = (g, self.arrays[j], self.bucket_of[j])
        _table().pending = (self.backend, self.buckets, entries)


_local = threading.local()


def _table():
    t = getattr(_local, "table", None)
    if t is None:
        t = _local.table = _Table()
    return t


class _Table:
    __slots__ = ("pending", "traced")

    def __init__(self):
        self.pending = None       # (backend, buckets, {id(grad): entry})
        # The same for the backward pass of the trace being built
        # (overlap_traced.py): (graph, buckets, {id(grad): entry}).
        self.traced = None


def _wait(backend, buckets):
    todo = [b for b in buckets if not b.done]
    if todo:
        t0 = time.perf_counter()
        try:
            backend.wait([b.handle for b in todo])
        finally:
            stats.wait_seconds += time.perf_counter() - t0
        for b in todo:
            b.done = True


def drain():
    """Waits for (and drops) sums nobody asked for: every bucket started
    must complete before the next backward pass starts new ones."""
    from . import overlap_traced
    overlap_traced.drain_started()
    t = _table()
    if t.pending is not None:
        backend, buckets, _ = t.pending
        t.pending = None
        _wait(backend, buckets)


def take(values):
    """values (flat tensors) -> (sums, rest): sums[i] is values[i]'s
    summed array when an overlapped bucket reduced it, else None; rest
    the indices still to reduce. The table is emptied. In a trace,
    sums are tensors (overlap_traced.take)."""
    from .. import _C
    if _C.tracing():
        from . import overlap_traced
        return overlap_traced.take(values)
    t = _table()
    sums = [None] * len(values)
    if t.pending is None:
        return sums, list(range(len(values)))
    backend, buckets, entries = t.pending
    t.pending = None
    _wait(backend, buckets)
    rest = []
    for i, v in enumerate(values):
        e = entries.get(id(v))
        if e is not None and e[0] is v:
            sums[i] = e[1]
            stats.reused += 1
        else:
            rest.append(i)
    return sums, rest


def session_for(flat_sources):
    """backprop's hook: a Session (a TracedSession in a trace) when this
    gradient() is a worker's backward pass under a multi-worker strategy
    with overlap on."""
    from .. import _C
    from .replica import current_replica
    ctx = current_replica()
    strategy = getattr(ctx, "_strategy", None)
    if strategy is None or not getattr(strategy, "_overlap", False):
        return None
    backend = strategy._overlap_backend()
    if backend is None:
        return None
    bucket_bytes = strategy._bucket_bytes or strategy._comm.bucket_bytes
    if _C.tracing():
        from . import overlap_traced
        return overlap_traced.TracedSession(backend, bucket_bytes,
                                            len(flat_sources))
    drain()
    return Session(backend, bucket_bytes, len(flat_sources))


def install():
    from .. import backprop
    backprop._gradient_hook = session_for
