"""tf.autograph: Python control flow on tensors inside tf.function.

tf.function(autograph=True), the default, converts the function's source
before tracing it (converter.py): `if`/`while`/`for` on tensors become
graph conditionals and loops, on Python values they stay Python (loops
over Python ranges and lists unroll). The rewritten code calls the
operators in operators.py, which choose at run time."""
import importlib as _importlib

from . import experimental
from .api import to_code, to_graph
from .api import convert as _convert

__all__ = ["to_code", "to_graph", "experimental", "set_verbosity", "trace"]


def set_verbosity(level, alsologtostdout=False):
    """How much AutoGraph logs (0: warnings only)."""
    import logging
    logging.getLogger("tfmini").setLevel(
        logging.WARNING if level <= 0 else logging.DEBUG)


def trace(*args):
    """Print args (tensors included) when the code runs: tf.print when
    the call is traced, Python's print otherwise."""
    from .operators import _print
    _print(args, {})


# tf.function applies this to the Python function before its first trace
# (see tfmini/function.py, _autograph_converter).
_importlib.import_module("tfmini.function")._autograph_converter = _convert
