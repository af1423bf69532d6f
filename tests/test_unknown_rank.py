"""tf.TensorSpec(None) (unknown rank) in tf.function, get_concrete_function
and saved models (Note [Unknown rank] in tfmini/function_unknown_rank.py).
Expected values, printed types and trace counts are TF 2.21's for the same
snippets."""
import pytest

import tfmini as tf

F32 = tf.float32


def spec(shape, dtype=F32):
    return tf.TensorSpec(shape, dtype)


UNKNOWN = "TensorSpec(shape=<unknown>, dtype=tf.float32, name=None)"


def test_concrete_function_shows_unknown_rank_and_generalized_outputs():
    @tf.function
    def f(x):
        return {"a": x * 2., "s": tf.reduce_sum(x), "sh": tf.shape(x),
                "r": tf.reshape(x, [-1])}

    c = f.get_concrete_function(spec(None))
    assert f.experimental_get_tracing_count() == 1
    assert c.structured_input_signature == ((spec(None),), {})
    out = ("Dict[['a', " + UNKNOWN + "], ['s', TensorSpec(shape=(), "
           "dtype=tf.float32, name=None)], ['sh', TensorSpec(shape=(None,), "
           "dtype=tf.int32, name=None)], ['r', TensorSpec(shape=(None,), "
           "dtype=tf.float32, name=None)]]")
    assert str(c.function_type) == f"(x: {UNKNOWN}) -> {out}"
    assert c.pretty_printed_signature() == (
        f"Input Parameters:\n  x (POSITIONAL_OR_KEYWORD): {UNKNOWN}\n"
        f"Output Type:\n  {out}\nCaptures:\n  None")
    assert f.pretty_printed_concrete_signatures() == \
        c.pretty_printed_signature()
    assert c.structured_outputs["a"].shape.rank is None
    assert c.structured_outputs["s"].shape == []


def test_any_rank_runs_and_tf_counts_one_trace():
    traced = []

    @tf.function
    def f(x):
        traced.append(x.shape.rank)
        return tf.reduce_sum(x) + x * 0.

    c = f.get_concrete_function(spec(None))
    assert c(tf.constant(3.)).numpy() == 3.
    assert c(tf.ones([2, 3])).numpy().tolist() == [[6.] * 3] * 2
    assert c(tf.ones([1, 1, 1, 4])).shape == (1, 1, 1, 4)
    # The Function's own calls take the unknown-rank trace (TF: no retrace).
    assert f(tf.ones([5])).numpy().tolist() == [5.] * 5
    assert f(tf.ones([3, 3])).shape == (3, 3)
    assert f.experimental_get_tracing_count() == 1
    # One graph per rank, each traced once.
    assert sorted(traced) == [0, 1, 2, 4]
    assert f.get_concrete_function(spec(None)) is c
    assert f.get_concrete_function(spec([None, 3])) is c
    assert f.experimental_get_tracing_count() == 1


def test_input_signature_of_unknown_rank():
    @tf.function(input_signature=[spec(None)])
    def g(x):
        return x + 1.

    assert g(tf.constant(1.)).numpy() == 2.
    assert g(tf.constant([1., 2.])).numpy().tolist() == [2., 3.]
    assert g([[1.]]).numpy().tolist() == [[2.]]
    assert g.experimental_get_tracing_count() == 1
    assert g.get_concrete_function() is g.get_concrete_function(spec(None))
    assert g.pretty_printed_concrete_signatures() == (
        f"Input Parameters:\n  x (POSITIONAL_OR_KEYWORD): {UNKNOWN}\n"
        f"Output Type:\n  {UNKNOWN}\nCaptures:\n  None")
    with pytest.raises(TypeError):
        g(tf.constant([1, 2]))


def test_wrong_dtype_and_python_values_are_errors():
    @tf.function
    def pow_(a, b):
        return a ** b

    square = pow_.get_concrete_function(a=spec(None), b=2)
    assert "b (POSITIONAL_OR_KEYWORD): Literal[2]" in str(square)
    assert square(tf.constant(10.)).numpy() == 100.
    assert square(tf.constant([1., 3.])).numpy().tolist() == [1., 9.]
    with pytest.raises(TypeError, match="'b' is 3; the trace has 2"):
        square(tf.constant(10.), b=3)
    with pytest.raises(tf.errors.InvalidArgumentError):
        square(tf.constant([1], tf.int32))


def test_several_unknown_rank_arguments():
    @tf.function
    def two(x, y):
        return x + tf.reduce_sum(y)

    c = two.get_concrete_function(spec(None), spec(None))
    assert c(tf.constant([1., 2.]), tf.ones([2, 2])).numpy().tolist() == \
        [5., 6.]
    assert c(tf.constant(1.), tf.constant(2.)).numpy() == 3.
    assert two(tf.constant([[1.]]), tf.constant(3.)).numpy().tolist() == \
        [[4.]]
    assert two.get_concrete_function(spec([None, None]), spec([3])) is c
    assert two.experimental_get_tracing_count() == 1


