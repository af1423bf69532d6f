"""More convolution and pooling layers (channels_last): Conv1D,
Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, 1D pooling and 1D
global pooling. All are compositions of the core's Conv2D,
Conv2DBackpropInput, DepthwiseConv2dNative and pooling ops, so gradients
and tracing come from those ops."""
import tfmini as tf

from .base import Layer
from .conv import (_BaseConv, _channels, _data_format, _one_group, _out_len,
                   _pair, _padding, _positive)


def _single(value, what):
    if isinstance(value, int):
        return value
    value = tuple(int(v) for v in value)
    if len(value) != 1:
        raise ValueError(f"The `{what}` argument must be an integer or a "
                         f"tuple of 1 integer. Received: {what}={value}")
    return value[0]


class Conv1D(_BaseConv):
    """1D convolution over (batch, steps, channels) with a (k, in,
    filters) kernel: Conv2D over a unit height axis. padding='causal'
    left-pads (k - 1) * dilation_rate steps, so output t sees inputs
    <= t."""

    _config_keys = ("filters", "kernel_size", "strides", "padding",
                    "data_format", "dilation_rate", "groups")

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, groups=1,
                 activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer,
                         **kwargs)
        self.filters = _positive(filters, "filters")
        self.kernel_size = (_single(kernel_size, "kernel_size"),)
        self.strides = (_single(strides, "strides"),)
        p = str(padding).lower()
        self.padding = "causal" if p == "causal" else _padding(p)
        self.data_format = _data_format(data_format)
        self.dilation_rate = (_single(dilation_rate, "dilation_rate"),)
        self.groups = _one_group(groups, "Conv1D")
        self._init_weight_args("kernel", kernel_initializer,
                               kernel_regularizer, kernel_constraint)
        self._init_common(activation, use_bias, bias_initializer,
                          bias_regularizer, bias_constraint)

    def build(self, input_shape):
        c = _channels(input_shape, 3, self)
        self.kernel = self._weight(
            "kernel", self.kernel_size + (c, self.filters), "kernel")
        self._add_bias(self.filters)
        self.built = True

    def call(self, inputs):
        x = inputs
        padding = self.padding
        if padding == "causal":
            left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
            x = tf.pad(x, [[0, 0], [left, 0], [0, 0]])
            padding = "valid"
        y = tf.nn.conv2d(tf.expand_dims(x, 1),
                         tf.expand_dims(self.kernel, 0),
                         strides=(1, self.strides[0]),
                         padding=padding.upper(),
                         dilations=(1, self.dilation_rate[0]))
        return self._finish(tf.squeeze(y, 1))

    def compute_output_shape(self, input_shape):
        n, steps, _ = tuple(input_shape)
        pad = "same" if self.padding == "causal" else self.padding
        if self.padding == "causal" and steps is not None:
            steps = _out_len(steps, 1, self.strides[0], "valid")
        else:
            steps = _out_len(steps, self.kernel_size[0], self.strides[0],
                             pad, self.dilation_rate[0])
        return (n, steps, self.filters)



def _deconv_len(n, k, s, padding, output_padding, dilation):
    """Keras' deconv_output_length."""
    if n is None:
        return None
    k = k + (k - 1) * (dilation - 1)
    if output_padding is None:
        return n * s + max(k - s, 0) if padding == "valid" else n * s
    pad = k // 2 if padding == "same" else 0
    return (n - 1) * s + k - 2 * pad + output_padding


