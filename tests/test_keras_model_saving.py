"""model.save / keras.models.load_model in Keras 3's '.keras' format and
save_weights in its '.weights.h5' layout, both ways against Keras.

keras_fixture() writes a file the way Keras 3.15 does (read from
keras/src/saving/saving_lib.py and serialization_lib.py, and checked
against files Keras 3.15.1 wrote): the zip members, the config JSON and
the HDF5 groups `layers/<snake_case class>/vars/<i>`. When Keras itself
is installed, test_real_keras_* also run it (numpy backend) in a
subprocess, writing and reading real files."""
import io
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import tfmini as tf

h5py = pytest.importorskip("h5py")
keras = tf.keras


def _dense(name, units, activation, in_dim):
    init = {"module": "keras.initializers", "class_name": "GlorotUniform",
            "config": {"seed": None}, "registered_name": None}
    return {"module": "keras.layers", "class_name": "Dense",
            "config": {"name": name, "trainable": True,
                       "dtype": {"module": "keras",
                                 "class_name": "DTypePolicy",
                                 "config": {"name": "float32"},
                                 "registered_name": None},
                       "units": units, "activation": activation,
                       "use_bias": True, "kernel_initializer": init,
                       "bias_initializer": {
                           "module": "keras.initializers",
                           "class_name": "Zeros", "config": {},
                           "registered_name": None},
                       "kernel_regularizer": None, "bias_regularizer": None,
                       "kernel_constraint": None, "bias_constraint": None,
                       "quantization_config": None},
            "registered_name": None,
            "build_config": {"input_shape": [None, in_dim]}}


def keras_fixture(path, weights):
    """A '.keras' file as Keras 3.15 writes Sequential([Input((4,)),
    Dense(3, relu), Dense(2)]) compiled with Adam (never trained)."""
    config = {
        "module": "keras", "class_name": "Sequential",
        "config": {"name": "sequential", "trainable": True,
                   "dtype": {"module": "keras", "class_name": "DTypePolicy",
                             "config": {"name": "float32"},
                             "registered_name": None},
                   "layers": [
                       {"module": "keras.layers", "class_name": "InputLayer",
                        "config": {"batch_shape": [None, 4],
                                   "dtype": "float32", "sparse": False,
                                   "ragged": False, "name": "input_layer",
                                   "optional": False},
                        "registered_name": None},
                       _dense("dense", 3, "relu", 4),
                       _dense("dense_1", 2, "linear", 3)],
                   "build_input_shape": [None, 4]},
        "registered_name": None,
        "build_config": {"input_shape": [None, 4]},
        "compile_config": {
            "optimizer": {"module": "keras.optimizers", "class_name": "Adam",
                          "config": {"name": "adam", "learning_rate": 0.001,
                                     "use_ema": False, "beta_1": 0.9},
                          "registered_name": None},
            "loss": "mse", "loss_weights": None, "metrics": None,
            "weighted_metrics": None, "run_eagerly": False,
            "steps_per_execution": 1, "jit_compile": True}}
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        f.create_group("vars").attrs["name"] = "sequential"
        for layer, name in (("dense", "dense"), ("dense_1", "dense_1")):
            g = f.create_group(f"layers/{layer}/vars")
            g.attrs["name"] = name
            for i, w in enumerate(weights[layer]):
                g.create_dataset(str(i), data=w)
        g = f.create_group("optimizer/vars")
        g.attrs["name"] = "adam"
        g.create_dataset("0", data=np.int32(0))
        g.create_dataset("1", data=np.float32(0.001))
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps(
            {"keras_version": "3.15.1", "date_saved": "2026-01-01@00:00:00"}))
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", buf.getvalue())


def _fixture_weights():
    rng = np.random.default_rng(0)
    return {"dense": [rng.standard_normal((4, 3)).astype("f"),
                      rng.standard_normal(3).astype("f")],
            "dense_1": [rng.standard_normal((3, 2)).astype("f"),
                        rng.standard_normal(2).astype("f")]}


def _reference(w, x):
    h = np.maximum(x @ w["dense"][0] + w["dense"][1], 0)
    return h @ w["dense_1"][0] + w["dense_1"][1]


def _seq():
    return keras.Sequential([keras.Input((4,)),
                             keras.layers.Dense(3, activation="relu"),
                             keras.layers.Dense(2)])


X = np.random.default_rng(1).random((5, 4)).astype("f")


def test_load_keras_written_fixture(tmp_path):
    w = _fixture_weights()
    keras_fixture(tmp_path / "k.keras", w)
    m = keras.models.load_model(tmp_path / "k.keras")
    assert isinstance(m, keras.Sequential)
    np.testing.assert_allclose(m(X).numpy(), _reference(w, X), rtol=1e-5)
    assert m.optimizer is not None        # compile_config was applied


