"""Gradients, a traced train step, memory info and the allocator under
stress, all on the GPU."""
import gc

import numpy as np
import pytest

import tfmini as tf

from gpu_util import GPU


def test_gradients_match_cpu():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((8, 5)).astype(np.float32)
    wv = rng.standard_normal((5, 3)).astype(np.float32)

    def grads(device):
        x, w = tf.constant(xv), tf.Variable(wv)
        with tf.device(device):
            with tf.GradientTape() as tape:
                y = tf.reduce_mean(tf.tanh(tf.matmul(x, w)) ** 2)
            return [g.numpy() for g in tape.gradient(y, [w])] + [y.numpy()]

    for g, c in zip(grads(GPU), grads("/CPU:0")):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6)


def test_traced_train_step_learns_like_cpu():
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((64, 4)).astype(np.float32)
    yv = (xv @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)) + 0.25

    def train(device):
        w = tf.Variable(np.zeros((4, 1), np.float32))
        b = tf.Variable(np.zeros((1,), np.float32))
        opt = tf.keras.optimizers.SGD(0.1)

        @tf.function
        def step(x, y):
            with tf.device(device):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
                gw, gb = tape.gradient(loss, [w, b])
                opt.apply_gradients([(gw, w), (gb, b)])
            return loss

        losses = [float(step(tf.constant(xv), tf.constant(yv)))
                  for _ in range(50)]
        return losses, w.numpy(), b.numpy()

    lg, wg, bg = train(GPU)
    lc, wc, bc = train("/CPU:0")
    assert lg[-1] < 1e-2 * lg[0]
    np.testing.assert_allclose(lg, lc, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(wg, wc, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bg, bc, rtol=1e-4, atol=1e-5)


def test_memory_info_counts_tensors():
    gc.collect()        # earlier tests' cyclic garbage, freed now not later
    tf.config.experimental.reset_memory_stats("GPU:0")
    before = tf.config.experimental.get_memory_info("GPU:0")
    assert set(before) == {"current", "peak"}
    with tf.device(GPU):
        x = tf.identity(tf.constant(np.zeros(1 << 20, np.float32)))
    during = tf.config.experimental.get_memory_info("GPU:0")
    assert during["current"] >= before["current"] + (4 << 20)
    assert during["peak"] >= during["current"]
    del x
    after = tf.config.experimental.get_memory_info("GPU:0")
    assert after["current"] == before["current"]
    gpu = tf.config.list_physical_devices("GPU")[0]
    tf.config.experimental.set_memory_growth(gpu, True)
    assert tf.config.experimental.get_memory_growth(gpu) is True


def test_listing():
    gpus = tf.config.list_physical_devices("GPU")
    assert gpus[0] == tf.config.PhysicalDevice("/physical_device:GPU:0",
                                               "GPU")
    assert tf.config.list_logical_devices("GPU")[0].name == "/device:GPU:0"


def test_allocator_stress_stays_flat():
    """10^5 allocations of mixed sizes, each freed as soon as made: the
    bytes held stay flat, the peak is one output above them, and the
    pool takes no more memory from the driver."""
    sizes = [1, 7, 256, 4099, 1 << 16, 3 << 18]
    with tf.device(GPU):
        xs = [tf.identity(tf.constant(np.ones(n, np.float32)))
              for n in sizes]
        for x in xs:                    # warm the pool with every size
            tf.negative(x)
        gc.collect()
        gc.disable()    # no collection of older garbage mid-count
        try:
            tf.config.experimental.reset_memory_stats("GPU:0")
            start = tf._C.gpu_memory_info(0)
            base = start["current"]
            for i in range(100_000 // len(sizes)):
                for x in xs:
                    tf.negative(x)
            tf.reduce_sum(xs[-1]).numpy()   # the stream passed the frees
            end = tf._C.gpu_memory_info(0)
        finally:
            gc.enable()
    assert end["current"] == base
    assert end["peak"] <= base + 2 * (3 << 18) * 4
    assert end["reserved"] <= start["reserved"] + (4 << 20), (start, end)


@pytest.mark.parametrize("program", ["mlp", "elementwise"])
def test_acceptance_style_programs_under_gpu_scope(program):
    rng = np.random.default_rng(3)
    if program == "mlp":
        model = tf.keras.Sequential([tf.keras.layers.Dense(16,
                                                           activation="relu"),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        x = rng.standard_normal((128, 8)).astype(np.float32)
        y = x.sum(1, keepdims=True)
        with tf.device(GPU):
            h = model.fit(x, y, epochs=5, batch_size=32, verbose=0)
        assert h.history["loss"][-1] < h.history["loss"][0]
    else:
        a = rng.standard_normal((256, 256)).astype(np.float32)
        with tf.device(GPU):
            r = tf.reduce_mean(tf.nn.relu(tf.matmul(a, a) * 0.5 - 1.0))
        want = np.mean(np.maximum((a @ a) * 0.5 - 1.0, 0))
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-4)
