"""Summary writers and the per-thread summary state (default writer,
default step, recording condition), as TF 2's summary_ops_v2 keeps them.

tfmini writes summaries eagerly: the values are on the host, so each
summary is an Event proto handed to tensorboard's EventFileWriter at once.
Inside a tf.function scalars and histograms are traced as a PrintV2 node
that hands their values back to Python on every call (Note [Summaries in
graphs] in in_graph.py); other summaries raise NotImplementedError there."""
import contextlib
import os
import threading
import time
import weakref

import numpy as np

from .. import context as _context
from . import _deps

_NO_STEP = ("No step set. Please specify one either through the `step` "
            "argument or through tf.summary.experimental.set_step()")


class _State(threading.local):
    def __init__(self):
        self.writer = None
        self.step = None
        self.condition = True


_state = _State()


def _value(x):
    return x.numpy() if hasattr(x, "numpy") else x


def _check_eager(what):
    if not _context.executing_eagerly():
        raise NotImplementedError(
            f"{what} inside a tf.function: tfmini traces only "
            f"tf.summary.scalar and tf.summary.histogram into graphs. Return "
            f"the value from the tf.function and write the summary after "
            f"the call, or run the function eagerly "
            f"(tf.config.run_functions_eagerly(True)).")


def _step_value(step, what):
    a = np.asarray(_value(step))
    if a.shape != ():
        raise ValueError(f"{what}: step must be a scalar, got shape "
                         f"{list(a.shape)}")
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what}: step must be an integer (it is cast to "
                        f"int64), got {step!r} of dtype {a.dtype}")
    return int(a)


def _condition_value(condition):
    if callable(condition):
        condition = condition()
    return bool(np.asarray(_value(condition)))


class SummaryWriter:
    """Base of the writers create_file_writer and create_noop_writer
    return."""

    def set_as_default(self, step=None):
        """Make this the default writer for the current thread, for good
        (until another one is set); `step`, when given, becomes the default
        step."""
        self._check_open()
        _state.writer = self
        if step is not None:
            _state.step = step

    @contextlib.contextmanager
    def as_default(self, step=None):
        """The default writer inside the `with`: the previous writer comes
        back after it (and the previous step, when `step` is given). The
        writer is flushed on a normal exit, as in TF."""
        self._check_open()
        old_writer, old_step = _state.writer, _state.step
        _state.writer = self
        if step is not None:
            _state.step = step
        try:
            yield self
            self.flush()
        finally:
            _state.writer = old_writer
            if step is not None:
                _state.step = old_step

    def init(self):
        pass

    def flush(self):
        pass

    def close(self):
        pass

    def _check_open(self):
        pass


class _FileWriter(SummaryWriter):
    """Writes Event protos to one event file in `logdir` through
    tensorboard's EventFileWriter (TFRecord framing with masked CRC32C;
    a background thread flushes every flush_millis)."""

    def __init__(self, logdir, max_queue, flush_millis, filename_suffix):
        from tensorboard.summary.writer.event_file_writer import \
            EventFileWriter
        self._logdir = os.fspath(logdir)
        self._writer = EventFileWriter(self._logdir, max_queue,
                                       flush_millis / 1000.0,
                                       filename_suffix)
        self._closed = False
        self._lock = threading.Lock()
        # A writer dropped without close() still gets its events to disk,
        # at collection or at exit.
        self._finalizer = weakref.finalize(self, self._writer.close)

    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"SummaryWriter for {self._logdir!r} is "
                               f"already closed")

    def flush(self):
        with self._lock:
            if not self._closed:
                self._writer.flush()

    def close(self):
        with self._lock:
            if not self._closed:
                self._closed = True
                self._finalizer()
        if _state.writer is self:
            _state.writer = None

    def _add_event(self, event):
        with self._lock:
            self._check_open()
            event.wall_time = time.time()
            self._writer.add_event(event)

    def __repr__(self):
        return f"<SummaryWriter logdir={self._logdir!r}>"


class _NoopWriter(SummaryWriter):
    """Writes nothing; as_default leaves the default writer as it was."""

    def set_as_default(self, step=None):
        pass

    @contextlib.contextmanager
    def as_default(self, step=None):
        yield self


def create_file_writer(logdir, max_queue=None, flush_millis=None,
                       filename_suffix=None, name=None,
                       experimental_trackable=False, experimental_mesh=None):
    """A SummaryWriter writing an event file in `logdir` (made if missing).
    Defaults as in TF: max_queue 10 events, flush_millis 120000, file name
    suffix '.v2'. Needs the tensorboard and protobuf packages."""
    _deps.require("tf.summary.create_file_writer")
    _check_eager("tf.summary.create_file_writer")
    if logdir is None:
        raise ValueError("tf.summary.create_file_writer: logdir cannot be "
                         "None")
    max_queue = 10 if max_queue is None else int(max_queue)
    flush_millis = 120000 if flush_millis is None else int(flush_millis)
    if max_queue < 0 or flush_millis < 0:
        raise ValueError(f"tf.summary.create_file_writer: max_queue "
                         f"({max_queue}) and flush_millis ({flush_millis}) "
                         f"must be >= 0")
    if filename_suffix is None:
        filename_suffix = ".v2"
    return _FileWriter(logdir, max_queue, flush_millis, filename_suffix)


def create_noop_writer():
    """A SummaryWriter that writes nothing (needs no extra packages)."""
    return _NoopWriter()


def flush(writer=None, name=None):
    """Flush `writer`, or the default writer when None (nothing if none)."""
    writer = _state.writer if writer is None else writer
    if writer is not None:
        writer.flush()


@contextlib.contextmanager
def record_if(condition):
    """Record summaries inside the `with` only while `condition` holds: a
    bool, a boolean tensor, or a callable returning one (evaluated at each
    summary)."""
    old = _state.condition
    _state.condition = condition
    try:
        yield
    finally:
        _state.condition = old


def should_record_summaries():
    """Whether a summary written now would be recorded: a default writer
    is set and the record_if condition holds."""
    return _state.writer is not None and _condition_value(_state.condition)


def get_step():
    """The default step (tf.summary.experimental.get_step), or None."""
    return _state.step


def set_step(step):
    """Set the default step for summaries on this thread; an int, a tensor
    or a tf.Variable (read at each summary)."""
    _state.step = step


def _writer_for(what, in_graph=False):
    """The writer a summary goes to, or None when it is not recorded.
    While tracing a tf.function: NotImplementedError unless `in_graph`
    (the summary can be traced: see in_graph.py), and the record_if
    condition must be known at trace time."""
    writer = _state.writer
    if writer is None:
        return None
    if not in_graph:
        _check_eager(what)
    condition = _state.condition
    if (not _context.executing_eagerly() and not callable(condition) and
            hasattr(condition, "dtype") and
            not isinstance(condition, (np.generic, np.ndarray))):
        raise NotImplementedError(
            f"{what} inside a tf.function under tf.summary.record_if with a "
            f"tensor condition: tfmini decides at trace time; pass a Python "
            f"bool or a callable returning one")
    if not _condition_value(condition):
        return None
    return writer


def _resolve_step(step, what):
    if step is None:
        step = _state.step
    if step is None:
        raise ValueError(_NO_STEP)
    return _step_value(step, what)


def write_event(writer, event):
    writer._add_event(event)
