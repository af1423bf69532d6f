"""tf.types.experimental: the types for annotations and isinstance checks.
GenericFunction is what tf.function returns, ConcreteFunction one trace
of it; TensorLike is the union of what converts to a tensor."""
import abc
import typing

import numpy as np

from .._tensor import Tensor
from ..function import ConcreteFunction, Function as GenericFunction  # noqa
from ..variables import Variable

TensorLike = typing.Union[Tensor, Variable, np.ndarray, np.number, int,
                          float, bool, str, bytes, list, tuple]
Callable = GenericFunction
PolymorphicFunction = GenericFunction


class TraceType(abc.ABC):
    """The base of a custom tracing type: what an argument's
    `__tf_tracing_type__(context)` returns. tf.function keys such an
    argument by its TraceType's __eq__/__hash__ (objects of equal types
    share a trace), and the trace sees the first object as the value.
    Subtyping (is_subtype_of, most_specific_common_supertype) is not
    consulted: a new type traces anew."""

    @abc.abstractmethod
    def is_subtype_of(self, other):
        ...

    @abc.abstractmethod
    def most_specific_common_supertype(self, others):
        ...

    def placeholder_value(self, placeholder_context=None):
        raise NotImplementedError

    @abc.abstractmethod
    def __eq__(self, other):
        ...

    @abc.abstractmethod
    def __hash__(self):
        ...

__all__ = ["ConcreteFunction", "GenericFunction", "PolymorphicFunction",
           "TensorLike", "Callable", "TraceType"]
