"""Conformance with TF's guides on modules, layers, models and training
loops ("Introduction to modules, layers, and models", "Basic training
loops", "Writing a training loop from scratch", "Customizing what happens
in fit"). Expected strings and values are what TF 2.21 printed for the
same snippets."""
import copy
import os
import pickle

import numpy as np
import pytest

import tfmini as tf

keras = tf.keras


# ---- tf.Module ---------------------------------------------------------

class Affine(tf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(tf.ones([n_in, n_out]), name="w")
        self.b = tf.Variable(tf.zeros([n_out]), name="b")

    def __call__(self, x):
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)


class Pair(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.zz = Affine(2, 2)
        self.aa = Affine(2, 1)
        self.extra = [tf.Variable(1.0, name="l0"),
                      {"q": tf.Variable(2.0, name="d", trainable=False)}]

    def __call__(self, x):
        return self.aa(self.zz(x))


class Gain(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.k = tf.Variable(3.0, name="k")
        self.off = tf.Variable(1.0, trainable=False, name="off")

    def __call__(self, x):
        return self.k * x + self.off


def test_module_trainable_and_all_variables_print_like_tf():
    g = Gain(name="gain")
    assert float(g(tf.constant(2.0))) == 7.0
    # TF 2.21 output.
    assert str(g.trainable_variables) == \
        "(<tf.Variable 'k:0' shape=() dtype=float32, numpy=3.0>,)"
    assert str(g.variables) == (
        "(<tf.Variable 'k:0' shape=() dtype=float32, numpy=3.0>, "
        "<tf.Variable 'off:0' shape=() dtype=float32, numpy=1.0>)")
    assert [v.name for v in g.non_trainable_variables] == ["off:0"]
    assert g.name == "gain" and g.name_scope.name == "gain/"


def test_module_collection_order_matches_tf():
    m = Pair(name="pair")
    np.testing.assert_array_equal(m(tf.constant([[1.0, 2.0]])).numpy(),
                                  [[6.0]])
    # TF 2.21: attributes in sorted order, containers flattened like
    # tf.nest, this module's own leaves before its submodules'.
    assert [v.name for v in m.variables] == \
        ["l0:0", "d:0", "b:0", "w:0", "b:0", "w:0"]
    assert [tuple(v.shape) for v in m.variables][2:] == \
        [(1,), (2, 1), (2,), (2, 2)]
    assert [v.name for v in m.trainable_variables] == \
        ["l0:0", "b:0", "w:0", "b:0", "w:0"]
    assert m.submodules == (m.aa, m.zz)
    assert isinstance(m.variables, tuple)
    paths = [p for p, _ in m._flatten(with_path=True,
                                      predicate=lambda x: isinstance(
                                          x, tf.Variable))]
    assert paths[:3] == [("extra", 0), ("extra", 1, "q"), ("aa", "b")]


def test_module_names_and_name_scopes():
    class TwoWords(tf.Module):
        def __init__(self):
            super().__init__()
            with self.name_scope:
                self.v = tf.Variable(1.0, name="v")

        @tf.Module.with_name_scope
        def make(self):
            return tf.Variable(0.0, name="made")

    t = TwoWords()
    assert t.name == "two_words" and t.v.name == "two_words/v:0"
    assert t.make().name == "two_words/made:0"
    assert tf.Module().name == "module"
    with tf.name_scope("outer"):
        assert tf.Variable(1.0, name="w").name == "outer/w:0"
        assert tf.Module(name="inner").name_scope.name == "outer/inner/"
        with tf.name_scope("abs/"):
            assert tf.Variable(1.0).name == "abs/Variable:0"
        w = tf.Variable(1.0, name="w")
        assert copy.deepcopy(w).name == "outer/w:0"    # not outer/outer/
        assert pickle.loads(pickle.dumps(w)).name == "outer/w:0"
    assert tf.Variable(1.0, name="w").name == "w:0"
    with pytest.raises(ValueError, match="'bad name' is not a valid module "
                                         "name. Module names must be valid "
                                         "Python identifiers"):
        tf.Module(name="bad name")
    with pytest.raises(ValueError, match="must be a string"):
        tf.name_scope(3)


def test_module_with_tf_function_call_traces_per_signature():
    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.a = Affine(3, 3)
            self.b = Affine(3, 2)

        @tf.function
        def __call__(self, x):
            return self.b(self.a(x))

    n = Net()
    np.testing.assert_array_equal(n([[2.0, 2.0, 2.0]]).numpy(),
                                  [[18.0, 18.0]])
    out = n([[[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]]])
    assert tuple(out.shape) == (1, 2, 2)
    assert n.__call__.experimental_get_tracing_count() == 2


# ---- tf.train.Checkpoint -------------------------------------------------

class LazyAffine(tf.Module):
    def __init__(self, n_out, name=None):
        super().__init__(name=name)
        self.built = False
        self.n_out = n_out

    def __call__(self, x):
        if not self.built:
            self.w = tf.Variable(tf.fill([x.shape[-1], self.n_out], 0.5),
                                 name="w")
            self.b = tf.Variable(tf.zeros([self.n_out]), name="b")
            self.built = True
        return tf.matmul(x, self.w) + self.b


class LazyNet(tf.Module):
    def __init__(self):
        super().__init__()
        self.first = LazyAffine(3)
        self.second = LazyAffine(1)
        self.extra = [tf.Variable(2.0), {"k": tf.Variable([1, 2])}]

    @tf.function
    def __call__(self, x):
        return self.second(self.first(x))


def test_checkpoint_write_list_and_deferred_restore(tmp_path):
    x = tf.constant([[1.0, 2.0]])
    net = LazyNet()
    assert float(net(x)[0, 0]) == 2.25
    net.first.w.assign_add(tf.ones([2, 3]))
    path = tf.train.Checkpoint(net=net).write(str(tmp_path / "ck"))
    assert path == str(tmp_path / "ck")
    # TF 2.21's keys and shapes (TF also lists its object graph entry).
    assert tf.train.list_variables(path) == [
        ("_CHECKPOINTABLE_OBJECT_GRAPH", []),
        ("net/extra/0/.ATTRIBUTES/VARIABLE_VALUE", []),
        ("net/extra/1/k/.ATTRIBUTES/VARIABLE_VALUE", [2]),
        ("net/first/b/.ATTRIBUTES/VARIABLE_VALUE", [3]),
        ("net/first/w/.ATTRIBUTES/VARIABLE_VALUE", [2, 3]),
        ("net/second/b/.ATTRIBUTES/VARIABLE_VALUE", [1]),
        ("net/second/w/.ATTRIBUTES/VARIABLE_VALUE", [3, 1])]
    np.testing.assert_array_equal(
        tf.train.load_variable(path, "net/first/w/.ATTRIBUTES/"
                                     "VARIABLE_VALUE"), np.full((2, 3), 1.5))
    fresh = LazyNet()
    fresh.extra[0].assign(-1.0)
    status = tf.train.Checkpoint(net=fresh).restore(path)
    assert type(status).__name__ == "CheckpointLoadStatus"
    assert float(fresh.extra[0]) == 2.0
    with pytest.raises(AssertionError):
        status.assert_consumed()      # the lazy weights do not exist yet
    # The variables made on the first call (inside a tf.function trace)
    # take the saved values: TF 2.21 gives 6.75.
    assert float(fresh(x)[0, 0]) == 6.75
    status.assert_consumed()


def test_checkpoint_save_counter_and_latest_checkpoint(tmp_path):
    g = Gain()
    ckpt = tf.train.Checkpoint(model=g)
    prefix = str(tmp_path / "run" / "ckpt")
    assert ckpt.save(prefix) == prefix + "-1"
    g.k.assign(10.0)
    assert ckpt.save(prefix) == prefix + "-2"
    assert repr(ckpt.save_counter) == \
        "<tf.Variable 'save_counter:0' shape=() dtype=int64, numpy=2>"
    folder = str(tmp_path / "run")
    assert tf.train.latest_checkpoint(folder) == prefix + "-2"
    assert tf.train.latest_checkpoint(str(tmp_path / "none")) is None
    with open(os.path.join(folder, "checkpoint")) as f:
        assert f.read() == ('model_checkpoint_path: "ckpt-2"\n'
                            'all_model_checkpoint_paths: "ckpt-2"\n')
    keys = [k for k, _ in tf.train.list_variables(folder)]
    assert keys[-1] == "save_counter/.ATTRIBUTES/VARIABLE_VALUE"
    g2 = Gain()
    ck2 = tf.train.Checkpoint(model=g2)
    ck2.restore(prefix + "-1").assert_consumed()
    assert float(g2.k) == 3.0 and int(ck2.save_counter) == 1
    ck2.restore(tf.train.latest_checkpoint(folder))
    assert float(g2.k) == 10.0
    assert tf.train.Checkpoint(model=g2).restore(None) is not None


def test_checkpoint_errors(tmp_path):
    with pytest.raises(tf.errors.NotFoundError,
                       match="Failed to find any matching files"):
        tf.train.Checkpoint(model=Gain()).restore(str(tmp_path / "nope"))
    with pytest.raises(ValueError, match="`Checkpoint` was expecting net to "
                                         "be a trackable object"):
        tf.train.Checkpoint(net=5)
    path = tf.train.Checkpoint(m=Affine(2, 2)).write(str(tmp_path / "a"))
    with pytest.raises(ValueError, match="incompatible tensor with shape "
                                         r"\(2, 2\)"):
        tf.train.Checkpoint(m=Affine(3, 2)).restore(path)


def test_checkpoint_of_keras_model_and_optimizer(tmp_path):
    def make():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3),
                                  keras.layers.Dense(1)])
        return model, keras.optimizers.Adam(0.1)

    x = tf.constant([[1.0, -1.0]])
    model, opt = make()
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    path = tf.train.Checkpoint(model=model, opt=opt).write(
        str(tmp_path / "k"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    # Keras 3's optimizer keys, as TF 2.21 writes them.
    assert "opt/_iterations/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "opt/_variables/2/.ATTRIBUTES/VARIABLE_VALUE" in keys
    model2, opt2 = make()
    status = tf.train.Checkpoint(model=model2, opt=opt2).restore(path)
    np.testing.assert_array_equal(model2(x).numpy(), model(x).numpy())
    assert int(opt2.iterations) == 2
    # Adam's slots do not exist until the first step: they take the
    # saved moments then, so both models keep training alike.
    for m, o in ((model, opt), (model2, opt2)):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(m(x))
        grads = tape.gradient(loss, m.trainable_variables)
        o.apply_gradients(zip(grads, m.trainable_variables))
    status.assert_consumed()
    for a, b in zip(opt.variables, opt2.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(model2(x).numpy(), model(x).numpy())


# ---- Keras layers and models ------------------------------------------

class FlexDense(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="ones", name="w")
        self.b = self.add_weight(shape=(self.units,), initializer="zeros",
                                 name="b")

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_keras_layer_build_on_first_call_and_shape_errors():
    layer = FlexDense(3)
    assert layer.variables == []
    out = layer(tf.constant([[2.0, 2.0], [3.0, 3.0]]))
    np.testing.assert_array_equal(out.numpy(), [[4.0] * 3, [6.0] * 3])
    assert [tuple(v.shape) for v in layer.variables] == [(2, 3), (3,)]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Matrix size-incompatible: In\[0\]: \[1,3\], "
                             r"In\[1\]: \[2,3\]"):
        layer(tf.constant([[1.0, 2.0, 3.0]]))
    config = layer.get_config()
    assert config["units"] == 3
    assert FlexDense.from_config(config).units == 3


def test_functional_model_from_custom_layers():
    inputs = keras.Input(shape=[3])
    h = FlexDense(3)(inputs)
    model = keras.Model(inputs=inputs, outputs=FlexDense(2)(h))
    np.testing.assert_array_equal(model(tf.constant([[2.0, 2.0, 2.0]])),
                                  [[18.0, 18.0]])
    assert model.count_params() == 12 + 8


def test_basic_training_loop_by_hand_and_with_fit():
    xs = tf.constant(np.linspace(-1, 1, 20, dtype=np.float32))
    ys = xs * 2.0 - 0.5

    class Line(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(4.0)
            self.b = tf.Variable(1.0)

        def __call__(self, x):
            return self.w * x + self.b

    def mse(t, p):
        return tf.reduce_mean(tf.square(t - p))

    line = Line()
    assert line(3.0).numpy() == 13.0
    logs = []
    for epoch in range(3):
        with tf.GradientTape() as tape:
            loss = mse(ys, line(xs))
        dw, db = tape.gradient(loss, [line.w, line.b])
        line.w.assign_sub(0.1 * dw)
        line.b.assign_sub(0.1 * db)
        logs.append(f"Epoch {epoch:2d}: W = {line.w.numpy():1.2f}, "
                    f"b = {line.b.numpy():1.2f}, loss={loss:2.5f}")
    # TF 2.21 output.
    assert logs == ["Epoch  0: W = 3.85, b = 0.70, loss=3.72368",
                    "Epoch  1: W = 3.72, b = 0.46, loss=2.70451",
                    "Epoch  2: W = 3.59, b = 0.27, loss=2.00663"]
    assert "%1.6f" % mse(ys, line(xs)).numpy() == "1.520844"

    class KLine(keras.Model):
        def __init__(self):
            super().__init__()
            const = keras.initializers.Constant
            self.w = self.add_weight(shape=(), initializer=const(4.0))
            self.b = self.add_weight(shape=(), initializer=const(1.0))

        def call(self, x):
            return self.w * x + self.b

    km = KLine()
    km.compile(run_eagerly=False,
               optimizer=keras.optimizers.SGD(learning_rate=0.1),
               loss="mse")
    hist = km.fit(xs, ys, epochs=3, batch_size=20, verbose=0)
    np.testing.assert_allclose(hist.history["loss"],
                               [3.72368, 2.70451, 2.00663], rtol=1e-5)
    assert hist.epoch == [0, 1, 2]
    assert hist.params == {"verbose": 0, "epochs": 3, "steps": 1}
    assert km.evaluate(xs, ys, verbose=0) == pytest.approx(1.520844,
                                                           rel=1e-5)


def test_training_loop_from_scratch_with_metrics():
    rng = np.random.RandomState(0)
    x = rng.rand(64, 6).astype("float32")
    y = (x.sum(1) * 2).astype("int64") % 4
    inputs = keras.Input(shape=(6,))
    h = keras.layers.Dense(8, activation="relu")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(4)(h))
    init = [np.full(w.shape, 0.05 * (i + 1), "float32")
            for i, w in enumerate(model.weights)]
    init[0] = rng.rand(6, 8).astype("float32") - 0.5
    model.set_weights(init)
    opt = keras.optimizers.SGD(learning_rate=0.5)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    acc = keras.metrics.SparseCategoricalAccuracy()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    assert len(ds) == 4

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = loss_fn(yb, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))
        acc.update_state(yb, logits)
        return loss

    seen = []
    for epoch in range(2):
        for i, (xb, yb) in enumerate(ds):
            loss = step(xb, yb)
            if i % 2 == 0:
                seen.append(round(float(loss), 4))
        seen.append(round(float(acc.result()), 4))
        acc.reset_state()
    # TF 2.21: losses at steps 0 and 2, then the epoch's accuracy.
    assert seen == [1.3863, 1.3656, 0.1719, 1.3184, 1.2998, 0.3594]
    assert float(acc.result()) == 0.0 and int(opt.iterations) == 8
    assert float(loss_fn(tf.constant([1, 0]),
                         tf.constant([[0.1, 2.0], [3.0, 0.5]]))) == \
        pytest.approx(0.10913822, rel=1e-6)
    shuffled = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(
        buffer_size=64).batch(32)
    assert sorted(int(b.shape[0]) for b, _ in shuffled) == [32, 32]


class StepModel(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_train_step_override_on_functional_subclass():
    rng = np.random.RandomState(0)
    x = rng.rand(40, 3).astype("float32")
    y = x @ np.array([[1.0], [2.0], [-1.0]], "float32")
    inputs = keras.Input(shape=(3,))
    outputs = keras.layers.Dense(1, kernel_initializer="ones")(inputs)
    model = StepModel(inputs, outputs)
    assert isinstance(model, StepModel)
    assert type(model).__name__ == "StepModel"
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    hist = model.fit(x, y, epochs=2, batch_size=20, verbose=0,
                     shuffle=False)
    # TF 2.21 values; it names the metric after the string given.
    assert sorted(hist.history) == ["loss", "mae"]
    np.testing.assert_allclose(hist.history["loss"], [0.7583, 0.7526],
                               atol=1e-4)
    np.testing.assert_allclose(hist.history["mae"], [0.7148, 0.7122],
                               atol=1e-4)
    # A subclass built without inputs stays a subclassed model.
    assert not hasattr(StepModel(), "inputs")
