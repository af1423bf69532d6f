"""The gaps the guides5 replays found (the migration guides, the
data-performance and distribution guides), each checked on its own.
Expected values are TF 2.21's."""
import pathlib

import numpy as np
import pytest

import tfmini as tf


def test_compat_string_helpers():
    c = tf.compat
    assert c.as_bytes("hé") == b"h\xc3\xa9"
    assert c.as_bytes("é", "latin-1") == b"\xe9"
    assert c.as_bytes(bytearray(b"ab")) == b"ab"
    assert c.as_text(b"h\xc3\xa9") == "hé" and c.as_str(b"x") == "x"
    assert c.as_str_any(5) == "5" and c.as_str_any(b"q") == "q"
    assert c.path_to_str(pathlib.Path("/a/b")) == "/a/b"
    assert c.path_to_str(3) == 3
    for f in (c.as_bytes, c.as_text):
        with pytest.raises(TypeError,
                           match="Expected binary or unicode string, got 5"):
            f(5)
    assert c.v2 is tf
    assert isinstance(np.int8(1), c.integral_types)
    assert not isinstance(1.5, c.integral_types)
    assert isinstance(np.float16(1), c.real_types)


def test_compat_v1_imports_and_names_what_it_lacks():
    import tfmini.compat.v1 as tf1
    assert tf1 is tf.compat.v1
    tf1.enable_tensor_equality()          # TF2's mode, tfmini's only one
    x = tf.Variable(0.)
    assert bool(x == tf.Variable(0.))
    for name in ("Session", "estimator", "disable_tensor_equality"):
        with pytest.raises(AttributeError, match=f"tf.compat.v1.{name}"):
            getattr(tf1, name)
    assert not hasattr(tf1, "placeholder")


def test_tensor_shape_dims_are_dimensions():
    D = tf.compat.v1.Dimension
    dims = tf.TensorShape([16, None, 256]).dims
    assert repr(dims) == "[Dimension(16), Dimension(None), Dimension(256)]"
    assert dims[0].value == 16 and dims[1].value is None
    assert dims[1].is_compatible_with(16) and dims[0].is_compatible_with(16)
    assert not dims[0].is_compatible_with(4)
    # An unknown dim makes comparisons None and arithmetic unknown.
    assert (dims[0] == 16) is True and (dims[0] == dims[1]) is None
    assert (dims[0] < 17) is True and (dims[1] < 3) is None
    assert dims[0] + 1 == 17 and repr(dims[0] + dims[1]) == \
        "Dimension(None)"
    assert repr(2 * dims[0]) == "Dimension(32)"
    assert str(dims[1]) == "?" and int(dims[0]) == 16
    assert [0, 1, 2][D(2)] == 2
    assert D(None).merge_with(3).value == 3
    with pytest.raises(ValueError, match="Dimensions 3 and 4 are not "
                                         "compatible"):
        D(3).merge_with(4)
    with pytest.raises(ValueError, match="must be >= 0"):
        D(-1)
    with pytest.raises(TypeError, match="must be integer or None"):
        D(1.5)
    with pytest.raises(TypeError, match="unhashable"):
        hash(D(3))
    # Shape reads stay ints; a shape takes Dimensions back.
    s = tf.TensorShape([2, None])
    assert s[0] == 2 and type(s[0]) is int and list(s) == [2, None]
    assert tf.TensorShape([D(2), D(None)]).as_list() == [2, None]
    assert tf.TensorShape(None).dims is None
    assert tf.compat.dimension_value(dims[0]) == 16
    assert tf.compat.dimension_value(7) == 7
    assert tf.compat.dimension_at_index(s, 1).value is None
    assert repr(tf.compat.dimension_at_index(tf.TensorShape(None), 3)) == \
        "Dimension(None)"
    # The specs and static broadcasting that read dims still work.
    assert repr(tf.SparseTensorSpec([2, None], tf.int32)) == \
        "SparseTensorSpec(TensorShape([2, None]), tf.int32)"
    assert tf.broadcast_static_shape(tf.TensorShape([None, 1]),
                                     tf.TensorShape([3])).as_list() == \
        [None, 3]


