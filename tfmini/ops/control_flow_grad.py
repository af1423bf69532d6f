"""Gradients through graph tf.cond / tf.while_loop (a GradientTape
recording inside a tf.function).

Note [Control flow gradients]: the ops of a branch or loop body live in a
sub-graph that tapes do not see (they are paused while it is traced), so
a tape recording around a staged tf.cond / tf.while_loop records the
whole If / While as ONE op (tape.c's record_custom, as tf.custom_gradient
does). Its inputs are what gradients can flow to: the float loop
variables, the outer tensors the sub-graphs captured (Note [Capture log]
in csrc/runtime/trace.h) that a tape connects to, and the variables the
sub-graphs read.

The gradient's graph is traced right away, while the forward op is made,
and not when tape.gradient runs: it reruns the user's branch or body
under a fresh tape, and Python state those functions read (a closure
variable, AutoGraph's block state) is only as the forward pass saw it
now; later the code after the cond may have rebound it. What waits for
tape.gradient is only the node that runs that graph, a While over the
incoming gradients (for a cond: one iteration, a call):

- cond: the gradient sub-graph is an If on the same predicate over the
  two branches' vector-Jacobian products (each reruns its branch under a
  tape; zeros for inputs a branch does not use, so both branches give
  the same structure).
- while_loop: the forward loop also carries an iteration count and, for
  each loop variable, a stack of its value entering every iteration
  (grown by concat, large ones in chunks: see WhileRecorder; loop
  variables whose shape invariant has None dims get no gradient, see the
  error in backward). The gradient is a reverse
  While that, for i = n-1 .. 0, reruns the body on the saved values of
  iteration i under a tape, applies its VJP to the running gradient of
  the loop variables and adds up the gradients of captures and
  variables.

Limits: recomputing is exact for code without side effects; a body that
assigns a variable does so again when the gradient runs, and reads the
new value. The gradient must be taken in the graph that made the op (the
usual: tape.gradient in the same function body; a second request, from
a persistent tape or tape.jacobian, makes a While sharing the first
one's sub-graphs: Note [While again] in csrc/runtime/graph_while_again.h),
and gradients of these
gradients (a tape around the tape) are refused with an error rather than
coming back None.
"""
import contextlib
import threading

import numpy as np

from .. import _C
from .. import dtypes as _dtypes
from .._tensor import Tensor


def _is_float(t):
    return isinstance(t, Tensor) and t.dtype.is_floating


_local = threading.local()


def tapes_recording():
    """Whether a tape records now (above the innermost pause), not
    counting a VariableWatcher's own tape: inside a branch traced with
    the outer tapes paused, only a tape the user made there counts."""
    n = _C.tapes_active()
    stack = getattr(_local, "watchers", None)
    return n > 0 and not (stack and n == stack[-1][1])


def watching():
    """Whether code is being traced for a VariableWatcher: a cond or loop
    there must watch its own branches too and pass what it saw up (the
    outer watcher's tape is paused while they are traced)."""
    return bool(getattr(_local, "watchers", None))


@contextlib.contextmanager
def capture_log(into):
    """Collects (into the list `into`) the outer tensors that ops traced
    in the block use: see Note [Capture log]."""
    mark = _C.capture_log_open()
    try:
        yield
    finally:
        into.extend(_C.capture_log_close(mark, None))


class VariableWatcher:
    """Wraps a function traced into a sub-graph so that the variables it
    reads are remembered (a variables-only tape, pushed inside the
    sub-graph trace where the outer tapes are paused), and whether it
    assigned one."""

    def __init__(self):
        self.variables = []
        self._ids = set()
        self.assigns = False     # the code assigned a variable

    def wrap(self, fn):
        def run(*args):
            watcher = _C.Tape(False, True, True)
            before = _C.traced_assigns()
            watcher.push()
            stack = _local.__dict__.setdefault("watchers", [])
            stack.append((self, _C.tapes_active()))
            try:
                return fn(*args)
            finally:
                stack.pop()
                watcher.pop()
                self.assigns |= _C.traced_assigns() != before
                self._add(watcher.watched_variables())
                if stack:       # an enclosing branch or body: tell it
                    parent = stack[-1][0]
                    parent.assigns |= self.assigns
                    parent._add(self.variables)
        return run

    def _add(self, variables):
        for v in variables:
            if id(v) not in self._ids and v.dtype.is_floating:
                self._ids.add(id(v))
                self.variables.append(v)


def _tape():
    from ..backprop import GradientTape
    return GradientTape(persistent=False, watch_accessed_variables=False)


def _zeros_like(t):
    from .array_ops import zeros_like
    return zeros_like(t)


