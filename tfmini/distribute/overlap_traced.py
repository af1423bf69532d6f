"""The overlapped gradient all-reduce in a traced step (a tf.function
custom loop, Keras fit's default train step).

Note [Overlapped all-reduce in a trace]: the tape's walk in a trace emits
the backward ops into the graph, and the executor runs nodes in creation
order (Note [Side-effect order] in csrc/runtime/graph.c). So the Session
of Note [Overlapped gradient all-reduce] has a traced twin: as gradients
complete during the walk it packs their (symbolic) tensors into buckets
of about bucket_bytes, and for each full bucket emits a start node right
there, after the bucket's last gradient producer; the optimizer's
all-reduce then emits one wait node per bucket, after the whole backward
pass. When the graph runs, each start node copies its gradients into one
flat buffer and starts MPI_Iallreduce on it (the MPI extension's
iallreduce, Note [Started all-reduces]), while the nodes after it go on
computing the earlier layers' gradients; the wait node finishes it and
gives the summed buffer, which the graph splits back into gradients. Both
are stateful numpy_function nodes (never dropped or reordered), chained
into the trace's collective order (Note [Collectives in a trace]) so every
worker starts the same buckets in the same order. Open MPI moves a
collective on only inside MPI calls, so a small poll node follows each
gradient that completes while buckets are in flight. As in eager steps,
tape.gradient returns the local gradients; the wait nodes' sums serve an
all-reduce asked for exactly those tensors, any other is reduced afresh.
A bucket whose wait never ran (the trace asked for no all-reduce, or a
run stopped by an error) is waited for before the next backward pass
starts new ones (drain_started). A trace keeps the strategy's _overlap
setting it was traced with; the node functions share one state per
bucket, so one concrete function must not run in two threads at once
(a worker's collectives are one sequence anyway)."""
import threading
import time

import numpy as np

from . import overlap

_FLOATS = ("float32", "float64")
_rt = threading.local()       # buckets started by a graph run, not waited


def _started():
    s = getattr(_rt, "started", None)
    if s is None:
        s = _rt.started = []
    return s


def drain_started():
    """Waits for (and drops) buckets a graph run started but never waited
    for: MPI wants every started collective completed."""
    started = _started()
    while started:
        b = started.pop(0)
        if b.handle is not None:
            overlap._wait(b.backend, [b])
        b.handle = b.flat = None


class _RunBucket:
    """A bucket's state while its graph runs (the node functions share
    it): MPI's handle and the flat buffer it reduces in place."""
    __slots__ = ("backend", "handle", "flat", "done")

    def __init__(self, backend):
        self.backend = backend
        self.handle = self.flat = None
        self.done = False


class _RunPass:
    """One backward pass's timing at run time (for Stats)."""
    __slots__ = ("first_start",)

    def __init__(self):
        self.first_start = None


class _TracedBucket:
    __slots__ = ("run", "token", "sizes", "shapes", "dtype", "sources")

    def __init__(self, run, token, sizes, shapes, dtype, sources):
        self.run, self.token = run, token
        self.sizes, self.shapes, self.dtype = sizes, shapes, dtype
        self.sources = sources