class Conv2DTranspose(_BaseConv):
    """The transpose of Conv2D (TF computes it as Conv2D's input
    gradient, Conv2DBackpropInput, and so does this layer). The kernel
    is (kh, kw, filters, in_channels), as in Keras."""

    _config_keys = ("filters", "kernel_size", "strides", "padding",
                    "output_padding", "data_format", "dilation_rate")

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1),
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
        self.output_padding = (None if output_padding is None
                               else _pair(output_padding, "output_padding"))
        if self.output_padding is not None:
            for p, s in zip(self.output_padding, self.strides):
                if p >= s:
                    raise ValueError(f"Strides {self.strides} must be "
                                     f"greater than output padding "
                                     f"{self.output_padding}")
        self._init_weight_args("kernel", kernel_initializer,
                               kernel_regularizer, kernel_constraint)
        self._init_common(activation, use_bias, bias_initializer,
                          bias_regularizer, bias_constraint)

    def build(self, input_shape):
        c = _channels(input_shape, 4, self)
        self.kernel = self._weight(
            "kernel", self.kernel_size + (self.filters, c), "kernel")
        self._add_bias(self.filters)
        self.built = True

    def _out_hw(self, h, w):
        op = self.output_padding or (None, None)
        return (_deconv_len(h, self.kernel_size[0], self.strides[0],
                            self.padding, op[0], self.dilation_rate[0]),
                _deconv_len(w, self.kernel_size[1], self.strides[1],
                            self.padding, op[1], self.dilation_rate[1]))

    def call(self, inputs):
        _, h, w, _ = inputs._shape_tuple
        if h is None or w is None:
            raise ValueError(f"Conv2DTranspose {self.name!r} needs known "
                             f"height and width, got shape "
                             f"{inputs._shape_tuple}")
        oh, ow = self._out_hw(h, w)
        y = tf.nn.conv2d_transpose(
            inputs, self.kernel, [-1, oh, ow, self.filters],
            strides=self.strides, padding=self.padding.upper(),
            dilations=self.dilation_rate)
        return self._finish(y)


def _no_strided_dilation(strides, dilation_rate):
    if max(strides) > 1 and max(dilation_rate) > 1:
        raise ValueError(f"`strides > 1` not supported in conjunction with "
                         f"`dilation_rate > 1`. Received: strides={strides} "
                         f"and dilation_rate={dilation_rate}")


def _depthwise(x, kernel, strides, padding, dilations):
    """The core's DepthwiseConv2dNative (oneDNN's grouped convolution)."""
    return tf.nn.depthwise_conv2d(x, kernel, (1,) + tuple(strides) + (1,),
                                  padding.upper(), dilations=dilations)


class DepthwiseConv2D(_BaseConv):
    """Each input channel convolved with its own depth_multiplier
    filters; kernel (kh, kw, in, depth_multiplier), output channel
    c * depth_multiplier + m (DepthwiseConv2dNative)."""

    _config_keys = ("kernel_size", "strides", "padding", "depth_multiplier",
                    "data_format", "dilation_rate")

    def __init__(self, kernel_size, strides=(1, 1), padding="valid",
                 depth_multiplier=1, data_format=None, dilation_rate=(1, 1),
                 activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer,
                         **kwargs)
        self._init_2d(kernel_size, strides, padding, data_format,
                      dilation_rate)
        self.depth_multiplier = _positive(depth_multiplier,
                                          "depth_multiplier")
        _no_strided_dilation(self.strides, self.dilation_rate)
        self._init_weight_args("depthwise", depthwise_initializer,
                               depthwise_regularizer, depthwise_constraint)
        self._init_common(activation, use_bias, bias_initializer,
                          bias_regularizer, bias_constraint)

    def build(self, input_shape):
        c = _channels(input_shape, 4, self)
        self.kernel = self._weight(
            "kernel", self.kernel_size + (c, self.depth_multiplier),
            "depthwise")
        self._add_bias(c * self.depth_multiplier)
        self.built = True

    def call(self, inputs):
        return self._finish(_depthwise(inputs, self.kernel, self.strides,
                                       self.padding, self.dilation_rate))

    def _out_channels(self, c):
        return None if c is None else c * self.depth_multiplier


