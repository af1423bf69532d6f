"""One nest everywhere (issue 14): tf.function, tf.cond, tf.while_loop,
the tape, tf.data and Keras walk structures as tf.nest does (dicts by
sorted key, namedtuples kept), as TF does."""
import collections

import numpy as np
import pytest

import tfmini as tf

Pair = collections.namedtuple("Pair", "left right")


def _c(x):
    return tf.constant(x, tf.float32)


# ---- tf.function ---------------------------------------------------------

def test_function_dict_outputs_flat_in_sorted_key_order():
    @tf.function(autograph=False)
    def f(x):
        return {"z": x + 1.0, "a": x * 2.0, "m": [x - 1.0]}

    x = _c([1.0, 2.0])
    out = f(x)
    assert list(out) == ["z", "a", "m"]          # the function's order
    np.testing.assert_allclose(out["z"], [2.0, 3.0])
    np.testing.assert_allclose(out["a"], [2.0, 4.0])
    np.testing.assert_allclose(out["m"][0], [0.0, 1.0])
    c = f.get_concrete_function(x)
    # The flat outputs are a, m, z, as TF's nest orders them.
    got = c(x)
    assert list(got) == ["z", "a", "m"]
    np.testing.assert_allclose(got["a"], [2.0, 4.0])
    assert [o.name.split(":")[0] for o in c.outputs] == ["mul", "sub", "add"]


def test_function_dict_inputs_by_sorted_key():
    @tf.function(autograph=False)
    def f(d):
        return d["b"] - d["a"]

    r1 = f({"a": _c(1.0), "b": _c(5.0)})
    r2 = f({"b": _c(7.0), "a": _c(2.0)})     # same signature: no retrace
    assert float(r1) == 4.0 and float(r2) == 5.0
    assert f.experimental_get_tracing_count() == 1
    c = f.get_concrete_function({"b": _c(0.0), "a": _c(0.0)})
    assert float(c(_c(1.0), _c(10.0))) == 9.0   # flat: a, then b


def test_saved_function_with_unsorted_dict_outputs(tmp_path):
    # The loaded function used to swap the values of 'z' and 'a'.
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2])], autograph=False)
        def f(self, x):
            return {"z": x + 1.0, "a": x * 2.0}

    m = M()
    tf.saved_model.save(m, str(tmp_path), signatures={"serving": m.f})
    loaded = tf.saved_model.load(str(tmp_path))
    x = _c([1.0, 2.0])
    for out in (loaded.f(x), loaded.signatures["serving"](x=x)):
        np.testing.assert_allclose(out["z"], [2.0, 3.0])
        np.testing.assert_allclose(out["a"], [2.0, 4.0])


# ---- tf.cond and tf.while_loop --------------------------------------------

@pytest.mark.parametrize("traced", [False, True])
def test_namedtuple_through_cond_and_while_loop(traced):
    def run(x):
        p = tf.cond(x > 0.0, lambda: Pair(x, {"y": x, "b": 2.0 * x}),
                    lambda: Pair(-x, {"y": -x, "b": x}))
        i, q = tf.while_loop(
            lambda i, q: i < 3,
            lambda i, q: (i + 1, Pair(q.left + 1.0,
                                      {"y": q.right["y"] * 2.0,
                                       "b": q.right["b"]})),
            (tf.constant(0), p))
        return q

    fn = tf.function(run, autograph=False) if traced else run
    q = fn(_c(1.5))
    assert isinstance(q, Pair)
    assert list(q.right) == ["y", "b"]
    assert float(q.left) == 4.5
    assert float(q.right["y"]) == 12.0 and float(q.right["b"]) == 3.0


def test_while_loop_dict_shape_invariants_by_key():
    @tf.function(autograph=False)
    def f():
        init = {"z": tf.zeros([0]), "a": tf.constant(0)}
        out = tf.while_loop(
            lambda d: d["a"] < 3,
            lambda d: {"z": tf.concat([d["z"], [1.0]], 0), "a": d["a"] + 1},
            [init], shape_invariants=[{"a": tf.TensorShape([]),
                                       "z": tf.TensorShape([None])}])
        return out[0]["z"]

    np.testing.assert_allclose(f(), [1.0, 1.0, 1.0])


