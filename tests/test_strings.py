"""tf.string and tf.strings: values, reprs and errors against TF's
documented examples (the "Unicode strings" guide, the API docs), and
strings through tf.function, tf.data and saved models."""

import numpy as np
import pytest

import tfmini as tf

from _leaks import assert_no_leak

RAGGED = getattr(tf, "RaggedTensor", None) is not None


def rows(r):
    """A ragged result as nested lists, with or without tf.RaggedTensor."""
    if isinstance(r, tuple):
        values, splits = (x.numpy().tolist() for x in r)
        return [values[a:b] for a, b in zip(splits, splits[1:])]
    return r.to_list()


# ---- the dtype, conversion and printing --------------------------------

def test_scalar_repr_str_numpy():
    t = tf.constant("Gray wolf")
    assert t.dtype == tf.string and t.dtype.name == "string"
    assert repr(t) == ("<tf.Tensor: shape=(), dtype=string, "
                       "numpy=b'Gray wolf'>")
    assert str(t) == "tf.Tensor(b'Gray wolf', shape=(), dtype=string)"
    assert t.numpy() == b"Gray wolf"


def test_vector_repr_and_numpy():
    t = tf.constant(["Gray wolf", "Quick brown fox", "Lazy dog"])
    assert repr(t) == (
        "<tf.Tensor: shape=(3,), dtype=string, numpy=array([b'Gray wolf', "
        "b'Quick brown fox', b'Lazy dog'], dtype=object)>")
    a = t.numpy()
    assert a.dtype == object and a.tolist() == [b"Gray wolf",
                                                b"Quick brown fox",
                                                b"Lazy dog"]


def test_conversions_in():
    assert tf.constant([b"a", "b"]).numpy().tolist() == [b"a", b"b"]
    nested = tf.constant([["a", "bc"], ["", "d"]])
    assert nested.shape == (2, 2)
    assert nested.numpy()[1, 0] == b""
    assert tf.constant(np.array(["x", "yy"])).numpy().tolist() == [b"x",
                                                                   b"yy"]
    assert tf.constant(np.array([b"x", b"\0z"])).numpy().tolist() == [
        b"x", b"\0z"]
    obj = np.array([b"p", "q"], dtype=object)
    assert tf.constant(obj).numpy().tolist() == [b"p", b"q"]
    # str is encoded as UTF-8, as TF does.
    assert tf.constant("语言处理").numpy() == "语言处理".encode()
    assert tf.constant("x", dtype=tf.string).dtype == tf.string
    assert tf.as_dtype(str) == tf.string
    assert tf.as_dtype(np.object_) == tf.string


def test_conversion_errors():
    with pytest.raises(TypeError, match="dtype string"):
        tf.constant(1, dtype=tf.string)
    with pytest.raises(TypeError):
        tf.constant("a", dtype=tf.float32)
    with pytest.raises(ValueError, match="mixed types"):
        tf.constant(["a", 1])
    with pytest.raises(ValueError, match="non-rectangular"):
        tf.constant([["a"], ["b", "c"]])


def test_equality_and_copies():
    t = tf.constant(["a", "b", "a"])
    assert (t == "a").numpy().tolist() == [True, False, True]
    assert tf.not_equal(t, tf.constant("b")).numpy().tolist() == [
        True, False, True]
    assert tf.equal(tf.constant([["a"], ["b"]]), t).shape == (2, 3)
    assert tf.reshape(t, [3, 1]).numpy()[2, 0] == b"a"
    assert tf.concat([t, t], 0).numpy().tolist()[3:] == [b"a", b"b", b"a"]
    assert tf.gather(t, [1, 0]).numpy().tolist() == [b"b", b"a"]
    assert t[1].numpy() == b"b"
    assert tf.stack([t, t]).shape == (2, 3)
    assert tf.where(tf.constant([True, False, True]), t,
                    tf.constant("z")).numpy().tolist() == [b"a", b"z", b"a"]


def test_numeric_ops_refuse_strings_by_name():
    t = tf.constant(["a"])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Cast: no kernel for dtype string"):
        tf.cast(t, tf.float32)
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError)):
        t * t   # + concatenates (TF's Add string kernel): see test_strings_more
    with pytest.raises(tf.errors.InvalidArgumentError, match="Sum.*string"):
        tf.reduce_sum(t)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Abs.*string"):
        tf.abs("abc")


