"""keras.layers.Discretization: values to the index of their bucket,
given the buckets' boundaries (TF's Bucketize), optionally encoded as
CategoryEncoding's one_hot / multi_hot / count rows.

Index i holds boundaries[i-1] <= x < boundaries[i]: a value equal to a
boundary goes to the bucket above it, as TF's. Learning boundaries from
data (num_bins with adapt()) is not built: give bin_boundaries."""
import tfmini as tf

from .base import Layer
from .preprocessing import _encode

_MODES = ("int", "one_hot", "multi_hot", "count")


class Discretization(Layer):
    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01,
                 output_mode="int", sparse=False, dtype=None, name=None,
                 **kwargs):
        if output_mode not in _MODES:
            raise ValueError(f"Unknown value for `output_mode` argument of "
                             f"Discretization. Allowed values are: {_MODES}."
                             f" Received: output_mode={output_mode}")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"Both `num_bins` and `bin_boundaries` should "
                             f"not be set. Received: `num_bins={num_bins}` "
                             f"and `bin_boundaries={bin_boundaries}`")
        if bin_boundaries is None:
            raise NotImplementedError(
                "Discretization: tfmini learns no boundaries (num_bins with "
                "adapt()); give bin_boundaries")
        bounds = [float(b) for b in bin_boundaries]
        if bounds != sorted(bounds):
            raise ValueError(f"Discretization: bin_boundaries must be "
                             f"sorted; got {bin_boundaries}")
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.bin_boundaries = bounds
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = bool(sparse)
        self._keras_autocast = False
        self.built = True

    def call(self, inputs):
        x = tf.convert_to_tensor(inputs)
        if x.dtype != tf.float64:
            x = tf.cast(x, tf.float32)
        bounds = tf.constant(self.bin_boundaries, x.dtype)
        # How many boundaries each value reaches: its bucket.
        ids = tf.reduce_sum(tf.cast(tf.expand_dims(x, -1) >= bounds,
                                    tf.int32), axis=-1)
        if self.output_mode == "int":
            return ids
        out = _encode(ids, len(self.bin_boundaries) + 1, self.output_mode,
                      self.compute_dtype)
        return tf.sparse.from_dense(out) if self.sparse else out

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        depth = len(self.bin_boundaries) + 1
        if self.output_mode == "int":
            return shape
        if self.output_mode == "one_hot" and (not shape or shape[-1] != 1
                                              or len(shape) == 1):
            return shape + (depth,)
        return shape[:-1] + (depth,)

    def get_config(self):
        config = super().get_config()
        config.update(bin_boundaries=list(self.bin_boundaries),
                      num_bins=self.num_bins, epsilon=self.epsilon,
                      output_mode=self.output_mode, sparse=self.sparse)
        return config
