"""keras.backend: the few global settings Keras code reads (float type,
fuzz factor, layer-name counters) and helpers shared by the package."""
import contextlib
import re
import threading

_FLOATX = "float32"
_EPSILON = 1e-7
_name_counts = {}
_local = threading.local()


def floatx():
    """The default float type of layer weights and computations."""
    return _FLOATX


def set_floatx(value):
    global _FLOATX
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value!r}; expected "
                         "'float16', 'float32' or 'float64'")
    _FLOATX = str(value)


def epsilon():
    """The fuzz factor used to keep logs and divisions finite."""
    return _EPSILON


def set_epsilon(value):
    global _EPSILON
    _EPSILON = float(value)


def clear_session():
    """Reset the layer-name counters (the next Dense is 'dense' again)."""
    _name_counts.clear()


def to_snake_case(name):
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return s if not s.startswith("_") else "private" + s


def unique_object_name(base):
    """'dense', then 'dense_1', 'dense_2', ... (Keras' default names)."""
    n = _name_counts.get(base, 0)
    _name_counts[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def _tf():
    import tfmini
    return tfmini


def init_scope():
    """tf.init_scope when tracing exists (lifts variable creation out of
    a function being traced), else a no-op context."""
    scope = getattr(_tf(), "init_scope", None)
    return scope() if scope is not None else contextlib.nullcontext()


def is_tensor_like(x):
    import tfmini
    return isinstance(x, (tfmini.Tensor, tfmini._C.VariableBase))


def is_variable(x):
    import tfmini
    return isinstance(x, tfmini._C.VariableBase)


def is_symbolic(x):
    """True for a tensor being traced into a graph (no value yet)."""
    return bool(getattr(x, "_symbolic", False))


def learning_phase_stack():
    s = getattr(_local, "training", None)
    if s is None:
        s = _local.training = []
    return s
