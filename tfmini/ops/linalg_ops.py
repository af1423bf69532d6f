"""Linear algebra: tf.matmul, tf.tensordot, tf.einsum, tf.linalg.matvec
(csrc/ops/ops_linalg.def). See ops/__init__.py for __all__/_NAMESPACES."""
import numpy as np

from .. import _C
from .._opids import ID
from .._tensor import Tensor
from .constant_op import convert_to_tensor

__all__ = ["matmul"]
_NAMESPACES = {"linalg": ["matmul"]}

_MATMUL = ID["BatchMatMulV2"]


def _as_tensor(x, hint=None):
    """x as a tensor; Python values take dtype `hint` where they fit (as
    TF's dtype_hint), NumPy arrays and tensors keep their own dtype."""
    if type(x) is Tensor:
        return x
    if hint is None or isinstance(x, (np.ndarray, np.generic)):
        return convert_to_tensor(x)
    return convert_to_tensor(x, dtype_hint=hint)


def _pair(a, b):
    """Both operands as tensors; b takes a's dtype when it is a Python
    value (TF converts b with a's dtype as the hint)."""
    a = _as_tensor(a)
    return a, _as_tensor(b, a.dtype)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False,
           adjoint_b=False, a_is_sparse=False, b_is_sparse=False,
           output_type=None, grad_a=False, grad_b=False, name=None):
    """Matrix product of the two innermost dims, batched over the rest
    (which broadcast). a and b have rank >= 2 and the same dtype."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    a, b = _pair(a, b)
    out = _C.call(_MATMUL, (a, b), i=(1 if transpose_a or adjoint_a else 0,
                                      1 if transpose_b or adjoint_b else 0))
    if output_type is not None:
        from .math_ops import cast
        from .. import dtypes
        if dtypes.as_dtype(output_type) != out.dtype:
            out = cast(out, output_type)
    return out
