"""tf.io: files, TFRecord files and tf.train.Example parsing.

tfmini has no string dtype yet, so what TF returns as a string tensor is
Python bytes here, in eager code only: read_file gives bytes, and
write_file takes bytes or str. Inside a tf.function they raise
NotImplementedError (TF reads the file on every call; baking the bytes in
at trace time would be silently wrong)."""
from . import gfile  # noqa: F401
from .parsing import (FixedLenFeature, FixedLenSequenceFeature,  # noqa
                      RaggedFeature, SparseFeature, VarLenFeature,
                      decode_raw, parse_example, parse_single_example)
from .tfrecord import (TFRecordCompressionType, TFRecordOptions,  # noqa
                       TFRecordWriter)
from .tensor_proto import parse_tensor, serialize_tensor  # noqa: F401


def _no_string_in_graph(what):
    from .. import _C
    if _C.tracing():
        raise NotImplementedError(
            f"tf.io.{what} inside a tf.function: it gives or takes a string "
            f"tensor, and tfmini has no string dtype yet; call it outside "
            f"the function (eagerly it uses Python bytes)")


def read_file(filename, name=None):
    """The file's contents as bytes (TF: a scalar string tensor)."""
    _no_string_in_graph("read_file")
    path = gfile._local(filename)
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError as e:
        raise gfile._not_found(path, e) from None


def write_file(filename, contents, name=None):
    """Writes contents (bytes, or str as UTF-8), making no directories,
    as TF."""
    _no_string_in_graph("write_file")
    if isinstance(contents, str):
        contents = contents.encode("utf-8")
    path = gfile._local(filename)
    try:
        with open(path, "wb") as f:
            f.write(bytes(contents))
    except FileNotFoundError as e:
        raise gfile._not_found(path, e) from None
