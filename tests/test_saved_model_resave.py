"""A loaded saved model saves again: load -> save -> load keeps its
functions (every saved trace), variables, signatures and object tree,
as TF 2.21 does (checked against /work/tfvenv's TF)."""
import numpy as np
import pytest

import tfmini as tf

F32 = tf.float32


def spec(shape):
    return tf.TensorSpec(shape, F32)


class Scale(tf.Module):
    def __init__(self, v=2.0):
        super().__init__()
        self.v = tf.Variable(v)

    @tf.function(input_signature=[spec([None])])
    def f(self, x):
        return x * self.v


def roundtrip(obj, tmp_path, name, **kw):
    tf.saved_model.save(obj, str(tmp_path / name), **kw)
    return tf.saved_model.load(str(tmp_path / name))


def test_resave_keeps_functions_variables_and_signatures(tmp_path):
    m1 = roundtrip(Scale(), tmp_path, "a")
    m2 = roundtrip(m1, tmp_path, "b")
    x = tf.constant([1., 2.])
    assert m2.f(x).numpy().tolist() == m1.f(x).numpy().tolist() == [2., 4.]
    assert float(m2.v) == 2.0 and len(m2.variables) == 1
    # TF 2.21: the loaded object's signatures are saved with it.
    assert list(m2.signatures) == ["serving_default"]
    out = m2.signatures["serving_default"](x=tf.constant([3.]))
    assert out["output_0"].numpy().tolist() == [6.]
    # The re-saved function still reads the variable, not a copy.
    m2.v.assign(10.)
    assert m2.f(x).numpy().tolist() == [10., 20.]
    assert m2.signatures["serving_default"](x=x)["output_0"].numpy(
        ).tolist() == [10., 20.]
    # and a third generation, from the second
    m3 = roundtrip(m2, tmp_path, "c")
    assert m3.f(x).numpy().tolist() == [10., 20.]
    assert list(m3.signatures) == ["serving_default"]
    assert sorted(vars(m3)) == sorted(vars(m1))


def test_assign_after_load_is_saved(tmp_path):
    m1 = roundtrip(Scale(), tmp_path, "a")
    m1.v.assign(5.)
    m2 = roundtrip(m1, tmp_path, "b")
    assert float(m2.v) == 5.
    assert m2.f(tf.constant([1.])).numpy().tolist() == [5.]


