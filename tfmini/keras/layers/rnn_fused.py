"""The LSTM layer's time loop with a gradient of its own.

A differentiated tf.while_loop takes its gradient by rerunning the body
on the saved loop variables under a tape (Note [Control flow gradients]
in tfmini/ops/control_flow_grad.py): for an LSTM that is one more
h_prev @ recurrent_kernel GEMM and the gate math again at every step,
just to get at values the forward loop had. Here the forward keeps what
the backward needs, as TF's and cuDNN's LSTM kernels do, and each
direction is one op running every step (Note [One parallel region per
sequence] in csrc/kernels/cpu/rnn_seq.c):

- forward, _LSTMSequence: per step z = xs[t] + h @ R; (h, c, gates) =
  LSTMGates(z, c), with the states entering each step and the gates
  written into stacks;
- backward, _LSTMSequenceGrad, t = T-1 .. 0: (dz, dc) = LSTMGatesGrad(dh
  + d_out[t], dc, gates[t], c[t-1], c[t]); dh = dz @ R^T; dz into a
  stack;
- after it, in the same op, one GEMM for the recurrent kernel, h_prev^T
  @ dz over all steps; the dz stack is the gradient of xs, so the input
  projection (one GEMM over all steps before the loop) gets its weight
  gradient in one GEMM too.

Only the built-in LSTM cell with its default activations, no mask and no
recurrent dropout comes here (RNN.call decides); the ops are used only
when a tape records them: otherwise there is nothing to save."""
import tfmini as tf

from ... import _C, _opids


def recording(tensors):
    """Whether a tape would record an op over these tensors."""
    return bool(_C.should_record(list(tensors)))


_SEQ = _opids.ID["_LSTMSequence"]
_SEQ_GRAD = _opids.ID["_LSTMSequenceGrad"]


def lstm_sequence(xs, h0, c0, r, seqs):
    """xs (time, batch, 4 units): the projected inputs, time-major.
    Returns (outputs (time, batch, units) or None, [h, c])."""
    @tf.custom_gradient
    def run(xs, h0, c0, r):
        # hs[t], cs[t]: the states entering step t. Stacks of n rows,
        # not n + 1, so that nothing slices them afterwards: dR pairs hs
        # with the dz stack row for row, in the gradient op.
        hs, cs, gs, h, c = _C.call(_SEQ, [xs, h0, c0, r])

        def grad(d_out, d_h, d_c):
            args = [d_h, d_c, hs, cs, gs, c, r] + ([d_out] if seqs else [])
            return tuple(_C.call(_SEQ_GRAD, args))

        # The outputs are the states leaving each step: only a layer
        # with return_sequences pays for gathering them.
        out = (tf.concat([hs[1:], tf.expand_dims(h, 0)], 0) if seqs
               else h[tf.newaxis])
        return (out, h, c), grad

    out, h, c = run(xs, h0, c0, r)
    return (out if seqs else None), [h, c]
