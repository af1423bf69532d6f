"""The string gaps of issue 16: `+` on strings (TF's Add string kernel),
tf.strings ops over RaggedTensor values, and tf.strings.unicode_script.
Expected values are TF 2.21's."""

import numpy as np
import pytest

import tfmini as tf

from _leaks import assert_no_leak


# ---- + on strings (AddV2) -------------------------------------------------

def test_string_plus_scalar_and_python_str():
    a = tf.constant("a")
    assert (a + "b").numpy() == b"ab"
    assert ("x" + a).numpy() == b"xa"
    assert tf.math.add(a, "c").numpy() == b"ac"
    assert tf.add("p", a).numpy() == b"pa"
    assert (a + "b").dtype == tf.string


def test_string_plus_broadcasts():
    r = tf.constant([["a"], ["bb"]]) + tf.constant(["1", "2", ""])
    assert r.shape == (2, 3)
    assert r.numpy().tolist() == [[b"a1", b"a2", b"a"],
                                  [b"bb1", b"bb2", b"bb"]]
    e = tf.constant("") + tf.constant(["", "q"])
    assert e.numpy().tolist() == [b"", b"q"]


def test_string_plus_bad_shapes_and_other_ops():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Incompatible shapes.*\[2\] vs \[3\]"):
        tf.constant(["a", "b"]) + tf.constant(["c", "d", "e"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Sub.*string"):
        tf.constant("a") - tf.constant("b")


def test_string_plus_in_function():
    f = tf.function(lambda x, y: x + y)
    r = f(tf.constant(["a", "b"]), tf.constant("z"))
    assert r.numpy().tolist() == [b"az", b"bz"]

    @tf.function
    def folded():
        return tf.constant(["a", "b"]) + "c" + tf.constant([["x"], ["y"]])
    assert folded().numpy().tolist() == [[b"acx", b"bcx"], [b"acy", b"bcy"]]


def test_string_plus_no_leak():
    x = tf.constant(["abc" * 10, "d"])
    assert_no_leak(lambda: x + "suffix")
