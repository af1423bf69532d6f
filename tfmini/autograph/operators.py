"""AutoGraph's runtime: the `ag__.*` functions that converted code calls.

Each decides when it runs. A Python value, or a tensor outside any
trace, gets plain Python semantics, so converted code run eagerly does
exactly what the original does and Python loops unroll while tracing. A
tensor while a tf.function is traced (see control_flow_ops._staged)
becomes graph control flow: the blocks' variables are passed explicitly
through get_state/set_state (Note [Block state]) and checked with TF's
messages before tf.cond / tf.while_loop see them."""
import builtins
import contextlib
import importlib
import logging
import sys
import threading
import types
from operator import (iadd, iand, ifloordiv, ilshift, imatmul,  # noqa: F401
                      imod, imul, ior, ipow, irshift, isub, itruediv, ixor)

import numpy as np

from .. import dtypes as _dtypes
from .._tensor import Tensor
from ..errors import OperatorNotAllowedInGraphError
from .. import nest as _nest
from ..ops import control_flow_ops as _cf
from ..tensor_shape import TensorShape
from . import loop_vars as _loop_vars

_logger = logging.getLogger("tfmini")

slice_ = builtins.slice

# Note [Block state]: converted code turns each block into a local
# function that changes the enclosing function's variables through
# `nonlocal`. get_state() returns the variables the statement may change
# (for an `if`, those read after it first: `nouts` of them); set_state()
# writes them back. A Python condition just calls the block. A staged one
# calls set_state(initial values) before tracing each branch, since both
# branches are traced one after the other, and set_state(results) after.


# ---- undefined values ----------------------------------------------------

def _unbound_message(name):
    if sys.version_info >= (3, 11):
        return (f"cannot access local variable '{name}' where it is not "
                f"associated with a value")
    return f"local variable '{name}' referenced before assignment"


class Undefined:
    """The value of a variable not yet bound where a converted block
    needs it to exist (so that `nonlocal` can refer to it). Reading it
    through ld() raises UnboundLocalError, as the original code would."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name):
        self.symbol_name = symbol_name

    def __repr__(self):
        return f"<undefined {self.symbol_name}>"

    def _unbound(self, *args, **kwargs):
        raise UnboundLocalError(_unbound_message(self.symbol_name))

    __bool__ = __iter__ = __len__ = __call__ = __getitem__ = _unbound
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unbound
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _unbound
    __mod__ = __pow__ = __matmul__ = __neg__ = __lt__ = __gt__ = _unbound
    __le__ = __ge__ = __iadd__ = __isub__ = __imul__ = __itruediv__ = \
        _unbound


class UndefinedReturnValue:
    """The return value before any `return` ran."""

    __slots__ = ()

    def __repr__(self):
        return "<no return value>"


def ld(value):
    """A read of a variable that may still be Undefined."""
    if type(value) is Undefined:
        raise UnboundLocalError(_unbound_message(value.symbol_name))
    return value


def ld_or_undef(thunk, name):
    """The variable's value (read by thunk), or Undefined(name) if it is
    not bound yet."""
    try:
        return thunk()
    except NameError:
        return Undefined(name)


def retval(value):
    """The function's result: None if no return statement ran."""
    if type(value) is UndefinedReturnValue:
        return None
    return value


# ---- helpers -------------------------------------------------------------

_local = threading.local()


@contextlib.contextmanager
def _in_graph_block():
    """Marks the tracing of a graph branch or loop body: there Python's
    print of a tensor becomes tf.print (the block's code runs once per
    trace, its ops at every call or iteration)."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


def _is_tracing():
    return _cf._is_tracing()


def _staged(x):
    """Whether x decides graph control flow (see _cf._staged)."""
    if isinstance(x, Tensor):
        return x._symbolic or _is_tracing()
    if hasattr(x, "_as_tensor") and not isinstance(x, type):
        return _is_tracing()
    return False


def _verify_condition(cond, tag):
    """cond as a scalar bool tensor, or TF's ValueError."""
    hint = "to check for None, use `is not None`"
    t = _cf._as_tensor(cond)
    if t.dtype != _dtypes.bool:
        raise ValueError(f"condition of {tag} expected to be `tf.bool` "
                         f"scalar, got {t}; to use as boolean Tensor, use "
                         f"`tf.cast`; {hint}")
    dims = t._shape_tuple
    if dims:
        known = [d for d in dims if d is not None]
        if int(np.prod(known)) > 1:
            raise ValueError(f"condition of {tag} expected to be `tf.bool` "
                             f"scalar, got {t}; {hint}")
        from ..ops.array_ops import reshape
        t = reshape(t, [])
    return t


