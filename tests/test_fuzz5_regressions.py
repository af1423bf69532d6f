"""What the fuzz families of tests/api_fuzz_eager.py and
tests/api_fuzz_trace.py found (each test names the family, seed and case
that showed it). Code that needs a promotion mode runs in a child
process: the mode is process-wide."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfmini as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(code):
    """Run code (which asserts) in a fresh interpreter; its stdout."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                         env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


# ---- weak: == and != under NumPy behavior -----------------------------------

def test_numpy_behavior_equality_promotes_as_tf():
    # weak seed 1 case 128: int32 tensor == 1.0 was the Python bool
    # False (the C comparison found 1.0 no int32) in every mode of
    # experimental_enable_numpy_behavior; TF 2.21 promotes first and
    # compares elementwise: [1, 2] == 1.0 is [True, False].
    _child("""
        import tfmini as tf
        tnp = tf.experimental.numpy
        for mode in ("legacy", "all", "safe", "all", "legacy"):
            tnp.experimental_enable_numpy_behavior(
                dtype_conversion_mode=mode)
            t = tf.constant([1, 2])
            eq = t == 1.0
            assert isinstance(eq, tf.Tensor), (mode, eq)
            assert eq.numpy().tolist() == [True, False], mode
            assert (t != 1.0).numpy().tolist() == [False, True], mode
            assert (1.0 == t).numpy().tolist() == [True, False], mode
            if mode != "safe":      # SAFE refuses int32 with float32
                assert (t == tf.constant(1.5)).numpy().tolist() == \\
                    [False, False]
            i8 = tf.constant([1, 2], tf.int8)
            assert (i8 == tf.constant([1, 3], tf.int16)).numpy() \\
                .tolist() == [True, False], mode
            f16 = tf.constant([1.5], tf.float16)
            assert (f16 == tf.constant([1.5])).numpy().tolist() == [True]
            # Unchanged: None and foreign objects are simply unequal,
            # shapes that do not broadcast a False scalar tensor.
            assert (t == None) is False and (t != None) is True  # noqa
            assert (t == "a") is False and (t != "a") is True
            assert not bool(t == tf.constant([1, 2, 3]))
    """)


def test_plain_mode_equality_is_unchanged():
    # Without NumPy behavior tfmini keeps its rule (tests/test_tensor.py):
    # a Python number of another kind is not converted.
    t = tf.constant([1, 2])
    assert (t == 1.5) is False
    assert (t == "a") is False
    with pytest.raises(tf.errors.InvalidArgumentError, match="Equal"):
        t == tf.constant([1.0, 2.0])


def test_enabling_numpy_behavior_again_does_not_nest_getitem():
    # weak seed 1 case 354: each experimental_enable_numpy_behavior call
    # wrapped the __getitem__ the previous call had installed, so after
    # a few hundred calls x[0] was a RecursionError.
    out = _child("""
        import tfmini as tf
        tnp = tf.experimental.numpy
        for k in range(2000):
            tnp.experimental_enable_numpy_behavior(
                dtype_conversion_mode=("all", "legacy", "safe")[k % 3])
        x = tf.constant([1, 2, 3])
        print(int(x[0]), x[[0, 2]].numpy().tolist())
    """)
    assert out.split() == ["1", "[1,", "3]"]


def test_function_results_keep_weakness():
    # weak seed 1 case 194 (a tf.function shared by the cases, compared
    # with eager): the weak result of a traced body came back strong,
    # so f(x) + float16 was float32 where TF 2.21 (its result a weak
    # tensor) gives float16.
    _child("""
        import tfmini as tf
        from tfmini.experimental.numpy.weak_tensor import is_weak
        tf.experimental.numpy.experimental_enable_numpy_behavior(
            dtype_conversion_mode="all")
        mul = tf.function(lambda a, b: a * b)
        out = mul(tf.constant(2.5), 7)
        assert is_weak(out) and float(out) == 17.5
        assert (out + tf.constant(1, tf.float16)).dtype == tf.float16
        strong = mul(tf.constant(2.5, tf.float32), 7)   # a strong input
        assert not is_weak(strong) and strong.dtype == tf.float32
        assert is_weak(tf.function(lambda a: tf.square(a))([0.5, 1.0]))
        nested = tf.function(lambda a: {
            "w": a * 2, "s": tf.cast(a, tf.float32), "t": (a, 1)})(
                tf.constant(1.5))
        assert is_weak(nested["w"]) and not is_weak(nested["s"])
        assert is_weak(nested["t"][0]) and is_weak(nested["t"][1])
        pair = tf.function(lambda a: (a + 1, tf.nn.relu(a)))(tf.constant(1.5))
        assert is_weak(pair[0]) and not is_weak(pair[1])
        outer = tf.function(lambda a: mul(a, 2) + tf.constant(1, tf.float16))
        assert outer(tf.constant(2.5)).dtype == tf.float16
    """)


