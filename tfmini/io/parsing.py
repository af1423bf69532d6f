"""tf.io.parse_single_example / parse_example over serialized
tf.train.Example bytes (Python bytes or string tensors): FixedLenFeature
and FixedLenSequenceFeature (dense tensors), VarLenFeature (a
tf.sparse.SparseTensor) and RaggedFeature without partitions (a
tf.RaggedTensor; one example: a dense 1-D tensor), of int64, float32
and string. SparseFeature and RaggedFeature partitions are refused by
name."""
import collections

import numpy as np

from .. import dtypes as _dtypes
from .. import errors as _errors

_KINDS = {"int64": "int64_list", "float32": "float_list",
          "string": "bytes_list"}
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
    """Any number of values, parsed to a tf.sparse.SparseTensor."""


class SparseFeature(collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size",
                          "already_sorted"])):
    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, dtype, size,
                               already_sorted)


class RaggedFeature(collections.namedtuple(
        "RaggedFeature", ["dtype", "value_key", "partitions",
                          "row_splits_dtype", "validate"])):
    """Any number of values, parsed to a tf.RaggedTensor (row_splits
    int32 by default, as TF)."""

    def __new__(cls, dtype, value_key=None, partitions=(),
                row_splits_dtype=_dtypes.int32, validate=False):
        return super().__new__(cls, dtype, value_key, tuple(partitions),
                               _dtypes.as_dtype(row_splits_dtype), validate)


# The partition kinds (TF's names; tfmini parses no partitions yet).
for _kind, _field in [("RowSplits", "key"), ("RowLengths", "key"),
                      ("RowStarts", "key"), ("RowLimits", "key"),
                      ("ValueRowIds", "key"), ("UniformRowLength", "length")]:
    setattr(RaggedFeature, _kind, collections.namedtuple(_kind, [_field]))
del _kind, _field

_FLAT = (VarLenFeature, RaggedFeature)   # 1-D values, any number


def _check_spec(key, spec):
    if isinstance(spec, SparseFeature):
        raise NotImplementedError(
            f"SparseFeature for feature {key!r}: tfmini parses "
            f"FixedLenFeature, FixedLenSequenceFeature, VarLenFeature and "
            f"RaggedFeature")
    if isinstance(spec, RaggedFeature) and spec.partitions:
        raise NotImplementedError(
            f"RaggedFeature for feature {key!r}: tfmini parses it without "
            f"partitions (one ragged dim), got {len(spec.partitions)}")
    if not isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature) +
                      _FLAT):
        raise TypeError(f"feature {key!r}: expected a FixedLenFeature, "
                        f"FixedLenSequenceFeature, VarLenFeature or "
                        f"RaggedFeature, got {type(spec).__name__}")
    dt = _dtypes.as_dtype(spec.dtype)
    if dt.name not in _KINDS:
        raise ValueError(
            f"feature {key!r} of dtype {dt.name}: tf.train.Example features "
            f"are int64, float32 or string")
    if isinstance(spec, _FLAT):
        return dt, ()
    shape = tuple(int(d) for d in spec.shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"feature {key!r}: shape {list(shape)} must be "
                         f"fully defined")
    return dt, shape


def _np_dtype(dt):
    return object if dt == _dtypes.string else dt.as_numpy_dtype


def _not_strings(serialized):
    """TF converts serialized to a string tensor first: its words."""
    dt = getattr(serialized, "dtype", None)
    if isinstance(dt, _dtypes.DType) and dt != _dtypes.string:
        from .._tensor import SymbolicTensor
        if isinstance(serialized, SymbolicTensor):
            # A graph input meets the op's input type instead (TF's words).
            raise TypeError(f"Input 'serialized' of 'ParseExampleV2' Op has "
                            f"type {dt.name} that does not match expected "
                            f"type of string.")
        raise ValueError(f"Tensor conversion requested dtype string for "
                         f"Tensor with dtype {dt.name}: {serialized!r}")


