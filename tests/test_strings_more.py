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


# ---- tf.strings over RaggedTensor values ----------------------------------

def _rt():
    return tf.ragged.constant([["Hello", " wOrld "], [], ["ab c"]])


@pytest.mark.parametrize("fn,want", [
    (lambda r: tf.strings.length(r), [[5, 7], [], [4]]),
    (lambda r: tf.strings.upper(r), [[b"HELLO", b" WORLD "], [], [b"AB C"]]),
    (lambda r: tf.strings.lower(r), [[b"hello", b" world "], [], [b"ab c"]]),
    (lambda r: tf.strings.strip(r), [[b"Hello", b"wOrld"], [], [b"ab c"]]),
    (lambda r: tf.strings.substr(r, 1, 2), [[b"el", b"wO"], [], [b"b "]]),
    (lambda r: tf.strings.regex_replace(r, "o", "0"),
     [[b"Hell0", b" wOrld "], [], [b"ab c"]]),
    (lambda r: tf.strings.regex_full_match(r, ".*o.*"),
     [[True, False], [], [False]]),
    (lambda r: tf.strings.to_hash_bucket_fast(r, 10), [[1, 3], [], [9]]),
    (lambda r: tf.strings.join([r, r], separator="-"),
     [[b"Hello-Hello", b" wOrld - wOrld "], [], [b"ab c-ab c"]]),
    (lambda r: tf.strings.join([r, "x"]),
     [[b"Hellox", b" wOrld x"], [], [b"ab cx"]]),
    (lambda r: tf.strings.split(r),
     [[[b"Hello"], [b"wOrld"]], [], [[b"ab", b"c"]]]),
    (lambda r: tf.strings.split(r, sep="l"),
     [[[b"He", b"", b"o"], [b" wOr", b"d "]], [], [[b"ab c"]]]),
])
def test_strings_ops_on_ragged(fn, want):
    r = fn(_rt())
    assert isinstance(r, tf.RaggedTensor)
    assert r.to_list() == want


def test_strings_ragged_conversions_and_unicode():
    assert tf.strings.length(tf.ragged.constant([["héllo"]]),
                             unit="UTF8_CHAR").to_list() == [[5]]
    n = tf.strings.to_number(tf.ragged.constant([["1.5", "2"], ["3"]]))
    assert n.dtype == tf.float32 and n.to_list() == [[1.5, 2.0], [3.0]]
    n = tf.strings.to_number(tf.ragged.constant([["1", "2"], ["3"]]),
                             tf.int64)
    assert n.dtype == tf.int64 and n.to_list() == [[1, 2], [3]]
    s = tf.strings.as_string(tf.ragged.constant([[1, 2], [3]]))
    assert s.to_list() == [[b"1", b"2"], [b"3"]]
    assert tf.strings.bytes_split(tf.ragged.constant([["ab"], ["c"]])) \
        .to_list() == [[[b"a", b"b"]], [[b"c"]]]
    assert tf.strings.unicode_split(tf.ragged.constant([["hé"], ["c"]]),
                                    "UTF-8").to_list() == \
        [[[b"h", b"\xc3\xa9"]], [[b"c"]]]
    x = tf.ragged.constant([["hé"], ["c", ""]])
    assert tf.strings.unicode_decode(x, "UTF-8").to_list() == \
        [[[104, 233]], [[99], []]]
    chars, starts = tf.strings.unicode_decode_with_offsets(x, "UTF-8")
    assert chars.to_list() == [[[104, 233]], [[99], []]]
    assert starts.to_list() == [[[0, 1]], [[0], []]]
    t = tf.strings.unicode_transcode(tf.ragged.constant([["hé"], ["c"]]),
                                     "UTF-8", "UTF-16-BE")
    assert t.to_list() == [[b"\x00h\x00\xe9"], [b"\x00c"]]


