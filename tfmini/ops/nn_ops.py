"""tf.nn: softmax and cross entropies (C ops, csrc/ops/ops_nn.def) and
composites over other ops (bias_add, l2_normalize, moments, dropout),
which get gradients and tracing from the ops they call. See
ops/__init__.py for __all__/_NAMESPACES."""
import numbers

from .. import _C
from .. import dtypes as _dtypes
from .._opids import ID
from .._tensor import Tensor
from ..errors import InvalidArgumentError
from .constant_op import convert_to_tensor
from .linalg_ops import _as_tensor

__all__ = []
_NAMESPACES = {
    "nn": ["softmax", "log_softmax", "bias_add",
           "sparse_softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits",
           "sigmoid_cross_entropy_with_logits", "l2_normalize", "moments",
           "dropout"],
    "math": ["softmax", "log_softmax", "l2_normalize"],
    "linalg": ["l2_normalize"],
}

_SOFTMAX = ID["Softmax"]
_LOG_SOFTMAX = ID["LogSoftmax"]
_SPARSE_XENT = ID["SparseSoftmaxCrossEntropyWithLogits"]
_XENT = ID["SoftmaxCrossEntropyWithLogits"]
_MUL = ID["Mul"]
_GREATER_EQUAL = ID["GreaterEqual"]
_MAXIMUM = ID["Maximum"]
_LAST_AXIS = (-1,)


def _axis(axis):
    return -1 if axis is None else int(axis)


def softmax(logits, axis=None, name=None):
    """exp(logits) / sum(exp(logits), axis), computed stably."""
    if axis is None:
        return _C.call(_SOFTMAX, (logits,), None, _LAST_AXIS)
    return _C.call(_SOFTMAX, (logits,), None, (_axis(axis),))


def log_softmax(logits, axis=None, name=None):
    """logits - log(sum(exp(logits), axis)), computed stably."""
    if axis is None:
        return _C.call(_LOG_SOFTMAX, (logits,), None, _LAST_AXIS)
    return _C.call(_LOG_SOFTMAX, (logits,), None, (_axis(axis),))


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Cross entropy between integer class labels [...] and unscaled
    logits [..., num_classes]; one loss per label. A label outside
    [0, num_classes) is an InvalidArgumentError."""
    loss, _ = _C.call(_SPARSE_XENT, (logits, labels))
    return loss


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Cross entropy between distributions `labels` and softmax(logits)
    along axis; labels and logits have the same shape."""
    logits = _as_tensor(logits)
    labels = _as_tensor(labels, logits.dtype)
    loss, _ = _C.call(_XENT, (logits, labels), i=(_axis(axis),))
    return loss


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise cross entropy of independent binary labels z with
    sigmoid(x): max(x, 0) - x * z + log1p(exp(-|x|)), which neither
    overflows nor loses precision for large |x|."""
    from .math_ops import abs as abs_, exp, log1p, maximum, negative
    from .math_ops import add, multiply, subtract
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits needs both "
                         "labels and logits")
    logits = _as_tensor(logits)
    labels = _as_tensor(labels, logits.dtype)
    if labels.shape.rank is not None and logits.shape.rank is not None and \
            not labels.shape.is_compatible_with(logits.shape):
        raise ValueError(f"logits and labels must have the same shape "
                         f"({logits.shape} vs {labels.shape})")
    return add(subtract(maximum(logits, 0), multiply(logits, labels)),
               log1p(exp(negative(abs_(logits)))))


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, with bias (rank 1) added along the channel dim: the
    last one (data_format None or 'N...C'), or dim 1 ('NC...')."""
    value = _as_tensor(value)
    bias = _as_tensor(bias, value.dtype)
    channels_first = data_format is not None and data_format.startswith("NC")
    if data_format is not None and not channels_first and not (
            data_format.startswith("N") and data_format.endswith("C")):
        raise ValueError(f"data_format must be of the form `N...C` or "
                         f"`NC...`, got {data_format!r}")
    vshape, bshape = value.shape, bias.shape
    if vshape.rank < 2:
        raise InvalidArgumentError(f"BiasAdd: value must be at least rank 2"
                                   f", got shape {_fmt(vshape)}")
    if bshape.rank != 1:
        raise InvalidArgumentError(f"BiasAdd: bias must be 1-D, got shape "
                                   f"{_fmt(bshape)}")
    if value.dtype != bias.dtype:
        raise InvalidArgumentError(f"BiasAdd: value and bias must have the "
                                   f"same dtype, got {value.dtype.name} and "
                                   f"{bias.dtype.name}")
    c = vshape[1] if channels_first else vshape[-1]
    if c is not None and bshape[0] is not None and c != bshape[0]:
        raise InvalidArgumentError(
            f"BiasAdd: Must provide as many biases as the "
            f"{'channel' if channels_first else 'last'} dimension of the "
            f"input tensor: {_fmt(bshape)} vs. {_fmt(vshape)}")
    if channels_first and vshape.rank > 2:
        from .array_ops import reshape
        bias = reshape(bias, [-1] + [1] * (vshape.rank - 2))
    from .math_ops import add
    return add(value, bias)


