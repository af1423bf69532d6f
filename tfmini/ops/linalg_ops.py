"""Linear algebra: tf.matmul, tf.tensordot, tf.einsum, tf.linalg.matvec
(csrc/ops/ops_linalg.def). See ops/__init__.py for __all__/_NAMESPACES."""
from .. import _C
from .._opids import ID
from .._tensor import Tensor
from .constant_op import convert_to_tensor

__all__ = ["matmul"]
_NAMESPACES = {"linalg": ["matmul"]}

_MATMUL = ID["BatchMatMulV2"]


def _pair(a, b):
    """Both operands as tensors; b takes a's dtype when it is a Python
    value (TF converts b with a's dtype as the hint)."""
    if type(a) is not Tensor:
        a = convert_to_tensor(a)
    if type(b) is not Tensor:
        b = convert_to_tensor(b, dtype_hint=a.dtype)
    return a, b


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
