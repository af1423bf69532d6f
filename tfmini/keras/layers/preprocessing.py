"""Preprocessing layers: Normalization (with adapt), Rescaling,
CategoryEncoding. The lookups (IntegerLookup, StringLookup) are in
index_lookup.py, Hashing in hashing.py, TextVectorization in
text_vectorization.py.

They run as ops, so they work inside a model and a traced step; adapt()
computes its statistics eagerly with NumPy from an array, a tensor, or
an iterable of batches (a tf.data.Dataset)."""
import numpy as np

import tfmini as tf

from .. import backend
from .base import Layer


def _to_numpy(data):
    """An array from an array, a tensor or an iterable of batches."""
    if isinstance(data, np.ndarray):
        return data
    if hasattr(data, "numpy"):
        return data.numpy()
    if isinstance(data, (list, tuple)):
        return np.asarray(data)
    batches = []
    for b in data:
        if isinstance(b, (tuple, list)):
            b = b[0]            # (x, y) pairs: adapt on x, as Keras
        batches.append(b.numpy() if hasattr(b, "numpy") else np.asarray(b))
    if not batches:
        raise ValueError("adapt() was given no data")
    return np.concatenate(batches, axis=0)


class Normalization(Layer):
    """(x - mean) / max(sqrt(variance), epsilon) per feature along
    `axis` (invert=True undoes it). mean and variance are given, or
    learned by adapt(data) into the non-trainable weights 'mean' and
    'variance' (population variance, as Keras), beside Keras 3's
    scalar 'count' (here: the number of examples adapted on)."""

    def __init__(self, axis=-1, mean=None, variance=None, invert=False,
                 **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, int):
            axis = (axis,)
        self.axis = tuple(axis)
        if (mean is None) != (variance is None):
            raise ValueError(f"When setting values directly, both `mean` "
                             f"and `variance` must be set. Received: "
                             f"mean={mean} and variance={variance}")
        self.input_mean = mean
        self.input_variance = variance
        self.invert = bool(invert)
        self.supports_masking = True

    def _axes(self, ndim):
        keep = sorted(a % ndim for a in self.axis)
        if any(a == 0 for a in keep) and ndim > 1:
            raise ValueError("Normalization cannot normalize along the "
                             "batch axis (axis=0)")
        return keep

    def build(self, input_shape):
        shape = tuple(tf.TensorShape(input_shape))
        ndim = len(shape)
        self._keep = self._axes(ndim)
        for a in self._keep:
            if shape[a] is None:
                raise ValueError(f"All `axis` values to be kept must have a "
                                 f"known shape. Received axis={self.axis}, "
                                 f"inputs.shape={shape}, with unknown axis "
                                 f"at index {a}")
        self._reduce = tuple(d for d in range(ndim) if d not in self._keep)
        stat_shape = tuple(shape[d] for d in self._keep)
        self._bshape = tuple(shape[d] if d in self._keep else 1
                             for d in range(ndim))
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(
                "mean", stat_shape, initializer="zeros", trainable=False)
            self.adapt_variance = self.add_weight(
                "variance", stat_shape, initializer="ones", trainable=False)
            # Keras 3 keeps a scalar 'count' for older saved models; it
            # is here so weight lists and files line up with Keras'.
            self.count = self.add_weight(
                "count", (), dtype="int64", initializer="zeros",
                trainable=False)
        self.built = True

    def adapt(self, data, batch_size=None, steps=None):
        if self.input_mean is not None:
            raise ValueError("Normalization was given mean and variance; "
                             "it cannot also adapt")
        x = _to_numpy(data).astype(np.float64)
        if not self.built:
            self.build((None,) + x.shape[1:])
        mean = x.mean(axis=self._reduce)
        var = x.var(axis=self._reduce)
        self.adapt_mean.assign(mean.astype(np.float32), read_value=False)
        self.adapt_variance.assign(var.astype(np.float32), read_value=False)
        self.count.assign(x.shape[0] if x.ndim else 1, read_value=False)

    def _stats(self, dtype):
        if self.input_mean is not None:
            mean = np.broadcast_to(np.asarray(self.input_mean, np.float32),
                                   self._bshape)
            var = np.broadcast_to(np.asarray(self.input_variance,
                                             np.float32), self._bshape)
            return tf.constant(mean, dtype), tf.constant(var, dtype)
        return (tf.reshape(tf.cast(self.adapt_mean, dtype), self._bshape),
                tf.reshape(tf.cast(self.adapt_variance, dtype),
                           self._bshape))

    def call(self, inputs):
        x = inputs if inputs.dtype.is_floating else \
            tf.cast(inputs, self.compute_dtype)
        mean, var = self._stats(x.dtype)
        scale = tf.maximum(tf.sqrt(var), backend.epsilon())
        if self.invert:
            return mean + x * scale
        return (x - mean) / scale

    @property
    def mean(self):
        return self._stats(tf.float32)[0]

    @property
    def variance(self):
        return self._stats(tf.float32)[1]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()

        def plain(v):
            return np.asarray(v).tolist() if v is not None else None
        config.update(axis=self.axis, invert=self.invert,
                      mean=plain(self.input_mean),
                      variance=plain(self.input_variance))
        return config


