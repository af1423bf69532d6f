"""Scalar and histogram summaries inside a tf.function.

Note [Summaries in graphs]: tfmini's graphs have no op that writes an
event file, but they have PrintV2 (tf.print), which on every run hands
its text to a Python stream object. A summary traced in a tf.function
becomes one PrintV2 node printing "<step>|<data>;" to a _Sink, which
parses the numbers back and writes the Event. The text is exact: PrintV2
prints every element (summarize=-1) in the shortest form that round-trips
(%.6g/%.9g for float32, %.15g/%.17g for float64; see
csrc/ops/state.c), and the step as an int64. As in TF, the writer and the
record_if condition are those of the trace: a graph keeps writing to the
writer that was the default when it was traced."""
import threading
import weakref

import numpy as np

_lock = threading.Lock()
_sinks = {}


def _numbers(text):
    tokens = text.replace("[", " ").replace("]", " ").split()
    return np.array(tokens, dtype=np.float64)


class _Sink:
    """The output stream of one traced summary: parses each record the
    PrintV2 node writes and emits it to the writer of the trace."""

    def __init__(self, writer, emit):
        self._writer = weakref.ref(writer)
        self._emit = emit
        self._pending = ""

    def write(self, text):
        self._pending += text
        while ";" in self._pending:
            record, _, self._pending = self._pending.partition(";")
            step, _, data = record.partition("|")
            writer = self._writer()
            if writer is None:
                raise RuntimeError("the SummaryWriter this tf.function was "
                                   "traced with has been deleted")
            self._emit(writer, int(step), _numbers(data))

    def flush(self):
        pass


def graph_step(step, state_step, what):
    """The step of a summary traced in a tf.function, as an int64 tensor
    (a variable is read on every call; a Python int is fixed)."""
    from .. import cast, constant, int64
    from .writer import _NO_STEP, _step_value
    if step is None:
        step = state_step
    if step is None:
        raise ValueError(_NO_STEP)
    if hasattr(step, "dtype") and hasattr(step, "shape"):
        if not step.dtype.is_integer:
            raise TypeError(f"{what}: step must be an integer (it is cast "
                            f"to int64), got dtype {step.dtype.name}")
        if step.shape.rank not in (None, 0):
            raise ValueError(f"{what}: step must be a scalar, got shape "
                             f"{step.shape.as_list()}")
        return cast(step, int64)
    return constant(_step_value(step, what), int64)


def record(key, writer, step, data, emit):
    """Add the PrintV2 node that writes one summary on every call: `emit`
    (writer, step, float64 values) runs on the host."""
    from ..ops.logging_ops import _print
    with _lock:
        sink = _sinks.get(key)
        if sink is None or sink._writer() is not writer:
            sink = _sinks[key] = _Sink(writer, emit)
    _print(step, data, output_stream=sink, summarize=-1, sep="|", end=";")
    return True
