"""MirroredStrategy over the GPUs, and NCCL's all-reduce between them
(with as many GPUs as the machine has; one is enough to run it)."""
import numpy as np
import pytest

import tfmini as tf
from tfmini.distribute import nccl


def test_nccl_all_reduce_over_the_gpus():
    if not nccl.available():
        pytest.skip("tfmini was built without NCCL (nccl.h, libnccl)")
    n = tf.config._gpu_count()
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    xs = []
    for i in range(n):
        with tf.device(f"/GPU:{i}"):
            xs.append(tf.constant(base) * float(i + 1))
    outs = nccl.all_reduce(xs)
    want = base * sum(range(1, n + 1))
    for i, o in enumerate(outs):
        assert f"GPU:{i}" in o.device
        np.testing.assert_allclose(o.numpy(), want)
    # The inputs are left as they were.
    np.testing.assert_allclose(xs[0].numpy(), base)
    with tf.device("/GPU:0"):
        d = tf.constant([1.0, 5.0], tf.float64)
    np.testing.assert_allclose(nccl.all_reduce([d], "max")[0].numpy(),
                               [1.0, 5.0])
    with pytest.raises(ValueError, match="GPU memory"):
        nccl.all_reduce([_on_cpu(base)])


def _on_cpu(a):
    with tf.device("/CPU:0"):
        return tf.constant(a) + 0.0


def test_mirrored_strategy_over_gpus_trains_like_the_cpu():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 5)).astype(np.float32)
    y = (x @ rng.normal(size=(5, 1))).astype(np.float32)

    def train(strategy):
        with strategy.scope():
            tf.keras.utils.set_random_seed(1)
            model = tf.keras.Sequential([
                tf.keras.layers.Dense(6, activation="tanh",
                                      input_shape=(5,)),
                tf.keras.layers.Dense(1)])
            opt = tf.keras.optimizers.SGD(0.1)

        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(
                    tf.reduce_sum((model(xb) - yb) ** 2, axis=1),
                    global_batch_size=16)
            opt.apply_gradients(zip(tape.gradient(
                loss, model.trainable_variables), model.trainable_variables))
            return loss

        @tf.function
        def dist_step(batch):
            return strategy.reduce("SUM", strategy.run(step, args=batch),
                                   axis=None)
        ds = strategy.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices((x, y)).batch(16))
        for _ in range(3):
            for b in ds:
                dist_step(b)
        return [w.numpy() for w in model.weights]

    gpus = tf.distribute.MirroredStrategy()          # every GPU, as TF
    assert gpus.num_replicas_in_sync == tf.config._gpu_count()
    assert "GPU:0" in gpus.extended.worker_devices[0]
    cpu = tf.distribute.OneDeviceStrategy("/cpu:0")
    for a, b in zip(train(cpu), train(gpus)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
