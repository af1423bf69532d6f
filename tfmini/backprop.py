"""tf.GradientTape, tf.stop_gradient, tf.custom_gradient.

Recording happens in C at op dispatch (csrc/runtime/tape.c); this module
is the Python face: nested structures, TF's errors and warnings, and the
context-manager protocol."""
import contextlib
import enum
import functools
import inspect
import logging
import sys

import numpy as np

from . import _C
from . import dtypes as _dtypes
from . import nest as _nest
from ._tensor import Tensor

__all__ = ["GradientTape", "stop_gradient", "custom_gradient",
           "UnconnectedGradients", "RegisterGradient", "no_gradient"]

_logger = logging.getLogger("tfmini")
_warned = set()
# Set by tfmini.distribute (Note [Overlapped gradient all-reduce] in
# distribute/overlap.py): _gradient_hook(flat_sources) -> None, or an
# on_ready(j, grad) callable with finish(flat).
_gradient_hook = None


def _warn_once(key, msg, *args):
    if key not in _warned:
        _warned.add(key)
        _logger.warning(msg, *args)


class UnconnectedGradients(enum.Enum):
    """What gradient() returns for a source the target does not depend
    on: None, or zeros of the source's shape."""
    NONE = "none"
    ZERO = "zero"


def _is_variable(x):
    return isinstance(x, _C.VariableBase)


def _is_float(x):
    """A dtype gradients flow through: floating or complex (TF's
    trainable dtypes)."""
    d = _dtypes.from_enum(x._dtype_enum)
    return d.is_floating or d.is_complex


def _unconnected(value):
    if isinstance(value, UnconnectedGradients):
        return value
    try:
        return UnconnectedGradients(value)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: "
                         f"{value!r}") from None


def _to_tensor(x, dtype=None):
    from .ops.constant_op import convert_to_tensor
    return convert_to_tensor(x, dtype=dtype)


def _add_variable_targets(flat, sources, var_targets, zero):
    """Adds to each source's gradient what the variable targets that are
    that same variable give it, then applies unconnected='zero'."""
    import tfmini
    out = list(flat)
    for i, s in enumerate(sources):
        for v, g in var_targets:
            if not (_is_variable(s) and s._id == v._id):
                continue
            d = _dtypes.from_enum(v._dtype_enum)
            part = tfmini.ones(v._value_shape, d) if g is None \
                else _to_tensor(g, d)
            out[i] = part if out[i] is None else out[i] + part
        if out[i] is None and zero:
            out[i] = _zeros_like(_to_tensor(s))
    return out


def _zeros_like(t):
    from . import ops as _ops  # noqa: F401
    import tfmini
    if hasattr(tfmini, "zeros_like"):
        return tfmini.zeros_like(t)
    return _C.constant(np.zeros(t._shape_tuple,
                                _dtypes.from_enum(t._dtype_enum)
                                .as_numpy_dtype))


def _stack(rows, shape, dtype):
    """rows (Tensors of one shape) stacked on a new first axis, then
    reshaped to shape: with ops when they exist (so a jacobian stays
    differentiable and traceable), else through NumPy."""
    import tfmini
    if hasattr(tfmini, "stack") and hasattr(tfmini, "reshape") and rows:
        return tfmini.reshape(tfmini.stack(rows), shape)
    if rows:
        a = np.stack([r.numpy() for r in rows])
    else:
        a = np.zeros((0,), dtype.as_numpy_dtype)
    return _C.constant(a.reshape(shape))