def _as_bytes(serialized):
    _not_strings(serialized)
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
        f"parse_single_example: serialized must be bytes or a scalar "
        f"string tensor, got {type(serialized).__name__}")


def _default(key, spec, dt, shape):
    if spec.default_value is None:
        return None
    d = np.asarray(spec.default_value, _np_dtype(dt))
    if dt == _dtypes.string:
        d = np.vectorize(_to_bytes, otypes=[object])(d) if d.size else d
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
        if isinstance(spec, RaggedFeature) and spec.value_key is not None:
            key = spec.value_key
        if isinstance(spec, _FLAT):
            out[key] = _flat_values(key, fmap, kind, dt)
            continue
        if key not in fmap:
            default = _default(key, spec, dt, shape)
            if seq:
                if not spec.allow_missing:
                    raise ValueError(
                        f"feature {key!r}: FixedLenSequenceFeature needs "
                        f"allow_missing=True in parse_single_example")
                out[key] = np.zeros((0,) + shape, _np_dtype(dt))
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
        arr = _array(values, dt)
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


def _to_bytes(v):
    return v.encode() if isinstance(v, str) else bytes(v)


def _array(values, dt):
    if dt == _dtypes.string:
        arr = np.empty(len(values), object)
        arr[:] = [bytes(v) for v in values]
        return arr
    return np.asarray(values, dt.as_numpy_dtype)


def _flat_values(key, fmap, kind, dt):
    """A VarLen/Ragged feature's values (none when it is missing), with
    TF's error when their type is not the spec's."""
    if key not in fmap:
        return _array([], dt)
    feat = fmap[key]
    which = feat.WhichOneof("kind")
    if which is None:
        return _array([], dt)
    if which != kind:
        raise _errors.InvalidArgumentError(
            None, None, f"Key: {key}.  Data types don't match. Expected "
            f"type: {_TF_TYPE_NAME[kind]}, Actual type: "
            f"{_TF_TYPE_NAME[which]}")
    return _array(getattr(feat, which).value, dt)


def _tensor(arr, dt):
    from ..ops.constant_op import constant
    return constant(arr, dtype=dt)


def _sparse(indices, values, dense_shape, dt):
    from ..sparse import SparseTensor
    return SparseTensor(
        indices=_tensor(np.asarray(indices, np.int64), _dtypes.int64),
        values=_tensor(values, dt),
        dense_shape=_tensor(np.asarray(dense_shape, np.int64),
                            _dtypes.int64))


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
    _check_features(features)
    if getattr(serialized, "_symbolic", False):
        return _static_parse(features)
    values = _parse_values(_decode(serialized), features)
    out = {}
    for k, spec in features.items():
        dt, _ = _check_spec(k, spec)
        v = values[_value_key(k, spec)]
        if isinstance(spec, VarLenFeature):
            out[k] = _sparse(np.arange(len(v)).reshape(-1, 1), v, [len(v)],
                             dt)
        else:
            out[k] = _tensor(v, dt)
    return _tf_order(features, out)


def _tf_order(features, out):
    """out's keys in the order TF's parse ops give them: the sparse
    (VarLenFeature) keys sorted, then the dense, then the ragged."""
    def group(k):
        s = features[k]
        return 0 if isinstance(s, VarLenFeature) else \
            2 if isinstance(s, RaggedFeature) else 1
    return {k: out[k] for k in sorted(out, key=lambda k: (group(k), k))}


def _static_parse(features):
    """parse_single_example of a graph input, which tfmini cannot parse
    (Python protobuf): only while a dataset's map function is traced
    for its element_spec (never run), tensors of each FixedLenFeature's
    dtype and shape, as TF's static spec."""
    from ..data.transforms import probing_specs
    import tfmini as tf
    if not probing_specs() or not all(
            type(s) is FixedLenFeature for s in features.values()):
        raise NotImplementedError(
            "parse_single_example inside tf.function: tfmini parses eager "
            "string tensors (Python protobuf), not graph inputs; parse in "
            "Dataset.map or eagerly")
    out = {}
    for k, spec in features.items():
        dt, shape = _check_spec(k, spec)
        out[k] = tf.fill(shape, b"") if dt == _dtypes.string else \
            tf.zeros(shape, dt)
    return _tf_order(features, out)


