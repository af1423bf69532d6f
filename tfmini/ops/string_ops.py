"""tf.strings, tf.as_string and the string parts of tf.io (rows in
csrc/ops/ops_string.def; kernels in csrc/kernels/cpu/string_*.c).

Ragged results (split, bytes_split, unicode_split, unicode_decode) come
from the C ops as TF's (values, row_splits) pair over a flat input and
are built into a tf.RaggedTensor when tfmini has one
(`_ragged_or_pair`); a 0-D input gives a dense 1-D tensor, as TF."""
import builtins

import numpy as np

from .. import _C
from .. import dtypes as _dtypes
from .. import errors as _errors
from .._opids import ID
from .._tensor import Tensor

__all__ = ["as_string"]
_NAMESPACES = {
    "strings": ["length", "join", "substr", "upper", "lower", "strip",
                "regex_replace", "regex_full_match", "to_number",
                "as_string", "format", "reduce_join", "to_hash_bucket_fast",
                "to_hash_bucket_strong", "to_hash_bucket",
                "split", "bytes_split", "unicode_decode", "unicode_encode",
                "unicode_split", "unicode_decode_with_offsets",
                "unicode_transcode", "unicode_script"],
}

_UNITS = {"BYTE": 0, "UTF8_CHAR": 1}
_ERRORS = {"replace": 0, "ignore": 1, "strict": 2}


def _op(name):
    return ID[name]


def _t(x, dtype=None):
    """x as a Tensor (str/bytes/lists become string tensors)."""
    if isinstance(x, Tensor) and dtype is None:
        return x
    from .constant_op import convert_to_tensor
    return convert_to_tensor(x, dtype=dtype)


def _s(x, what):
    """x as a string tensor, or TF's TypeError naming what."""
    t = _t(x)
    if t.dtype != _dtypes.string:
        raise TypeError(f"{what}: expected a string tensor, got "
                        f"{t.dtype.name}")
    return t


def _unit(unit, op):
    if unit not in _UNITS:
        raise ValueError(f"{op}: unit must be 'BYTE' or 'UTF8_CHAR', got "
                         f"{unit!r}")
    return _UNITS[unit]


def _errors_mode(errors, op):
    if errors not in _ERRORS:
        raise ValueError(f"{op}: errors must be 'replace', 'ignore' or "
                         f"'strict', got {errors!r}")
    return _ERRORS[errors]


_ENCODINGS = {"UTF8": 0, "UTF16BE": 1, "UTF32BE": 2}


def _encoding(encoding, op):
    """TF's encoding name -> the ops' code (i[3])."""
    key = str(encoding).upper().replace("-", "").replace("_", "")
    if key not in _ENCODINGS:
        raise NotImplementedError(
            f"{op}: tfmini supports the encodings UTF-8, UTF-16-BE and "
            f"UTF-32-BE, got {encoding!r}")
    return _ENCODINGS[key]


def _utf8(encoding, op):
    if _encoding(encoding, op) != 0:
        raise NotImplementedError(
            f"{op}: tfmini splits UTF-8 only, got {encoding!r}")


def _is_ragged(x):
    return hasattr(x, "row_splits") and hasattr(x, "flat_values")


def _ragged_class():
    import tfmini
    return getattr(tfmini, "RaggedTensor", None)


def _ragged_or_pair(values, row_splits):
    """tf.RaggedTensor.from_row_splits(values, row_splits) once tfmini has
    RaggedTensor (tfmini/ragged); until then the (values, row_splits)
    pair itself."""
    rt = _ragged_class()
    if rt is None:
        return values, row_splits
    return rt.from_row_splits(values, row_splits, validate=False)


def _ragged_result(x, run):
    """run(flat_input) -> (values, row_splits), shaped as TF shapes the
    result for x: 0-D -> values; 1-D -> ragged [n, None]; rank r -> ragged
    [d0, ..., None] nested with uniform row lengths."""
    dims = x._shape_tuple
    if len(dims) == 0:
        return run(x)[0]
    if len(dims) == 1:
        return _ragged_or_pair(*run(x))
    if any(d is None for d in dims):
        raise ValueError("tfmini splits inputs of rank > 1 only with a "
                         f"static shape, got {dims}")
    rt = _ragged_class()
    if rt is None:
        raise NotImplementedError(
            f"a rank-{len(dims)} input gives a ragged tensor of rank "
            f"{len(dims) + 1}, which needs tf.RaggedTensor (not in this "
            f"build); split a 1-D input to get (values, row_splits)")
    from .array_ops import reshape
    values, splits = run(reshape(x, [-1]))
    out = rt.from_row_splits(values, splits, validate=False)
    rows = int(np.prod(dims))
    for d in reversed(dims[1:]):
        rows //= max(d, 1)
        uniform = np.arange(rows + 1, dtype=np.int64) * d
        out = rt.from_row_splits(out, _t(uniform), validate=False)
    return out


