"""Activations: tf.nn.relu, gelu, ... (rows in csrc/ops/ops_elementwise.def).

tf.nn.sigmoid and tf.nn.tanh are in math_ops (also tf.sigmoid, tf.tanh)."""
from .. import _C
from .._opids import ID

__all__ = []
_NAMESPACES = {
    "nn": ["relu", "relu6", "elu", "selu", "gelu", "softplus", "softsign",
           "leaky_relu", "silu", "swish"],
    "math": ["softplus", "softsign"],
}

_RELU, _RELU6, _ELU, _SELU = ID["Relu"], ID["Relu6"], ID["Elu"], ID["Selu"]
_SOFTPLUS, _SOFTSIGN = ID["Softplus"], ID["Softsign"]
_LEAKY, _GELU = ID["LeakyRelu"], ID["Gelu"]
_RELU_GRAD = ID["ReluGrad"]


def relu(features, name=None):
    """max(features, 0) elementwise."""
    return _C.unary(_RELU, features)


def relu6(features, name=None):
    """min(max(features, 0), 6) elementwise."""
    return _C.unary(_RELU6, features)


def _relu_grad(gradients, features):
    """ReluGrad (TF's raw op, no public API): gradients where features > 0,
    else 0; equal shapes and dtypes. Relu's gradient rule emits it."""
    return _C.binary(_RELU_GRAD, gradients, features)


def elu(features, name=None):
    """features where > 0, else exp(features) - 1."""
    return _C.unary(_ELU, features)


def selu(features, name=None):
    """scale * (features where > 0, else alpha * (exp(features) - 1)),
    with scale = 1.0507... and alpha = 1.6732... (Klambauer et al.)."""
    return _C.unary(_SELU, features)


def softplus(features, name=None):
    """log(exp(features) + 1), computed without overflow."""
    return _C.unary(_SOFTPLUS, features)


def softsign(features, name=None):
    """features / (abs(features) + 1)."""
    return _C.unary(_SOFTSIGN, features)


def leaky_relu(features, alpha=0.2, name=None):
    """features where > 0, else alpha * features."""
    return _C.call(_LEAKY, (features,), f=(float(alpha),))


def gelu(features, approximate=False, name=None):
    """x * Phi(x), Phi the standard normal CDF: exactly with erf, or with
    the tanh approximation when approximate=True."""
    return _C.call(_GELU, (features,), i=(1 if approximate else 0,))


def silu(features, beta=1.0, name=None):
    """features * sigmoid(beta * features) (also tf.nn.swish)."""
    from .math_ops import multiply, sigmoid
    if beta == 1.0:
        return multiply(features, sigmoid(features))
    return multiply(features, sigmoid(multiply(beta, features)))


swish = silu
