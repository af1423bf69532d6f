"""The graph passes one by one: constant folding, common-subexpression
elimination and exact algebraic simplification (csrc/graph/pass_*.c).

Each case traces a small function, reads the graph the plan runs
(ConcreteFunction.optimized_graph) to show that the rewrite happened,
checks the values against eager bit for bit, and traces it again with
the pass switched off (tf.config.optimizer) to show that the node was
the pass's doing."""
import math

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini.function import FuncGraph
from tfmini.ops import math_ops


@pytest.fixture(autouse=True)
def _restore_passes():
    """Fusion and the epilogue are off in this file, so that the ops
    these passes leave stay visible in the optimized graph (fused, they
    would be one _FusedElementwise node); the tf.function harness checks
    every pass together."""
    saved = _C.graph_passes()
    off("fusion", "epilogue")
    yield
    _C.set_graph_passes(saved)


def c(x, dtype=None):
    return tf.constant(x, dtype=dtype)


def off(*names):
    tf.config.optimizer.set_experimental_options({n: False for n in names})


def concrete(fn, *args, **kw):
    return tf.function(fn, autograph=False, **kw).get_concrete_function(
        *args)


def types(graph):
    return [op.type for op in graph.get_operations()]


def count(graph, op_type):
    return types(graph).count(op_type)


def subgraphs(graph, node_type):
    """The sub-graphs of the (only) node of node_type."""
    (op,) = [o for o in graph.get_operations() if o.type == node_type]
    return [FuncGraph(g, [], []) for g in graph._graph.subgraphs(op.name)]


def bits(t):
    """The bytes of a tensor's value, to compare -0.0, NaN, ... exactly."""
    a = t.numpy() if isinstance(t, tf.Tensor) else np.asarray(t)
    return a.dtype, a.shape, a.tobytes()


def same_bits(a, b):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same_bits(x, y)
        return
    assert bits(a) == bits(b)


def traced_equals_eager(fn, *args):
    same_bits(tf.function(fn, autograph=False)(*args), fn(*args))


# ---- constant folding ----------------------------------------------------

def folding_chain(x):
    k = tf.constant(2.0) * 3.0 + 1.0        # Mul, AddV2 of constants
    k = tf.sqrt(k) / tf.constant(4.0)       # Sqrt, RealDiv
    return x * k


def test_folding_evaluates_a_chain_of_constants():
    x = c([1.0, -2.0, 3.5])
    g = concrete(folding_chain, x).optimized_graph
    assert types(g).count("Mul") == 1      # x * k, k one Const
    for gone in ("AddV2", "Sqrt", "RealDiv"):
        assert gone not in types(g), g.as_text()
    (mul,) = [o for o in g.get_operations() if o.type == "Mul"]
    assert mul.inputs[0] == "x:0"
    traced_equals_eager(folding_chain, x)


def test_folding_off_keeps_the_constant_ops():
    off("constant_folding")
    g = concrete(folding_chain, c([1.0])).optimized_graph
    for kept in ("AddV2", "Sqrt", "RealDiv"):
        assert kept in types(g), g.as_text()
    assert count(g, "Mul") == 2
    traced_equals_eager(folding_chain, c([1.0]))


def test_folded_values_are_the_kernels_bits():
    # float16 goes through the dispatcher's float32 upcast, integers wrap,
    # NaN and -0.0 keep their bits: the folded constants are what eager
    # (and the executor) computes.
    def f(x):
        h = tf.constant(np.array([0.1, 3.3, -0.0, 65504.0], np.float16))
        i = tf.constant(np.array([2**31 - 1, -7, 5], np.int32))
        z = tf.constant(np.array([-0.0, math.nan, 1e-40], np.float32))
        return (x, h * h + h / 3.0, i * 2 + 1, i // 2, z * -1.0,
                tf.exp(z) - tf.abs(z), tf.cast(h, tf.float64) ** 0.5)

    x = c(1.0)
    g = concrete(f, x).optimized_graph
    computed = {"Mul", "AddV2", "RealDiv", "FloorDiv", "Exp", "Abs", "Sub",
                "Cast", "Pow"}
    assert not computed & set(types(g)), g.as_text()
    traced_equals_eager(f, x)


