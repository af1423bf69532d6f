"""Adagrad, Nadam, RMSprop, AdamW against NumPy versions of Keras 3's
update rules over several steps (eager and traced); schedules' values;
clipnorm / clipvalue / global_clipnorm; slot names; configs."""
import math

import numpy as np
import pytest

import tfmini as tf

keras = tf.keras
G = [np.array([[0.5, -1.0], [2.0, 0.1]], np.float32),
     np.array([[-0.3, 0.7], [1.5, -2.0]], np.float32),
     np.array([[1.0, 1.0], [-0.5, 0.25]], np.float32)]
W0 = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)


def run(opt, traced, steps=3):
    v = tf.Variable(W0, name="w")
    apply = opt.apply_gradients
    if traced:
        @tf.function
        def apply_fn(g):
            opt.apply_gradients([(g, v)])
        apply = None
    for g in G[:steps]:
        if traced:
            apply_fn(tf.constant(g))
        else:
            apply([(tf.constant(g), v)])
    return v.numpy(), opt


def ref_adagrad(lr=0.01, init=0.1, eps=1e-7):
    w, acc = W0.astype(np.float64), np.full(W0.shape, init)
    for g in G:
        acc = acc + g * g
        w = w - lr * g / np.sqrt(acc + eps)
    return w


def ref_nadam(lr=0.01, b1=0.9, b2=0.999, eps=1e-7):
    w = W0.astype(np.float64)
    m, v, u_prod = np.zeros_like(w), np.zeros_like(w), 1.0
    for i, g in enumerate(G):
        t = i + 1
        u_t = b1 * (1 - 0.5 * 0.96 ** t)
        u_t1 = b1 * (1 - 0.5 * 0.96 ** (t + 1))
        u_prod = u_prod * u_t
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        m_hat = u_t1 * m / (1 - u_prod * u_t1) + (1 - u_t) * g / (1 - u_prod)
        v_hat = v / (1 - b2 ** t)
        w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
    return w


def ref_rmsprop(lr=0.01, rho=0.9, momentum=0.0, eps=1e-7, centered=False):
    w = W0.astype(np.float64)
    s, mg, mom = (np.zeros_like(w) for _ in range(3))
    for g in G:
        s = rho * s + (1 - rho) * g * g
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = s - mg * mg + eps
        else:
            denom = s + eps
        inc = lr * g / np.sqrt(denom)
        if momentum:
            mom = momentum * mom + inc
            w = w - mom
        else:
            w = w - inc
    return w


def ref_adamw(lr=0.01, wd=0.1, b1=0.9, b2=0.999, eps=1e-7):
    w = W0.astype(np.float64)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for i, g in enumerate(G):
        t = i + 1
        w = w - w * wd * lr
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        alpha = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - alpha * m / (np.sqrt(v) + eps)
    return w


def ref_adamax(lr=0.01, b1=0.9, b2=0.999, eps=1e-7):
    w = W0.astype(np.float64)
    m, u = np.zeros_like(w), np.zeros_like(w)
    for i, g in enumerate(G):
        m = m + (g - m) * (1 - b1)
        u = np.maximum(b2 * u, np.abs(g))
        w = w - lr * m / ((1 - b1 ** (i + 1)) * (u + eps))
    return w


def ref_adadelta(lr=1.0, rho=0.95, eps=1e-7):
    w = W0.astype(np.float64)
    a, d = np.zeros_like(w), np.zeros_like(w)
    for g in G:
        a = rho * a + (1 - rho) * g * g
        delta = -np.sqrt(d + eps) * g / np.sqrt(a + eps)
        d = rho * d + (1 - rho) * delta * delta
        w = w + lr * delta
    return w


def ref_lion(lr=0.01, b1=0.9, b2=0.99):
    w = W0.astype(np.float64)
    m = np.zeros_like(w)
    for g in G:
        w = w - lr * np.sign(m * b1 + g * (1 - b1))
        m = m * b2 + g * (1 - b2)
    return w