# ---- fastpath: a Python bool is no index ------------------------------------

@pytest.mark.parametrize("key", [
    (True, -1), (True,), [True, False], (0, True), (Ellipsis, True),
    (slice(True, None),), (slice(None, None, False),)])
def test_bool_in_an_index_tuple_is_refused(key):
    # fastpath seed 2 case 372: x[True, -1] was x[1, -1] and
    # x[[True, False]] (a mask, meant) was x[1, 0]: silently the wrong
    # element. TF refuses a bool index item too.
    x = tf.constant(np.arange(6).reshape(2, 3))
    with pytest.raises(TypeError, match="valid indices.*bool"):
        x[key]


def test_bool_masks_and_ints_still_index():
    x = tf.constant(np.arange(6).reshape(2, 3))
    assert x[tf.constant([True, False])].numpy().tolist() == [[0, 1, 2]]
    assert x[np.array([False, True])].numpy().tolist() == [[3, 4, 5]]
    assert int(x[1, -1]) == 5 and int(x[np.int64(1), 0]) == 3
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        x[True]


# ---- generator: Optional.get_value in the untaken branch --------------------

def test_empty_optional_in_an_untaken_cond_branch():
    # generator seed 1 case 6: tf.cond(o.has_value(), o.get_value, ...)
    # in a tf.function raised while tracing the true branch for an
    # empty optional, which TF's graph never runs.
    O = tf.experimental.Optional

    @tf.function
    def value_or(o):
        return tf.cond(o.has_value(), lambda: o.get_value(),
                       lambda: tf.constant(-1.0))
    assert float(value_or(O.empty(tf.TensorSpec([], tf.float32)))) == -1.0
    assert float(value_or(O.from_value(tf.constant(2.5)))) == 2.5
    # Taking the value of an empty optional still fails, when it runs.
    get = tf.function(lambda o: o.get_value())
    for spec in (tf.TensorSpec([2], tf.int32), tf.TensorSpec(None,
                                                             tf.float32),
                 (tf.TensorSpec([None], tf.float32),)):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="does not have a value"):
            get(O.empty(spec))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="does not have a value"):
        O.empty(tf.TensorSpec([], tf.float32)).get_value()


# ---- generator: py_function returning a Python str --------------------------

def test_py_function_returns_python_strings():
    # generator family, py_function(str, Tout=tf.string): a str made a
    # NumPy '<U1' array, which py_function refused ("cannot be a string
    # tensor"); TF makes the string tensor.
    out = tf.py_function(lambda x: "abc", [tf.constant(1.0)], tf.string)
    assert out.dtype == tf.string and out.numpy() == b"abc"
    out = tf.py_function(lambda x: [b"x"], [tf.constant(1.0)], [tf.string])
    assert out[0].numpy() == b"x"
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="output 0 .int. cannot be a string tensor"):
        tf.py_function(lambda x: 3, [tf.constant(1.0)], tf.string)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"has shape \[\], but Tout says \[2\]"):
        tf.py_function(lambda x: "s", [tf.constant(1.0)],
                       tf.TensorSpec([2], tf.string))


# ---- generator: from_generator of unknown rank through map and batch --------

def _unknown_rank(values, dtype=tf.int32):
    return tf.data.Dataset.from_generator(
        lambda: iter(values), output_signature=tf.TensorSpec(None, dtype))