def _as_checkable(x):
    """A leaf as something with dtype and shape, if it is a tensor or a
    Python number (as TF converts them); else None."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, np.generic, np.ndarray)):
        try:
            return _cf._as_tensor(x)
        except (TypeError, ValueError):
            return None
    if hasattr(x, "_as_tensor") and not isinstance(x, type):
        return x._as_tensor()
    return None


# ---- if ------------------------------------------------------------------

def if_stmt(cond, body, orelse, get_state, set_state, symbol_names, nouts):
    """`if cond: body() else: orelse()` (Note [Block state])."""
    if _staged(cond):
        _tf_if_stmt(cond, body, orelse, get_state, set_state, symbol_names,
                    nouts)
    elif cond:
        body()
    else:
        orelse()


def _verify_branch_vars(values, symbol_names, branch):
    for name, v in zip(symbol_names, values):
        if type(v) is Undefined:
            raise ValueError(f"'{name}' must also be initialized in the "
                             f"{branch} branch")
        if type(v) is UndefinedReturnValue:
            raise ValueError(f"the {branch} branch must also have a return "
                             f"statement.")
        for leaf in _nest.flatten(v, expand_composites=True):
            if leaf is None:
                raise ValueError(f"'{name}' is None at the end of the "
                                 f"{branch} branch.")
            if not isinstance(leaf, _cf.TensorArray) and \
                    _as_checkable(leaf) is None:
                raise TypeError(
                    f"'{name}' is used after a tensor `if` and must then be "
                    f"a {_LEGAL_TYPES} in both branches; got {leaf!r} of "
                    f"type {type(leaf).__name__}")


def _verify_cond_vars(main, orelse, symbol_names):
    for name, a, b in zip(symbol_names, main, orelse):
        try:
            _nest.assert_same_structure(a, b)
        except (TypeError, ValueError) as e:
            raise TypeError(f"'{name}' must have the same nested structure "
                            f"in the main and else branches:\n\n{e}") from e
        for x, y in zip(_nest.flatten(a, expand_composites=True),
                        _nest.flatten(b, expand_composites=True)):
            if x is None:
                raise ValueError(f"'{name}' is None at the end of the main "
                                 f"branch.")
            if y is None:
                raise ValueError(f"'{name}' is None at the end of the else "
                                 f"branch.")
            tx, ty = _as_checkable(x), _as_checkable(y)
            if tx is None or ty is None:          # TensorArrays
                if type(x) is not type(y) or x.dtype != y.dtype:
                    raise TypeError(f"'{name}' is a {type(x).__name__} in "
                                    f"the main branch but a "
                                    f"{type(y).__name__} in the else branch")
                continue
            if tx.dtype != ty.dtype:
                raise TypeError(f"'{name}' has dtype {tx.dtype.name} in the "
                                f"main branch, but dtype {ty.dtype.name} in "
                                f"the else branch")


def _tf_if_stmt(cond, body, orelse, get_state, set_state, symbol_names,
                nouts):
    cond = _verify_condition(cond, "if statement")
    if _loop_vars.probing():
        _loop_vars.probe_if(body, orelse, get_state, set_state, nouts,
                            _in_graph_block)
        return
    init = tuple(get_state())
    done = {}

    def branch(fn, label, other):
        def run():
            set_state(init)
            with _in_graph_block():
                fn()
            values = tuple(get_state())[:nouts]
            _verify_branch_vars(values, symbol_names, label)
            if other in done:
                main, alt = ((values, done[other]) if label == "main"
                             else (done[other], values))
                _verify_cond_vars(main, alt, symbol_names)
            done[label] = values
            return values
        return run

    final = _cf._staged_cond(cond, branch(body, "main", "else"),
                             branch(orelse, "else", "main"))
    set_state(tuple(final) + init[nouts:])


def if_exp(cond, if_true, if_false, expr_repr):
    """`if_true() if cond else if_false()`."""
    if _staged(cond):
        return _cf._staged_cond(_verify_condition(cond, "if expression"),
                                if_true, if_false)
    return if_true() if cond else if_false()


# ---- and, or, not --------------------------------------------------------

def and_(a, b):
    """`a() and b()`, b evaluated only if needed."""
    value = a()
    if _staged(value):
        value = _verify_condition(value, "and expression")
        return _cf._staged_cond(value, b, lambda: value)
    return value and b()


def or_(a, b):
    """`a() or b()`, b evaluated only if needed."""
    value = a()
    if _staged(value):
        value = _verify_condition(value, "or expression")
        return _cf._staged_cond(value, lambda: value, b)
    return value or b()


_COMPARE = {
    "Eq": lambda a, b: a == b, "NotEq": lambda a, b: a != b,
    "Lt": lambda a, b: a < b, "LtE": lambda a, b: a <= b,
    "Gt": lambda a, b: a > b, "GtE": lambda a, b: a >= b,
    "Is": lambda a, b: a is b, "IsNot": lambda a, b: a is not b,
    "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
}


def compare_chain(left, ops, rights):
    """`left ops[0] rights[0]() ops[1] rights[1]() ...`, a chained
    comparison: each operand evaluated at most once, the rest skipped
    after a false one (with and_, so a staged comparison makes the rest a
    graph cond)."""
    right = rights[0]()
    value = _COMPARE[ops[0]](left, right)
    if len(ops) == 1:
        return value
    return and_(lambda: value,
                lambda: compare_chain(right, ops[1:], rights[1:]))


def not_(a):
    """`not a`: tf.logical_not for a staged tensor."""
    if _staged(a):
        from ..ops.math_ops import logical_not
        return logical_not(_cf._as_tensor(a))
    return not a


# ---- assert --------------------------------------------------------------

def assert_stmt(test, message):
    """`assert test, message()`: a graph assertion for a staged tensor."""
    if _staged(test):
        data = message()
        if not isinstance(data, list):
            data = [data]
        return _cf.Assert(test, [d for d in data if d is not None])
    if not test:
        msg = message()
        if msg is None:
            raise AssertionError()
        raise AssertionError(msg)
    return None


# ---- loops ---------------------------------------------------------------

def _shape_invariants(opts, init):
    """set_loop_options(shape_invariants=((var, shape), ...)) by the
    identity of each variable's value when the loop starts."""
    pairs = opts.get("shape_invariants") if opts else None
    if not pairs:
        return None
    by_id = {id(v): s for v, s in pairs}
    out = [by_id.get(id(v)) for v in init]
    return out if any(s is not None for s in out) else None


