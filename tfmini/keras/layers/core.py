"""Core layers: Dense, Flatten, Dropout, Reshape, Activation, ReLU,
LeakyReLU, Softmax, Embedding, Lambda, Add, Concatenate."""
import numpy as np

import tfmini as tf

from .. import activations, initializers
from .base import Layer
from .weight_args import add_weight_from, init_weight_args


def _last_dim(input_shape, layer):
    dim = tf.TensorShape(input_shape)[-1] if input_shape else None
    if dim is None:
        raise ValueError(f"The last dimension of the inputs to "
                         f"{type(layer).__name__} {layer.name!r} should be "
                         f"defined. Found None. Full input shape received: "
                         f"{input_shape}")
    return int(dim)


class Dense(Layer):
    """outputs = activation(inputs @ kernel + bias), over the last axis."""

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer,
                         **kwargs)
        self.units = int(units)
        if self.units <= 0:
            raise ValueError(f"Received an invalid value for `units`, "
                             f"expected a positive integer. Received: "
                             f"units={units}")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        init_weight_args(self, "kernel", kernel_initializer,
                         kernel_regularizer, kernel_constraint)
        init_weight_args(self, "bias", bias_initializer, bias_regularizer,
                         bias_constraint)

    def build(self, input_shape):
        last = _last_dim(input_shape, self)
        self.kernel = add_weight_from(self, "kernel", "kernel",
                                      (last, self.units))
        self.bias = None
        if self.use_bias:
            self.bias = add_weight_from(self, "bias", "bias", (self.units,))
        self.built = True

    def call(self, inputs):
        if isinstance(inputs, tf.sparse.SparseTensor):
            return self._call_sparse(inputs)
        if inputs.dtype.is_integer or inputs.dtype == tf.bool:
            # Keras 3's matmul promotes, so int64 multi_hot/count
            # encodings (StringLookup, Hashing) feed a Dense directly.
            inputs = tf.cast(inputs, self.kernel.dtype)
        rank = len(inputs._shape_tuple)
        if rank == 2:
            y = tf.matmul(inputs, self.kernel)
        else:
            y = tf.tensordot(inputs, self.kernel, [[rank - 1], [0]])
        if self.use_bias:
            y = tf.nn.bias_add(y, self.bias)
        return self.activation(y)

    def _call_sparse(self, inputs):
        """A SparseTensor input (Input(sparse=True)): a sparse-dense
        matmul, as Keras 3's Dense, so the zeros are never made."""
        if len(inputs.shape) != 2:
            raise ValueError(f"Dense: a SparseTensor input must have rank "
                             f"2, got shape {inputs.shape}")
        if inputs.dtype != self.kernel.dtype:
            inputs = tf.sparse.SparseTensor(
                inputs.indices, tf.cast(inputs.values, self.kernel.dtype),
                inputs.dense_shape)
        y = tf.sparse.sparse_dense_matmul(inputs, self.kernel)
        if self.use_bias:
            y = tf.nn.bias_add(y, self.bias)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)[:-1] + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units,
                      activation=activations.serialize(self.activation),
                      use_bias=self.use_bias)
        return config


class Flatten(Layer):
    """Collapse all dims but the batch dim: (N, a, b, ...) -> (N, a*b*...)."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or "channels_last"

    def call(self, inputs):
        dims = tuple(inputs.shape)
        if self.data_format == "channels_first" and len(dims) > 2:
            perm = [0] + list(range(2, len(dims))) + [1]
            inputs = tf.transpose(inputs, perm)
            dims = tuple(inputs.shape)
        if len(dims) == 1:
            return tf.expand_dims(inputs, 1)
        rest = dims[1:]
        if all(d is not None for d in rest):
            return tf.reshape(inputs, [-1, int(np.prod(rest, dtype=np.int64))])
        if dims[0] is not None:
            return tf.reshape(inputs, [dims[0], -1])
        return tf.reshape(inputs, tf.stack([tf.shape(inputs)[0], -1]))

    def compute_output_shape(self, input_shape):
        dims = tuple(input_shape)
        rest = dims[1:]
        n = None if any(d is None for d in rest) else int(np.prod(rest))
        return (dims[0], n)

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


class Dropout(Layer):
    """Zero a fraction `rate` of the inputs while training (scaling the
    rest by 1 / (1 - rate)); identity otherwise."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. "
                             f"Expected a float value between 0 and 1. "
                             f"Received: rate={rate}")
        self.rate = float(rate)
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=None):
        if training and self.rate > 0:
            noise_shape = self.noise_shape
            if noise_shape is not None:
                dyn = tf.shape(inputs)
                noise_shape = tf.stack([
                    dyn[i] if d is None else tf.constant(int(d))
                    for i, d in enumerate(noise_shape)])
            return tf.nn.dropout(inputs, self.rate, noise_shape=noise_shape,
                                 seed=self.seed)
        return inputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, noise_shape=self.noise_shape,
                      seed=self.seed)
        return config


