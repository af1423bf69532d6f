"""Keras masks: which time steps of a sequence are padding.

Keras attaches a layer's output mask to the output tensor (the
`_keras_mask` attribute); a tfmini Tensor takes no attributes, so the
mask sits in a side table keyed by the tensor's id, held by a weak
reference that drops the entry when the tensor dies (so an id reused by
a later tensor never finds a stale mask). Layer.__call__ reads the
table for layers whose call() takes `mask` and writes it for layers
that compute one (compute_mask) or pass theirs through
(supports_masking)."""
import weakref

import tfmini as tf

from .base import Layer

# id(tensor) -> (weak reference to the tensor, its mask)
_table = {}
# False until some layer produced a mask: until then calls skip the
# table entirely.
used = [False]


def _drop(key):
    def callback(_ref):
        _table.pop(key, None)
    return callback


def set_mask(tensor, mask):
    """Attach mask to tensor (None removes it)."""
    if not isinstance(tensor, tf.Tensor):
        return
    key = id(tensor)
    if mask is None:
        _table.pop(key, None)
        return
    used[0] = True
    _table[key] = (weakref.ref(tensor, _drop(key)), mask)


def get_mask(tensor):
    """The mask attached to tensor, else None."""
    entry = _table.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1]


def mask_of(inputs):
    """The mask of an input: of a tensor, or a list of those of a list
    (None when no element has one)."""
    if isinstance(inputs, (list, tuple)):
        masks = [get_mask(x) for x in inputs]
        return masks if any(m is not None for m in masks) else None
    return get_mask(inputs)


def attach(outputs, mask):
    """Attach mask (one, or one per output) to a layer's outputs."""
    if isinstance(outputs, (list, tuple)):
        masks = mask if isinstance(mask, (list, tuple)) else \
            [mask] + [None] * (len(outputs) - 1)
        for o, m in zip(outputs, masks):
            set_mask(o, m)
    else:
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None
        set_mask(outputs, mask)


class Masking(Layer):
    """Marks the time steps whose features all equal mask_value as
    padding: the output is the input with those steps zeroed, and its
    mask (batch, time) is True where a step has any other value."""

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = float(mask_value)
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return tf.reduce_any(tf.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        keep = tf.reduce_any(tf.not_equal(inputs, self.mask_value), axis=-1,
                             keepdims=True)
        return inputs * tf.cast(keep, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["mask_value"] = self.mask_value
        return config