def test_tf_print_shows_strings(capfd):
    tf.print(tf.constant(["a", "b\n"]), tf.constant("bare"))
    assert '["a" "b\\n"] bare' in capfd.readouterr().err


def test_print_and_format():
    assert tf.strings.format("tensor: {}, suffix",
                             tf.range(5)).numpy() == \
        b"tensor: [0 1 2 3 4], suffix"
    assert tf.strings.format("{}", tf.range(10)).numpy() == \
        b"[0 1 2 ... 7 8 9]"
    assert tf.strings.format("{} and {}",
                             [tf.constant("x"), tf.constant(["a", "b"])]
                             ).numpy() == b'x and ["a" "b"]'
    with pytest.raises(tf.errors.InvalidArgumentError, match="placeholder"):
        tf.strings.format("{} {}", tf.constant(1))


def test_tensor_guide_string_cells():
    # The "String tensors" cells of TF's tensor guide, printed output.
    scalar_string_tensor = tf.constant("Gray wolf")
    tensor_of_strings = tf.constant(["Gray wolf", "Quick brown fox",
                                     "Lazy dog"])
    assert str(tensor_of_strings) == (
        "tf.Tensor([b'Gray wolf' b'Quick brown fox' b'Lazy dog'], "
        "shape=(3,), dtype=string)")
    assert repr(tf.constant("🥳👍")) == (
        "<tf.Tensor: shape=(), dtype=string, "
        "numpy=b'\\xf0\\x9f\\xa5\\xb3\\xf0\\x9f\\x91\\x8d'>")
    assert str(tf.strings.split(scalar_string_tensor, sep=" ")) == \
        "tf.Tensor([b'Gray' b'wolf'], shape=(2,), dtype=string)"
    assert rows(tf.strings.split(tensor_of_strings)) == [
        [b"Gray", b"wolf"], [b"Quick", b"brown", b"fox"], [b"Lazy", b"dog"]]
    text = tf.constant("1 10 100")
    assert str(tf.strings.to_number(tf.strings.split(text, " "))) == \
        "tf.Tensor([  1.  10. 100.], shape=(3,), dtype=float32)"
    assert str(tf.strings.bytes_split(tf.constant("Duck"))) == \
        "tf.Tensor([b'D' b'u' b'c' b'k'], shape=(4,), dtype=string)"
    assert str(tf.io.decode_raw(tf.constant("Duck"), tf.uint8)) == \
        "tf.Tensor([ 68 117  99 107], shape=(4,), dtype=uint8)"
    unicode_bytes = tf.constant("アヒル 🦆")
    assert str(tf.strings.unicode_decode(unicode_bytes, "UTF-8")) == (
        "tf.Tensor([ 12450  12498  12523     32 129414], shape=(5,), "
        "dtype=int32)")
    assert len(tf.strings.unicode_split(unicode_bytes, "UTF-8")) == 5


# ---- tf.strings ----------------------------------------------------------

def test_length_bytes_and_utf8_chars():
    thanks = "Thanks 😊".encode("UTF-8")
    assert tf.strings.length(thanks).numpy() == 11
    assert tf.strings.length(thanks, unit="UTF8_CHAR").numpy() == 8
    assert tf.strings.length(["ab", ""]).dtype == tf.int32
    with pytest.raises(ValueError, match="unit"):
        tf.strings.length("a", unit="CHAR")


def test_join_and_reduce_join():
    assert tf.strings.join(["abc", "def"]).numpy() == b"abcdef"
    assert tf.strings.join([["abc", "123"], ["def", "456"]],
                           separator=" ").numpy().tolist() == [b"abc def",
                                                               b"123 456"]
    x = [["abc", "123"], ["def", "456"]]
    assert tf.strings.reduce_join(x).numpy() == b"abc123def456"
    assert tf.strings.reduce_join(x, axis=-1).numpy().tolist() == [
        b"abc123", b"def456"]
    assert tf.strings.reduce_join(x, -1, separator=".").numpy().tolist() \
        == [b"abc.123", b"def.456"]
    assert tf.strings.reduce_join(x, 0, keepdims=True).shape == (1, 2)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"StringJoin.*\[2\].*\[3\]"):
        tf.strings.join([tf.constant(["a", "b"]),
                         tf.constant(["a", "b", "c"])])