def test_folding_ops_with_several_outputs():
    def f(x):
        a, b = tf.unstack(tf.constant([[1.0, 2.0], [3.0, 4.0]]) * 2.0)
        return x * a + b

    x = c([0.5, -1.0])
    g = concrete(f, x).optimized_graph
    assert "Unpack" not in types(g) and count(g, "Mul") == 1, g.as_text()
    traced_equals_eager(f, x)


def test_folding_caps_the_size_of_what_it_makes():
    # 2^16 elements at most per folded output: a big constant stays an op
    # that makes it at run time.
    def big():
        return tf.zeros([10000, 10000])

    def just_under():
        return tf.reduce_sum(tf.ones([256, 256]))       # 65536 elements

    def just_over():
        return tf.reduce_sum(tf.ones([257, 256]))

    assert "Fill" in types(concrete(big).optimized_graph)
    assert "Fill" not in types(concrete(just_under).optimized_graph)
    g = concrete(just_over).optimized_graph
    assert "Fill" in types(g) and "Sum" in types(g)
    traced_equals_eager(just_under)
    traced_equals_eager(just_over)


def gather_out_of_range():
    return tf.gather(tf.range(3) * 2, 7)     # Range, Mul fold; GatherV2 fails


def test_a_failing_constant_op_fails_at_run_time_as_before():
    with pytest.raises(tf.errors.InvalidArgumentError):
        gather_out_of_range()
    cf = concrete(gather_out_of_range)          # compiling does not fail
    g = cf.optimized_graph
    assert "GatherV2" in types(g) and "Range" not in types(g)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        cf()
    msg = str(e.value)
    assert "Node 'GatherV2'" in msg and "test_graph_passes.py" in msg, msg
    assert "gather_out_of_range" in msg


def test_random_ops_are_never_folded():
    def f():
        return tf.random.uniform([4]) * 2.0, tf.random.uniform([4], seed=3)

    fn = tf.function(f, autograph=False)
    g = fn.get_concrete_function().optimized_graph
    assert count(g, "RandomUniform") == 2 and "Mul" in types(g)
    a1, b1 = fn()
    a2, b2 = fn()
    assert bits(a1) != bits(a2) and bits(b1) != bits(b2)


def test_where_with_a_count_left_to_run_time_is_not_folded():
    def f():
        # The condition is symbolic while tracing: its count is unknown.
        return tf.where(tf.constant([3, 0, 1, 2]) > 0)

    g = concrete(f).optimized_graph
    assert "Where" in types(g)
    traced_equals_eager(f)


def test_shape_of_a_fully_known_input_folds():
    def f(x):
        return tf.shape(x) * 2, tf.size(x), tf.rank(x)

    x = c(np.zeros((2, 3), np.float32))
    g = concrete(f, x).optimized_graph
    for gone in ("Shape", "Size", "Rank", "Mul"):
        assert gone not in types(g), g.as_text()
    traced_equals_eager(f, x)
    # An unknown dim: the shape is only known at run time.
    g = concrete(f, input_signature=[tf.TensorSpec([None, 3])]
                 ).optimized_graph
    assert "Shape" in types(g) and "Size" in types(g)
    assert "Rank" not in types(g)


def test_folded_outputs_are_tensors_of_their_own():
    # Folding turns the output into a constant: each call must still
    # return a new tensor (tapes tell tensors apart by id), as eager.
    fn = tf.function(lambda: tf.constant(2.0) * 3.0, autograph=False)
    a, b = fn(), fn()
    with tf.GradientTape() as tape:
        tape.watch(a)
        z = a * b
    assert float(tape.gradient(z, a)) == 6.0


# ---- common-subexpression elimination -----------------------------------

def duplicates(x):
    a = tf.exp(x) * 2.0
    b = tf.exp(x) * 2.0
    return a + b


def test_cse_merges_duplicate_subexpressions():
    x = c([0.5, -1.0])
    g = concrete(duplicates, x).optimized_graph
    assert count(g, "Exp") == 1 and count(g, "Mul") == 1
    traced_equals_eager(duplicates, x)


def test_cse_off_keeps_duplicates():
    off("cse")
    g = concrete(duplicates, c([0.5])).optimized_graph
    assert count(g, "Exp") == 2 and count(g, "Mul") == 2


