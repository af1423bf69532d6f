"""tf.summary.write and the summaries of TensorBoard's standard plugins,
in the form TF 2 writes them: tensor summaries whose metadata names the
plugin ('scalars', 'histograms', 'images', 'text'), read back by
TensorBoard's data_compat and plugins."""
import io

import numpy as np

from .. import name_scopes
from ..context import executing_eagerly
from . import _deps, in_graph
from .writer import (_resolve_step, _value, _writer_for, get_step,
                     write_event)

DEFAULT_BUCKET_COUNT = 30


def _tag(name):
    # TF's summary_scope: the enclosing name scope prefixes the tag.
    return name_scopes.current_scope() + name


def _emit(writer, tag, array, step, metadata):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.util import tensor_util
    proto = tensor_util.make_tensor_proto(array)
    value = summary_pb2.Summary.Value(tag=tag, tensor=proto)
    if metadata is not None:
        value.metadata.CopyFrom(metadata)
    write_event(writer, event_pb2.Event(
        step=step, summary=summary_pb2.Summary(value=[value])))
    return True


def _numeric(data, what):
    a = np.asarray(_value(data))
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{what}: data must be numeric, got dtype "
                        f"{a.dtype}")
    return a


def write(tag, tensor, step=None, metadata=None, name=None):
    """Write `tensor` (or the result of calling it, only when recorded)
    under `tag`; `metadata` is a SummaryMetadata proto or its bytes.
    Returns False when nothing is recorded (no default writer, or the
    record_if condition is false)."""
    writer = _writer_for("tf.summary.write")
    if writer is None:
        return False
    step = _resolve_step(step, "tf.summary.write")
    if callable(tensor):
        tensor = tensor()
    if isinstance(metadata, (bytes, bytearray)):
        from tensorboard.compat.proto import summary_pb2
        metadata = summary_pb2.SummaryMetadata.FromString(bytes(metadata))
    a = np.asarray(_value(tensor))
    if a.dtype.kind == "U":
        a = np.vectorize(lambda s: s.encode("utf-8"), otypes=[object])(a)
    return _emit(writer, tag, a, step, metadata)


def scalar(name, data, step=None, description=None):
    """A scalar (stored as a float32 tensor, plugin 'scalars')."""
    writer = _writer_for("tf.summary.scalar", in_graph=True)
    if writer is None:
        return False
    what = f"tf.summary.scalar '{name}'"
    if callable(data):
        data = data()
    from tensorboard.plugins.scalar import metadata
    md = metadata.create_summary_metadata(None, description)
    tag = _tag(name)
    if not executing_eagerly():
        from .. import cast, float32
        data = cast(data, float32)
        if data.shape.rank not in (None, 0):
            raise ValueError(f"{what}: data must be a scalar, got shape "
                             f"{data.shape.as_list()}")

        def emit(writer, step, values):
            _emit(writer, tag, values.astype(np.float32).reshape(()), step,
                  md)
        return in_graph.record(("scalar", tag, description, id(writer)),
                               writer, in_graph.graph_step(
                                   step, get_step(), what), data, emit)
    step = _resolve_step(step, "tf.summary.scalar")
    a = _numeric(data, what)
    if a.shape != ():
        raise ValueError(f"{what}: data must be a scalar, got shape "
                         f"{list(a.shape)}")
    return _emit(writer, tag, a.astype(np.float32), step, md)


def histogram_buckets(data, bucket_count=DEFAULT_BUCKET_COUNT):
    """[k, 3] float64 rows (left edge, right edge, count): TF's (and
    tensorboard's v3) rule: k equal-width buckets from min to max, the max
    in the last; all values equal: k zero-width buckets at that value, all
    counted in the last; no data: k rows of zeros; k <= 0: no rows."""
    data = np.asarray(data, dtype=np.float64).reshape(-1)
    k = max(int(bucket_count), 0)
    if data.size == 0 or k == 0:
        return np.zeros((k, 3))
    lo, hi = data.min(), data.max()
    if lo == hi:
        counts = np.zeros(k)
        counts[-1] = data.size
        return np.stack([np.full(k, hi), np.full(k, hi), counts], axis=1)
    width = (hi - lo) / k
    index = np.minimum(np.floor((data - lo) / width).astype(np.int64), k - 1)
    counts = np.bincount(index, minlength=k).astype(np.float64)
    edges = np.linspace(lo, hi, k + 1)
    edges[-1] = hi
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def histogram(name, data, step=None, buckets=None, description=None):
    """A histogram of `data` (any shape) in `buckets` buckets (30 by
    default), plugin 'histograms'."""
    writer = _writer_for("tf.summary.histogram", in_graph=True)
    if writer is None:
        return False
    what = f"tf.summary.histogram '{name}'"
    if callable(data):
        data = data()
    k = DEFAULT_BUCKET_COUNT if buckets is None else int(buckets)
    from tensorboard.plugins.histogram import metadata
    md = metadata.create_summary_metadata(None, description)
    tag = _tag(name)

    def emit(writer, step, a):
        if a.size and not np.all(np.isfinite(a.astype(np.float64))):
            raise ValueError(f"{what}: data has NaN or Inf values (shape "
                             f"{list(a.shape)}, dtype {a.dtype}): its "
                             f"buckets would be meaningless")
        return _emit(writer, tag, histogram_buckets(a, k), step, md)

    if not executing_eagerly():
        from .. import convert_to_tensor
        data = convert_to_tensor(data)
        if not (data.dtype.is_floating or data.dtype.is_integer or
                data.dtype.is_bool):
            raise TypeError(f"{what}: data must be numeric, got dtype "
                            f"{data.dtype.name}")
        return in_graph.record(("histogram", tag, description, k,
                                id(writer)), writer, in_graph.graph_step(
                                    step, get_step(), what), data, emit)
    step = _resolve_step(step, "tf.summary.histogram")
    return emit(writer, step, _numeric(data, what))


