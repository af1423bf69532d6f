"""Attention layers: MultiHeadAttention and Attention (dot-product / concat
scores), with Keras 3's math, weights and masks.

Masks: a boolean attention mask (batch, Tq, Tv) is True where a query
may attend to a key. MultiHeadAttention joins the Keras masks of its
inputs (query (B, T) -> (B, T, 1), value and key (B, S) -> (B, 1, S)), the
causal mask and attention_mask with AND; masked scores get -1e9 added
before the softmax (Keras' Softmax layer; -3e4 in float16)."""
import math

import numpy as np

import tfmini as tf

from .. import constraints, initializers, regularizers
from . import masking as _masking
from .base import Layer, _path_scope


def _large_negative(dtype):
    return -3e4 if dtype == tf.float16 else -1e9


def _masked_softmax(scores, mask):
    if mask is not None:
        scores = scores + (1.0 - tf.cast(mask, scores.dtype)) * \
            _large_negative(scores.dtype)
    return tf.nn.softmax(scores, axis=-1)


def _causal_mask(tq, tv):
    """(1, Tq, Tv): query i sees keys j <= i."""
    if isinstance(tq, int) and isinstance(tv, int):
        return tf.constant(np.tril(np.ones((tq, tv), bool))[None])
    rows = tf.expand_dims(tf.range(tq), 1)
    cols = tf.expand_dims(tf.range(tv), 0)
    return tf.expand_dims(tf.greater_equal(rows, cols), 0)


def _time(x):
    t = x.shape[1]
    return int(t) if t is not None else tf.shape(x)[1]


class _Projection(Layer):
    """One of MultiHeadAttention's EinsumDense projections: a kernel of
    shape in_dims + out_dims contracting the input's last len(in_dims)
    axes, plus a bias of shape out_dims ('query/kernel', 'query/bias')."""

    def __init__(self, in_dims, out_dims, use_bias, kernel_initializer,
                 bias_initializer, kernel_regularizer, bias_regularizer,
                 kernel_constraint, bias_constraint, **kwargs):
        super().__init__(**kwargs)
        self.in_dims, self.out_dims = tuple(in_dims), tuple(out_dims)
        self.use_bias = use_bias
        self._args = (kernel_initializer, bias_initializer,
                      kernel_regularizer, bias_regularizer,
                      kernel_constraint, bias_constraint)

    def build(self, input_shape=None):
        ki, bi, kr, br, kc, bc = self._args
        self.kernel = self.add_weight(
            "kernel", self.in_dims + self.out_dims, initializer=ki,
            regularizer=kr, constraint=kc)
        self.bias = self.add_weight(
            "bias", self.out_dims, initializer=bi, regularizer=br,
            constraint=bc) if self.use_bias else None
        self.built = True

    def project(self, x):
        rank, n = len(x.shape), len(self.in_dims)
        # Mixed precision: the projections are built inside the first
        # call, after the layer's weights were autocast, so cast here.
        kernel, bias = self.kernel, self.bias
        if kernel.dtype != x.dtype:
            kernel = tf.cast(kernel, x.dtype)
            bias = None if bias is None else tf.cast(bias, x.dtype)
        y = tf.tensordot(x, kernel,
                         [list(range(rank - n, rank)), list(range(n))])
        return y + bias if bias is not None else y


