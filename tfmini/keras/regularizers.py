"""keras.regularizers: penalties on weights, added to the training loss
(layer.losses) and recomputed from the weights' current values."""
import tfmini as tf


class Regularizer:
    def __call__(self, x):
        return 0.0

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        loss = None
        if self.l1:
            loss = self.l1 * tf.reduce_sum(tf.abs(x))
        if self.l2:
            term = self.l2 * tf.reduce_sum(tf.square(x))
            loss = term if loss is None else loss + term
        return loss if loss is not None else tf.constant(0.0, x.dtype)

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    def __init__(self, l1=0.01):
        super().__init__(l1=l1)

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    def __init__(self, l2=0.01):
        super().__init__(l2=l2)

    def get_config(self):
        return {"l2": self.l2}


l1, l2, l1_l2 = L1, L2, L1L2
_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": L1L2, "L1": L1, "L2": L2,
            "L1L2": L1L2}


def get(identifier):
    if identifier is None:
        return None
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]()
        except KeyError:
            raise ValueError(f"Unknown regularizer: {identifier!r}") from None
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: "
                     f"{identifier!r}")
