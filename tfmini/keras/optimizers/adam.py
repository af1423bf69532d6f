"""keras.optimizers.Adam and AdamW."""
import tfmini as tf

from .optimizer import Optimizer


class _AdamFamily(Optimizer):
    """beta_1, beta_2, epsilon and the moment updates shared by Adam,
    Adamax and Nadam."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def _first_moment(self, m, g):
        """m <- m + (g - m)(1 - b1)."""
        m.assign_add((g - m) * (1.0 - self.beta_1), read_value=False)

    def _second_moment(self, v, g):
        """v <- v + (g^2 - v)(1 - b2)."""
        v.assign_add((tf.square(g) - v) * (1.0 - self.beta_2),
                     read_value=False)

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2,
                      epsilon=self.epsilon)
        return config


class Adam(_AdamFamily):
    """m <- m + (g - m)(1 - b1); v <- v + (g^2 - v)(1 - b2);
    var <- var - lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps),
    t the 1-based step (Keras' form: epsilon is 'epsilon hat')."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, name=name, **kwargs)
        self.amsgrad = bool(amsgrad)

    _keras_slot_names = {"m": "momentum", "v": "velocity",
                         "vhat": "velocity_hat"}

    def _slot_specs(self, var):
        specs = [("m", "zeros"), ("v", "zeros")]
        if self.amsgrad:
            specs.append(("vhat", "zeros"))
        return specs

    def _prepare_step(self, lr):
        t = tf.cast(self._iterations + 1, tf.float32)
        b1_power = tf.pow(tf.constant(self.beta_1), t)
        b2_power = tf.pow(tf.constant(self.beta_2), t)
        alpha = lr * tf.sqrt(1.0 - b2_power) / (1.0 - b1_power)
        return {"lr": lr, "alpha": alpha}

    def _update(self, gradient, variable, coef):
        if type(self).update_step is not Adam.update_step:
            return super()._update(gradient, variable, coef)
        alpha = coef["alpha"]
        if alpha.dtype != variable.dtype:
            alpha = tf.cast(alpha, variable.dtype)
        self._adam(gradient, variable, alpha)

    def update_step(self, gradient, variable, learning_rate):
        t = tf.cast(self._iterations + 1, variable.dtype)
        b1_power = tf.pow(tf.cast(self.beta_1, variable.dtype), t)
        b2_power = tf.pow(tf.cast(self.beta_2, variable.dtype), t)
        alpha = learning_rate * tf.sqrt(1.0 - b2_power) / (1.0 - b1_power)
        self._adam(gradient, variable, alpha)

    def _adam(self, g, var, alpha):
        slots = self._slots[id(var)]
        m, v = slots["m"], slots["v"]
        self._first_moment(m, g)
        self._second_moment(v, g)
        if self.amsgrad:
            vhat = slots["vhat"]
            vhat.assign(tf.maximum(vhat, v), read_value=False)
            v = vhat
        var.assign_sub(m * alpha / (tf.sqrt(v) + self.epsilon),
                       read_value=False)

    def get_config(self):
        config = super().get_config()
        config.update(amsgrad=self.amsgrad)
        return config


class AdamW(Adam):
    """Adam with decoupled weight decay: before each update,
    var <- var - lr * weight_decay * var."""

    _default_name = "adamw"

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-7, amsgrad=False, name=None,
                 **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. "
                             "Received: weight_decay=None")
        super().__init__(learning_rate=learning_rate, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, amsgrad=amsgrad,
                         name=name, weight_decay=weight_decay, **kwargs)