def test_substr_bytes_and_chars():
    thanks = "Thanks 😊".encode("UTF-8")
    assert tf.strings.substr(thanks, pos=7, len=1).numpy() == b"\xf0"
    assert tf.strings.substr(thanks, pos=7, len=1,
                             unit="UTF8_CHAR").numpy() == \
        "😊".encode()
    assert tf.strings.substr(["Hello", "World"], 1, 3).numpy().tolist() == [
        b"ell", b"orl"]
    assert tf.strings.substr("Hello", -3, 2).numpy() == b"ll"
    assert tf.strings.substr("Hello", 2, 100).numpy() == b"llo"
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="pos 6 out of range"):
        tf.strings.substr("Hello", 6, 1)


def test_case_and_strip():
    assert tf.strings.upper("CamelCase string").numpy() == \
        b"CAMELCASE STRING"
    assert tf.strings.lower("CamelCase string").numpy() == \
        b"camelcase string"
    assert tf.strings.strip(["\nTensorFlow", "     The python library    "]
                            ).numpy().tolist() == [b"TensorFlow",
                                                   b"The python library"]


def test_regex():
    got = tf.strings.regex_replace(
        "Text with tags.<br /><b>contains html</b>", "<[^>]+>", " ")
    assert got.numpy() == b"Text with tags.  contains html "
    assert tf.strings.regex_replace("aaa", "a", "b",
                                    replace_global=False).numpy() == b"baa"
    assert tf.strings.regex_replace("ab-cd", r"(\w+)-(\w+)",
                                    r"\2-\1").numpy() == b"cd-ab"
    assert tf.strings.regex_replace("1$", r"\$", "$$").numpy() == b"1$$"
    assert tf.strings.regex_full_match(["TF lib", "lib TF"],
                                       ".*lib$").numpy().tolist() == [
        True, False]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Invalid pattern"):
        tf.strings.regex_full_match("a", "(")


def test_to_number_and_as_string():
    assert tf.strings.to_number("1.5").numpy() == np.float32(1.5)
    assert tf.strings.to_number(["3", " -1 "], tf.int32).numpy().tolist() \
        == [3, -1]
    assert tf.strings.to_number("1e300", tf.float64).numpy() == 1e300
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="StringToNumberOp could not correctly convert "
                             "string: abc"):
        tf.strings.to_number("abc")
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.strings.to_number("3000000000", tf.int32)
    assert tf.strings.as_string(3.14).numpy() == b"3.140000"
    assert tf.strings.as_string([1, 2]).numpy().tolist() == [b"1", b"2"]
    assert tf.strings.as_string(3.14159, precision=2).numpy() == b"3.14"
    assert tf.strings.as_string(1e10, scientific=True).numpy() == \
        b"1.000000e+10"
    assert tf.strings.as_string(7, width=3, fill="0").numpy() == b"007"
    assert tf.strings.as_string(True).numpy() == b"true"
    assert tf.as_string(5).numpy() == b"5"
    with pytest.raises(tf.errors.InvalidArgumentError, match="floats"):
        tf.strings.as_string(1, precision=2)


def test_to_hash_bucket_fast_matches_tf():
    # TF's documented example (Fingerprint64 = FarmHash).
    got = tf.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3)
    assert got.dtype == tf.int64
    assert got.numpy().tolist() == [0, 2, 2]
    # Keras's Hashing layer docs (FarmHash64 over the same op).
    got = tf.strings.to_hash_bucket_fast(["A", "B", "C", "D", "E"], 3)
    assert got.numpy().tolist() == [1, 0, 1, 1, 2]


def test_fingerprint64_equals_farmhash_at_every_length():
    farmhash = pytest.importorskip(
        "farmhash", reason="pip install pyfarmhash: FarmHash's reference")
    rng = np.random.default_rng(0)
    strs = [bytes(rng.integers(0, 256, n).astype(np.uint8))
            for n in list(range(200)) + [1000, 4097]]
    nb = 2 ** 63 - 1
    got = tf.strings.to_hash_bucket_fast(
        tf.constant(np.array(strs, dtype=object)), nb).numpy().tolist()
    assert got == [farmhash.fingerprint64(x) % nb for x in strs]


