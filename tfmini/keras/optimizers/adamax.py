"""keras.optimizers.Adamax: Adam with the infinity norm."""
import tfmini as tf

from .adam import _AdamFamily


class Adamax(_AdamFamily):
    """m <- m + (g - m)(1 - b1); u <- max(b2 u, |g|);
    var <- var - lr m / ((1 - b1^t)(u + eps))."""

    _keras_slot_names = {"m": "momentum", "u": "norm"}

    def _slot_specs(self, var):
        return [("m", "zeros"), ("u", "zeros")]

    def update_step(self, gradient, variable, learning_rate):
        t = tf.cast(self._iterations + 1, variable.dtype)
        b1_power = tf.pow(tf.cast(self.beta_1, variable.dtype), t)
        m, u = self.get_slot(variable, "m"), self.get_slot(variable, "u")
        self._first_moment(m, gradient)
        u.assign(tf.maximum(u * self.beta_2, tf.abs(gradient)),
                 read_value=False)
        variable.assign_sub(learning_rate * m /
                            ((1.0 - b1_power) * (u + self.epsilon)),
                            read_value=False)