# ---- measuring, joining, cutting --------------------------------------

def length(input, unit="BYTE", name=None):
    """The length of each string, in bytes or UTF-8 characters (int32)."""
    return _C.call(_op("StringLength"), (_s(input, "length"),),
                   None, [_unit(unit, "StringLength")])


def join(inputs, separator="", name=None):
    """Elementwise concatenation of the inputs (each a string tensor of
    one shape, or a scalar), separated by separator."""
    if isinstance(inputs, (Tensor, str, bytes)):
        raise TypeError("tf.strings.join: inputs must be a list of string "
                        "tensors")
    ts = [_s(x, "join") for x in inputs]
    return _C.call(_op("StringJoin"), [_s(separator, "join")] + ts)


def substr(input, pos, len, unit="BYTE", name=None):
    """Substrings from pos (negative: from the end) of len units (a
    negative or too long len: to the end); pos, len and input
    broadcast."""
    x = _s(input, "substr")
    p = pos if isinstance(pos, Tensor) else _t(pos, _dtypes.int32)
    n = len if isinstance(len, Tensor) else _t(len, p.dtype)
    return _C.call(_op("Substr"), (x, p, n), None, [_unit(unit, "Substr")])


def upper(input, encoding="", name=None):
    """ASCII letters in upper case."""
    return _C.call(_op("StringUpper"), (_s(input, "upper"),))


def lower(input, encoding="", name=None):
    """ASCII letters in lower case."""
    return _C.call(_op("StringLower"), (_s(input, "lower"),))


def strip(input, name=None):
    """Leading and trailing whitespace removed."""
    return _C.call(_op("StringStrip"), (_s(input, "strip"),))


def reduce_join(inputs, axis=None, keepdims=False, separator="",
                name=None):
    """Joins the strings along axis (None: all of them)."""
    x = _s(inputs, "reduce_join")
    rank = builtins.len(x._shape_tuple)
    if axis is None:
        axes, every = [], 1
    else:
        raw = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis))
        axes, every = [], 0
        for a in raw:
            a = int(a)
            if not -rank <= a < rank:
                raise ValueError(f"ReduceJoin: axis {a} out of range for a "
                                 f"rank-{rank} input")
            axes.append(a % rank)
    return _C.call(_op("ReduceJoin"), (x, _s(separator, "reduce_join")),
                   axes, [int(bool(keepdims)), every])


def format(template, inputs, placeholder="{}", summarize=3, name=None):
    """template with each placeholder replaced by the next input, shown
    as tf.print shows it."""
    if isinstance(inputs, (list, tuple)):
        ts = [_t(x) for x in inputs]
    else:
        ts = [_t(inputs)]
    return _C.call(_op("StringFormat"),
                   [_s(template, "format"), _s(placeholder, "format")] + ts,
                   None, [int(summarize)])


# ---- regular expressions ----------------------------------------------

def regex_replace(input, pattern, rewrite, replace_global=True, name=None):
    """Matches of pattern (RE2 syntax, run by PCRE2) replaced by rewrite
    (\\1 for groups)."""
    return _C.call(_op("RegexReplace"),
                   (_s(input, "regex_replace"),
                    _s(pattern, "regex_replace"),
                    _s(rewrite, "regex_replace")),
                   None, [int(bool(replace_global))])


def regex_full_match(input, pattern, name=None):
    """Whether each whole string matches pattern."""
    return _C.call(_op("RegexFullMatch"),
                   (_s(input, "regex_full_match"),
                    _s(pattern, "regex_full_match")))


# ---- numbers ----------------------------------------------------------

def to_number(input, out_type=_dtypes.float32, name=None):
    """Each string parsed as a number of out_type."""
    return _C.call(_op("StringToNumber"), (_s(input, "to_number"),),
                   dtype=_dtypes.as_dtype(out_type)._enum)