_LEGAL_TYPES = "Tensor, int, float, bool, TensorArray or a list, tuple or " \
    "dict of these"


def _verify_loop_init_vars(values, symbol_names, note=None):
    for name, v in zip(symbol_names, values):
        for leaf in _nest.flatten(v, expand_composites=True):
            if leaf is not None and type(leaf) not in (
                    Undefined, UndefinedReturnValue) and \
                    not isinstance(leaf, _cf.TensorArray) and \
                    _as_checkable(leaf) is None:
                raise TypeError(
                    f"'{name}' is a loop variable of a loop over tensors and "
                    f"must be a {_LEGAL_TYPES}; got {leaf!r} of type "
                    f"{type(leaf).__name__}")
        extra = f"\n{note}" if note else ""
        if type(v) is UndefinedReturnValue:
            raise ValueError(
                f"a return statement inside a loop over tensors needs the "
                f"return value's type, which tfmini could not learn by "
                f"tracing the loop body once; assign the result to a "
                f"variable defined before the loop and `break` "
                f"instead.{extra}")
        if v is None:
            raise ValueError(f"'{name}' is not allowed to be None before "
                             f"the loop{extra}")
        if type(v) is Undefined:
            raise ValueError(f"'{name}' must be defined before the "
                             f"loop.{extra}")