def test_cse_compares_every_attribute():
    # axis differs; the pad value is 0.0 once and -0.0 once (equal as
    # numbers, not as bits): nothing merges.
    def f(x):
        return (tf.reduce_sum(x, axis=0), tf.reduce_sum(x, axis=1),
                tf.pad(x, [[1, 0], [0, 0]], constant_values=0.0),
                tf.pad(x, [[1, 0], [0, 0]], constant_values=-0.0))

    x = c(np.ones((2, 3), np.float32))
    g = concrete(f, x).optimized_graph
    assert count(g, "Sum") == 2 and count(g, "PadV2") == 2
    traced_equals_eager(f, x)
    out = tf.function(f, autograph=False)(x)
    assert not np.signbit(out[2].numpy()[0, 0])
    assert np.signbit(out[3].numpy()[0, 0])


def test_cse_never_merges_random_ops():
    for seed in (None, 7):
        fn = tf.function(lambda: (tf.random.uniform([8], seed=seed),
                                  tf.random.uniform([8], seed=seed)),
                         autograph=False)
        g = fn.get_concrete_function().optimized_graph
        assert count(g, "RandomUniform") == 2
        a, b = fn()
        if seed is None:
            assert bits(a) != bits(b)
        else:
            # TF's documented rule: two traced ops with one seed are two
            # kernels with equal streams, (A1, A1), then (A2, A2).
            assert bits(a) == bits(b)
            a2, b2 = fn()
            assert bits(a2) == bits(b2) and bits(a2) != bits(a)


def test_cse_merges_reads_with_no_write_between():
    v = tf.Variable([1.0, 2.0])
    f = tf.function(lambda: v * 2.0 + v * 2.0, autograph=False)
    cf = f.get_concrete_function()
    assert count(cf.graph, "ReadVariableOp") == 2
    g = cf.optimized_graph
    assert count(g, "ReadVariableOp") == 1 and count(g, "Mul") == 1
    np.testing.assert_array_equal(f().numpy(), [4.0, 8.0])


def test_cse_never_merges_across_an_assign():
    v = tf.Variable([1.0, 2.0])

    def f():
        a = v.read_value() * 2.0
        v.assign_add([1.0, 1.0])
        b = v.read_value() * 2.0
        return a, b

    fn = tf.function(f, autograph=False)
    g = fn.get_concrete_function().optimized_graph
    assert count(g, "ReadVariableOp") == 2 and count(g, "Mul") == 2
    a, b = fn()
    np.testing.assert_array_equal(a.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(b.numpy(), [4.0, 6.0])
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0])


def test_cse_never_merges_reads_across_control_flow():
    # The cond may assign: a read after it waits for it.
    v = tf.Variable(1.0)

    def f(p):
        a = v * 1.5
        tf.cond(p, lambda: v.assign(5.0), lambda: v.assign(v))
        b = v * 1.5
        return a, b

    fn = tf.function(f, autograph=False)
    a, b = fn(c(True))
    assert (float(a), float(b)) == (1.5, 7.5)


def test_cse_keeps_outputs_distinct():
    # Two outputs that CSE makes one node are still two tensors.
    fn = tf.function(lambda x: (x * 2.0, x * 2.0), autograph=False)
    a, b = fn(c(3.0))
    with tf.GradientTape() as tape:
        tape.watch(a)
        z = a * b
    assert float(tape.gradient(z, a)) == 6.0      # b, not a + b


def test_one_tensor_returned_twice_stays_one():
    fn = tf.function(lambda x: (lambda y: (y, y))(x * 2.0), autograph=False)
    a, b = fn(c(3.0))
    assert float(a) == float(b) == 6.0
    g = fn.get_concrete_function(c(3.0)).optimized_graph
    assert count(g, "Mul") == 1 and "Identity" not in types(g)


# ---- algebraic simplification --------------------------------------------

# Values that an inexact rule would change: signed zeros, NaN, infinities,
# subnormals, big and small numbers.
SPECIAL = np.array([-0.0, 0.0, math.nan, math.inf, -math.inf, 1e-45, -3.5,
                    1e30], np.float32)

