"""Shape layers: UpSampling2D, ZeroPadding2D, Cropping2D, RepeatVector,
Permute, and the TimeDistributed wrapper (channels_last)."""
import numpy as np

import tfmini as tf

from .base import Layer
from .conv import _data_format, _pair


def _two_pairs(value, what):
    """An int, a pair (symmetric per axis) or ((top, bottom), (left,
    right)), as Keras' ZeroPadding2D and Cropping2D take."""
    if isinstance(value, int):
        return ((value, value), (value, value))
    value = tuple(value)
    if len(value) != 2:
        raise ValueError(f"`{what}` should have two elements. Received: "
                         f"{what}={value}.")
    out = []
    for v in value:
        if isinstance(v, int):
            out.append((v, v))
        else:
            v = tuple(int(i) for i in v)
            if len(v) != 2:
                raise ValueError(f"`{what}` should be an int, a tuple of 2 "
                                 f"ints or a tuple of 2 tuples of 2 ints. "
                                 f"Received: {what}={value}.")
            out.append(v)
    if any(i < 0 for v in out for i in v):
        raise ValueError(f"`{what}` must be non-negative, got {value}")
    return tuple(out)


def _bilinear_taps(n, scale):
    """TF2's resize_bilinear with half-pixel centers (what Keras 3 calls
    for 'bilinear'), along one axis: output o reads input
    (o + 0.5) / scale - 0.5, between its floor and ceil clamped to the
    edges."""
    src = (np.arange(n * scale) + 0.5) / scale - 0.5
    low = np.floor(src)
    frac = (src - low).astype(np.float32)
    i0 = np.clip(low, 0, n - 1).astype(np.int32)
    i1 = np.clip(np.ceil(src), 0, n - 1).astype(np.int32)
    return i0, i1, frac


def _lerp_axis(x, axis, n, scale):
    i0, i1, frac = _bilinear_taps(n, scale)
    shape = [1, 1, 1, 1]
    shape[axis] = len(frac)
    f = tf.constant(frac.reshape(shape), x.dtype)
    a = tf.gather(x, tf.constant(i0), axis=axis)
    b = tf.gather(x, tf.constant(i1), axis=axis)
    return a + (b - a) * f


