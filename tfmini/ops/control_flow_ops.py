"""Control flow: tf.cond, tf.while_loop, tf.switch_case, tf.case and
tf.Assert (tf.TensorArray is in tensor_array.py).

Eagerly these are plain Python: one branch runs, the loop is a Python
loop, a TensorArray is a list. While a tf.function is traced they must
become graph control flow (DESIGN.md, "Control flow"): only the taken
branch runs and loops run in the C executor. See Note [Graph control flow
hooks]: everything graph-specific goes through the three `_graph_*`
functions at the end of this file; the code around them flattens nested
structures into lists of tensors and checks them with TF's messages, so
the hooks deal only in flat lists of tensors.

A GradientTape recording around a graph cond or loop records it as one
op whose gradient is traced with it (control_flow_grad.py, Note [Control
flow gradients]); the tape then also makes the branches and loop bodies
run once more at trace time, under a tape, for that gradient."""
import contextlib
import importlib

import numpy as np

from .. import _C
from .. import nest as _nest
from .. import dtypes as _dtypes
from .._tensor import Tensor
from ..composite_tensor import CompositeTensor
from ..errors import InvalidArgumentError
from ..tensor_shape import TensorShape
from . import control_flow_grad as _grad
from .tensor_array import (  # noqa: F401  (tf.TensorArray's old home)
    TensorArray, _as_tensor, _is_tensor, _is_variable)

__all__ = ["cond", "while_loop", "switch_case", "case", "Assert"]
_NAMESPACES = {"debugging": ["Assert"]}


# ---- tracing state -------------------------------------------------------

def _is_tracing():
    """True while a tf.function is being traced on this thread."""
    return importlib.import_module("tfmini.function")._tracing()


def _staged(x):
    """Whether a condition decides graph control flow: a tensor that is
    symbolic, or any tensor while tracing (a constant made inside the
    function is a graph constant, as in TF)."""
    if isinstance(x, Tensor):
        return x._symbolic or _is_tracing()
    if _is_tensor(x):
        return _is_tracing()
    return False


def _truth(pred):
    """A Python condition or an eager tensor as a Python bool."""
    if _is_tensor(pred) and not isinstance(pred, Tensor):
        pred = _as_tensor(pred)
    return bool(pred)


# ---- leaves as tensors ---------------------------------------------------

_PY_SCALARS = (bool, int, float, np.generic, np.ndarray)


def _leaf_tensor(x, what):
    """A leaf of a branch output or loop variable as a tensor (Python
    scalars and NumPy values converted, Variables read)."""
    if isinstance(x, Tensor):
        return x
    if x is None:
        raise ValueError(f"{what} is None: every output of a tf.cond "
                         f"branch or tf.while_loop body must be a tensor "
                         f"(or a value convertible to one)")
    try:
        return _as_tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be a tensor or convertible to one, "
                        f"got {x!r} of type {type(x).__name__}: "
                        f"{e}") from None


def _components(leaves, what):
    """Tensors for leaves: TensorArrays contribute their buffer (Note
    [TensorArray in graphs]), the rest _leaf_tensor. Returns (tensors,
    specs) where a spec rebuilds a leaf from its tensors."""
    tensors, specs = [], []
    for i, x in enumerate(leaves):
        if isinstance(x, TensorArray):
            comp = x._to_components()
            specs.append((x._spec(), len(comp)))
            tensors.extend(comp)
        elif isinstance(x, CompositeTensor):     # e.g. an ExtensionType
            comp = _nest.flatten(x, expand_composites=True)
            specs.append((x._type_spec, len(comp)))
            tensors.extend(comp)
        else:
            tensors.append(_leaf_tensor(x, f"{what} {i}"))
            specs.append((None, 1))
    return tensors, specs


def _from_components(specs, tensors):
    out, k = [], 0
    for spec, n in specs:
        if spec is None:
            out.append(tensors[k])
        elif not isinstance(spec, tuple):       # a composite's TypeSpec
            out.append(_nest.pack_sequence_as(spec, tensors[k:k + n],
                                              expand_composites=True))
        else:
            out.append(TensorArray._from_components(spec, tensors[k:k + n]))
        k += n
    return out