SIMPLIFY = {
    # name: (fn, op the rule removes)
    "x*1": (lambda x: tf.exp(x * 1.0), "Mul"),
    "1*x": (lambda x: tf.exp(1.0 * x), "Mul"),
    "x/1": (lambda x: tf.exp(x / 1.0), "RealDiv"),
    "x+(-0.0)": (lambda x: tf.exp(x + -0.0), "AddV2"),
    "(-0.0)+x": (lambda x: tf.exp(-0.0 + x), "AddV2"),
    "x-0.0": (lambda x: tf.exp(x - 0.0), "Sub"),
    "x*ones": (lambda x: tf.exp(x * tf.ones([8])), "Mul"),
    # (tf.cast returns x itself for its own dtype: the raw op makes one.)
    "cast_same": (lambda x: tf.exp(_C.call(math_ops._CAST, (x,), None, None,
                                           None, x._dtype_enum)), "Cast"),
    "identity": (lambda x: tf.exp(tf.identity(x)), "Identity"),
    "transpose_identity": (
        lambda x: tf.exp(tf.transpose(tf.reshape(x, [2, 4]), [0, 1])),
        "Transpose"),
    "transpose_twice": (
        lambda x: tf.exp(tf.transpose(tf.transpose(tf.reshape(x, [2, 4])))),
        "Transpose"),
}


