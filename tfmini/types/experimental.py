"""tf.types.experimental: the types for annotations and isinstance checks.
GenericFunction is what tf.function returns, ConcreteFunction one trace
of it; TensorLike is the union of what converts to a tensor."""
import typing

import numpy as np

from .._tensor import Tensor
from ..function import ConcreteFunction, Function as GenericFunction  # noqa
from ..variables import Variable

TensorLike = typing.Union[Tensor, Variable, np.ndarray, np.number, int,
                          float, bool, str, bytes, list, tuple]
Callable = GenericFunction
PolymorphicFunction = GenericFunction

__all__ = ["ConcreteFunction", "GenericFunction", "PolymorphicFunction",
           "TensorLike", "Callable"]