CASES = [
    ("adagrad", lambda: keras.optimizers.Adagrad(0.01), ref_adagrad()),
    ("adagrad_init", lambda: keras.optimizers.Adagrad(
        0.05, initial_accumulator_value=0.5),
     ref_adagrad(0.05, 0.5)),
    ("nadam", lambda: keras.optimizers.Nadam(0.01), ref_nadam()),
    ("rmsprop", lambda: keras.optimizers.RMSprop(0.01), ref_rmsprop()),
    ("rmsprop_mom_centered", lambda: keras.optimizers.RMSprop(
        0.01, rho=0.8, momentum=0.5, centered=True),
     ref_rmsprop(rho=0.8, momentum=0.5, centered=True)),
    ("adamw", lambda: keras.optimizers.AdamW(0.01, weight_decay=0.1),
     ref_adamw()),
    ("adamax", lambda: keras.optimizers.Adamax(0.01), ref_adamax()),
    ("adadelta", lambda: keras.optimizers.Adadelta(1.0), ref_adadelta()),
    ("lion", lambda: keras.optimizers.Lion(0.01), ref_lion()),
]


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("name,make,want", CASES, ids=[c[0] for c in CASES])
def test_update_rule_matches_numpy(name, make, want, traced):
    got, opt = run(make(), traced)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    assert int(opt.iterations.numpy()) == 3


def test_slot_names_follow_keras3():
    def names(opt):
        _, opt = run(opt, False, steps=1)
        return [v.path for v in opt.variables]
    assert names(keras.optimizers.Adagrad(name="ag")) == [
        "ag/iteration", "ag/learning_rate", "ag/w_accumulator"]
    assert names(keras.optimizers.Nadam(name="na")) == [
        "na/iteration", "na/learning_rate", "na/w_momentum",
        "na/w_velocity", "na/u_product"]
    assert names(keras.optimizers.RMSprop(name="rp", momentum=0.9,
                                          centered=True)) == [
        "rp/iteration", "rp/learning_rate", "rp/w_velocity",
        "rp/w_momentum", "rp/w_average_gradient"]
    assert names(keras.optimizers.Adamax(name="ax"))[2:] == [
        "ax/w_momentum", "ax/w_norm"]
    assert names(keras.optimizers.Adadelta(name="ad"))[2:] == [
        "ad/w_accumulated_grad", "ad/w_accumulated_delta_var"]


def test_default_names_follow_keras3():
    keras.backend.clear_session()
    assert keras.optimizers.RMSprop().name == "rmsprop"
    assert keras.optimizers.AdamW().name == "adamw"
    assert keras.optimizers.Adagrad().name == "adagrad"
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(keras.optimizers.RMSprop(), "mse")
    model.fit(np.ones((4, 3), np.float32), np.ones((4, 2), np.float32),
              verbose=0)
    assert [v.path for v in model.optimizer.variables][2:] == [
        "rmsprop_1/sequential_dense_kernel_velocity",
        "rmsprop_1/sequential_dense_bias_velocity"]


@pytest.mark.parametrize("cls", ["Nadam", "Adagrad", "Adamax", "Lion"])
def test_checkpoint_restores_all_state(cls, tmp_path):
    def make():
        return (tf.Variable(np.array([1.0, 2.0], np.float32)),
                getattr(keras.optimizers, cls)(0.1))
    v, opt = make()
    for g in ([1.0, -1.0], [0.5, 2.0]):
        opt.apply_gradients([(tf.constant(np.array(g, np.float32)), v)])
    path = tf.train.Checkpoint(v=v, opt=opt).save(str(tmp_path / "ck"))
    v2, opt2 = make()
    tf.train.Checkpoint(v=v2, opt=opt2).restore(path)
    g = tf.constant(np.array([0.3, 0.3], np.float32))
    opt.apply_gradients([(g, v)])
    opt2.apply_gradients([(g, v2)])
    np.testing.assert_allclose(v2.numpy(), v.numpy(), rtol=1e-6)
    for a, b in zip(opt.variables, opt2.variables):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6)


