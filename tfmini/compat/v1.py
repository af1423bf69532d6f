"""tf.compat.v1 as far as tfmini goes: the few names whose TF1 meaning
is TF2's, and nothing else.

TF1's graphs, sessions, placeholders, get_variable, Savers and
estimators are out of tfmini's scope: tfmini is TF2's front end.
Migration guides import this module beside `tensorflow` and run TF2
code next to the TF1 code they replace; with this module the TF2 half
runs, and a TF1 name raises an
AttributeError that names it and says why, instead of the import
failing.
"""
from ..tensor_shape import Dimension  # noqa: F401  (TensorShape.dims')


def enable_tensor_equality():
    """Tensor `==` compares values, and tensors hash only through
    .ref(): TF2's behaviour, which is tfmini's only one (there is no
    disable_tensor_equality)."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"module {__name__!r} has no attribute {name!r}: tfmini has no "
        f"TF1 API (tf.compat.v1.{name}); use its TF2 counterpart")
