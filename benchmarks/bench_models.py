"""The workloads of issue 17, each framework in its idiomatic fastest
form: tfmini and TensorFlow as tf.function train steps over Keras
layers, JAX as jax.jit (lax.scan for loops), PyTorch eager and, as
"torch-compile", torch.compile'd. Each framework runs in its own process
(report.py); a framework that is not installed skips.

- matmul 1024x1024 float32
- CNN train step: 64x32x32x3, conv32-pool-conv64-pool-dense10, SGD
- RNN: 50 steps of tanh(x Wx + h Wh), batch 32, 64 -> 128, forward
- LSTM text classifier train step: embedding 64, LSTM 128, 40 steps,
  batch 64
- Transformer encoder block train step: d_model 128, 4 heads, sequence
  64, batch 32 (attention, add & LayerNorm, FFN 512, add & LayerNorm,
  mean pool, dense 10)
- ResNet-style block train step: 3x3 convs, 64 channels, 32x32, batch 32

Every train step is plain SGD on a softmax cross-entropy (the same math
in every framework), so that the frameworks, not the optimizers, are
compared. Never a pass/fail on speed: these only measure."""

import numpy as np
import pytest

from _common import _importable


HAVE = {"tfmini": True, "tensorflow": _importable("tensorflow"),
        "jax": _importable("jax"), "torch": _importable("torch")}
HAVE["torch-compile"] = HAVE["torch"]
IMPLS = ["tfmini", "tensorflow", "jax", "torch", "torch-compile"]
LR = 0.01
VOCAB = 1000


def params(impls=IMPLS):
    return [pytest.param(i, id=i, marks=pytest.mark.skipif(
        not HAVE.get(i, i == "numpy"), reason=f"{i} is not installed"))
        for i in impls]


def data(name, seed=0):
    r = np.random.default_rng(seed)
    f32 = np.float32
    if name == "cnn":
        return (r.random((64, 32, 32, 3), dtype=f32),
                r.integers(0, 10, 64).astype(np.int32))
    if name == "rnn":
        return (r.standard_normal((50, 32, 64), dtype=f32),
                (r.standard_normal((64, 128), dtype=f32) * 0.1),
                (r.standard_normal((128, 128), dtype=f32) * 0.1))
    if name == "lstm":
        return (r.integers(0, VOCAB, (64, 40)).astype(np.int32),
                r.integers(0, 2, 64).astype(np.int32))
    if name == "transformer":
        return (r.standard_normal((32, 64, 128), dtype=f32),
                r.integers(0, 10, 32).astype(np.int32))
    if name == "resnet":
        return (r.standard_normal((32, 32, 32, 64), dtype=f32),
                r.integers(0, 10, 32).astype(np.int32))
    raise KeyError(name)


# ---- tfmini and TensorFlow: the same Keras code ---------------------------

def _tf_models(tf, name):
    L, keras = tf.keras.layers, tf.keras
    if name == "cnn":
        return keras.Sequential([
            keras.Input((32, 32, 3)),
            L.Conv2D(32, 3, padding="same", activation="relu"),
            L.MaxPooling2D(), L.Conv2D(64, 3, padding="same",
                                       activation="relu"),
            L.MaxPooling2D(), L.Flatten(), L.Dense(10)])
    if name == "lstm":
        return keras.Sequential([keras.Input((40,), dtype="int32"),
                                 L.Embedding(VOCAB, 64), L.LSTM(128),
                                 L.Dense(2)])
    if name == "transformer":
        inp = keras.Input((64, 128))
        a = L.MultiHeadAttention(num_heads=4, key_dim=32)(inp, inp)
        x = L.LayerNormalization()(L.Add()([inp, a]))
        f = L.Dense(128)(L.Dense(512, activation="relu")(x))
        x = L.LayerNormalization()(L.Add()([x, f]))
        out = L.Dense(10)(L.GlobalAveragePooling1D()(x))
        return keras.Model(inp, out)
    if name == "resnet":
        inp = keras.Input((32, 32, 64))
        c = L.Conv2D(64, 3, padding="same", activation="relu")(inp)
        c = L.Conv2D(64, 3, padding="same")(c)
        x = L.ReLU()(L.Add()([inp, c]))
        out = L.Dense(10)(L.GlobalAveragePooling2D()(x))
        return keras.Model(inp, out)
    raise KeyError(name)