def _to_uint8(a, what):
    """tf.image.convert_image_dtype(a, uint8, saturate=True)."""
    if a.dtype == np.uint8:
        return a
    if a.dtype.kind == "f":
        # Scale by 255.5 and truncate, as TF's float -> uint8 conversion.
        return np.clip(a.astype(np.float64) * 255.5, 0, 255).astype(np.uint8)
    if a.dtype.kind in "iu":
        bits = a.dtype.itemsize * 8 - (a.dtype.kind == "i")
        a = a.astype(np.int64)
        a = a >> (bits - 8) if bits > 8 else a << (8 - bits)
        return np.clip(a, 0, 255).astype(np.uint8)
    raise TypeError(f"{what}: image data must be float or integer, got "
                    f"dtype {a.dtype}")


_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _png(Image, pixels):
    if pixels.shape[-1] == 1:
        pixels = pixels[..., 0]
    out = io.BytesIO()
    Image.fromarray(pixels, _MODES[pixels.shape[-1]] if pixels.ndim == 3
                    else "L").save(out, format="PNG")
    return out.getvalue()


def image(name, data, step=None, max_outputs=3, description=None):
    """Images from `data` of shape [k, h, w, c], c in 1..4 (grey, grey +
    alpha, RGB, RGBA); floats are taken in [0, 1] and clipped. The first
    max_outputs images are stored as PNG, plugin 'images'."""
    writer = _writer_for("tf.summary.image")
    if writer is None:
        return False
    step = _resolve_step(step, "tf.summary.image")
    if callable(data):
        data = data()
    what = f"tf.summary.image '{name}'"
    a = _numeric(data, what)
    if a.ndim != 4 or a.shape[-1] not in _MODES:
        raise ValueError(f"{what}: data must have shape [k, h, w, c] with "
                         f"c in 1..4, got shape {list(a.shape)}")
    if int(max_outputs) < 0:
        raise ValueError(f"{what}: max_outputs must be >= 0, got "
                         f"{max_outputs}")
    Image = _deps.pil_image(what)
    pixels = _to_uint8(a, what)[:int(max_outputs)]
    rows = [str(a.shape[2]).encode(), str(a.shape[1]).encode()]
    rows += [_png(Image, p) for p in pixels]
    from tensorboard.plugins.image import metadata
    return _emit(writer, _tag(name), np.array(rows, dtype=object), step,
                 metadata.create_summary_metadata(None, description))


def _strings(data, what):
    a = np.asarray(_value(data))
    if a.dtype.kind == "U":
        return np.vectorize(lambda s: s.encode("utf-8"), otypes=[object])(a)
    if a.dtype.kind == "S":
        return a.astype(object)
    if a.dtype.kind == "O" and all(isinstance(s, (str, bytes))
                                   for s in a.reshape(-1)):
        return np.vectorize(
            lambda s: s.encode("utf-8") if isinstance(s, str) else s,
            otypes=[object])(a) if a.size else a
    raise TypeError(f"{what}: data must be strings, got dtype {a.dtype}")


def text(name, data, step=None, description=None):
    """Text (a string, or an array of strings shown as a table), rendered
    as Markdown by the 'text' plugin."""
    writer = _writer_for("tf.summary.text")
    if writer is None:
        return False
    step = _resolve_step(step, "tf.summary.text")
    if callable(data):
        data = data()
    from tensorboard.plugins.text import metadata
    return _emit(writer, _tag(name),
                 _strings(data, f"tf.summary.text '{name}'"), step,
                 metadata.create_summary_metadata(None, description))