def _weak_like_sources(sources, grads):
    """grads, each made weak where its source is weak, as TF's are (a
    WeakTensor is a composite there, and a composite source gets its
    gradient packed back into its own type: the gradient of the tensor
    inside, weak). See Note [One weak flag]: weakness is the class, so
    a weak gradient is a fresh identity of the plain one (never the
    plain object itself, which may be the user's output gradient or be
    shared by repeated sources)."""
    wt = sys.modules.get("tfmini.experimental.numpy.weak_tensor")
    if wt is None:       # no weak tensor was ever made
        return grads
    # A class test, in C: cheap for the many variables of a training step.
    weak = {wt.EagerWeakTensor, wt.GraphWeakTensor}
    if weak.isdisjoint(map(type, sources)):
        return grads
    out = None
    for i, s in enumerate(sources):
        if type(s) in weak and grads[i] is not None and \
                type(grads[i]) not in weak:
            from .ops.array_ops import identity
            if out is None:
                out = list(grads)
            out[i] = wt.mark(identity(grads[i]))
    return grads if out is None else out


class GradientTape:
    """Records operations for automatic differentiation.

    Ops run inside `with tf.GradientTape() as tape:` are recorded when one
    of their inputs is watched: trainable variables read in the block
    (unless watch_accessed_variables=False) and tensors passed to
    watch(). `tape.gradient(target, sources)` then differentiates. A
    non-persistent tape answers one gradient() (or jacobian) call and
    frees its record; a persistent one keeps it until deleted.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._tape = None
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._watched_variables = ()

    @property
    def _recording(self):
        return self._tape is not None and self._tape.recording

    def __enter__(self):
        self._push_tape()
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            self._pop_tape()

    def _push_tape(self):
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if "
                             "you try to re-enter an already-active tape.")
        if self._tape is None:
            self._tape = _C.Tape(self._persistent,
                                 self._watch_accessed_variables)
        self._tape.push()

    def _pop_tape(self):
        if not self._recording:
            raise ValueError("Tape is not recording.")
        self._tape.pop()

    def watch(self, tensor):
        """Watch a tensor, a variable, or a nested structure of them."""
        # A composite (an ExtensionType, a RaggedTensor) is watched
        # through its tensors, as TF does.
        for t in _nest.flatten(tensor, expand_composites=True):
            if not isinstance(t, (Tensor, _C.VariableBase)):
                raise ValueError(f"Passed in object {t} of type "
                                 f"'{type(t).__name__}', not tf.Tensor or "
                                 f"tf.Variable or ExtensionType.")
            if not _is_float(t):
                _logger.warning("The dtype of the watched tensor must be "
                                "floating (e.g. tf.float32), got %r",
                                _dtypes.from_enum(t._dtype_enum))
            if self._tape is None:
                self._tape = _C.Tape(self._persistent,
                                     self._watch_accessed_variables)
            self._tape.watch(t)

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording operations on this tape."""
        if not self._recording:
            raise RuntimeError("Trying to stop recording a tape which is "
                               "not recording.")
        self._pop_tape()
        try:
            yield
        finally:
            self._push_tape()

    def reset(self):
        """Clear everything this tape recorded and watched (as if the
        block were exited and a new tape entered)."""
        self._pop_tape()
        self._tape = None
        self._push_tape()

    def watched_variables(self):
        """The variables this tape watches, in creation order."""
        if self._tape is not None:
            self._watched_variables = self._tape.watched_variables()
        return self._watched_variables

    # ---- gradients --------------------------------------------------
    def _check_usable(self):
        if self._tape is None:
            raise RuntimeError("A non-persistent GradientTape can only be "
                               "used to compute one set of gradients (or "
                               "jacobians)")
        if not self._persistent:
            # The tape is consumed below: remember what it watched.
            self._watched_variables = self._tape.watched_variables()
        if self._recording:
            if not self._persistent:
                self._pop_tape()
            else:
                _warn_once(
                    "persistent-in-context",
                    "Calling GradientTape.gradient on a persistent tape "
                    "inside its context is significantly less efficient "
                    "than calling it outside the context (it causes the "
                    "gradient ops to be recorded on the tape, leading to "
                    "increased CPU and memory usage). Only call "
                    "GradientTape.gradient inside the context if you "
                    "actually want to trace the gradient in order to "
                    "compute higher order derivatives.")

    def _done(self):
        """A non-persistent tape is spent after one gradient/jacobian."""
        if not self._persistent:
            self._tape = None

    @staticmethod
    def _sources(sources):
        flat = _nest.flatten(sources)
        for s in flat:
            if not isinstance(s, (Tensor, _C.VariableBase)):
                raise ValueError(f"GradientTape.gradient: a source must be "
                                 f"a tf.Tensor or tf.Variable, got "
                                 f"{type(s).__name__}")
            if not _is_float(s):
                # TF 2.x only vlogs this (the watch() warning is the one
                # users see); its gradient is None either way.
                _logger.debug("The dtype of the source tensor must be "
                              "floating (e.g. tf.float32) when calling "
                              "GradientTape.gradient, got %r",
                              _dtypes.from_enum(s._dtype_enum))
        return flat

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(target)/d(sources), in the nested structure of sources.

        A list or non-scalar target is summed; output_gradients (one per
        target) weight the targets. Unconnected sources give None, or
        zeros with unconnected_gradients='zero'."""
        mode = _unconnected(unconnected_gradients)
        self._check_usable()
        all_targets = _nest.flatten(target)
        flat_sources = self._sources(sources)
        if output_gradients is not None:
            flat_og = _nest.flatten(output_gradients)
            if len(flat_og) != len(all_targets):
                raise ValueError(f"output_gradients has {len(flat_og)} "
                                 f"entries for {len(all_targets)} targets")
        else:
            flat_og = [None] * len(all_targets)
        # A variable target is its own handle, as in TF: its gradient
        # reaches only a source that is the same variable (as ones, or
        # its output gradient), watched or not; no op connects it to
        # anything else. See docs/GRADIENTS_VARIABLE_TARGETS.md.
        flat_targets, tensor_og, var_targets = [], [], []
        for t, g in zip(all_targets, flat_og):
            if _is_variable(t):
                var_targets.append((t, g))
                continue
            t = t if isinstance(t, Tensor) else _to_tensor(t)
            flat_targets.append(t)
            tensor_og.append(None if g is None else _to_tensor(g, t.dtype))
        zero = mode is UnconnectedGradients.ZERO
        try:
            if flat_targets:
                ready = _gradient_hook(flat_sources) \
                    if _gradient_hook is not None else None
                flat = self._tape.gradient(
                    flat_targets, flat_sources,
                    None if output_gradients is None else tensor_og,
                    zero and not var_targets, not self._persistent, ready)
                if ready is not None:
                    ready.finish(flat)
            else:
                flat = [None] * len(flat_sources)
        finally:
            self._done()
        if var_targets:
            flat = _add_variable_targets(flat, flat_sources, var_targets,
                                         zero)
        flat = _weak_like_sources(flat_sources, flat)
        return _nest._pack(sources, flat)

    def jacobian(self, target, sources,
                 unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """d(target[i...])/d(source[j...]) for each source: shape
        target.shape + source.shape."""
        mode = _unconnected(unconnected_gradients)
        self._check_usable()
        try:
            target = target if isinstance(target, Tensor) \
                else _to_tensor(target)
            flat_sources = self._sources(sources)
            tshape = tuple(target._shape_tuple)
            if None in tshape:
                raise ValueError("GradientTape.jacobian needs a target of "
                                 f"known shape, got {target.shape}")
            n = int(np.prod(tshape)) if tshape else 1
            rows = [[] for _ in flat_sources]
            np_dtype = target.dtype.as_numpy_dtype
            for i in range(n):
                seed = np.zeros(n, np_dtype)
                seed[i] = 1
                seed = _C.constant(seed.reshape(tshape))
                grads = self._tape.gradient(
                    [target], flat_sources, [seed],
                    mode is UnconnectedGradients.ZERO, False)
                for j, g in enumerate(grads):
                    rows[j].append(g)
            out = []
            for s, r in zip(flat_sources, rows):
                sshape = tuple(s._shape_tuple)
                if n and all(g is None for g in r):
                    out.append(None)
                    continue
                r = [_zeros_like(_to_tensor(s)) if g is None else g
                     for g in r]
                out.append(_stack(r, tshape + sshape, s.dtype))
        finally:
            self._done()
        out = _weak_like_sources(flat_sources, out)
        return _nest._pack(sources, out)

    def batch_jacobian(self, target, source,
                       unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """For target [b, y...] and source [b, x...] where example i of
        target depends only on example i of source: the [b, y..., x...]
        jacobian of each example."""
        mode = _unconnected(unconnected_gradients)
        self._check_usable()
        try:
            target = target if isinstance(target, Tensor) \
                else _to_tensor(target)
            tshape = tuple(target._shape_tuple)
            sshape = tuple(source._shape_tuple)
            if len(tshape) < 1 or len(sshape) < 1:
                raise ValueError("batch_jacobian needs target and source of "
                                 "rank 1 or more (the batch dimension "
                                 f"first), got {target.shape} and "
                                 f"{source.shape}")
            if tshape[0] != sshape[0]:
                raise ValueError(f"Need first dimension of target shape "
                                 f"({target.shape}) and source shape "
                                 f"({source.shape}) to match.")
            self._sources([source])
            b = tshape[0]
            per = int(np.prod(tshape[1:])) if len(tshape) > 1 else 1
            np_dtype = target.dtype.as_numpy_dtype
            rows = []
            for j in range(per):
                seed = np.zeros((b, per), np_dtype)
                seed[:, j] = 1
                seed = _C.constant(seed.reshape(tshape))
                (g,) = self._tape.gradient(
                    [target], [source], [seed],
                    mode is UnconnectedGradients.ZERO, False)
                rows.append(g)
            # TF 2.21 gives zeros here whatever unconnected_gradients says
            # (its pfor path never yields None): so does tfmini.
            rows = [_zeros_like(_to_tensor(source)) if g is None else g
                    for g in rows]
            # rows[j] is [b, x...]: stack to [per, b, x...], then move the
            # batch axis first.
            stacked = _stack(rows, (per,) + sshape, source.dtype)
            import tfmini
            perm = [1, 0] + list(range(2, 2 + len(sshape) - 1))
            if hasattr(tfmini, "transpose") and hasattr(tfmini, "reshape"):
                out = tfmini.transpose(stacked, perm)
                out = tfmini.reshape(out, tshape + sshape[1:])
            else:
                a = np.transpose(stacked.numpy(), perm)
                out = _C.constant(a.reshape(tshape + sshape[1:]))
        finally:
            self._done()
        return _weak_like_sources([source], [out])[0]


def stop_gradient(input, name=None):
    """The same value, through which no gradient flows."""
    if not isinstance(input, (Tensor, _C.VariableBase)):
        input = _to_tensor(input)
    return _C.fresh_tensor(input)


# ---- tf.custom_gradient ---------------------------------------------

def _takes_variables(fn):
    try:
        spec = inspect.getfullargspec(fn)
    except TypeError:
        return False
    return ("variables" in spec.args or "variables" in spec.kwonlyargs
            or spec.varkw is not None)


def _custom_gradient_call(f, args, kwargs):
    from .ops import control_flow_grad as _cf_grad
    from .trace_frames import _frames
    frames = _frames()
    if frames and _C.tracing():
        frames[-1].custom_gradient = True
    watcher = _C.Tape(False, True, True)
    # Registered as a VariableWatcher, so that a cond or loop in f neither
    # takes this variables-only tape for a recording one (a While would
    # stack its loop variables every iteration for a gradient nobody
    # takes) nor hides the variables its branches read from it.
    branches = _cf_grad.VariableWatcher()
    stack = _cf_grad._local.__dict__.setdefault("watchers", [])
    _C.pause_tapes()
    try:
        watcher.push()
        stack.append((branches, _C.tapes_active()))
        try:
            result, grad_fn = f(*args, **kwargs)
        finally:
            stack.pop()
            watcher.pop()
    finally:
        _C.resume_tapes()
    if stack:           # an enclosing branch or body: tell it
        stack[-1][0].assigns |= branches.assigns
        stack[-1][0]._add(branches.variables)
    arg_ids = {id(a) for a in args}
    variables = []
    for v in list(watcher.watched_variables()) + branches.variables:
        if id(v) not in arg_ids and all(v is not w for w in variables):
            variables.append(v)
    takes_variables = _takes_variables(grad_fn)
    if variables and not takes_variables:
        raise TypeError("@tf.custom_gradient grad_fn must accept keyword "
                        "argument 'variables', since function uses "
                        f"variables: {variables}")
    if takes_variables and not variables:
        _logger.warning("@custom_gradient grad_fn has 'variables' in "
                        "signature, but no ResourceVariables were used on "
                        "the forward pass.")

    # Reading the variables here, outside the paused section, lets the
    # outer tapes watch them (a use of the variable, as in TF).
    inputs = [a if isinstance(a, Tensor) else _to_tensor(a) for a in args]
    inputs += [v._read() for v in variables]
    flat_result = _nest.flatten(result)
    for r in flat_result:
        if not isinstance(r, (Tensor, _C.VariableBase)):
            raise TypeError("a @tf.custom_gradient function must return "
                            "tensors (and the gradient function), got "
                            f"{type(r).__name__}")
    # New ids, so that the tapes see these outputs as the custom op's.
    outputs = [_C.fresh_tensor(r) for r in flat_result]
    if not _C.should_record(inputs):
        return _nest._pack(result, outputs)
    nargs = len(args)

    def backward(output_grads):
        grads = [_zeros_like(o) if g is None else g
                 for g, o in zip(output_grads, outputs)]
        if variables:
            in_grads, var_grads = grad_fn(*grads, variables=variables)
            var_grads = list(var_grads) if var_grads is not None else []
            if len(var_grads) != len(variables):
                raise ValueError("Must return gradient for each variable "
                                 "from @custom_gradient grad_fn.")
        else:
            in_grads, var_grads = grad_fn(*grads), []
        flat = _nest.flatten(in_grads)
        if len(flat) != nargs:
            raise ValueError(f"custom_gradient function expected to return "
                             f"{nargs} gradients, but returned {len(flat)} "
                             "instead.")
        return flat + var_grads

    _C.record_custom(inputs, outputs, backward)
    return _nest._pack(result, outputs)


def custom_gradient(f=None):
    """Decorator: f(*args) returns (y, grad_fn), and grad_fn(*dys) gives
    the gradients of the args (with `variables=`: (arg grads, variable
    grads) for the variables f read)."""
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        return _custom_gradient_call(f, args, kwargs)
    return decorated



# ---- tf.RegisterGradient, tf.no_gradient ------------------------------

# TF keys these registries by op type name, for its custom ops
# (tf.load_op_library) and graph gradient_override_map. tfmini has
# neither: its gradient rules are compiled into the op table
# (csrc/ops/grad_table.c), so a registration could never take effect.
# Refusing is better than accepting a rule that silently never runs.

def _no_registry(what):
    raise NotImplementedError(
        f"tfmini: {what} is not supported: gradients are built into "
        f"tfmini's op table and there are no custom op types or "
        f"gradient_override_map for a registered gradient to apply to. "
        f"Use @tf.custom_gradient to give a function its own gradient, "
        f"or tf.stop_gradient to block one.")


class RegisterGradient:
    """tf.RegisterGradient(op_type): not supported (see above)."""

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        _no_registry(f"tf.RegisterGradient({op_type!r})")


def no_gradient(op_type):
    """tf.no_gradient(op_type): not supported (see above)."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    _no_registry(f"tf.no_gradient({op_type!r})")