def _bool_scalar(c, what):
    """c as a scalar bool tensor, as a graph condition needs."""
    c = _as_tensor(c)
    if c.dtype != _dtypes.bool:
        raise TypeError(f"{what} must be a bool tensor, got "
                        f"{c.dtype.name}: {c}")
    dims = c._shape_tuple
    if dims:
        if any(d is not None and d != 1 for d in dims):
            raise ValueError(f"{what} must be a scalar, got shape "
                             f"{c.shape}")
        from .array_ops import reshape
        c = reshape(c, [])
    return c


# ---- tf.cond -------------------------------------------------------------

def cond(pred, true_fn=None, false_fn=None, name=None):
    """true_fn() if pred else false_fn(). Eagerly only the chosen branch
    runs; in a tf.function both are traced into a graph conditional and
    only the taken one runs at each call."""
    if true_fn is None:
        raise TypeError("cond(): 'true_fn' argument required")
    if false_fn is None:
        raise TypeError("cond(): 'false_fn' argument required")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    if _staged(pred):
        return _staged_cond(pred, true_fn, false_fn)
    return true_fn() if _truth(pred) else false_fn()


class _NoneOutput(tuple):
    """A branch that returned None: no outputs (TF allows it)."""

    def __repr__(self):
        return "None"


_NONE = _NoneOutput()


def _staged_cond(pred, true_fn, false_fn, names=("true_fn", "false_fn")):
    """Graph tf.cond: flattens each branch's output into tensors, checks
    that both branches agree (TF's messages) and hands the flat branches
    to _graph_cond."""
    pred = _as_tensor(pred)
    if pred.dtype != _dtypes.bool:
        from .math_ops import not_equal
        pred = not_equal(pred, 0)
    pred = _bool_scalar(pred, "The `pred` argument to tf.cond")
    seen = {}

    def flat(fn, label):
        def run():
            out = watcher.wrap(fn)() if watcher is not None else fn()
            structure = _NONE if out is None else out
            leaves = _nest.flatten(structure)
            tensors, specs = _components(leaves, f"Output of {label}")
            other = [k for k in seen if k != label]
            if other:
                o_struct, o_tensors = seen[other[0]]
                _check_same_outputs(names, seen, label, structure, tensors,
                                    o_struct, o_tensors)
            seen[label] = (structure, tensors)
            seen.setdefault("_specs", specs)
            if recording:
                # An outer tensor returned as it is is captured when the
                # outputs are set, after the log: add it here.
                captures.extend(t for t in tensors if not t._symbolic or
                                not _C.in_current_graph(t))
            return tensors
        return run

    # Note [Control flow gradients] (control_flow_grad.py): a tape
    # recording here records the whole If.
    recording = _grad.tapes_recording()
    captures, watcher = [], None
    if recording or _grad.watching():
        watcher = _grad.VariableWatcher()
    with (_grad.capture_log(captures) if recording
          else contextlib.nullcontext()):
        out = _graph_cond(pred, flat(true_fn, names[0]),
                          flat(false_fn, names[1]))
    structure = seen[names[0]][0]
    if recording:
        _grad.record_cond(pred, _rerun(true_fn), _rerun(false_fn),
                          list(out), captures, watcher.variables,
                          lambda p, t, f: _staged_cond(p, t, f),
                          watcher.assigns)
    if structure is _NONE:
        return None
    return _nest._pack(structure, _from_components(seen["_specs"], list(out)))


def _rerun(fn):
    """fn's outputs as a flat list of tensors (for the gradient's
    recomputation; the first trace already checked them)."""
    def run():
        out = fn()
        return _components(_nest.flatten(_NONE if out is None else out),
                           "Output")[0]
    return run


def _check_same_outputs(names, seen, label, structure, tensors, o_struct,
                        o_tensors):
    first = (o_struct, structure) if label == names[1] else (structure,
                                                              o_struct)

    def error(detail):
        raise TypeError(
            f"{names[0]} and {names[1]} arguments to tf.cond must have the "
            f"same number, type, and overall structure of return values."
            f"\n\n{names[0]} output: {first[0]!r}\n{names[1]} output: "
            f"{first[1]!r}\n\nError details:\n{detail}")

    try:
        _nest.assert_same_structure(o_struct, structure)
    except (TypeError, ValueError) as e:
        error(str(e))
    for a, b in zip(o_tensors, tensors):
        if a.dtype != b.dtype:
            error(f"{a} and {b} have different types")


