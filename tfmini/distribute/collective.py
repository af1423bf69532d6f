"""The workers of a MultiWorkerMirroredStrategy and their collectives over
MPI (the C extension tfmini.distribute._mpi, csrc/python/mpi/mpi_ext.c).

Note [One communicator]: MPI is initialized once per process, by the first
MultiWorkerMirroredStrategy, and finalized at exit; every strategy of the
process shares it. A process not started by mpirun (no Open MPI
environment) is a cluster of one worker and never initializes MPI.

Note [Collectives in a trace]: inside a tf.function a collective is one
stateful numpy_function node calling MPI when the graph runs. Every
worker must run the same collectives in the same order, so each node
takes the previous collective's output of the same trace as an extra
input: the graph's own dependencies then fix their order."""
import atexit
import contextlib
import json
import os
import signal
import sys
import time

import numpy as np

MPI_PACKAGES = "Open MPI (apt-get install libopenmpi-dev openmpi-bin)"
# Horovod's and PyTorch DDP's default fusion size is about this.
DEFAULT_BUCKET_BYTES = 4 << 20
# TF waits forever by default; a bounded wait turns a stuck peer into an
# error (CommunicationOptions(timeout_seconds=...) overrides it).
DEFAULT_TIMEOUT_S = 1800.0

_comm = None


class Stats:
    """Time and bytes spent in all-reduce, for benchmarks."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.seconds = 0.0
        self.calls = 0
        self.bytes = 0


stats = Stats()


def _launched_by_mpirun():
    return any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE",
                                         "PMIX_RANK", "PMI_RANK"))


def _tf_config():
    """(task_id, num_workers) from TF_CONFIG, or None. A chief counts as
    worker 0 and the workers follow it, as in TF."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return None
    try:
        cfg = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON: {e}") from None
    cluster = cfg.get("cluster") or {}
    task = cfg.get("task") or {}
    chiefs = len(cluster.get("chief", []))
    workers = len(cluster.get("worker", []))
    if not chiefs + workers:
        return None
    kind, index = task.get("type", "worker"), int(task.get("index", 0))
    if kind == "chief":
        return index, chiefs + workers
    if kind != "worker":
        raise ValueError(f"TF_CONFIG task type {kind!r}: "
                         f"MultiWorkerMirroredStrategy runs on 'chief' and "
                         f"'worker' tasks only")
    if not 0 <= index < workers:
        raise ValueError(f"TF_CONFIG task index {index} is out of range for "
                         f"{workers} workers")
    return chiefs + index, chiefs + workers


def _tf_config_task():
    task = json.loads(os.environ["TF_CONFIG"]).get("task") or {}
    return task.get("type", "worker"), int(task.get("index", 0))


@contextlib.contextmanager
def _as_tf_errors():
    """The MPI binding's timeout and lost-peer errors as TF's."""
    try:
        yield
    except TimeoutError as e:
        from ..errors import DeadlineExceededError
        raise DeadlineExceededError(
            None, None, f"MultiWorkerMirroredStrategy: {e}") from None
    except ConnectionError as e:
        from ..errors import UnavailableError
        raise UnavailableError(
            None, None, f"MultiWorkerMirroredStrategy: {e}") from None


