"""Mixed precision on the GPU, checked without one (issue 21): a CUDA
build's kernel table says which GPU kernels take float16 and bfloat16
themselves (the dispatcher casts around the rest), a device that is not
the GPU's keeps casting, Keras models under the mixed policies place
every op where the GPU's table has a kernel (the FAKE device given
exactly that table), their train steps' 16-bit ops all have GPU kernels
that take the 16-bit floats, and tools/gpu_bench.py fails clearly
without a GPU. tests/gpu/test_gpu_mixed.py runs the kernels on a GPU;
tests/test_half_cuda_host.py runs reduce.cu's bodies on the host."""
import ctypes
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _fn(name, restype, argtypes):
    if not _C.cuda_built():
        pytest.skip("this build has no CUDA backend")
    try:
        f = getattr(ctypes.CDLL(_C.__file__), name)
    except AttributeError:
        pytest.fail(f"a CUDA build lacks {name}")
    f.restype, f.argtypes = restype, argtypes
    return f


def test_gpu_table_lists_the_half_kernels():
    half = _fn("tfm_cuda_half_kernel", ctypes.c_int, [ctypes.c_char_p])
    has = _fn("tfm_cuda_has_kernel", ctypes.c_int, [ctypes.c_char_p])
    # What a Keras mixed_float16 / mixed_bfloat16 model runs in its
    # compute dtype, forward and backward: elementwise rows, matmul,
    # reductions (bias gradients, losses), softmax and the cross
    # entropies, the fused normalizations.
    for op in ("BatchMatMulV2", "AddV2", "Sub", "Mul", "RealDiv", "Relu",
               "ReluGrad", "Sigmoid", "Tanh", "Exp", "Neg", "Maximum",
               "LeakyRelu", "Less", "Equal", "Sum", "Mean", "Max", "Min",
               "Prod", "Softmax", "LogSoftmax",
               "SparseSoftmaxCrossEntropyWithLogits",
               "SoftmaxCrossEntropyWithLogits", "_LayerNorm",
               "_LayerNormGrad", "_SoftmaxGrad"):
        assert half(op.encode()) == 1, op
        assert has(op.encode()) == 1, op
    # All / Any (the loss scale's finite check) reduce bools on the GPU.
    for op in ("All", "Any"):
        assert has(op.encode()) == 1, op
    # Cast takes every dtype anyway; unknown is -1.
    assert half(b"Cast") == 0
    assert half(b"NoSuchOp") == -1


def test_matmul_counters_exist_and_start_at_zero_without_a_gpu():
    calls = _fn("tfm_cuda_matmul_calls", ctypes.c_long, [ctypes.c_int])
    if tf.config._gpu_count():
        pytest.skip("a GPU is present: tests/gpu/test_gpu_mixed.py counts")
    # 3 and 4: _FusedMatMul epilogues run and declined (kernels_matmul.c)
    assert [calls(i) for i in range(5)] == [0, 0, 0, 0, 0]
    assert calls(5) == -1