def test_cond_dict_keys_must_match():
    with pytest.raises(TypeError, match="same set of keys"):
        tf.function(lambda x: tf.cond(x > 0, lambda: {"a": x},
                                      lambda: {"b": x}),
                    autograph=False)(_c(1.0))


# ---- the tape ------------------------------------------------------------

def test_gradient_sources_dict_and_namedtuple():
    v, w = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as t:
        y = v * w
    g = t.gradient(y, {"w": w, "v": v})
    assert list(g) == ["w", "v"]
    assert float(g["w"]) == 2.0 and float(g["v"]) == 3.0
    p = t.gradient(y, Pair(v, [w]))
    assert isinstance(p, Pair) and float(p.left) == 3.0 and \
        float(p.right[0]) == 2.0


# ---- tf.data -------------------------------------------------------------

def test_dataset_dict_elements_and_batches():
    ds = tf.data.Dataset.from_tensor_slices(
        {"z": np.arange(4.0), "a": np.arange(4) * 10})
    first = next(iter(ds))
    assert list(first) == ["z", "a"]
    assert float(first["z"]) == 0.0 and int(first["a"]) == 0
    b = next(iter(ds.batch(3)))
    np.testing.assert_allclose(b["a"], [0, 10, 20])
    m = next(iter(ds.map(lambda d: {"s": d["z"] * 2.0}).batch(2)))
    np.testing.assert_allclose(m["s"], [0.0, 2.0])


def test_dataset_namedtuple_survives_batch_of_unbatched():
    ds = tf.data.Dataset.from_tensor_slices(
        Pair(np.arange(4.0), np.arange(4.0) + 1.0))
    b = next(iter(ds.map(lambda left, right: Pair(left, right)).batch(2)))
    assert isinstance(b, Pair)
    np.testing.assert_allclose(b.right, [1.0, 2.0])


def test_dataset_list_is_one_value():
    # tf.data reads a list as a tensor, not a structure (TF's rule).
    ds = tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]])
    assert next(iter(ds)).shape == (2,)


# ---- Keras ---------------------------------------------------------------

def test_functional_dict_inputs_matched_by_key():
    keras = tf.keras
    inputs = {"b": keras.Input(shape=(1,)), "a": keras.Input(shape=(2,))}
    out = keras.layers.Concatenate()([inputs["a"], inputs["b"]])
    model = keras.Model(inputs, out)
    assert [tuple(t.shape) for t in model.inputs] == [(None, 2), (None, 1)]
    got = model({"a": np.ones((1, 2), "float32"),
                 "b": np.zeros((1, 1), "float32")})
    np.testing.assert_allclose(got, [[1.0, 1.0, 0.0]])


def _deep(x, n):
    for _ in range(n):
        x = [x]
    return x


@pytest.mark.parametrize("make", [
    lambda x: {(2, "k"): [x, None], (1, "z"): x, (0, "p"): Pair(x, {"q": x})},
    lambda x: {3: x, 1: [x], 2: None},
    lambda x: [{"b": x}] * 3 + [()],
    lambda x: _deep(x, 40),      # deeper than the compiler goes
    lambda x: {f"k{i}": x + float(i) for i in range(5000, 0, -1)},
])
def test_function_nested_outputs_same_on_cached_calls(make):
    # The cached call packs with code compiled from the structure (or,
    # past its size limits, by walking it): same result as the trace.
    f = tf.function(make, autograph=False)
    x = _c(2.0)
    first, again = f(x), f(x)
    want = make(x)
    assert type(again) is type(want)
    tf.nest.assert_same_structure(again, want)
    tf.nest.assert_same_structure(first, want)
    if isinstance(want, dict):
        assert list(again) == list(want)
    for a, w in zip(tf.nest.flatten(again), tf.nest.flatten(want)):
        assert (a is None and w is None) or float(a) == float(w)


def test_saving_a_signature_with_nested_outputs_names_the_structure(tmp_path):
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x):
            return {"a": {"b": x}}

    m = M()
    with pytest.raises(ValueError, match=r"flat dict of them; got "
                       r"Dict\[\['a', Dict\[\['b', TensorSpec"):
        tf.saved_model.save(m, str(tmp_path / "m"), signatures=m.f)