def _is_subshape(shape, of):
    of = TensorShape(of)
    if of.rank is None:
        return True
    if shape.rank != of.rank:
        return False
    return all(b is None or a == b for a, b in zip(shape, of))


def _verify_loop_var(name, init, entry, exit_, invariant):
    if exit_ is None:
        raise ValueError(f"'{name}' is None at the end of the iteration.")
    if isinstance(entry, _cf.TensorArray) or isinstance(exit_,
                                                         _cf.TensorArray):
        if type(entry) is not type(exit_) or entry.dtype != exit_.dtype:
            raise TypeError(f"'{name}' does not have the same type after "
                            f"one iteration: {entry!r} and {exit_!r}")
        return
    entry, exit_ = _as_checkable(entry), _as_checkable(exit_)
    if entry is None or exit_ is None:
        return
    if entry.dtype != exit_.dtype:
        raise TypeError(f"'{name}' has dtype {entry.dtype.name} before the "
                        f"loop, but dtype {exit_.dtype.name} after one "
                        f"iteration")
    if invariant is None:
        if not _is_subshape(exit_.shape, entry.shape):
            raise ValueError(
                f"'{name}' has shape {entry.shape} before the loop, but "
                f"shape {exit_.shape} after one iteration. Use "
                f"tf.autograph.experimental.set_loop_options to set shape "
                f"invariants.")
        return
    invariant = TensorShape(invariant)
    init = _as_checkable(init)
    if init is not None and not _is_subshape(init.shape, invariant):
        raise ValueError(f"'{name}' has shape {init.shape} before the "
                         f"loop, which does not conform with the shape "
                         f"invariant {invariant}.")
    if not _is_subshape(exit_.shape, invariant):
        raise ValueError(f"'{name}' has shape {exit_.shape} after one "
                         f"iteration, which does not conform with the shape "
                         f"invariant {invariant}.")


def _verify_loop_vars(init, entry, exit_, symbol_names, invariants):
    for i, name in enumerate(symbol_names):
        try:
            _nest.assert_same_structure(init[i], entry[i])
            _nest.assert_same_structure(entry[i], exit_[i])
        except (TypeError, ValueError) as e:
            raise TypeError(f"'{name}' does not have the same nested "
                            f"structure after one iteration.\n\n{e}") from e
        inv = invariants[i] if invariants else None
        for a, b, c in zip(*(_nest.flatten(s[i], expand_composites=True)
                             for s in (init, entry, exit_))):
            _verify_loop_var(name, a, b, c, inv)


def _tf_while_stmt(test, body, get_state, set_state, symbol_names, opts):
    init = tuple(get_state())
    invariants = _shape_invariants(opts, init)
    # Note [Variables created in loops] (loop_vars.py).
    nulls = [type(v) in (Undefined, UndefinedReturnValue) for v in init]
    once = any(nulls)
    if once:
        orig = init
        try:
            init, extra = _loop_vars.handle_undefineds(
                body, get_state, set_state, init, nulls,
                invariants or [None] * len(init), _in_graph_block)
        except _loop_vars._ProbeFailed as e:
            _verify_loop_init_vars(init, symbol_names,
                                   f"Note: tfmini traced the loop body once "
                                   f"to define it, but {e}")
            raise
        if any(x is not None for x in extra):
            invariants = [x if x is not None else
                          (invariants[i] if invariants else None)
                          for i, x in enumerate(extra)]
    _verify_loop_init_vars(init, symbol_names)

    def aug_test(*values):
        if once:
            values = values[1:]
        set_state(values)
        with _in_graph_block():
            return _verify_condition(test(), "while loop")

    def aug_body(*values):
        if once:
            values = values[1:]
        set_state(values)
        with _in_graph_block():
            body()
        new = tuple(get_state())
        _verify_loop_vars(init, values, new, symbol_names, invariants)
        return ((True,) + new) if once else new

    loop_vars, loop_inv = list(init), invariants
    if once:
        loop_vars = [False] + loop_vars
        loop_inv = [None] + list(invariants) if invariants else None
    final = _cf._staged_while(aug_test, aug_body, loop_vars, loop_inv,
                              (opts or {}).get("maximum_iterations"))
    final = tuple(final)
    if once:
        _cf.Assert(final[0], [_loop_vars.zero_iterations_message(
            symbol_names, nulls, orig)])
        final = final[1:]
    set_state(final)


