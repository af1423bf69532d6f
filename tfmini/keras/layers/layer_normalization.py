"""Per-example normalizations (Keras 3's math): LayerNormalization,
GroupNormalization, UnitNormalization. Unlike BatchNormalization they
keep no statistics: training and inference compute the same thing."""
import tfmini as tf
from tfmini import _C
from tfmini._opids import ID


from .. import initializers
from .base import Layer
from .weight_args import add_weight_from, init_weight_args


_LAYER_NORM = ID["_LayerNorm"]


def _axes(axis, rank, name):
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    out = []
    for a in axes:
        if not -rank <= int(a) < rank:
            raise ValueError(f"{name}: axis {a} is out of bounds for an "
                             f"input of rank {rank}")
        out.append(int(a) % rank)
    return sorted(out)


class _Affine(Layer):
    """gamma / beta arguments shared by the normalizations."""

    def __init__(self, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.center, self.scale = bool(center), bool(scale)
        init_weight_args(self, "beta", beta_initializer, beta_regularizer,
                         beta_constraint)
        init_weight_args(self, "gamma", gamma_initializer,
                         gamma_regularizer, gamma_constraint)
        self.supports_masking = True

    def _gamma(self, shape):
        return add_weight_from(self, "gamma", "gamma", shape)

    def _beta(self, shape):
        return add_weight_from(self, "beta", "beta", shape)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            center=self.center, scale=self.scale,
            beta_initializer=initializers.serialize(self.beta_initializer),
            gamma_initializer=initializers.serialize(self.gamma_initializer),
            beta_regularizer=self.beta_regularizer,
            gamma_regularizer=self.gamma_regularizer,
            beta_constraint=self.beta_constraint,
            gamma_constraint=self.gamma_constraint)
        return config


class LayerNormalization(_Affine):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta, the moments over
    `axis` of each example; rms_scaling: x / sqrt(var + epsilon) * gamma
    (Keras 3 uses the variance there, not the mean square)."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 rms_scaling=False, **kwargs):
        super().__init__(center=center, scale=scale, **kwargs)
        if not isinstance(axis, (int, list, tuple)):
            raise TypeError(f"Expected an int or a list/tuple of ints for "
                            f"the argument 'axis', but received: {axis!r}")
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.epsilon = float(epsilon)
        self.rms_scaling = bool(rms_scaling)

    def build(self, input_shape):
        shape = tuple(tf.TensorShape(input_shape))
        self._axes = _axes(self.axis, len(shape), "LayerNormalization")
        pshape = tuple(shape[a] for a in self._axes)
        if any(d is None for d in pshape):
            raise ValueError(f"LayerNormalization: the normalized axes "
                             f"{self._axes} of input shape {shape} must be "
                             f"known")
        self._bshape = None if self._axes == [len(shape) - 1] else \
            [shape[i] if i in self._axes else 1 for i in range(len(shape))]
        self.gamma = self._gamma(pshape) if (self.scale or
                                             self.rms_scaling) else None
        self.beta = self._beta(pshape) if (self.center and
                                           not self.rms_scaling) else None
        self.built = True

    def _b(self, v):
        return v if v is None or self._bshape is None else \
            tf.reshape(v, self._bshape)

    def call(self, inputs):
        if self._bshape is None and not self.rms_scaling:
            return self._fused(inputs)
        mean, var = tf.nn.moments(inputs, self._axes, keepdims=True)
        inv = tf.math.rsqrt(var + self.epsilon)
        if self.rms_scaling:
            return inputs * inv * self._b(self.gamma)
        if self.gamma is not None:
            inv = inv * self._b(self.gamma)
        res = -mean * inv
        if self.beta is not None:
            res = res + self._b(self.beta)
        return inputs * inv + res

    def _fused(self, inputs):
        # The last axis: one _LayerNorm op (one pass forward, one for the
        # gradient) instead of some thirty elementwise ops and reductions.
        inputs = tf.convert_to_tensor(inputs)
        n = int(inputs.shape[-1])
        gamma, beta = self.gamma, self.beta
        gamma = tf.ones((n,), inputs.dtype) if gamma is None else \
            tf.cast(gamma, inputs.dtype)
        beta = tf.zeros((n,), inputs.dtype) if beta is None else \
            tf.cast(beta, inputs.dtype)
        return _C.call(_LAYER_NORM, (inputs, gamma, beta),
                       f=(self.epsilon,))

    def get_config(self):
        config = super().get_config()
        config.update(axis=self.axis, epsilon=self.epsilon,
                      rms_scaling=self.rms_scaling)
        return config


class GroupNormalization(_Affine):
    """Splits the channels (`axis`) into `groups` and normalizes each
    group of each example over its channels and all other non-batch
    axes; gamma/beta are per channel."""

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True,
                 scale=True, **kwargs):
        super().__init__(center=center, scale=scale, **kwargs)
        self.groups = int(groups)
        self.axis = int(axis)
        self.epsilon = float(epsilon)

    def build(self, input_shape):
        shape = tuple(tf.TensorShape(input_shape))
        rank = len(shape)
        axis = self.axis % rank
        dim = shape[axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have "
                             f"a defined dimension but the layer received "
                             f"an input with shape {shape}.")
        if self.groups == -1:
            self.groups = int(dim)
        if dim < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be "
                             f"more than the number of channels ({dim}).")
        if dim % self.groups:
            raise ValueError(f"Number of groups ({self.groups}) must be a "
                             f"multiple of the number of channels ({dim}).")
        self._axis, self._dim = axis, int(dim)
        self.gamma = self._gamma((dim,)) if self.scale else None
        self.beta = self._beta((dim,)) if self.center else None
        self.built = True

    def call(self, inputs):
        rank = len(inputs.shape)
        a, g = self._axis, self.groups
        dyn = tf.shape(inputs)
        dims = [int(d) if d is not None else dyn[i]
                for i, d in enumerate(inputs.shape)]
        grouped = dims[:a] + [g, self._dim // g] + dims[a + 1:]
        static = all(isinstance(d, int) for d in grouped)
        x = tf.reshape(inputs, grouped if static else tf.stack(grouped))
        reduce = [i for i in range(1, rank + 1) if i != a]
        mean, var = tf.nn.moments(x, reduce, keepdims=True)
        inv = tf.math.rsqrt(var + self.epsilon)
        pshape = [1] * (rank + 1)
        pshape[a], pshape[a + 1] = g, self._dim // g
        if self.gamma is not None:
            inv = inv * tf.reshape(self.gamma, pshape)
        res = -mean * inv
        if self.beta is not None:
            res = res + tf.reshape(self.beta, pshape)
        y = x * inv + res
        return tf.reshape(y, dims if static else tf.stack(dims))

    def get_config(self):
        config = super().get_config()
        config.update(groups=self.groups, axis=self.axis,
                      epsilon=self.epsilon)
        return config


class UnitNormalization(Layer):
    """x / ||x||_2 over `axis` (the inverse norm capped at 1e12, as
    Keras' ops.normalize)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axis, (int, list, tuple)):
            raise TypeError(f"Invalid value for `axis` argument: expected "
                            f"an int or a list/tuple of ints. Received: "
                            f"axis={axis}")
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.supports_masking = True

    def call(self, inputs):
        axes = _axes(self.axis, len(inputs.shape), "UnitNormalization")
        ss = tf.reduce_sum(tf.square(inputs), axis=axes, keepdims=True)
        return inputs * tf.minimum(tf.math.rsqrt(ss), 1e12)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config
