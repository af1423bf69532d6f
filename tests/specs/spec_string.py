"""OpSpecs for the string family (csrc/ops/ops_string.def): each op
against a plain-Python reference over object arrays of bytes, eager and
traced (test_function_harness.py runs these through tf.function too)."""
import numpy as np

import tfmini as tf

from .opspec import OpSpec

WORDS = [b"", b"a", b"Gray wolf", b"  Quick brown fox ", b"lazy\tDOG",
         "語言處理".encode(), "Thanks 😊".encode(), b"x,y,,z"]
STR = ("string",)


def words(rng, shape, _):
    idx = rng.integers(0, len(WORDS), size=shape)
    out = np.empty(shape, dtype=object)
    out.reshape(-1)[:] = [WORDS[i] for i in idx.reshape(-1)]
    return out


def numbers(rng, shape, _):
    vals = rng.integers(-1000, 1000, size=shape)
    out = np.empty(shape, dtype=object)
    out.reshape(-1)[:] = [str(v).encode() for v in vals.reshape(-1)]
    return out


def ints(lo, hi, dtype="int32"):
    def make(rng, shape, _):
        return rng.integers(lo, hi, size=shape).astype(dtype)
    return make


def emap(f, *xs, otype=object):
    """f over the elements of broadcast object arrays."""
    bs = np.broadcast_arrays(*[np.asarray(x, dtype=object) for x in xs])
    out = np.empty(bs[0].shape, dtype=otype)
    for i in np.ndindex(out.shape):
        out[i] = f(*[b[i] for b in bs])
    return out


def py_substr(s, pos, n):
    pos = int(pos)
    n = int(n)
    size = len(s)
    if pos < 0:
        pos += size
    return s[pos:] if n < 0 else s[pos:pos + n]


def py_strip(s):
    return s.strip(b" \t\n\v\f\r")


def py_upper(s):
    return bytes(c - 32 if 97 <= c <= 122 else c for c in s)


def py_lower(s):
    return bytes(c + 32 if 65 <= c <= 90 else c for c in s)


def py_reduce_join(x):
    out = np.empty(x.shape[:-1], dtype=object)
    for i in np.ndindex(out.shape):
        out[i] = b"|".join(x[i])
    return out


def raw8(rng, shape, _):
    out = np.empty(shape, dtype=object)
    out.reshape(-1)[:] = [bytes(rng.integers(0, 256, 8).astype(np.uint8))
                          for _ in range(int(np.prod(shape)))]
    return out


SHAPES = [[()], [(5,)], [(2, 3)]]

