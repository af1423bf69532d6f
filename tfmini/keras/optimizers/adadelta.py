"""keras.optimizers.Adadelta."""
import tfmini as tf

from .optimizer import Optimizer


class Adadelta(Optimizer):
    """a <- rho a + (1 - rho) g^2; d = -sqrt(D + eps) g / sqrt(a + eps);
    D <- rho D + (1 - rho) d^2; var <- var + lr d (Keras 3 keeps the
    learning rate, 0.001 by default)."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7,
                 name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.rho = float(rho)
        self.epsilon = float(epsilon)

    def _slot_specs(self, var):
        return [("accumulated_grad", "zeros"),
                ("accumulated_delta_var", "zeros")]

    def update_step(self, gradient, variable, learning_rate):
        acc = self.get_slot(variable, "accumulated_grad")
        acc_d = self.get_slot(variable, "accumulated_delta_var")
        rho, eps = self.rho, self.epsilon
        acc.assign(acc * rho + tf.square(gradient) * (1.0 - rho),
                   read_value=False)
        delta = -tf.sqrt(acc_d + eps) * gradient / tf.sqrt(acc + eps)
        acc_d.assign(acc_d * rho + tf.square(delta) * (1.0 - rho),
                     read_value=False)
        variable.assign_add(learning_rate * delta, read_value=False)

    def get_config(self):
        config = super().get_config()
        config.update(rho=self.rho, epsilon=self.epsilon)
        return config