class Comm:
    """This process's place among the workers: rank (MPI's), task_id
    (TF's: TF_CONFIG's index when given, else the rank), size."""

    def __init__(self):
        try:
            from . import _mpi
        except ImportError:
            raise ImportError(
                f"tf.distribute.MultiWorkerMirroredStrategy needs MPI: "
                f"install {MPI_PACKAGES}, then rebuild tfmini "
                f"(python3 setup.py build_ext --inplace). For replicas in "
                f"one process use MirroredStrategy over logical CPU "
                f"devices.") from None
        cfg = _tf_config()
        self.timeout = DEFAULT_TIMEOUT_S
        self.bucket_bytes = DEFAULT_BUCKET_BYTES
        self.mpi = None
        self.rank, self.size = 0, 1
        if _launched_by_mpirun():
            self.rank, self.size = _mpi.init()
            self.mpi = _mpi
            self.failed = False
            self._watch_for_failure()
            atexit.register(self._finalize)
            _stop_cleanly_on_sigterm()
        elif cfg is not None and cfg[1] > 1:
            raise RuntimeError(
                f"TF_CONFIG names {cfg[1]} workers, but this process was "
                f"not started by mpirun: tfmini's multi-worker transport is "
                f"MPI, launch the workers with mpirun -np {cfg[1]} python "
                f"<script>")
        self.task_id = self.rank
        # TF_CONFIG's own names for this task (a chief is task 0 of job
        # "chief"); without TF_CONFIG, worker <rank>.
        self.task_type, self.task_index = "worker", self.rank
        self.ranks = list(range(self.size))      # rank of each task id
        if cfg is not None:
            self.task_type, self.task_index = _tf_config_task()
            task_id, n = cfg
            if n != self.size:
                raise ValueError(
                    f"TF_CONFIG names {n} workers but mpirun started "
                    f"{self.size} processes")
            self.task_id = task_id
            if self.size > 1:
                ids = np.zeros(self.size, np.int64)
                ids[self.rank] = task_id
                self.allreduce([ids], "sum")
                if sorted(ids.tolist()) != list(range(self.size)):
                    raise ValueError(f"TF_CONFIG task ids of the workers "
                                     f"(by MPI rank) are {ids.tolist()}: "
                                     f"each must name a different task")
                self.ranks = [int(r) for r in np.argsort(ids)]

    def _watch_for_failure(self):
        prev = sys.excepthook

        def hook(kind, value, tb):
            self.failed = True
            prev(kind, value, tb)
        sys.excepthook = hook

    def _finalize(self):
        """At exit. MPI_Finalize waits for every worker, so a worker that
        dies of an exception skips it: mpirun then sees a worker end
        without finalizing and stops the job (the others get SIGTERM,
        _stop_cleanly_on_sigterm) instead of all waiting forever. A
        worker that exits normally first waits, within the timeout, for
        the others to reach their exit."""
        if self.failed or self.mpi.broken():
            return
        try:
            self.mpi.barrier(self.timeout)
        except BaseException:     # noqa: BLE001 (exiting: skip finalize)
            return
        self.mpi.finalize()

    def allreduce(self, arrays, op, timeout=None, bucket_bytes=None):
        """arrays (contiguous, writable numpy) reduced over all workers in
        place."""
        if self.mpi is None or not arrays:
            return
        t0 = time.perf_counter()
        with _as_tf_errors():
            self.mpi.allreduce(arrays, op, bucket_bytes or self.bucket_bytes,
                               self.timeout if timeout is None else timeout)
        stats.seconds += time.perf_counter() - t0
        stats.calls += 1
        stats.bytes += sum(a.nbytes for a in arrays)

    def bcast(self, arrays, timeout=None):
        """The chief's (task 0's) arrays copied into every worker's."""
        if self.mpi is None or not arrays:
            return
        with _as_tf_errors():
            self.mpi.bcast(arrays, self.ranks[0],
                           self.timeout if timeout is None else timeout)

    def barrier(self, timeout=None):
        if self.mpi is not None:
            self.mpi.barrier(self.timeout if timeout is None else timeout)


def _stop_cleanly_on_sigterm():
    """mpirun answers a worker's death by sending the others SIGTERM (and
    SIGKILL a moment later): say why, as an exception, instead of dying
    without a word (the C wait runs Python's signal handlers, Note
    [Collectives with a deadline] in csrc/python/mpi/mpi_ext.c)."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum, frame):
        from ..errors import UnavailableError
        rank = _comm.rank if _comm is not None else "?"
        raise UnavailableError(
            None, None, f"MultiWorkerMirroredStrategy: worker {rank} was "
            f"stopped by mpirun (SIGTERM), which does this when another "
            f"worker of the job exits or is killed; the collective in "
            f"progress cannot complete")
    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:            # not the main thread
        pass


def get():
    """The process's Comm (Note [One communicator])."""
    global _comm
    if _comm is None:
        _comm = Comm()
    return _comm


# ---- collectives on tensors ---------------------------------------------

_NUMERIC = {"float32", "float64", "int32", "int64"}


def _to_array(t):
    import tfmini as tf
    t = tf.convert_to_tensor(t)
    name = t.dtype.name
    if name in ("float16", "bfloat16"):
        return np.ascontiguousarray(t.numpy(), np.float32), t.dtype
    if name not in _NUMERIC:
        raise TypeError(f"all_reduce: a {name} tensor of shape "
                        f"{list(t.shape)} cannot be reduced across workers "
                        f"(float16/32/64, int32 or int64 expected)")
    return np.array(t.numpy(), order="C", copy=True), t.dtype


def _reduce_arrays(comm, arrays, op, mean_over, timeout, bucket_bytes):
    comm.allreduce(arrays, op, timeout, bucket_bytes)
    if mean_over:
        arrays = [a / mean_over if a.dtype.kind == "f" else a // mean_over
                  for a in arrays]
    return arrays


