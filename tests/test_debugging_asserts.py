"""tf.debugging's eager assert texts against TF 2.21's (summarize 3 by
default: the first three differing values and elements, then "...")."""
import pytest

import tfmini as tf


def text(fn):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        fn()
    return str(e.value)


def test_assert_equal_shows_the_first_three_by_default():
    assert text(lambda: tf.debugging.assert_equal(
        tf.range(6), tf.constant([0, 1, 2, 0, 0, 0]))) == (
        "Condition x == y did not hold.\n"
        "Indices of first 3 different values:\n[[3]\n [4]\n [5]]\n"
        "Corresponding x values:\n[3 4 5]\n"
        "Corresponding y values:\n[0 0 0]\n"
        "First 3 elements of x:\n[0 1 2]\n"
        "First 3 elements of y:\n[0 1 2]")


def test_assert_equal_summarize():
    got = text(lambda: tf.debugging.assert_equal(
        tf.range(10), tf.range(10) + 1, summarize=5))
    assert "Indices of first 5 different values:" in got
    assert got.endswith("First 5 elements of x:\n[0 1 2 3 4]\n"
                        "First 5 elements of y:\n[1 2 3 4 5]")
    got = text(lambda: tf.debugging.assert_equal(
        tf.range(4), 2, message="hey", summarize=2))
    assert got == ("hey\nCondition x == y did not hold.\n"
                   "First 2 elements of x:\n[0 1]\n"
                   "First 1 elements of y:\n[2]")


def test_scalar_assert_has_no_index_lines():
    assert text(lambda: tf.debugging.assert_equal(tf.constant(1), 2)) == (
        "Condition x == y did not hold.\n"
        "First 1 elements of x:\n[1]\nFirst 1 elements of y:\n[2]")


def test_unary_assert_shows_the_first_three_then_dots():
    assert text(lambda: tf.debugging.assert_positive(tf.range(10) - 5)) == (
        "\nCondition x > 0 did not hold element-wise:\n"
        "x (shape=(10,) dtype=int32) = \n['-5', '-4', '-3', '...']")
    assert text(lambda: tf.debugging.assert_positive(
        tf.range(10) - 5, summarize=2, message="hey")).endswith(
        "\n['-5', '-4', '...']")
    assert text(lambda: tf.debugging.assert_positive(
        tf.constant([1, 0, 2]))).endswith("\n['1', '0', '2']")