def test_every_trace_and_shared_variables(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(3.)

        @tf.function
        def f(self, x, scale=1.):
            return x * self.v * scale

        @tf.function
        def g(self, x):
            return {"a": x + self.v, "b": [x - self.v]}

    m = M()
    m.f(tf.constant(1.))
    m.f(tf.constant([1., 2.]), scale=2.)
    m.g(tf.constant([[1.]]))
    m1 = roundtrip(m, tmp_path, "a")
    m2 = roundtrip(m1, tmp_path, "b")
    assert len(m2.f.concrete_functions) == 2
    assert float(m2.f(tf.constant(4.))) == float(m1.f(tf.constant(4.))) == 12.
    assert m2.f(tf.constant([1., 2.]), scale=2.).numpy().tolist() == [6., 12.]
    out = m2.g(tf.constant([[1.]]))
    assert out["a"].numpy().tolist() == [[4.]]
    assert out["b"][0].numpy().tolist() == [[-2.]]
    # one variable, read by both functions: saved once
    assert len(m2.variables) == 1
    m2.v.assign(1.)
    assert float(m2.f(tf.constant(4.))) == 4.
    assert m2.g(tf.constant([[1.]]))["a"].numpy().tolist() == [[2.]]
    with pytest.raises(ValueError, match="Could not find matching"):
        m2.f(tf.constant([1., 2., 3.]), scale=5.)


def test_nested_objects_lists_and_dicts(tmp_path):
    root = tf.Module()
    root.child = Scale(3.)
    root.items = [Scale(4.), {"k": Scale(5.)}]
    root.w = tf.Variable([1., 1.])
    m1 = roundtrip(root, tmp_path, "a")
    m2 = roundtrip(m1, tmp_path, "b")
    x = tf.constant([1.])
    for a, b, want in ((m1.child, m2.child, 3.),
                       (m1.items[0], m2.items[0], 4.),
                       (m1.items[1]["k"], m2.items[1]["k"], 5.)):
        assert b.f(x).numpy().tolist() == a.f(x).numpy().tolist() == [want]
        assert float(b.v) == want
    assert m2.w.numpy().tolist() == [1., 1.]
    assert len(m2.variables) == 4


def test_loaded_object_inside_a_new_module(tmp_path):
    m1 = roundtrip(Scale(), tmp_path, "a")
    m1.v.assign(7.)
    w = tf.Module()
    w.inner = m1
    w.extra = tf.Variable(1.)

    @tf.function(input_signature=[spec([None])])
    def plus(x):
        # a new function reading the loaded variable: one variable saved
        return x + w.extra + w.inner.v

    w.plus = plus
    w2 = roundtrip(w, tmp_path, "b")
    x = tf.constant([1., 2.])
    assert w2.inner.f(x).numpy().tolist() == [7., 14.]
    assert w2.plus(x).numpy().tolist() == [9., 10.]
    assert len(w2.variables) == 2
    # TF 2.21: the new root's one signature, and the inner object's own
    # signatures kept on it.
    assert list(w2.signatures) == ["serving_default"]
    assert list(w2.inner.signatures) == ["serving_default"]
    got = w2.inner.signatures["serving_default"](x=x)["output_0"]
    assert got.numpy().tolist() == [7., 14.]
    # the inner functions and signature share the variable
    w2.inner.v.assign(1.)
    assert w2.inner.f(x).numpy().tolist() == [1., 2.]
    assert w2.plus(x).numpy().tolist() == [3., 4.]
    assert w2.inner.signatures["serving_default"](x=x)[
        "output_0"].numpy().tolist() == [1., 2.]


def test_loaded_functions_and_signatures_as_new_signatures(tmp_path):
    m1 = roundtrip(Scale(), tmp_path, "a")
    x = tf.constant([2.])
    for name, sig in (("c", m1.f.concrete_functions[0]),
                      ("r", m1.f),
                      ("s", m1.signatures["serving_default"])):
        m2 = roundtrip(m1, tmp_path, name, signatures={"k": sig})
        assert list(m2.signatures) == ["k"]
        out = m2.signatures["k"](x=x)
        assert out["output_0"].numpy().tolist() == [4.], name
        assert m2.f(x).numpy().tolist() == [4.]


def test_unknown_rank_traces_resave(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(2.)

        @tf.function(input_signature=[spec(None)])
        def f(self, x):
            return x * self.v

    m = M()
    m.f(tf.ones([1] * 3))
    m1 = roundtrip(m, tmp_path, "a")
    m2 = roundtrip(m1, tmp_path, "b")
    for rank in (0, 1, 2, 3):
        x = tf.ones([2] * rank)
        assert np.array_equal(m2.f(x).numpy(), m1.f(x).numpy())
        assert m2.f(x).numpy().sum() == 2. * 2 ** rank
    with pytest.raises(ValueError, match=r"ranks \[5\]"):
        m2.f(tf.ones([1] * 5))
    sig = m2.signatures["serving_default"]
    assert sig.structured_outputs == {
        "output_0": tf.TensorSpec(None, F32, "output_0")}
    assert sig(x=tf.constant(3.))["output_0"].numpy() == 6.
    assert sig(x=tf.ones([2, 2]))["output_0"].numpy().tolist() == \
        [[2., 2.], [2., 2.]]


@tf.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return tf.clip_by_norm(dy, 0.5)
    return y, backward


def test_custom_gradient_resaves(tmp_path):
    class M(tf.Module):
        @tf.function(input_signature=[spec([])])
        def call(self, x):
            return clip_gradients(x)

    m1 = roundtrip(M(), tmp_path, "a")
    m2 = roundtrip(m1, tmp_path, "b")
    for m in (m1, m2):
        x = tf.constant(3.)
        assert float(m.call(x)) == 3.
        with tf.GradientTape() as t:
            t.watch(x)
            y = 4.0 * m.call(x)
        assert float(t.gradient(y, x)) == 0.5   # clipped, not 4.0
    # SaveOptions(experimental_custom_gradients=False): the plain one
    m3 = roundtrip(m1, tmp_path, "c", options=tf.saved_model.SaveOptions(
        experimental_custom_gradients=False))
    x = tf.constant(3.)
    with tf.GradientTape() as t:
        t.watch(x)
        y = 4.0 * m3.call(x)
    assert float(t.gradient(y, x)) == 4.0


def test_refused_signature_names_the_function(tmp_path):
    class M(tf.Module):
        @tf.function
        def f(self, x):
            return x + 1.

    m = M()
    m.f(tf.constant(1.))
    m.f(tf.constant([1.]))
    m1 = roundtrip(m, tmp_path, "a")
    with pytest.raises(ValueError, match="loaded tf.function 'f', which "
                                         "has 2 saved traces"):
        tf.saved_model.save(m1, str(tmp_path / "b"),
                            signatures={"s": m1.f})


def test_loaded_keras_model_resaves(tmp_path):
    model = tf.keras.Sequential([tf.keras.Input((3,)),
                                 tf.keras.layers.Dense(4, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    want = model(x).numpy()
    m1 = roundtrip(model, tmp_path, "a")
    m2 = roundtrip(m1, tmp_path, "b")
    np.testing.assert_allclose(m2(x).numpy(), m1(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(m2(x).numpy(), want, rtol=1e-6)
    out = m2.signatures["serving_default"](inputs=tf.constant(x))
    np.testing.assert_allclose(out["output_0"].numpy(), want, rtol=1e-6)
    assert len(m2.variables) == 4


def test_calling_a_loaded_function_in_a_new_trace_is_refused(tmp_path):
    # tfmini does not inline a loaded graph into a caller's trace; running
    # it at trace time would bake in one result, so it is refused by name
    # rather than silently saved as a constant.
    m1 = roundtrip(Scale(), tmp_path, "a")
    x = tf.constant([1.])
    calls = {"f": lambda: m1.f(x),
             "ConcreteFunction 'f'": lambda: m1.f.concrete_functions[0](x),
             "signature 'serving_default'":
                 lambda: m1.signatures["serving_default"](x=x)}
    for what, call in calls.items():
        g = tf.function(call)
        with pytest.raises(NotImplementedError,
                           match=f"{what}.*loaded from a SavedModel"):
            g()
    # eager calls still run
    assert m1.f(x).numpy().tolist() == [2.]


def test_c_runtime_serves_a_resaved_model(tmp_path):
    # examples/c/predict.c (no Python) runs the re-saved signature.
    from test_c_runtime import ROOT, _compile, _outputs, _run
    tf.random.set_seed(3)
    model = tf.keras.Sequential([tf.keras.Input((4,)),
                                 tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(3)])
    m1 = roundtrip(model, tmp_path, "a")
    m1.variables[0].assign(m1.variables[0] * 2.)     # saved as changed
    m2 = roundtrip(m1, tmp_path, "b")
    x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
    predict = _compile(ROOT / "examples" / "c" / "predict.c",
                       tmp_path / "predict")
    r = _run([predict, tmp_path / "b"] + [repr(float(v)) for v in x.ravel()])
    assert r.returncode == 0, r.stderr
    want = m1(x).numpy()
    np.testing.assert_allclose(m2(x).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(_outputs(r.stdout)["output_0"], want,
                               rtol=1e-5, atol=1e-6)


def test_loaded_get_concrete_function_takes_tensor_specs(tmp_path):
    # TF 2.21: m.f.get_concrete_function(tf.TensorSpec([None])) on a
    # loaded function is its saved trace, which re-saves as a signature.
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def f(self, x):
            return x * 2.0
    tf.saved_model.save(M(), str(tmp_path / "a"))
    m = tf.saved_model.load(str(tmp_path / "a"))
    cf = m.f.get_concrete_function(tf.TensorSpec([None], tf.float32))
    assert m.f.get_concrete_function(tf.TensorSpec([3], tf.float32)) is cf
    assert m.f.get_concrete_function(tf.constant([1.0])) is cf
    for bad in (tf.TensorSpec([None], tf.int32),
                tf.TensorSpec([None, 2], tf.float32)):
        with pytest.raises(ValueError, match="no saved trace"):
            m.f.get_concrete_function(bad)
    tf.saved_model.save(m, str(tmp_path / "b"),
                        signatures={"serving_default": cf})
    sig = tf.saved_model.load(str(tmp_path / "b")).signatures[
        "serving_default"]
    assert sig(x=tf.constant([3.0]))["output_0"].numpy().tolist() == [6.0]