@pytest.fixture
def fake():
    _C._enable_fake_device(True)
    yield
    _C._enable_fake_device(True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_ops_on_another_device_still_cast_around_the_kernel(fake,
                                                                 dtype):
    """The GPU's say-so is by its own table: the FAKE device (CPU kernels,
    which take no float16) keeps the float32 upcast, so its results are
    the CPU's bit for bit."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    nd = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(nd)
    b = rng.standard_normal((7, 3)).astype(nd)

    def run(device):
        with tf.device(device):
            x, y = tf.identity(tf.constant(a)), tf.identity(tf.constant(b))
            return (tf.nn.relu(tf.matmul(x, y)) + 1).numpy()

    np.testing.assert_array_equal(run("/device:FAKE:0").view(np.uint16),
                                  run("/CPU:0").view(np.uint16))


def test_gpu_bench_fails_clearly_without_a_gpu():
    if tf.config._gpu_count():
        pytest.skip("a GPU is present: tools/gpu_check.sh runs the bench")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_bench.py")],
                       capture_output=True, text=True, timeout=300, env=env,
                       cwd=str(ROOT))
    assert r.returncode != 0
    assert "no CUDA GPU" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr, r.stderr


# ---- Keras models under the mixed policies -------------------------------
FAKE = "/device:FAKE:0"
CPU_NAME = "/job:localhost/replica:0/task:0/device:CPU:0"
# op.h's flags, as op_table() gives them: kernels taking every dtype,
# and graph-only ops (Const, While: the executor's own steps).
ANY_DTYPE, GRAPH_ONLY = 1 << 5, 1 << 6
# Ops with 16-bit inputs whose GPU kernels are other files' (conv_cudnn.c,
# kernels_pool.c) and still compute in float32 between casts on the GPU.
CASTS_AROUND = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter",
                "MaxPool", "MaxPoolGrad"}


def _model(name):
    L = tf.keras.layers
    if name == "transformer":
        inp = tf.keras.Input((16, 32))
        a = L.MultiHeadAttention(num_heads=2, key_dim=16)(inp, inp)
        x = L.LayerNormalization()(L.Add()([inp, a]))
        f = L.Dense(32)(L.Dense(64, activation="relu")(x))
        x = L.LayerNormalization()(L.Add()([x, f]))
        out = L.Dense(10)(L.GlobalAveragePooling1D()(x))
        return tf.keras.Model(inp, out), (4, 16, 32)
    if name == "mlp":
        return (tf.keras.Sequential([tf.keras.Input((784,)),
                                     L.Dense(128, activation="relu"),
                                     L.Dense(10)]), (16, 784))
    return (tf.keras.Sequential([
        tf.keras.Input((32, 32, 3)),
        L.Conv2D(32, 3, padding="same", activation="relu"),
        L.MaxPooling2D(), L.Conv2D(64, 3, padding="same", activation="relu"),
        L.MaxPooling2D(), L.Flatten(), L.Dense(10)]), (4, 32, 32, 3))


def _needs_cudnn(name):
    if name == "cnn" and not ctypes.CDLL(_C.__file__).tfm_cuda_cudnn_version():
        pytest.skip("built without cuDNN: the convolutions soft-place")


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_train_step_half_ops_all_take_half_on_the_gpu(name, policy):
    """The traced train step of the benchmarks' models (the transformer
    block smaller) under a mixed policy: every op with a 16-bit input or
    output either takes every dtype (copies, Cast) or has a GPU kernel
    that takes the 16-bit floats itself, so nothing is cast around a
    kernel but the convolutions and pooling (CASTS_AROUND; the MLP and
    the transformer have none)."""
    half = _fn("tfm_cuda_half_kernel", ctypes.c_int, [ctypes.c_char_p])
    flags = {row[0]: row[3] for row in _C.op_table()}
    tf.keras.mixed_precision.set_global_policy(policy)
    try:
        model, shape = _model(name)
    finally:
        tf.keras.mixed_precision.set_global_policy(None)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    y = np.zeros(shape[0], np.int32)
    ops = step.get_concrete_function(tf.constant(x),
                                     tf.constant(y)).graph.get_operations()
    dtype = {f"{o.name}:{k}": s.dtype for o in ops
             for k, s in enumerate(o.outputs)}
    halves = (tf.float16, tf.bfloat16)
    seen, cast = set(), set()
    for o in ops:
        ds = [dtype[i if ":" in i else i + ":0"] for i in o.inputs]
        ds += [s.dtype for s in o.outputs]
        if o.type == "Placeholder" or not any(d in halves for d in ds):
            continue
        seen.add(o.type)
        if (not flags[o.type] & (ANY_DTYPE | GRAPH_ONLY)
                and half(o.type.encode()) != 1):
            cast.add(o.type)
    # The step does run its matmuls, bias gradients and loss in 16 bits,
    # and the transformer its attention softmax and layer norms.
    assert {"BatchMatMulV2", "Sum", "ReluGrad"} <= seen, seen
    if name == "transformer":
        assert {"Softmax", "_SoftmaxGrad", "_LayerNorm",
                "_LayerNormGrad"} <= seen, seen
    assert cast <= (CASTS_AROUND if name == "cnn" else set()), cast


@pytest.mark.parametrize("eager", [False, True], ids=["traced", "eager"])
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_mixed_models_train_with_nothing_soft_placed(fake, capfd, name,
                                                      policy, eager):
    """FAKE given exactly the GPU table's ops (the rest denied, as the
    cuslice ranking did): a compiled Keras model under a mixed policy
    trains with every op on it, none on the CPU (mixed_float16's loss
    scale checks its gradients with IsFinite and All), and its losses
    are the CPU's."""
    has = _fn("tfm_cuda_has_kernel", ctypes.c_int, [ctypes.c_char_p])
    _needs_cudnn(name)
    if name != "mlp" and eager:
        pytest.skip("eager repeats the traced step's ops, slowly")
    for row in _C.op_table():
        if has(row[0].encode()) == 0:
            _C._fake_device_deny(row[0])
    rng = np.random.default_rng(1)

    def train(device, log):
        tf.keras.mixed_precision.set_global_policy(policy)
        try:
            with tf.device(device):
                tf.keras.utils.set_random_seed(0)
                model, shape = _model(name)
                model.compile(
                    optimizer=tf.keras.optimizers.Adam(1e-3),
                    loss=tf.keras.losses.SparseCategoricalCrossentropy(
                        from_logits=True), run_eagerly=eager)
                x = rng.random(shape, dtype=np.float32)
                y = rng.integers(0, 10, shape[0]).astype(np.int32)
                losses = [float(model.train_on_batch(x, y))]
                capfd.readouterr()
                tf.debugging.set_log_device_placement(log)
                try:
                    losses.append(float(model.train_on_batch(x, y)))
                finally:
                    tf.debugging.set_log_device_placement(False)
                return losses, capfd.readouterr().err
        finally:
            tf.keras.mixed_precision.set_global_policy(None)

    got, err = train(FAKE, True)
    placed = set()
    for line in err.splitlines():
        if line.startswith("Executing op "):
            placed.add(tuple(line[len("Executing op "):].split(
                " in device ")))
    assert placed, err[-2000:]
    on_cpu = {op for op, dev in placed if dev == CPU_NAME}
    assert not on_cpu, sorted(on_cpu)
    assert {"BatchMatMulV2", "Sum"} <= {op for op, _ in placed}
    rng = np.random.default_rng(1)
    want, _ = train("/CPU:0", False)
    np.testing.assert_allclose(got, want, rtol=1e-6)