def test_split_and_bytes_split():
    assert tf.strings.split("hello world").numpy().tolist() == [b"hello",
                                                                b"world"]
    assert rows(tf.strings.split(["hello world", "a b c"])) == [
        [b"hello", b"world"], [b"a", b"b", b"c"]]
    assert rows(tf.strings.split(["a,,b", ""], sep=",")) == [
        [b"a", b"", b"b"], [b""]]
    assert rows(tf.strings.split(["a b c"], maxsplit=1)) == [[b"a", b"b c"]]
    assert tf.strings.split("a  b", sep="").numpy().tolist() == [b"a", b"b"]
    assert rows(tf.strings.split(["  lead trail  "])) == [[b"lead",
                                                           b"trail"]]
    assert tf.strings.bytes_split("hello").numpy().tolist() == [
        b"h", b"e", b"l", b"l", b"o"]
    assert rows(tf.strings.bytes_split(["ab", ""])) == [[b"a", b"b"], []]


class _FakeRagged:
    """Just what string_ops asks of tf.RaggedTensor (from_row_splits,
    values, row_splits, flat_values), for builds without tfmini/ragged."""

    def __init__(self, values, row_splits):
        self.values, self.row_splits = values, row_splits
        self.flat_values = getattr(values, "flat_values", values)

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        return cls(values, row_splits)

    def to_list(self):
        inner = (self.values.to_list() if isinstance(self.values, _FakeRagged)
                 else self.values.numpy().tolist())
        s = self.row_splits.numpy().tolist()
        return [inner[a:b] for a, b in zip(s, s[1:])]


def test_ragged_results_nest_as_tf(monkeypatch):
    if not RAGGED:
        monkeypatch.setattr(tf, "RaggedTensor", _FakeRagged, raising=False)
    got = tf.strings.split(tf.constant([["a b", "c"], ["", "d e f"]]))
    assert got.to_list() == [[[b"a", b"b"], [b"c"]], [[], [b"d", b"e",
                                                        b"f"]]]
    chars = tf.strings.unicode_decode(["hé", "", "😊"], "UTF-8")
    assert chars.to_list() == [[104, 233], [], [128522]]
    assert tf.strings.unicode_encode(chars, "UTF-8").numpy().tolist() == [
        "hé".encode(), b"", "😊".encode()]


def test_without_ragged_a_pair(monkeypatch):
    monkeypatch.delattr(tf, "RaggedTensor", raising=False)
    values, splits = tf.strings.split(["a b", "c"])
    assert values.numpy().tolist() == [b"a", b"b", b"c"]
    assert splits.numpy().tolist() == [0, 2, 3]
    with pytest.raises(NotImplementedError, match="RaggedTensor"):
        tf.strings.split([["a"]])


# ---- the Unicode strings guide -------------------------------------------

def test_unicode_guide_decode_encode():
    text_utf8 = tf.constant("语言处理")
    assert text_utf8.numpy() == \
        b"\xe8\xaf\xad\xe8\xa8\x80\xe5\xa4\x84\xe7\x90\x86"
    text_chars = tf.strings.unicode_decode(text_utf8, input_encoding="UTF-8")
    assert text_chars.dtype == tf.int32
    assert text_chars.numpy().tolist() == [35821, 35328, 22788, 29702]
    back = tf.strings.unicode_encode(text_chars, output_encoding="UTF-8")
    assert back.numpy() == text_utf8.numpy()