def test_checkpoint_takes_lists_and_dicts(tmp_path):
    a, b, c = tf.Variable(5.), tf.Variable(6.), tf.Variable(7.)
    ckpt = tf.train.Checkpoint(variables=[a, b], named={"c": c})
    assert repr(ckpt.variables).startswith("ListWrapper([<tf.Variable")
    path = ckpt.save(str(tmp_path / "ck"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert "variables/1/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert "named/c/.ATTRIBUTES/VARIABLE_VALUE" in names
    x, y, z = tf.Variable(0.), tf.Variable(0.), tf.Variable(0.)
    tf.train.Checkpoint(variables=[x, y], named={"c": z}).restore(
        path).assert_consumed()
    assert [float(v) for v in (x, y, z)] == [5., 6., 7.]
    with pytest.raises(ValueError, match="was expecting n to be a "
                                         "trackable"):
        tf.train.Checkpoint(n=3)


def test_scalar_variable_numpy_is_a_numpy_scalar():
    v = tf.Variable(1.5)
    assert repr(v.numpy()) == "np.float32(1.5)"
    assert repr([v.numpy()]) == "[np.float32(1.5)]"
    assert np.asarray(v, np.float64).dtype == np.float64
    assert np.asarray(v).shape == ()
    assert tf.Variable([1., 2.]).numpy().tolist() == [1., 2.]
    assert tf.Variable("ab").numpy() == b"ab"


def test_keras_tensor_in_a_tf_op_is_keras_3s_error():
    x = tf.keras.Input((2,))
    with pytest.raises(ValueError, match="A KerasTensor cannot be used as "
                                         "input to a TensorFlow function"):
        tf.math.argmax(x, axis=1)
    with pytest.raises(ValueError, match="Cannot convert '3' to a shape."):
        tf.keras.Input(3)


def test_tensor_protocol_converts():
    class Wrapped:
        def __init__(self, v):
            self.v = v

        def __tf_tensor__(self, dtype=None, name=None):
            return tf.constant(self.v)

    class Bad:
        def __tf_tensor__(self, dtype=None, name=None):
            return 3

    assert tf.add(Wrapped([1., 2.]), 1.).numpy().tolist() == [2., 3.]
    assert tf.convert_to_tensor(Wrapped(4)).numpy() == 4
    with pytest.raises(TypeError, match="returned <class 'int'>, not a "
                                        "tensor"):
        tf.convert_to_tensor(Bad())


def test_saved_model_constants():
    sm = tf.saved_model
    assert sm.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
    assert (sm.SERVING, sm.TRAINING) == ("serve", "train")
    assert sm.PREDICT_METHOD_NAME == "tensorflow/serving/predict"


def test_saved_signature_under_the_default_key(tmp_path):
    m = tf.Module()
    m.f = tf.function(lambda x: {"output": x + 2.},
                      input_signature=[tf.TensorSpec([], tf.float32)])
    tf.saved_model.save(m, str(tmp_path / "m"), signatures={
        tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: m.f})
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    sig = loaded.signatures[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
    assert float(sig(tf.constant(5.))["output"]) == 7.


def _model():
    m = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    m.compile("sgd", "mse", metrics=["mae"])
    return m


def test_batch_end_logs_are_python_floats():
    seen = []

    class Log(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(logs)

    _model().fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=2,
                 callbacks=[Log()], verbose=0)
    assert len(seen) == 2
    for logs in seen:
        assert list(logs) == ["loss", "mae"]
        assert all(type(v) is float for v in logs.values())


def test_fit_refuses_python_numbers_as_keras_3():
    m = _model()
    with pytest.raises(ValueError, match=r"Unrecognized data type: "
                                         r"x=\[1, 2, 3\] \(of type "
                                         r"<class 'list'>\)"):
        m.fit([1, 2, 3], [0., 0., 1.], verbose=0)
    with pytest.raises(ValueError, match="Unrecognized data type"):
        m.predict([[1., 2.]], verbose=0)
    # Arrays, tensors and lists of arrays are data.
    m.fit(np.ones((3, 2)), tf.zeros([3, 1]), verbose=0)


def test_keras_2_train_step_through_compiled_loss_and_metrics():
    """A Keras 2 train_step override (migrate/migrating_estimator): TF
    2.21's numbers, fit with shuffle=False. Keras 3's compiled_metrics
    shim gives the loss tracker y_pred, so 'loss' is the predictions'
    mean; the compiled metrics take (y, y_pred)."""
    class CustomModel(tf.keras.Sequential):
        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                p = self(x, training=True)
                loss = self.compiled_loss(y, p)
            g = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(g, self.trainable_variables))
            self.compiled_metrics.update_state(y, p)
            return {m.name: m.result() for m in self.metrics}

    m = CustomModel([tf.keras.layers.Dense(1, kernel_initializer="ones")])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse",
              metrics=["mae"])
    x = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32)
    y = np.array([[1.], [2.], [3.]], np.float32)
    with pytest.warns(UserWarning, match="deprecated"):
        h = m.fit(x, y, batch_size=1, epochs=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(h.history["loss"], [5.3947, 1.5291],
                               atol=1e-4)
    np.testing.assert_allclose(h.history["mae"], [3.3947, 0.4709],
                               atol=1e-4)


def test_category_encoding_one_hot_shapes_and_sparse_output():
    one_hot = tf.keras.layers.CategoryEncoding(3, output_mode="one_hot")
    # Keras 3: a rank-1 batch of ids is (batch, n); a trailing 1 goes.
    assert one_hot(tf.constant([1])).numpy().tolist() == [[0., 1., 0.]]
    assert one_hot(tf.constant([[1], [2]])).shape == (2, 3)
    assert one_hot(tf.constant(1)).shape == (1, 3)
    assert one_hot(tf.constant([[1, 2]])).shape == (1, 2, 3)
    multi = tf.keras.layers.CategoryEncoding(3, output_mode="multi_hot")
    assert multi(tf.constant([1])).shape == (3,)
    x = tf.keras.Input(shape=(), dtype="int64")
    assert one_hot(x).shape == (None, 3)
    count = tf.keras.layers.CategoryEncoding(20, output_mode="count",
                                             sparse=True)
    st = count(tf.constant([[5, 11, 5, 17, 17]]),
               count_weights=tf.constant([[0.5, 1.5, 0.7, 1.8, 0.2]]))
    assert isinstance(st, tf.SparseTensor)
    assert st.indices.numpy().tolist() == [[0, 5], [0, 11], [0, 17]]
    np.testing.assert_allclose(st.values.numpy(), [1.2, 1.5, 2.], rtol=1e-6)
    assert st.dense_shape.numpy().tolist() == [1, 20]
    # A Dense layer takes it as the dense counts.
    dense = tf.keras.layers.Dense(2, use_bias=False)
    np.testing.assert_allclose(dense(st).numpy(),
                               dense(tf.sparse.to_dense(st)).numpy(),
                               rtol=1e-6)


def test_discretization_with_bin_boundaries():
    d = tf.keras.layers.Discretization(bin_boundaries=[0., 1., 2.])
    got = d(np.array([[-1.5, 1.0, 3.4, .5], [0.0, 3.0, 1.3, 0.0]]))
    assert got.dtype == tf.int32
    assert got.numpy().tolist() == [[0, 2, 3, 1], [1, 3, 2, 1]]
    hot = tf.keras.layers.Discretization(bin_boundaries=[0., 1.],
                                         output_mode="one_hot")
    assert hot([0.5, 2.]).numpy().tolist() == [[0., 1., 0.], [0., 0., 1.]]
    count = tf.keras.layers.Discretization(bin_boundaries=[0., 1.],
                                           output_mode="count")
    assert count([[0.5, 2., 3.]]).numpy().tolist() == [[0., 1., 2.]]
    assert hot(tf.keras.Input((3,))).shape == (None, 3, 3)
    with pytest.raises(ValueError, match="Both `num_bins` and "
                                         "`bin_boundaries`"):
        tf.keras.layers.Discretization(bin_boundaries=[0.], num_bins=3)
    with pytest.raises(ValueError, match="Unknown value for `output_mode`"):
        tf.keras.layers.Discretization(bin_boundaries=[0.], output_mode="x")
    with pytest.raises(NotImplementedError, match="bin_boundaries"):
        tf.keras.layers.Discretization(num_bins=4)


def test_cluster_spec():
    c = tf.train.ClusterSpec({"worker": ["localhost:1", "localhost:2"],
                              "ps": {3: "h:3"}})
    # TF 2.21's repr sorts the jobs; as_dict and jobs keep their order.
    assert repr(c) == ("ClusterSpec({'ps': {3: 'h:3'}, 'worker': "
                       "['localhost:1', 'localhost:2']})")
    assert c.as_dict() == {"worker": ["localhost:1", "localhost:2"],
                           "ps": {3: "h:3"}}
    assert c.jobs == ["worker", "ps"] and c.num_tasks("worker") == 2
    assert c.task_indices("ps") == [3]
    assert c.task_address("worker", 1) == "localhost:2"
    assert c.job_tasks("ps") == [None, None, None, "h:3"]
    assert c == tf.train.ClusterSpec(c) and bool(c)
    assert not tf.train.ClusterSpec({})
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        c.num_tasks("chief")
    with pytest.raises(ValueError, match="No task with index 5"):
        c.task_address("worker", 5)
    with pytest.raises(TypeError, match="must be a dictionary"):
        tf.train.ClusterSpec(3)
    with pytest.raises(TypeError, match="must be a list or a dictionary"):
        tf.train.ClusterSpec({"w": "abc"})


def test_clone_model_new_layers_same_architecture():
    seq = tf.keras.Sequential([tf.keras.Input((3,)),
                               tf.keras.layers.Dense(4, name="d1"),
                               tf.keras.layers.Dense(2, name="d2")],
                              name="s")
    c = tf.keras.models.clone_model(seq)
    assert type(c).__name__ == "Sequential" and c.name == "s"
    assert [l.name for l in c.layers] == ["d1", "d2"]
    assert [tuple(w.shape) for w in c.weights] == [(3, 4), (4,), (4, 2),
                                                   (2,)]
    assert all(a is not b for a, b in zip(c.weights, seq.weights))
    # Functional: a shared layer is cloned once (TF 2.21: names
    # ['x', 'sh', 'o'], 4 weights, clone_function called for sh and o).
    inp = tf.keras.Input((3,), name="x")
    shared = tf.keras.layers.Dense(3, name="sh")
    out = tf.keras.layers.Dense(1, name="o")(shared(shared(inp)))
    f = tf.keras.Model(inp, out, name="f")
    seen = []

    def clone(layer):
        seen.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    g = tf.keras.models.clone_model(f, clone_function=clone)
    assert [l.name for l in g.layers] == ["x", "sh", "o"]
    assert len(g.weights) == 4 and seen == ["sh", "o"]
    assert g(np.ones((2, 3), np.float32)).shape == (2, 1)
    # Copying the weights makes the clone compute the same numbers.
    g.set_weights(f.get_weights())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(g(x).numpy(), f(x).numpy(), rtol=1e-6)

    class Sub(tf.keras.Model):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.d = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.d(x)

    with pytest.raises(ValueError, match="only supported for Sequential "
                                         "models or Functional models"):
        tf.keras.models.clone_model(Sub(), clone_function=clone)


def _guide_check():
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "tools", "guide_check.py")
    spec = importlib.util.spec_from_file_location("guide_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_guide_check_rules_added_for_the_migration_guides():
    g = _guide_check()
    assert g.for_tfmini("import tensorflow.compat.v1 as tf1\n"
                        "  import tensorflow.experimental.numpy as tnp") == \
        ("import tfmini.compat.v1 as tf1\n"
         "  import tfmini.experimental.numpy as tnp")
    # A dropped shell line takes its backslash continuations along.
    nb = {"cells": [
        {"cell_type": "code", "source": [
            "x = 1\n", "!saved_model_cli run --dir d \\\n",
            " --signature_def serving_default \\\n", " --input_exprs a=1\n",
            "print(x)"]},
        {"cell_type": "code", "source": [
            "(a, b), (c, d) = fashion_mnist.load_data()"]},
        {"cell_type": "code", "source": ["mnist.load_data()"]}]}
    assert g.cells_of(nb) == ["x = 1\nprint(x)"]
