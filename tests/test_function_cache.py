"""The signature cache: what a key is made of, and that the C call path
(positional calls) and the Python path (everything else) agree on it."""
import collections
import gc

import numpy as np
import pytest

import tfmini as tf


def c(x, dtype=None):
    return tf.constant(x, dtype=dtype)


def counting(body):
    calls = []

    def wrapped(*a, **k):
        calls.append(1)
        return body(*a, **k)
    f = tf.function(wrapped)
    return f, calls


def test_positional_keyword_and_default_calls_share_a_trace():
    @tf.function
    def f(x, y=2.0, *, scale=1.0):
        return (x + y) * scale

    x = c(1.0)
    assert f(x).numpy() == 3.0
    assert f(x, 2.0).numpy() == 3.0
    assert f(x, y=2.0).numpy() == 3.0
    assert f(y=2.0, x=x).numpy() == 3.0
    assert f(x, scale=1.0).numpy() == 3.0
    assert f.experimental_get_tracing_count() == 1
    assert f(x, scale=2.0).numpy() == 6.0
    assert f.experimental_get_tracing_count() == 2
    # One C-cache key per canonical signature, however the call was made.
    assert f._cache_size() == 2


def test_varargs_and_kwargs():
    @tf.function
    def f(x, *rest, **opts):
        total = x
        for r in rest:
            total = total + r
        return total * opts.get("k", 1.0)

    assert f(c(1.0)).numpy() == 1.0
    assert f(c(1.0), c(2.0), c(3.0)).numpy() == 6.0
    assert f(c(5.0), c(2.0), c(3.0)).numpy() == 10.0
    assert f(c(1.0), c(2.0), k=2.0).numpy() == 6.0
    assert f.experimental_get_tracing_count() == 3
    names = [o.name for o in f.get_concrete_function(
        c(1.0), c(2.0), c(3.0)).graph.get_operations()
        if o.type == "Placeholder"]
    assert names == ["x", "rest_0", "rest_1"]


def test_required_keyword_only_parameters_use_the_python_path():
    @tf.function
    def f(x, *, k):
        return x * k

    assert f(c(2.0), k=3.0).numpy() == 6.0
    assert f(c(2.0), k=3.0).numpy() == 6.0
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError):
        f(c(2.0))


def test_binding_errors_are_python_type_errors():
    @tf.function
    def f(x, y):
        return x

    with pytest.raises(TypeError):
        f(c(1.0))
    with pytest.raises(TypeError):
        f(c(1.0), c(1.0), c(1.0))
    with pytest.raises(TypeError):
        f(c(1.0), z=1)


def test_numpy_arrays_are_tensors_keyed_by_dtype_and_shape():
    f, calls = counting(lambda x: x * 2)
    np.testing.assert_allclose(f(np.array([1.0, 2.0], np.float32)).numpy(),
                               [2.0, 4.0])
    np.testing.assert_allclose(f(np.array([3.0, 4.0], np.float32)).numpy(),
                               [6.0, 8.0])
    assert len(calls) == 1
    f(np.array([1.0, 2.0]))                # float64: another trace
    f(np.array([1.0, 2.0, 3.0], np.float32))
    assert len(calls) == 3
    r = f(np.float32(2.0))                  # NumPy scalars too
    assert r.dtype == tf.float32 and r.numpy() == 4.0
    f(np.float32(5.0))
    assert len(calls) == 4


def test_python_primitives_by_value_and_type():
    f, calls = counting(lambda x: c(1))
    for v in [1, 1, 2, 1.0, True, False, None, "s", "s", "t", 2 ** 70,
              2 ** 70, 2 ** 71, float("nan")]:
        f(v)
    # 1, 2, 1.0, True, False, None, "s", "t", 2**70, 2**71, nan
    assert len(calls) == 11


def test_nested_structures():
    f, calls = counting(lambda s: c(0))
    f([c(1.0), (c(2.0), 3)])
    f([c(5.0), (c(6.0), 3)])
    assert len(calls) == 1
    f([c(1.0), (c(2.0), 4)])
    f([c(1.0), [c(2.0), 3]])
    f([c(1.0), (c(2.0), 3), None])
    assert len(calls) == 4


def test_dicts_regardless_of_key_order():
    f, calls = counting(lambda d: d["a"] - d["b"])
    assert f({"a": c(5.0), "b": c(2.0)}).numpy() == 3.0
    assert f({"b": c(2.0), "a": c(7.0)}).numpy() == 5.0
    assert len(calls) == 1
    f({"a": c(5.0), "c": c(2.0), "b": c(1.0)})
    assert len(calls) == 2


def test_namedtuples_are_keyed_by_type():
    P = collections.namedtuple("P", "a b")
    Q = collections.namedtuple("Q", "a b")
    f, calls = counting(lambda p: p[0] * p[1])
    assert f(P(c(2.0), c(3.0))).numpy() == 6.0
    assert f(P(c(4.0), c(3.0))).numpy() == 12.0
    f(Q(c(2.0), c(3.0)))
    f((c(2.0), c(3.0)))
    assert len(calls) == 3