def _sources(captures, variables):
    """The custom op's extra inputs: float captures a tape connects to,
    and reads of the variables (a read carries the variable's id, so a
    tape's gradient for the variable flows through it)."""
    caps, seen = [], set()
    for c in captures:
        # The same tensor can be logged under two wrappers (a use in an
        # op and a branch returning it as it is): once only, or its
        # gradient would count twice.
        if _is_float(c) and c._id not in seen and _C.should_record([c]):
            seen.add(c._id)
            caps.append(c)
    reads = [v._read() for v in variables]
    keep = [i for i, r in enumerate(reads) if _C.should_record([r])]
    return caps, [variables[i] for i in keep], [reads[i] for i in keep]


def _vjp(fn, args, watch_args, caps, variables, dys):
    """fn(*args) rerun under a fresh tape -> gradients of sum(dys * outs)
    for the watched args, caps and variables (zeros where unconnected)."""
    from ..backprop import UnconnectedGradients
    tape = _tape()
    with tape:
        for a in watch_args:
            tape.watch(a)
        for c in caps:
            tape.watch(c)
        for v in variables:
            tape.watch(v)
        outs = fn(*args)
    idx = [k for k, o in enumerate(outs) if _is_float(o)]
    sources = list(watch_args) + list(caps) + list(variables)
    if not sources:
        return []
    if not idx:
        return [_zeros_like(s if isinstance(s, Tensor) else s._read())
                for s in sources]
    return tape.gradient([outs[k] for k in idx], sources,
                         output_gradients=[dys[k] for k in idx],
                         unconnected_gradients=UnconnectedGradients.ZERO)


# ---- calling a gradient sub-graph --------------------------------------

class _GradCall:
    """A sub-graph traced now (explicit inputs [i, *args]; outputs
    [i + 1, ...]) and run later as a one-iteration While, or (reverse)
    as the body of a loop while i >= 0."""

    def __init__(self, name, body, specs, loop_cond):
        from ..function import _trace_sub, TensorSpec
        from .. import tensor_shape
        specs = [TensorSpec(tensor_shape.TensorShape([]), _dtypes.int32)] \
            + list(specs)
        self.body = _trace_sub(name, body, specs)
        self.cond = _trace_sub(name + "_cond", lambda i, *r: [loop_cond(i)],
                               specs)
        self.name = name
        self.first_node = None    # an output of the first While made

    def __call__(self, first, args, deps):
        """Runs the sub-graph on [first, *args]; deps are the forward
        op's inputs (what its result also depends on)."""
        from .constant_op import convert_to_tensor
        what = self.name.split('_')[0]
        first = convert_to_tensor(first, _dtypes.int32)
        try:
            if self.first_node is None:
                out = _C.graph_while([first] + list(args), self.cond[0],
                                     self.cond[1][0], self.body[0],
                                     self.body[1], None)
                self.first_node = out[0]
            else:
                # Note [While again]: the sub-graphs are the first
                # node's (tape.jacobian, a persistent tape asked twice).
                out = _C.graph_while_again(self.first_node,
                                           [first] + list(args))
        except Exception as e:  # noqa: BLE001 (re-raised unless known)
            if "is not a sub-graph being traced" not in str(e) and \
                    "is not of the graph being traced" not in str(e):
                raise
            raise NotImplementedError(
                f"tfmini: the gradient of a graph {what} must be taken in "
                f"the function (or branch, or loop body) that ran it, "
                f"every time") from None
        out = list(out[1:])

        def refuse(_):
            # The outer tape cannot see inside this While: an error, not
            # a None or a partial second derivative.
            raise NotImplementedError(
                f"tfmini: gradients of gradients through a graph {what} in "
                f"a tf.function are not supported (a tape recorded the "
                f"first gradient's computation and was asked for its "
                f"gradient)")

        inputs = [a for a in args if _is_float(a)] + list(deps)
        fouts = [o for o in out if _is_float(o)]
        if fouts and tapes_recording() and _C.should_record(inputs):
            _C.record_custom(inputs, fouts, refuse)
        return out


def _spec_of(t):
    from ..tensor_spec import TensorSpec
    return TensorSpec(t.shape, t.dtype)


# ---- tf.cond ---------------------------------------------------------

def _refuse_assigns(what):
    def backward(_):
        raise NotImplementedError(
            f"tfmini: no gradient through a graph {what} in a tf.function "
            f"whose code assigns a variable: the gradient reruns that code "
            f"and would assign again (and read the new value); move the "
            f"assignment out of the {what}")
    return backward


