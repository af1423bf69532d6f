"""Convolution and pooling layers (NHWC): Conv2D, MaxPooling2D,
AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D."""
import tfmini as tf

from .. import activations, constraints, initializers, regularizers
from .base import Layer


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


class Conv2D(Layer):
    """2D convolution over NHWC inputs with a (kh, kw, in, filters)
    kernel, through tf.nn.conv2d."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1), groups=1,
                 activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer,
                         **kwargs)
        self.filters = int(filters)
        if self.filters <= 0:
            raise ValueError(f"Invalid value for argument `filters`. "
                             f"Expected a strictly positive value. "
                             f"Received filters={filters}.")
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")
        if groups != 1:
            raise ValueError("tfmini's Conv2D supports groups=1 only")
        self.groups = 1
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def build(self, input_shape):
        shape = tf.TensorShape(input_shape)
        if shape.rank != 4:
            raise ValueError(f"Input 0 of layer {self.name!r} is "
                             f"incompatible with the layer: expected "
                             f"ndim=4, found ndim={shape.rank}. Full shape "
                             f"received: {shape}")
        channels = shape[-1]
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs to "
                             f"Conv2D {self.name!r} should be defined. "
                             f"Found None.")
        self.kernel = self.add_weight(
            "kernel", self.kernel_size + (int(channels), self.filters),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", (self.filters,), initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        y = tf.nn.conv2d(inputs, self.kernel, strides=self.strides,
                         padding=self.padding.upper(),
                         dilations=self.dilation_rate)
        if self.use_bias:
            y = tf.nn.bias_add(y, self.bias)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        n, h, w, _ = tuple(input_shape)
        return (n,
                _out_len(h, self.kernel_size[0], self.strides[0],
                         self.padding, self.dilation_rate[0]),
                _out_len(w, self.kernel_size[1], self.strides[1],
                         self.padding, self.dilation_rate[1]),
                self.filters)

    def get_config(self):
        config = super().get_config()
        config.update(filters=self.filters, kernel_size=self.kernel_size,
                      strides=self.strides, padding=self.padding,
                      data_format=self.data_format,
                      dilation_rate=self.dilation_rate,
                      activation=activations.serialize(self.activation),
                      use_bias=self.use_bias)
        return config


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
