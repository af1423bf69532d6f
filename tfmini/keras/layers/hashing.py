"""keras.layers.Hashing: values to num_bins buckets by a string hash.

As Keras 3: numbers are hashed as their text (tf.as_string), without a
salt by FarmHash's Fingerprint64 (tf.strings.to_hash_bucket_fast), with
one by keyed SipHash (tf.strings.to_hash_bucket_strong); a mask_value
takes bucket 0 and the rest share the other num_bins - 1."""
import tfmini as tf

from .index_lookup import TakesAnyInput, encode_ids

_MODES = ("int", "one_hot", "multi_hot", "count")


class Hashing(TakesAnyInput):
    """Hashes strings or integers into num_bins bins (output_mode 'int'),
    or encodes the bins as one_hot / multi_hot / count vectors."""

    def __init__(self, num_bins, mask_value=None, salt=None,
                 output_mode="int", sparse=False, **kwargs):
        kwargs.pop("dtype", None)
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError(f"The `num_bins` for `Hashing` cannot be "
                             f"`None` or non-positive values. Received: "
                             f"num_bins={num_bins}.")
        if output_mode not in _MODES:
            raise ValueError(f"Invalid value for argument `output_mode`. "
                             f"Expected one of {_MODES}. Received: "
                             f"output_mode={output_mode}")
        if sparse and output_mode == "int":
            raise ValueError(f"`sparse` may only be true if `output_mode` "
                             f"is `\"one_hot\"`, `\"multi_hot\"`, or "
                             f"`\"count\"`. Received: sparse=True and "
                             f"output_mode={output_mode}")
        if salt is not None:
            if isinstance(salt, int) and not isinstance(salt, bool):
                salt = [salt, salt]
            elif not (isinstance(salt, (list, tuple)) and len(salt) == 2
                      and all(isinstance(s, int) for s in salt)):
                raise ValueError(f"The `salt` argument for `Hashing` can "
                                 f"only be a tuple of size 2 integers, or a "
                                 f"single integer. Received: salt={salt}.")
            salt = [int(s) for s in salt]
        self.num_bins = int(num_bins)
        self.mask_value = mask_value
        self.salt = salt
        self.output_mode = output_mode
        self.sparse = bool(sparse)
        self._keras_autocast = False

    def _hash(self, x):
        if x.dtype != tf.string:
            x = tf.strings.as_string(x)
        bins = self.num_bins - (self.mask_value is not None)
        if bins < 1:
            raise ValueError(f"Hashing: num_bins={self.num_bins} leaves no "
                             f"bin besides mask_value's")
        if self.salt is not None:
            h = tf.strings.to_hash_bucket_strong(x, bins, self.salt)
        else:
            h = tf.strings.to_hash_bucket_fast(x, bins)
        if self.mask_value is None:
            return h
        m = self.mask_value
        if isinstance(m, str):
            m = m.encode("utf-8")
        # Compared as text, as hashed: mask_value=0 matches int64 0 too.
        mask = tf.constant(m) if isinstance(m, bytes) else \
            tf.strings.as_string(tf.constant(m))
        return tf.where(tf.equal(x, mask), tf.zeros_like(h), h + 1)

    def call(self, inputs):
        if not hasattr(inputs, "flat_values") and not isinstance(
                inputs, tf.Tensor):
            inputs = tf.convert_to_tensor(inputs)
        if hasattr(inputs, "flat_values"):
            out = inputs.with_flat_values(self._hash(inputs.flat_values))
        else:
            out = self._hash(inputs)
        if self.output_mode == "int":
            return out
        enc = tf.cast(encode_ids(out, self.num_bins, self.output_mode),
                      tf.float32)
        return tf.sparse.from_dense(enc) if self.sparse else enc

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        if self.output_mode == "one_hot" and (not shape or shape[-1] != 1):
            return shape + (self.num_bins,)
        return shape[:-1] + (self.num_bins,)

    def get_config(self):
        config = super().get_config()
        config.pop("dtype", None)
        config.update(num_bins=self.num_bins, salt=self.salt,
                      mask_value=self.mask_value,
                      output_mode=self.output_mode, sparse=self.sparse)
        return config
