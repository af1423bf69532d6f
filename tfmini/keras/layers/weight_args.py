"""A layer's weight is built from three constructor arguments that share
a prefix (`kernel_initializer`, `kernel_regularizer`, `kernel_constraint`):
these resolve and store them, and build the weight from them."""
from .. import constraints, initializers, regularizers


def init_weight_args(layer, prefix, initializer, regularizer, constraint):
    """Sets layer.<prefix>_initializer, _regularizer and _constraint."""
    setattr(layer, prefix + "_initializer", initializers.get(initializer))
    setattr(layer, prefix + "_regularizer", regularizers.get(regularizer))
    setattr(layer, prefix + "_constraint", constraints.get(constraint))


def add_weight_from(layer, prefix, name, shape):
    """layer.add_weight(name, shape) with the `<prefix>_*` arguments."""
    return layer.add_weight(
        name, shape, initializer=getattr(layer, prefix + "_initializer"),
        regularizer=getattr(layer, prefix + "_regularizer"),
        constraint=getattr(layer, prefix + "_constraint"))
