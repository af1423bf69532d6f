"""tf.nn beyond the OpSpec table: numerical stability, the cross-entropy
ops' second output, dropout, and errors."""
import math

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

from tfmini.ops.activation_ops import _relu_grad

from graph_util import bits_equal, passes
from specs.spec_nn import np_log_softmax, np_softmax


def _has(*names):
    return all(hasattr(tf, n) for n in names)


# ---- softmax ------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_is_stable_for_huge_logits(dtype):
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -2000.0]],
                 dtype=dtype)
    s = tf.nn.softmax(x).numpy()
    assert np.all(np.isfinite(s))
    np.testing.assert_allclose(s, np_softmax(x), rtol=1e-6)
    ls = tf.nn.log_softmax(x).numpy()
    np.testing.assert_allclose(ls, np_log_softmax(x), rtol=1e-6, atol=1e-6)


def test_softmax_rows_sum_to_one_in_parallel_path():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 1000)).astype("float32") * 10
    s = tf.nn.softmax(x).numpy()
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(s, np_softmax(x), rtol=1e-4, atol=1e-7)
    # And along a non-last axis of the same big tensor.
    s0 = tf.nn.softmax(x, axis=0).numpy()
    np.testing.assert_allclose(s0, np_softmax(x, 0), rtol=1e-4, atol=1e-7)


def test_softmax_nan_propagates():
    s = tf.nn.softmax(np.array([1.0, np.nan, 2.0], "float32")).numpy()
    assert np.all(np.isnan(s))


def test_softmax_float16():
    x = np.array([[1.0, 2.0, 3.0]], "float16")
    s = tf.nn.softmax(x)
    assert s.dtype == tf.float16
    np.testing.assert_allclose(s.numpy().astype("float32"), np_softmax(x),
                               rtol=2e-3)


def test_softmax_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Softmax"):
        tf.nn.softmax(np.array([1, 2, 3], "int32"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 2"):
        tf.nn.softmax(np.ones((2, 3), "float32"), axis=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
        tf.nn.log_softmax(tf.constant(1.0))


# ---- cross entropies ------------------------------------------------------

def test_sparse_xent_outputs_loss_and_backprop():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((6, 4)).astype("float64")
    labels = rng.integers(0, 4, size=6).astype("int64")
    loss, back = _C.call(ID["SparseSoftmaxCrossEntropyWithLogits"],
                         (logits, labels))
    want = -np_log_softmax(logits)[np.arange(6), labels]
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(back.numpy(),
                               np_softmax(logits) - np.eye(4)[labels],
                               rtol=1e-12, atol=1e-15)


def test_dense_xent_outputs_loss_and_backprop():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((3, 5))
    labels = np_softmax(rng.standard_normal((3, 5)))
    loss, back = _C.call(ID["SoftmaxCrossEntropyWithLogits"],
                         (logits, labels), i=(-1,))
    np.testing.assert_allclose(loss.numpy(),
                               -(labels * np_log_softmax(logits)).sum(-1),
                               rtol=1e-12)
    np.testing.assert_allclose(back.numpy(), np_softmax(logits) - labels,
                               rtol=1e-12, atol=1e-15)


def test_sparse_xent_is_stable_and_matches_big_batch():
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal((2000, 50)) * 100).astype("float32")
    labels = rng.integers(0, 50, size=2000).astype("int32")
    got = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits).numpy()
    assert np.all(np.isfinite(got))
    want = -np_log_softmax(logits)[np.arange(2000), labels]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("bad", [3, -1, 100])
def test_sparse_xent_out_of_range_label(bad):
    logits = np.zeros((2, 3), "float32")
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=np.array([0, bad]), logits=logits)
    msg = str(e.value)
    assert f"label value of {bad}" in msg and "[0, 3)" in msg


