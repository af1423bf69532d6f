"""Wrong answers and missing errors found against TF 2.21 (issue 15):
each test holds TF's value or error type."""
import numpy as np
import pytest

import tfmini as tf


def test_saturate_cast_clamps_infinities_to_the_float_range():
    x = tf.constant([np.inf, 65504.0, 3.0, -np.inf], tf.float16)
    out = tf.saturate_cast(x, tf.int32)
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), [65504, 65504, 3, -65504])
    # float32 to int32: past the int range, clamped to its largest
    # float32 value (TF: 2147483520), inf too.
    x = tf.constant([np.inf, 3e9, -np.inf, -7.0])
    np.testing.assert_array_equal(tf.saturate_cast(x, tf.int32).numpy(),
                                  [2147483520, 2147483520, -2147483648, -7])
    np.testing.assert_array_equal(
        tf.saturate_cast(tf.constant([np.inf, -1.0, 300.0]),
                         tf.uint8).numpy(), [255, 0, 255])


def test_segment_mean_of_integers_stays_integer():
    out = tf.math.segment_mean(tf.constant([1, 2, 4, -7, 2]),
                               tf.constant([0, 0, 1, 2, 2]))
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), [1, 4, -2])   # truncated
    out = tf.math.segment_mean(tf.constant([1.0, 2.0]), tf.constant([0, 0]))
    assert out.dtype == tf.float32 and out.numpy()[0] == 1.5


def test_selu_gradient_at_zero_is_scale():
    x = tf.constant([-1.0, 0.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.selu(x)
    g = tape.gradient(y, x).numpy()
    scale, alpha = 1.0507009873554805, 1.6732632423543772
    np.testing.assert_allclose(g, [scale * alpha * np.exp(-1), scale, scale],
                               rtol=1e-6)


@pytest.mark.parametrize("paddings", [[1, 2], [[1, 2, 3]], [[1, 2], [1]]])
def test_pad_paddings_must_be_a_matrix(paddings):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="matrix with 2 columns"):
        tf.pad(tf.constant([1, 2, 3]), paddings)
    np.testing.assert_array_equal(
        tf.pad(tf.constant([1, 2, 3]), [[1, 2]]).numpy(), [0, 1, 2, 3, 0, 0])


def test_bincount_negative_maxlength_raises():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"size \(-2\) must be non-negative"):
        tf.math.bincount([4, 1], maxlength=-2)
    assert tf.math.bincount([4, 1], maxlength=0).numpy().tolist() == []


def test_where_of_a_scalar_raises():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Unhandled input dimensions: 0"):
        tf.where(tf.constant(True))
    assert tf.where(tf.constant([True, False])).numpy().tolist() == [[0]]


@pytest.mark.parametrize("depth", [9, 32, 65, 254])
def test_deep_nested_list_names_the_rank_limit(depth):
    v = 1
    for _ in range(depth):
        v = [v]
    with pytest.raises(ValueError, match="at most 8 dims"):
        tf.constant(v)
    with pytest.raises(ValueError, match="non-rectangular"):
        tf.constant([[1, 2], [3]])
