"""The public ops, one module per family (see csrc/ops/ for the table).

Each module lists its top-level names (tf.X) in __all__, and the names it
shows in sub-namespaces in _NAMESPACES, e.g.
    _NAMESPACES = {"math": ["log1p"], "nn": ["relu"]}
The namespace modules (tfmini.math, tfmini.nn, ...) gather them with
`namespace()`, so a family adds names without touching shared files."""
import importlib

FAMILIES = ["constant_op", "math_ops", "activation_ops", "reduce_ops",
            "linalg_ops", "nn_ops", "random_ops", "array_ops", "conv_ops",
            "control_flow_ops", "tensor_array", "logging_ops", "norm_ops",
            "index_ops", "segment_ops", "string_ops", "complex_ops"]


def modules():
    return [importlib.import_module(f"{__name__}.{f}") for f in FAMILIES]


def namespace(name):
    """{public name: object} of every family's names for tf.<name>."""
    out = {}
    for m in modules():
        for n in getattr(m, "_NAMESPACES", {}).get(name, []):
            out[n] = getattr(m, n)
    return out
