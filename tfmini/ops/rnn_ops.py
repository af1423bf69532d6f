"""The fused recurrent-cell ops (csrc/ops/ops_rnn.def). tfmini's own
ops, not TF's public API: the Keras LSTM layer calls them.

lstm_gates(z, c_prev) -> (h, c, gates): one step of Keras' LSTM cell
after its matmuls (z = x @ kernel + h_prev @ recurrent_kernel + bias,
gate blocks i, f, c~, o; sigmoid and tanh), gates after activation.
lstm_gates_grad(dh, dc, gates, c_prev, c) -> (dz, dc_prev): its
vector-Jacobian product from the saved values."""
from .. import _C
from .._opids import ID
from .constant_op import convert_to_tensor

_GATES = ID["LSTMGates"]
_GATES_GRAD = ID["LSTMGatesGrad"]


def lstm_gates(z, c_prev):
    return tuple(_C.call(_GATES, [convert_to_tensor(z),
                                  convert_to_tensor(c_prev)]))


def lstm_gates_grad(dh, dc, gates, c_prev, c):
    return tuple(_C.call(_GATES_GRAD, [convert_to_tensor(t) for t in
                                       (dh, dc, gates, c_prev, c)]))