def while_stmt(test, body, get_state, set_state, symbol_names, opts):
    """`while test(): body()`: a graph loop when the test is a staged
    tensor, else a Python loop (unrolled while tracing)."""
    first = test()
    if _staged(first):
        _tf_while_stmt(test, body, get_state, set_state, symbol_names,
                       opts)
        return
    if not first:
        return
    body()
    while _python_test(test(), "while"):
        body()


def _python_test(value, kind):
    try:
        return bool(value)
    except OperatorNotAllowedInGraphError as e:
        if kind == "while":
            raise NotImplementedError(
                "The condition of while loop started as non-Tensor, then "
                "changed to Tensor. This may happen either because "
                "variables changed type, or when a break or return "
                "statement inside the loop depends on a Tensor condition. "
                "In both cases, changing to a TF loop should remove the "
                "error (e.g. start the loop variable as a tensor: "
                "`i = tf.constant(0)`).") from e
        raise NotImplementedError(
            "break and return statements which depend on a TF condition "
            "are not supported in Python for loops. Did you intend to make "
            "it a TF loop (e.g. `for i in tf.range(n)`)?") from e


class _SymbolicRange:
    """tf.range(...) or range(...) with symbolic bounds as the iterable of
    a `for`: the loop counts instead of building the range."""

    __slots__ = ("start", "limit", "delta", "dtype")

    def __init__(self, start, limit, delta, dtype):
        self.start, self.limit, self.delta = start, limit, delta
        self.dtype = dtype

    def __iter__(self):
        raise TypeError("tfmini: a range with symbolic bounds can only be "
                        "iterated by a `for` loop in converted code")


def for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names,
             opts):
    """`for target in iter_: body(target)` (stopping early once
    extra_test() is false, for break/return): a graph loop over a staged
    tensor, a symbolic range or (while tracing) a dataset of plain
    tensors, else a Python loop."""
    if isinstance(iter_, _SymbolicRange):
        _tf_range_for(iter_, extra_test, body, get_state, set_state,
                      symbol_names, opts)
    elif _staged(iter_):
        _tf_tensor_for(_cf._as_tensor(iter_), extra_test, body, get_state,
                       set_state, symbol_names, opts)
    elif _is_tracing() and (spec := _dataset_spec(iter_)) is not None:
        _tf_dataset_for(iter_, spec, extra_test, body,
                        get_state, set_state, symbol_names, opts)
    elif (ds := _fresh_iterator_dataset(iter_)) is not None and \
            (spec := _dataset_spec(ds)) is not None:
        _tf_dataset_for(ds, spec, extra_test, body, get_state, set_state,
                        symbol_names, opts)
        iter_._it = iter(())    # read to its end, as the unrolled loop
    elif _is_tracing() and _is_dataset(iter_):
        from ..data import traced_next
        traced_next.warn_unrolled(iter_)
        _python_for(iter_, extra_test, body)
    else:
        _python_for(iter_, extra_test, body)


def _is_dataset(x):
    from ..data.dataset import Dataset
    return isinstance(x, Dataset)


def _python_for(iter_, extra_test, body):
    if extra_test is not None:
        if _python_test(extra_test(), "for"):
            for target in iter_:
                body(target)
                if not _python_test(extra_test(), "for"):
                    break
    else:
        for target in iter_:
            body(target)


