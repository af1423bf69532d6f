"""keras.optimizers.Lion (Chen et al. 2023, 'Symbolic Discovery of
Optimization Algorithms')."""
import tfmini as tf

from .optimizer import Optimizer


class Lion(Optimizer):
    """var <- var - lr sign(b1 m + (1 - b1) g); then
    m <- b2 m + (1 - b2) g."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99,
                 name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError(f"Argument `beta_1` must be in the [0, 1] "
                             f"range. Otherwise, the optimizer degenerates "
                             f"to SignSGD. Received: beta_1={beta_1}.")
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)

    def _slot_specs(self, var):
        return [("momentum", "zeros")]

    def update_step(self, gradient, variable, learning_rate):
        m = self.get_slot(variable, "momentum")
        direction = tf.sign(m * self.beta_1 + gradient * (1.0 - self.beta_1))
        variable.assign_sub(learning_rate * direction, read_value=False)
        m.assign(m * self.beta_2 + gradient * (1.0 - self.beta_2),
                 read_value=False)

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2)
        return config