def test_unicode_guide_encodings_and_offsets():
    text_utf8 = tf.constant("语言处理")
    text_utf16be = tf.constant("语言处理".encode("UTF-16-BE"))
    got = tf.strings.unicode_transcode(text_utf8, input_encoding="UTF8",
                                       output_encoding="UTF-16-BE")
    assert got.numpy() == text_utf16be.numpy()
    assert got.numpy() == b"\x8b\xed\x8a\x00Y\x04t\x06"
    chars = tf.strings.unicode_decode(text_utf16be, "UTF-16-BE")
    assert chars.numpy().tolist() == [35821, 35328, 22788, 29702]
    emoji = "😊x"
    for enc in ("UTF-16-BE", "UTF-32-BE"):
        b = tf.strings.unicode_encode([ord(c) for c in emoji], enc)
        assert b.numpy() == emoji.encode(enc)
        assert tf.strings.unicode_decode(b, enc).numpy().tolist() == [
            ord(c) for c in emoji]
    codepoints, offsets = tf.strings.unicode_decode_with_offsets(
        "🎈🎉🎊", "UTF-8")
    assert codepoints.numpy().tolist() == [127880, 127881, 127882]
    assert offsets.numpy().tolist() == [0, 4, 8]
    assert offsets.dtype == tf.int64
    with pytest.raises(NotImplementedError, match="UTF-16-BE"):
        tf.strings.unicode_decode("a", "latin-1")


def test_unicode_guide_batch():
    batch_utf8 = [s.encode("UTF-8") for s in
                  ["hÃllo", "What is the weather tomorrow", "Göödnight",
                   "😊"]]
    decoded = tf.strings.unicode_decode(batch_utf8, input_encoding="UTF-8")
    got = rows(decoded)
    assert got[0] == [104, 195, 108, 108, 111]
    assert got[2] == [71, 246, 246, 100, 110, 105, 103, 104, 116]
    assert got[3] == [128522]
    assert len(got[1]) == len("What is the weather tomorrow")
    # Dense code points, one row per string.
    enc = tf.strings.unicode_encode([[99, 97, 116], [100, 111, 103]],
                                    output_encoding="UTF-8")
    assert enc.numpy().tolist() == [b"cat", b"dog"]
    if RAGGED:
        assert tf.strings.unicode_encode(decoded, "UTF-8").numpy().tolist() \
            == batch_utf8


def test_unicode_split_and_errors():
    thanks = "Thanks 😊".encode("UTF-8")
    assert tf.strings.unicode_split(thanks, "UTF-8").numpy().tolist() == [
        b"T", b"h", b"a", b"n", b"k", b"s", b" ", b"\xf0\x9f\x98\x8a"]
    bad = b"a\xffb"
    assert tf.strings.unicode_decode(bad, "UTF-8").numpy().tolist() == [
        97, 0xFFFD, 98]
    assert tf.strings.unicode_decode(bad, "UTF-8",
                                     errors="ignore").numpy().tolist() == [
        97, 98]
    with pytest.raises(tf.errors.InvalidArgumentError, match="UnicodeDecode"):
        tf.strings.unicode_decode(bad, "UTF-8", errors="strict")
    with pytest.raises(NotImplementedError, match="UTF-8"):
        tf.strings.unicode_split("a", "UTF-16-BE")
    with pytest.raises(tf.errors.InvalidArgumentError, match="strict"):
        tf.strings.unicode_encode([0x110000], "UTF-8", errors="strict")
    assert tf.strings.unicode_encode([0x110000], "UTF-8").numpy() == \
        "\ufffd".encode()


# ---- tf.io -----------------------------------------------------------------

def test_decode_raw():
    data = tf.constant([np.arange(3, dtype=np.int32).tobytes(),
                        np.arange(3, 6, dtype=np.int32).tobytes()])
    got = tf.io.decode_raw(data, tf.int32)
    assert got.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    big = tf.io.decode_raw(np.array([1], ">i4").tobytes(), tf.int32,
                           little_endian=False)
    assert big.numpy().tolist() == [1]
    assert tf.io.decode_raw(b"\x01", tf.uint8, fixed_length=3).numpy(
    ).tolist() == [1, 0, 0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="same size"):
        tf.io.decode_raw(tf.constant([b"abcd", b"ab"]), tf.int16)