def _fmt(shape):
    return "[" + ",".join("?" if d is None else str(d)
                          for d in shape.as_list()) + "]"


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x**2, axis), epsilon))."""
    from .math_ops import rsqrt
    from .reduce_ops import reduce_sum
    if axis is None:
        axis = dim
    x = _as_tensor(x)
    square_sum = reduce_sum(_C.binary(_MUL, x, x), axis, keepdims=True)
    inv_norm = rsqrt(_C.binary(_MAXIMUM, square_sum, epsilon))
    return _C.binary(_MUL, x, inv_norm)


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) of x over axes. The variance is taken around a
    stop-gradient mean, as in TF (its gradient is the same: the mean's
    contribution vanishes)."""
    from ..backprop import stop_gradient
    from .math_ops import cast, squared_difference
    from .reduce_ops import reduce_mean
    x = _as_tensor(x)
    half = x.dtype in (_dtypes.float16, _dtypes.bfloat16)
    y = cast(x, _dtypes.float32) if half else x
    axes = [int(a) for a in axes]
    mean = reduce_mean(y, axes, keepdims=True)
    variance = reduce_mean(squared_difference(y, stop_gradient(mean)), axes,
                           keepdims=True)
    if not keepdims:
        from .array_ops import squeeze
        mean = squeeze(mean, axes)
        variance = squeeze(variance, axes)
    if half:
        return cast(mean, x.dtype), cast(variance, x.dtype)
    return mean, variance


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zeroes each element with probability `rate` and scales the kept
    ones by 1 / (1 - rate), so the expected sum is unchanged."""
    from . import random_ops
    from .math_ops import cast
    is_number = isinstance(rate, numbers.Real)
    if is_number and not 0 <= rate < 1:
        raise ValueError(f"`rate` must be a scalar tensor or a float in the "
                         f"range [0, 1). Received: rate={rate}")
    x = _as_tensor(x)
    if not x.dtype.is_floating:
        raise ValueError(f"x has to be a floating point tensor since it's "
                         f"going to be scaled. Received: x={x!r} with dtype "
                         f"{x.dtype.name}")
    if is_number and rate == 0:
        return x
    if not is_number:
        rate = _as_tensor(rate, x.dtype)
        if rate.shape.rank != 0:
            raise ValueError(f"`rate` must be a scalar tensor, got shape "
                             f"{rate.shape}")
        from .math_ops import subtract
        keep = subtract(1.0, rate)
        if rate.dtype != x.dtype:
            raise ValueError(f"`rate` has dtype {rate.dtype.name}, x has "
                             f"{x.dtype.name}")
        from .math_ops import divide
        scale = divide(1.0, keep)
    else:
        scale = 1.0 / (1.0 - rate)
    shape = _noise_shape(x, noise_shape)
    u = random_ops.uniform(shape, dtype=x.dtype, seed=seed)
    keep_mask = cast(_C.binary(_GREATER_EQUAL, u, rate), x.dtype)
    return _C.binary(_MUL, _C.binary(_MUL, x, scale), keep_mask)


def _noise_shape(x, noise_shape):
    dims = x.shape.as_list()
    if noise_shape is None:
        if any(d is None for d in dims):
            raise ValueError("tfmini's dropout needs x's shape known when "
                             "traced, or an explicit noise_shape")
        return dims
    if isinstance(noise_shape, Tensor):
        noise_shape = noise_shape.numpy().tolist()
    noise_shape = list(noise_shape)
    if len(noise_shape) != len(dims):
        return [int(d) for d in noise_shape]   # the op will complain
    return [int(d if n is None else n) for n, d in zip(noise_shape, dims)]
