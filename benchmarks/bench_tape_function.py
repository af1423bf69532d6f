"""GradientTape and tf.function benchmarks (issues 3 and 4), each beside
the same computation written with NumPy; the one-op call and the MLP
train step also in TensorFlow (tf.function and eager), JAX (jax.jit) and
PyTorch (eager) when installed.

- tiny op with a tape recording it, vs NumPy's op (the tape's overhead is
  the ratio of "tape" to "no tape" rows)
- 784-128-10 MLP at batch 32: forward, and forward + backward
- one-op tf.function on a cache hit (and jax.jit's), vs the eager op
- the MLP train step (cross entropy, gradient, SGD or a hand-written
  Adam), eager and traced / jitted
- tracing a 1,000-op function
- a 1,000-iteration while loop of scalar ops: tf.while_loop in a
  tf.function (the C executor runs the loop), the same loop as eager
  Python, NumPy scalars; and the traced loop with its gradient (a tape
  inside the function: the forward loop stacks every iteration's values
  and a reverse loop reruns the body, Note [Control flow gradients])"""
import numpy as np
import pytest

from _common import skip_unless
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


@pytest.mark.parametrize("impl", ["tfmini-traced", "tfmini", "numpy"] +
                         skip_unless("tensorflow-function", "jax-jit"))
def test_one_op_function(benchmark, impl):
    """A cached compiled call of `x + x` on 2 floats: tf.function's call
    path (tfmini's, TensorFlow's) and jax.jit's, against the eager op."""
    _group(benchmark, "one-op function: cached traced call vs eager op")
    if impl == "numpy":
        a = np.ones(2, np.float32)
        benchmark(lambda: a + a)
        return
    if impl == "tensorflow-function":
        import tensorflow as real_tf
        a = real_tf.constant([1.0, 2.0])
        f = real_tf.function(lambda x: x + x)
        f(a)
        benchmark(lambda: f(a))
        return
    if impl == "jax-jit":
        import jax
        a = jax.numpy.asarray([1.0, 2.0], dtype=np.float32)
        f = jax.jit(lambda x: x + x)
        f(a).block_until_ready()
        benchmark(lambda: f(a).block_until_ready())
        return
    a = tf.constant([1.0, 2.0])
    if impl == "tfmini":
        benchmark(lambda: a + a)
        return
    f = tf.function(lambda x: x + x)
    f(a)
    benchmark(lambda: f(a))


def _np_adam_step(x, y, w, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
    """The step of _np_step with Adam's update (TF's formula: the bias
    corrections folded into the learning rate)."""
    h, logp = _np_forward(x, w[0], w[1])
    g = np.exp(logp)
    g[np.arange(len(y)), y] -= 1
    g /= len(y)
    gw2 = h.T @ g
    gw1 = x.T @ ((g @ w[1].T) * (h > 0))
    t[0] += 1
    lr_t = lr * np.sqrt(1 - b2 ** t[0]) / (1 - b1 ** t[0])
    for p, gi, mi, vi in zip(w, (gw1, gw2), m, v):
        mi *= b1
        mi += (1 - b1) * gi
        vi *= b2
        vi += (1 - b2) * gi * gi
        p -= lr_t * mi / (np.sqrt(vi) + eps)
    return -logp[np.arange(len(y)), y].mean()


def _jax_train_step(opt, x, y, w1, w2, lr=1e-3, b1=0.9, b2=0.999,
                    eps=1e-7):
    """test_mlp_train_step's step as one jax.jit'd pure function over
    (weights, Adam slots, t): the state is threaded through the calls."""
    import jax
    import jax.numpy as jnp

    def loss(w, xb, yb):
        lp = jax.nn.log_softmax(jax.nn.relu(xb @ w[0]) @ w[1])
        return -jnp.take_along_axis(lp, yb[:, None], 1).mean()

    @jax.jit
    def step(state, xb, yb):
        w, m, v, t = state
        value, g = jax.value_and_grad(loss)(w, xb, yb)
        if opt == "sgd":
            return ([p - 0.01 * gi for p, gi in zip(w, g)], m, v, t), value
        t = t + 1.0
        lr_t = lr * jnp.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)
        m = [b1 * mi + (1.0 - b1) * gi for mi, gi in zip(m, g)]
        v = [b2 * vi + (1.0 - b2) * gi * gi for vi, gi in zip(v, g)]
        w = [p - lr_t * mi / (jnp.sqrt(vi) + eps)
             for p, mi, vi in zip(w, m, v)]
        return (w, m, v, t), value

    w = [jnp.asarray(w1), jnp.asarray(w2)]
    state = [(w, [jnp.zeros_like(p) for p in w],
              [jnp.zeros_like(p) for p in w], jnp.float32(0))]
    xb, yb = jnp.asarray(x), jnp.asarray(y)

    def run():
        state[0], value = step(state[0], xb, yb)
        return value.block_until_ready()
    return run