def test_adagrad_accumulator_starts_at_initial_value():
    opt = keras.optimizers.Adagrad(initial_accumulator_value=0.3)
    v = tf.Variable(W0)
    opt.build([v])
    np.testing.assert_allclose(opt.get_slot(v, "accumulator").numpy(),
                               np.full(W0.shape, 0.3), rtol=1e-6)


@pytest.mark.parametrize("cls", ["Adagrad", "Nadam", "RMSprop", "AdamW",
                                 "Adamax", "Adadelta", "Lion"])
def test_get_config_round_trip_and_by_name(cls):
    opt = getattr(keras.optimizers, cls)(learning_rate=0.02, clipnorm=1.0)
    cfg = opt.get_config()
    again = type(opt).from_config(cfg)
    assert again.get_config() == cfg
    assert isinstance(keras.optimizers.get(cls.lower()), type(opt))


# ---- clipping --------------------------------------------------------------

def one_step(**kw):
    v1, v2 = tf.Variable(np.zeros(2, np.float32)), tf.Variable(
        np.zeros(3, np.float32))
    g1 = np.array([3.0, 4.0], np.float32)          # norm 5
    g2 = np.array([0.5, -12.0, 0.0], np.float32)
    opt = keras.optimizers.SGD(1.0, **kw)
    opt.apply_gradients([(tf.constant(g1), v1), (tf.constant(g2), v2)])
    return -v1.numpy(), -v2.numpy(), g1, g2


def test_clipvalue():
    a, b, g1, g2 = one_step(clipvalue=2.0)
    np.testing.assert_allclose(a, np.clip(g1, -2, 2))
    np.testing.assert_allclose(b, np.clip(g2, -2, 2))


def test_clipnorm_is_per_gradient():
    a, b, g1, g2 = one_step(clipnorm=1.0)
    np.testing.assert_allclose(a, g1 / 5.0, rtol=1e-6)
    np.testing.assert_allclose(b, g2 / np.linalg.norm(g2), rtol=1e-6)
    a, _, _, _ = one_step(clipnorm=10.0)       # under the norm: unchanged
    np.testing.assert_allclose(a, g1, rtol=1e-6)


def test_global_clipnorm_scales_all_together():
    a, b, g1, g2 = one_step(global_clipnorm=2.0)
    total = math.sqrt((g1 ** 2).sum() + (g2 ** 2).sum())
    np.testing.assert_allclose(a, g1 * 2.0 / total, rtol=1e-6)
    np.testing.assert_allclose(b, g2 * 2.0 / total, rtol=1e-6)


def test_only_one_clip_argument():
    with pytest.raises(ValueError, match="Only one of"):
        keras.optimizers.Adagrad(clipnorm=1.0, clipvalue=1.0)


def test_unsupported_arguments_are_refused_not_ignored():
    with pytest.raises(NotImplementedError, match="gradient_accumulation"):
        keras.optimizers.Nadam(gradient_accumulation_steps=4)
    with pytest.raises(NotImplementedError, match="loss_scale_factor"):
        keras.optimizers.Lion(loss_scale_factor=128.0)


# ---- schedules -------------------------------------------------------------

S = keras.optimizers.schedules
STEPS = [0, 1, 5, 10, 17, 30, 100]


def np_cosine(step, init, d, alpha=0.0, target=None, warm=0):
    if target is None:
        s = min(step, d)
        return init * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / d))
                       + alpha)
    s = min(step, d + warm)
    if s < warm:
        return init + (target - init) * s / warm
    s -= warm
    return target * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / d))
                     + alpha)


def np_restarts(step, init, first, t_mul, m_mul, alpha):
    # Walk the periods one by one (independent of the closed form).
    start, length, height = 0.0, float(first), 1.0
    while step >= start + length:
        start += length
        length *= t_mul
        height *= m_mul
    frac = (step - start) / length
    return init * ((1 - alpha) * 0.5 * height * (1 + math.cos(math.pi * frac))
                   + alpha)


