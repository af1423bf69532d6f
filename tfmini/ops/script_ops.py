"""tf.py_function and tf.numpy_function.

Eagerly they just call the function (py_function with tensors, so the
tape records what it does: gradients flow as in TF; numpy_function with
NumPy arrays, no gradient, as in TF). Traced, each call becomes an
EagerPyFunc node (csrc/ops/ops_state.def) that calls the function on
every run, holding the GIL, and checks what it returns against Tout.

Traced, an output whose Tout leaves dims unknown (a bare dtype, or a
tf.TensorSpec with None dims) takes the shape the function returns on
each run (Note [py_function outputs of unknown shape] in
csrc/graph/exec.c). The one difference from TF: tfmini's graphs know
every tensor's rank, so a bare dtype's output is traced with the largest
rank among the inputs (a scalar without inputs), and a run that returns
another rank is an InvalidArgumentError asking for Tout as
tf.TensorSpec(shape, dtype) (TF accepts TypeSpecs in Tout too). A traced
py_function is differentiable: its gradient is another EagerPyFunc node
that runs the function again under a tape (TF does the same)."""
import itertools
import threading

import numpy as np

from .. import _C
from .. import dtypes as _dtypes
from .. import errors as _errors
from .._tensor import Tensor
from ..errors import InvalidArgumentError
from ..tensor_spec import TensorSpec

__all__ = ["py_function", "numpy_function"]

# token -> (func, "py" | "numpy", [TensorSpec], name). A graph node holds
# only the token; the entry lives as long as the ConcreteFunction of the
# trace that made it (release()), or the process for other graphs.
_registry = {}
_tokens = itertools.count(1)
_lock = threading.Lock()


def _fname(func, name):
    return name or getattr(func, "__name__", None) or repr(func)


def _as_specs(Tout):
    single = not isinstance(Tout, (list, tuple))
    touts = [Tout] if single else list(Tout)
    specs = []
    for t in touts:
        if isinstance(t, TensorSpec):
            specs.append(t)
        else:
            specs.append(TensorSpec(None, _dtypes.as_dtype(t)))
    return specs, single


def _to_tensor(x):
    from .constant_op import constant
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _C.VariableBase):
        return x.read_value()
    return constant(x)


def _check_output(value, spec, k, fname):
    """value as a tensor of spec's dtype (and shape, when known)."""
    from .constant_op import constant
    dt = spec.dtype
    if isinstance(value, (Tensor, _C.VariableBase)):
        t = value if isinstance(value, Tensor) else value.read_value()
        if t.dtype != dt:
            raise InvalidArgumentError(
                None, None, f"py_function '{fname}': output {k} is "
                f"{t.dtype.name}, but Tout says {dt.name}")
    else:
        try:
            if dt == _dtypes.string:
                # str, bytes or lists of them, as TF takes them; NumPy
                # would make a '<U1' array no string tensor comes from.
                t = constant(value, dt)
                return _checked_shape(t, spec, k, fname)
            arr = np.asarray(value)
            if arr.dtype.kind in "OSU":
                raise TypeError(arr.dtype)
            t = constant(arr.astype(dt.as_numpy_dtype, copy=False)
                         if arr.dtype != dt.as_numpy_dtype else arr)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(
                None, None, f"py_function '{fname}': output {k} "
                f"({type(value).__name__}) cannot be a {dt.name} tensor: "
                f"{e}") from None
    return _checked_shape(t, spec, k, fname)


def _checked_shape(t, spec, k, fname):
    dt = spec.dtype
    want = spec.shape
    dims = None if want.rank is None else want.as_list()
    got = t._shape_tuple         # TensorShape objects cost ~5 us per output
    if dims is not None and (len(dims) != len(got) or any(
            d is not None and d != s for d, s in zip(dims, got))):
        if getattr(spec, "_rank_from_inputs", False):
            raise InvalidArgumentError(
                None, None, f"py_function '{fname}': output {k} has shape "
                f"{list(t.shape)}, but tfmini traced it with rank "
                f"{len(dims)}, its inputs' largest (Tout gave no shape and "
                f"tfmini's graphs need ranks); give Tout as "
                f"tf.TensorSpec(shape, {dt.name})")
        raise InvalidArgumentError(
            None, None, f"py_function '{fname}': output {k} has shape "
            f"{list(t.shape)}, but Tout says {dims}")
    return t


# TF's py_func.cc: the function's exceptions become these tf.errors (a
# tf.errors one keeps its class). TF makes any other UnknownError;
# tfmini's core has no such code, so they are InvalidArgumentError here.
_ERRORS = [(StopIteration, _errors.OutOfRangeError),
           (MemoryError, _errors.ResourceExhaustedError),
           (NotImplementedError, _errors.UnimplementedError)]


def _call(func, kind, args, specs, fname):
    try:
        if kind == "numpy":
            out = func(*[a.numpy() for a in args])
        else:
            out = func(*args)
    except _errors.OpError:
        raise
    except Exception as e:
        cls = next((c for py, c in _ERRORS if isinstance(e, py)),
                   InvalidArgumentError)
        raise cls(None, None, f"py_function '{fname}' raised "
                  f"{type(e).__name__}: {e}") from e
    if len(specs) == 1 and not isinstance(out, (list, tuple)):
        out = [out]
    elif out is None:
        out = []
    elif not isinstance(out, (list, tuple)):
        # One value, as TF counts it: never a tensor's rows (a [2]
        # tensor for Tout=[float32, float32] was split in two).
        out = [out]
    out = list(out)
    if len(out) != len(specs):
        raise InvalidArgumentError(
            None, None, f"py_function '{fname}' returned {len(out)} "
            f"values, but Tout has {len(specs)}")
    return [_check_output(v, s, k, fname)
            for k, (v, s) in enumerate(zip(out, specs))]


