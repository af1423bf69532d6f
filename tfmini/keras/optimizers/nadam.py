"""keras.optimizers.Nadam: Adam with Nesterov momentum (Dozat 2015), in
Keras 3's form with its momentum cache."""
import tfmini as tf

from tfmini import trackable as _tracking

from .. import backend
from ..variables import KerasVariable
from .adam import _AdamFamily

# Keras 3's momentum schedule: u_t = beta_1 (1 - 0.5 * 0.96^t).
_DECAY = 0.96


class Nadam(_AdamFamily):
    """u_t = b1 (1 - 0.5 * 0.96^t); the cache U <- U u_t once per step;
    m, v as in Adam; m_hat = u_{t+1} m / (1 - U u_{t+1}) +
    (1 - u_t) g / (1 - U); v_hat = v / (1 - b2^t);
    var <- var - lr m_hat / (sqrt(v_hat) + eps)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, name=name, **kwargs)
        self._u_product = None

    _keras_slot_names = {"m": "momentum", "v": "velocity"}

    def _slot_specs(self, var):
        return [("m", "zeros"), ("v", "zeros")]

    def build(self, var_list):
        super().build(var_list)
        if self._u_product is None:
            # The product of all u_t so far: state, so it is a variable
            # (a traced step reads and updates it).
            with backend.init_scope():
                self._u_product = KerasVariable(
                    1.0, path=f"{self.name}/u_product", dtype=tf.float32,
                    trainable=False)
            if _tracking.PENDING in self.__dict__:
                # A checkpoint restored before build: the cache is the
                # last of `variables`, made after the slots took theirs.
                self._restore_deferred("_variables", self.variables)

    @property
    def variables(self):
        out = super().variables
        if self._u_product is not None:
            out.append(self._u_product)
        return out

    def _prepare_step(self, lr):
        t = tf.cast(self._iterations + 1, tf.float32)
        u_t = self.beta_1 * (1.0 - 0.5 * tf.pow(tf.constant(_DECAY), t))
        self._u_product.assign(self._u_product * u_t, read_value=False)
        return {"lr": lr}

    def update_step(self, gradient, variable, learning_rate):
        dt = variable.dtype
        t = tf.cast(self._iterations + 1, dt)
        decay = tf.cast(_DECAY, dt)
        u_t = self.beta_1 * (1.0 - 0.5 * tf.pow(decay, t))
        u_t_1 = self.beta_1 * (1.0 - 0.5 * tf.pow(decay, t + 1.0))
        u_prod = tf.cast(self._u_product.read_value(), dt)
        u_prod_1 = u_prod * u_t_1
        b2_power = tf.pow(tf.cast(self.beta_2, dt), t)
        m, v = self.get_slot(variable, "m"), self.get_slot(variable, "v")
        self._first_moment(m, gradient)
        self._second_moment(v, gradient)
        m_hat = (u_t_1 * m / (1.0 - u_prod_1) +
                 (1.0 - u_t) * gradient / (1.0 - u_prod))
        v_hat = v / (1.0 - b2_power)
        variable.assign_sub(m_hat * learning_rate /
                            (tf.sqrt(v_hat) + self.epsilon),
                            read_value=False)