def record_cond(pred, true_flat, false_flat, outs, captures, variables,
                staged_cond, assigns=False):
    """Records the If whose outputs are outs on the tapes that watch one
    of its inputs. true_flat()/false_flat() rerun the branches (flat
    lists of tensors); staged_cond(pred, t, f) builds a graph cond over
    two flat branch functions."""
    fpos = [k for k, o in enumerate(outs) if _is_float(o)]
    if not fpos:
        return
    caps, variables, reads = _sources(captures, variables)
    inputs = caps + reads
    if not inputs or not _C.should_record(inputs):
        return
    fouts = [outs[k] for k in fpos]
    if assigns:
        _C.record_custom(inputs, fouts, _refuse_assigns("tf.cond"))
        return
    nd = len(fpos)

    def grad_body(i, *rest):
        dys = [None] * len(outs)
        for k, g in zip(fpos, rest[:nd]):
            dys[k] = g

        def branch(fn):
            return lambda: list(_vjp(lambda: fn(), (), (), caps, variables,
                                     dys))
        grads = staged_cond(pred, branch(true_flat), branch(false_flat))
        return [i + 1] + list(rest[:nd]) + list(grads)

    call = _GradCall("cond_grad", grad_body,
                     [_spec_of(o) for o in fouts] +
                     [_spec_of(t) for t in inputs], lambda i: i < 1)

    def backward(output_grads):
        dys = [g if g is not None else _zeros_like(o)
               for g, o in zip(output_grads, fouts)]
        return call(0, dys + [_zeros_like(t) for t in inputs],
                    inputs)[nd:]

    _C.record_custom(inputs, fouts, backward)


# ---- tf.while_loop ---------------------------------------------------

# Loop variables of at least this many elements are stacked in chunks
# (see WhileRecorder); smaller ones, where an If per iteration would cost
# more than the copies it saves, by one concat per iteration.
CHUNK_MIN_ELEMENTS = 2048
CHUNK = 32
# A loop with a known maximum_iterations preallocates its stacks (one
# row per iteration) up to this many bytes in all; past it, chunks.
PREALLOCATE_MAX_BYTES = 256 << 20


def _blank(shape, dtype):
    """An initial stack: zeros, or empty strings (which Fill takes where
    it takes no 0)."""
    from .array_ops import fill, zeros
    if dtype == _dtypes.string:
        return fill(shape, "")
    return zeros(shape, dtype)