def test_sparse_xent_shape_errors_are_value_errors():
    logits = np.zeros((2, 3), "float32")
    with pytest.raises(ValueError, match="Rank mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=np.zeros((2, 3), "int32"), logits=logits)
    with pytest.raises(ValueError, match="Shape mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=np.zeros((4,), "int32"), logits=logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 or int64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=np.zeros((2,), "float32"), logits=logits)


def test_dense_xent_errors_and_label_conversion():
    logits = tf.constant([[1.0, 2.0, 3.0]])
    # Python labels take the logits' dtype.
    got = tf.nn.softmax_cross_entropy_with_logits(labels=[[0, 0, 1]],
                                                  logits=logits)
    np.testing.assert_allclose(got.numpy(),
                               [-np_log_softmax([1.0, 2.0, 3.0])[2]],
                               rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same shape"):
        tf.nn.softmax_cross_entropy_with_logits(
            labels=np.ones((1, 2), "float32"), logits=logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same dtype"):
        tf.nn.softmax_cross_entropy_with_logits(
            labels=np.ones((1, 3), "float64"), logits=logits)


def test_xent_float16_is_computed_in_float32():
    logits = np.array([[1.0, 2.0, 3.0]], "float16")
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=np.array([1]), logits=logits)
    assert loss.dtype == tf.float16
    np.testing.assert_allclose(float(loss.numpy()[0]),
                               -np_log_softmax([1.0, 2.0, 3.0])[1], rtol=2e-3)


# ---- bias_add ---------------------------------------------------------------

def test_bias_add_errors():
    x = np.ones((2, 3), "float32")
    with pytest.raises(tf.errors.InvalidArgumentError, match="\\[4\\]"):
        tf.nn.bias_add(x, np.ones(4, "float32"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="1-D"):
        tf.nn.bias_add(x, np.ones((1, 3), "float32"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank 2"):
        tf.nn.bias_add(np.ones(3, "float32"), np.ones(3, "float32"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="float64"):
        tf.nn.bias_add(x, np.ones(3, "float64"))
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.bias_add(x, np.ones(3, "float32"), data_format="HWCN")


def test_bias_add_python_bias_takes_value_dtype():
    x = tf.constant([[1.0, 2.0]], dtype=tf.float64)
    got = tf.nn.bias_add(x, [10, 20])
    assert got.dtype == tf.float64
    assert got.numpy().tolist() == [[11.0, 22.0]]


# ---- dropout ----------------------------------------------------------------
# dropout compares and casts with the elementwise family's kernels.
needs_compare = pytest.mark.skipif(not _has("greater_equal"),
                                   reason="needs the elementwise family")

@needs_compare
def test_dropout_zeroes_a_fraction_and_scales_the_rest():
    n = 100_000
    y = tf.nn.dropout(np.full(n, 2.0, "float32"), rate=0.25, seed=1).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 2.0 / 0.75, rtol=1e-6)
    frac = 1 - kept.mean()
    assert abs(frac - 0.25) < 6 * math.sqrt(0.25 * 0.75 / n)
    # The expected sum is preserved.
    assert abs(y.mean() - 2.0) < 0.05


@needs_compare
def test_dropout_seeded_is_reproducible():
    tf.random.set_seed(5)
    a = tf.nn.dropout(np.ones(50, "float32"), 0.5).numpy()
    tf.random.set_seed(5)
    b = tf.nn.dropout(np.ones(50, "float32"), 0.5).numpy()
    np.testing.assert_array_equal(a, b)
    tf.random.set_seed(None)


@needs_compare
def test_dropout_noise_shape_broadcasts():
    y = tf.nn.dropout(np.ones((200, 8), "float64"), 0.5,
                      noise_shape=[None, 1], seed=3).numpy()
    # Each row is all kept or all dropped.
    assert np.all((y == 0).all(axis=1) | (y == 2.0).all(axis=1))
    assert 0 < (y[:, 0] == 0).sum() < 200


def test_dropout_rate_zero_is_identity_and_bad_rates_raise():
    x = tf.constant([1.0, 2.0])
    assert tf.nn.dropout(x, 0.0) is x
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="rate"):
            tf.nn.dropout(x, bad)
    with pytest.raises(ValueError, match="floating point"):
        tf.nn.dropout(tf.constant([1, 2]), 0.5)


# ---- relu's gradient: one ReluGrad op -------------------------------------

def _relu_backward(x, u):
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.nn.relu(x)
    return t.gradient(y, x, output_gradients=u)


def _old_relu_backward(x, u):
    """The formula ReluGrad replaced: where(relu(x) > 0, u, 0)."""
    return tf.where(tf.greater(tf.nn.relu(x), 0), u, tf.zeros_like(u))


def test_relu_gradient_is_one_relu_grad_op():
    x = tf.constant(np.linspace(-2, 2, 64, dtype="float32"))
    u = tf.constant(np.linspace(1, 3, 64, dtype="float32"))
    old = {"SelectV2", "Greater", "ZerosLike"}
    cf = tf.function(_relu_backward).get_concrete_function(x, u)
    types = [op.type for op in cf.graph.get_operations()]
    assert types.count("ReluGrad") == 1 and not old & set(types), types
    with passes(fusion=False, remapping=False):
        cf = tf.function(_relu_backward).get_concrete_function(x, u)
        types = [op.type for op in cf.optimized_graph.get_operations()]
    assert types.count("ReluGrad") == 1 and not old & set(types), types
    # Elementwise on floats: fused with the Relu it reads.
    cf = tf.function(_relu_backward).get_concrete_function(x, u)
    types = [op.type for op in cf.optimized_graph.get_operations()]
    assert types.count("_FusedElementwise") == 1, types
    assert not ({"ReluGrad", "Relu"} | old) & set(types), types


def _relu_special_pairs(dtype, repeat=1):
    """Every (input, upstream gradient) pair over 0, -0, NaN, +-inf and
    finite values, tiled `repeat` times."""
    xs = [-1.0, -0.0, 0.0, 2.0, 1e-30, -1e-30, np.nan, np.inf, -np.inf]
    us = [0.0, -0.0, 1.5, -2.5, np.nan, np.inf, -np.inf]
    x = np.tile(np.repeat(np.array(xs, dtype), len(us)), repeat)
    u = np.tile(np.tile(np.array(us, dtype), len(xs)), repeat)
    return tf.constant(x), tf.constant(u)


# The pairs once, and 1200 times (75,600 elements): parallel kernel loops
# and fused nodes past the native-compile threshold.
@pytest.mark.parametrize("repeat", [1, 1200])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_relu_gradient_bitwise_equals_old_formula(dtype, repeat):
    x, u = _relu_special_pairs(dtype, repeat)
    want = _old_relu_backward(x, u).numpy()
    bits_equal(_relu_backward(x, u).numpy(), want)
    bits_equal(tf.function(_relu_backward)(x, u).numpy(), want)
    with passes(fusion=False, remapping=False):
        bits_equal(tf.function(_relu_backward)(x, u).numpy(), want)


def _relu_cubed_grads(x):
    """d/dx and d2/dx2 of sum(relu(x)^3) by nested tapes."""
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.nn.relu(x)
            loss = tf.reduce_sum(y * y * y)
        g = inner.gradient(loss, x)
    return g, outer.gradient(g, x)


def test_relu_second_order_gradients():
    xv = np.array([-1.5, -0.5, -0.0, 0.0, 0.5, 2.0])
    r = np.maximum(xv, 0)
    eager = _relu_cubed_grads(tf.constant(xv))
    traced = tf.function(_relu_cubed_grads)(tf.constant(xv))
    for g, h in (eager, traced):
        np.testing.assert_allclose(g.numpy(), 3 * r * r, rtol=1e-12)
        np.testing.assert_allclose(h.numpy(), 6 * r, rtol=1e-12)
    for a, b in zip(eager, traced):
        bits_equal(a.numpy(), b.numpy())
    # ReluGrad's own gradient: linear in the upstream gradient, flat in
    # the features.
    u, f = tf.constant([1.0, 2.0, 3.0]), tf.constant([1.0, -1.0, 0.0])
    with tf.GradientTape() as t:
        t.watch([u, f])
        z = tf.reduce_sum(_relu_grad(u, f) * tf.constant([5.0, 6.0, 7.0]))
    du, df = t.gradient(z, [u, f])
    np.testing.assert_array_equal(du.numpy(), [5.0, 0.0, 0.0])
    np.testing.assert_array_equal(df.numpy(), [0.0, 0.0, 0.0])


def test_relu_grad_errors():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"ReluGrad.*same shape.*\[2,3\] and \[3\]"):
        _relu_grad(tf.zeros([2, 3]), tf.zeros([3]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="ReluGrad.*float32 and float64"):
        _relu_grad(tf.zeros([3]), tf.zeros([3], tf.float64))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="ReluGrad expects numeric"):
        _relu_grad(tf.zeros([3], tf.bool), tf.zeros([3], tf.bool))


def test_relu_grad_traces_with_unknown_dims():
    spec = tf.TensorSpec([None, 3], tf.float32)
    f = tf.function(_relu_grad, input_signature=[spec, spec])
    g = np.array([[1.0, 2.0, 3.0]] * 2, "float32")
    x = np.array([[1.0, -1.0, 0.0], [np.nan, 2.0, -0.0]], "float32")
    np.testing.assert_array_equal(f(g, x).numpy(), [[1, 0, 0], [0, 2, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ReluGrad"):
        f(g, x[:1])


# ---- composites over other families' ops ----------------------------------

@pytest.mark.skipif(not _has("reduce_sum") or not hasattr(tf.math, "rsqrt"),
                    reason="needs reduce_sum and rsqrt")
def test_l2_normalize_zero_vector_stays_finite():
    y = tf.nn.l2_normalize(np.zeros((2, 3), "float32"), axis=1).numpy()
    np.testing.assert_array_equal(y, 0.0)
    y = tf.nn.l2_normalize(np.array([3.0, 4.0]), axis=0).numpy()
    np.testing.assert_allclose(y, [0.6, 0.8])


@pytest.mark.skipif(not _has("reduce_mean", "squeeze", "stop_gradient"),
                    reason="needs reduce_mean, squeeze and stop_gradient")
def test_moments_float16_and_shapes():
    x = np.arange(12, dtype="float16").reshape(3, 4)
    mean, var = tf.nn.moments(x, axes=[1])
    assert mean.dtype == tf.float16 and mean.shape == (3,)
    np.testing.assert_allclose(mean.numpy(), x.astype("f4").mean(1))
    np.testing.assert_allclose(var.numpy(), x.astype("f4").var(1))
