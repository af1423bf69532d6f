"""Convolution and pooling layers (NHWC): Conv2D, MaxPooling2D,
AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D."""
import tfmini as tf

from .. import activations
from .base import Layer
from .weight_args import add_weight_from, init_weight_args


def _pair(value, what):
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"The `{what}` argument must be a tuple of 2 "
                         f"integers. Received: {what}={value}")
    return value


def _padding(padding):
    p = str(padding).lower()
    if p not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be a string, either "
                         f"'valid' or 'same'. Received: padding={padding!r}")
    return p


def _data_format(data_format):
    fmt = data_format or "channels_last"
    if fmt != "channels_last":
        raise ValueError(f"tfmini's 2D layers support data_format="
                         f"'channels_last' (NHWC) only, got {fmt!r}")
    return fmt


def _out_len(n, k, s, padding, dilation=1):
    if n is None:
        return None
    k = (k - 1) * dilation + 1
    if padding == "same":
        return -(-n // s)
    return (n - k) // s + 1


def _positive(value, what):
    n = int(value)
    if n <= 0:
        raise ValueError(f"Invalid value for argument `{what}`. Expected a "
                         f"strictly positive value. Received {what}={value}.")
    return n


def _one_group(groups, kind):
    if groups != 1:
        raise ValueError(f"tfmini's {kind} supports groups=1 only")
    return 1


def _channels(shape, rank, layer, kind=None):
    """The defined channel count of an input of the given rank; `kind`
    names the layer in the error (default: its class)."""
    shape = tf.TensorShape(shape)
    if shape.rank != rank:
        raise ValueError(f"Input 0 of layer {layer.name!r} is incompatible "
                         f"with the layer: expected ndim={rank}, found "
                         f"ndim={shape.rank}. Full shape received: {shape}")
    if shape[-1] is None:
        kind = kind or type(layer).__name__
        raise ValueError(f"The channel dimension of the inputs to "
                         f"{kind} {layer.name!r} should be defined. "
                         f"Found None.")
    return int(shape[-1])


class _BaseConv(Layer):
    """Constructor arguments, weights, output shape and config shared by
    the convolution layers (here and in conv_more). A subclass lists its
    window arguments in `_config_keys`, in the order Keras writes them."""

    _config_keys = ()

    def _init_2d(self, kernel_size, strides, padding, data_format,
                 dilation_rate):
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")

    _init_weight_args = init_weight_args

    def _init_common(self, activation, use_bias, bias_initializer,
                     bias_regularizer, bias_constraint):
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self._init_weight_args("bias", bias_initializer, bias_regularizer,
                               bias_constraint)

    def _weight(self, name, shape, prefix):
        return add_weight_from(self, prefix, name, shape)

    def _add_bias(self, n):
        self.bias = None
        if self.use_bias:
            self.bias = self._weight("bias", (n,), "bias")

    def _finish(self, y):
        if self.use_bias:
            y = tf.nn.bias_add(y, self.bias)
        return self.activation(y)

    def _out_hw(self, h, w):
        return (_out_len(h, self.kernel_size[0], self.strides[0],
                         self.padding, self.dilation_rate[0]),
                _out_len(w, self.kernel_size[1], self.strides[1],
                         self.padding, self.dilation_rate[1]))

    def _out_channels(self, c):
        return self.filters

    def compute_output_shape(self, input_shape):
        n, h, w, c = tuple(input_shape)
        return (n,) + self._out_hw(h, w) + (self._out_channels(c),)

    def get_config(self):
        config = super().get_config()
        config.update({k: getattr(self, k) for k in self._config_keys})
        config.update(activation=activations.serialize(self.activation),
                      use_bias=self.use_bias)
        return config


class Conv2D(_BaseConv):
    """2D convolution over NHWC inputs with a (kh, kw, in, filters)
    kernel, through tf.nn.conv2d."""

    _config_keys = ("filters", "kernel_size", "strides", "padding",
                    "data_format", "dilation_rate")

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1), groups=1,
                 activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer,
                         **kwargs)
        self.filters = _positive(filters, "filters")
        self._init_2d(kernel_size, strides, padding, data_format,
                      dilation_rate)
        self.groups = _one_group(groups, "Conv2D")
        self._init_common(activation, use_bias, bias_initializer,
                          bias_regularizer, bias_constraint)
        self._init_weight_args("kernel", kernel_initializer,
                               kernel_regularizer, kernel_constraint)

    def build(self, input_shape):
        channels = _channels(input_shape, 4, self, "Conv2D")
        self.kernel = self._weight(
            "kernel", self.kernel_size + (channels, self.filters), "kernel")
        self._add_bias(self.filters)
        self.built = True

    def call(self, inputs):
        y = tf.nn.conv2d(inputs, self.kernel, strides=self.strides,
                         padding=self.padding.upper(),
                         dilations=self.dilation_rate)
        return self._finish(y)


class _Pooling2D(Layer):
    _op = None          # the tf.nn function's name

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid",
                 data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = (self.pool_size if strides is None
                        else _pair(strides, "strides"))
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        return getattr(tf.nn, self._op)(inputs, self.pool_size,
                                        self.strides, self.padding.upper())

    def compute_output_shape(self, input_shape):
        n, h, w, c = tuple(input_shape)
        return (n,
                _out_len(h, self.pool_size[0], self.strides[0],
                         self.padding),
                _out_len(w, self.pool_size[1], self.strides[1],
                         self.padding),
                c)

    def get_config(self):
        config = super().get_config()
        config.update(pool_size=self.pool_size, strides=self.strides,
                      padding=self.padding, data_format=self.data_format)
        return config


class MaxPooling2D(_Pooling2D):
    """Max over pool_size windows, moved by strides (default pool_size)."""
    _op = "max_pool2d"


class AveragePooling2D(_Pooling2D):
    """Mean over pool_size windows ('same' padding averages only the
    in-bounds values, like TF)."""
    _op = "avg_pool2d"


class _GlobalPooling2D(Layer):
    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)
        self.keepdims = bool(keepdims)


class GlobalAveragePooling2D(_GlobalPooling2D):
    def call(self, inputs):
        return tf.reduce_mean(inputs, axis=[1, 2], keepdims=self.keepdims)


class GlobalMaxPooling2D(_GlobalPooling2D):
    def call(self, inputs):
        return tf.reduce_max(inputs, axis=[1, 2], keepdims=self.keepdims)


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
