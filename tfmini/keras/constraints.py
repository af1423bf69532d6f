"""keras.constraints: projections applied to a weight after each update
(the optimizer calls variable.constraint)."""
import tfmini as tf


class Constraint:
    def __call__(self, w):
        return w

    def get_config(self):
        return {}


class NonNeg(Constraint):
    def __call__(self, w):
        return tf.nn.relu(w)


class MaxNorm(Constraint):
    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        norms = tf.sqrt(tf.reduce_sum(tf.square(w), axis=self.axis,
                                      keepdims=True))
        desired = tf.clip_by_value(norms, 0.0, float(self.max_value))
        return w * (desired / (1e-7 + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class UnitNorm(Constraint):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (1e-7 + tf.sqrt(tf.reduce_sum(tf.square(w),
                                                 axis=self.axis,
                                                 keepdims=True)))


non_neg, max_norm, unit_norm = NonNeg, MaxNorm, UnitNorm
_BY_NAME = {"non_neg": NonNeg, "max_norm": MaxNorm, "unit_norm": UnitNorm,
            "NonNeg": NonNeg, "MaxNorm": MaxNorm, "UnitNorm": UnitNorm}


def get(identifier):
    if identifier is None:
        return None
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]()
        except KeyError:
            raise ValueError(f"Unknown constraint: {identifier!r}") from None
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: "
                     f"{identifier!r}")
