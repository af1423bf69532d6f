"""Elementwise fusion and the matmul epilogue (issue 5): traced functions
compute the same numbers with fusion on as with it off, bitwise where the
ops are exact; the optimized graph has the fused nodes it should; errors,
empty tensors, scalars, gradients and memory behave."""
import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tfmini as tf
from graph_util import (bits_equal, draw_ops, passes, run_program,
                        value_scale)
from tfmini import _C


def op_types(fn, *args):
    cf = fn.get_concrete_function(*args)
    return [op.type for op in cf.optimized_graph.get_operations()]


def fused_and_unfused(f, *args):
    """f traced with fusion (and the epilogue) on and off: both results."""
    on = tf.function(f)
    r_on = on(*args)
    with passes(fusion=False, remapping=False):
        off = tf.function(f)
        r_off = off(*args)
    assert "_FusedElementwise" not in op_types(off, *args)
    return on, r_on.numpy(), r_off.numpy()


# ---- the 8-op chain ----

def chain8(x, a, b, c):
    y = ((x * a + b) * tf.sigmoid(x) - c) ** 2.0
    return tf.nn.relu(y - x) * a + 1.0


def test_chain_of_8_ops_is_one_fused_node():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((64, 257)).astype(np.float32))
    a, b, c = tf.constant(1.5), tf.constant(0.25), tf.constant(0.5)
    on, r_on, r_off = fused_and_unfused(chain8, x, a, b, c)
    types = op_types(on, x, a, b, c)
    assert types.count("_FusedElementwise") == 1
    assert set(types) == {"Placeholder", "Const", "_FusedElementwise"}, types
    np.testing.assert_allclose(r_on, r_off, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(r_on, chain8(x, a, b, c).numpy(), rtol=1e-6,
                               atol=1e-6)


def test_exact_chain_is_bitwise_equal_to_eager_and_unfused():
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal(100_003).astype(np.float32))
    bias = tf.constant(rng.standard_normal(100_003).astype(np.float32))

    def f(x, bias):
        y = (x * 1.25 + bias) / (tf.abs(x) + 1.0)
        return tf.maximum(tf.sqrt(tf.square(y) + 0.5) - y, -x) * 3.0

    on, r_on, r_off = fused_and_unfused(f, x, bias)
    assert op_types(on, x, bias).count("_FusedElementwise") == 1
    bits_equal(r_on, r_off)
    bits_equal(r_on, f(x, bias).numpy())


# ---- random expression graphs ----

UNARY_EXACT = [tf.negative, tf.abs, tf.square, tf.nn.relu, tf.sqrt,
               tf.math.reciprocal, tf.floor, tf.nn.relu6]
UNARY_INEXACT = [tf.exp, tf.tanh, tf.sigmoid, tf.math.log1p, tf.sin,
                 tf.nn.softplus, tf.math.erf]
BINARY_EXACT = [tf.add, tf.subtract, tf.multiply, tf.divide, tf.maximum,
                tf.minimum, tf.math.squared_difference]
BINARY_INEXACT = [tf.pow]