def tf_step(tf, name):
    """A zero-argument callable: one traced train step (or the RNN's
    forward loop), its result fetched so that the work is done."""
    if name == "matmul":
        a = tf.constant(np.random.default_rng(0).standard_normal(
            (1024, 1024), dtype=np.float32))
        return lambda: tf.matmul(a, a).numpy()
    if name == "rnn":
        xs, wx, wh = (tf.constant(v) for v in data("rnn"))

        @tf.function
        def rnn(xs):
            h = tf.zeros((32, 128))
            for t in tf.range(50):
                h = tf.tanh(tf.matmul(xs[t], wx) + tf.matmul(h, wh))
            return h
        return lambda: rnn(xs).numpy()
    model = _tf_models(tf, name)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(LR)
    x, y = (tf.constant(v) for v in data(name))

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return lambda: step(x, y).numpy()


# ---- JAX: jax.jit over plain functions ------------------------------------

def jax_step(name):
    import jax
    import jax.numpy as jnp
    from jax import lax
    r = np.random.default_rng(1)

    def w(*shape):
        fan_in = int(np.prod(shape[:-1]))
        return jnp.asarray(r.standard_normal(shape, dtype=np.float32)
                           / np.sqrt(fan_in))

    if name == "matmul":
        a = jnp.asarray(np.random.default_rng(0).standard_normal(
            (1024, 1024), dtype=np.float32))
        f = jax.jit(jnp.matmul)
        return lambda: f(a, a).block_until_ready()
    if name == "rnn":
        xs, wx, wh = (jnp.asarray(v) for v in data("rnn"))

        @jax.jit
        def rnn(xs):
            def cell(h, x):
                return jnp.tanh(x @ wx + h @ wh), None
            return lax.scan(cell, jnp.zeros((32, 128)), xs)[0]
        return lambda: rnn(xs).block_until_ready()

    def conv(x, k):
        return lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO",
                                                           "NHWC"))

    def pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1),
                                 (1, 2, 2, 1), "VALID")

    def layer_norm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-3) * g + b

    if name == "cnn":
        p = {"k1": w(3, 3, 3, 32), "b1": jnp.zeros(32),
             "k2": w(3, 3, 32, 64), "b2": jnp.zeros(64),
             "w": w(8 * 8 * 64, 10), "b": jnp.zeros(10)}

        def logits(p, x):
            x = pool(jax.nn.relu(conv(x, p["k1"]) + p["b1"]))
            x = pool(jax.nn.relu(conv(x, p["k2"]) + p["b2"]))
            return x.reshape(x.shape[0], -1) @ p["w"] + p["b"]
    elif name == "lstm":
        p = {"emb": w(VOCAB, 64), "k": w(64, 512), "r": w(128, 512),
             "bias": jnp.zeros(512), "w": w(128, 2), "b": jnp.zeros(2)}

        def logits(p, x):
            e = p["emb"][x]                                 # [b, t, 64]
            xw = jnp.einsum("btd,dg->tbg", e, p["k"]) + p["bias"]

            def cell(hc, xt):
                h, c = hc
                z = xt + h @ p["r"]
                i, f, g, o = jnp.split(z, 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), None
            z = jnp.zeros((x.shape[0], 128))
            h = lax.scan(cell, (z, z), xw)[0][0]
            return h @ p["w"] + p["b"]
    elif name == "transformer":
        p = {"q": w(128, 128), "k": w(128, 128), "v": w(128, 128),
             "o": w(128, 128), "g1": jnp.ones(128), "c1": jnp.zeros(128),
             "f1": w(128, 512), "d1": jnp.zeros(512), "f2": w(512, 128),
             "d2": jnp.zeros(128), "g2": jnp.ones(128),
             "c2": jnp.zeros(128), "w": w(128, 10), "b": jnp.zeros(10)}

        def logits(p, x):
            b, t, _ = x.shape

            def heads(y):
                return y.reshape(b, t, 4, 32).transpose(0, 2, 1, 3)
            q, k, v = (heads(x @ p[n]) for n in "qkv")
            s = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(32.0))
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b, t, 128) @ p["o"]
            x = layer_norm(x + a, p["g1"], p["c1"])
            f = jax.nn.relu(x @ p["f1"] + p["d1"]) @ p["f2"] + p["d2"]
            x = layer_norm(x + f, p["g2"], p["c2"])
            return x.mean(1) @ p["w"] + p["b"]
    elif name == "resnet":
        p = {"k1": w(3, 3, 64, 64), "b1": jnp.zeros(64),
             "k2": w(3, 3, 64, 64), "b2": jnp.zeros(64),
             "w": w(64, 10), "b": jnp.zeros(10)}

        def logits(p, x):
            c = jax.nn.relu(conv(x, p["k1"]) + p["b1"])
            x = jax.nn.relu(x + conv(c, p["k2"]) + p["b2"])
            return x.mean((1, 2)) @ p["w"] + p["b"]
    else:
        raise KeyError(name)

    def loss(p, x, y):
        lp = jax.nn.log_softmax(logits(p, x))
        return -jnp.take_along_axis(lp, y[:, None], 1).mean()

    @jax.jit
    def step(p, x, y):
        value, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - LR * b, p, g), value

    x, y = (jnp.asarray(v) for v in data(name))
    state = [p]

    def run():
        state[0], value = step(state[0], x, y)
        value.block_until_ready()
    return run


