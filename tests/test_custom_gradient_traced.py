"""@tf.custom_gradient inside a tf.function (advanced_autodiff guide,
cells 4-6). TF 2.21 gives the custom gradient whether the tape is inside
the function or around its call (function.py's Note [Custom gradients
under a tape around the call])."""
import numpy as np

import tfmini as tf


@tf.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return tf.clip_by_norm(dy, 0.5)
    return y, backward


def test_custom_gradient_eager_and_with_the_tape_inside():
    v = tf.Variable(2.0)
    with tf.GradientTape() as t:
        out = clip_gradients(v * v)
    assert float(t.gradient(out, v)) == 2.0       # TF 2.21: 2.0

    @tf.function
    def inside(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = clip_gradients(x * x)
        return t.gradient(y, x)
    assert float(inside(tf.constant(2.0))) == 2.0


def test_custom_gradient_with_the_tape_around_the_call():
    f = tf.function(lambda x: clip_gradients(x))
    v = tf.Variable(2.0)
    with tf.GradientTape() as t:
        out = f(v * v)
    assert float(t.gradient(out, v)) == 2.0        # TF 2.21: 2.0 (not 4.0)
    assert float(f(tf.constant(3.0))) == 3.0       # no tape: the plain run
    concrete = f.get_concrete_function(tf.TensorSpec([]))
    with tf.GradientTape() as t:
        out = concrete(v * v)
    assert float(t.gradient(out, v)) == 2.0        # and a ConcreteFunction


def test_only_calls_under_a_tape_leave_the_c_call_path():
    f = tf.function(lambda x: clip_gradients(x) * 2.0)
    x = tf.constant(3.0)
    f(x)
    f._take_calls()
    for _ in range(5):
        f(x)
    assert f._take_calls() == 5                    # all C cache hits
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    assert f._take_calls() == 0                    # went through Python
    assert float(t.gradient(y, x)) == 0.5          # clip_by_norm(2, 0.5)


v3 = tf.Variable(3.0)


@tf.custom_gradient
def cube(x):
    def grad(dy, variables=None):
        return dy * 3.0 * x * x * v3, [tf.reduce_sum(dy) * 10.0]
    return x * x * x * v3, grad


def body(x, n):
    # A Python float too: the trace makes it a tensor output.
    return {"y": cube(x) * 2.0, "n": n + 1, "none": None, "x": x,
            "c": 2.0}


def _grads(fn, x):
    with tf.GradientTape(persistent=True) as t2:
        t2.watch(x)
        with tf.GradientTape() as t:
            t.watch(x)
            out = fn(x, tf.constant(4))
            loss = tf.reduce_sum(out["y"]) + tf.reduce_sum(out["x"]) + \
                out["c"]
        gx, gv = t.gradient(loss, [x, v3])
    return out, gx, gv, t2.gradient(gx, x)


def test_traced_custom_gradient_equals_the_eager_one():
    """Arguments, variables (grad_fn's `variables`), an int argument,
    structured outputs, and a second derivative through the custom
    gradient: the traced call under outer tapes gives the eager numbers,
    on the first call and on the cached one, with one trace."""
    x = tf.constant([1.0, 2.0])
    want = _grads(body, x)
    f = tf.function(body)
    for _ in range(2):
        got = _grads(f, x)
        assert int(got[0]["n"]) == 5 and got[0]["none"] is None
        for a, b in zip(want[1:], got[1:]):
            np.testing.assert_allclose(b.numpy(), a.numpy())
    np.testing.assert_allclose(want[1].numpy(), [19., 73.])
    assert f.experimental_get_tracing_count() == 1


def test_object_and_python_arguments_reach_the_gradient_trace():
    class Scale(tf.Module):
        def __init__(self):
            self.w = tf.Variable(2.0)

    @tf.function
    def f(model, x, double):
        y = cube(x) * model.w
        return y * 2.0 if double else y

    m, x = Scale(), tf.constant(1.0)
    for double, want in ((True, 36.0), (False, 18.0)):
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(m, x, double)
        gx, gw = t.gradient(y, [x, m.w])
        # d/dx: 3 x^2 v3 * w (* 2); d/dw: x^3 v3 (* 2)
        assert float(gx) == want and float(gw) == want / 6.0


def test_module_method_with_a_signature():
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([])])
        def call(self, x):
            return cube(x)
    m, x = M(), tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = m.call(x[0])
    gx, gv = t.gradient(y, [x, v3])
    assert gx.numpy().tolist() == [9.0, 0.0] and float(gv) == 10.0


def test_saving_keeps_the_custom_gradient(tmp_path, caplog):
    # TF 2.21 saves custom gradients by default
    # (SaveOptions(experimental_custom_gradients=True)).
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([])])
        def call(self, x):
            return clip_gradients(x)

        @tf.function(input_signature=[tf.TensorSpec([])])
        def plain(self, x):
            return x * 2.0
    with caplog.at_level("WARNING", logger="tfmini"):
        tf.saved_model.save(M(), str(tmp_path))
    assert "custom_gradient" not in caplog.text
    loaded = tf.saved_model.load(str(tmp_path))
    x = tf.constant(3.0)
    assert float(loaded.call(x)) == 3.0
    with tf.GradientTape() as t:
        t.watch(x)
        y = 4.0 * loaded.call(x)
    assert float(t.gradient(y, x)) == 0.5     # clipped to norm 0.5, not 4.0
