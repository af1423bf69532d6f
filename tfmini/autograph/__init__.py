"""tf.autograph: Python control flow on tensors inside tf.function.

tf.function(autograph=True), the default, converts the function's source
before tracing it (converter.py), and so, recursively, every user function
it calls. The rewritten code calls the operators in operators.py, which
choose when they run:

- a Python value (or a tensor outside any trace) keeps Python semantics:
  `if flag:` runs one block, `for i in range(3):` unrolls, and converted
  code run eagerly does exactly what the original does;
- a tensor while tracing becomes graph control flow: `if`/`elif`/`else`
  and `a if c else b` -> tf.cond, `while` -> tf.while_loop, `for x in t`
  (over dim 0) and `for i in tf.range(n)` -> a counted tf.while_loop,
  `and`/`or` -> lazy tf.cond, `not` -> tf.logical_not, `assert` ->
  tf.Assert, `print` -> tf.print; `break`, `continue` and `return` inside
  them become flags.

The variables a block changes are passed through the graph construct
explicitly, with TF's checks and messages: a variable used after a tensor
`if` must be set in both branches ("'x' must also be initialized in the
else branch"), with one dtype and structure; loop variables keep their
dtype (TypeError), shape (ValueError; relax with
tf.autograph.experimental.set_loop_options(shape_invariants=...)) and
structure. Errors point at the user's lines: the converted code keeps
them.

Beyond TF: item assignment on a tensor works in converted code,
`x[i] = v` and `x[i] *= 2` becoming `x = <x with that slice replaced>`
(tf.tensor_scatter_nd_update); on other objects it is the usual
__setitem__.

Not (yet) as in TF:
- a variable first bound inside a loop over tensors and used after it,
  and `return` inside such a loop, are errors ("'x' must be defined
  before the loop"): TF infers their type by tracing the body once in a
  scratch graph, which tfmini cannot do yet;
- a TensorArray carried through a graph loop needs its element shape
  known (element_shape= or a write before the loop);
- functions of installed packages and the standard library are not
  converted (TF converts every module outside its own list); use
  tf.autograph.to_graph on them if needed;
- functions whose source cannot be read (REPL, exec, lambdas) run as
  written, with one warning.
"""
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