def test_reduce_join_over_ragged_axes():
    r = _rt()
    j = tf.strings.reduce_join(r, axis=1, separator="|")
    assert isinstance(j, tf.Tensor)
    assert j.numpy().tolist() == [b"Hello| wOrld ", b"", b"ab c"]
    assert tf.strings.reduce_join(r, axis=-1).numpy().tolist() == \
        [b"Hello wOrld ", b"", b"ab c"]
    assert tf.strings.reduce_join(r, axis=0, separator="|").numpy() \
        .tolist() == [b"Hello|ab c", b" wOrld "]
    assert tf.strings.reduce_join(r, separator="|").numpy() == \
        b"Hello| wOrld |ab c"
    k = tf.strings.reduce_join(r, axis=1, keepdims=True)
    assert k.shape == (3, 1)
    assert k.numpy().tolist() == [[b"Hello wOrld "], [b""], [b"ab c"]]
    r2 = tf.ragged.constant([[["a", "b"], ["c"]], [["d"]]])
    assert tf.strings.reduce_join(r2, axis=2).to_list() == \
        [[b"ab", b"c"], [b"d"]]
    assert tf.strings.reduce_join(r2, axis=1).to_list() == \
        [[b"ac", b"b"], [b"d"]]


def test_ragged_string_and_bool_to_tensor():
    r = tf.ragged.constant([["a", "b"], [], ["c"]])
    assert r.to_tensor().numpy().tolist() == [[b"a", b"b"], [b"", b""],
                                              [b"c", b""]]
    assert r.to_tensor("Q", shape=[2, 3]).numpy().tolist() == \
        [[b"a", b"b", b"Q"], [b"Q", b"Q", b"Q"]]
    assert tf.ragged.constant([[True], [False, True]]).to_tensor() \
        .numpy().tolist() == [[True, False], [False, True]]


def test_strings_on_ragged_traced():
    spec = tf.RaggedTensorSpec([None, None], tf.string)

    @tf.function(input_signature=[spec])
    def f(r):
        return tf.strings.length(tf.strings.upper(r)), tf.strings.split(r)
    n, s = f(tf.ragged.constant([["a b", "bb"], [], ["c"]]))
    assert n.to_list() == [[3, 2], [], [1]]
    assert s.to_list() == [[[b"a", b"b"], [b"bb"]], [], [[b"c"]]]

    @tf.function(input_signature=[tf.RaggedTensorSpec([3, None], tf.string)])
    def g(r):
        return tf.strings.reduce_join(r, axis=0, separator="|")
    with pytest.raises(ValueError, match="to_tensor while tracing"):
        g(tf.ragged.constant([["a b", "bb"], [], ["c"]]))


def test_tf_split_keeps_its_own_meaning():
    # tf.split (not tf.strings.split) is not wrapped into a string split.
    x = tf.constant([1, 2, 3, 4])
    a, b = tf.split(x, 2)
    assert a.numpy().tolist() == [1, 2]


# ---- tf.strings.unicode_script (ICU) --------------------------------------

def _icu_or_skip():
    try:
        tf.strings.unicode_script([72])
    except tf.errors.UnimplementedError as e:
        assert "libicu-dev" in str(e)
        pytest.skip("tfmini built without ICU (apt-get install libicu-dev)")


def test_unicode_script_values_are_tfs():
    _icu_or_skip()
    # TF 2.21: Latin 25, Cyrillic 8, Han 17, no code point -1, Common 0,
    # an emoji Common 0, Arabic 2.
    r = tf.strings.unicode_script(
        [72, 1049, 19990, -1, 0x110000, 0, 0x1F600, 0x0627])
    assert r.dtype == tf.int32
    assert r.numpy().tolist() == [25, 8, 17, -1, -1, 0, 0, 2]
    r = tf.strings.unicode_script(tf.constant([[72]], tf.int32))
    assert r.shape == (1, 1) and r.numpy().tolist() == [[25]]


def test_unicode_script_of_decoded_text_and_ragged():
    _icu_or_skip()
    chars = tf.strings.unicode_decode(["Hй", "世"], "UTF-8")
    s = tf.strings.unicode_script(chars)
    assert isinstance(s, tf.RaggedTensor)
    assert s.to_list() == [[25, 8], [17]]
    assert tf.strings.unicode_script(tf.ragged.constant(
        [[72, 1049], [19990]])).to_list() == [[25, 8], [17]]


def test_unicode_script_wants_int32():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="UnicodeScript.*int32.*int64"):
        tf.strings.unicode_script(tf.constant([72], tf.int64))


def test_unicode_script_in_function():
    _icu_or_skip()
    f = tf.function(lambda x: tf.strings.unicode_script(x))
    assert f(tf.constant([72, 1049])).numpy().tolist() == [25, 8]