class WhileRecorder:
    """The forward loop of a differentiable While: the body also stacks
    the loop variables entering each iteration and counts iterations.

    With a known maximum_iterations m, each stack is preallocated
    [m, ...] and iteration i writes its row i with a scatter, which the
    executor does in place (Note [Writing over a loop variable] in
    csrc/graph/exec.c): O(row) per iteration. Rows past the last
    iteration stay zeros, and the gradient never reads them.

    Otherwise the stack grows by concat, which copies all earlier rows at
    every iteration: O(n^2) in the iteration count. For large loop
    variables the rows go to a chunk of up to CHUNK rows, and a full
    chunk moves to the big stack [chunks, CHUNK, ...] in an If (once
    every CHUNK iterations), dividing the copying by about CHUNK.
    split() joins them into one stack [n, ...] after the loop (an op that
    only a gradient reads)."""

    def __init__(self, loop_vars, invariants, max_iter=None):
        from ..tensor_shape import TensorShape
        self.n = len(loop_vars)
        self.fixed = all(TensorShape(inv).is_fully_defined()
                         for inv in invariants)
        self.invariants = list(invariants)
        self.shapes = [TensorShape(inv).as_list() if self.fixed else None
                       for inv in invariants]
        self.rows = None
        if self.fixed and isinstance(max_iter, int) and max_iter >= 0:
            total = sum(int(np.prod(shape, dtype=np.int64)) *
                        v.dtype.size for shape, v in zip(self.shapes,
                                                         loop_vars))
            if total * max(max_iter, 1) <= PREALLOCATE_MAX_BYTES:
                self.rows = max(max_iter, 1)
        self.chunked = [self.fixed and self.rows is None and
                        int(np.prod(shape, dtype=np.int64)) >=
                        CHUNK_MIN_ELEMENTS for shape in self.shapes]

    def wrap_vars(self, loop_vars):
        """[count, *loop_vars, *stack parts] and their invariants."""
        from ..tensor_shape import TensorShape
        from .constant_op import constant
        parts, invs = [], []
        if self.rows is not None:
            for v, shape in zip(loop_vars, self.shapes):
                parts.append(_blank([self.rows] + shape, v.dtype))
                invs.append(TensorShape([self.rows] + shape))
            return ([constant(0, _dtypes.int32)] + list(loop_vars) + parts,
                    [TensorShape([])] + self.invariants + invs)
        for v, shape, big in zip(loop_vars, self.shapes, self.chunked):
            if big:
                parts.append(_blank([0, CHUNK] + shape, v.dtype))
                invs.append(TensorShape([None, CHUNK] + shape))
            parts.append(_blank([0] + shape, v.dtype))
            invs.append(TensorShape([None] + shape))
        return ([constant(0, _dtypes.int32)] + list(loop_vars) + parts,
                [TensorShape([])] + self.invariants + invs)

    def wrap_cond(self, cond):
        n = self.n
        return lambda *a: cond(*a[1:1 + n])

    def wrap_body(self, body):
        from .array_ops import concat, expand_dims, reshape
        from .math_ops import equal, floormod
        n = self.n

        def run(*a):
            count, vars_, parts = a[0], list(a[1:1 + n]), list(a[1 + n:])
            new = list(body(*vars_))
            if self.rows is not None:
                from .array_ops import tensor_scatter_nd_update
                at = reshape(count, [1, 1])
                return [count + 1] + new + [
                    tensor_scatter_nd_update(p, at, expand_dims(v, 0))
                    for p, v in zip(parts, vars_)]
            out, bigs, chunks, j = [], [], [], 0
            for v, shape, big in zip(vars_, self.shapes, self.chunked):
                if big:
                    bigs.append((len(out), parts[j], shape))
                    j += 1
                row = concat([parts[j], expand_dims(v, 0)], 0)
                if big:
                    chunks.append(row)
                out.extend([parts[j - 1]] if big else [])
                out.append(row)
                j += 1
            if bigs:
                from .control_flow_ops import _staged_cond

                def flush():
                    res = []
                    for (_, b, shape), c in zip(bigs, chunks):
                        res += [concat([b, reshape(c, [1, CHUNK] + shape)],
                                       0), c[:0]]
                    return res

                def keep():
                    res = []
                    for (_, b, _), c in zip(bigs, chunks):
                        res += [b, c]
                    return res
                moved = _staged_cond(
                    equal(floormod(count, CHUNK), CHUNK - 1), flush, keep,
                    ("a full chunk", "a chunk filling"))
                for k, (pos, _, _) in enumerate(bigs):
                    out[pos], out[pos + 1] = moved[2 * k], moved[2 * k + 1]
            return [count + 1] + new + out
        return run

    def split(self, out):
        """(count, loop variables, one stack [n, ...] per variable)."""
        from .array_ops import concat, reshape
        n = self.n
        parts, stacks, j = list(out[1 + n:]), [], 0
        if self.rows is not None:
            return out[0], list(out[1:1 + n]), parts
        for shape, big in zip(self.shapes, self.chunked):
            if big:
                stacks.append(concat([reshape(parts[j], [-1] + shape),
                                      parts[j + 1]], 0))
                j += 2
            else:
                stacks.append(parts[j])
                j += 1
        return out[0], list(out[1:1 + n]), stacks


def record_while(init, outs, count, stacks, body_flat, captures, variables,
                 fixed=True, assigns=False):
    """Records the While (initial loop variables init, final outs) on the
    tapes that watch an input. body_flat reruns the body on flat loop
    variables."""
    fpos = [k for k, v in enumerate(init) if _is_float(v)]
    if not fpos:
        return
    caps, variables, reads = _sources(captures, variables)
    finit = [init[k] for k in fpos]
    inputs = finit + caps + reads
    if not _C.should_record(inputs):
        return
    fouts = [outs[k] for k in fpos]
    nf = len(fpos)
    if assigns:
        _C.record_custom(inputs, fouts, _refuse_assigns("tf.while_loop"))
        return
    call = None
    if fixed:
        from .array_ops import gather

        def rbody(i, *state):
            g, acc = list(state[:nf]), list(state[nf:])
            vars_i = [gather(s, i) for s in stacks]
            dys = [None] * len(vars_i)
            for k, gk in zip(fpos, g):
                dys[k] = gk
            grads = _vjp(body_flat, vars_i, [vars_i[k] for k in fpos],
                         caps, variables, dys)
            return ([i - 1] + list(grads[:nf]) +
                    [a + b for a, b in zip(acc, grads[nf:])])

        call = _GradCall("while_grad", rbody,
                         [_spec_of(t) for t in fouts] +
                         [_spec_of(t) for t in caps + reads],
                         lambda i: i >= 0)

    def backward(output_grads):
        if call is None:
            raise NotImplementedError(
                "tfmini: gradients through a tf.while_loop inside a "
                "tf.function need loop variables whose shape stays fixed; "
                "this loop has shape_invariants with unknown dims")
        g0 = [g if g is not None else _zeros_like(o)
              for g, o in zip(output_grads, fouts)]
        acc0 = [_zeros_like(t) for t in caps + reads]
        return call(count - 1, g0 + acc0, inputs)

    _C.record_custom(inputs, fouts, backward)
