"""The LSTM layer's time loop with a gradient of its own.

A differentiated tf.while_loop takes its gradient by rerunning the body
on the saved loop variables under a tape (Note [Control flow gradients]
in tfmini/ops/control_flow_grad.py): for an LSTM that is one more
h_prev @ recurrent_kernel GEMM and the gate math again at every step,
just to get at values the forward loop had. Here the forward loop keeps
what the backward needs, as TF's and cuDNN's LSTM kernels do:

- forward, per step: z = xs[t] + h @ R; (h, c, gates) = LSTMGates(z, c),
  with h, c and the activated gates written into preallocated stacks
  (in place: Note [Writing over a loop variable] in csrc/graph/exec.c;
  the gates by _LSTMGatesInto, straight from the cell's loop);
- backward, per step, t = T-1 .. 0: (dz, dc) = LSTMGatesGrad(dh + dhs[t],
  dc, gates[t], c[t-1], c[t]); dh = dz @ R^T; dz goes into a stack;
- after it, one GEMM for the recurrent kernel, h_prev^T @ dz over all
  steps, and the dz stack is the gradient of xs, so the input projection
  (one GEMM over all steps before the loop) gets its weight gradient in
  one GEMM too.

Only the built-in LSTM cell with its default activations, no mask and no
recurrent dropout comes here (RNN.call decides); the loop is used only
when a tape records it: otherwise there is nothing to save."""
import tfmini as tf

from ... import _C, _opids
from ...ops.rnn_ops import lstm_gates_grad


def recording(tensors):
    """Whether a tape would record an op over these tensors."""
    return bool(_C.should_record(list(tensors)))


_EMPTY_ROWS = _opids.ID["_EmptyRows"]
_GATES_INTO = _opids.ID["_LSTMGatesInto"]


def _empty_rows(like, n, drop=0):
    """[n, *like.shape[drop:]], left unwritten: every stack below has
    each of its rows written before it is read, so a zero fill would be
    memory traffic for nothing. (One node per stack: _EmptyRows is never
    merged with an identical one, which would make two loop variables
    share one buffer, copied whole by the first iteration.)"""
    return _C.call(_EMPTY_ROWS, [like], (), [n, drop])


def _gates_into(gs, i, z, c):
    """(gs with row i = the gates, h, c): LSTMGates writing its gates
    straight into the stack (over it, when the loop holds it alone)."""
    return tuple(_C.call(_GATES_INTO, [gs, i, z, c]))


def _put(stack, i, row):
    return tf.tensor_scatter_nd_update(stack, tf.reshape(i, [1, 1]),
                                       tf.expand_dims(row, 0))


def lstm_while(xs, h0, c0, r, seqs):
    """xs (time, batch, 4 units): the projected inputs, time-major.
    Returns (outputs (time, batch, units) or None, [h, c])."""
    n = int(xs.shape[0])
    units = int(r.shape[0])

    @tf.custom_gradient
    def run(xs, h0, c0, r):
        # hs[t], cs[t]: the states entering step t. Stacks of n rows,
        # not n + 1, so that nothing slices them afterwards: dR pairs
        # hs with the dz stack row for row, and the backward loop
        # carries the state leaving each step instead of reading it.
        # xs[i] is a view, not a copy (Note [Views of live inputs] in
        # csrc/graph/exec.c); the gates go straight into their stack.
        def body(i, h, c, hs, cs, gs):
            hs, cs = _put(hs, i, h), _put(cs, i, c)
            z = tf.gather(xs, i) + tf.matmul(h, r)
            gs, h, c = _gates_into(gs, i, z, c)
            return i + 1, h, c, hs, cs, gs

        init = [tf.constant(0), h0, c0, _empty_rows(h0, n),
                _empty_rows(c0, n), _empty_rows(xs, n, 1)]
        # back_prop=False: custom_gradient's variable watcher is a tape
        # above the pause, and a loop it saw would stack its loop
        # variables for a gradient that this function gives itself.
        _, h, c, hs, cs, gs = tf.while_loop(
            lambda i, *_: i < n, body, init, maximum_iterations=n,
            back_prop=False)

        def grad(d_out, d_h, d_c):
            def gbody(i, dh, dc, c_next, dzs):
                if seqs:
                    dh = dh + tf.gather(d_out, i)
                c_prev = tf.gather(cs, i)
                dz, dc = lstm_gates_grad(dh, dc, tf.gather(gs, i), c_prev,
                                         c_next)
                return (i - 1, tf.matmul(dz, r, transpose_b=True), dc,
                        c_prev, _put(dzs, i, dz))

            _, dh, dc, _, dzs = tf.while_loop(
                lambda i, *_: i >= 0, gbody,
                [tf.constant(n - 1), d_h, d_c, c, _empty_rows(gs, n, 1)],
                maximum_iterations=n)
            dr = tf.matmul(tf.reshape(hs, [-1, units]),
                           tf.reshape(dzs, [-1, 4 * units]),
                           transpose_a=True)
            return dzs, dh, dc, dr

        # The outputs are the states leaving each step: only a layer
        # with return_sequences pays for gathering them.
        out = (tf.concat([hs[1:], tf.expand_dims(h, 0)], 0) if seqs
               else h[tf.newaxis])
        return (out, h, c), grad

    out, h, c = run(xs, h0, c0, r)
    return (out if seqs else None), [h, c]
