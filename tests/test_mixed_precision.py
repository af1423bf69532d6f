"""Mixed precision: dtype policies, autocast in layers, dynamic loss
scaling (LossScaleOptimizer) in fit and in custom loops."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import keras
from tfmini.keras import mixed_precision as mp

L = keras.layers


@pytest.fixture(autouse=True)
def _reset_policy():
    yield
    mp.set_global_policy(None)


# ---- policies -------------------------------------------------------
def test_policy_names_and_dtypes():
    p = mp.Policy("mixed_float16")
    assert (p.name, p.compute_dtype, p.variable_dtype) == \
        ("mixed_float16", "float16", "float32")
    assert repr(p) == '<DTypePolicy "mixed_float16">'
    f = mp.DTypePolicy("float64")
    assert (f.compute_dtype, f.variable_dtype) == ("float64", "float64")
    assert mp.Policy("float32") == mp.DTypePolicy("float32")
    assert mp.Policy.from_config(p.get_config()) == p
    with pytest.raises(ValueError, match="Cannot convert 'mixed_int8'"):
        mp.Policy("mixed_int8")
    with pytest.raises(TypeError, match="must be a string"):
        mp.Policy(3)


def test_mixed_bfloat16_policy_computes_in_bfloat16():
    p = mp.Policy("mixed_bfloat16")
    assert (p.name, p.compute_dtype, p.variable_dtype) == \
        ("mixed_bfloat16", "bfloat16", "float32")
    mp.set_global_policy("mixed_bfloat16")
    d = L.Dense(3)
    x = np.random.RandomState(0).rand(4, 5).astype("float32")
    y = d(x)
    assert y.dtype == tf.bfloat16
    assert d.kernel.dtype == tf.float32 and d.bias.dtype == tf.float32
    ref = x @ d.kernel.numpy() + d.bias.numpy()
    np.testing.assert_allclose(y.numpy().astype("float32"), ref,
                               rtol=2e-2, atol=2e-2)


def test_global_policy_applies_to_new_layers_only():
    before = L.Dense(2)
    assert mp.global_policy() == mp.Policy("float32")
    mp.set_global_policy("mixed_float16")
    assert mp.global_policy().name == "mixed_float16"
    after = L.Dense(2)
    assert before.compute_dtype == "float32"
    assert after.dtype_policy.name == "mixed_float16"
    assert (after.compute_dtype, after.variable_dtype, after.dtype) == \
        ("float16", "float32", "float32")
    explicit = L.Dense(2, dtype="float32")
    assert explicit.compute_dtype == "float32"
    with pytest.raises(ValueError, match="Invalid `policy`"):
        mp.set_global_policy(16)


def test_per_layer_policy_variables_and_outputs():
    d = L.Dense(3, dtype=mp.Policy("mixed_float16"))
    x = np.random.RandomState(0).rand(4, 5).astype("float32")
    y = d(x)
    assert y.dtype == tf.float16
    assert d.kernel.dtype == tf.float32 and d.bias.dtype == tf.float32
    # The attribute is the variable again after the call.
    assert isinstance(d.kernel, tf.Variable)
    ref = x @ d.kernel.numpy() + d.bias.numpy()
    np.testing.assert_allclose(y.numpy().astype("float32"), ref,
                               rtol=1e-2, atol=1e-2)
    # Integer inputs are not cast.
    ids = L.Lambda(lambda t: t, dtype="mixed_float16")(tf.constant([1, 2]))
    assert ids.dtype == tf.int32
    # A float32 softmax at the end, as the Keras guide recommends.
    act = L.Activation("softmax", dtype="float32")
    assert act(y).dtype == tf.float32
    assert L.Dense.from_config(d.get_config()).dtype_policy.name == \
        "mixed_float16"


def test_gradients_reach_the_float32_variables():
    d = L.Dense(2, dtype="mixed_float16")
    x = tf.ones((3, 4))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(d(x), tf.float32))
    gk, gb = tape.gradient(loss, [d.kernel, d.bias])
    assert gk.dtype == tf.float32
    np.testing.assert_allclose(gk.numpy(), np.full((4, 2), 3.0))
    np.testing.assert_allclose(gb.numpy(), [3.0, 3.0])


def test_conv_under_mixed_policy_in_a_traced_function():
    mp.set_global_policy("mixed_float16")
    conv = L.Conv2D(4, 3, padding="same")
    f = tf.function(lambda x: conv(x))
    out = f(tf.ones((1, 6, 6, 2)))
    assert out.dtype == tf.float16 and conv.kernel.dtype == tf.float32


@pytest.mark.parametrize("make, args", [
    (lambda: L.LSTM(3), ((2, 5, 4),)),
    (lambda: L.GRU(3, return_sequences=True), ((2, 5, 4),)),
    (lambda: L.Bidirectional(L.SimpleRNN(2)), ((2, 5, 4),)),
    (lambda: L.MultiHeadAttention(2, 4), ((2, 5, 4), (2, 3, 4))),
    (lambda: L.BatchNormalization(), ((8, 3),)),
    (lambda: L.LayerNormalization(), ((2, 3),)),
])
def test_layers_with_sub_weights_compute_in_float16(make, args):
    mp.set_global_policy("mixed_float16")
    layer = make()
    inputs = [tf.random.normal(shape) for shape in args]
    with tf.GradientTape() as tape:
        out = layer(*inputs, training=True)
        loss = tf.reduce_sum(tf.cast(out, tf.float32))
    assert out.dtype == tf.float16
    assert layer.weights and all(w.dtype == tf.float32
                                 for w in layer.weights)
    grads = tape.gradient(loss, layer.trainable_weights)
    assert all(g is not None and g.dtype == tf.float32 for g in grads)
    # Every attribute is the variable again afterwards.
    for sub in layer._flatten_layers():
        for key, var in sub._keras_tracked.items():
            if isinstance(var, tf.Variable):
                assert getattr(sub, key) is var


def test_models_whose_layers_build_inside_the_first_call():
    mp.set_global_policy("mixed_float16")
    seq = keras.Sequential([L.Dense(4), L.Dense(2)])

    class Sub(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(3)

        def call(self, x):
            return self.d(x)

    for model in (seq, Sub()):
        for _ in range(2):
            assert model(tf.ones((1, 3))).dtype == tf.float16
        assert all(w.dtype == tf.float32 for w in model.weights)
        assert all(isinstance(w, tf.Variable)
                   for w in (model.layers[0].kernel, model.layers[0].bias))


def test_a_float32_sub_layer_inside_a_mixed_layer_reads_float32():
    class Block(L.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.inner = L.Dense(2)
            self.head = L.Dense(2, dtype="float32")

        def call(self, x):
            h = self.inner(x)
            if self.inner.built and self.head.built:
                # Direct reads of a sub-layer's weights follow this
                # layer (once built: the first call builds them inside).
                seen.append(self.inner.kernel.dtype)
            return self.head(h)

    seen = []
    block = Block(dtype="mixed_float16")
    block(tf.ones((1, 3)))
    out = block(tf.ones((1, 3)))
    assert seen[-1] == tf.float16
    assert out.dtype == tf.float32
    assert isinstance(block.head.kernel, tf.Variable)


def test_masked_softmax_in_float16_is_finite():
    s = L.Softmax(dtype="mixed_float16")
    out = s(tf.constant([[1.0, 2.0, 3.0]]),
            mask=tf.constant([[True, True, False]]))
    assert out.dtype == tf.float16
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(out.numpy().astype("float32"),
                               [[*(e / e.sum()), 0.0]], atol=1e-3)


# ---- loss scaling ---------------------------------------------------
def _scaled_step(opt, var, grad):
    opt.apply_gradients([(tf.constant(grad, tf.float32), var)])
    return (float(opt.dynamic_scale.numpy()),
            int(opt.step_counter.numpy()), var.numpy().copy())


def test_loss_scale_halves_on_nonfinite_and_skips_the_step():
    var = tf.Variable([1.0, 1.0])
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(1.0),
                                initial_scale=8.0, dynamic_growth_steps=2)
    assert float(opt.scale_loss(tf.constant(2.0))) == 16.0
    # Finite: applied after dividing by the scale (8 -> 1 per element).
    scale, count, value = _scaled_step(opt, var, [8.0, 16.0])
    assert (scale, count) == (8.0, 1)
    np.testing.assert_allclose(value, [0.0, -1.0])
    # Second finite step in a row: the scale doubles, the count resets.
    scale, count, value = _scaled_step(opt, var, [0.0, 0.0])
    assert (scale, count) == (16.0, 0)
    assert int(opt.iterations.numpy()) == 2
    # inf and NaN: skipped (value, iterations, slots unchanged), halved.
    for bad in ([np.inf, 1.0], [1.0, np.nan]):
        scale_before = float(opt.dynamic_scale.numpy())
        scale, count, after = _scaled_step(opt, var, bad)
        assert scale == scale_before / 2 and count == 0
        np.testing.assert_allclose(after, [0.0, -1.0])
    assert int(opt.iterations.numpy()) == 2
    assert float(opt.scale_loss(tf.constant(1.0))) == 4.0


def test_loss_scaling_inside_tf_function_keeps_the_skip_in_the_graph():
    var = tf.Variable([0.0])
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.5),
                                initial_scale=4.0, dynamic_growth_steps=3)

    @tf.function
    def step(g):
        opt.apply_gradients([(g, var)])
        return opt.dynamic_scale.read_value()

    seq = [[4.0], [np.inf], [4.0], [4.0], [4.0], [np.nan], [2.0]]
    scales = [float(step(tf.constant(g))) for g in seq]
    # One trace decides nothing: inf halves, three finite steps double.
    assert scales == [4.0, 2.0, 2.0, 2.0, 4.0, 2.0, 2.0]
    # Applied steps: 4/4, 4/2, 4/2, 4/2, 2/2, each times lr 0.5.
    np.testing.assert_allclose(var.numpy(), [-0.5 * (1 + 2 + 2 + 2 + 1)])
    assert int(opt.iterations.numpy()) == 5


def test_tf2_custom_loop_names_unscale_once():
    var = tf.Variable(2.0)
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1),
                                initial_scale=1024.0)
    with tf.GradientTape() as tape:
        loss = var * var
        scaled = opt.get_scaled_loss(loss)
    assert float(scaled) == 4096.0
    grads = opt.get_unscaled_gradients(tape.gradient(scaled, [var]))
    assert float(grads[0]) == pytest.approx(4.0)
    opt.apply_gradients(zip(grads, [var]))
    assert float(var.numpy()) == pytest.approx(2.0 - 0.1 * 4.0)
    # Keras 3's way: scale_loss, then apply_gradients unscales.
    with tf.GradientTape() as tape:
        scaled = opt.scale_loss(var * var)
    opt.apply_gradients(zip(tape.gradient(scaled, [var]), [var]))
    assert float(var.numpy()) == pytest.approx(1.6 - 0.1 * 3.2)


def test_wrapper_arguments_and_forwarding():
    inner = keras.optimizers.Adam(0.01)
    opt = mp.LossScaleOptimizer(inner)
    assert opt.initial_scale == 2.0 ** 15
    assert opt.dynamic_growth_steps == 2000
    assert opt.iterations is inner.iterations
    opt.learning_rate = 0.5
    assert float(inner.learning_rate.numpy()) == 0.5
    with pytest.raises(ValueError, match="dynamic=False"):
        mp.LossScaleOptimizer(inner, dynamic=False)
    with pytest.raises(ValueError, match="initial_scale"):
        mp.LossScaleOptimizer(inner, initial_scale=0)
    cfg = opt.get_config()
    again = mp.LossScaleOptimizer.from_config(cfg)
    assert type(again.inner_optimizer) is keras.optimizers.Adam
    assert keras.optimizers.LossScaleOptimizer is mp.LossScaleOptimizer


# ---- training -------------------------------------------------------
def _digits():
    from sklearn.datasets import load_digits
    x, y = load_digits(return_X_y=True)
    return (x / 16.0).astype("float32"), y.astype("int32")


def _train(policy):
    mp.set_global_policy(policy)
    # Same initial weights and batch order under both policies: the
    # accuracies then differ by precision alone.
    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input((64,)), L.Dense(64, activation="relu"), L.Dense(10),
        L.Activation("softmax", dtype="float32")])
    model.compile(keras.optimizers.Adam(0.01),
                  "sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = _digits()
    hist = model.fit(x[:1400], y[:1400], epochs=8, batch_size=64,
                     verbose=0)
    acc = model.evaluate(x[1400:], y[1400:], verbose=0)[1]
    return model, hist, acc


def test_mixed_float16_digits_mlp_matches_float32_accuracy():
    m32, _, acc32 = _train("float32")
    m16, hist, acc16 = _train("mixed_float16")
    assert type(m32.optimizer) is keras.optimizers.Adam
    # compile wraps a float16 model's optimizer, as Keras 3 does.
    assert isinstance(m16.optimizer, mp.LossScaleOptimizer)
    assert all(w.dtype == tf.float32 for w in m16.weights)
    assert m16.layers[0].compute_dtype == "float16"
    assert m16.predict(_digits()[0][:3], verbose=0).dtype == np.float32
    # The logged loss is the unscaled one.
    assert all(np.isfinite(hist.history["loss"]))
    assert hist.history["loss"][-1] < 1.0
    assert acc32 > 0.85
    assert abs(acc16 - acc32) <= 0.02, (acc16, acc32)


def test_mixed_bfloat16_digits_mlp_matches_float32_accuracy():
    _, _, acc32 = _train("float32")
    mbf, hist, accbf = _train("mixed_bfloat16")
    # bfloat16 has float32's exponent range: no loss scaling (Keras
    # wraps only float16 models).
    assert type(mbf.optimizer) is keras.optimizers.Adam
    assert all(w.dtype == tf.float32 for w in mbf.weights)
    assert mbf.layers[0].compute_dtype == "bfloat16"
    assert mbf.layers[0](_digits()[0][:2]).dtype == tf.bfloat16
    assert mbf.predict(_digits()[0][:3], verbose=0).dtype == np.float32
    assert all(np.isfinite(hist.history["loss"]))
    assert acc32 > 0.85
    assert abs(accbf - acc32) <= 0.02, (accbf, acc32)


def test_mixed_bfloat16_conv_and_batchnorm_in_a_traced_step():
    mp.set_global_policy("mixed_bfloat16")
    model = keras.Sequential([
        keras.Input((6, 6, 2)), L.Conv2D(4, 3, padding="same"),
        L.BatchNormalization(), L.Flatten(), L.Dense(2),
        L.Activation("softmax", dtype="float32")])
    model.compile(keras.optimizers.SGD(0.1),
                  "sparse_categorical_crossentropy")
    x = np.random.RandomState(0).rand(8, 6, 6, 2).astype("float32")
    y = np.arange(8) % 2
    hist = model.fit(x, y, epochs=3, batch_size=4, verbose=0)
    assert all(np.isfinite(hist.history["loss"]))
    assert all(w.dtype == tf.float32 for w in model.weights)
    assert model.layers[0](x[:1]).dtype == tf.bfloat16


def test_fit_skips_a_nonfinite_step_and_recovers():
    mp.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.Input((2,)), L.Dense(1)])
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1),
                                initial_scale=2.0 ** 15)
    model.compile(opt, "mse")
    # Targets of 1e3: the scaled float16 gradients overflow at 2**15,
    # so the first steps are skipped and the scale comes down.
    x = np.ones((8, 2), "float32")
    y = np.full((8, 1), 1e3, "float32")
    model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert float(opt.dynamic_scale.numpy()) < 2.0 ** 15
    assert int(opt.iterations.numpy()) < 3
    assert np.all(np.isfinite(model.layers[0].kernel.numpy()))


def test_checkpoint_round_trips_the_scale_and_inner_slots(tmp_path):
    v = tf.Variable([1.0, 2.0])
    opt = mp.LossScaleOptimizer(keras.optimizers.Adam(0.1),
                                initial_scale=4.0)
    opt.apply_gradients([(tf.constant([4.0, 4.0]), v)])
    opt.apply_gradients([(tf.constant([np.inf, 4.0]), v)])
    path = tf.train.Checkpoint(opt=opt, v=v).save(str(tmp_path / "ck"))
    v2 = tf.Variable([0.0, 0.0])
    opt2 = mp.LossScaleOptimizer(keras.optimizers.Adam(0.1),
                                 initial_scale=4.0)
    tf.train.Checkpoint(opt=opt2, v=v2).restore(path)
    opt2.build([v2])
    assert float(opt2.dynamic_scale.numpy()) == 2.0
    assert int(opt2.iterations.numpy()) == 1
    np.testing.assert_allclose(v2.numpy(), v.numpy())
    for a, b in zip(opt.inner_optimizer.variables,
                    opt2.inner_optimizer.variables):
        np.testing.assert_allclose(a.numpy(), b.numpy())


def test_fit_run_eagerly_with_loss_scaling():
    mp.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.Input((3,)), L.Dense(1)])
    model.compile(keras.optimizers.SGD(0.05), "mse", run_eagerly=True)
    x = np.random.RandomState(0).rand(32, 3).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    hist = model.fit(x, y, epochs=4, batch_size=8, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    # Each of the 16 batches was applied or (overflowing float16 at the
    # initial 2**15) skipped, halving the scale.
    applied = int(model.optimizer.iterations.numpy())
    assert 12 <= applied <= 16
    assert float(model.optimizer.dynamic_scale.numpy()) == \
        2.0 ** (15 - (16 - applied))


def test_losses_are_computed_in_float32():
    mp.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.Input((2,)), L.Dense(3)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), metrics=["accuracy"])
    x = tf.constant([[1.0, 2.0]])
    y_pred = model(x)
    assert y_pred.dtype == tf.float16
    loss = model.compute_loss(x, tf.constant([1]), y_pred)
    assert loss.dtype == tf.float32
    # 2**15 times a float16 loss of this size would overflow (65504).
    big = model.optimizer.scale_loss(tf.constant(3.0))
    assert big.dtype == tf.float32 and float(big) == 3.0 * 2 ** 15