# ---- PyTorch: nn modules, eager or torch.compile'd ------------------------

def torch_step(name, compiled):
    import torch
    from torch import nn
    F = nn.functional
    if name == "matmul":
        a = torch.from_numpy(np.random.default_rng(0).standard_normal(
            (1024, 1024), dtype=np.float32))
        f = torch.compile(torch.matmul) if compiled else torch.matmul
        return lambda: f(a, a)
    if name == "rnn":
        xs, wx, wh = (torch.from_numpy(v) for v in data("rnn"))

        def rnn(xs):
            h = torch.zeros(32, 128)
            for t in range(50):
                h = torch.tanh(xs[t] @ wx + h @ wh)
            return h
        f = torch.compile(rnn) if compiled else rnn
        return lambda: f(xs)

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(128, 4, batch_first=True)
            self.n1, self.n2 = nn.LayerNorm(128), nn.LayerNorm(128)
            self.f1, self.f2 = nn.Linear(128, 512), nn.Linear(512, 128)
            self.out = nn.Linear(128, 10)

        def forward(self, x):
            x = self.n1(x + self.mha(x, x, x, need_weights=False)[0])
            x = self.n2(x + self.f2(F.relu(self.f1(x))))
            return self.out(x.mean(1))

    class Lstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 64)
            self.lstm = nn.LSTM(64, 128, batch_first=True)
            self.out = nn.Linear(128, 2)

        def forward(self, x):
            return self.out(self.lstm(self.emb(x))[1][0][0])

    class Resnet(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(64, 64, 3, padding=1)
            self.c2 = nn.Conv2d(64, 64, 3, padding=1)
            self.out = nn.Linear(64, 10)

        def forward(self, x):
            x = F.relu(x + self.c2(F.relu(self.c1(x))))
            return self.out(x.mean((2, 3)))

    if name == "cnn":
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(8 * 8 * 64, 10))
    else:
        model = {"lstm": Lstm, "transformer": Transformer,
                 "resnet": Resnet}[name]()
    x, y = data(name)
    # PyTorch's convolutions want NCHW: the same images, its layout.
    x = torch.from_numpy(np.ascontiguousarray(
        x.transpose(0, 3, 1, 2) if x.ndim == 4 else x))
    if x.dtype == torch.int32:
        x = x.long()
    y = torch.from_numpy(y).long()
    fwd = torch.compile(model) if compiled else model
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def run():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(fwd(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return run


WORKLOADS = ["matmul", "cnn", "rnn", "lstm", "transformer", "resnet"]
GROUP = {"matmul": "model: matmul 1024x1024",
         "cnn": "model: CNN train step 64x32x32x3",
         "rnn": "model: RNN 50 steps b32 64->128",
         "lstm": "model: LSTM classifier train step",
         "transformer": "model: Transformer block train step",
         "resnet": "model: ResNet block train step"}


def make(impl, name):
    if impl == "tfmini":
        import tfmini
        return tf_step(tfmini, name)
    if impl == "tensorflow":
        import tensorflow
        return tf_step(tensorflow, name)
    if impl == "jax":
        return jax_step(name)
    if impl == "numpy":
        a = np.random.default_rng(0).standard_normal((1024, 1024),
                                                     dtype=np.float32)
        return lambda: a @ a
    return torch_step(name, impl == "torch-compile")


@pytest.mark.parametrize("impl", params(IMPLS + ["numpy"]))
@pytest.mark.parametrize("name", WORKLOADS)
def test_model(benchmark, impl, name):
    if impl == "numpy" and name != "matmul":
        pytest.skip("NumPy has no train steps: matmul only")
    benchmark.group = GROUP[name]
    benchmark.extra_info["impl"] = impl
    run = make(impl, name)
    run()           # trace / compile / JIT outside the timing
    benchmark(run)


if __name__ == "__main__":
    # python3 benchmarks/bench_models.py IMPL [NAME...]: median us/call
    import sys
    import time
    impl = sys.argv[1] if len(sys.argv) > 1 else "tfmini"
    for name in sys.argv[2:] or WORKLOADS:
        run = make(impl, name)
        run()
        ts = []
        for _ in range(7):
            t = time.perf_counter()
            run()
            ts.append(time.perf_counter() - t)
        print(f"{impl:14s} {name:12s} {np.median(ts) * 1e6:12,.0f} us",
              flush=True)
