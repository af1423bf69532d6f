"""keras.activations: functions of a tensor, looked up by name."""
import tfmini as tf


def linear(x):
    return x


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return tf.nn.relu(x)
    if threshold != 0.0:
        neg = (x - threshold) * negative_slope
        x = tf.where(x >= threshold, x, neg)
    elif negative_slope != 0.0:
        x = tf.nn.leaky_relu(x, alpha=negative_slope)
    else:
        x = tf.nn.relu(x)
    if max_value is not None:
        x = tf.minimum(x, tf.cast(max_value, x.dtype))
    return x


def sigmoid(x):
    return tf.sigmoid(x)


def tanh(x):
    return tf.tanh(x)


def softmax(x, axis=-1):
    return tf.nn.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    return tf.nn.log_softmax(x, axis=axis)


def elu(x, alpha=1.0):
    y = tf.nn.elu(x)
    return y if alpha == 1.0 else tf.where(x > 0, y, y * alpha)


def selu(x):
    return tf.nn.selu(x)


def gelu(x, approximate=False):
    return tf.nn.gelu(x, approximate=approximate)


def silu(x):
    return tf.nn.silu(x)


swish = silu


def softplus(x):
    return tf.nn.softplus(x)


def softsign(x):
    return tf.nn.softsign(x)


def relu6(x):
    return tf.nn.relu6(x)


def exponential(x):
    return tf.exp(x)


def hard_sigmoid(x):
    return tf.clip_by_value(x * (1.0 / 6.0) + 0.5, 0.0, 1.0)


_BY_NAME = {f.__name__: f for f in (
    linear, relu, sigmoid, tanh, softmax, log_softmax, elu, selu, gelu,
    silu, softplus, softsign, relu6, exponential, hard_sigmoid)}
_BY_NAME["swish"] = silu


def get(identifier):
    """An activation function from a name, a function, or None (linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]
        except KeyError:
            raise ValueError(f"Unknown activation function: {identifier!r}. "
                             f"Known: {sorted(_BY_NAME)}") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: "
                    f"{identifier!r}")


def serialize(activation):
    name = getattr(activation, "__name__", None)
    return name if _BY_NAME.get(name) is activation else activation
