"""tf.print: prints tensors when the op runs (eagerly at once, in a
tf.function on every call), through the C PrintV2 op."""
import pprint
import sys

from .. import _C
from .._tensor import Tensor

__all__ = ["print"]


def _stream_id(stream):
    if stream is None or stream is sys.stderr or stream is sys.__stderr__:
        return 2
    if stream is sys.stdout or stream is sys.__stdout__:
        return 1
    if isinstance(stream, str):
        if stream in ("stderr", "stdout"):
            return 2 if stream == "stderr" else 1
        if stream.startswith("file://"):
            return _C.register_stream(open(stream[len("file://"):], "a"))
        raise ValueError(f"Unsupported output stream {stream!r}: use "
                         f"sys.stdout, sys.stderr, a file object or "
                         f"'file://path'")
    if hasattr(stream, "write"):
        return _C.register_stream(stream)
    raise ValueError(f"Unsupported output stream {stream!r}")


def _print(*inputs, output_stream=None, summarize=3, sep=" ", end="\n",
           name=None):
    """tf.print: print tensors (and Python values) when the op runs:
    eagerly at once, in a tf.function on every call (Python's print runs
    only while tracing). Tensors print as `[0 1 2 ... 7 8 9]`, with
    `summarize` elements at each end of every dim (-1: all)."""
    if summarize is None:
        summarize = 3
    if _C.tracing():
        from ..config import optimizer
        if optimizer._strips_debug_ops():
            return None
    tensors = []

    def is_tensor(x):
        return isinstance(x, Tensor) or (hasattr(x, "_as_tensor") and
                                         not isinstance(x, type))

    def as_tensor(x):
        return x if isinstance(x, Tensor) else x._as_tensor()

    def replace_tensors(x, fn):
        # Through plain lists, tuples and dicts, in order, as pformat
        # shows them.
        if is_tensor(x):
            return fn(x)
        t = type(x)
        if t in (list, tuple):
            return t(replace_tensors(v, fn) for v in x)
        if t is dict:
            return {k: replace_tensors(v, fn) for k, v in x.items()}
        return x

    def mark(x):
        tensors.append(as_tensor(x))
        return ph

    free = " ".join(pprint.pformat(replace_tensors(x, lambda v: ""))
                    for x in inputs)
    ph = "{tensor}"
    while ph in free or ph in sep or ph in end:
        ph = "{" + ph + "}"
    templates = []
    for x in inputs:
        if isinstance(x, str):
            templates.append(x)
        elif is_tensor(x):
            tensors.append(as_tensor(x))
            templates.append(ph)
        else:
            templates.append(pprint.pformat(replace_tensors(x, mark))
                             .replace(repr(ph), ph))
    text = sep.join(templates) + end
    _C.print_v2(text.split(ph), tensors, _stream_id(output_stream),
                int(summarize))


print = _print  # noqa: A001  (tf.print)
