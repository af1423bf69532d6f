"""Mixed precision: one traced train step (train_on_batch) of the
MNIST-style MLP (784-128-10, batch 128) under the float32,
mixed_float16 and mixed_bfloat16 dtype policies, and a 1024x1024x1024
matmul in float32, bfloat16 (oneDNN's bfloat16 primitive, AVX512_BF16
where the CPU has it) and float16 (widened to float32 around sgemm);
the two 3x3 Conv2D forwards of the CNN benchmark (64x32x32x3 -> 32,
64x16x16x32 -> 64) in float32 and bfloat16 (oneDNN's bf16 convolution
where the CPU has AVX512_BF16, the float32 upcast otherwise), and that
CNN's traced train step (conv32-pool-conv64-pool-dense10, batch 64)
under float32 and mixed_bfloat16.

    python3 -m pytest benchmarks/bench_mixed_precision.py --benchmark-enable
    python3 benchmarks/bench_mixed_precision.py [--rounds N]   # a table

Never a pass/fail on speed: these only measure."""
import sys
import time

import numpy as np
import pytest

from _common import keras_models

BATCH = 128
POLICIES = ["float32", "mixed_float16", "mixed_bfloat16"]
MATMUL_DTYPES = ["float32", "bfloat16", "float16"]
N = 1024
CONV_DTYPES = ["float32", "bfloat16"]
# (x shape, filter shape): the CNN's two convolutions.
CONVS = [((64, 32, 32, 3), (3, 3, 3, 32)),
         ((64, 16, 16, 32), (3, 3, 32, 64))]
CNN_POLICIES = ["float32", "mixed_bfloat16"]


def train_step(policy):
    """A function running one train_on_batch of the MLP built under
    policy (compiled and traced by a first call)."""
    import tfmini
    keras = tfmini.keras
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = keras_models(keras)["mlp"]()
    finally:
        keras.mixed_precision.set_global_policy(None)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    r = np.random.default_rng(0)
    x = r.random((BATCH, 784), dtype=np.float32)
    y = r.integers(0, 10, BATCH).astype(np.int32)
    step = lambda: model.train_on_batch(x, y)  # noqa: E731
    step()
    return step


def cnn_step(policy):
    """One train_on_batch of bench_models' CNN (64x32x32x3,
    conv32-pool-conv64-pool-dense10) built under policy."""
    import tfmini
    keras = tfmini.keras
    L = keras.layers
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = keras.Sequential([
            keras.Input((32, 32, 3)),
            L.Conv2D(32, 3, padding="same", activation="relu"),
            L.MaxPooling2D(), L.Conv2D(64, 3, padding="same",
                                       activation="relu"),
            L.MaxPooling2D(), L.Flatten(), L.Dense(10),
            L.Activation("linear", dtype="float32")])
    finally:
        keras.mixed_precision.set_global_policy(None)
    model.compile(optimizer=keras.optimizers.SGD(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    r = np.random.default_rng(0)
    x = r.random((64, 32, 32, 3), dtype=np.float32)
    y = r.integers(0, 10, 64).astype(np.int32)
    step = lambda: model.train_on_batch(x, y)  # noqa: E731
    step()
    return step


def conv(shapes, dtype_name):
    import tfmini as tf
    r = np.random.default_rng(0)
    dt = tf.as_dtype(dtype_name)
    x = tf.cast(tf.constant(r.random(shapes[0], dtype=np.float32)), dt)
    f = tf.cast(tf.constant(r.random(shapes[1], dtype=np.float32)), dt)
    return lambda: tf.nn.conv2d(x, f, 1, "SAME")


def conv_name(shapes):
    (n, h, w, c), (kh, kw, _, o) = shapes
    return f"conv2d fwd {n}x{h}x{w}x{c}, {kh}x{kw} -> {o}"


def matmul(dtype_name):
    import tfmini as tf
    r = np.random.default_rng(0)
    dt = tf.as_dtype(dtype_name)
    a = tf.cast(tf.constant(r.random((N, N), dtype=np.float32)), dt)
    b = tf.cast(tf.constant(r.random((N, N), dtype=np.float32)), dt)
    return lambda: tf.matmul(a, b)


@pytest.mark.parametrize("policy", POLICIES)
def test_train_step_mlp(benchmark, policy):
    benchmark.group = f"train step MLP 784-128-10 b{BATCH} (traced)"
    benchmark.pedantic(train_step(policy), rounds=20, warmup_rounds=2)


@pytest.mark.parametrize("policy", CNN_POLICIES)
def test_train_step_cnn(benchmark, policy):
    benchmark.group = "train step CNN 64x32x32x3 conv32-pool-conv64 (traced)"
    benchmark.pedantic(cnn_step(policy), rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("i", range(len(CONVS)))
@pytest.mark.parametrize("dtype", CONV_DTYPES)
def test_conv_forward(benchmark, i, dtype):
    benchmark.group = conv_name(CONVS[i])
    benchmark.pedantic(conv(CONVS[i], dtype), rounds=10, warmup_rounds=1)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES)
def test_matmul_1024(benchmark, dtype):
    benchmark.group = f"matmul {N}x{N}x{N}"
    benchmark.pedantic(matmul(dtype), rounds=5, warmup_rounds=1)


# ---- script: a median table -------------------------------------------------

def median_ms(fn, rounds):
    fn()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def main():
    rounds = 10
    only = None
    if "--only" in sys.argv:  # "conv": the conv and CNN rows alone
        only = sys.argv[sys.argv.index("--only") + 1]
    if "--rounds" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
    rows = []
    for policy in POLICIES if only is None else []:
        rows.append((f"train step MLP 784-128-10, batch {BATCH}", policy,
                     median_ms(train_step(policy), rounds * 5)))
    for dt in MATMUL_DTYPES if only is None else []:
        rows.append((f"matmul {N}x{N}x{N}", dt,
                     median_ms(matmul(dt), rounds)))
    for shapes in CONVS:
        for dt in CONV_DTYPES:
            rows.append((conv_name(shapes), dt,
                         median_ms(conv(shapes, dt), rounds)))
    for policy in CNN_POLICIES:
        rows.append(("train step CNN 64x32x32x3, conv32-pool-conv64-pool-"
                     "dense10", policy, median_ms(cnn_step(policy), rounds)))
    base = {}
    print("| benchmark | dtype / policy | median | float32 / it |")
    print("|---|---|---|---|")
    for name, what, ms in rows:
        base.setdefault(name, ms)
        print(f"| {name} | {what} | {ms:.3f} ms | "
              f"**{base[name] / ms:.2f}** |")


if __name__ == "__main__":
    main()