def test_serialize_and_parse_tensor():
    pytest.importorskip("google.protobuf")
    t = tf.constant([1.0, 2.0])
    s = tf.io.serialize_tensor(t)
    assert s.dtype == tf.string
    # TF's bytes for this tensor (dtype, shape, tensor_content).
    assert s.numpy() == (b'\x08\x01\x12\x04\x12\x02\x08\x02"\x08'
                         b'\x00\x00\x80?\x00\x00\x00@')
    back = tf.io.parse_tensor(s, tf.float32)
    assert back.numpy().tolist() == [1.0, 2.0]
    strs = tf.constant([["a", "bc"], ["", "d"]])
    back = tf.io.parse_tensor(tf.io.serialize_tensor(strs), tf.string)
    assert back.shape == (2, 2)
    assert back.numpy().tolist() == [[b"a", b"bc"], [b"", b"d"]]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Type mismatch"):
        tf.io.parse_tensor(s, tf.int32)


# ---- strings through the rest of tfmini ---------------------------------

def test_tf_function_constants_and_placeholders():
    @tf.function
    def greet(name):
        return tf.strings.join(["Hello, ", name, "!"])

    assert greet(tf.constant("Ada")).numpy() == b"Hello, Ada!"
    assert greet(tf.constant("Bob")).numpy() == b"Hello, Bob!"

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def lengths(x):
        return tf.strings.length(tf.strings.upper(x)), x == "b"

    n, eq = lengths(tf.constant(["a", "bb", "b"]))
    assert n.numpy().tolist() == [1, 2, 1]
    assert eq.numpy().tolist() == [False, False, True]

    @tf.function
    def words(x):
        return tf.strings.split(x)

    assert words(tf.constant("one two three")).numpy().tolist() == [
        b"one", b"two", b"three"]

    @tf.function
    def number(x):
        return tf.strings.to_number(x) * 2.0

    assert number(tf.constant("1.25")).numpy() == 2.5


def test_control_flow_carries_strings():
    @tf.function
    def pick(flag, a, b):
        return tf.cond(flag, lambda: tf.strings.upper(a), lambda: b)

    assert pick(tf.constant(True), tf.constant("x"),
                tf.constant("y")).numpy() == b"X"
    assert pick(tf.constant(False), tf.constant("x"),
                tf.constant("y")).numpy() == b"y"

    @tf.function
    def repeat(s, n):
        i = tf.constant(0)
        out = tf.constant("")
        while i < n:
            out = tf.strings.join([out, s])
            i += 1
        return out

    assert repeat(tf.constant("ab"), tf.constant(3)).numpy() == b"ababab"


def test_string_variables():
    v = tf.Variable("abc")
    assert v.dtype == tf.string and v.numpy() == b"abc"
    v.assign("xyz")
    assert v.numpy() == b"xyz"
    assert tf.strings.length(v).numpy() == 3


def test_tf_data_map():
    ds = tf.data.Dataset.from_tensor_slices(["a b", "c", "dd"])
    ds = ds.map(tf.strings.upper)
    assert [x.numpy() for x in ds] == [b"A B", b"C", b"DD"]
    ds = tf.data.Dataset.from_tensor_slices(["1", "2", "3"]).map(
        lambda s: tf.strings.to_number(s, tf.int32)).batch(2)
    assert [x.numpy().tolist() for x in ds] == [[1, 2], [3]]


def test_saved_model_with_string_constants(tmp_path):
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
        def __call__(self, x):
            return tf.strings.join([tf.constant("<"), x,
                                    tf.constant(">")])

    tf.saved_model.save(M(), str(tmp_path / "m"))
    m = tf.saved_model.load(str(tmp_path / "m"))
    assert m(tf.constant("héllo")).numpy() == "<héllo>".encode()


def test_no_gradient_through_strings():
    x = tf.Variable(1.5)
    with tf.GradientTape() as tape:
        s = tf.strings.as_string(x)
        y = tf.strings.to_number(s)
    assert tape.gradient(y, x) is None


def test_string_tensors_do_not_leak():
    def work():
        for _ in range(50):
            t = tf.constant(["alpha beta", "gamma", "δέλτα"])
            tf.strings.upper(t)
            tf.strings.split(t[0])
            tf.strings.join([t, "!"])
            tf.gather(t, [2, 2, 0])
            tf.strings.unicode_decode(t[2], "UTF-8")
            repr(t)
            try:
                tf.strings.substr(t, 100, 1)
            except tf.errors.InvalidArgumentError:
                pass
    assert_no_leak(work, warmup=1, rounds=1)