def test_sequential_round_trip_and_layout(tmp_path):
    m = _seq()
    m.compile(optimizer="adam", loss="mse")
    m.fit(X, np.ones((5, 2), "f"), verbose=0)
    p = str(tmp_path / "m.keras")
    m.save(p)
    with zipfile.ZipFile(p) as zf:
        assert set(zf.namelist()) == {"metadata.json", "config.json",
                                      "model.weights.h5"}
        config = json.loads(zf.read("config.json"))
        h5 = h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r")
    assert config["class_name"] == "Sequential"
    assert config["module"] == "keras"
    assert [l["class_name"] for l in config["config"]["layers"]] == \
        ["InputLayer", "Dense", "Dense"]
    assert config["compile_config"]["loss"] == "mse"
    assert h5["layers/dense/vars/0"].shape == (4, 3)
    assert h5["layers/dense_1/vars/1"].shape == (2,)
    assert h5["vars"].attrs["name"] == m.name
    assert int(h5["optimizer/vars/0"][()]) == 1       # one step taken
    m2 = keras.models.load_model(p)
    np.testing.assert_array_equal(m(X).numpy(), m2(X).numpy())
    assert int(m2.optimizer.iterations.numpy()) == 1


def test_functional_round_trip(tmp_path):
    a = keras.Input((4,), name="a")
    b = keras.Input((2,), name="b")
    h = keras.layers.Dense(3, name="h")(a)
    c = keras.layers.Concatenate(name="cat")([h, b])
    out = keras.layers.Dense(1, name="out")(c)
    m = keras.Model([a, b], out, name="two_in")
    p = tmp_path / "f.keras"
    m.save(p)
    m2 = keras.models.load_model(p)
    assert m2.name == "two_in"
    assert [l.name for l in m2.layers] == [l.name for l in m.layers]
    y = np.ones((5, 2), "f")
    np.testing.assert_array_equal(m([X, y]).numpy(), m2([X, y]).numpy())


@keras.saving.register_keras_serializable(package="tests")
class Scale(keras.layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],),
                                 initializer="ones")

    def call(self, x):
        return x * self.w * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@keras.saving.register_keras_serializable(package="tests")
class Net(keras.Model):
    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.hidden = keras.layers.Dense(units)
        self.scale = Scale(3.0)

    def call(self, x):
        return self.scale(self.hidden(x))

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_registered_subclassed_model(tmp_path):
    assert keras.saving.get_registered_name(Net) == "tests>Net"
    assert keras.saving.get_registered_object("tests>Scale") is Scale
    m = Net(units=5)
    m(X)
    m.scale.w.assign(np.arange(5, dtype="f"))
    p = tmp_path / "n.keras"
    m.save(p)
    with zipfile.ZipFile(p) as zf:
        h5 = h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r")
        config = json.loads(zf.read("config.json"))
    assert config["registered_name"] == "tests>Net"
    # Keras walks a subclassed model's attributes in sorted order, and
    # `layers` (a list) sorts before `scale`: Keras 3.15 writes exactly
    # these paths for this model.
    assert h5["hidden/vars/0"].shape == (4, 5)
    assert h5["layers/scale/vars/0"].shape == (5,)
    m2 = keras.models.load_model(p)
    assert isinstance(m2, Net) and m2.units == 5
    assert m2.scale.factor == 3.0
    np.testing.assert_array_equal(m(X).numpy(), m2(X).numpy())


class Unregistered(keras.layers.Layer):
    def call(self, x):
        return x + 1.0


def test_custom_objects_and_scope(tmp_path):
    m = keras.Sequential([keras.Input((4,)), Unregistered()])
    p = tmp_path / "u.keras"
    m.save(p)
    with pytest.raises(TypeError, match="register_keras_serializable"):
        keras.models.load_model(p)
    m2 = keras.models.load_model(p, custom_objects={
        "Unregistered": Unregistered})
    np.testing.assert_array_equal(m2(X).numpy(), X + 1)
    with keras.saving.CustomObjectScope({"Unregistered": Unregistered}):
        m3 = keras.models.load_model(p)
    assert isinstance(m3.layers[0], Unregistered)


def test_save_weights_keras_layout_and_load(tmp_path):
    m = _seq()
    p = str(tmp_path / "w.weights.h5")
    m.save_weights(p)
    with h5py.File(p, "r") as f:
        assert sorted(f["layers"].keys()) == ["dense", "dense_1"]
        np.testing.assert_array_equal(f["layers/dense/vars/0"][()],
                                      m.layers[0].kernel.numpy())
    m2 = _seq()
    m2.load_weights(p)
    np.testing.assert_array_equal(m(X).numpy(), m2(X).numpy())
    # tfmini's own format still loads through the same call.
    q = str(tmp_path / "w.tfmw")
    m.save_weights(q)
    m3 = _seq()
    m3.load_weights(q)
    np.testing.assert_array_equal(m(X).numpy(), m3(X).numpy())