def _torch_train_step(opt, x, y, w1, w2):
    """The same step in PyTorch eager: autograd, then the update in
    place under no_grad (torch.optim's SGD / Adam would differ in
    epsilon placement)."""
    import torch
    F = torch.nn.functional
    xb, yb = torch.from_numpy(x), torch.from_numpy(y).long()
    w = [torch.from_numpy(w1.copy()).requires_grad_(),
         torch.from_numpy(w2.copy()).requires_grad_()]
    m = [torch.zeros_like(p) for p in w]
    v = [torch.zeros_like(p) for p in w]
    t = [0]

    def run(lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
        loss = F.cross_entropy(F.relu(xb @ w[0]) @ w[1], yb)
        g = torch.autograd.grad(loss, w)
        with torch.no_grad():
            if opt == "sgd":
                for p, gi in zip(w, g):
                    p.sub_(0.01 * gi)
            else:
                t[0] += 1
                lr_t = lr * (1 - b2 ** t[0]) ** 0.5 / (1 - b1 ** t[0])
                for p, gi, mi, vi in zip(w, g, m, v):
                    mi.mul_(b1).add_((1 - b1) * gi)
                    vi.mul_(b2).add_((1 - b2) * gi * gi)
                    p.sub_(lr_t * mi / (vi.sqrt() + eps))
        return loss.item()
    return run


@pytest.mark.parametrize("impl", ["tfmini-traced", "tfmini", "numpy"] +
                         skip_unless("tensorflow-function", "tensorflow",
                                     "jax-jit", "torch"))
@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_mlp_train_step(benchmark, impl, opt, rng):
    """The issue allows SGD or a hand-written Adam; both are measured.
    Adam adds three elementwise updates over each weight, which the
    traced step fuses (and compiles: 784x128 is over the native
    threshold) and eager runs op by op. JAX's step is jax.jit'd,
    PyTorch's eager."""
    _group(benchmark, f"MLP 784-128-10 b32 {opt.upper()} train step: "
           "eager vs traced")
    x, y, w1, w2 = _mlp(rng)
    if impl in ("jax-jit", "torch"):
        run = (_jax_train_step if impl == "jax-jit"
               else _torch_train_step)(opt, x, y, w1, w2)
        run()
        benchmark(run)
        return
    if impl == "numpy":
        if opt == "sgd":
            benchmark(lambda: _np_step(x, y, w1, w2))
        else:
            w = [w1, w2]
            m = [np.zeros_like(p) for p in w]
            v = [np.zeros_like(p) for p in w]
            t = [0]
            benchmark(lambda: _np_adam_step(x, y, w, m, v, t))
        return
    m_ = tf
    if impl.startswith("tensorflow"):
        import tensorflow as m_
    tx, ty = m_.constant(x), m_.constant(y)
    params = [m_.Variable(w1), m_.Variable(w2)]
    ms = [m_.Variable(m_.zeros_like(p)) for p in params]
    vs = [m_.Variable(m_.zeros_like(p)) for p in params]
    t = m_.Variable(0.0)

    def update(grads, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
        if opt == "sgd":
            for p, g in zip(params, grads):
                p.assign_sub(0.01 * g)
            return
        t.assign_add(1.0)
        lr_t = lr * m_.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)
        for p, g, m, v in zip(params, grads, ms, vs):
            m.assign(b1 * m + (1.0 - b1) * g)
            v.assign(b2 * v + (1.0 - b2) * g * g)
            p.assign_sub(lr_t * m / (m_.sqrt(v) + eps))

    def step(xb, yb):
        with m_.GradientTape() as tape:
            logits = m_.matmul(m_.nn.relu(m_.matmul(xb, params[0])),
                               params[1])
            loss = m_.reduce_mean(
                m_.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=yb, logits=logits))
        update(tape.gradient(loss, params))
        return loss

    fn = m_.function(step) if impl.endswith(("-traced", "-function")) \
        else step
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