def allreduce(comm, tensors, op="sum", mean_over=0, timeout=None,
              bucket_bytes=None):
    """tensors (a list) summed (or max/min) over the workers, in one
    bucketed call; divided by mean_over when it is not 0."""
    import tfmini as tf
    from .. import _C
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if comm.mpi is None or not tensors:
        if mean_over and mean_over != 1:
            return [t / tf.cast(mean_over, t.dtype) for t in tensors]
        return tensors
    for t in tensors:
        if t.dtype.name not in _NUMERIC | {"float16", "bfloat16"}:
            raise TypeError(f"all_reduce: a {t.dtype.name} tensor of shape "
                            f"{list(t.shape)} cannot be reduced across "
                            f"workers (float16/32/64, int32 or int64 "
                            f"expected)")
    dtypes = [t.dtype for t in tensors]

    def run(*arrays):
        arrays = [np.array(a, order="C", copy=True,
                           dtype=np.float32 if a.dtype == np.float16
                           else a.dtype) for a in arrays[:len(dtypes)]]
        out = _reduce_arrays(comm, arrays, op, mean_over, timeout,
                             bucket_bytes)
        return [np.asarray(a, dtype=d.as_numpy_dtype)
                for a, d in zip(out, dtypes)]

    if _C.tracing():
        return _traced(run, tensors, [tf.TensorSpec(t.shape, t.dtype)
                                      for t in tensors])
    return [tf.constant(a) for a in run(*[t.numpy() for t in tensors])]


# id(graph) -> (graph, its last collective's output); the graph is kept so
# that its id is not reused while the entry lives.
_tokens = {}


def _traced(run, tensors, specs):
    """One numpy_function node, after the trace's previous collective
    (Note [Collectives in a trace])."""
    import tfmini as tf
    from .. import trace_frames
    for s in specs:
        if s.shape.rank is None or any(d is None for d in s.shape.as_list()):
            raise ValueError(
                f"A collective inside a tf.function needs fully known "
                f"shapes, got {s.shape} ({s.dtype.name}); tfmini traces "
                f"Keras steps per batch shape, which gives them")
    graph = trace_frames._frames()[-1].graph
    entry = _tokens.get(id(graph))
    token = entry[1] if entry is not None and entry[0] is graph else None
    inputs = list(tensors) + ([token] if token is not None else [])
    outs = tf.numpy_function(run, inputs, list(specs), stateful=True)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    _tokens.pop(id(graph), None)
    _tokens[id(graph)] = (graph, outs[0])
    while len(_tokens) > 32:      # graphs traced long ago
        del _tokens[next(iter(_tokens))]
    return outs


def broadcast_variable(comm, var):
    """var's value made the chief's, on every worker (a new variable under
    the strategy: TF's mirrored variables start from the chief's
    initial value)."""
    if comm.mpi is None or comm.size == 1:
        return
    import tfmini as tf
    arr = np.array(var.numpy(), order="C", copy=True)
    if arr.dtype == object or arr.size == 0:
        return
    comm.bcast([arr.reshape(-1).view(np.uint8)])
    from ..variables import _ASSIGN
    var._assign(tf.constant(arr, dtype=var.dtype), _ASSIGN)


def gather(comm, tensor, axis):
    """The workers' tensors concatenated along axis, in task order;
    their other dims must agree."""
    import tfmini as tf
    from .. import _C
    t = tf.convert_to_tensor(tensor)
    if t.shape.rank == 0:
        raise ValueError("gather/all_gather needs values of rank >= 1, got "
                         "a scalar")
    if comm.mpi is None or comm.size == 1:
        return t
    rank = t.shape.rank
    axis = axis + rank if axis < 0 else axis
    dtype = t.dtype

    def run(a):
        a = np.moveaxis(np.asarray(a), axis, 0)
        sizes = np.zeros(comm.size, np.int64)
        sizes[comm.task_id] = a.shape[0]
        shape_sum = np.array(a.shape[1:], np.int64)
        comm.allreduce([sizes, shape_sum], "sum")
        if not np.array_equal(shape_sum, np.array(a.shape[1:]) * comm.size):
            raise ValueError(f"gather: the workers' values differ in shape "
                             f"off axis {axis} (this worker's: "
                             f"{list(np.moveaxis(a, 0, axis).shape)})")
        total = int(sizes.sum())
        work = a.astype(np.float64) if a.dtype.kind == "f" else \
            a.astype(np.int64)
        buf = np.zeros((total,) + a.shape[1:], work.dtype)
        start = int(sizes[:comm.task_id].sum())
        buf[start:start + a.shape[0]] = work
        comm.allreduce([buf], "sum")
        return np.moveaxis(buf, 0, axis).astype(dtype.as_numpy_dtype)

    if _C.tracing():
        shape = t.shape.as_list()
        if shape[axis] is not None:
            shape[axis] *= comm.size     # checked when run: equal sizes
        return _traced(lambda a, *_: [run(a)], [t],
                       [tf.TensorSpec(shape, dtype)])[0]
    return tf.constant(run(t.numpy()))
