"""Small gaps the TF guides found (tests/test_tf_guides.py's KNOWN
table), each checked directly against what TF 2.21 gives."""
import pytest

import tfmini as tf
from _leaks import assert_no_leak


def test_a_python_range_converts_as_the_list_it_spells():
    t = tf.constant(range(2, 10, 3))
    assert t.dtype == tf.int32 and t.numpy().tolist() == [2, 5, 8]
    assert tf.reshape(range(6), [2, 3]).numpy().tolist() == \
        [[0, 1, 2], [3, 4, 5]]
    assert tf.constant(range(3), dtype=tf.float32).dtype == tf.float32
    # TF: an empty range is float32 like [], a big value int64.
    assert tf.constant(range(0)).dtype == tf.float32
    assert tf.constant(range(2**40, 2**40 + 2)).dtype == tf.int64
    with pytest.raises(ValueError):
        tf.constant(range(2**63, 2**63 + 2))


def test_unsupported_type_is_named_as_tf_names_it():
    class Foo:
        pass
    with pytest.raises(ValueError, match=r"unsupported type \(<class "
                       r"'test_guidefix\..*Foo'>\) to a Tensor\.$"):
        tf.ones_like(Foo())
    with pytest.raises(ValueError, match=r"\(<class 'dict'>\)"):
        tf.constant({1: 2})


def test_keras_input_has_keras3s_signature():
    spec = tf.TensorSpec([None, 2], tf.float32)
    with pytest.raises(TypeError, match="Input\\(\\) got an unexpected "
                       "keyword argument 'type_spec'"):
        tf.keras.layers.Input(type_spec=spec)
    # Keras 3's positional order: shape, batch_size, dtype.
    x = tf.keras.Input((3,), 4, "float64")
    assert tuple(x.shape) == (4, 3) and x.dtype == "float64"
    assert tf.keras.Input((2,), name="left").name == "left"


def test_map_raises_the_functions_error_at_map_as_tf():
    ds = tf.data.Dataset.range(4).batch(2)
    calls = []

    def bad(x):
        calls.append(1)
        return x + "a"
    with pytest.raises(TypeError) as e:
        ds.map(bad)
    msg = str(e.value)
    # TF 2.21: the same type, "in user code:", the line, the error.
    assert msg.startswith("in user code:\n\n    File ")
    assert 'in bad  *\n        return x + "a"\n\n    TypeError: ' in msg
    # Traced once, then run eagerly once on a made-up element.
    assert len(calls) == 2


def test_map_parse_example_of_int64_is_tfs_graph_type_error():
    ds = tf.data.Dataset.range(6).batch(3)
    feats = {"a": tf.io.FixedLenFeature((), tf.string)}
    with pytest.raises(TypeError, match="Input 'serialized' of "
                       "'ParseExampleV2' Op has type int64 that does not "
                       "match expected type of string"):
        ds.map(lambda x: tf.io.parse_example(x, feats))
    # Eagerly it is TF's conversion ValueError.
    with pytest.raises(ValueError, match="requested dtype string"):
        tf.io.parse_example(tf.constant([1, 2], tf.int64), feats)


def test_map_runs_its_function_once_per_element_after_one_trace():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2
    ds = tf.data.Dataset.range(5).map(f)
    assert len(calls) == 1                     # the trace, at map()
    assert repr(ds.element_spec) == \
        "TensorSpec(shape=(), dtype=tf.int64, name=None)"
    assert [int(v) for v in ds] == [0, 2, 4, 6, 8]
    assert len(calls) == 6                     # no second trace, no reads


