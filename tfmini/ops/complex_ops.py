"""Complex numbers: tf.complex, tf.math.real/imag/conj/angle, and tf.abs
over complex inputs (the ops of csrc/ops/ops_complex.def).

As in TF, real/imag/conj/angle also take real tensors: real(x) and
conj(x) are x itself, imag(x) and angle(x) zeros of x's dtype (angle:
pi where x < 0)."""
from .. import _C
from .. import dtypes as _dtypes
from .._opids import ID
from .._tensor import Tensor
from . import math_ops as _math

__all__ = ["complex", "abs"]

_NAMESPACES = {
    "math": ["real", "imag", "conj", "angle", "abs"],
}

_COMPLEX, _REAL, _IMAG = ID["Complex"], ID["Real"], ID["Imag"]
_CONJ, _CABS, _ANGLE = ID["Conj"], ID["ComplexAbs"], ID["Angle"]
_real_abs = _math.abs


def _tensor(x):
    if isinstance(x, Tensor):
        return x
    from .constant_op import convert_to_tensor
    return convert_to_tensor(x)


def complex(real, imag, name=None):  # noqa: A001  (TF's public name)
    """real + imag * 1j: float32 parts give complex64, float64 parts
    complex128; both parts must have the same dtype (TypeError)."""
    real, imag = _tensor(real), _tensor(imag)
    if (real.dtype != imag.dtype or
            real.dtype not in (_dtypes.float32, _dtypes.float64)):
        raise TypeError(f"The `real` and `imag` components have incorrect "
                        f"types: {real.dtype.name} {imag.dtype.name}. They "
                        f"must be consistent, and one of [tf.float32, "
                        f"tf.float64]")
    return _C.call(_COMPLEX, (real, imag))


def _numeric(x):
    """x as a tensor; TF's TypeError unless its dtype is a number."""
    x = _tensor(x)
    d = x.dtype
    if not (d.is_complex or d.is_floating or d.is_integer):
        raise TypeError("input must be a numeric tensor.")
    return x


def real(input, name=None):
    """The real part of a complex tensor (a real tensor is returned)."""
    input = _numeric(input)
    if input.dtype.is_complex:
        return _C.call(_REAL, (input,))
    return input


def imag(input, name=None):
    """The imaginary part of a complex tensor; zeros for a real one."""
    input = _numeric(input)
    if input.dtype.is_complex:
        return _C.call(_IMAG, (input,))
    from .array_ops import zeros_like
    return zeros_like(input)


def conj(x, name=None):
    """The complex conjugate; a real tensor is returned as it is. Strings
    and bools are a TypeError, as in TF."""
    x = _tensor(x)
    if x.dtype.is_complex:
        return _C.call(_CONJ, (x,))
    if x.dtype.is_floating or x.dtype.is_integer:
        return x
    raise TypeError(f"Expected numeric or variant tensor, got dtype "
                    f"{x.dtype!r}.")


def angle(input, name=None):
    """The argument of each complex element, in (-pi, pi]; for a real
    tensor pi where it is negative and 0 elsewhere."""
    input = _numeric(input)
    if input.dtype.is_complex:
        return _C.call(_ANGLE, (input,))
    from .array_ops import where
    import math
    pi = _math.cast(math.pi, input.dtype)
    zero = _math.cast(0, input.dtype)
    return where(input < zero, pi, zero)


def abs(x, name=None):  # noqa: A001  (TF's public name)
    """|x| elementwise; for complex x the modulus, of x's real dtype."""
    if not isinstance(x, Tensor):
        x = x._as_tensor() if hasattr(x, "_as_tensor") else _tensor(x)
    if x.dtype.is_complex:
        return _C.call(_CABS, (x,))
    return _real_abs(x)
