"""tfmini: TensorFlow 2's front end, small and fast, on a C core.

    import tfmini as tf
"""
from . import _C  # noqa: F401  (the C core; fails loudly if not built)
from . import dtypes
from .dtypes import (DType, as_dtype, bool, double, float16, float32,  # noqa
                     float64, half, int8, int16, int32, int64, string,
                     uint8, uint16, uint32, uint64)
from .dtypes import complex64, complex128  # noqa: F401
from .dtypes import bfloat16  # noqa: F401
from . import errors
from .tensor_shape import TensorShape
from ._tensor import Tensor
from .context import device, executing_eagerly
from . import config
from .ops import modules as _op_modules

for _m in _op_modules():
    globals().update({_n: getattr(_m, _n) for _n in _m.__all__})
del _m

from .variables import *  # noqa: E402,F401,F403
from .backprop import *  # noqa: E402,F401,F403
from .function import *  # noqa: E402,F401,F403
from .name_scopes import name_scope  # noqa: E402,F401
from .module import Module  # noqa: E402,F401
from . import math, nn, linalg, random, data, autograph  # noqa: E402,F401
from . import io, image, strings, types  # noqa: E402,F401
from .ops.script_ops import numpy_function, py_function  # noqa: E402,F401
from . import train  # noqa: E402,F401
from . import debugging, nest  # noqa: E402,F401
from .debugging import (Assert, assert_equal, assert_greater,  # noqa
                        assert_less, assert_rank)
from . import keras  # noqa: E402,F401
from . import saved_model  # noqa: E402,F401
from . import lite  # noqa: E402,F401
from . import summary  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from . import distribute  # noqa: E402,F401
from . import experimental  # noqa: E402,F401
from . import compat  # noqa: E402,F401
from . import test  # noqa: E402,F401
from . import ragged  # noqa: E402,F401
from .ragged import RaggedTensor, RaggedTensorSpec, map_fn  # noqa
from .ragged.map_fn import vectorized_map  # noqa: E402,F401
from . import sparse  # noqa: E402,F401
from .sparse import SparseTensor, SparseTensorSpec  # noqa: E402,F401
from .extension_type import type_spec_from_value  # noqa: E402,F401
from .composite_tensor import TypeSpec  # noqa: E402,F401
from . import composite_tensor as _composite  # noqa: E402
_composite.set_dispatch_namespaces(
    [globals()["math"], nn, strings, __import__("sys").modules[__name__]])

__version__ = "0.1.0"
newaxis = None