class TracedSession:
    """tape.gradient's on_ready(j, grad) while tracing (Note [Overlapped
    all-reduce in a trace]); finish(flat) after the walk."""

    def __init__(self, backend, bucket_bytes, n_sources):
        from .. import trace_frames
        self.backend = backend
        self.bucket_bytes = bucket_bytes
        self.graph = trace_frames._frames()[-1].graph
        self.grads = [None] * n_sources
        self.bucket_of = [None] * n_sources
        self.buckets = []
        self.open = []
        self.open_bytes = 0
        self.walking = True
        self.pass_ = _RunPass()

    def __call__(self, j, grad):
        self._add(j, grad)
        if self.buckets:
            self._poll_node()

    def _add(self, j, grad):
        if self.grads[j] is not None:
            return
        dtype = grad.dtype
        dims = grad.shape.as_list() if grad.shape.rank is not None else None
        if dtype.name not in _FLOATS or dims is None or None in dims:
            return            # reduced afresh by the caller's all-reduce
        if self.open and self.grads[self.open[0]].dtype != dtype:
            self._start()
        self.grads[j] = grad
        self.open.append(j)
        self.open_bytes += int(np.prod(dims)) * dtype.size
        if self.open_bytes >= self.bucket_bytes:
            self._start()

    def _start(self):
        import tfmini as tf
        from .collective import _traced
        if not self.open:
            return
        sources = self.open
        self.open, self.open_bytes = [], 0
        grads = [self.grads[j] for j in sources]
        shapes = [g.shape.as_list() for g in grads]
        sizes = [int(np.prod(s)) for s in shapes]
        run = _RunBucket(self.backend)
        earlier = [b.run for b in self.buckets]
        first, walking, pass_ = not self.buckets, self.walking, self.pass_
        backend, n = self.backend, len(grads)
        np_dtype = grads[0].dtype.as_numpy_dtype

        def start(*arrays):
            if first:
                drain_started()
                pass_.first_start = None
            flat = np.empty(sum(sizes), np_dtype)
            off = 0
            for a, k in zip(arrays[:n], sizes):
                flat[off:off + k] = a.reshape(-1)
                off += k
            run.flat, run.done = flat, False
            run.handle = backend.start([flat])
            _started().append(run)
            overlap.stats.buckets += 1
            if walking:
                overlap.stats.buckets_started_in_backward += 1
                if pass_.first_start is None:
                    pass_.first_start = time.perf_counter()
            backend.poll([b.handle for b in earlier
                          if b.handle is not None and not b.done])
            return np.int64(0)
        token = _traced(start, grads, [tf.TensorSpec([], tf.int64)])[0]
        bucket = _TracedBucket(run, token, sizes, shapes, grads[0].dtype,
                               sources)
        for j in sources:
            self.bucket_of[j] = bucket
        self.buckets.append(bucket)

    def _poll_node(self, end_of_walk=False):
        import tfmini as tf
        runs = [b.run for b in self.buckets]
        backend, pass_ = self.backend, self.pass_

        def poll(*_):
            if end_of_walk:
                overlap.stats.backward_passes += 1
                if pass_.first_start is not None:
                    overlap.stats.lead_seconds += \
                        time.perf_counter() - pass_.first_start
            backend.poll([r.handle for r in runs
                          if r.handle is not None and not r.done])
            return np.int64(0)
        tf.numpy_function(poll, [self.buckets[-1].token],
                          tf.TensorSpec([], tf.int64), stateful=True)

    def finish(self, flat):
        """After the walk: flat is what tape.gradient returns."""
        self.walking = False
        if self.buckets:
            self._poll_node(end_of_walk=True)
        for j, g in enumerate(flat):
            if g is not None:
                self._add(j, g)
        self._start()
        entries = {}
        for j, g in enumerate(flat):
            b = self.bucket_of[j]
            # The walk reported its own handle on the value flat[j] holds.
            if g is not None and b is not None:
                entries[id(g)] = (g, b, b.sources.index(j))
        overlap._table().traced = (self.graph, self.buckets, entries) \
            if entries else None


def take(values):
    """overlap.take in a trace: sums[i] is values[i]'s sum (a tensor from
    its bucket's wait node) or None; rest the indices to reduce afresh.
    Every bucket of the pass gets its wait node, asked for or not."""
    import tfmini as tf
    from .. import trace_frames
    from .collective import _traced
    t = overlap._table()
    pending, t.traced = getattr(t, "traced", None), None
    sums = [None] * len(values)
    if pending is None or pending[0] is not trace_frames._frames()[-1].graph:
        return sums, list(range(len(values)))
    _, buckets, entries = pending
    served = {}
    rest = []
    for i, v in enumerate(values):
        e = entries.get(id(v))
        if e is not None and e[0] is v:
            served.setdefault(id(e[1]), []).append((i, e[2]))
        else:
            rest.append(i)
    for b in buckets:
        run, n_served = b.run, len(served.get(id(b), ()))

        def wait(*_, run=run, n_served=n_served):
            if run.handle is not None and not run.done:
                overlap._wait(run.backend, [run])
            started = _started()
            if run in started:
                started.remove(run)
            overlap.stats.reused += n_served
            flat, run.flat, run.handle = run.flat, None, None
            return flat
        flat = _traced(wait, [b.token],
                       [tf.TensorSpec([sum(b.sizes)], b.dtype)])[0]
        if not n_served:
            continue
        parts = tf.split(flat, b.sizes) if len(b.sizes) > 1 else [flat]
        for i, k in served[id(b)]:
            sums[i] = tf.reshape(parts[k], b.shapes[k])
    return sums, rest