def _counted_loop(first, advance, more, extra_test, body_of, get_state,
                  set_state, symbol_names, opts):
    """A staged loop with a hidden counter: the state gains the counter
    in front; more(counter) is the main test."""
    counter = [first]

    def aug_get_state():
        return (counter[0],) + tuple(get_state())

    def aug_set_state(values):
        counter[0] = values[0]
        set_state(tuple(values[1:]))

    def aug_body():
        body_of(counter[0])
        counter[0] = advance(counter[0])

    def aug_test():
        main = more(counter[0])
        if extra_test is None:
            return main
        extra = extra_test()
        if not _staged(extra):
            return main if extra else _cf._as_tensor(False)
        from ..ops.math_ops import logical_and
        return logical_and(main, _cf._as_tensor(extra))

    _tf_while_stmt(aug_test, aug_body, aug_get_state, aug_set_state,
                   ("<internal iterate>",) + tuple(symbol_names), opts)


def _dataset_spec(ds):
    """The element_spec of a dataset that a staged loop can pull, else
    None (the loop unrolls as before)."""
    from ..data import traced_next
    return traced_next.loop_spec(ds)


def _fresh_iterator_dataset(it):
    """The dataset of iter(ds) made in this trace and not read yet (TF
    loops over it in the graph, as over ds), else None."""
    from ..data.dataset import _Iterator
    if type(it) is _Iterator and it._traced and it._count == 0 and \
            it._dataset is not None and _is_tracing():
        return it._dataset
    return None


def _tf_dataset_for(ds, spec, extra_test, body, get_state, set_state,
                    symbol_names, opts):
    """A graph loop over a dataset that reads it on each run (Note
    [Dataset loops in a graph] in data/traced_next.py). The state gains
    the run's token and the iteration number in front."""
    from ..data import traced_next
    from ..ops import control_flow_grad
    loop = traced_next.DatasetLoop(ds, spec,
                                   control_flow_grad.tapes_recording())
    hidden = [loop.open(), _cf._as_tensor(np.int64(0))]

    def aug_get_state():
        return tuple(hidden) + tuple(get_state())

    def aug_set_state(values):
        hidden[:] = values[:2]
        set_state(tuple(values[2:]))

    def aug_body():
        element = loop.take(hidden[0], hidden[1])
        hidden[1] = hidden[1] + 1
        body(element)

    def aug_test():
        if extra_test is not None:
            extra = extra_test()
            if not _staged(extra) and not extra:
                return _cf._as_tensor(False)
        main = loop.has_next(hidden[0], hidden[1])
        if extra_test is None or not _staged(extra):
            return main
        from ..ops.math_ops import logical_and
        return logical_and(_cf._as_tensor(extra), main)

    # TF's dataset loop reads every element whatever
    # set_loop_options(maximum_iterations=...) says (TF 2.21 checked).
    opts = {k: v for k, v in (opts or {}).items()
            if k != "maximum_iterations"}
    _tf_while_stmt(aug_test, aug_body, aug_get_state, aug_set_state,
                   ("<internal token>", "<internal iterate>") +
                   tuple(symbol_names), opts)
    loop.close(hidden[0])


def _tf_tensor_for(t, extra_test, body, get_state, set_state, symbol_names,
                   opts):
    from ..ops.array_ops import gather, shape
    dims = t._shape_tuple
    if not dims:
        raise TypeError("Cannot iterate over a scalar tensor.")
    n = dims[0] if dims[0] is not None else shape(t)[0]
    _counted_loop(_cf._as_tensor(0), lambda i: i + 1, lambda i: i < n,
                  extra_test, lambda i: body(gather(t, i)), get_state,
                  set_state, symbol_names, opts)