def test_map_that_tfmini_cannot_trace_still_runs():
    # Fill with a traced size is beyond tfmini's graphs, fine eagerly:
    # no error at map(), and the next map still traces at map() on a
    # spec with unknown dimensions (TF's (None,)).
    ds = tf.data.Dataset.range(4).map(
        lambda x: tf.fill([tf.cast(x, tf.int32)], x))
    padded = ds.padded_batch(2, padded_shapes=(None,))
    assert repr(padded.element_spec) == \
        "TensorSpec(shape=(None, None), dtype=tf.int64, name=None)"
    with pytest.raises(TypeError, match="in user code"):
        padded.map(lambda b: tf.io.parse_example(
            b, {"a": tf.io.FixedLenFeature((), tf.string)}))
    assert [b.numpy().tolist() for b in padded] == \
        [[[0], [1]], [[2, 2, 0], [3, 3, 3]]]
    # A function that needs eager values runs per element, as before.
    e = tf.data.Dataset.range(3).map(lambda x: x.numpy() + 1)
    assert list(e.as_numpy_iterator()) == [1, 2, 3]


def _raises_text(fn):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        fn()
    return str(e.value)


def test_ragged_broadcast_errors_are_tfs_assert_text():
    # TF 2.21's texts, inner splits first differing at level 2.
    x = tf.ragged.constant([[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10]]])
    y = tf.ragged.constant([[[1, 2, 0], [3, 4, 0], [5, 6, 0]],
                            [[7, 8, 0], [9, 10, 0]]])
    assert _raises_text(lambda: x + y) == (
        "Condition x == y did not hold.\n"
        "Indices of first 3 different values:\n[[1]\n [2]\n [3]]\n"
        "Corresponding x values:\n[2 4 6]\n"
        "Corresponding y values:\n[3 6 9]\n"
        "First 3 elements of x:\n[0 2 4]\nFirst 3 elements of y:\n[0 3 6]")
    # Row counts that differ: TF's scalar check.
    a = tf.ragged.constant([[1, 2], [3]])
    want = ("Condition x == y did not hold.\nFirst 1 elements of x:\n"
            "[False]\nFirst 1 elements of y:\n[ True]")
    assert _raises_text(
        lambda: a + tf.ragged.constant([[1, 2], [3], [4]])) == want
    assert _raises_text(lambda: a + tf.constant([[1], [2], [3]])) == want
    # A dense operand's rows are uniform; x is that partition either way.
    d = tf.constant([[1, 2, 3], [2, 3, 4]])
    assert "Corresponding x values:\n[3 6]\nCorresponding y values:\n" \
        "[2 3]" in _raises_text(lambda: d + a)


def test_dense_rows_that_match_the_ragged_rows_broadcast():
    r = tf.ragged.constant([[1, 2], [3, 4]])
    assert (r + tf.constant([[10, 20], [30, 40]])).to_list() == \
        [[11, 22], [33, 44]]
    # A size-1 ragged dimension broadcasts as before.
    assert (r + tf.constant([[10], [20]])).to_list() == [[11, 12], [23, 24]]


