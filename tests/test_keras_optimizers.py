"""keras.optimizers against update steps computed by hand in NumPy,
eagerly and inside tf.function."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import keras

opt_mod = keras.optimizers


def grads_seq(steps=4, shape=(3,), seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal(shape).astype(np.float32) for _ in range(steps)]


W0 = np.array([0.5, -1.0, 2.0], np.float32)


def run(opt, grads, traced=False):
    var = tf.Variable(W0)
    if traced:
        @tf.function
        def step(g):
            opt.apply_gradients([(g, var)])
        for g in grads:
            step(tf.constant(g))
        assert step.experimental_get_tracing_count() == 1
    else:
        for g in grads:
            opt.apply_gradients([(tf.constant(g), var)])
    return var.numpy()


def ref_sgd(grads, lr, momentum=0.0, nesterov=False):
    w, m = W0.astype(np.float64), 0.0
    for g in grads:
        if momentum:
            m = momentum * m - lr * g
            w = w + (momentum * m - lr * g if nesterov else m)
        else:
            w = w - lr * g
    return w


def ref_adam(grads, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7, wd=0.0):
    w, m, v = W0.astype(np.float64), 0.0, 0.0
    for t, g in enumerate(grads, 1):
        w = w - lr * wd * w
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - alpha * m / (np.sqrt(v) + eps)
    return w


def ref_rmsprop(grads, lr=1e-3, rho=0.9, momentum=0.0, eps=1e-7,
                centered=False):
    w, s, mg, mom = W0.astype(np.float64), 0.0, 0.0, 0.0
    for g in grads:
        s = rho * s + (1 - rho) * g * g
        denom = s + eps
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = s - mg * mg + eps
        inc = lr * g / np.sqrt(denom)
        if momentum:
            mom = momentum * mom + inc
            w = w - mom
        else:
            w = w - inc
    return w


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("make,ref", [
    (lambda: opt_mod.SGD(0.1), lambda g: ref_sgd(g, 0.1)),
    (lambda: opt_mod.SGD(0.1, momentum=0.9),
     lambda g: ref_sgd(g, 0.1, 0.9)),
    (lambda: opt_mod.SGD(0.05, momentum=0.8, nesterov=True),
     lambda g: ref_sgd(g, 0.05, 0.8, True)),
    (lambda: opt_mod.Adam(), lambda g: ref_adam(g)),
    (lambda: opt_mod.Adam(0.01, beta_1=0.5, beta_2=0.9, epsilon=1e-3),
     lambda g: ref_adam(g, 0.01, 0.5, 0.9, 1e-3)),
    (lambda: opt_mod.AdamW(0.01, weight_decay=0.1),
     lambda g: ref_adam(g, 0.01, wd=0.1)),
    (lambda: opt_mod.RMSprop(0.01), lambda g: ref_rmsprop(g, 0.01)),
    (lambda: opt_mod.RMSprop(0.01, momentum=0.5, centered=True),
     lambda g: ref_rmsprop(g, 0.01, momentum=0.5, centered=True)),
], ids=["sgd", "momentum", "nesterov", "adam", "adam-params", "adamw",
        "rmsprop", "rmsprop-centered-momentum"])
def test_update_steps(make, ref, traced):
    grads = grads_seq()
    opt = make()
    np.testing.assert_allclose(run(opt, grads, traced), ref(grads),
                               rtol=1e-5, atol=1e-6)
    assert int(opt.iterations) == len(grads)


def test_slots_created_on_first_use_and_listed():
    opt = opt_mod.Adam()
    a, b = tf.Variable(np.ones(3, np.float32)), tf.Variable(2.0)
    assert len(opt.variables) == 2            # iterations, learning rate
    opt.apply_gradients([(tf.ones(3), a)])
    assert len(opt.variables) == 4
    opt.apply_gradients([(tf.ones(3), a), (tf.constant(1.0), b)])
    assert len(opt.variables) == 6
    assert opt.get_slot(a, "m").shape == (3,)
    assert all(not v.trainable for v in opt.variables)


def test_none_gradients():
    opt = opt_mod.SGD(1.0)
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    opt.apply_gradients([(None, a), (tf.constant(1.0), b)])
    assert float(a) == 1.0 and float(b) == 1.0
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.apply_gradients([(None, a)])


def test_learning_rate_variable_and_setter():
    opt = opt_mod.SGD(0.5)
    var = tf.Variable(1.0)

    @tf.function
    def step():
        opt.apply_gradients([(tf.constant(1.0), var)])

    step()
    opt.learning_rate = 0.25          # seen by the traced step: a variable
    step()
    assert float(var) == pytest.approx(1.0 - 0.5 - 0.25)
    assert step.experimental_get_tracing_count() == 1
    assert float(opt.learning_rate) == 0.25
    assert float(opt_mod.Adam(lr=0.3).learning_rate) == pytest.approx(0.3)


def test_exponential_decay_schedule():
    sched = opt_mod.schedules.ExponentialDecay(0.1, decay_steps=2,
                                               decay_rate=0.5)
    assert float(sched(0)) == pytest.approx(0.1)
    assert float(sched(1)) == pytest.approx(0.1 * 0.5 ** 0.5)
    stair = opt_mod.schedules.ExponentialDecay(0.1, 2, 0.5, staircase=True)
    assert float(stair(3)) == pytest.approx(0.05)
    opt = opt_mod.SGD(sched)
    var = tf.Variable(0.0)
    for _ in range(3):
        opt.apply_gradients([(tf.constant(1.0), var)])
    expected = -sum(0.1 * 0.5 ** (t / 2) for t in range(3))
    assert float(var) == pytest.approx(expected, rel=1e-5)
    assert float(opt.learning_rate) == pytest.approx(0.1 * 0.5 ** 1.5)
    with pytest.raises(TypeError, match="LearningRateSchedule"):
        opt.learning_rate = 0.1


def test_piecewise_and_cosine_schedules():
    pw = opt_mod.schedules.PiecewiseConstantDecay([2, 5], [1.0, 0.5, 0.1])
    assert [float(pw(s)) for s in (0, 2, 3, 5, 6)] == pytest.approx(
        [1.0, 1.0, 0.5, 0.5, 0.1])
    cos = opt_mod.schedules.CosineDecay(1.0, 10, alpha=0.1)
    assert float(cos(0)) == pytest.approx(1.0)
    assert float(cos(5)) == pytest.approx(0.1 + 0.9 * 0.5, rel=1e-5)
    assert float(cos(20)) == pytest.approx(0.1, rel=1e-5)


def test_gradient_clipping():
    g = np.array([3.0, 4.0, 0.0], np.float32)        # norm 5
    for kwargs, expected in [({"clipnorm": 1.0}, g / 5),
                             ({"clipvalue": 2.0}, np.clip(g, -2, 2)),
                             ({"global_clipnorm": 2.5}, g / 2)]:
        opt = opt_mod.SGD(1.0, **kwargs)
        var = tf.Variable(np.zeros(3, np.float32))
        opt.apply_gradients([(tf.constant(g), var)])
        np.testing.assert_allclose(var.numpy(), -expected, rtol=1e-6)
    with pytest.raises(ValueError, match="Only one of"):
        opt_mod.SGD(clipnorm=1.0, clipvalue=1.0)


def test_constraints_applied_after_update():
    var = tf.Variable(np.array([1.0, -1.0], np.float32),
                      constraint=keras.constraints.NonNeg())
    opt_mod.SGD(1.0).apply_gradients([(tf.constant([0.5, 0.5]), var)])
    np.testing.assert_allclose(var.numpy(), [0.5, 0.0])


def test_minimize_and_get():
    var = tf.Variable(3.0)
    opt = opt_mod.get("sgd")
    opt.learning_rate = 0.1
    opt.minimize(lambda: var * var, [var])
    assert float(var) == pytest.approx(3.0 - 0.1 * 6.0)
    assert isinstance(opt_mod.get("adam"), opt_mod.Adam)
    with pytest.raises(ValueError, match="optimizer identifier"):
        opt_mod.get("nope")


def test_new_optimizer_in_a_traced_step_is_tfs_singleton_error():
    # TF's function guide: the second optimizer's slots would be new
    # variables on a later trace, which TF refuses.
    opt1 = tf.keras.optimizers.Adam(learning_rate=1e-2)
    opt2 = tf.keras.optimizers.Adam(learning_rate=1e-3)

    @tf.function
    def train_step(w, x, y, optimizer):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(w * x - y))
        optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

    w = tf.Variable(2.)
    x, y = tf.constant([-1.]), tf.constant([2.])
    train_step(w, x, y, opt1)
    with pytest.raises(ValueError, match="singleton tf.Variables"):
        train_step(w, x, y, opt2)
    # Slots made before the call are fine.
    opt3 = tf.keras.optimizers.Adam(learning_rate=1e-3)
    opt3.build([w])
    train_step(w, x, y, opt3)
    assert len(opt3.variables) == 4
