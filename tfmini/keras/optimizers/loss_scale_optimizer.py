"""LossScaleOptimizer: dynamic loss scaling around another optimizer.

float16 gradients underflow to zero below ~6e-8, so the loss is
multiplied by a large scale before differentiating and the gradients
are divided by it before the update. The scale adapts as in TF and
Keras 3: a step whose gradients hold an inf or NaN is skipped (no
variable, slot or iteration changes) and halves the scale; after
`dynamic_growth_steps` finite steps in a row the scale doubles.

The skip is a tf.cond, so a traced train step keeps it as graph control
flow rather than deciding once at trace time.

Two ways to use it in a custom loop:
- Keras 3: grads of `opt.scale_loss(loss)`, then `apply_gradients`
  (which unscales);
- TF 2: grads of `opt.get_scaled_loss(loss)`, then
  `opt.get_unscaled_gradients(grads)`, then `apply_gradients` (which then
  must not unscale again: get_unscaled_gradients tells the next
  apply_gradients so).
"""
import tfmini as tf

from .. import backend
from ..variables import KerasVariable
from .optimizer import Optimizer


class LossScaleOptimizer(Optimizer):
    """Wraps `inner_optimizer` with dynamic loss scaling."""

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15,
                 dynamic_growth_steps=2000, name=None, dynamic=True,
                 **kwargs):
        if not dynamic:
            raise ValueError("LossScaleOptimizer no longer supports "
                             "`dynamic=False`: set the scale yourself by "
                             "scaling the loss")
        if "initial_dynamic_scale" in kwargs:       # TF 2.x's name
            initial_scale = kwargs.pop("initial_dynamic_scale")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer does not support "
                             f"arguments: {sorted(kwargs)}")
        from . import get
        inner = get(inner_optimizer)
        if isinstance(inner, LossScaleOptimizer):
            raise ValueError("LossScaleOptimizer cannot wrap another "
                             "LossScaleOptimizer")
        initial_scale = float(initial_scale)
        if not initial_scale > 0 or initial_scale == float("inf"):
            raise ValueError(f"initial_scale must be a positive finite "
                             f"number, got {initial_scale}")
        dynamic_growth_steps = int(dynamic_growth_steps)
        if dynamic_growth_steps < 1:
            raise ValueError(f"dynamic_growth_steps must be >= 1, got "
                             f"{dynamic_growth_steps}")
        super().__init__(learning_rate=0.0,
                         name=name or backend.unique_object_name(
                             "loss_scale_optimizer"))
        self.inner_optimizer = inner
        self.initial_scale = initial_scale
        self.dynamic_growth_steps = dynamic_growth_steps
        with backend.init_scope():
            self.step_counter = KerasVariable(
                0, path=f"{self.name}/step_counter", dtype=tf.int64,
                trainable=False)
            self.dynamic_scale = KerasVariable(
                initial_scale, path=f"{self.name}/dynamic_scale",
                dtype=tf.float32, trainable=False)
        self._grads_unscaled = False

    # ---- what the wrapper forwards ------------------------------------
    def _trackable_children(self):
        return [(("step_counter",), self.step_counter),
                (("dynamic_scale",), self.dynamic_scale),
                (("inner_optimizer",), self.inner_optimizer)]

    @property
    def variables(self):
        return [self.step_counter, self.dynamic_scale] + \
            list(self.inner_optimizer.variables)

    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if "inner_optimizer" not in self.__dict__:
            return          # Optimizer.__init__'s placeholder rate
        self.inner_optimizer.learning_rate = value

    lr = learning_rate

    @property
    def loss_scale(self):
        """The current scale (TF 2's name)."""
        return self.dynamic_scale

    @property
    def dynamic(self):
        return True

    def build(self, var_list):
        self.inner_optimizer.build(var_list)
        self.built = True

    def get_slot(self, var, slot_name):
        return self.inner_optimizer.get_slot(var, slot_name)

    def get_slot_names(self):
        return self.inner_optimizer.get_slot_names()

    # ---- scaling ------------------------------------------------------
    def scale_loss(self, loss):
        """loss times the current scale (in the loss's dtype)."""
        loss = tf.convert_to_tensor(loss)
        return loss * tf.cast(self.dynamic_scale, loss.dtype)

    get_scaled_loss = scale_loss

    def get_unscaled_gradients(self, grads):
        """The gradients divided by the scale; the next apply_gradients
        then applies them as they are (TF 2's protocol)."""
        self._grads_unscaled = True
        return [None if g is None else
                g / tf.cast(self.dynamic_scale, g.dtype) for g in grads]

    def _finite(self, grads):
        checks = [tf.reduce_all(tf.math.is_finite(g)) for g in grads]
        return checks[0] if len(checks) == 1 else \
            tf.reduce_all(tf.stack(checks))

    # ---- applying -----------------------------------------------------
    def apply_gradients(self, grads_and_vars, name=None,
                        skip_gradients_aggregation=False, **kwargs):
        """Unscale (unless get_unscaled_gradients did) and apply the
        gradients if all are finite; else skip the step and halve the
        scale. Returns the inner optimizer's step count."""
        pairs = list(grads_and_vars)
        unscaled, self._grads_unscaled = self._grads_unscaled, False
        kept = [(g, v) for g, v in pairs if g is not None]
        if not kept:
            # The inner optimizer raises its error naming the variables.
            return self.inner_optimizer.apply_gradients(pairs)
        # Slots first, eagerly: the branches below only update them.
        self.inner_optimizer.build([v for _, v in kept])
        finite = self._finite([g for g, _ in kept])

        def apply_step():
            if unscaled:
                grads = [g for g, _ in pairs]
            else:
                grads = [None if g is None else
                         g / tf.cast(self.dynamic_scale, g.dtype)
                         for g, _ in pairs]
            self.inner_optimizer.apply_gradients(
                zip(grads, [v for _, v in pairs]))
            tf.cond(tf.equal(self.step_counter,
                             self.dynamic_growth_steps - 1),
                    self._grow, self._count)

        tf.cond(finite, apply_step, self._shrink)
        return self.iterations

    def _grow(self):
        self.step_counter.assign(0, read_value=False)
        self.dynamic_scale.assign(self.dynamic_scale * 2.0,
                                  read_value=False)

    def _count(self):
        self.step_counter.assign_add(1, read_value=False)

    def _shrink(self):
        self.step_counter.assign(0, read_value=False)
        self.dynamic_scale.assign(self.dynamic_scale / 2.0,
                                  read_value=False)

    def minimize(self, loss, var_list, tape=None):
        """Scale the loss, differentiate, unscale and apply."""
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        if callable(loss):
            with tf.GradientTape() as t:
                scaled = self.scale_loss(loss())
            grads = t.gradient(scaled, var_list)
        else:
            if tape is None:
                raise ValueError("`tape` is required when a `Tensor` loss "
                                 "is passed.")
            # The tape recorded the unscaled loss: its gradients need
            # only the finiteness check.
            grads = tape.gradient(loss, var_list)
            self._grads_unscaled = True
        return self.apply_gradients(zip(grads, var_list))

    def get_config(self):
        inner = self.inner_optimizer
        return {"name": self.name,
                "inner_optimizer": {"class_name": type(inner).__name__,
                                    "config": inner.get_config()},
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from . import _BY_NAME
        config = dict(config)
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            known = {c.__name__: c for c in _BY_NAME.values()}
            known.update(custom_objects or {})
            klass = known[inner["class_name"]]
            inner = klass.from_config(inner["config"])
        return cls(inner, **config)
