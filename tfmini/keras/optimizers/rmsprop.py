"""keras.optimizers.RMSprop."""
import tfmini as tf

from .optimizer import Optimizer


class RMSprop(Optimizer):
    """s <- rho s + (1 - rho) g^2; step = lr g / sqrt(s + eps) (centered:
    s - mean_g^2 + eps); var <- var - step, or through a momentum slot."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0,
                 epsilon=1e-7, centered=False, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)

    _keras_slot_names = {"rms": "velocity", "mg": "average_gradient"}
    _default_name = "rmsprop"

    def _slot_specs(self, var):
        specs = [("rms", "zeros")]
        if self.momentum > 0:
            specs.append(("momentum", "zeros"))
        if self.centered:
            specs.append(("mg", "zeros"))
        return specs

    def update_step(self, gradient, variable, learning_rate):
        slots = self._slots[id(variable)]
        rms = slots["rms"]
        rms.assign(rms * self.rho + tf.square(gradient) * (1.0 - self.rho),
                   read_value=False)
        if self.centered:
            mg = slots["mg"]
            mg.assign(mg * self.rho + gradient * (1.0 - self.rho),
                      read_value=False)
            denom = rms - tf.square(mg) + self.epsilon
        else:
            denom = rms + self.epsilon
        increment = learning_rate * gradient / tf.sqrt(denom)
        if self.momentum > 0:
            mom = slots["momentum"]
            mom.assign(mom * self.momentum + increment, read_value=False)
            variable.assign_sub(mom, read_value=False)
        else:
            variable.assign_sub(increment, read_value=False)

    def get_config(self):
        config = super().get_config()
        config.update(rho=self.rho, momentum=self.momentum,
                      epsilon=self.epsilon, centered=self.centered)
        return config