@st.composite
def expr_programs(draw):
    """A random DAG of elementwise ops: a list of (op, operand indices)
    over values 0..k-1 (the inputs first), the input shapes (the full
    shape, scalars, trailing vectors and size-1 dims) and a dtype."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=rank,
                                max_size=rank)))
    if draw(st.booleans()):                 # sometimes bigger than a block
        shape = shape[:-1] + (shape[-1] * 1031,)
    ninputs = draw(st.integers(1, 4))
    shapes = [shape]
    for _ in range(ninputs - 1):
        kind = draw(st.sampled_from(["full", "scalar", "trailing", "ones"]))
        if kind == "full":
            shapes.append(shape)
        elif kind == "scalar":
            shapes.append(())
        elif kind == "trailing":
            shapes.append(shape[draw(st.integers(0, rank - 1)):])
        else:
            shapes.append(tuple(1 if draw(st.booleans()) else d
                                for d in shape))
    exact = draw(st.booleans())
    unary = UNARY_EXACT if exact else UNARY_EXACT + UNARY_INEXACT
    binary = BINARY_EXACT if exact else BINARY_EXACT + BINARY_INEXACT
    ops = draw_ops(draw, ninputs, unary, binary, 12)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    nout = draw(st.integers(1, 2))
    return shapes, ops, dtype, exact, nout


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(expr_programs(), st.integers(0, 2**31 - 1))
def test_random_expression_graphs_fused_vs_unfused(prog, seed):
    shapes, ops, dtype, exact, nout = prog
    rng = np.random.default_rng(seed)
    # Positive inputs keep sqrt/log/pow mostly real; NaNs must match too.
    inputs = [tf.constant((rng.random(s) * 2 + 0.1).astype(dtype))
              for s in shapes]
    f = run_program(ops, nout)
    on = tf.function(f)
    r_on = [r.numpy() for r in on(*inputs)]
    with passes(fusion=False, remapping=False):
        off = tf.function(f)
        r_off = [r.numpy() for r in off(*inputs)]
    with np.errstate(all="ignore"):
        for a, b in zip(r_on, r_off):
            if exact:
                bits_equal(a, b)
            else:
                # libm's vector and scalar variants differ in the last
                # bits; a later subtraction may cancel the leading ones
                # and a sine turns them into an absolute error, so the
                # bound scales with the largest value on the way.
                rtol = 1e-5 if dtype == np.float32 else 1e-12
                scale = value_scale(ops, inputs)
                np.testing.assert_allclose(a, b, rtol=rtol,
                                           atol=rtol * scale,
                                           equal_nan=True)


def test_shared_intermediate_is_computed_once_and_right():
    x = tf.constant(np.linspace(-3, 3, 5000, dtype=np.float32))

    def f(x):
        y = x * 2.0 + 1.0            # read in the tree and after it
        return tf.nn.relu(y) * y - y, y * 3.0

    on, r_on = tf.function(f), None
    a, b = on(x)
    with passes(fusion=False, remapping=False):
        a0, b0 = tf.function(f)(x)
    bits_equal(a.numpy(), a0.numpy())
    bits_equal(b.numpy(), b0.numpy())
    assert op_types(on, x).count("_FusedElementwise") >= 1


def test_broadcast_inputs_of_every_kind():
    rng = np.random.default_rng(3)
    x = tf.constant(rng.standard_normal((37, 5, 301)).astype(np.float64))
    col = tf.constant(rng.standard_normal((37, 1, 1)).astype(np.float64))
    row = tf.constant(rng.standard_normal((5, 301)).astype(np.float64))
    mid = tf.constant(rng.standard_normal((1, 5, 1)).astype(np.float64))

    def f(x, col, row, mid):
        return ((x - col) * row + mid) * 0.5 - x

    on, r_on, r_off = fused_and_unfused(f, x, col, row, mid)
    assert op_types(on, x, col, row, mid).count("_FusedElementwise") == 1
    bits_equal(r_on, r_off)


def test_cast_inside_a_fused_group():
    x = tf.constant(np.linspace(-2, 2, 9999, dtype=np.float32))

    def f(x):
        y = tf.cast(x * 3.0, tf.float64) + 1.0
        return tf.cast(tf.nn.relu(y) * 0.1, tf.float32) - x

    on, r_on, r_off = fused_and_unfused(f, x)
    assert op_types(on, x).count("_FusedElementwise") == 1
    bits_equal(r_on, r_off)


def test_empty_and_rank0():
    f = tf.function(lambda x: tf.nn.relu(x * 2.0 - 1.0) + 0.5)
    e = tf.zeros((0, 7))
    assert f(e).shape == (0, 7)
    s = tf.constant(3.0)
    r = f(s)
    assert r.shape == () and r.numpy() == 5.5
    assert "_FusedElementwise" in op_types(f, s)


# ---- the matmul epilogue ----

def test_dense_relu_is_one_fused_matmul_bitwise():
    rng = np.random.default_rng(4)
    x = tf.constant(rng.standard_normal((256, 300)).astype(np.float32))
    w = tf.constant(rng.standard_normal((300, 130)).astype(np.float32))
    b = tf.constant(rng.standard_normal(130).astype(np.float32))

    def dense(x, w, b):
        return tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))

    on, r_on, r_off = fused_and_unfused(dense, x, w, b)
    types = op_types(on, x, w, b)
    assert types.count("_FusedMatMul") == 1
    assert "BatchMatMulV2" not in types and "Relu" not in types
    bits_equal(r_on, r_off)
    bits_equal(r_on, dense(x, w, b).numpy())


def test_keras_dense_layer_uses_the_epilogue():
    layer = tf.keras.layers.Dense(64, activation="relu")
    x = tf.constant(np.random.default_rng(5).standard_normal(
        (256, 32)).astype(np.float32))
    eager = layer(x).numpy()
    f = tf.function(lambda x: layer(x))
    bits_equal(f(x).numpy(), eager)
    assert "_FusedMatMul" in op_types(f, x)


def test_epilogue_with_transposes_and_sigmoid():
    rng = np.random.default_rng(6)
    a = tf.constant(rng.standard_normal((40, 17)).astype(np.float64))
    w = tf.constant(rng.standard_normal((23, 40)).astype(np.float64))
    b = tf.constant(rng.standard_normal(23).astype(np.float64))

    def f(a, w, b):
        return tf.sigmoid(tf.matmul(a, w, transpose_a=True,
                                    transpose_b=True) + b) * 2.0

    on, r_on, r_off = fused_and_unfused(f, a, w, b)
    assert op_types(on, a, w, b).count("_FusedMatMul") == 1
    np.testing.assert_allclose(r_on, r_off, rtol=1e-13)


def test_matmul_read_twice_is_not_fused():
    x = tf.constant(np.ones((8, 8), np.float32))

    def f(x):
        m = tf.matmul(x, x)
        return tf.nn.relu(m + 1.0), m

    on = tf.function(f)
    assert "_FusedMatMul" not in op_types(on, x)
    r, m = on(x)
    bits_equal(r.numpy(), np.full((8, 8), 9.0, np.float32))


# ---- gradients ----

def test_traced_train_step_fuses_backward_chains():
    rng = np.random.default_rng(7)
    w = tf.Variable(rng.standard_normal((20, 10)).astype(np.float32))
    b = tf.Variable(np.zeros(10, np.float32))
    x = tf.constant(rng.standard_normal((64, 20)).astype(np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            h = tf.tanh(tf.matmul(x, w) + b)
            loss = tf.reduce_sum(tf.square(h * 2.0 - 1.0))
        gw, gb = tape.gradient(loss, [w, b])
        return loss, gw, gb

    on = tf.function(step)
    types = op_types(on, x)
    assert "_FusedMatMul" in types or "_FusedElementwise" in types
    r_on = [t.numpy() for t in on(x)]
    with passes(fusion=False, remapping=False):
        r_off = [t.numpy() for t in tf.function(step)(x)]
    for a, b_ in zip(r_on, r_off):
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-5)


def test_tape_outside_a_fused_function():
    f = tf.function(lambda x: tf.sigmoid(x * 3.0 - 1.0) * x)
    x = tf.constant(np.linspace(-1, 1, 50, dtype=np.float32))
    assert "_FusedElementwise" in op_types(f, x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(f(x))
    g = tape.gradient(y, x).numpy()
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.sigmoid(x * 3.0 - 1.0) * x)
    np.testing.assert_allclose(g, tape.gradient(y, x).numpy(), rtol=1e-6)


# ---- errors, memory ----

def test_fused_node_keeps_the_users_line():
    def f(x):
        return tf.nn.relu(x * 2.0) - 1.0      # the root's line

    fn = tf.function(f)
    ops = fn.get_concrete_function(tf.zeros(4)).optimized_graph \
        .get_operations()
    fused = [op for op in ops if op.type == "_FusedElementwise"]
    assert len(fused) == 1
    assert "test_graph_fusion.py" in fused[0].site
    assert "in f" in fused[0].site


def test_bad_input_to_a_fused_function_names_input_and_later_op():
    @tf.function
    def f(x, i):
        y = tf.nn.relu(x * 2.0) - 1.0
        return tf.gather(y, i)

    x = tf.zeros(4)
    cf = f.get_concrete_function(x, tf.constant(1))
    assert "_FusedElementwise" in [
        op.type for op in cf.optimized_graph.get_operations()]
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError,
                        TypeError), match="shape"):
        cf(tf.zeros(5), tf.constant(1))
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        f(x, tf.constant(9))
    assert "GatherV2" in str(e.value)
    assert "test_graph_fusion.py" in str(e.value)


@pytest.mark.parametrize("name", ["_FusedElementwise", "_FusedMatMul"])
def test_fused_ops_have_no_eager_form(name):
    op = [row[0] for row in _C.op_table()].index(name)
    x = tf.constant([1.0, 2.0])
    with pytest.raises(tf.errors.InternalError, match="graph optimizer"):
        _C.call(op, [x, x], None, None, None, None)


def live():
    gc.collect()
    tensors, buffers, _ = _C.live_counts()
    graphs, concretes = _C.function_live_counts()
    return tensors, buffers, graphs, concretes


def test_fused_calls_leak_nothing():
    rng = np.random.default_rng(8)
    x = tf.constant(rng.standard_normal((300, 129)).astype(np.float32))
    w = tf.constant(rng.standard_normal((129, 64)).astype(np.float32))
    b = tf.constant(rng.standard_normal(64).astype(np.float32))

    @tf.function
    def f(x):
        h = tf.nn.relu(tf.matmul(x, w) + b)
        return tf.sigmoid(h * 2.0 - 1.0) + b

    f(x)
    before = live()
    for _ in range(300):
        r = f(x)
    del r
    assert live() == before


def test_fusion_inside_cond_and_while_bodies():
    x = tf.constant(np.linspace(-2, 2, 3000, dtype=np.float32))

    def f(x):
        y = tf.cond(tf.reduce_sum(x) > -1.0,
                    lambda: tf.nn.relu(x * 2.0 - 1.0) + x,
                    lambda: tf.abs(x) * 3.0 - 1.0)

        def body(i, v):
            return i + 1, tf.maximum(v * 0.5 + 0.25, -v) - 0.125
        _, z = tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), y])
        return z

    on, r_on, r_off = fused_and_unfused(f, x)
    bits_equal(r_on, r_off)
    bits_equal(r_on, f(x).numpy())


def test_value_read_after_the_group_is_an_extra_output():
    x = tf.constant(np.linspace(-3, 3, 7001, dtype=np.float32))

    def f(x):
        y = x * 2.0 + 1.0
        z = tf.nn.relu(y) * y - 1.0
        return z, tf.reduce_sum(y), y

    on, r_on = tf.function(f), None
    cf = on.get_concrete_function(x)
    fused = [op for op in cf.optimized_graph.get_operations()
             if op.type == "_FusedElementwise"]
    assert len(fused) == 1 and len(fused[0].outputs) == 2
    got = [t.numpy() for t in on(x)]
    with passes(fusion=False, remapping=False):
        want = [t.numpy() for t in tf.function(f)(x)]
    for a, b in zip(got, want):
        bits_equal(a, b)


def test_value_read_before_the_root_is_not_exported():
    x = tf.constant(np.linspace(-3, 3, 500, dtype=np.float32))

    def f(x):
        y = x * 2.0 + 1.0
        s = tf.reduce_sum(y)          # reads y before the chain's root
        return tf.nn.relu(y) * s - y

    got = tf.function(f)(x).numpy()
    with passes(fusion=False, remapping=False):
        want = tf.function(f)(x).numpy()
    bits_equal(got, want)