def test_map_over_an_unknown_rank_generator():
    # A by-hand probe beside the generator family: any map of a
    # TensorSpec(None) generator failed in map() with "Cannot iterate
    # over a shape with unknown rank" (the traced output spec); TF maps.
    ds = _unknown_rank([[1, 2], [3, 4]])
    assert [int(x) for x in ds.map(lambda x: x[0])] == [1, 3]
    assert [int(x) for x in ds.map(lambda x: tf.reduce_sum(x, -1))] == \
        [3, 7]
    mapped = _unknown_rank([1.0], tf.float32).map(lambda x: x * 2)
    assert mapped.element_spec == tf.TensorSpec(None, tf.float32)
    pairs = tf.data.Dataset.from_generator(
        lambda: iter([(1, [2.0])]),
        output_signature=(tf.TensorSpec(None, tf.int32),
                          tf.TensorSpec(None, tf.float32)))
    out = list(pairs.map(lambda a, b: b * tf.cast(a, tf.float32)))
    assert out[0].numpy().tolist() == [2.0]


def test_batching_elements_of_different_shapes_is_tfs_error():
    # Elements an unknown-shape spec lets through: batch() was NumPy's
    # "all input arrays must have the same shape", padded_batch() of
    # ranks 1 and 0 an IndexError (tuple index out of range).
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Cannot batch tensors with different shapes "
                             r"in component 0. First element had shape "
                             r"\[2\] and element 1 had shape \[1\]"):
        list(_unknown_rank([[1, 2], [3]]).batch(2))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="same rank as the padded shape for component0: "
                             "expected rank 1 but got element with rank 0"):
        list(_unknown_rank([[1, 2], 3]).padded_batch(2, padded_shapes=[None]))
    out = list(_unknown_rank([[1, 2], [3]]).padded_batch(
        2, padded_shapes=[None]))
    assert out[0].numpy().tolist() == [[1, 2], [3, 0]]


def test_py_function_counts_a_tensor_as_one_value():
    # generator seed 7 case 50: None for two Touts was "'NoneType'
    # object is not iterable"; a [2] tensor for two Touts was silently
    # split into its rows. TF counts 0 and 1 values and refuses both.
    two = [tf.float32, tf.float32]
    x = tf.constant(1.0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="returned 0 values, but Tout has 2"):
        tf.py_function(lambda v: None, [x], two)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="returned 1 values, but Tout has 2"):
        tf.py_function(lambda v: tf.constant([1.0, 2.0]), [x], two)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="returned 1 values, but Tout has 2"):
        tf.py_function(lambda v: np.ones(2, np.float32), [x], two)
    a, b = tf.py_function(lambda v: (v, v * 2), [x], two)
    assert float(a) == 1.0 and float(b) == 2.0
    assert tf.py_function(lambda v: None, [x], []) == []


# ---- generator: traced py_function, its registry and its gradient ---------

def test_traced_py_function_entries_go_with_their_function():
    # A by-hand leak probe of the generator family's cases: every trace
    # with a py_function (Optional.get_value in a graph is one) kept its
    # function in script_ops._registry for the life of the process.
    import gc
    from tfmini.ops import script_ops
    before = len(script_ops._registry)
    inner = [tf.function(lambda x: tf.py_function(lambda v: v * 2, [x],
                                                  tf.float32))]
    g = tf.function(lambda x: inner[0](x) + 1)   # traced inline into g
    assert float(inner[0](tf.constant(1.0))) == 2.0
    assert float(g(tf.constant(3.0))) == 7.0
    assert len(script_ops._registry) == before + 2
    inner.clear()
    gc.collect()
    assert float(g(tf.constant(4.0))) == 9.0     # g's own entry stays
    del g
    gc.collect()
    assert len(script_ops._registry) == before
    O = tf.experimental.Optional
    h = tf.function(lambda o: o.get_value())
    h(O.from_value(tf.constant(1.0)))
    del h
    gc.collect()
    assert len(script_ops._registry) == before


def test_gradient_through_a_traced_py_function_with_the_tape_outside():
    # Was None: the replayed graph's EagerPyFunc has no gradient rule.
    # TF 2.21 gives y + 1 and x here.
    h = tf.function(lambda x, y: tf.py_function(
        lambda a, b: a * b, [x, y], tf.float32) + x)
    x, y = tf.constant(3.0), tf.constant(4.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = h(x, y)
    assert [float(g) for g in tape.gradient(z, [x, y])] == [5.0, 3.0]
    v = tf.Variable(3.0)
    sq = tf.function(lambda: tf.py_function(lambda a: a * a,
                                            [v.read_value()], tf.float32))
    with tf.GradientTape() as tape:
        z = sq()
    assert float(tape.gradient(z, v)) == 6.0