SPECS = [
    OpSpec("strings.length", lambda x: tf.strings.length(x),
           lambda x: emap(len, x, otype=np.int32), SHAPES, STR, [words],
           ops=("StringLength",)),
    OpSpec("strings.length_utf8",
           lambda x: tf.strings.length(x, unit="UTF8_CHAR"),
           lambda x: emap(lambda s: len(s.decode()), x, otype=np.int32),
           SHAPES, STR, [words], ops=("StringLength",)),
    OpSpec("strings.join", lambda x, y: tf.strings.join([x, y], "-"),
           lambda x, y: emap(lambda a, b: a + b"-" + b, x, y),
           [[(4,), (4,)], [(2, 3), ()]], STR, [words, words],
           ops=("StringJoin",)),
    OpSpec("strings.substr",
           lambda x, p, n: tf.strings.substr(x, p, n),
           lambda x, p, n: emap(py_substr, x, p, n),
           [[(6,), (6,), (6,)], [(2, 3), (), ()]], STR,
           [lambda r, s, d: emap(lambda w: w + b"0123456789",
                                 words(r, s, d)),
            ints(-9, 9), ints(-2, 5)], ops=("Substr",)),
    OpSpec("strings.upper", lambda x: tf.strings.upper(x),
           lambda x: emap(py_upper, x), SHAPES, STR, [words],
           ops=("StringUpper",)),
    OpSpec("strings.lower", lambda x: tf.strings.lower(x),
           lambda x: emap(py_lower, x), SHAPES, STR, [words],
           ops=("StringLower",)),
    OpSpec("strings.strip", lambda x: tf.strings.strip(x),
           lambda x: emap(py_strip, x), SHAPES, STR, [words],
           ops=("StringStrip",)),
    OpSpec("strings.regex_replace",
           lambda x: tf.strings.regex_replace(x, "[aeiou]", "<\\0>"),
           lambda x: emap(lambda s: __import__("re").sub(
               rb"[aeiou]", rb"<\g<0>>", s), x), SHAPES, STR, [words],
           ops=("RegexReplace",)),
    OpSpec("strings.regex_full_match",
           lambda x: tf.strings.regex_full_match(x, ".*o.*"),
           lambda x: emap(lambda s: __import__("re").fullmatch(
               rb".*o.*", s, __import__("re").S) is not None, x,
               otype=bool), SHAPES, STR, [words],
           ops=("RegexFullMatch",)),
    OpSpec("strings.to_number",
           lambda x: tf.strings.to_number(x, tf.int32),
           lambda x: emap(int, x, otype=np.int32), SHAPES, STR, [numbers],
           ops=("StringToNumber",)),
    OpSpec("strings.as_string", lambda x: tf.strings.as_string(x),
           lambda x: emap(lambda v: str(int(v)).encode(), x), SHAPES,
           ("int32", "int64"), [ints(-50, 50)], ops=("AsString",)),
    OpSpec("strings.reduce_join",
           lambda x: tf.strings.reduce_join(x, axis=-1, separator="|"),
           py_reduce_join, [[(5,)], [(2, 3)]], STR, [words],
           ops=("ReduceJoin",)),
    OpSpec("strings.to_hash_bucket_fast",
           lambda x: tf.strings.to_hash_bucket_fast(x, 1),
           lambda x: np.zeros(np.shape(x), np.int64), SHAPES, STR, [words],
           ops=("StringToHashBucketFast",)),
    OpSpec("strings.split_values",
           lambda x: tf.strings.split(x, ","),
           lambda x: np.asarray(x.item().split(b","), dtype=object),
           [[()]], STR, [words], ops=("StringSplitV2",)),
    OpSpec("strings.bytes_split", lambda x: tf.strings.bytes_split(x),
           lambda x: np.asarray([bytes([c]) for c in x.item()],
                                dtype=object).reshape(-1),
           [[()]], STR, [words], ops=("StringCharSplit",)),
    OpSpec("strings.unicode_decode",
           lambda x: tf.strings.unicode_decode(x, "UTF-8"),
           lambda x: np.asarray([ord(c) for c in x.item().decode()],
                                dtype=np.int32).reshape(-1),
           [[()]], STR, [words], ops=("UnicodeDecode",)),
    OpSpec("strings.unicode_encode",
           lambda x: tf.strings.unicode_encode(x, "UTF-8"),
           lambda x: emap(lambda *r: "".join(map(chr, r)).encode(),
                          *[x[..., k] for k in range(x.shape[-1])])
           if x.ndim > 1 else
           np.asarray("".join(map(chr, x)).encode(), dtype=object),
           [[(4,)], [(2, 3)]], ("int32",), [ints(32, 0x3000)],
           ops=("UnicodeEncode",)),
    OpSpec("io.decode_raw",
           lambda x: tf.io.decode_raw(x, tf.int16),
           lambda x: np.frombuffer(b"".join(x.reshape(-1)), "<i2").reshape(
               x.shape + (4,)),
           [[(3,)], [(2, 2)]], STR, [raw8], ops=("DecodeRaw",)),
    OpSpec("strings.format",
           lambda x: tf.strings.format("v={}!", x),
           lambda x: np.asarray(("v=[" + " ".join(map(str, x)) + "]!")
                                .encode(), dtype=object),
           [[(3,)]], ("int32",), [ints(-5, 5)], ops=("StringFormat",)),
    OpSpec("strings.equal", lambda x, y: tf.equal(x, y),
           lambda x, y: emap(lambda a, b: a == b, x, y, otype=bool),
           [[(6,), (6,)], [(2, 3), ()]], STR, [words, words],
           ops=("Equal",)),
]
