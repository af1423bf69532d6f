"""Graphs for TensorBoard's graph plugin: tf.summary.graph (an Event's
graph_def field) and trace_on / trace_export (a RunMetadata with the
function graphs of the tf.functions traced in between, as a tensor summary
with plugin 'graph_run_metadata_graph')."""
import threading

import numpy as np

from .. import context as _context
from ..function import _trace_listeners
from ..graph_def import _input_name
from .writer import _resolve_step, _writer_for, write_event

_lock = threading.Lock()
_trace = None   # while on: {"graph": bool, "functions": [concrete, ...]}


def _shape_proto(dims):
    from tensorboard.compat.proto import tensor_shape_pb2
    if dims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(dim=[
        tensor_shape_pb2.TensorShapeProto.Dim(
            size=-1 if d is None or d < 0 else int(d)) for d in dims])


def graph_def_proto(func_graph):
    """A tfmini FuncGraph as tensorboard's graph_pb2.GraphDef: each node's
    name, op and inputs (control inputs as ^name), with its outputs'
    shapes as the '_output_shapes' attr the graph plugin shows."""
    from tensorboard.compat.proto import attr_value_pb2, graph_pb2
    gd = graph_pb2.GraphDef()
    for op in func_graph.get_operations():
        node = gd.node.add(name=op.name, op=op.type)
        node.input.extend([_input_name(i) for i in op.inputs] +
                          ["^" + c for c in op.control_inputs])
        if op.outputs:
            shapes = [_shape_proto(None if o.shape.rank is None
                                   else o.shape.as_list())
                      for o in op.outputs]
            node.attr["_output_shapes"].CopyFrom(attr_value_pb2.AttrValue(
                list=attr_value_pb2.AttrValue.ListValue(shape=shapes)))
    return gd


def _as_graph_def(graph_data):
    from tensorboard.compat.proto import graph_pb2
    if isinstance(graph_data, graph_pb2.GraphDef):
        return graph_data
    if hasattr(graph_data, "graph") and hasattr(graph_data.graph,
                                                "get_operations"):
        graph_data = graph_data.graph     # a ConcreteFunction
    if hasattr(graph_data, "get_operations"):
        return graph_def_proto(graph_data)
    raise TypeError(f"tf.summary.graph: graph_data must be a FuncGraph "
                    f"(ConcreteFunction.graph), a ConcreteFunction or a "
                    f"GraphDef proto, got {type(graph_data).__name__}")


def graph(graph_data):
    """Write a graph (shown by the graph plugin for the run, untagged).
    Returns False when no default writer is set or recording is off."""
    if not _context.executing_eagerly():
        raise ValueError("graph() cannot be invoked inside a graph context.")
    writer = _writer_for("tf.summary.graph")
    if writer is None:
        return False
    from tensorboard.compat.proto import event_pb2
    write_event(writer, event_pb2.Event(
        graph_def=_as_graph_def(graph_data).SerializeToString()))
    return True


def _collect(concrete):
    with _lock:
        if _trace is not None and _trace["graph"]:
            _trace["functions"].append(concrete)


def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Start collecting the graph of every tf.function traced from now on
    (all threads) until trace_export or trace_off. tfmini has no
    profiler: profiler=True raises NotImplementedError."""
    global _trace
    if profiler:
        raise NotImplementedError(
            "tf.summary.trace_on(profiler=True): tfmini has no profiler; "
            "use profiler=False to collect graphs")
    if not _context.executing_eagerly():
        import logging
        logging.getLogger("tfmini").warning(
            "Cannot enable trace inside a tf.function.")
        return
    with _lock:
        if _trace is not None:
            import logging
            logging.getLogger("tfmini").warning(
                "Trace already enabled")
            return
        _trace = {"graph": bool(graph), "functions": []}
        if _collect not in _trace_listeners:
            _trace_listeners.append(_collect)


def trace_off():
    """Stop collecting graphs, dropping what was collected."""
    global _trace
    with _lock:
        _trace = None
        if _collect in _trace_listeners:
            _trace_listeners.remove(_collect)


def trace_export(name, step=None, profiler_outdir=None):
    """Write the graphs collected since trace_on under the tag `name` at
    `step` (or the default step), then turn tracing off. Only the
    functions traced in between are there: a tf.function already traced
    before trace_on and merely called again is not."""
    if not _context.executing_eagerly():
        import logging
        logging.getLogger("tfmini").warning(
            "Cannot export trace inside a tf.function.")
        return
    with _lock:
        if _trace is None:
            raise ValueError("Must enable trace before export through "
                             "tf.summary.trace_on.")
        with_graph, functions = _trace["graph"], list(_trace["functions"])
    try:
        _write_run_metadata(name, step, with_graph, functions)
    finally:
        trace_off()


def _write_run_metadata(name, step, with_graph, functions):
    writer = _writer_for("tf.summary.trace_export")
    if writer is None:
        return False
    step = _resolve_step(step, "tf.summary.trace_export")
    from tensorboard.compat.proto import config_pb2, summary_pb2
    from .ops import _emit
    run_metadata = config_pb2.RunMetadata()
    for c in functions:
        run_metadata.function_graphs.add(
            pre_optimization_graph=graph_def_proto(c.graph),
            post_optimization_graph=graph_def_proto(c.optimized_graph))
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name=("graph_run_metadata_graph" if with_graph
                         else "graph_run_metadata"),
            content=b"1"))
    return _emit(writer, name,
                 np.array(run_metadata.SerializeToString(), dtype=object),
                 step, metadata)

