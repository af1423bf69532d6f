"""The rule that decides which cached tf.function calls may replay as a
CUDA graph (Note [CUDA graphs for cached calls] in
csrc/graph/exec_cugraph.c), checked on the test-only FAKE device: the
rule is a pure function of the plan, so it runs here without a GPU. The
FAKE device is no GPU, so nothing is captured here: the calls must
still give the right values. The capture and replay themselves are
tests/gpu/test_gpu_cuda_graphs.py's."""
import ctypes

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

FAKE = "/device:FAKE:0"
_lib = ctypes.CDLL(_C.__file__)
_lib.tfm_cugraph_last_verdict.restype = ctypes.c_int


def verdict():
    buf = ctypes.create_string_buffer(256)
    ok = _lib.tfm_cugraph_last_verdict(buf, 256)
    return ok, buf.value.decode()


def counters():
    c = (ctypes.c_int64 * 6)()
    _lib.tfm_cugraph_counters(c)
    return dict(zip(["captures", "replays", "fallbacks", "failures",
                     "eligible", "ineligible"], c))


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    monkeypatch.delenv("TFMINI_CUDA_GRAPHS", raising=False)
    _C._enable_fake_device(True)
    yield
    _C._enable_fake_device(True)


def x3():
    return tf.constant(np.array([0.5, -1.0, 2.0], np.float32))


def judge(fn, *args):
    """fn's verdict, judged on its first call, and its values."""
    before = counters()
    out = fn(*args)
    after = counters()
    assert (after["eligible"] + after["ineligible"]
            == before["eligible"] + before["ineligible"] + 1)
    return verdict(), out


def test_all_on_one_device_is_eligible():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            return tf.exp(tf.negative(tf.abs(a))) * 2.0 + a

    (ok, why), y = judge(f, x3())
    assert ok == 1 and why.startswith("eligible"), why
    # Judged once: later calls read the plan's verdict.
    before = counters()
    for _ in range(3):
        y = f(x3())
    assert counters() == before
    a = x3().numpy()
    np.testing.assert_allclose(y.numpy(), np.exp(-np.abs(a)) * 2 + a,
                               rtol=1e-6)


def test_matmul_with_variables_on_the_device_is_eligible():
    with tf.device(FAKE):
        w = tf.Variable(np.eye(3, dtype=np.float32))

    @tf.function
    def f(a):
        with tf.device(FAKE):
            w.assign_add(tf.ones((3, 3)) * 0.5)
            return tf.matmul(tf.reshape(a, (1, 3)), w)

    (ok, why), y = judge(f, x3())
    assert ok == 1, why
    np.testing.assert_allclose(y.numpy(), x3().numpy()[None] @
                               (np.eye(3) + 0.5), rtol=1e-6)


def test_cpu_function_is_not():
    @tf.function
    def f(a):
        return a * 2.0

    (ok, why), _ = judge(f, x3())
    assert ok == 0 and "runs on the CPU" in why and "'mul'" in why, why


def test_variable_on_the_cpu_is_not():
    v = tf.Variable(np.ones(3, np.float32))

    @tf.function
    def f(a):
        with tf.device(FAKE):
            v.assign_add(a)
            return a + 1.0

    (ok, why), _ = judge(f, x3())
    assert ok == 0 and "runs on the CPU" in why, why
    np.testing.assert_allclose(v.numpy(), 1 + x3().numpy())


@pytest.mark.parametrize("kind,words", [
    ("print", "prints on the host"),
    ("assert", "reads its condition on the host"),
    ("cond", "tf.cond"),
    ("while", "tf.while_loop"),
    ("where", "output shape known only from its values"),
    ("random", "random op"),
])
def test_host_synchronizing_steps_are_not(kind, words, capsys):
    @tf.function
    def f(a):
        with tf.device(FAKE):
            b = a * 2.0
            if kind == "print":
                tf.print(b)
            elif kind == "assert":
                tf.debugging.Assert(tf.reduce_all(b < 100.0), [b])
            elif kind == "cond":
                b = tf.cond(tf.reduce_sum(b) > 0, lambda: b + 1.0,
                            lambda: b - 1.0)
            elif kind == "while":
                b = tf.while_loop(lambda i, t: i < 3,
                                  lambda i, t: (i + 1, t * 2.0),
                                  (tf.constant(0), b))[1]
            elif kind == "where":
                b = tf.reduce_sum(tf.boolean_mask(b, b > 0)) + b
            elif kind == "random":
                b = b + tf.random.uniform((3,), seed=1)
            return b + 1.0

    (ok, why), y = judge(f, x3())
    assert ok == 0 and words in why, why
    assert y.shape == (3,)
    capsys.readouterr()