class SeparableConv2D(_BaseConv):
    """A depthwise conv (depthwise_kernel (kh, kw, in, depth_multiplier),
    as DepthwiseConv2D computes it) then a 1x1 conv (pointwise_kernel
    (1, 1, in * depth_multiplier, filters)), then bias and activation."""

    _config_keys = ("filters", "kernel_size", "strides", "padding",
                    "data_format", "dilation_rate", "depth_multiplier")

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1), depth_multiplier=1,
                 activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer,
                         **kwargs)
        self.filters = _positive(filters, "filters")
        self._init_2d(kernel_size, strides, padding, data_format,
                      dilation_rate)
        _no_strided_dilation(self.strides, self.dilation_rate)
        self.depth_multiplier = int(depth_multiplier)
        self._init_weight_args("depthwise", depthwise_initializer,
                               depthwise_regularizer, depthwise_constraint)
        self._init_weight_args("pointwise", pointwise_initializer,
                               pointwise_regularizer, pointwise_constraint)
        self._init_common(activation, use_bias, bias_initializer,
                          bias_regularizer, bias_constraint)

    def build(self, input_shape):
        c = _channels(input_shape, 4, self)
        m = self.depth_multiplier
        self.depthwise_kernel = self._weight(
            "depthwise_kernel", self.kernel_size + (c, m), "depthwise")
        self.pointwise_kernel = self._weight(
            "pointwise_kernel", (1, 1, c * m, self.filters), "pointwise")
        self._add_bias(self.filters)
        self.built = True

    def call(self, inputs):
        y = tf.nn.separable_conv2d(
            inputs, self.depthwise_kernel, self.pointwise_kernel,
            (1,) + tuple(self.strides) + (1,), self.padding.upper(),
            dilations=self.dilation_rate)
        return self._finish(y)


class _Pooling1D(Layer):
    _op = None

    def __init__(self, pool_size=2, strides=None, padding="valid",
                 data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = (_single(pool_size, "pool_size"),)
        self.strides = (self.pool_size if strides is None
                        else (_single(strides, "strides"),))
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        y = getattr(tf.nn, self._op)(tf.expand_dims(inputs, 1),
                                     (1, self.pool_size[0]),
                                     (1, self.strides[0]),
                                     self.padding.upper())
        return tf.squeeze(y, 1)

    def compute_output_shape(self, input_shape):
        n, steps, c = tuple(input_shape)
        return (n, _out_len(steps, self.pool_size[0], self.strides[0],
                            self.padding), c)

    def get_config(self):
        config = super().get_config()
        config.update(pool_size=self.pool_size, strides=self.strides,
                      padding=self.padding, data_format=self.data_format)
        return config


class MaxPooling1D(_Pooling1D):
    """Max over pool_size steps, moved by strides (default pool_size)."""
    _op = "max_pool2d"


class AveragePooling1D(_Pooling1D):
    """Mean over pool_size steps ('same' averages in-bounds values)."""
    _op = "avg_pool2d"


class _GlobalPooling1D(Layer):
    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)
        self.keepdims = bool(keepdims)
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        n, _, c = tuple(input_shape)
        return (n, 1, c) if self.keepdims else (n, c)

    def get_config(self):
        config = super().get_config()
        config.update(data_format=self.data_format, keepdims=self.keepdims)
        return config


class GlobalAveragePooling1D(_GlobalPooling1D):
    """The mean over steps; with a (batch, steps) mask, over the unmasked
    steps only (Keras)."""

    def call(self, inputs, mask=None):
        if mask is None:
            return tf.reduce_mean(inputs, axis=1, keepdims=self.keepdims)
        w = tf.expand_dims(tf.cast(mask, inputs.dtype), -1)
        total = tf.reduce_sum(inputs * w, axis=1, keepdims=self.keepdims)
        return total / tf.reduce_sum(w, axis=1, keepdims=self.keepdims)


class GlobalMaxPooling1D(_GlobalPooling1D):
    """The max over steps (masked steps are ignored, as in Keras)."""

    def call(self, inputs, mask=None):
        if mask is not None:
            low = tf.fill(tf.shape(inputs),
                          tf.cast(float("-inf"), inputs.dtype))
            inputs = tf.where(tf.expand_dims(mask, -1), inputs, low)
        return tf.reduce_max(inputs, axis=1, keepdims=self.keepdims)


MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
Convolution1D = Conv1D
Convolution2DTranspose = Conv2DTranspose
SeparableConvolution2D = SeparableConv2D
