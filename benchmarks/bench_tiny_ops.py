"""Per-call overhead of the common eager ops on a 2x3 float32 tensor,
against NumPy's equivalent (and TF, JAX and PyTorch when installed):
what a notebook pays per line beyond `a + b` and `tf.matmul`
(bench_eager.py has those two).

    python3 -m pytest benchmarks/bench_tiny_ops.py --benchmark-enable
    python3 benchmarks/report.py -k tiny        # their rows in RESULTS.md

Never a pass/fail on speed: these only measure; each row checks its
result against NumPy's once."""
import numpy as np
import pytest
from _common import impl_params, module, synced, to_impl

X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5


def _softmax_np(m, x):
    e = m.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _torch_dtype(name):
    import torch
    return getattr(torch, name)


# name -> {impl: fn(module, x)}; "np" serves NumPy and JAX (jax.numpy),
# "tf" tfmini and TensorFlow.
OPS = {
    "reduce_sum": {"np": lambda m, x: m.sum(x),
                   "tf": lambda m, x: m.reduce_sum(x),
                   "torch": lambda m, x: x.sum()},
    "reduce_sum axis=1": {"np": lambda m, x: m.sum(x, axis=1),
                          "tf": lambda m, x: m.reduce_sum(x, axis=1),
                          "torch": lambda m, x: x.sum(1)},
    "reduce_mean": {"np": lambda m, x: m.mean(x),
                    "tf": lambda m, x: m.reduce_mean(x),
                    "torch": lambda m, x: x.mean()},
    "reduce_mean axis=1": {"np": lambda m, x: m.mean(x, axis=1),
                           "tf": lambda m, x: m.reduce_mean(x, axis=1),
                           "torch": lambda m, x: x.mean(1)},
    "reduce_max": {"np": lambda m, x: m.max(x),
                   "tf": lambda m, x: m.reduce_max(x),
                   "torch": lambda m, x: x.max()},
    "reduce_max axis=1": {"np": lambda m, x: m.max(x, axis=1),
                          "tf": lambda m, x: m.reduce_max(x, axis=1),
                          "torch": lambda m, x: x.amax(1)},
    "reshape": {"np": lambda m, x: m.reshape(x, (3, 2)),
                "tf": lambda m, x: m.reshape(x, [3, 2]),
                "torch": lambda m, x: x.reshape(3, 2)},
    "transpose": {"np": lambda m, x: m.transpose(x),
                  "tf": lambda m, x: m.transpose(x),
                  "torch": lambda m, x: x.t()},
    "concat": {"np": lambda m, x: m.concatenate([x, x], 0),
               "tf": lambda m, x: m.concat([x, x], 0),
               "torch": lambda m, x: m.cat([x, x], 0)},
    "relu": {"np": lambda m, x: m.maximum(x, 0),
             "tf": lambda m, x: m.nn.relu(x),
             "torch": lambda m, x: m.relu(x)},
    "softmax": {"np": _softmax_np,
                "tf": lambda m, x: m.nn.softmax(x),
                "torch": lambda m, x: m.softmax(x, -1)},
    "cast float64": {"np": lambda m, x: x.astype(m.float64),
                     "tf": lambda m, x: m.cast(x, m.float64),
                     "torch": lambda m, x: x.to(_torch_dtype("float64"))},
    "expand_dims": {"np": lambda m, x: m.expand_dims(x, 0),
                    "tf": lambda m, x: m.expand_dims(x, 0),
                    "torch": lambda m, x: x.unsqueeze(0)},
    "square": {"np": lambda m, x: m.square(x),
               "tf": lambda m, x: m.square(x),
               "torch": lambda m, x: m.square(x)},
    "exp": {"np": lambda m, x: m.exp(x),
            "tf": lambda m, x: m.exp(x),
            "torch": lambda m, x: m.exp(x)},
    "x[0]": {"np": lambda m, x: x[0], "tf": lambda m, x: x[0],
             "torch": lambda m, x: x[0]},
    "x[:, 1]": {"np": lambda m, x: x[:, 1], "tf": lambda m, x: x[:, 1],
                "torch": lambda m, x: x[:, 1]},
    # Contiguous: a view in NumPy and tfmini (getitem.c), as x[0].
    "x[1:]": {"np": lambda m, x: x[1:], "tf": lambda m, x: x[1:],
              "torch": lambda m, x: x[1:]},
    # 2x3 @ 3x2: 12 multiply-adds (MatMul's tiny loop), with a transpose
    # flag, beside bench_eager.py's square 2x2.
    "matmul x x^T": {"np": lambda m, x: m.matmul(x, x.T),
                     "tf": lambda m, x: m.matmul(x, x, transpose_b=True),
                     "torch": lambda m, x: m.matmul(x, x.T)},
}
FAMILY = {"numpy": "np", "jax": "np", "tfmini": "tf", "tensorflow": "tf",
          "torch": "torch"}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("impl", impl_params())
def test_tiny_op(benchmark, impl, op):
    m = module(impl)
    fn = OPS[op][FAMILY[impl]]
    x = to_impl(impl, X)
    want = np.asarray(OPS[op]["np"](np, X))
    np.testing.assert_allclose(np.asarray(fn(m, x)), want, rtol=1e-6)
    benchmark.group = f"tiny {op} (2x3 float32)"
    benchmark(synced(impl, lambda: fn(m, x)))