def _tf_range_for(r, extra_test, body, get_state, set_state, symbol_names,
                  opts):
    from ..ops.math_ops import cast, logical_and, logical_or

    def tensor(v):
        t = _cf._as_tensor(v)
        return t if t.dtype == r.dtype else cast(t, r.dtype)

    start, limit, delta = tensor(r.start), tensor(r.limit), tensor(r.delta)
    if not delta._symbolic:
        up = bool(delta.numpy() >= 0)

        def more(i):
            return i < limit if up else i > limit
    else:
        def more(i):
            return logical_or(logical_and(delta >= 0, i < limit),
                              logical_and(delta < 0, i > limit))
    _counted_loop(start, lambda i: i + delta, more, extra_test, body,
                  get_state, set_state, symbol_names, opts)


def _range_of(f, args, kwargs):
    """A _SymbolicRange for range(...) / tf.range(...) whose bounds are
    symbolic tensors, else None."""
    from ..ops import array_ops
    kw = dict(kwargs)
    dtype = kw.pop("dtype", None)
    kw.pop("name", None)
    names = ["start", "limit", "delta"]
    vals = dict(zip(names, args))
    vals.update(kw)
    if set(vals) - set(names) or len(args) > 3:
        return None
    if "limit" not in vals:
        vals["start"], vals["limit"] = 0, vals.get("start")
    vals.setdefault("delta", 1)
    start, limit, delta = vals["start"], vals["limit"], vals["delta"]
    if not any(isinstance(v, Tensor) and v._symbolic
               for v in (start, limit, delta)):
        return None
    if dtype is None:
        dtype = builtins.max(
            (array_ops._arg_dtype(v) for v in (start, limit, delta)),
            key=lambda d: array_ops._RANGE_ORDER.index(d.name))
    return _SymbolicRange(start, limit, delta, _dtypes.as_dtype(dtype))


# ---- calls ---------------------------------------------------------------

def _tf_range():
    from ..ops.array_ops import range as tf_range
    return tf_range


def converted_call(f, args, kwargs, for_iter=False):
    """f(*args, **kwargs), with f converted first if it is a user
    function (see api.call_target)."""
    if for_iter and (f is builtins.range or f is _tf_range()):
        r = _range_of(f, args, kwargs)
        if r is not None:
            return r
    if f is builtins.print:
        return _print(args, kwargs)
    if (f is builtins.enumerate or f is builtins.zip) and _is_tracing():
        ds = _dataset_builtin(f, args, kwargs)
        if ds is not None:
            return ds
    if f is builtins.len and len(args) == 1 and not kwargs:
        return _len(args[0])
    if not isinstance(f, (type, types.BuiltinFunctionType)):
        target = _call_target(f)
        if target is not None:
            return target(*args, **kwargs)
    return f(*args, **kwargs)


def _dataset_builtin(f, args, kwargs):
    """enumerate(ds) / zip(ds, ...) while tracing as the dataset's own
    (ds.enumerate(), Dataset.zip), as TF's AutoGraph: a `for` over it is
    then a graph loop over the dataset. None for other arguments."""
    from ..data.dataset import Dataset
    from ..data.map_trace import known_spec
    from ..tensor_spec import TensorSpec
    if f is builtins.enumerate:
        kw = dict(kwargs)
        start = kw.pop("start", args[1] if len(args) > 1 else 0)
        if len(args) not in (1, 2) or kw or \
                not isinstance(args[0], Dataset):
            return None
        out = args[0].enumerate(start)
        spec = known_spec(args[0])
        if spec is not None:        # known without reading an element
            out._spec = (TensorSpec((), _dtypes.int64), spec)
    elif args and not set(kwargs) - {"strict"} and \
            all(isinstance(a, Dataset) for a in args):
        out = Dataset.zip(tuple(args))
    else:
        return None
    # Graph tensors only where the arguments had them (traced_next's
    # loop_spec reads a first element of datasets made while tracing).
    out._eager_elements = not any(getattr(a, "_made_tracing", False)
                                  for a in args if isinstance(a, Dataset))
    return out


def _call_target(f):       # replaced by api.call_target when api loads
    return None


