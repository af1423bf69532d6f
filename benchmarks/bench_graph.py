"""Graph optimizer benchmarks (issue 5): elementwise fusion and the matmul
epilogue, each traced (tf.function, passes on) vs eager, beside NumPy and,
when installed, TensorFlow's tf.function with and without
jit_compile=True.

- an 8-op elementwise chain on 16M float32,
  y = (x * a + b) * sigmoid(x) - c; relu(y * y - x):
  Mul, AddV2, Sigmoid, Mul, Sub, Mul, Sub, Relu, one fused node traced.
  "numpy-add-floor" is one np.add(x, 1, out=y) pass over the same data,
  the memory-bandwidth floor; "numpy" is the chain in NumPy. The
  compiled peers (TensorFlow's tf.function, with and without XLA, and
  jax.jit) fetch their result as a NumPy array, as does
  "tfmini-traced-fetched"; "tfmini-traced" keeps the tensor.
- a Dense layer forward, relu(x @ w + b), batch 256, float32, 784 -> 256
  units (the matmul is ~95% of eager's time) and 64 -> 64 (bias and relu
  passes and per-op costs are a quarter of it): one _FusedMatMul
  traced."""
import numpy as np
import pytest

from _common import AVAILABLE, skip_unless
import tfmini as tf

N_CHAIN = 1 << 24
BATCH = 256
DENSE_SIZES = [(784, 256), (64, 64)]

_TF = [pytest.param(name, marks=pytest.mark.skipif(
    not AVAILABLE["tensorflow"], reason="tensorflow is not installed"))
    for name in ("tensorflow-function", "tensorflow-jit")]


def _group(benchmark, name):
    benchmark.group = name


def _chain(m, x, a, b, c):
    """The 8 ops, in module m (tfmini or TensorFlow)."""
    y = (x * a + b) * m.sigmoid(x) - c
    return m.nn.relu(y * y - x)


def _chain_jax(jnp, x, a, b, c):
    import jax
    y = (x * a + b) * jax.nn.sigmoid(x) - c
    return jnp.maximum(y * y - x, 0)


def _np_chain(x, a, b, c):
    y = (x * a + b) * (1.0 / (1.0 + np.exp(-x))) - c
    return np.maximum(y * y - x, 0)


@pytest.fixture(scope="module")
def chain_input():
    return np.random.default_rng(0).standard_normal(N_CHAIN).astype(
        np.float32)


@pytest.mark.parametrize("impl", ["tfmini-traced", "tfmini-traced-fetched",
                                  "tfmini", "numpy-add-floor", "numpy"] +
                         _TF + skip_unless("jax-jit"))
def test_elementwise_chain_16m(benchmark, impl, chain_input):
    _group(benchmark, "8-op elementwise chain on 16M float32: traced "
           "(fused) vs eager vs one np.add pass")
    a, b, c = 1.5, 0.25, 0.5
    if impl == "numpy-add-floor":
        out = np.empty_like(chain_input)
        benchmark(lambda: np.add(chain_input, 1, out=out))
        return
    if impl == "numpy":
        benchmark(lambda: _np_chain(chain_input, np.float32(a),
                                    np.float32(b), np.float32(c)))
        return
    if impl.startswith("tensorflow"):
        import tensorflow as real_tf
        x = real_tf.constant(chain_input)
        f = real_tf.function(lambda x: _chain(real_tf, x, a, b, c),
                             jit_compile=impl == "tensorflow-jit")
        f(x)
        benchmark(lambda: f(x).numpy())
        return
    if impl == "jax-jit":
        import jax
        import jax.numpy as jnp
        x = jnp.asarray(chain_input)
        f = jax.jit(lambda x: _chain_jax(jnp, x, a, b, c))
        f(x)
        benchmark(lambda: np.asarray(f(x)))
        return
    x = tf.constant(chain_input)
    if impl == "tfmini-traced-fetched":
        f = tf.function(lambda x: _chain(tf, x, a, b, c))
        f(x)
        benchmark(lambda: f(x).numpy())
        return
    if impl == "tfmini-traced":
        f = tf.function(lambda x: _chain(tf, x, a, b, c))
        f(x)
        types = [op.type for op in f.get_concrete_function(x)
                 .optimized_graph.get_operations()]
        assert types.count("_FusedElementwise") == 1, types
        benchmark(f, x)
    else:
        benchmark(_chain, tf, x, a, b, c)


def _dense_input(d_in, d_out):
    rng = np.random.default_rng(1)
    return (rng.standard_normal((BATCH, d_in)).astype(np.float32),
            (rng.standard_normal((d_in, d_out)) * 0.05).astype(np.float32),
            rng.standard_normal(d_out).astype(np.float32))


@pytest.mark.parametrize("size", DENSE_SIZES,
                         ids=[f"{i}-{o}" for i, o in DENSE_SIZES])
@pytest.mark.parametrize("impl", ["tfmini-traced", "tfmini", "numpy"] + _TF)
def test_dense_forward_b256(benchmark, impl, size):
    d_in, d_out = size
    _group(benchmark, f"Dense forward relu(x @ w + b) b{BATCH} "
           f"{d_in}->{d_out}: traced (epilogue) vs eager")
    xn, wn, bn = _dense_input(d_in, d_out)
    if impl == "numpy":
        benchmark(lambda: np.maximum(xn @ wn + bn, 0))
        return
    m = tf
    if impl.startswith("tensorflow"):
        import tensorflow as m
    x, w, b = m.constant(xn), m.constant(wn), m.constant(bn)

    def dense(x):
        return m.nn.relu(m.nn.bias_add(m.matmul(x, w), b))
    if impl == "tfmini":
        benchmark(dense, x)
        return
    if impl.startswith("tensorflow"):
        f = m.function(dense, jit_compile=impl == "tensorflow-jit")
        f(x)
        benchmark(lambda: f(x).numpy())
        return
    f = tf.function(dense)
    f(x)
    types = [op.type for op in f.get_concrete_function(x)
             .optimized_graph.get_operations()]
    assert types.count("_FusedMatMul") == 1, types
    benchmark(f, x)
