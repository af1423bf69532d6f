"""BatchNormalization: normalize with the batch's statistics while
training (and update moving averages of them, non-trainable weights),
with the moving averages at inference."""
import tfmini as tf

from .. import constraints, initializers, regularizers
from .base import Layer


class BatchNormalization(Layer):
    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                 scale=True, beta_initializer="zeros",
                 gamma_initializer="ones",
                 moving_mean_initializer="zeros",
                 moving_variance_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, synchronized=False, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(
            moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(
            moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def build(self, input_shape):
        shape = tf.TensorShape(input_shape)
        rank = shape.rank
        axis = self.axis if isinstance(self.axis, int) else self.axis[0]
        # (a scalar input, or an axis past the rank, would otherwise hit
        # a modulo by zero or wrap around to another axis)
        if not rank or not -rank <= axis < rank:
            raise ValueError(f"Invalid axis: {self.axis} for "
                             f"{type(self).__name__} input of shape "
                             f"{shape} (rank {rank})")
        axis = axis % rank
        dim = shape[axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have "
                             f"a defined dimension but the layer received "
                             f"an input with shape {shape}.")
        self._axis = axis
        self._reduce_axes = [i for i in range(rank) if i != axis]
        # Parameters broadcast against the input: (C,) for the last axis,
        # else reshaped to [1, .., C, .., 1].
        self._bshape = None if axis == rank - 1 else \
            [int(dim) if i == axis else 1 for i in range(rank)]
        pshape = (int(dim),)
        self.gamma = self.add_weight(
            "gamma", pshape, initializer=self.gamma_initializer,
            regularizer=self.gamma_regularizer,
            constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight(
            "beta", pshape, initializer=self.beta_initializer,
            regularizer=self.beta_regularizer,
            constraint=self.beta_constraint) if self.center else None
        self.moving_mean = self.add_weight(
            "moving_mean", pshape, initializer=self.moving_mean_initializer,
            trainable=False)
        self.moving_variance = self.add_weight(
            "moving_variance", pshape,
            initializer=self.moving_variance_initializer, trainable=False)
        self.built = True

    def _b(self, t):
        return t if self._bshape is None else tf.reshape(t, self._bshape)

    def call(self, inputs, training=None):
        x = inputs
        if x.dtype in (tf.float16, tf.bfloat16):
            # Mixed precision: statistics in float32 as in Keras 3 (the
            # moving averages are float32), the output in float16.
            out = self.call(tf.cast(x, tf.float32), training=training)
            return tf.cast(out, x.dtype)
        if training and self.trainable:
            mean, variance = tf.nn.moments(x, self._reduce_axes)
            decay = 1.0 - self.momentum
            self.moving_mean.assign_sub(
                (self.moving_mean - tf.stop_gradient(mean)) * decay,
                read_value=False)
            self.moving_variance.assign_sub(
                (self.moving_variance - tf.stop_gradient(variance)) * decay,
                read_value=False)
        else:
            mean, variance = self.moving_mean, self.moving_variance
        # x * inv + (beta - mean * inv): two passes over x.
        inv = tf.math.rsqrt(variance + self.epsilon)
        if self.gamma is not None:
            inv = inv * tf.cast(self.gamma, inv.dtype)
        shift = -mean * inv
        if self.beta is not None:
            shift = shift + tf.cast(self.beta, shift.dtype)
        return x * self._b(inv) + self._b(shift)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(axis=self.axis, momentum=self.momentum,
                      epsilon=self.epsilon, center=self.center,
                      scale=self.scale)
        return config
