"""tf.io.serialize_tensor / parse_tensor: TensorFlow's TensorProto wire
format (tensorflow/core/framework/tensor.proto), with the protobuf
package as tfmini/train/example.py uses it, so TF parses what tfmini
serializes and the reverse. Eager only: the bytes are made in Python."""
import numpy as np

from .. import dtypes as _dtypes
from .. import errors as _errors

# TF's DataType numbers (types.proto) <-> tfmini dtype names.
_TF_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5,
            "int8": 6, "string": 7, "int64": 9, "bool": 10, "float16": 19}
_BY_TF = {v: k for k, v in _TF_ENUM.items()}
# The repeated *_val field TF fills for each dtype (when not
# tensor_content).
_VAL_FIELD = {"float32": "float_val", "float64": "double_val",
              "int32": "int_val", "uint8": "int_val", "int16": "int_val",
              "int8": "int_val", "int64": "int64_val", "bool": "bool_val",
              "float16": "half_val", "string": "string_val"}

_classes = None


def _schema():
    """TensorShapeProto and TensorProto, built in a private pool (dtype
    as int32: an enum's wire form)."""
    global _classes
    if _classes is not None:
        return _classes
    from google.protobuf import descriptor_pb2, descriptor_pool
    from ..train.example import GetMessageClass
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(
        name="tfmini/tensor.proto", package="tensorflow", syntax="proto3")
    shape = fd.message_type.add(name="TensorShapeProto")
    dim = shape.nested_type.add(name="Dim")
    dim.field.add(name="size", number=1, type=F.TYPE_INT64)
    dim.field.add(name="name", number=2, type=F.TYPE_STRING)
    shape.field.add(name="dim", number=2, type=F.TYPE_MESSAGE,
                    label=F.LABEL_REPEATED,
                    type_name=".tensorflow.TensorShapeProto.Dim")
    shape.field.add(name="unknown_rank", number=3, type=F.TYPE_BOOL)
    t = fd.message_type.add(name="TensorProto")
    rep = F.LABEL_REPEATED
    for name, num, typ, label in (
            ("dtype", 1, F.TYPE_INT32, F.LABEL_OPTIONAL),
            ("version_number", 3, F.TYPE_INT32, F.LABEL_OPTIONAL),
            ("tensor_content", 4, F.TYPE_BYTES, F.LABEL_OPTIONAL),
            ("half_val", 13, F.TYPE_INT32, rep),
            ("float_val", 5, F.TYPE_FLOAT, rep),
            ("double_val", 6, F.TYPE_DOUBLE, rep),
            ("int_val", 7, F.TYPE_INT32, rep),
            ("string_val", 8, F.TYPE_BYTES, rep),
            ("int64_val", 10, F.TYPE_INT64, rep),
            ("bool_val", 11, F.TYPE_BOOL, rep)):
        f = t.field.add(name=name, number=num, type=typ, label=label)
        if label == rep and typ != F.TYPE_BYTES:
            f.options.packed = True
    t.field.add(name="tensor_shape", number=2, type=F.TYPE_MESSAGE,
                type_name=".tensorflow.TensorShapeProto")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    _classes = GetMessageClass(pool.FindMessageTypeByName(
        "tensorflow.TensorProto"))
    return _classes


def _eager(x, what):
    from .. import _C
    if _C.tracing() or getattr(x, "_symbolic", False):
        raise NotImplementedError(
            f"tf.io.{what} inside a tf.function: tfmini builds the "
            f"TensorProto in Python; call it eagerly")


def serialize_tensor(tensor, name=None):
    """tensor as a serialized TensorProto (a scalar string tensor)."""
    from ..ops.constant_op import constant, convert_to_tensor
    _eager(tensor, "serialize_tensor")
    t = convert_to_tensor(tensor)
    dt = t.dtype.name
    proto = _schema()(dtype=_TF_ENUM[dt])
    for d in t.shape.as_list():
        proto.tensor_shape.dim.add(size=d)
    a = t.numpy()
    if dt == "string":
        proto.string_val.extend(np.asarray(a, dtype=object).reshape(-1))
    else:
        # As TF's AsProtoTensorContent: the raw little-endian bytes.
        proto.tensor_content = np.ascontiguousarray(
            a, a.dtype.newbyteorder("<")).tobytes()
    return constant(proto.SerializeToString())


def parse_tensor(serialized, out_type, name=None):
    """A tensor of out_type from a serialized TensorProto."""
    from ..ops.constant_op import constant
    _eager(serialized, "parse_tensor")
    data = serialized
    if hasattr(serialized, "numpy"):
        data = serialized.numpy()
    if not isinstance(data, (bytes, np.bytes_)):
        raise TypeError(f"parse_tensor: serialized must be a scalar string, "
                        f"got {type(data).__name__}")
    want = _dtypes.as_dtype(out_type)
    proto = _schema()()
    try:
        proto.ParseFromString(bytes(data))
    except Exception:  # protobuf's DecodeError
        raise _errors.InvalidArgumentError(
            None, None, "Could not parse `serialized` as TensorProto: "
            f"{bytes(data)[:40]!r}") from None
    got = _BY_TF.get(proto.dtype)
    if got is None:
        raise _errors.InvalidArgumentError(
            None, None, f"ParseTensor: TF dtype number {proto.dtype} has no "
            "tfmini dtype")
    if got != want.name:
        raise _errors.InvalidArgumentError(
            None, None, f"Type mismatch between parsed tensor ({got}) and "
            f"dtype ({want.name})")
    shape = [d.size for d in proto.tensor_shape.dim]
    n = int(np.prod(shape, dtype=np.int64))
    if got == "string":
        vals = list(proto.string_val)
        arr = np.empty(len(vals), dtype=object)
        arr[:] = vals
    elif proto.tensor_content:
        np_dt = np.dtype(want.as_numpy_dtype).newbyteorder("<")
        if len(proto.tensor_content) != n * np_dt.itemsize:
            raise _errors.InvalidArgumentError(
                None, None, f"ParseTensor: {len(proto.tensor_content)} "
                f"bytes of content for a {got} tensor of shape {shape}")
        arr = np.frombuffer(proto.tensor_content, np_dt)
    else:
        vals = getattr(proto, _VAL_FIELD[got])
        if got == "float16":
            arr = np.asarray(vals, np.uint16).view(np.float16)
        else:
            arr = np.asarray(vals, want.as_numpy_dtype)
    if arr.size == 1 and n > 1:     # TF's one value for every element
        arr = np.repeat(arr, n)
    if arr.size != n:
        raise _errors.InvalidArgumentError(
            None, None, f"ParseTensor: {arr.size} values for a {got} tensor "
            f"of shape {shape}")
    return constant(arr.astype(want.as_numpy_dtype).reshape(shape),
                    dtype=want)
