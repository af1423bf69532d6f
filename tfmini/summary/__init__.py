"""tf.summary: write scalars, histograms, images, text and graphs to
event files that TensorBoard reads.

    writer = tf.summary.create_file_writer("logs/run1")
    with writer.as_default(step=0):
        tf.summary.scalar("loss", 0.25)

Writing needs the optional `tensorboard` and `protobuf` packages (their
proto definitions and tensorboard's EventFileWriter); without them tfmini
still imports, and create_file_writer raises an ImportError naming them.

Inside a tf.function, scalar and histogram are traced (a PrintV2 node
hands their values back to Python on each call: Note [Summaries in
graphs] in in_graph.py) and, as in TF, keep the writer and record_if of
the trace; image, text and write raise NotImplementedError there. With no
default writer (or record_if false) every summary returns False and
writes nothing."""
import types as _types

from .writer import (SummaryWriter, create_file_writer,  # noqa: F401
                     create_noop_writer, flush, get_step, record_if,
                     set_step, should_record_summaries)
from .ops import histogram, image, scalar, text, write  # noqa: F401
from .graph import graph, trace_export, trace_off, trace_on  # noqa: F401

experimental = _types.SimpleNamespace(get_step=get_step, set_step=set_step)

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer",
           "flush", "record_if", "should_record_summaries", "write",
           "scalar", "histogram", "image", "text", "graph", "trace_on",
           "trace_off", "trace_export", "experimental"]