def test_probe_rank_that_traces_and_errors_that_stay():
    @tf.function
    def h(x):
        return x[0, 0, 0] * 2.

    c = h.get_concrete_function(spec(None))     # ranks 1, 2 fail: rank 3
    assert c(tf.ones([1, 2, 3])).numpy() == 2.
    assert h.experimental_get_tracing_count() == 1

    @tf.function
    def bad(x):
        raise ValueError("no rank will do")

    with pytest.raises(ValueError, match="no rank will do"):
        bad.get_concrete_function(spec(None))


def test_gradient_through_an_unknown_rank_trace():
    @tf.function
    def two(x, y):
        return x + tf.reduce_sum(y)

    c = two.get_concrete_function(spec(None), spec(None))
    x = tf.constant([1., 2.])
    with tf.GradientTape() as t:
        t.watch(x)
        y = c(x * x, tf.constant(1.))
    assert t.gradient(y, x).numpy().tolist() == [2., 4.]


class _Scale(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(2.)

    @tf.function(input_signature=[spec(None)])
    def f(self, x):
        return x * self.v


def test_saved_model_keeps_ranks_and_names_a_missing_one(tmp_path):
    m = _Scale()
    assert m.f(tf.ones([1] * 6)).shape == (1,) * 6     # traced: kept too
    tf.saved_model.save(m, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    for rank in (0, 1, 2, 3, 4, 6):
        assert loaded.f(tf.ones([2] * rank)).numpy().sum() == 2. * 2 ** rank
    with pytest.raises(ValueError, match=r"ranks \[5\]"):
        loaded.f(tf.ones([1] * 5))
    sig = loaded.signatures["serving_default"]
    assert sig.structured_outputs == {
        "output_0": tf.TensorSpec(None, F32, "output_0")}
    assert sig(x=tf.ones([2]))["output_0"].numpy().tolist() == [2., 2.]
    assert sig(x=tf.constant(3.))["output_0"].numpy() == 6.
    with pytest.raises(ValueError, match=r"not \[5\]"):
        sig(x=tf.ones([1] * 5))


def test_saved_concrete_signature_of_unknown_rank(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(1.)

        @tf.function
        def __call__(self, x):
            return {"out": x * self.v}

    m = M()
    call = m.__call__.get_concrete_function(spec(None))
    tf.saved_model.save(m, str(tmp_path), signatures={"serving_default":
                                                      call})
    loaded = tf.saved_model.load(str(tmp_path))
    assert loaded.signatures["serving_default"].structured_outputs == {
        "out": tf.TensorSpec(None, F32, "out")}
    assert loaded(tf.ones([2, 2]))["out"].numpy().tolist() == [[1., 1.]] * 2


def test_a_function_with_an_unknown_rank_trace_is_freed():
    import weakref

    def double(x):
        return x * 2.

    f = tf.function(double)
    c = f.get_concrete_function(spec(None))
    gone = weakref.ref(f)
    del f
    assert gone() is None        # no cycle through its ConcreteFunction
    assert c(tf.ones([2])).numpy().tolist() == [2., 2.]     # rank 1: kept
    with pytest.raises(ReferenceError, match="cannot trace a new rank"):
        c(tf.ones([1] * 5))


def test_another_python_value_is_another_trace():
    @tf.function
    def pow_(a, b):
        return a ** b

    square = pow_.get_concrete_function(spec(None), 2)
    assert pow_(tf.constant([2.]), 3).numpy().tolist() == [8.]
    assert pow_.experimental_get_tracing_count() == 2
    assert pow_(tf.constant([[2.]]), 2).numpy().tolist() == [[4.]]
    assert pow_.experimental_get_tracing_count() == 2
    assert square(tf.constant(3.)).numpy() == 9.


def test_python_values_compare_by_value_as_in_tf():
    @tf.function
    def pow_(a, b):
        return a ** b

    sq = pow_.get_concrete_function(spec([]), 2.0)
    assert sq(tf.constant(3.), 2).numpy() == 9.
    assert sq(tf.constant(3.), 2.0).numpy() == 9.
    with pytest.raises(TypeError):
        sq(tf.constant(3.), True)
    one = pow_.get_concrete_function(spec([]), 1)
    assert one(tf.constant(3.), True).numpy() == 3.


def test_from_generator_without_shapes_takes_any_rank():
    # output_types alone: an element spec of unknown rank, as TF's.
    def gen():
        yield [1, 2]
        yield [3]
        yield 4
    ds = tf.data.Dataset.from_generator(gen, output_types=tf.int32)
    assert ds.element_spec.shape.rank is None
    got = [v.tolist() for v in ds.as_numpy_iterator()]
    assert got == [[1, 2], [3], 4]
