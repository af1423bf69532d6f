"""tf.autograph.experimental."""
import enum

from .api import do_not_convert

__all__ = ["do_not_convert", "set_loop_options", "Feature"]

_UNSPECIFIED = object()


def set_loop_options(parallel_iterations=_UNSPECIFIED,
                     swap_memory=_UNSPECIFIED,
                     maximum_iterations=_UNSPECIFIED,
                     shape_invariants=_UNSPECIFIED):
    """Options for the loop this call is in (at the top level of its
    body): shape_invariants=[(variable, TensorShape), ...] lets a loop
    variable's shape vary, maximum_iterations bounds the loop. AutoGraph
    moves the call out of the loop; run as is, it does nothing."""


class Feature(enum.Enum):
    """Optional conversions (accepted for compatibility; tfmini converts
    what it converts regardless)."""
    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"
