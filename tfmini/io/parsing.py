"""tf.io.parse_single_example / parse_example over serialized
tf.train.Example bytes, for the features that need no string tensor:
FixedLenFeature and FixedLenSequenceFeature of int64 and float32.

Differences from TF, all for want of a string dtype in tfmini:
serialized examples are Python bytes (TF: a string tensor), a bytes
feature (dtype tf.string) cannot be parsed, and VarLenFeature (TF: a
SparseTensor) is refused by name."""
import collections

import numpy as np

from .. import dtypes as _dtypes
from .. import errors as _errors

_KINDS = {"int64": "int64_list", "float32": "float_list"}
_TF_TYPE_NAME = {"int64_list": "int64", "float_list": "float",
                 "bytes_list": "string"}


class FixedLenFeature(collections.namedtuple(
        "FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of known shape, parsed to a dense tensor."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature",
        ["shape", "dtype", "allow_missing", "default_value"])):
    """Values of one shape, any number of them: parsed to a dense tensor
    of shape [n] + shape."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing,
                               default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    pass


class SparseFeature(collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size",
                          "already_sorted"])):
    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, dtype, size,
                               already_sorted)


class RaggedFeature:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "tf.io.RaggedFeature: tfmini has no RaggedTensor yet")


def _check_spec(key, spec):
    if isinstance(spec, (VarLenFeature, SparseFeature)):
        raise NotImplementedError(
            f"{type(spec).__name__} for feature {key!r}: TF parses it to a "
            f"tf.SparseTensor, which tfmini does not have yet; use "
            f"FixedLenFeature or FixedLenSequenceFeature(allow_missing=True)")
    if not isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
        raise TypeError(f"feature {key!r}: expected a FixedLenFeature, "
                        f"got {type(spec).__name__}")
    dt = _dtypes.as_dtype(spec.dtype)
    if dt.name not in _KINDS:
        raise NotImplementedError(
            f"feature {key!r} of dtype {dt.name}: tf.io parsing takes "
            f"int64 and float32 here (TF's string features need a string "
            f"dtype, which tfmini does not have yet)")
    shape = tuple(int(d) for d in spec.shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"feature {key!r}: shape {list(shape)} must be "
                         f"fully defined")
    return dt, shape


def _as_bytes(serialized):
    if isinstance(serialized, (bytes, bytearray, memoryview)):
        return bytes(serialized)
    if isinstance(serialized, np.bytes_):
        return bytes(serialized)
    if (getattr(serialized, "dtype", None) == _dtypes.string
            and not getattr(serialized, "_symbolic", True)
            and serialized.shape.rank == 0):
        return serialized.numpy()       # an eager scalar string tensor
    if hasattr(serialized, "SerializeToString"):
        raise TypeError("parse_single_example takes the serialized bytes "
                        "(example.SerializeToString()), not the proto")
    raise TypeError(
        f"parse_single_example: serialized must be bytes (tfmini has no "
        f"string tensors yet), got {type(serialized).__name__}")


def _default(key, spec, dt, shape):
    if spec.default_value is None:
        return None
    d = np.asarray(spec.default_value, dt.as_numpy_dtype)
    if isinstance(spec, FixedLenSequenceFeature):
        return d
    if d.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(
            f"feature {key!r}: default_value of shape {list(d.shape)} does "
            f"not fit shape {list(shape)}")
    return d.reshape(shape)


def _parse_values(example, features):
    """{key: NumPy array} for one Example proto."""
    out = {}
    fmap = example.features.feature
    for key, spec in features.items():
        dt, shape = _check_spec(key, spec)
        kind = _KINDS[dt.name]
        seq = isinstance(spec, FixedLenSequenceFeature)
        if key not in fmap:
            default = _default(key, spec, dt, shape)
            if seq:
                if not spec.allow_missing:
                    raise ValueError(
                        f"feature {key!r}: FixedLenSequenceFeature needs "
                        f"allow_missing=True in parse_single_example")
                out[key] = np.zeros((0,) + shape, dt.as_numpy_dtype)
                continue
            if default is None:
                raise _errors.InvalidArgumentError(
                    None, None, f"Feature: {key} (data type: "
                    f"{_TF_TYPE_NAME[kind]}) is required but could not be "
                    f"found.")
            out[key] = default
            continue
        feat = fmap[key]
        which = feat.WhichOneof("kind")
        if which is None:       # an empty Feature: no values of any type
            values = []
        elif which != kind:
            raise _errors.InvalidArgumentError(
                None, None, f"Key: {key}.  Data types don't match. Data "
                f"type: {_TF_TYPE_NAME[which]} but expected type: "
                f"{_TF_TYPE_NAME[kind]}")
        else:
            values = getattr(feat, which).value
        arr = np.asarray(values, dt.as_numpy_dtype)
        size = int(np.prod(shape, dtype=np.int64))
        if seq:
            if size == 0 or arr.size % size:
                raise _errors.InvalidArgumentError(
                    None, None, f"Key: {key}, Index: 0.  Number of values "
                    f"!= expected.  values size: {arr.size} but output "
                    f"shape: [?,{','.join(map(str, shape))}]")
            out[key] = arr.reshape((-1,) + shape)
        else:
            if arr.size != size:
                raise _errors.InvalidArgumentError(
                    None, None, f"Key: {key}.  Can't parse serialized "
                    f"Example: {arr.size} values, shape {list(shape)} "
                    f"needs {size}.")
            out[key] = arr.reshape(shape)
    return out


def _decode(serialized):
    from ..train.example import Example
    data = _as_bytes(serialized)
    ex = Example()
    try:
        ex.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError
        raise _errors.InvalidArgumentError(
            None, None, f"Could not parse example input: {e}")
    return ex


def _check_features(features):
    if not isinstance(features, dict) or not features:
        raise ValueError("features must be a non-empty dict of feature "
                         "name to FixedLenFeature")


def parse_single_example(serialized, features, example_names=None,
                         name=None):
    """One serialized Example -> {name: dense tensor}."""
    from ..ops.constant_op import constant
    _check_features(features)
    values = _parse_values(_decode(serialized), features)
    return {k: constant(v) for k, v in values.items()}


def parse_example(serialized, features, example_names=None, name=None):
    """A batch (list or 1-D NumPy array) of serialized Examples ->
    {name: dense tensor with the batch first}. Sequence features are
    padded to the longest with default_value (0 if none), as TF."""
    from ..ops.constant_op import constant
    _check_features(features)
    if isinstance(serialized, (bytes, bytearray)):
        raise ValueError("parse_example takes a batch (a list of "
                         "serialized examples); use parse_single_example "
                         "for one")
    rows = [_parse_values(_decode(s), features) for s in serialized]
    out = {}
    for key, spec in features.items():
        dt, shape = _check_spec(key, spec)
        col = [r[key] for r in rows]
        if isinstance(spec, FixedLenSequenceFeature):
            n = max([len(c) for c in col], default=0)
            pad = 0 if spec.default_value is None else spec.default_value
            batch = np.full((len(col), n) + shape, pad, dt.as_numpy_dtype)
            for i, c in enumerate(col):
                batch[i, :len(c)] = c
        elif col:
            batch = np.stack(col)
        else:
            batch = np.zeros((0,) + shape, dt.as_numpy_dtype)
        out[key] = constant(batch)
    return out


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None,
               name=None):
    """Each string's bytes as numbers of out_type (the DecodeRaw op of
    tfmini/ops/string_ops.py)."""
    from ..ops.string_ops import decode_raw as _decode_raw
    return _decode_raw(input_bytes, out_type, little_endian, fixed_length)