class Reshape(Layer):
    """Reshape each example to target_shape (may hold one -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError(f"There can only be one unknown dimension in "
                             f"`target_shape`, got {self.target_shape}")

    def _resolved(self, dims):
        target = list(self.target_shape)
        if -1 in target:
            rest = dims[1:]
            if any(d is None for d in rest):
                return None
            total = int(np.prod(rest))
            known = int(np.prod([d for d in target if d != -1]))
            if known == 0 or total % known:
                raise ValueError(f"Reshape {self.name!r}: total size of the "
                                 f"new array must be unchanged, input shape "
                                 f"= {tuple(rest)}, output shape = "
                                 f"{self.target_shape}")
            target[target.index(-1)] = total // known
        return target

    def call(self, inputs):
        dims = tuple(inputs.shape)
        target = self._resolved(dims)
        if target is None:
            return tf.reshape(inputs, tf.concat(
                [tf.shape(inputs)[:1],
                 tf.constant(list(self.target_shape), tf.int32)], 0))
        return tf.reshape(inputs, [-1] + target)

    def compute_output_shape(self, input_shape):
        dims = tuple(input_shape)
        target = self._resolved(dims)
        return (dims[0],) + tuple(target if target is not None else
                                  [None if d == -1 else d
                                   for d in self.target_shape])

    def get_config(self):
        config = super().get_config()
        config["target_shape"] = self.target_shape
        return config


class Activation(Layer):
    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class ReLU(Layer):
    """max(x, 0), with optional cap, slope below threshold, threshold."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0,
                 **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError(f"max_value of a ReLU layer cannot be a "
                             f"negative value. Received: {max_value}")
        if negative_slope is None or negative_slope < 0:
            raise ValueError(f"negative_slope of a ReLU layer cannot be a "
                             f"negative value. Received: {negative_slope}")
        self.max_value = max_value
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        return activations.relu(inputs, negative_slope=self.negative_slope,
                                max_value=self.max_value,
                                threshold=self.threshold)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(max_value=self.max_value,
                      negative_slope=self.negative_slope,
                      threshold=self.threshold)
        return config


class LeakyReLU(Layer):
    def __init__(self, alpha=None, negative_slope=0.3, **kwargs):
        super().__init__(**kwargs)
        self.negative_slope = float(alpha if alpha is not None
                                    else negative_slope)

    def call(self, inputs):
        return tf.nn.leaky_relu(inputs, alpha=self.negative_slope)


class Softmax(Layer):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs, mask=None):
        if mask is not None:
            # -1e9 is -inf in float16, and 0 * -inf a NaN everywhere.
            big = -3e4 if inputs.dtype == tf.float16 else -1e9
            inputs = inputs + (1.0 - tf.cast(mask, inputs.dtype)) * big
        return tf.nn.softmax(inputs, axis=self.axis)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class Embedding(Layer):
    """Look up rows of an (input_dim, output_dim) table by integer id."""

    def __init__(self, input_dim, output_dim,
                 embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False,
                 input_length=None, **kwargs):
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        kwargs.setdefault("autocast", False)
        super().__init__(activity_regularizer=activity_regularizer,
                         **kwargs)
        self.input_dim = int(input_dim)
        self.output_dim = int(output_dim)
        if self.input_dim <= 0 or self.output_dim <= 0:
            raise ValueError(f"Both `input_dim` and `output_dim` should be "
                             f"positive, Received input_dim = {input_dim} "
                             f"and output_dim = {output_dim}")
        if embeddings_initializer == "uniform":
            embeddings_initializer = initializers.RandomUniform(-0.05, 0.05)
        init_weight_args(self, "embeddings", embeddings_initializer,
                         embeddings_regularizer, embeddings_constraint)
        self.mask_zero = bool(mask_zero)

    def build(self, input_shape):
        self.embeddings = add_weight_from(
            self, "embeddings", "embeddings",
            (self.input_dim, self.output_dim))
        self.built = True

    def call(self, inputs):
        if not inputs.dtype.is_integer:
            inputs = tf.cast(inputs, tf.int32)
        return tf.gather(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return tf.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(input_dim=self.input_dim, output_dim=self.output_dim,
                      mask_zero=self.mask_zero)
        return config


class Lambda(Layer):
    """Wrap a function of tensors as a layer (e.g. arithmetic in the
    functional API)."""

    def __init__(self, function, output_shape=None, arguments=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = dict(arguments or {})

    def call(self, inputs):
        return self.function(inputs, **self.arguments)


class _Merge(Layer):
    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"A merge layer ({type(self).__name__}) should "
                             f"be called on a list of at least 2 inputs. "
                             f"Got {inputs!r}")
        return self._merge(list(inputs))


class Add(_Merge):
    def _merge(self, xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out


class Concatenate(_Merge):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def _merge(self, xs):
        return tf.concat(xs, axis=self.axis)


def add(inputs, **kwargs):
    """The functional form of keras.layers.Add."""
    return Add(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """The functional form of keras.layers.Concatenate."""
    return Concatenate(axis=axis, **kwargs)(inputs)
