"""keras.optimizers.Adagrad."""
import tfmini as tf

from .optimizer import Optimizer


class Adagrad(Optimizer):
    """acc <- acc + g^2; var <- var - lr g / sqrt(acc + eps), the
    accumulator starting at initial_accumulator_value (Keras 3)."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1,
                 epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def _slot_specs(self, var):
        init = self.initial_accumulator_value
        return [("accumulator",
                 lambda shape, dtype: tf.fill(shape, tf.cast(init, dtype)))]

    def update_step(self, gradient, variable, learning_rate):
        acc = self.get_slot(variable, "accumulator")
        acc.assign_add(tf.square(gradient), read_value=False)
        variable.assign_sub(learning_rate * gradient /
                            tf.sqrt(acc + self.epsilon), read_value=False)

    def get_config(self):
        config = super().get_config()
        config.update(initial_accumulator_value=self.initial_accumulator_value,
                      epsilon=self.epsilon)
        return config
