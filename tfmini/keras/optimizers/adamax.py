"""keras.optimizers.Adamax: Adam with the infinity norm."""
import tfmini as tf

from .optimizer import Optimizer


class Adamax(Optimizer):
    """m <- m + (g - m)(1 - b1); u <- max(b2 u, |g|);
    var <- var - lr m / ((1 - b1^t)(u + eps))."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    _keras_slot_names = {"m": "momentum", "u": "norm"}

    def _slot_specs(self, var):
        return [("m", "zeros"), ("u", "zeros")]

    def update_step(self, gradient, variable, learning_rate):
        t = tf.cast(self._iterations + 1, variable.dtype)
        b1_power = tf.pow(tf.cast(self.beta_1, variable.dtype), t)
        m, u = self.get_slot(variable, "m"), self.get_slot(variable, "u")
        m.assign_add((gradient - m) * (1.0 - self.beta_1), read_value=False)
        u.assign(tf.maximum(u * self.beta_2, tf.abs(gradient)),
                 read_value=False)
        variable.assign_sub(learning_rate * m /
                            ((1.0 - b1_power) * (u + self.epsilon)),
                            read_value=False)

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2,
                      epsilon=self.epsilon)
        return config