def _print(args, kwargs):
    """print(...). Inside a graph loop or branch, printing tensors is
    tf.print: it prints at every iteration, and only when the branch is
    taken. Elsewhere it is Python's print (so, in a tf.function, it
    prints only while tracing, as TF's does)."""
    if getattr(_local, "depth", 0) and _is_tracing() and \
            any(isinstance(a, Tensor) for a in args):
        fn = importlib.import_module("tfmini.function")
        tf_print = getattr(fn, "_print", None) or getattr(fn, "print", None)
        unknown = set(kwargs) - {"sep", "end", "file", "flush"}
        if tf_print is not None and not unknown:
            sep = kwargs.get("sep")
            end = kwargs.get("end")
            return tf_print(*args, sep=" " if sep is None else sep,
                            end="\n" if end is None else end,
                            output_stream=kwargs.get("file") or sys.stdout)
    return builtins.print(*args, **kwargs)


def _len(x):
    if isinstance(x, Tensor):
        dims = x._shape_tuple
        if dims and dims[0] is None:
            from ..ops.array_ops import shape
            return shape(x)[0]
    return builtins.len(x)


# ---- item assignment -----------------------------------------------------

def setitem(obj, key, value):
    """`obj[key] = value`; for a tensor, a new tensor with the element(s)
    replaced (tensors are immutable). Returns what obj should be now."""
    if isinstance(obj, Tensor):
        return _tensor_setitem(obj, key, value)
    obj[key] = value
    return obj


def aug_setitem(obj, key, op, value):
    """`obj[key] op= value`, key evaluated once."""
    if isinstance(obj, Tensor):
        return _tensor_setitem(obj, key, op(obj[key], value))
    obj[key] = op(obj[key], value)
    return obj


def update_attr(obj, name, value):
    """`obj.name = value` unless obj.name already is value (after an item
    assignment that changed the object in place)."""
    if getattr(obj, name) is not value:
        setattr(obj, name, value)


def _int_index(k):
    if isinstance(k, (bool, np.bool_)):
        return False
    if isinstance(k, (int, np.integer)):
        return True
    return (isinstance(k, Tensor) and k.dtype.is_integer and
            not k._shape_tuple)


def _tensor_setitem(t, key, value):
    from ..ops import array_ops as ao
    if not isinstance(value, Tensor):
        value = _cf._as_tensor(value, t.dtype) if not hasattr(
            value, "_as_tensor") else value._as_tensor()
    dims = t._shape_tuple
    keys = key if isinstance(key, tuple) else (key,)
    if keys and len(keys) <= len(dims) and all(_int_index(k)
                                               for k in keys):
        # Whole elements or rows: one scatter of the indexed slice.
        index = []
        for k, d in zip(keys, dims):
            if isinstance(k, Tensor):
                if k.dtype != _dtypes.int32:
                    from ..ops.math_ops import cast
                    k = cast(k, _dtypes.int32)
                if d is not None:
                    k = ao.where(k < 0, k + d, k)
            else:
                k = int(k)
                if d is not None and not -d <= k < d:
                    raise IndexError(f"index {k} is out of bounds for a "
                                     f"dimension of size {d} (tensor of "
                                     f"shape {t.shape})")
                if k < 0:
                    k += d
                k = _cf._as_tensor(k, _dtypes.int32)
            index.append(k)
        idx = ao.reshape(ao.stack(index), [1, len(index)])
        rest = list(dims[len(keys):])
        if value._shape_tuple != tuple(rest) and None not in rest:
            value = ao.broadcast_to(value, rest)
        return ao.tensor_scatter_nd_update(t, idx, ao.expand_dims(value, 0))
    if None in dims:
        raise NotImplementedError(
            f"tfmini: item assignment with key {key!r} needs the tensor's "
            f"shape to be known, got {t.shape}")
    n = int(np.prod(dims)) if dims else 1
    positions = ao.reshape(ao.range(n), list(dims))[key]
    sel = list(positions._shape_tuple)
    value = ao.broadcast_to(value, sel) if value._shape_tuple != \
        tuple(sel) else value
    flat = ao.tensor_scatter_nd_update(
        ao.reshape(t, [-1]), ao.reshape(positions, [-1, 1]),
        ao.reshape(value, [-1]))
    return ao.reshape(flat, list(dims))