@pytest.mark.parametrize("name", sorted(SIMPLIFY))
def test_simplification_rule(name):
    fn, op = SIMPLIFY[name]
    x = c(SPECIAL)
    g = concrete(fn, x).optimized_graph
    assert op not in types(g), g.as_text()
    traced_equals_eager(fn, x)
    off("arithmetic")
    assert op in types(concrete(fn, x).optimized_graph)


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64, tf.uint8, tf.int8])
def test_integer_rules(dtype):
    def f(x):
        return tf.abs(((0 + x * 1) - 0) // 1 + 0)

    x = c(np.array([0, 1, 2, 100], np.int64), dtype)
    g = concrete(f, x).optimized_graph
    assert types(g) == ["Placeholder", "Abs"], g.as_text()
    traced_equals_eager(f, x)


def test_x_plus_positive_zero_is_kept_for_floats():
    # -0.0 + 0.0 is +0.0: not x.
    fn = lambda x: x + 0.0          # noqa: E731
    x = c(SPECIAL)
    g = concrete(fn, x).optimized_graph
    assert "AddV2" in types(g)
    traced_equals_eager(fn, x)
    assert not np.signbit(tf.function(fn)(x).numpy()[0])
    # and 0 - x is not x; x - (-0.0) is not x either.
    for fn in (lambda x: 0.0 - x, lambda x: x - -0.0):
        g = concrete(fn, x).optimized_graph
        assert "Sub" in types(g)
        traced_equals_eager(fn, x)


def test_a_constant_that_broadcasts_the_shape_is_kept():
    x = c(np.arange(3, dtype=np.float32))
    fn = lambda x: x * tf.ones([2, 3])          # noqa: E731
    g = concrete(fn, x).optimized_graph
    assert "Mul" in types(g)
    assert tf.function(fn)(x).shape == (2, 3)
    traced_equals_eager(fn, x)
    # x's dim unknown: it may be 1 at run time and then broadcast.
    fn = lambda x: x * tf.ones([3])              # noqa: E731
    f = tf.function(fn, input_signature=[tf.TensorSpec([None])])
    assert "Mul" in types(f.get_concrete_function().optimized_graph)
    assert f(c([5.0])).shape == (3,)
    # Along a known dim of x the constant changes nothing: it goes.
    f = tf.function(lambda x: tf.exp(x * tf.ones([3])),
                    input_signature=[tf.TensorSpec([None, 3])])
    assert "Mul" not in types(f.get_concrete_function().optimized_graph)


def test_a_constant_that_is_not_all_ones_is_kept():
    x = c(SPECIAL)
    almost = np.array([1, 1, 1, 1, 1, 1, 1, 2], np.float32)
    fn = lambda x: x * c(almost)                    # noqa: E731
    assert "Mul" in types(concrete(fn, x).optimized_graph)
    traced_equals_eager(fn, x)


def test_transposes_compose():
    def f(x):
        return tf.transpose(tf.transpose(x, [1, 0, 2]), [0, 2, 1])

    x = c(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    g = concrete(f, x).optimized_graph
    assert count(g, "Transpose") == 1
    traced_equals_eager(f, x)


def test_reshape_of_reshape_is_one_reshape():
    def f(x):
        return tf.reshape(tf.reshape(x, [6, 4]), [3, 8])

    x = c(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    g = concrete(f, x).optimized_graph
    assert count(g, "Reshape") == 1
    traced_equals_eager(f, x)
    # An unknown batch dim that every step keeps: x itself.
    f2 = tf.function(lambda x: tf.exp(tf.reshape(tf.reshape(x, [-1, 2, 2]),
                                                 [-1, 4])),
                     input_signature=[tf.TensorSpec([None, 4])])
    assert "Reshape" not in types(f2.get_concrete_function().optimized_graph)
    xs = c(np.arange(12, dtype=np.float32).reshape(3, 4))
    same_bits(f2(xs), tf.exp(xs))


def test_reshape_that_may_fail_is_kept():
    # The inner reshape fails for 5 elements; merging would hide that.
    f = tf.function(lambda x: tf.reshape(tf.reshape(x, [2, 3]), [-1]),
                    input_signature=[tf.TensorSpec([None])])
    assert count(f.get_concrete_function().optimized_graph, "Reshape") == 2
    np.testing.assert_array_equal(f(c(np.arange(6.0, dtype=np.float32))),
                                  np.arange(6.0))
    with pytest.raises(tf.errors.InvalidArgumentError):
        f(c(np.arange(5.0, dtype=np.float32)))


def test_simplified_outputs_are_tensors_of_their_own():
    # `return tf.identity(x)` must not hand back x itself.
    fn = tf.function(lambda x: (tf.identity(x), x * 1.0), autograph=False)
    x = c(3.0)
    y, z = fn(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = x * y * z
    assert float(tape.gradient(out, x)) == 9.0        # y * z, not 3x^2


def test_cast_to_another_dtype_is_kept():
    fn = lambda x: tf.cast(x, tf.float64)          # noqa: E731
    assert "Cast" in types(concrete(fn, c(SPECIAL)).optimized_graph)
    traced_equals_eager(fn, c(SPECIAL))


# ---- inside control flow -------------------------------------------------

def test_passes_run_inside_cond_branches():
    def f(x):
        return tf.cond(x[0] > 0,
                       lambda: tf.exp(x * 1.0) + tf.constant(2.0) * 3.0,
                       lambda: tf.exp(x) + tf.exp(x))

    x = c([1.0, -2.0])
    cf = concrete(f, x)
    then_g, else_g = subgraphs(cf.optimized_graph, "If")
    assert "Mul" not in types(then_g), then_g.as_text()
    assert count(else_g, "Exp") == 1, else_g.as_text()
    then_raw, else_raw = subgraphs(cf.graph, "If")
    assert count(then_raw, "Mul") == 2 and count(else_raw, "Exp") == 2
    for v in ([1.0, -2.0], [-1.0, 2.0]):
        traced_equals_eager(f, c(v))


def test_passes_run_inside_while_bodies():
    def f(x):
        def body(i, a):
            return i + 1, tf.exp(a * 1.0) * 0.5 + tf.constant(1.0) / 4.0

        return tf.while_loop(lambda i, a: i < 3, body, [c(0), x])

    x = c([0.5, -1.0])
    cf = concrete(f, x)
    _, body = subgraphs(cf.optimized_graph, "While")
    assert count(body, "Mul") == 1 and "RealDiv" not in types(body), \
        body.as_text()
    traced_equals_eager(f, x)


def test_every_pass_off_gives_the_same_values():
    def f(x):
        y = tf.transpose(tf.transpose(x)) * 1.0 + tf.ones([2, 2]) * 2.0
        return tf.reduce_sum(tf.exp(y) + tf.exp(y), axis=0), tf.shape(x)

    x = c(np.array([[0.5, -1.0], [2.0, 0.0]], np.float32))
    expected = f(x)
    for name in _C.graph_passes():
        _C.set_graph_passes({n: n != name for n in _C.graph_passes()})
        same_bits(tf.function(f, autograph=False)(x), expected)


def test_ones_and_zeros_like_fold_only_if_their_input_still_runs():
    def f(i):
        x = tf.gather(tf.constant([1., 2., 3.]), i)   # fails at run time
        return tf.ones_like(x), tf.zeros_like(tf.identity(x))

    with pytest.raises(tf.errors.InvalidArgumentError):
        f(tf.constant([10]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.function(f)(tf.constant([10]))

    def g(i):
        x = tf.gather(tf.constant([1., 2., 3.]), i)
        return tf.ones_like(x), x * 2.0                # x still runs

    cf = tf.function(g).get_concrete_function(tf.constant([1]))
    assert "OnesLike" not in [op.type for op in
                              cf.optimized_graph.get_operations()]