class MultiHeadAttention(Layer):
    """softmax(Q K^T / sqrt(key_dim) + mask) V per head, projected back:
    query/key/value kernels (dim, num_heads, key_dim|value_dim), output
    kernel (num_heads, value_dim, output_dim). Inputs (batch, T, dim);
    attention over the time axis (attention_axes=None)."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0,
                 use_bias=True, output_shape=None, attention_axes=None,
                 flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, seed=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer,
                         **kwargs)
        self.supports_masking = True
        self._num_heads = int(num_heads)
        self._key_dim = int(key_dim)
        self._value_dim = int(value_dim) if value_dim else self._key_dim
        self._dropout = float(dropout)
        self._use_bias = bool(use_bias)
        if output_shape is not None and not isinstance(output_shape,
                                                       (list, tuple)):
            output_shape = (int(output_shape),)
        self._output_shape = tuple(output_shape) if output_shape else None
        if attention_axes is not None and tuple(
                np.atleast_1d(attention_axes).tolist()) not in ((1,), (-2,)):
            raise NotImplementedError(
                f"MultiHeadAttention: tfmini attends over the time axis of "
                f"(batch, time, dim) inputs only; got attention_axes="
                f"{attention_axes}")
        self._attention_axes = attention_axes
        self._flash_attention = flash_attention
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)
        self._kernel_regularizer = regularizers.get(kernel_regularizer)
        self._bias_regularizer = regularizers.get(bias_regularizer)
        self._kernel_constraint = constraints.get(kernel_constraint)
        self._bias_constraint = constraints.get(bias_constraint)
        self.seed = seed
        self._inverse_sqrt_key_dim = 1.0 / math.sqrt(float(self._key_dim))

    num_heads = property(lambda self: self._num_heads)
    key_dim = property(lambda self: self._key_dim)
    value_dim = property(lambda self: self._value_dim)
    dropout = property(lambda self: self._dropout)
    use_bias = property(lambda self: self._use_bias)

    def _projection(self, name, in_dims, out_dims):
        layer = _Projection(in_dims, out_dims, self._use_bias,
                            self._kernel_initializer, self._bias_initializer,
                            self._kernel_regularizer, self._bias_regularizer,
                            self._kernel_constraint, self._bias_constraint,
                            name=name, dtype=self.dtype_policy)
        with _path_scope(name):
            layer.build()
        return layer

    def build(self, query_shape, value_shape=None, key_shape=None):
        query_shape = tuple(tf.TensorShape(query_shape))
        value_shape = tuple(tf.TensorShape(value_shape)) if \
            value_shape is not None else query_shape
        key_shape = tuple(tf.TensorShape(key_shape)) if \
            key_shape is not None else value_shape
        for what, shape in (("query", query_shape), ("value", value_shape),
                            ("key", key_shape)):
            if len(shape) != 3 or shape[-1] is None:
                raise ValueError(f"MultiHeadAttention {self.name!r}: the "
                                 f"{what} must be (batch, time, dim) with a "
                                 f"known dim, got shape {shape}")
        h = self._num_heads
        self._query_dense = self._projection(
            "query", (query_shape[-1],), (h, self._key_dim))
        self._key_dense = self._projection(
            "key", (key_shape[-1],), (h, self._key_dim))
        self._value_dense = self._projection(
            "value", (value_shape[-1],), (h, self._value_dim))
        out = self._output_shape or (query_shape[-1],)
        self._output_dense = self._projection(
            "attention_output", (h, self._value_dim), out)
        self.built = True

    def _keras_maybe_build(self, inputs):
        # Built from the first call's query, value and key in call().
        pass

    def __call__(self, query, value=None, key=None, **kwargs):
        # Keras' signature: value is required; the base class sees the
        # query as `inputs` and value/key as further arguments.
        if value is None:
            raise TypeError("MultiHeadAttention.__call__() missing its "
                            "`value` argument")
        return super().__call__(query, value, key, **kwargs)

    def call(self, query, value, key=None, query_mask=None, value_mask=None,
             key_mask=None, attention_mask=None,
             return_attention_scores=False, training=None,
             use_causal_mask=False):
        if key is None:
            key = value
        if not self.built:
            from .. import backend
            with backend.init_scope():
                self.build(query.shape, value.shape, key.shape)
        query_mask = _masking.get_mask(query) if query_mask is None \
            else query_mask
        if value_mask is None:
            value_mask = _masking.get_mask(value)
        if key_mask is None and key is not value:
            key_mask = _masking.get_mask(key)
        mask = self._compute_attention_mask(
            query, value, query_mask, value_mask, key_mask, attention_mask,
            use_causal_mask)
        q = self._query_dense.project(query)     # (B, T, N, key_dim)
        k = self._key_dense.project(key)         # (B, S, N, key_dim)
        v = self._value_dense.project(value)     # (B, S, N, value_dim)
        out, scores = self._compute_attention(q, k, v, mask, training)
        out = self._output_dense.project(out)
        if return_attention_scores:
            return out, scores
        return out

    def _compute_attention_mask(self, query, value, query_mask, value_mask,
                                key_mask, attention_mask, use_causal_mask):
        auto = None
        if query_mask is not None:
            auto = tf.expand_dims(tf.cast(query_mask, tf.bool), -1)
        for m in (value_mask, key_mask):
            if m is not None:
                m = tf.expand_dims(tf.cast(m, tf.bool), -2)
                auto = m if auto is None else tf.logical_and(auto, m)
        if use_causal_mask:
            m = _causal_mask(_time(query), _time(value))
            auto = m if auto is None else tf.logical_and(auto, m)
        if attention_mask is not None:
            attention_mask = tf.cast(attention_mask, tf.bool)
            if auto is not None:
                attention_mask = tf.logical_and(attention_mask, auto)
            return attention_mask
        return auto

    def _compute_attention(self, query, key, value, mask, training):
        q = tf.transpose(query * self._inverse_sqrt_key_dim, [0, 2, 1, 3])
        k = tf.transpose(key, [0, 2, 1, 3])
        v = tf.transpose(value, [0, 2, 1, 3])
        scores = tf.matmul(q, k, transpose_b=True)   # (B, N, T, S)
        if mask is not None:
            # (B, T, S) -> (B, 1, T, S): the same mask for every head.
            for _ in range(4 - len(mask.shape)):
                mask = tf.expand_dims(mask, -3)
        scores = _masked_softmax(scores, mask)
        probs = scores
        if training and self._dropout > 0.0:
            probs = tf.nn.dropout(scores, self._dropout, seed=self.seed)
        out = tf.matmul(probs, v)                    # (B, N, T, value_dim)
        return tf.transpose(out, [0, 2, 1, 3]), scores

    def compute_output_shape(self, query_shape, value_shape=None,
                             key_shape=None):
        query_shape = tuple(query_shape)
        if self._output_shape:
            return query_shape[:-1] + self._output_shape
        return query_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self._num_heads, key_dim=self._key_dim,
            value_dim=self._value_dim, dropout=self._dropout,
            use_bias=self._use_bias, output_shape=self._output_shape,
            attention_axes=self._attention_axes,
            kernel_initializer=initializers.serialize(
                self._kernel_initializer),
            bias_initializer=initializers.serialize(self._bias_initializer),
            kernel_regularizer=self._kernel_regularizer,
            bias_regularizer=self._bias_regularizer,
            activity_regularizer=self.activity_regularizer,
            kernel_constraint=self._kernel_constraint,
            bias_constraint=self._bias_constraint, seed=self.seed)
        return config


class Attention(Layer):
    """Dot-product (Luong) attention over [query, value(, key)]:
    scores = query @ key^T (times `scale` if use_scale), or for
    score_mode='concat' concat_score_weight * sum(tanh(q + k)); then a
    softmax masked by the value mask (and causally), times value; rows of
    masked queries are zeroed."""

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0,
                 seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Invalid value for argument score_mode. "
                             f"Expected one of {{'dot', 'concat'}}. "
                             f"Received: score_mode={score_mode}")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = float(dropout)
        self.seed = seed
        self.supports_masking = True

    def build(self, input_shape):
        self.scale = self.add_weight(
            "scale", (), initializer="ones") if self.use_scale else None
        self.concat_score_weight = self.add_weight(
            "concat_score_weight", (), initializer="ones") \
            if self.score_mode == "concat" else None
        self.built = True

    def _validate(self, inputs, mask):
        name = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{name} layer must be called on a list of "
                             f"inputs, namely [query, value] or [query, "
                             f"value, key]. Received: inputs={inputs}.")
        if not 2 <= len(inputs) <= 3:
            raise ValueError(f"{name} layer accepts inputs list of length 2 "
                             f"or 3, namely [query, value] or [query, value, "
                             f"key]. Received length: {len(inputs)}.")
        if mask is not None and (not isinstance(mask, (list, tuple)) or
                                 not 2 <= len(mask) <= 3):
            raise ValueError(f"{name} layer mask must be a list of length 2 "
                             f"or 3, namely [query_mask, value_mask]. "
                             f"Received: mask={mask}.")

    def _scores(self, q, k):
        if self.score_mode == "dot":
            s = tf.matmul(q, k, transpose_b=True)
            return s * self.scale if self.scale is not None else s
        t = tf.expand_dims(q, -2) + tf.expand_dims(k, -3)
        if self.scale is not None:
            t = self.scale * t
        return self.concat_score_weight * tf.reduce_sum(tf.tanh(t), -1)

    def call(self, inputs, mask=None, training=None,
             return_attention_scores=False, use_causal_mask=False):
        self._validate(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask else None
        scores = self._scores(q, k)
        score_mask = None
        if v_mask is not None:
            score_mask = tf.expand_dims(tf.cast(v_mask, tf.bool), -2)
        if use_causal_mask:
            c = _causal_mask(_time(q), _time(k))
            score_mask = c if score_mask is None else \
                tf.logical_and(score_mask, c)
        if score_mask is not None:
            big = 65504.0 if scores.dtype == tf.float16 else 1.0e9
            scores = scores - big * tf.cast(tf.logical_not(score_mask),
                                            scores.dtype)
        weights = tf.nn.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            weights = tf.nn.dropout(weights, self.dropout, seed=self.seed)
        result = tf.matmul(weights, v)
        if q_mask is not None:
            result = result * tf.expand_dims(tf.cast(q_mask, result.dtype),
                                             -1)
        if return_attention_scores:
            return result, weights
        return result

    def compute_mask(self, inputs, mask=None):
        if mask is None or mask[0] is None:
            return None
        return mask[0]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0][:-1]) + (input_shape[1][-1],)

    def get_config(self):
        config = super().get_config()
        config.update(use_scale=self.use_scale, score_mode=self.score_mode,
                      dropout=self.dropout)
        return config
