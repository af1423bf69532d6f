"""GradientTape and tf.function benchmarks (issues 3 and 4), each beside
the same computation written with NumPy (and TF / PyTorch when
installed is left to bench_keras.py's fit comparisons).

- tiny op with a tape recording it, vs NumPy's op (the tape's overhead is
  the ratio of "tape" to "no tape" rows)
- 784-128-10 MLP at batch 32: forward, and forward + backward
- one-op tf.function on a cache hit, vs the eager op
- the MLP train step (cross entropy, gradient, SGD), eager and traced
- tracing a 1,000-op function
- a 1,000-iteration while loop of scalar ops: tf.while_loop in a
  tf.function (the C executor runs the loop), the same loop as eager
  Python, NumPy scalars; and the traced loop with its gradient (a tape
  inside the function: the forward loop stacks every iteration's values
  and a reverse loop reruns the body, Note [Control flow gradients])"""
import numpy as np
import pytest

import tfmini as tf


def _group(benchmark, name):
    benchmark.group = name


def _mlp(rng):
    x = rng.standard_normal((32, 784)).astype(np.float32)
    y = rng.integers(0, 10, 32).astype(np.int32)
    w1 = (rng.standard_normal((784, 128)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((128, 10)) * 0.05).astype(np.float32)
    return x, y, w1, w2


def _np_forward(x, w1, w2):
    h = np.maximum(x @ w1, 0)
    z = h @ w2
    z = z - z.max(1, keepdims=True)
    return h, z - np.log(np.exp(z).sum(1, keepdims=True))


def _np_step(x, y, w1, w2, lr=0.01):
    h, logp = _np_forward(x, w1, w2)
    g = np.exp(logp)
    g[np.arange(len(y)), y] -= 1
    g /= len(y)
    gw2 = h.T @ g
    gh = (g @ w2.T) * (h > 0)
    gw1 = x.T @ gh
    w1 -= lr * gw1
    w2 -= lr * gw2
    return -logp[np.arange(len(y)), y].mean()


@pytest.mark.parametrize("impl", ["tfmini-tape", "tfmini", "numpy"])
def test_tiny_op_recorded(benchmark, impl):
    """100 tiny `a * a` per call; tfmini-tape records them on a fresh
    tape each call (a training step's pattern)."""
    _group(benchmark, "100 tiny a * a: tape recording vs not")
    if impl == "numpy":
        a = np.ones(2, np.float32)

        def run():
            for _ in range(100):
                a * a
        benchmark(run)
        return
    a = tf.constant([1.0, 2.0])

    def plain():
        for _ in range(100):
            a * a

    def recorded():
        with tf.GradientTape() as tape:
            tape.watch(a)
            for _ in range(100):
                a * a
    benchmark(recorded if impl == "tfmini-tape" else plain)


@pytest.mark.parametrize("impl", ["tfmini-forward", "tfmini-backward",
                                  "numpy-forward", "numpy"])
def test_mlp_gradient(benchmark, impl, rng):
    """numpy = forward + hand-written backward; tfmini-backward = forward
    under a tape + tape.gradient."""
    _group(benchmark, "MLP 784-128-10 b32: forward / forward+backward")
    x, y, w1, w2 = _mlp(rng)
    if impl.startswith("numpy"):
        if impl == "numpy-forward":
            benchmark(lambda: _np_forward(x, w1, w2))
        else:
            benchmark(lambda: _np_step(x, y, w1.copy(), w2.copy(), lr=0.0))
        return
    tx, ty = tf.constant(x), tf.constant(y)
    v1, v2 = tf.Variable(w1), tf.Variable(w2)

    def loss():
        logits = tf.matmul(tf.nn.relu(tf.matmul(tx, v1)), v2)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=ty, logits=logits))

    if impl == "tfmini-forward":
        benchmark(loss)
        return

    def both():
        with tf.GradientTape() as tape:
            out = loss()
        return tape.gradient(out, [v1, v2])
    benchmark(both)


@pytest.mark.parametrize("impl", ["tfmini-traced", "tfmini", "numpy"])
def test_one_op_function(benchmark, impl):
    _group(benchmark, "one-op function: cached traced call vs eager op")
    if impl == "numpy":
        a = np.ones(2, np.float32)
        benchmark(lambda: a + a)
        return
    a = tf.constant([1.0, 2.0])
    if impl == "tfmini":
        benchmark(lambda: a + a)
        return
    f = tf.function(lambda x: x + x)
    f(a)
    benchmark(lambda: f(a))


@pytest.mark.parametrize("impl", ["tfmini-traced", "tfmini", "numpy"])
def test_mlp_train_step(benchmark, impl, rng):
    _group(benchmark, "MLP 784-128-10 b32 SGD train step: eager vs traced")
    x, y, w1, w2 = _mlp(rng)
    if impl == "numpy":
        benchmark(lambda: _np_step(x, y, w1, w2))
        return
    tx, ty = tf.constant(x), tf.constant(y)
    v1, v2 = tf.Variable(w1), tf.Variable(w2)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            logits = tf.matmul(tf.nn.relu(tf.matmul(xb, v1)), v2)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=yb, logits=logits))
        g1, g2 = tape.gradient(loss, [v1, v2])
        v1.assign_sub(0.01 * g1)
        v2.assign_sub(0.01 * g2)
        return loss

    fn = tf.function(step) if impl == "tfmini-traced" else step
    fn(tx, ty)
    benchmark(lambda: fn(tx, ty))


@pytest.mark.parametrize("impl", ["tfmini"])
def test_trace_1000_ops(benchmark, impl):
    _group(benchmark, "tracing a 1,000-op function")
    x = tf.constant([1.0, 2.0])

    def body(t):
        for _ in range(1000):
            t = t * 1.0001
        return t

    def trace():
        return tf.function(body).get_concrete_function(x)
    benchmark.pedantic(trace, rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("impl", ["tfmini-traced", "tfmini-traced-grad",
                                  "tfmini", "numpy"])
def test_while_loop_1000(benchmark, impl):
    _group(benchmark, "1,000-iteration scalar while loop: traced vs eager")
    n = 1000
    if impl == "numpy":
        def run_np():
            i, x = 0, np.float32(0.5)
            while i < n:
                x = x * np.float32(0.999) + np.float32(0.001)
                i += 1
            return x
        benchmark(run_np)
        return

    def loop(x):
        return tf.while_loop(lambda i, x: i < n,
                             lambda i, x: (i + 1, x * 0.999 + 0.001),
                             [tf.constant(0), x])[1]

    x0 = tf.constant(0.5)
    if impl == "tfmini":
        benchmark(lambda: loop(x0))
        return
    if impl == "tfmini-traced":
        fn = tf.function(loop)
    else:
        @tf.function
        def fn(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = loop(x)
            return y, tape.gradient(y, x)
    fn(x0)
    benchmark(lambda: fn(x0))