class Thing:
    def __init__(self, k):
        self.k = k


def test_other_objects_by_identity():
    f, calls = counting(lambda t, x: x * t.k)
    a, b = Thing(2.0), Thing(2.0)
    assert f(a, c(1.0)).numpy() == 2.0
    assert f(a, c(3.0)).numpy() == 6.0
    assert len(calls) == 1
    assert f(b, c(1.0)).numpy() == 2.0
    assert len(calls) == 2


def test_identity_keys_are_held_weakly():
    f, calls = counting(lambda t, x: x * t.k)
    t = Thing(2.0)
    f(t, c(1.0))
    assert f._cache_size() == 1 and len(f._concretes) == 1
    del t
    gc.collect()
    assert f._cache_size() == 0 and len(f._concretes) == 0
    assert f.pretty_printed_concrete_signatures() == ""


def test_objects_that_cannot_be_weakly_referenced():
    f, calls = counting(lambda t, x: x)
    o = object()
    f(o, c(1.0))
    f(o, c(1.0))
    assert len(calls) == 1
    f(object(), c(1.0))
    assert len(calls) == 2


def test_unhashable_objects():
    class Unhashable:
        __hash__ = None

    f, calls = counting(lambda t, x: x)
    u = Unhashable()
    f(u, c(1.0))
    f(u, c(2.0))
    assert len(calls) == 1


def test_deep_nesting_is_an_error_not_a_crash():
    v = []
    for _ in range(200):
        v = [v]
    f = tf.function(lambda s: c(0))
    with pytest.raises((ValueError, RecursionError)):
        f(v)


def test_tensor_values_do_not_matter():
    f, calls = counting(lambda x: x + 1)
    for i in range(20):
        assert f(c(i)).numpy() == i + 1
    assert len(calls) == 1


def test_signature_aliases_are_bounded():
    @tf.function(input_signature=[tf.TensorSpec([None])])
    def g(x):
        return x

    for n in range(1, 400):
        g(c(np.ones(n, np.float32)))
    assert g.experimental_get_tracing_count() == 1
    assert g._cache_size() <= 256
    assert g(c(np.ones(3, np.float32))).shape == (3,)


def test_callable_objects_and_lambdas():
    class Doubler:
        def __call__(self, x):
            return x * 2.0

    f = tf.function(Doubler())
    assert f(c(2.0)).numpy() == 4.0
    g = tf.function(lambda x, y=3.0: x * y)
    assert g(c(2.0)).numpy() == 6.0
    assert g(c(2.0), 4.0).numpy() == 8.0


def test_many_outputs_and_inputs():
    @tf.function
    def f(*xs):
        return [x + 1.0 for x in xs]

    xs = [c(float(i)) for i in range(40)]
    for _ in range(2):
        out = f(*xs)
        assert [o.numpy() for o in out] == [i + 1.0 for i in range(40)]


def test_a_big_graph_runs():
    @tf.function
    def f(x):
        for _ in range(300):
            x = x * 1.0 + 1.0
        return x

    assert f(c(0.0)).numpy() == 300.0
    assert f(c(1.0)).numpy() == 301.0


def test_keyword_calls_take_the_c_path():
    @tf.function
    def f(x, y=1.0, *, training=False):
        return x * y if training else x

    x = c(2.0)
    f(x, training=True)
    f(x, y=3.0, training=True)
    size = f._cache_size()
    hits = f._take_calls()
    for _ in range(5):
        assert f(x, training=True).numpy() == 2.0
        assert f(y=3.0, x=x, training=True).numpy() == 6.0
    assert hits == 0 and f._take_calls() == 10   # all ten were C hits
    assert f._cache_size() == size


def test_positional_only_and_duplicate_arguments():
    @tf.function
    def f(x, /, y):
        return x + y

    assert f(c(1.0), y=c(2.0)).numpy() == 3.0
    with pytest.raises(TypeError):
        f(x=c(1.0), y=c(2.0))
    with pytest.raises(TypeError):
        f(c(1.0), c(2.0), y=c(2.0))
    with pytest.raises(TypeError):
        f(c(1.0), c(2.0), z=1)


def test_kwargs_catch_all():
    @tf.function
    def f(x, **opts):
        return x * opts.get("k", 1.0)

    assert f(c(2.0)).numpy() == 2.0
    assert f(c(2.0), k=3.0).numpy() == 6.0
    assert f(c(2.0), k=3.0).numpy() == 6.0
    assert f(x=c(2.0), k=4.0).numpy() == 8.0
    assert f.experimental_get_tracing_count() == 3


def test_numpy_arguments_under_a_signature_hit_the_c_cache():
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def g(x):
        return x * 2.0

    a = np.ones((3, 2), np.float32)
    g(a)
    g._take_calls()
    for _ in range(5):
        assert g(a).shape == (3, 2)
    assert g._take_calls() == 5
    g([[1.0, 2.0]])            # a Python list: converted, Python path
    assert g._take_calls() == 0