def test_weights_file_from_keras_layout(tmp_path):
    w = _fixture_weights()
    p = tmp_path / "k.weights.h5"
    with h5py.File(p, "w") as f:
        f.create_group("vars").attrs["name"] = "sequential"
        for layer in ("dense", "dense_1"):
            g = f.create_group(f"layers/{layer}/vars")
            for i, v in enumerate(w[layer]):
                g.create_dataset(str(i), data=v)
    m = _seq()
    m.load_weights(str(p))
    np.testing.assert_allclose(m(X).numpy(), _reference(w, X), rtol=1e-5)


def test_mismatch_and_bad_names(tmp_path):
    p = str(tmp_path / "w.weights.h5")
    _seq().save_weights(p)
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(7),
                              keras.layers.Dense(2)])
    with pytest.raises(ValueError, match=r"dense.*shape \(4, 7\)"):
        other.load_weights(p)
    other.load_weights(p, skip_mismatch=True)
    with pytest.raises(ValueError, match="legacy HDF5"):
        _seq().save(str(tmp_path / "m.h5"))
    with pytest.raises(ValueError, match=r"\.keras"):
        _seq().save(str(tmp_path / "m.zip"))
    bad = tmp_path / "x.keras"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a '.keras' zip"):
        keras.models.load_model(bad)
    with pytest.raises(FileNotFoundError, match="no file"):
        keras.models.load_model(tmp_path / "absent.keras")
    good = tmp_path / "good.keras"
    _seq().save(good)
    with zipfile.ZipFile(good) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members["model.weights.h5"] = members["model.weights.h5"][:200]
    with zipfile.ZipFile(bad, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    with pytest.raises(ValueError, match="not a readable HDF5"):
        keras.models.load_model(bad)
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("config.json", json.dumps(
            {"module": "os", "class_name": "system", "config": {}}))
        zf.writestr("model.weights.h5", members["model.weights.h5"])
    with pytest.raises(TypeError, match="Could not locate class 'system'"):
        keras.models.load_model(bad)       # never imports from the file


def test_keras_only_config_keys_refused_when_set(tmp_path):
    w = _fixture_weights()
    p = tmp_path / "k.keras"
    keras_fixture(p, w)
    with zipfile.ZipFile(p) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    config = json.loads(members["config.json"])
    config["config"]["layers"][1]["config"]["quantization_config"] = {
        "mode": "int8"}
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(p, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    with pytest.raises(ValueError, match="quantization_config"):
        keras.models.load_model(p)


def _keras_available():
    code = ("import os; os.environ['KERAS_BACKEND']='numpy'; import keras")
    try:
        return subprocess.run([sys.executable, "-c", code],
                              capture_output=True, timeout=120
                              ).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="module")
def real_keras():
    if not _keras_available():
        pytest.skip("keras (with its numpy backend) is not installed")


def _run_keras(code):
    env = dict(os.environ, KERAS_BACKEND="numpy")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_real_keras_file_loads_here(real_keras, tmp_path):
    p = str(tmp_path / "k.keras")
    np.save(tmp_path / "x.npy", X)
    _run_keras(f"""
import keras, numpy as np
i = keras.Input((4,), name="inp")
h = keras.layers.Dense(3, activation="relu", name="d1")(i)
o = keras.layers.Dense(2, name="d2")(h)
m = keras.Model(i, o)
m.compile(optimizer="adam", loss="mse")
m.save({p!r})
np.save({str(tmp_path / 'y.npy')!r}, m(np.load({str(tmp_path / 'x.npy')!r})))
""")
    m = keras.models.load_model(p)
    np.testing.assert_allclose(m(X).numpy(), np.load(tmp_path / "y.npy"),
                               rtol=1e-5, atol=1e-6)


def test_real_keras_loads_tfmini_file(real_keras, tmp_path):
    m = _seq()
    p = str(tmp_path / "t.keras")
    m.save(p)
    w = str(tmp_path / "t.weights.h5")
    m.save_weights(w)
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", m(X).numpy())
    _run_keras(f"""
import keras, numpy as np
x = np.load({str(tmp_path / 'x.npy')!r})
y = np.load({str(tmp_path / 'y.npy')!r})
m = keras.models.load_model({p!r})
np.testing.assert_allclose(np.asarray(m(x)), y, rtol=1e-5, atol=1e-6)
k = keras.Sequential([keras.Input((4,)),
                      keras.layers.Dense(3, activation="relu"),
                      keras.layers.Dense(2)])
k.load_weights({w!r})
np.testing.assert_allclose(np.asarray(k(x)), y, rtol=1e-5, atol=1e-6)
""")


# The same source builds the model in Keras and in tfmini (L = layers).
ARCHS = {
    "conv": ("keras.Sequential([keras.Input((8, 8, 2)), "
             "L.Conv2D(4, 3, activation='relu'), L.BatchNormalization(), "
             "L.MaxPooling2D(), L.Flatten(), L.Dropout(0.1), "
             "L.Dense(3, activation='softmax')])", (2, 8, 8, 2), "float32"),
    "lstm": ("keras.Sequential([keras.Input((5,), dtype='int32'), "
             "L.Embedding(10, 4), L.LSTM(6), L.Dense(1)])", (2, 5), "int32"),
    "gru": ("keras.Sequential([keras.Input((5, 3)), "
            "L.GRU(4, return_sequences=True), L.SimpleRNN(2), "
            "L.LayerNormalization(), L.Dense(2)])", (2, 5, 3), "float32"),
    "bidir": ("(lambda i: keras.Model(i, L.Dense(2)(L.Flatten()(L.Add()("
              "[b := L.Bidirectional(L.LSTM(4, return_sequences=True))(i), "
              "b])))))(keras.Input((5, 3)))", (2, 5, 3), "float32"),
    "mha": ("(lambda i: keras.Model(i, L.MultiHeadAttention(2, 4)(i, i)))"
            "(keras.Input((5, 3)))", (2, 5, 3), "float32"),
}
_FILL = """
rng = np.random.default_rng(0)
for w in m.weights:   # positive values: BatchNorm variances stay valid
    w.assign((np.abs(rng.standard_normal(tuple(w.shape))) * 0.3 + 0.1
              ).astype(np.dtype(getattr(w.dtype, 'name', w.dtype))))
"""


def _arch_input(name):
    _, shape, dtype = ARCHS[name]
    rng = np.random.default_rng(1)
    if dtype == "int32":
        return rng.integers(0, 10, shape).astype("int32")
    return rng.random(shape).astype("float32")


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_real_keras_layers_both_ways(real_keras, tmp_path, arch):
    src = ARCHS[arch][0]
    x = _arch_input(arch)
    np.save(tmp_path / "x.npy", x)
    k_file, t_file = str(tmp_path / "k.keras"), str(tmp_path / "t.keras")
    # tfmini writes; Keras reads below.
    m = eval(src, {"keras": keras, "L": keras.layers})
    exec(_FILL, {"np": np, "m": m})
    m.save(t_file)
    np.save(tmp_path / "ty.npy", m(x).numpy())
    _run_keras(f"""
import keras, numpy as np
L = keras.layers
x = np.load({str(tmp_path / 'x.npy')!r})
m = {src}
{_FILL}
m.save({k_file!r})
np.save({str(tmp_path / 'ky.npy')!r}, np.asarray(m(x)))
t = keras.models.load_model({t_file!r})
ty = np.load({str(tmp_path / 'ty.npy')!r})
np.testing.assert_allclose(np.asarray(t(x)), ty, rtol=1e-5, atol=1e-5)
""")
    got = keras.models.load_model(k_file)
    np.testing.assert_allclose(got(x).numpy(), np.load(tmp_path / "ky.npy"),
                               rtol=1e-5, atol=1e-5)


@keras.saving.register_keras_serializable(package="tests")
def clipped(x):
    return tf.clip_by_value(x, -0.5, 0.5)


def test_registered_function_and_optimizer_state(tmp_path):
    m = keras.Sequential([keras.Input((4,)),
                          keras.layers.Dense(3, activation=clipped)])
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    m.fit(X, np.ones((5, 3), "f"), verbose=0, epochs=2)
    p = tmp_path / "f.keras"
    m.save(p)
    config = json.loads(zipfile.ZipFile(p).read("config.json"))
    act = config["config"]["layers"][1]["config"]["activation"]
    assert act["class_name"] == "function"
    assert act["registered_name"] == "tests>clipped"
    m2 = keras.models.load_model(p)
    assert m2.layers[0].activation is clipped
    np.testing.assert_array_equal(m(X).numpy(), m2(X).numpy())
    for a, b in zip(m.optimizer.variables, m2.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert m2.optimizer.learning_rate.numpy() == pytest.approx(0.01)


@keras.saving.register_keras_serializable(package="tests")
class Custom(keras.Model):
    def train_step(self, data):
        return super().train_step(data)


def test_functional_subclass_round_trip(tmp_path):
    i = keras.Input((4,))
    m = Custom(i, keras.layers.Dense(2)(i))
    p = tmp_path / "c.keras"
    m.save(p)
    m2 = keras.models.load_model(p)
    assert isinstance(m2, Custom)
    np.testing.assert_array_equal(m(X).numpy(), m2(X).numpy())
