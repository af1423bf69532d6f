"""The optional packages tf.summary writes with: `tensorboard` (its proto
definitions and its EventFileWriter: TFRecord framing, masked CRC32C) and
`protobuf` under it. tfmini imports without them; only writing needs
them, and then the ImportError names what to install."""
import importlib

_HINT = ("tf.summary needs the 'tensorboard' and 'protobuf' packages to "
         "write event files: python3 -m pip install tensorboard protobuf")


def require(what):
    """Import the tensorboard/protobuf modules a writer uses, or raise
    ImportError naming the package and the call (`what`)."""
    try:
        importlib.import_module("google.protobuf")
    except ImportError as e:
        raise ImportError(f"{what}: the 'protobuf' package is not "
                          f"installed. {_HINT}") from e
    try:
        from tensorboard.compat.proto import (  # noqa: F401
            config_pb2, event_pb2, graph_pb2, summary_pb2)
        from tensorboard.summary.writer import event_file_writer  # noqa
        from tensorboard.util import tensor_util  # noqa: F401
    except ImportError as e:
        raise ImportError(f"{what}: the 'tensorboard' package is not "
                          f"installed. {_HINT}") from e


def pil_image(what):
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"{what}: encoding PNG needs the 'Pillow' "
                          f"package (tensorboard depends on it): "
                          f"python3 -m pip install pillow") from e
    return Image