# ---- tf.while_loop -------------------------------------------------------

def while_loop(cond, body, loop_vars, shape_invariants=None,
               parallel_iterations=10, back_prop=True, swap_memory=False,
               maximum_iterations=None, name=None):
    """Repeat body while cond is true; returns the final loop variables
    in the structure of loop_vars. cond and body take one argument per
    element of loop_vars. Eagerly a Python loop; in a tf.function a graph
    loop (shapes fixed unless shape_invariants relax them).

    tfmini also accepts a single tensor as loop_vars (TF wants a list or
    tuple); cond and body then take and return that one value."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    single = not isinstance(loop_vars, (list, tuple))
    if single:
        loop_vars = [loop_vars]
    elif not loop_vars:
        raise ValueError("'loop_vars' must be provided.")
    loop_vars = _nest._pack(loop_vars, [v._as_tensor() if _is_variable(v)
                                     else v for v in _nest.flatten(loop_vars)])
    if shape_invariants is not None and single:
        shape_invariants = [shape_invariants]
    if maximum_iterations is not None:
        m = _as_tensor(maximum_iterations)
        if m._shape_tuple:
            raise ValueError(f"'maximum_iterations' must be a scalar. "
                             f"Received shape: {m.shape}")
        if not m.dtype.is_integer:
            raise TypeError(f"'maximum_iterations' must be an integer, got "
                            f"{m.dtype.name}")
        maximum_iterations = m if m._symbolic else int(m)
    if _is_tracing() or (isinstance(maximum_iterations, Tensor) and
                         maximum_iterations._symbolic):
        out = _staged_while(cond, body, loop_vars, shape_invariants,
                            maximum_iterations, back_prop)
    else:
        out = _eager_while(cond, body, loop_vars, maximum_iterations)
    return out[0] if single else out


def _eager_while(cond, body, loop_vars, maximum_iterations):
    structure = list(loop_vars)
    kind = type(loop_vars)
    n = 0
    while maximum_iterations is None or n < maximum_iterations:
        if not _truth(cond(*loop_vars)):
            break
        out = body(*loop_vars)
        if not isinstance(out, (list, tuple)):
            out = kind((out,)) if kind in (list, tuple) else [out]
        try:
            _nest.assert_same_structure(structure, list(out))
        except (TypeError, ValueError) as e:
            raise ValueError(f"body of tf.while_loop must return the same "
                             f"structure as loop_vars: {e}") from None
        loop_vars = out
        n += 1

    def convert(x):
        if isinstance(x, (Tensor, TensorArray, CompositeTensor)):
            return x
        return _leaf_tensor(x, "A loop variable")

    return _nest._pack(loop_vars, [convert(x) for x in _nest.flatten(loop_vars)])


def _shape_conforms(shape, invariant):
    """shape is at least as specific as invariant (TF's
    _ShapeLessThanOrEqual): same rank, equal where invariant is known."""
    invariant = TensorShape(invariant)
    shape = TensorShape(shape)
    if invariant.rank is None:
        return True
    if shape.rank != invariant.rank:
        return False
    return all(b is None or a == b for a, b in zip(shape, invariant))


def _staged_while(cond, body, loop_vars, shape_invariants,
                  maximum_iterations, back_prop=True):
    """Graph tf.while_loop: loop variables flattened into tensors (Python
    numbers converted, TensorArrays as their buffer), the shape
    invariants checked, and cond/body wrapped to take and give flat
    lists for _graph_while."""
    structure = loop_vars
    leaves = _nest.flatten(loop_vars)
    needs = [k for k, x in enumerate(leaves) if isinstance(x, TensorArray)
             and x._buffer is None and
             not x._element_shape.is_fully_defined()]
    if needs and _C.tracing():
        from . import tensor_array_probe as probe
        try:
            probe.learn_element_shapes(body, structure, leaves, needs)
        except probe.ProbeFailed as e:
            raise ValueError(
                f"tfmini: a TensorArray carried through graph control flow "
                f"needs a fully known element shape, got "
                f"{leaves[needs[0]].element_shape}; tfmini traced the loop "
                f"body once to learn it, but {e}. Pass element_shape= to "
                f"tf.TensorArray") from None
    tensors, specs = _components(leaves, "Loop variable")
    if shape_invariants is None:
        invariants = [None] * len(leaves)
    else:
        if isinstance(shape_invariants, TensorShape):
            shape_invariants = [shape_invariants]
        invariants = _nest.flatten(_map_invariants(list(structure),
                                              list(shape_invariants)))
    flat_inv = []
    for (spec, n), inv, leaf in zip(specs, invariants, leaves):
        if spec is not None and not hasattr(leaf, "_component_invariants"):
            k = len(flat_inv)       # a composite: its components' shapes
            flat_inv.extend(t.shape for t in tensors[k:k + n])
            continue
        if spec is not None:
            flat_inv.extend(leaf._component_invariants(inv))
            continue
        t = tensors[len(flat_inv)]
        if inv is None:
            inv = t.shape
        inv = TensorShape(inv)
        if not _shape_conforms(t.shape, inv):
            raise ValueError(
                f"The shape invariant specified for {t} is not compatible "
                f"with the initial shape of the loop variable. It enters "
                f"the loop with shape {t.shape}, but the specified shape "
                f"invariant is {inv}.")
        flat_inv.append(inv)

    def unflatten(flat):
        return _nest._pack(structure, _from_components(specs, list(flat)))

    def flat_cond(*flat):
        return _bool_scalar(cond(*unflatten(flat)),
                            "The condition of tf.while_loop")

    def flat_body(*flat):
        out = body(*unflatten(flat))
        if not isinstance(out, (list, tuple)):
            out = type(structure)((out,))
        try:
            _nest.assert_same_structure(list(structure), list(out))
        except (TypeError, ValueError) as e:
            raise ValueError(f"body of tf.while_loop must return the same "
                             f"structure as loop_vars: {e}") from None
        new, _ = _components(_nest.flatten(out), "Output of the loop body")
        for a, b, inv in zip(flat, new, flat_inv):
            if a.dtype != b.dtype:
                raise TypeError(f"Loop var {a} enters the loop with type "
                                f"{a.dtype.name}, but has type "
                                f"{b.dtype.name} after 1 iteration.")
            if not _shape_conforms(b.shape, inv):
                raise ValueError(
                    f"Input tensor {a} enters the loop with shape "
                    f"{inv}, but has shape {b.shape} after one iteration. "
                    f"To allow the shape to vary across iterations, use "
                    f"the `shape_invariants` argument of tf.while_loop to "
                    f"specify a less-specific shape.")
        return new

    # Note [Control flow gradients] (control_flow_grad.py): a tape
    # recording here records the whole While (its forward loop also
    # stacks the loop variables of every iteration).
    if not (back_prop and _grad.tapes_recording() and
            any(t.dtype.is_floating for t in tensors)):
        cond_fn, body_fn = flat_cond, flat_body
        if _grad.watching():    # pass variable reads up to it
            watcher = _grad.VariableWatcher()
            cond_fn, body_fn = watcher.wrap(flat_cond), watcher.wrap(flat_body)
        return unflatten(_graph_while(cond_fn, body_fn, tensors, flat_inv,
                                      maximum_iterations))
    rec = _grad.WhileRecorder(tensors, flat_inv, maximum_iterations)
    watcher = _grad.VariableWatcher()
    captures = []
    count = stacks = None
    if rec.fixed:
        lvars, linv = rec.wrap_vars(tensors)
        with _grad.capture_log(captures):
            out = _graph_while(watcher.wrap(rec.wrap_cond(flat_cond)),
                               watcher.wrap(rec.wrap_body(flat_body)),
                               lvars, linv, maximum_iterations)
        count, out, stacks = rec.split(out)
    else:
        with _grad.capture_log(captures):
            out = _graph_while(watcher.wrap(flat_cond),
                               watcher.wrap(flat_body), tensors, flat_inv,
                               maximum_iterations)
    _grad.record_while(tensors, list(out), count, stacks, flat_body,
                       captures, watcher.variables, rec.fixed,
                       watcher.assigns)
    return unflatten(out)


def _map_invariants(structure, invariants):
    """Shape invariants in the nesting of the loop variables, a TensorShape
    (or a list of dims, or None) for each tensor."""
    def walk(s, inv):
        if _nest.is_nested(s) and inv is None:
            return _nest._pack(s, [None] * len(_nest.flatten(s)))
        if _nest.is_nested(s):
            if isinstance(s, dict) and isinstance(inv, dict) and \
                    set(s) == set(inv):
                return {k: walk(s[k], inv[k]) for k in s}
            if isinstance(s, (list, tuple)) and \
                    isinstance(inv, (list, tuple)) and len(s) == len(inv):
                return [walk(x, i) for x, i in zip(s, inv)]
            raise ValueError(f"'shape_invariants' must have the same nested "
                             f"structure as 'loop_vars': {inv!r} does not "
                             f"match {s!r}")
        if inv is None or isinstance(inv, TensorShape):
            return inv
        try:
            return TensorShape(inv)
        except TypeError:
            raise TypeError(f"A shape invariant must be a TensorShape, got "
                            f"{inv!r}") from None

    return walk(structure, invariants)


# ---- tf.switch_case and tf.case ------------------------------------------

def _branch_list(branch_fns, default, branch_index):
    if not _is_tensor(branch_index):
        raise TypeError(f"'branch_index' must be a Tensor, got "
                        f"{type(branch_index)}")
    if not _as_tensor(branch_index).dtype.is_integer:
        raise TypeError(f"'branch_index' must be an integer Tensor, got "
                        f"{_as_tensor(branch_index).dtype}")
    if not branch_fns:
        raise ValueError("Must provide at least one item in 'branch_fns'")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("'branch_fns' must be a list, tuple, or dict")
    if isinstance(branch_fns, dict):
        branch_fns = list(branch_fns.items())
    if all(callable(fn) for fn in branch_fns):
        branch_fns = list(enumerate(branch_fns))
    for pair in branch_fns:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'branch_fns' must be a 2-tuple. "
                            f"Received {pair}.")
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError(f"key must be a Python `int`, got {type(key)}")
        if not callable(fn):
            raise TypeError(f"fn for key {key} must be callable.")
    keys = [k for k, _ in branch_fns]
    if min(keys) < 0 or max(keys) >= len(keys) or len(set(keys)) != len(keys):
        raise ValueError(f"branch indices (keys) must form contiguous range "
                         f"of [0 to {len(keys)}) but found "
                         f"{{{','.join(map(str, sorted(keys)))}}}")
    fns = [fn for _, fn in sorted(branch_fns, key=lambda p: p[0])]
    if default is not None:
        if not callable(default):
            raise TypeError("'default' must be callable.")
        fns.append(default)
    return fns


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """branch_fns[branch_index](): an integer-indexed conditional. An
    index out of range runs default (or the last branch)."""
    fns = _branch_list(branch_fns, default, branch_index)
    if not _staged(branch_index):
        i = int(_as_tensor(branch_index))
        if i < 0 or i >= len(fns):
            i = len(fns) - 1
        return fns[i]()
    index = _as_tensor(branch_index)
    # A chain of graph conditionals: at run time only the taken branch
    # runs, like TF's Case op.
    from .math_ops import equal

    def chain(k):
        if k == len(fns) - 1:
            return fns[k]
        return lambda: _staged_cond(equal(index, k), fns[k], chain(k + 1),
                                    (f"branch {k}", f"branches after {k}"))

    return chain(0)()


def case(pred_fn_pairs, default=None, exclusive=False, strict=False,
         name="case"):
    """The fn of the first pair whose predicate is true, else default()
    (without default: the last pair's fn, whose predicate must then be
    true). exclusive=True checks that at most one predicate is true."""
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError("'pred_fn_pairs' must be a list, tuple, or dict. "
                        f"Received: {type(pred_fn_pairs)}")
    if not pred_fn_pairs:
        raise ValueError("'pred_fn_pairs' must not be empty.")
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a "
                            f"2-tuple. Received {pair}.")
        pred, fn = pair
        if not (_is_tensor(pred) or isinstance(pred, (bool, np.bool_))):
            raise TypeError(f"pred must be a Tensor or bool, got {pred!r}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred} must be callable.")
    if default is not None and not callable(default):
        raise TypeError("'default' must be callable.")
    preds = [p for p, _ in pred_fn_pairs]
    fns = [f for _, f in pred_fn_pairs]
    if not any(_staged(p) for p in preds):
        values = [_truth(p) for p in preds]
        if exclusive and sum(values) > 1:
            raise InvalidArgumentError(
                None, None, f"Input error: exclusive=True and more than 1 "
                f"conditions evaluated as True: {values}")
        for v, f in zip(values, fns):
            if v:
                return f()
        if default is not None:
            return default()
        raise InvalidArgumentError(
            None, None, f"Input error: None of conditions evaluated as "
            f"True: {values}")
    if exclusive:
        from .math_ops import cast
        n = None
        for p in preds:
            c = cast(_bool_scalar(_as_tensor(p), "pred"), _dtypes.int32)
            n = c if n is None else n + c
        Assert(n <= 1, ["Input error: exclusive=True and more than 1 "
                        "conditions evaluated as True:", n])
    if default is None:
        last_pred, last = preds[-1], fns[-1]
        preds, fns = preds[:-1], fns[:-1]

        def default():
            Assert(last_pred, ["Input error: None of conditions evaluated "
                               "as True"])
            return last()

    def chain(k):
        if k == len(preds):
            return default
        return lambda: _staged_cond(_as_tensor(preds[k]), fns[k],
                                    chain(k + 1),
                                    (f"branch {k}", f"branches after {k}"))

    return chain(0)()


# ---- tf.Assert -----------------------------------------------------------

def _summarize(x, summarize):
    if isinstance(x, str):
        return x
    if not _is_tensor(x):
        return str(x)
    a = np.asarray(_as_tensor(x).numpy())
    if summarize is None:
        summarize = 3
    if a.ndim == 0:
        return str(a) if summarize else ""
    flat = a.reshape(-1)
    n = flat.size if summarize < 0 else summarize
    items = [str(v) for v in flat[:n]]
    if len(items) < flat.size:
        items.append("...")
    return ", ".join(items)


def Assert(condition, data, summarize=None, name=None):
    """Raise InvalidArgumentError with data (summarize elements of each
    tensor) if condition is false. In a tf.function the check runs at
    every call."""
    if _staged(condition):
        return _graph_assert(_bool_scalar(condition, "tf.Assert condition"),
                             list(data), summarize)
    if not _truth(condition):
        text = "\n".join(_summarize(x, summarize) for x in data)
        raise InvalidArgumentError(
            # !s: a tensor's __format__ would show only its value.
            None, None, f"Expected '{condition!s}' to be true. Summarized "
            f"data: {text}")
    return None


# ---- graph control flow hooks --------------------------------------------

# Note [Graph control flow hooks]: graph control flow needs three things
# from the C core, implemented in tfmini/function.py over If/While/Assert
# nodes with sub-graphs (csrc/runtime/graph.c, csrc/graph/exec.c). Each is
# called only while a tf.function is traced, with everything nested
# already flattened and checked by the callers above:
#
# _graph_cond(pred, true_fn, false_fn) -> list of tensors
#     pred: scalar bool tensor; true_fn(), false_fn() return lists of
#     tensors of equal length and dtypes, each traced into a sub-graph
#     (outer tensors captured). One If node; only the taken branch runs.
# _graph_while(cond_fn, body_fn, loop_vars, shape_invariants,
#              maximum_iterations) -> list of tensors
#     One While node over two sub-graphs; outputs have the invariant
#     shapes (None dims may vary between iterations).
# _graph_assert(condition, data, summarize) -> None
#     A stateful node that raises InvalidArgumentError at run time.

_GRAPH_CONTROL_FLOW = True


def _graph_cond(pred, true_fn, false_fn):
    from ..function import _graph_cond as build
    return build(pred, true_fn, false_fn)


def _graph_while(cond_fn, body_fn, loop_vars, shape_invariants,
                 maximum_iterations):
    from ..function import _graph_while as build
    return build(cond_fn, body_fn, loop_vars, shape_invariants,
                 maximum_iterations)


def _graph_assert(condition, data, summarize):
    from ..function import _graph_assert as build
    return build(condition, data, summarize)

