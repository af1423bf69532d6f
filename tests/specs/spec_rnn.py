"""OpSpecs for the recurrent-cell ops (csrc/ops/ops_rnn.def): the fused
LSTM cell and its backward op, against Keras 3's LSTM formulas."""
import numpy as np

from tfmini.ops.rnn_ops import lstm_gates, lstm_gates_grad

from .opspec import FLOATS, OpSpec, uniform


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_lstm_gates(z, cp):
    u = cp.shape[1]
    i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
    i, f, g, o = _sig(i), _sig(f), np.tanh(g), _sig(o)
    c = f * cp + i * g
    return o * np.tanh(c), c, np.concatenate([i, f, g, o], 1)


def np_lstm_gates_grad(dh, dc, gates, cp, c):
    u = cp.shape[1]
    i, f, g, o = (gates[:, k * u:(k + 1) * u] for k in range(4))
    tc = np.tanh(c)
    dct = dc + dh * o * (1 - tc * tc)
    dz = np.concatenate([dct * g * i * (1 - i), dct * cp * f * (1 - f),
                         dct * i * (1 - g * g), dh * tc * o * (1 - o)], 1)
    return dz, dct * f


def _cast(ref):
    def f(*xs):
        return tuple(np.asarray(o).astype(xs[0].dtype) for o in ref(*xs))
    return f


SPECS = [
    OpSpec("LSTMGates", lstm_gates, _cast(np_lstm_gates),
           [((3, 8), (3, 2)), ((1, 20), (1, 5)), ((0, 4), (0, 1))],
           FLOATS, grad=(0, 1), ops=["LSTMGates"], second_order=True),
    # Activated gates lie in (0, 1) (sigmoids) or (-1, 1) (the tanh).
    OpSpec("LSTMGatesGrad", lstm_gates_grad, _cast(np_lstm_gates_grad),
           [((3, 2), (3, 2), (3, 8), (3, 2), (3, 2)),
            ((2, 3), (2, 3), (2, 12), (2, 3), (2, 3))],
           FLOATS, inputs=[uniform(), uniform(), uniform(0.05, 0.95),
                           uniform(), uniform()],
           grad=(0, 1, 2, 3, 4), ops=["LSTMGatesGrad"]),
]