class UpSampling2D(Layer):
    """Repeat rows size[0] times and columns size[1] times ('nearest'),
    or interpolate them ('bilinear': TF2's half-pixel-center bilinear
    resize, as separable gathers and lerps)."""

    def __init__(self, size=(2, 2), data_format=None,
                 interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.size = _pair(size, "size")
        self.data_format = _data_format(data_format)
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(
                f"tfmini's UpSampling2D supports interpolation 'nearest' "
                f"and 'bilinear', got {interpolation!r}")
        self.interpolation = interpolation

    def call(self, inputs):
        _, h, w, c = inputs._shape_tuple
        sh, sw = self.size
        if h is None or w is None or c is None:
            raise ValueError(f"UpSampling2D {self.name!r} needs known "
                             f"height, width and channels, got "
                             f"{inputs._shape_tuple}")
        if self.interpolation == "bilinear":
            x = inputs if inputs.dtype.is_floating else \
                tf.cast(inputs, self.compute_dtype)
            return _lerp_axis(_lerp_axis(x, 1, h, sh), 2, w, sw)
        x = tf.reshape(inputs, (-1, h, 1, w, 1, c))
        x = tf.tile(x, (1, 1, sh, 1, sw, 1))
        return tf.reshape(x, (-1, h * sh, w * sw, c))

    def compute_output_shape(self, input_shape):
        n, h, w, c = tuple(input_shape)
        return (n, None if h is None else h * self.size[0],
                None if w is None else w * self.size[1], c)

    def get_config(self):
        config = super().get_config()
        config.update(size=self.size, data_format=self.data_format,
                      interpolation=self.interpolation)
        return config


class ZeroPadding2D(Layer):
    """Zeros around the height and width axes."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = _two_pairs(padding, "padding")
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        (t, b), (l, r) = self.padding
        return tf.pad(inputs, [[0, 0], [t, b], [l, r], [0, 0]])

    def compute_output_shape(self, input_shape):
        n, h, w, c = tuple(input_shape)
        (t, b), (l, r) = self.padding
        return (n, None if h is None else h + t + b,
                None if w is None else w + l + r, c)

    def get_config(self):
        config = super().get_config()
        config.update(padding=self.padding, data_format=self.data_format)
        return config


class Cropping2D(Layer):
    """Drop rows and columns at the edges of height and width."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.cropping = _two_pairs(cropping, "cropping")
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        _, h, w, _ = inputs._shape_tuple
        (t, b), (l, r) = self.cropping
        if (h is not None and t + b >= h) or (w is not None and l + r >= w):
            raise ValueError(f"Cropping2D {self.name!r}: cropping "
                             f"{self.cropping} leaves nothing of inputs "
                             f"of shape {inputs._shape_tuple}")
        return inputs[:, t:h - b if h is not None else (-b or None),
                      l:w - r if w is not None else (-r or None), :]

    def compute_output_shape(self, input_shape):
        n, h, w, c = tuple(input_shape)
        (t, b), (l, r) = self.cropping
        return (n, None if h is None else h - t - b,
                None if w is None else w - l - r, c)

    def get_config(self):
        config = super().get_config()
        config.update(cropping=self.cropping, data_format=self.data_format)
        return config


class RepeatVector(Layer):
    """(batch, features) -> (batch, n, features)."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(n, int):
            raise TypeError(f"Expected an integer value for `n`, got "
                            f"{type(n)}.")
        self.n = n

    def call(self, inputs):
        if len(inputs._shape_tuple) != 2:
            raise ValueError(f"RepeatVector {self.name!r} expects inputs of "
                             f"rank 2, got shape {inputs._shape_tuple}")
        return tf.tile(tf.expand_dims(inputs, 1), (1, self.n, 1))

    def compute_output_shape(self, input_shape):
        n, f = tuple(input_shape)
        return (n, self.n, f)

    def get_config(self):
        config = super().get_config()
        config["n"] = self.n
        return config


class Permute(Layer):
    """Permute the non-batch axes: dims is 1-based, e.g. (2, 1)."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation argument `dims` for "
                             f"Permute Layer. The set of indices in `dims` "
                             f"must be consecutive and start from 1. "
                             f"Received dims={dims}")

    def call(self, inputs):
        return tf.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        return (shape[0],) + tuple(shape[d] for d in self.dims)

    def get_config(self):
        config = super().get_config()
        config["dims"] = self.dims
        return config


class TimeDistributed(Layer):
    """Apply `layer` to every step of (batch, steps, ...) inputs: the
    steps are folded into the batch, so the wrapped layer's weights are
    shared across steps (and keep their own names). A mask passes
    through unchanged."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `TimeDistributed` layer "
                             f"with a `keras.layers.Layer` instance. "
                             f"Received: {layer}")
        self.layer = layer
        self.supports_masking = True

    def build(self, input_shape):
        shape = tuple(tf.TensorShape(input_shape))
        if len(shape) < 3:
            raise ValueError(f"`TimeDistributed` Layer should be passed an "
                             f"`input_shape` with at least 3 dimensions, "
                             f"received: {shape}")
        if not self.layer.built:
            self.layer.build((None,) + shape[2:])
            self.layer.built = True
        self.built = True

    def call(self, inputs, training=None, mask=None):
        shape = inputs._shape_tuple
        steps = shape[1]
        if steps is None or any(d is None for d in shape[2:]):
            raise ValueError(f"TimeDistributed {self.name!r} needs known "
                             f"steps and feature sizes, got {shape}")
        flat = tf.reshape(inputs, (-1,) + tuple(shape[2:]))
        kwargs = {}
        if training is not None:
            kwargs["training"] = training
        out = self.layer(flat, **kwargs)
        return tf.reshape(out, (-1, steps) + tuple(out._shape_tuple[1:]))

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        inner = self.layer.compute_output_shape((shape[0],) + shape[2:])
        return (shape[0], shape[1]) + tuple(inner)[1:]

    def get_config(self):
        config = super().get_config()
        config["layer"] = {"class_name": type(self.layer).__name__,
                           "config": self.layer.get_config()}
        return config

    @classmethod
    def from_config(cls, config):
        from .. import layers as layers_mod
        config = dict(config)
        inner = config.pop("layer")
        layer = getattr(layers_mod, inner["class_name"]).from_config(
            inner["config"])
        return cls(layer, **config)
