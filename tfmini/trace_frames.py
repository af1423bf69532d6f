"""The trace frames: which tf.function is being traced on this thread,
and the scopes that step out of a trace (tf.init_scope) or check what a
trace may do (tf.Variable creation). The graph a trace builds is C's
(csrc/runtime/trace.h); a frame holds what only Python knows about it:
the Function, and whether it may create variables."""
import contextlib
import threading

from . import _C
from ._tensor import Tensor

__all__ = ["init_scope"]


class _TraceFrame:
    __slots__ = ("function", "graph", "allow_variables", "created",
                 "on_replica", "custom_gradient", "py_tokens")

    def __init__(self, function, graph, allow_variables):
        self.function = function
        self.graph = graph
        self.allow_variables = allow_variables
        self.created = 0           # variables made by this trace
        # The trace asks for its replica at run time (a Generator drawn
        # under strategy.run): saved models get a trace made without.
        self.on_replica = False
        # A @tf.custom_gradient ran in the trace: see function.py's
        # Note [Custom gradients under a tape around the call].
        self.custom_gradient = False
        # The py_function tokens this trace's graph holds (script_ops):
        # released with the ConcreteFunction, or at once if the trace
        # gives none.
        self.py_tokens = []


_local = threading.local()


def _frames():
    f = getattr(_local, "frames", None)
    if f is None:
        f = _local.frames = []
    return f


def _tracing():
    """True while ops on this thread are traced into a graph (not inside
    an init_scope)."""
    return _C.tracing()


def _symbolic_name(t):
    return _C.symbolic_name(t)


@contextlib.contextmanager
def _suspend_tapes():
    """Tapes recording outside a trace must not record its symbolic ops
    (a traced call is recorded op by op when it runs, see
    csrc/graph/exec.h); tapes made inside the trace record as usual. The
    tape module's pause pushes a barrier on the active stack."""
    pause = getattr(_C, "pause_tapes", None)
    if pause is None:
        yield
        return
    pause()
    try:
        yield
    finally:
        _C.resume_tapes()


@contextlib.contextmanager
def init_scope():
    """tf.init_scope: lift the code in the block out of any tf.function
    being traced. Ops in it run eagerly (variables created in it are
    initialized at once), and gradient tapes do not record them."""
    _C.init_scope_enter()
    try:
        with _suspend_tapes():
            yield
    finally:
        _C.init_scope_exit()


def _refuse_variable_on_retrace():
    """TF's rule: a tf.function may create variables only on its first
    trace. Code that makes its variables inside tf.init_scope (Keras
    optimizer slots) asks here first, as init_scope hides the trace."""
    frames = _frames()
    if not _C.tracing() or not frames or frames[-1].allow_variables:
        return
    raise ValueError(
        "tf.function only supports singleton tf.Variables created on "
        "the first call. Make sure the tf.Variable is only created once "
        "or created outside tf.function. (tf.function "
        f"'{frames[-1].function._name}' created a variable while tracing "
        "it again.) See https://www.tensorflow.org/guide/"
        "function#creating_tfvariables for more information.")


@contextlib.contextmanager
def _variable_creation_scope():
    """tf.Variable.__init__ runs under this. While a tf.function is being
    traced it checks TF's rule (variables only on the first trace) and
    creates the variable eagerly, outside the graph, where it is then
    captured by reference."""
    frames = _frames()
    if not _C.tracing() or not frames:
        yield
        return
    _refuse_variable_on_retrace()
    frames[-1].created += 1
    with init_scope():
        yield


def _lift_to_eager(value):
    """A tf.Variable's initial value computed inside a trace, evaluated
    now: the ops it depends on run eagerly (an error if it depends on the
    function's inputs). Other values pass through."""
    if isinstance(value, Tensor) and value._symbolic:
        for frame in reversed(_frames()):
            if frame.graph.owns(value):
                try:
                    return frame.graph.lift(value)
                except ValueError as e:
                    raise ValueError(
                        f"The initial value of a tf.Variable created inside "
                        f"tf.function '{frame.function._name}' ({value}) "
                        f"depends on the function's inputs: {e}. Create the "
                        f"variable from a constant or an initializer, or "
                        f"outside the function.") from None
        raise ValueError(f"The initial value of a tf.Variable, {value}, "
                         f"is a symbolic tensor of no function being traced")
    return value
