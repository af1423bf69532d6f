"""The device seam, proven by the test-only FAKE device (Note [Device
seam] in csrc/core/device.h): host memory behind the device interface,
every CPU kernel registered for it, copies counted. Every op run there,
eagerly or traced, must give the CPU's bits, and values must cross only
through the device's copy functions."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from specs import case_id, device_cases, outputs

FAKE = "/device:FAKE:0"
FAKE_NAME = "/job:localhost/replica:0/task:0/device:FAKE:0"
CPU_NAME = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture(autouse=True)
def fake():
    _C._enable_fake_device(True)
    _C._fake_device_stats(True)
    yield
    tf.debugging.set_log_device_placement(False)
    _C._enable_fake_device(True)     # back to every kernel


def stats():
    return _C._fake_device_stats(True)



def same_bits(got, want):
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype)
    if g.dtype == object:           # strings: bytes objects, not bits
        assert g.tolist() == w.tolist(), (g, w)
        return
    assert g.tobytes() == w.tobytes(), (g, w)


# ---- every OpSpec row, eager and traced, against the CPU ----

def _check_row(case):
    spec, shapes, dtype = case
    xs = spec.make_inputs(np.random.default_rng(0), shapes, dtype)
    want = [o.numpy() for o in outputs(spec.fn(*[tf.constant(x)
                                                  for x in xs]))]
    ins = [tf.constant(x) for x in xs]
    with tf.device(FAKE):
        got = outputs(spec.fn(*ins))
    assert len(got) == len(want)
    # Ops on strings run on the CPU whatever the scope: strings live in
    # host memory, as TF's do.
    on_host = any(np.asarray(x).dtype.kind in "OSU" for x in xs) or any(
        g.dtype == tf.string for g in got)
    for g, w in zip(got, want):
        # (A no-op, as a cast to the same dtype, returns its input.)
        assert (g.device == (CPU_NAME if on_host else FAKE_NAME)
                or any(g is x for x in ins)), spec.name
        same_bits(g.numpy(), w)

    def body(*args):
        with tf.device(FAKE):
            return spec.fn(*args)
    traced = outputs(tf.function(body)(*[tf.constant(x) for x in xs]))
    for g, w in zip(traced, want):
        same_bits(g.numpy(), w)


FAST, SLOW = device_cases()


@pytest.mark.parametrize("case", FAST, ids=[case_id(c) for c in FAST])
def test_every_op_on_fake_device_matches_cpu(case):
    _check_row(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW, ids=[case_id(c) for c in SLOW])
def test_every_row_on_fake_device_matches_cpu(case):
    _check_row(case)


# ---- copies ----

def test_chain_copies_in_once_and_out_once():
    x = tf.constant(np.linspace(0.5, 2.0, 12, dtype=np.float32))
    stats()
    with tf.device(FAKE):
        y = tf.exp(tf.negative(tf.abs(tf.sqrt(tf.square(x)))))
    s = stats()
    assert (s["from_host"], s["to_host"]) == (1, 0)
    assert s["bytes_from_host"] == 48
    assert y.device == FAKE_NAME
    v = y.numpy()
    s = stats()
    assert (s["from_host"], s["to_host"], s["bytes_to_host"]) == (0, 1, 48)
    np.testing.assert_allclose(
        v, np.exp(-np.abs(np.sqrt(np.square(x.numpy())))), rtol=1e-6)


def test_traced_chain_copies_in_once_and_out_once():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            return tf.exp(tf.negative(tf.abs(tf.sqrt(tf.square(a)))))

    x = tf.constant(np.linspace(0.5, 2.0, 12, dtype=np.float32))
    f(x)
    stats()
    y = f(x)
    s = stats()
    assert (s["from_host"], s["to_host"]) == (1, 0)
    assert y.device == FAKE_NAME
    y.numpy()
    assert stats()["to_host"] == 1


def test_identity_under_a_scope_copies_across():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.device(FAKE):
        y = tf.identity(x)
    assert y.device == FAKE_NAME and x.device == CPU_NAME
    assert stats()["from_host"] == 1
    with tf.device("/CPU:0"):
        z = tf.identity(y)
    assert z.device == CPU_NAME
    assert stats()["to_host"] == 1
    np.testing.assert_array_equal(z.numpy(), [1.0, 2.0, 3.0])
    assert "FAKE:0" in repr(y) or "1." in repr(y)


def test_mixed_devices_copy_to_the_scope():
    a = tf.constant([1.0, 2.0])
    with tf.device(FAKE):
        b = tf.constant([3.0, 4.0]) * 1.0     # on FAKE
    stats()
    c = a + b                                  # no scope: b's device
    assert c.device == FAKE_NAME
    assert stats()["from_host"] == 1
    with tf.device("/CPU:0"):
        d = a + b
    assert d.device == CPU_NAME
    assert stats()["to_host"] == 1
    np.testing.assert_array_equal(d.numpy(), [4.0, 6.0])


def test_fake_device_buffers_are_freed():
    before = _C._fake_device_stats()["live_buffers"]
    with tf.device(FAKE):
        y = tf.exp(tf.constant(np.ones(1000, np.float32)))
    assert _C._fake_device_stats()["live_buffers"] == before + 1
    del y
    assert _C._fake_device_stats()["live_buffers"] == before


# ---- soft placement and logging ----

def test_soft_placement_runs_on_cpu_and_logs(capfd):
    _C._fake_device_deny("Exp")
    x = tf.constant([0.0, 1.0])
    tf.debugging.set_log_device_placement(True)
    with tf.device(FAKE):
        y = tf.exp(x)
        z = tf.abs(y)
    tf.debugging.set_log_device_placement(False)
    assert y.device == CPU_NAME
    assert z.device == FAKE_NAME
    err = capfd.readouterr().err
    assert f"Executing op Exp in device {CPU_NAME}" in err
    assert f"Executing op Abs in device {FAKE_NAME}" in err
    np.testing.assert_allclose(z.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)


def test_soft_placement_in_a_graph():
    _C._fake_device_deny("Exp")

    @tf.function
    def f(a):
        with tf.device(FAKE):
            return tf.abs(tf.exp(a) * 2.0)

    x = tf.constant([0.5, -1.0])
    y = f(x)
    assert y.device == FAKE_NAME
    np.testing.assert_allclose(
        y.numpy(), np.abs(np.exp(x.numpy()) * 2.0), rtol=1e-6)


def test_unknown_device_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown device"):
        with tf.device("/device:NOPE:0"):
            pass


# ---- control flow, variables, gradients on the device ----

def test_cond_while_assert_on_fake_device():
    @tf.function
    def f(x, n):
        with tf.device(FAKE):
            tf.debugging.Assert(tf.reduce_all(x > -10.0), [x])
            y = tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * 2.0,
                        lambda: x - 1.0)
            i, acc = tf.while_loop(lambda i, a: i < n,
                                   lambda i, a: (i + 1, a + y),
                                   (tf.constant(0), tf.zeros_like(y)))
            return acc

    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(f(x, tf.constant(3)).numpy(), [6.0, 12.0])
    np.testing.assert_array_equal(f(-x, tf.constant(2)).numpy(),
                                  [-4.0, -6.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        f(tf.constant([-20.0, 1.0]), tf.constant(1))


def test_variable_assign_on_fake_device():
    with tf.device(FAKE):
        v = tf.Variable([1.0, 2.0, 3.0])
    assert v.device == FAKE_NAME
    stats()
    v.assign([4.0, 5.0, 6.0])
    assert stats()["from_host"] == 1
    v.assign_add(tf.constant([1.0, 1.0, 1.0]))
    with tf.device(FAKE):
        v.assign_sub(tf.ones([3]))
    np.testing.assert_array_equal(v.numpy(), [4.0, 5.0, 6.0])
    assert v.device == FAKE_NAME

    @tf.function
    def step(d):
        v.assign_add(d)
        return v.read_value() * 2.0

    np.testing.assert_array_equal(step(tf.constant([1.0, 1.0, 1.0])).numpy(),
                                  [10.0, 12.0, 14.0])
    assert v.device == FAKE_NAME


def test_gradients_on_fake_device():
    x = tf.constant([0.5, 1.5, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.device(FAKE):
            y = tf.reduce_sum(tf.square(x) * tf.exp(x))
    g = tape.gradient(y, x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y2 = tf.reduce_sum(tf.square(x) * tf.exp(x))
    same_bits(g.numpy(), tape.gradient(y2, x).numpy())
    same_bits(y.numpy(), y2.numpy())


def test_gradients_through_a_traced_function_on_fake_device():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            return tf.reduce_sum(tf.sin(a) * a)

    x = tf.constant([0.5, 1.5, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x)
    xn = x.numpy()
    np.testing.assert_allclose(g.numpy(), np.cos(xn) * xn + np.sin(xn),
                               rtol=1e-6)


def test_function_traced_on_fake_device_saves_as_traced(tmp_path):
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def apply(self, x):
            with tf.device(FAKE):
                return tf.exp(x) * 2.0

    m = M()
    x = tf.constant([0.5, 1.0])
    y = m.apply(x)
    assert y.device == FAKE_NAME
    # The file holds the graph as traced: no _Copy, no device.
    tf.saved_model.save(m, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    same_bits(loaded.apply(x).numpy(), y.numpy())


def test_graph_placement_is_logged(capfd):
    @tf.function
    def f(a):
        with tf.device(FAKE):
            b = tf.matmul(a, a)
        with tf.device("/CPU:0"):
            return tf.reduce_sum(b)

    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    f(x)
    tf.debugging.set_log_device_placement(True)
    r = f(x)
    tf.debugging.set_log_device_placement(False)
    err = capfd.readouterr().err
    assert f"Executing op BatchMatMulV2 in device {FAKE_NAME}" in err or \
        f"Executing op MatMul in device {FAKE_NAME}" in err, err
    assert f"in device {CPU_NAME}" in err
    assert r.device == CPU_NAME and r.numpy() == 54.0