def _runner(token, inputs):
    """Called from the EagerPyFunc node (csrc/python/py_func.c)."""
    entry = _registry.get(token)
    if entry is None:
        raise InvalidArgumentError(
            None, None, f"EagerPyFunc: no Python function with token "
            f"{token} in this process (a graph with a py_function runs "
            f"only where it was traced)")
    func, kind, specs, fname = entry
    return _call(func, kind, list(inputs), specs, fname)


_C.set_py_func_runner(_runner)


def _register(func, kind, specs, fname):
    with _lock:
        token = next(_tokens)
        _registry[token] = (func, kind, specs, fname)
    # Owned by the tf.function trace that builds the node (an inner
    # tf.function traces inline, into the same frame): released when
    # that trace's ConcreteFunction goes (function.py). A graph built
    # outside any tf.function trace keeps its entries, as before.
    from ..trace_frames import _frames
    frames = _frames()
    if frames:
        frames[-1].py_tokens.append(token)
    return token


def release(tokens):
    """Forget the functions of py_function nodes whose graph is gone."""
    with _lock:
        for t in tokens:
            _registry.pop(t, None)


class _RankFromInputs(TensorSpec):
    """A bare dtype's spec in a trace: the inputs' largest rank, no dims
    (its own class only for the run-time error's words)."""
    __slots__ = ()
    _rank_from_inputs = True


def _traced_specs(specs, inputs):
    """specs with each unknown rank made the inputs' largest, as
    tfmini's graphs need ranks."""
    rank = max([len(x.shape) for x in inputs], default=0)
    return [_RankFromInputs([None] * rank, s.dtype)
            if s.shape.rank is None else s for s in specs]


def _node(token, inputs, specs, fname):
    ints = [len(specs)]
    for k, s in enumerate(specs):
        dims = [-1 if d is None else d for d in s.shape.as_list()]
        ints += [s.dtype.as_datatype_enum, len(dims)] + dims
    if len(ints) > 64:
        raise ValueError(f"py_function '{fname}': too many outputs or "
                         f"dims to trace (at most 64 numbers describe them)")
    from .._opids import ID
    return list(_C.call(ID["EagerPyFunc"], inputs, ints=ints, i=[token]))


def _traced(func, kind, inputs, specs, fname):
    specs = _traced_specs(specs, inputs)
    token = _register(func, kind, specs, fname)
    outs = _node(token, inputs, specs, fname)
    if kind == "py" and any(x.dtype.is_floating for x in inputs):
        # The graph's EagerPyFunc has no gradient rule: a tape around
        # the tf.function's call must take the custom-gradient path
        # (function.py's Note [Custom gradients under a tape around the
        # call]), whose gradient trace records the vjp below; the
        # replayed graph gave None.
        from ..trace_frames import _frames
        frames = _frames()
        if frames:
            frames[-1].custom_gradient = True
    if kind != "py" or not _C.should_record(inputs):
        return outs
    diff = [k for k, x in enumerate(inputs)
            if x.dtype.is_floating]

    def vjp(*values):
        xs, dys = list(values[:len(inputs)]), values[len(inputs):]
        from ..backprop import GradientTape
        with GradientTape() as tape:
            for k in diff:
                tape.watch(xs[k])
            ys = _call(func, "py", xs, specs, fname)
        grads = tape.gradient(ys, [xs[k] for k in diff],
                              output_gradients=list(dys))
        from .array_ops import zeros_like
        return [zeros_like(xs[k]) if g is None else g
                for k, g in zip(diff, grads)]

    def backward(output_grads):
        from .array_ops import zeros_like
        dys = [zeros_like(o) if g is None else g
               for g, o in zip(output_grads, outs)]
        gspecs = [TensorSpec(inputs[k].shape, inputs[k].dtype) for k in diff]
        gtoken = _register(vjp, "py", gspecs, fname + "_grad")
        grads = _node(gtoken, list(inputs) + dys, gspecs, fname + "_grad")
        full = [None] * len(inputs)
        for k, g in zip(diff, grads):
            full[k] = g
        return full

    fresh = [_C.fresh_tensor(o) for o in outs]
    _C.record_custom(list(inputs), fresh, backward)
    return fresh


def _run(func, inp, Tout, kind, name):
    fname = _fname(func, name)
    specs, single = _as_specs(Tout)
    inputs = [_to_tensor(x) for x in (inp or [])]
    if _C.tracing():
        outs = _traced(func, kind, inputs, specs, fname)
    else:
        outs = _call(func, kind, inputs, specs, fname)
    return outs[0] if single else outs


def py_function(func=None, inp=None, Tout=None, name=None):
    """func(*tensors) -> tensors of Tout (a dtype, a TensorSpec, or a
    list of them). Also a decorator: @tf.py_function(Tout=...)."""
    if func is None:
        return lambda f: (lambda *args: py_function(f, list(args), Tout,
                                                    name))
    if Tout is None:
        raise TypeError("py_function: Tout is required")
    return _run(func, inp, Tout, "py", name)


def numpy_function(func=None, inp=None, Tout=None, stateful=True,
                   name=None):
    """func(*ndarrays) -> arrays of Tout; never differentiable (as TF)."""
    if func is None:
        return lambda f: (lambda *args: numpy_function(
            f, list(args), Tout, stateful, name))
    if Tout is None:
        raise TypeError("numpy_function: Tout is required")
    out = _run(func, inp, Tout, "numpy", name)
    return out