def test_traced_py_function_outputs_take_the_shape_returned(capsys):
    @tf.py_function(Tout=tf.float32)
    def py_plus(x, y):
        print("run")
        return x + y

    @tf.function
    def f(x, y):
        return py_plus(x, y)
    assert float(f(tf.constant(1.0), tf.constant(2.0))) == 3.0
    assert float(f(tf.constant(1.0), tf.constant(5.0))) == 6.0
    assert capsys.readouterr().out == "run\nrun\n"     # once per call

    # Unknown dims: each run's own length, and ops after it follow.
    @tf.function
    def g(n):
        r = tf.py_function(lambda n: tf.range(int(n)), [n],
                           Tout=tf.TensorSpec([None], tf.int32))
        return r * 2, tf.shape(r)
    for n in (3, 5, 0):
        doubled, shape = g(tf.constant(n))
        assert doubled.numpy().tolist() == [2 * i for i in range(n)]
        assert shape.numpy().tolist() == [n]

    # A known dim is still checked against what the function returns.
    @tf.function
    def h(n):
        return tf.py_function(lambda n: tf.zeros([int(n), 3]), [n],
                              Tout=tf.TensorSpec([None, 2], tf.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"output 0 has shape \[4, 3\], but Tout says "
                             r"\[None, 2\]"):
        h(tf.constant(4))


def test_traced_py_function_of_unknown_shape_has_a_gradient():
    @tf.function
    def grad(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.py_function(lambda a: a * a, [x], Tout=tf.float32)
            s = tf.reduce_sum(y)
        return t.gradient(s, x)
    assert grad(tf.constant([1., 2., 3.])).numpy().tolist() == [2., 4., 6.]


def test_py_function_of_unknown_shape_leaks_nothing():
    @tf.function
    def g(n):
        return tf.py_function(lambda n: tf.range(int(n)), [n],
                              Tout=tf.TensorSpec([None], tf.int32)) + 1

    @tf.function
    def bad(n):
        return tf.py_function(lambda n: tf.zeros([2]), [n],
                              Tout=tf.TensorSpec([None], tf.int32))

    def round_():
        g(tf.constant(4))
        with pytest.raises(tf.errors.InvalidArgumentError):
            bad(tf.constant(1))
    assert_no_leak(round_)


def test_next_on_an_outside_iterator_pulls_one_element_per_call():
    it = iter(tf.data.Dataset.range(10).batch(4))
    traces = []

    @tf.function
    def f():
        traces.append(1)
        return next(it) * 2
    got = [f().numpy().tolist() for _ in range(3)]
    assert got == [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18]]
    assert len(traces) == 1
    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
        f()

    # Passed in as an argument, as the function guide does; eager next()
    # on the same iterator goes on from where the calls left it.
    @tf.function
    def g(iterator):
        return next(iterator)
    it = iter(tf.data.Dataset.from_tensor_slices(([1, 2, 3], [4., 5., 6.])))
    assert [int(v) for v in g(it)] == [1, 4]
    assert [int(v) for v in next(it)] == [2, 5]
    assert [int(v) for v in g(it)] == [3, 6]


def test_a_loop_over_an_outside_iterator_in_a_trace_is_refused():
    it = iter(tf.data.Dataset.range(3))

    @tf.function
    def f():
        total = tf.constant(0, tf.int64)
        for x in it:
            total += x
        return total
    with pytest.raises(NotImplementedError, match="would never end"):
        f()


def test_get_next_as_optional_in_a_traced_loop(capfd):
    it = iter(tf.data.Dataset.range(9).batch(4))

    @tf.function
    def total():
        s = tf.constant(0, tf.int64)
        for _ in tf.range(5):
            opt = it.get_next_as_optional()
            if not opt.has_value():
                break
            s += tf.reduce_sum(opt.get_value())
        return s
    assert int(total()) == sum(range(9))

    # get_value of an empty Optional in a graph is TF's error, never the
    # placeholder behind it.
    empty = iter(tf.data.Dataset.range(0).batch(2))

    @tf.function
    def value():
        return empty.get_next_as_optional().get_value()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="does not have a value"):
        value()


def test_distributed_iterator_pulled_in_a_trace():
    strategy = tf.distribute.MirroredStrategy()
    dist = iter(strategy.experimental_distribute_dataset(
        tf.data.Dataset.range(9).batch(4)))
    seen = []

    @tf.function
    def step(iterator):
        opt = iterator.get_next_as_optional()
        return opt.has_value()
    while bool(step(dist)):
        seen.append(1)
    assert len(seen) == 3


def test_next_on_a_distributed_iterator_in_a_trace():
    strategy = tf.distribute.MirroredStrategy()
    dist = iter(strategy.experimental_distribute_dataset(
        tf.data.Dataset.range(6).batch(3)))

    @tf.function
    def step(iterator):
        return strategy.run(lambda x: tf.reduce_sum(x), args=(next(iterator),))
    got = [int(v) for v in strategy.experimental_local_results(step(dist))]
    got += [int(v) for v in strategy.experimental_local_results(step(dist))]
    assert sum(got) == sum(range(6))
    with pytest.raises(tf.errors.OutOfRangeError):
        step(dist)