def test_value_crossing_devices_is_not():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            b = tf.exp(a)
        with tf.device("/CPU:0"):
            c = b * 2.0
        return c

    (ok, why), y = judge(f, x3())
    assert ok == 0, why
    assert "runs on the CPU" in why or "between devices" in why, why
    np.testing.assert_allclose(y.numpy(), np.exp(x3().numpy()) * 2,
                               rtol=1e-6)


def test_off_judges_nothing(monkeypatch):
    monkeypatch.setenv("TFMINI_CUDA_GRAPHS", "0")

    @tf.function
    def f(a):
        with tf.device(FAKE):
            return a * 3.0

    before = counters()
    y = f(x3())
    assert counters() == before
    np.testing.assert_allclose(y.numpy(), x3().numpy() * 3)


def test_fake_device_is_judged_but_never_captured(monkeypatch, capfd):
    monkeypatch.setenv("TFMINI_CUDA_GRAPHS", "1")
    with tf.device(FAKE):
        v = tf.Variable(np.zeros(3, np.float32))

    @tf.function
    def step(a):
        with tf.device(FAKE):
            v.assign_add(a)
            return v.read_value() * 2.0

    before = counters()
    for k in range(1, 5):
        y = step(x3())
        np.testing.assert_allclose(y.numpy(), 2 * k * x3().numpy(),
                                   rtol=1e-6)
    after = counters()
    assert after["eligible"] == before["eligible"] + 1
    for name in ("captures", "replays", "fallbacks", "failures"):
        assert after[name] == before[name], name
    # =1 says why a judged plan stays plain.
    assert "not a GPU" in capfd.readouterr().err


def test_input_shapes_may_change_between_calls():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            return tf.reduce_sum(a * a, axis=-1)

    for n in (3, 4, 3, 5):
        a = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(f(tf.constant(a)).numpy(),
                                   (a * a).sum(), rtol=1e-6)


@pytest.mark.parametrize("optimizer", ["manual", "SGD", "Adam"])
def test_train_step_is_eligible(optimizer):
    """An MLP step with its variables and optimizer on the device: the
    mean's divisor (a host constant read straight by RealDiv, made after
    placement) and the optimizer's slots do not keep it off a graph."""
    rng = np.random.default_rng(0)
    with tf.device(FAKE):
        w1 = tf.Variable(rng.standard_normal((8, 16)).astype(np.float32))
        b1 = tf.Variable(np.zeros(16, np.float32))
        w2 = tf.Variable(rng.standard_normal((16, 1)).astype(np.float32))
        opt = (None if optimizer == "manual"
               else getattr(tf.keras.optimizers, optimizer)(0.01))
    ws = [w1, b1, w2]

    @tf.function
    def step(x, y):
        with tf.device(FAKE):
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.matmul(x, w1) + b1)
                loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y))
            gs = tape.gradient(loss, ws)
            if opt is None:
                for v, g in zip(ws, gs):
                    v.assign_sub(0.01 * g)
            else:
                opt.apply_gradients(zip(gs, ws))
        return loss

    x = tf.constant(rng.standard_normal((32, 8)).astype(np.float32))
    y = tf.constant(rng.standard_normal((32, 1)).astype(np.float32))
    (ok, why), loss0 = judge(step, x, y)
    assert ok == 1, why
    for _ in range(5):
        loss = step(x, y)
    assert float(loss) < float(loss0)