def as_string(input, precision=-1, scientific=False, shortest=False,
              width=-1, fill="", name=None):
    """Numbers and bools as strings (floats as %f unless scientific or
    shortest)."""
    if builtins.len(fill) > 1:
        raise ValueError(f"AsString: fill must be at most one character, "
                         f"got {fill!r}")
    return _C.call(_op("AsString"), (_t(input),), None,
                   [int(precision), int(bool(scientific)),
                    int(bool(shortest)), int(width),
                    ord(fill) if fill else 0])


def to_hash_bucket_fast(input, num_buckets, name=None):
    """Fingerprint64(input) % num_buckets (TF's FarmHash fingerprint)."""
    return _C.call(_op("StringToHashBucketFast"),
                   (_s(input, "to_hash_bucket_fast"),), None,
                   [int(num_buckets)])


def to_hash_bucket_strong(input, num_buckets, key, name=None):
    """SipHash-2-4(input) % num_buckets under key, a list of two ints
    (keep it secret and bucket collisions cannot be aimed at)."""
    from ..errors import InvalidArgumentError
    key = [int(k) for k in key]
    if builtins.len(key) != 2:
        raise InvalidArgumentError(None, None,
            f"StringToHashBucketStrong: Key must have 2 elements, got "
            f"{builtins.len(key)}")
    return _C.call(_op("StringToHashBucketStrong"),
                   (_s(input, "to_hash_bucket_strong"),), None,
                   [int(num_buckets), key[0], key[1]])


def to_hash_bucket(string_tensor, num_buckets, name=None):
    """TF's older Hash64(string) % num_buckets (prefer
    to_hash_bucket_fast, or _strong with a secret key)."""
    return _C.call(_op("StringToHashBucket"),
                   (_s(string_tensor, "to_hash_bucket"),), None,
                   [int(num_buckets)])


def decode_raw(input_bytes, out_type, little_endian=True,
               fixed_length=None, name=None):
    """Each string's bytes as numbers of out_type: shape input.shape +
    [n] (all strings of one length, or padded/cut to fixed_length)."""
    x = _s(input_bytes, "decode_raw")
    if fixed_length is not None:
        k = int(fixed_length)
        pad = _t(b"\0" * k)
        x = substr(join([x, pad]), 0, k)
    return _C.call(_op("DecodeRaw"), (x,), None,
                   [int(bool(little_endian)), 0, 0, 0, 0, -1],
                   dtype=_dtypes.as_dtype(out_type)._enum)


# ---- splitting and Unicode --------------------------------------------

def _values_and_row_splits(op, x, sep=None, i=()):
    """The C op's (values, row_splits) over a 0-D or 1-D x: the pair
    under tf.strings.split & co. (i[5] = -1: sized when run)."""
    attrs = list(i) + [0] * (5 - builtins.len(i)) + [-1]
    inputs = (x,) if sep is None else (x, sep)
    out = _C.call(_op(op), inputs, None, attrs)
    if op == "UnicodeDecode":
        return out[1], out[0]
    return out[0], out[1]


def split(input, sep=None, maxsplit=-1, name=None):
    """Python's str.split on each string: sep None splits on runs of
    whitespace; a ragged result (dense for a scalar input)."""
    x = _s(input, "split")
    # As TF's kernel: an empty sep is whitespace splitting too.
    s = _s(b"" if sep is None else sep, "split")
    return _ragged_result(x, lambda f: _values_and_row_splits(
        "StringSplitV2", f, s, [int(maxsplit)]))


def bytes_split(input, name=None):
    """Each string cut into its bytes."""
    x = _s(input, "bytes_split")
    return _ragged_result(x, lambda f: _values_and_row_splits(
        "StringCharSplit", f, None, [0]))


def unicode_split(input, input_encoding, errors="replace",
                  replacement_char=65533, name=None):
    """Each UTF-8 string cut into its characters."""
    _utf8(input_encoding, "unicode_split")
    mode = _errors_mode(errors, "unicode_split")
    x = _s(input, "unicode_split")
    if mode == 2:       # strict: decoding raises on a bad sequence
        unicode_decode(x, input_encoding, errors="strict")
    return _ragged_result(x, lambda f: _values_and_row_splits(
        "StringCharSplit", f, None, [1]))


def unicode_decode(input, input_encoding, errors="replace",
                   replacement_char=65533, replace_control_characters=False,
                   name=None):
    """Each string's code points (int32)."""
    enc = _encoding(input_encoding, "unicode_decode")
    x = _s(input, "unicode_decode")
    i = [_errors_mode(errors, "unicode_decode"), int(replacement_char),
         int(bool(replace_control_characters)), enc]
    return _ragged_result(x, lambda f: _values_and_row_splits(
        "UnicodeDecode", f, None, i))