def _value_key(key, spec):
    if isinstance(spec, RaggedFeature) and spec.value_key is not None:
        return spec.value_key
    return key


def _batch_bytes(serialized):
    """parse_example's batch as a list of bytes."""
    _not_strings(serialized)
    if isinstance(serialized, (bytes, bytearray)):
        raise ValueError("parse_example takes a batch (a list of "
                         "serialized examples); use parse_single_example "
                         "for one")
    if getattr(serialized, "dtype", None) == _dtypes.string:
        if getattr(serialized, "_symbolic", False):
            raise NotImplementedError(
                "parse_example inside tf.function: tfmini parses eager "
                "string tensors (Python protobuf), not graph inputs")
        if serialized.shape.rank != 1:
            raise ValueError(f"parse_example: serialized must be a vector "
                             f"of examples, got shape {serialized.shape}")
        return list(serialized.numpy())
    return list(serialized)


def parse_example(serialized, features, example_names=None, name=None):
    """A batch (list or 1-D NumPy array) of serialized Examples ->
    {name: dense tensor with the batch first}. Sequence features are
    padded to the longest with default_value (0 if none), as TF."""
    from ..ops.constant_op import constant
    _check_features(features)
    rows = [_parse_values(_decode(s), features)
            for s in _batch_bytes(serialized)]
    out = {}
    for key, spec in features.items():
        dt, shape = _check_spec(key, spec)
        col = [r[_value_key(key, spec)] for r in rows]
        if isinstance(spec, VarLenFeature):
            out[key] = _sparse_batch(col, dt)
            continue
        if isinstance(spec, RaggedFeature):
            out[key] = _ragged_batch(col, dt, spec.row_splits_dtype)
            continue
        if isinstance(spec, FixedLenSequenceFeature):
            n = max([len(c) for c in col], default=0)
            pad = 0 if spec.default_value is None else spec.default_value
            if dt == _dtypes.string:
                pad = b"" if spec.default_value is None else \
                    _to_bytes(spec.default_value)
            batch = np.full((len(col), n) + shape, pad, _np_dtype(dt))
            for i, c in enumerate(col):
                batch[i, :len(c)] = c
        elif col:
            batch = np.stack(col)
        else:
            batch = np.zeros((0,) + shape, _np_dtype(dt))
        out[key] = constant(batch, dtype=dt)
    return _tf_order(features, out)


def _sparse_batch(col, dt):
    """TF's VarLenFeature batch: row-major indices [example, j], dense
    shape [batch, longest]."""
    idx = [(i, j) for i, c in enumerate(col) for j in range(len(c))]
    values = _array([v for c in col for v in c], dt)
    width = max([len(c) for c in col], default=0)
    return _sparse(np.asarray(idx, np.int64).reshape(-1, 2), values,
                   [len(col), width], dt)


def _ragged_batch(col, dt, splits_dtype):
    from ..ragged import RaggedTensor
    values = _array([v for c in col for v in c], dt)
    splits = np.concatenate([[0], np.cumsum([len(c) for c in col])])
    return RaggedTensor.from_row_splits(
        _tensor(values, dt),
        _tensor(splits.astype(splits_dtype.as_numpy_dtype), splits_dtype),
        validate=False)


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None,
               name=None):
    """Each string's bytes as numbers of out_type (the DecodeRaw op of
    tfmini/ops/string_ops.py)."""
    from ..ops.string_ops import decode_raw as _decode_raw
    return _decode_raw(input_bytes, out_type, little_endian, fixed_length)