def np_poly(step, init, d, end, power, cycle):
    if cycle:
        d = d * (1.0 if step == 0 else math.ceil(step / d))
    else:
        step = min(step, d)
    return (init - end) * (1 - step / d) ** power + end


SCHEDULES = [
    ("exp", S.ExponentialDecay(0.1, 10, 0.5),
     lambda s: 0.1 * 0.5 ** (s / 10)),
    ("exp_stair", S.ExponentialDecay(0.1, 10, 0.5, staircase=True),
     lambda s: 0.1 * 0.5 ** (s // 10)),
    ("inverse_time", S.InverseTimeDecay(0.1, 5, 0.5),
     lambda s: 0.1 / (1 + 0.5 * s / 5)),
    ("piecewise", S.PiecewiseConstantDecay([5, 17], [1.0, 0.5, 0.1]),
     lambda s: 1.0 if s <= 5 else (0.5 if s <= 17 else 0.1)),
    ("cosine", S.CosineDecay(0.2, 30, alpha=0.1),
     lambda s: np_cosine(s, 0.2, 30, 0.1)),
    ("cosine_warmup", S.CosineDecay(0.0, 20, warmup_target=0.3,
                                    warmup_steps=10),
     lambda s: np_cosine(s, 0.0, 20, 0.0, 0.3, 10)),
    ("cosine_no_target_ignores_warmup", S.CosineDecay(0.2, 30,
                                                      warmup_steps=10),
     lambda s: np_cosine(s, 0.2, 30)),
    ("restarts", S.CosineDecayRestarts(0.5, 4, t_mul=2.0, m_mul=0.5,
                                       alpha=0.1),
     lambda s: np_restarts(s, 0.5, 4, 2.0, 0.5, 0.1)),
    ("restarts_tmul1", S.CosineDecayRestarts(0.5, 6, t_mul=1.0),
     lambda s: np_restarts(s, 0.5, 6, 1.0, 1.0, 0.0)),
    ("poly", S.PolynomialDecay(0.1, 20, 0.01, power=2.0),
     lambda s: np_poly(s, 0.1, 20, 0.01, 2.0, False)),
    ("poly_cycle", S.PolynomialDecay(0.1, 20, 0.01, cycle=True),
     lambda s: np_poly(s, 0.1, 20, 0.01, 1.0, True)),
]


@pytest.mark.parametrize("name,sched,ref", SCHEDULES,
                         ids=[s[0] for s in SCHEDULES])
def test_schedule_values_and_serialization(name, sched, ref):
    got = [float(sched(tf.constant(s, tf.int64))) for s in STEPS]
    np.testing.assert_allclose(got, [ref(s) for s in STEPS], rtol=1e-5,
                               atol=1e-7)
    again = S.deserialize(S.serialize(sched))
    assert type(again) is type(sched)
    assert again.get_config() == sched.get_config()


def test_schedule_drives_optimizer_in_traced_steps():
    sched = S.PiecewiseConstantDecay([1], [1.0, 0.1])
    opt = keras.optimizers.SGD(sched)
    v = tf.Variable(0.0)

    @tf.function
    def step():
        opt.apply_gradients([(tf.constant(1.0), v)])
    for _ in range(3):
        step()
    # Steps 0 and 1 at 1.0, step 2 at 0.1 (iterations before each update).
    np.testing.assert_allclose(v.numpy(), -(1.0 + 1.0 + 0.1), rtol=1e-6)
    cfg = opt.get_config()
    assert cfg["learning_rate"]["class_name"] == "PiecewiseConstantDecay"
    again = keras.optimizers.SGD.from_config(cfg)
    assert isinstance(again._schedule, S.PiecewiseConstantDecay)


def test_bad_decay_steps():
    with pytest.raises(ValueError, match="decay_steps"):
        S.PolynomialDecay(0.1, 0)
    with pytest.raises(ValueError, match="Unknown learning rate schedule"):
        S.deserialize({"class_name": "Nope", "config": {}})