class Rescaling(Layer):
    """inputs * scale + offset, in the layer's float dtype (e.g. 1/255
    for image bytes)."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.offset = offset
        self.supports_masking = True

    def call(self, inputs):
        x = tf.cast(inputs, self.compute_dtype)
        return x * tf.cast(self.scale, x.dtype) + tf.cast(self.offset,
                                                          x.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(scale=self.scale, offset=self.offset)
        return config


_MODES = ("one_hot", "multi_hot", "count")


def _check_range(x, n, who):
    """Out-of-range ids would be silently dropped by one_hot: refuse them
    when the values are known (eager)."""
    if getattr(x, "_symbolic", False) or not hasattr(x, "numpy"):
        return
    v = x.numpy()
    if v.size and (v.min() < 0 or v.max() >= n):
        raise ValueError(f"{who}: input values must be in the range "
                         f"0 <= values < num_tokens with num_tokens={n}; "
                         f"got values in [{v.min()}, {v.max()}]")


def _encode(x, n, mode, dtype, count_weights=None):
    """one_hot: one row per value; multi_hot / count: one row per
    sample (the last axis holds its values)."""
    rank = len(x._shape_tuple)
    if rank == 0:
        x = tf.expand_dims(x, -1)
    if mode == "one_hot":
        # Keras 3: a trailing dim of 1 is the value's own axis (dropped),
        # except on a rank-1 batch of ids: [1] is one sample, (1, n).
        if rank > 1 and x._shape_tuple[-1] == 1:
            x = tf.squeeze(x, -1)
        return tf.one_hot(tf.cast(x, tf.int32), n, dtype=dtype)
    hot = tf.one_hot(tf.cast(x, tf.int32), n, dtype=dtype)
    if count_weights is not None:
        hot = hot * tf.expand_dims(tf.cast(count_weights, dtype), -1)
    if mode == "count":
        return tf.reduce_sum(hot, axis=-2)
    return tf.reduce_max(hot, axis=-2)


class CategoryEncoding(Layer):
    """Integer ids in [0, num_tokens) to one-hot rows (one_hot),
    per-sample indicator vectors (multi_hot) or counts (count;
    count_weights weighs each id)."""

    def __init__(self, num_tokens=None, output_mode="multi_hot",
                 sparse=False, **kwargs):
        super().__init__(**kwargs)
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If "
                             "the number of tokens is not known beforehand, "
                             "use the IntegerLookup layer instead.")
        if int(num_tokens) < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: "
                             f"num_tokens={num_tokens}.")
        if output_mode not in _MODES:
            raise ValueError(f"Unknown arg for output_mode: {output_mode}. "
                             f"Expected one of {list(_MODES)}")
        self.num_tokens = int(num_tokens)
        self.output_mode = output_mode
        self.sparse = bool(sparse)
        self._keras_autocast = False

    def call(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError("`count_weights` is not used when `output_mode`"
                             " is not 'count'. Received "
                             f"output_mode={self.output_mode!r}")
        _check_range(inputs, self.num_tokens, "CategoryEncoding")
        out = _encode(inputs, self.num_tokens, self.output_mode,
                      self.compute_dtype, count_weights)
        # sparse=True: the same numbers as a SparseTensor of the nonzero
        # entries (TF's bincount gives those).
        return tf.sparse.from_dense(out) if self.sparse else out

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if not shape:
            return (self.num_tokens,)
        if self.output_mode == "one_hot" and (shape[-1] != 1 or
                                              len(shape) == 1):
            return shape + (self.num_tokens,)
        return shape[:-1] + (self.num_tokens,)

    def get_config(self):
        config = super().get_config()
        config.update(num_tokens=self.num_tokens,
                      output_mode=self.output_mode, sparse=self.sparse)
        return config