def unicode_decode_with_offsets(input, input_encoding, errors="replace",
                                replacement_char=65533,
                                replace_control_characters=False,
                                name=None):
    """unicode_decode, and where each character starts (its byte offset
    in its string), both shaped alike."""
    enc = _encoding(input_encoding, "unicode_decode_with_offsets")
    x = _s(input, "unicode_decode_with_offsets")
    i = [_errors_mode(errors, "unicode_decode_with_offsets"),
         int(replacement_char), int(bool(replace_control_characters)), enc,
         0, -1]
    offsets = []

    def run(f):
        splits, values, starts = _C.call(
            _op("UnicodeDecodeWithOffsets"), (f,), None, i)
        offsets.append((starts, splits))
        return values, splits

    chars = _ragged_result(x, run)
    starts, splits = offsets[0]
    dims = x._shape_tuple
    if len(dims) == 0:
        return chars, starts
    if len(dims) == 1:
        return chars, _ragged_or_pair(starts, splits)
    return chars, _ragged_result(x, lambda f: (starts, splits))


def unicode_encode(input, output_encoding, errors="replace",
                   replacement_char=65533, name=None):
    """Code points (int32) encoded as UTF-8: the last dim (ragged or not)
    becomes one string."""
    i = [_errors_mode(errors, "unicode_encode"), int(replacement_char), 0,
         _encoding(output_encoding, "unicode_encode")]
    from .array_ops import reshape
    if _is_ragged(input):
        values = input.values
        if _is_ragged(values):
            rt = _ragged_class()
            return rt.from_row_splits(
                unicode_encode(values, output_encoding, errors,
                               replacement_char),
                input.row_splits, validate=False)
        values = _t(values)
        splits = _t(input.row_splits)
        return _C.call(_op("UnicodeEncode"),
                       (_t(values, _dtypes.int32),
                        _t(splits, _dtypes.int64)), None, i)
    x = _t(input)
    if x.dtype != _dtypes.int32:
        raise TypeError(f"unicode_encode: expected int32 code points, got "
                        f"{x.dtype.name}")
    dims = x._shape_tuple
    if builtins.len(dims) == 0:
        raise ValueError("unicode_encode: input must have rank >= 1")
    if any(d is None for d in dims):
        raise ValueError(f"unicode_encode: tfmini needs a static shape, got "
                         f"{dims}")
    n = int(np.prod(dims[:-1])) if builtins.len(dims) > 1 else 1
    splits = _t(np.arange(0, n * dims[-1] + 1, max(dims[-1], 1),
                          dtype=np.int64)[:n + 1]
                if dims[-1] else np.zeros(n + 1, np.int64))
    out = _C.call(_op("UnicodeEncode"), (reshape(x, [-1]), splits), None, i)
    return reshape(out, list(dims[:-1]))


def unicode_transcode(input, input_encoding, output_encoding,
                      errors="replace", replacement_char=65533,
                      replace_control_characters=False, name=None):
    """Each string re-encoded: decoded from input_encoding, encoded in
    output_encoding."""
    from .array_ops import reshape
    x = _s(input, "unicode_transcode")
    dims = x._shape_tuple
    if any(d is None for d in dims):
        raise ValueError(f"unicode_transcode: tfmini needs a static shape, "
                         f"got {dims}")
    flat = reshape(x, [-1])
    values, splits = _values_and_row_splits(
        "UnicodeDecode", flat, None,
        [_errors_mode(errors, "unicode_transcode"), int(replacement_char),
         int(bool(replace_control_characters)),
         _encoding(input_encoding, "unicode_transcode")])
    out = _C.call(_op("UnicodeEncode"), (values, splits), None,
                  [_errors_mode(errors, "unicode_transcode"),
                   int(replacement_char), 0,
                   _encoding(output_encoding, "unicode_transcode")])
    return reshape(out, list(dims))


def unicode_script(input, name=None):
    """Each int32 code point's script, as ICU's UScriptCode (TF's values:
    0 Common, 8 Cyrillic, 17 Han, 25 Latin, ...; -1 for no code point).
    Needs a build with ICU (libicu-dev)."""
    x = _t(input)
    if x.dtype != _dtypes.int32:
        raise _errors.InvalidArgumentError(
            None, None, f"UnicodeScript: input must be an int32 tensor of "
            f"code points, got {x.dtype.name} {list(x.shape)}")
    return _C.call(_op("UnicodeScript"), (x,))
