"""keras.optimizers.Optimizer: the base of SGD, Adam, AdamW, RMSprop.

State lives in tf.Variables: the step count (`iterations`), the learning
rate (unless it is a schedule, then computed from `iterations`), and the
per-variable slots (momentum, velocity, ...). Slots are created on the
first apply_gradients that sees a variable, inside tf.init_scope, so a
first call inside a traced train step creates them eagerly and the
graph captures them (no second trace). Every update is an
assign/assign_add/assign_sub, i.e. an op in the graph when traced.
"""
import logging

import tfmini as tf
from tfmini import trace_frames as _trace_frames
from tfmini import trackable as _tracking

from .. import backend
from .schedules import LearningRateSchedule
from ..variables import KerasVariable

_logger = logging.getLogger("tfmini")


def _var_key(v):
    return id(v)


class Optimizer(_tracking.Trackable):
    # Slot key (get_slot) -> the slot's name in Keras 3, where different.
    _keras_slot_names = {}
    # Keras 3's default name where snake_case of the class name is not
    # it ('rmsprop', not 'rm_sprop').
    _default_name = None

    # ---- the trackable protocol (tfmini/trackable.py) ----------------
    _defers_restore = True

    def _trackable_children(self):
        """Keras 3's keys: `_iterations`, `_learning_rate` (a variable
        learning rate) and `_variables/i` indexing self.variables."""
        out = [(("_iterations",), self._iterations)]
        if self._lr_var is not None:
            out.append((("_learning_rate",), self._lr_var))
        for i, v in enumerate(self.variables):
            if i >= 2 or (i == 1 and self._lr_var is None):
                out.append((("_variables", str(i)), v))
        return out

    def __init__(self, learning_rate=0.001, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None,
                 loss_scale_factor=None, gradient_accumulation_steps=None,
                 name=None, **kwargs):
        if "lr" in kwargs:
            learning_rate = kwargs.pop("lr")
        kwargs.pop("jit_compile", None)
        if kwargs.pop("decay", None):
            raise ValueError("`decay` is deprecated in Keras optimizers; "
                             "use a keras.optimizers.schedules schedule "
                             "as the learning_rate")
        if kwargs:
            raise TypeError(f"Argument(s) not recognized: {kwargs}")
        if use_ema:
            raise NotImplementedError("tfmini optimizers do not support "
                                      "use_ema")
        # Accepted by Keras 3; refused rather than ignored, since training
        # would silently differ.
        for arg, value in (("loss_scale_factor", loss_scale_factor),
                           ("gradient_accumulation_steps",
                            gradient_accumulation_steps)):
            if value is not None:
                raise NotImplementedError(f"tfmini optimizers do not "
                                          f"support {arg}={value!r}")
        if sum(c is not None for c in (clipnorm, clipvalue,
                                       global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and "
                             "`global_clipnorm` can be set. Received: "
                             f"clipnorm={clipnorm}, clipvalue={clipvalue}, "
                             f"global_clipnorm={global_clipnorm}")
        # Keras 3: 'sgd', then 'sgd_1', ... (the variables' path prefix).
        self.name = name or backend.unique_object_name(
            self._default_name or
            backend.to_snake_case(type(self).__name__))
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        self._exclude_names = ()
        self._exclude_ids = set()
        self._slots = {}          # id(var) -> {slot name: Variable}
        self._slot_owners = []    # keeps the ids above valid
        self._slot_list = []      # creation order, for .variables
        with backend.init_scope():
            self._iterations = KerasVariable(0, path=f"{self.name}/iteration",
                                             dtype=tf.int64, trainable=False)
            self._schedule = None
            self._lr_var = None
            self._set_lr(learning_rate)
        self.built = False

    # ---- learning rate ----------------------------------------------
    def _set_lr(self, value):
        if isinstance(value, LearningRateSchedule):
            self._schedule = value
            return
        if callable(value) and not isinstance(value, tf.Tensor) and \
                not backend.is_variable(value):
            self._schedule = lambda step, fn=value: fn()
            return
        value = float(value)
        if self._lr_var is None:
            with backend.init_scope():
                self._lr_var = KerasVariable(
                    value, path=f"{self.name}/learning_rate", dtype=tf.float32,
                    trainable=False)
        else:
            self._lr_var.assign(value, read_value=False)

    @property
    def learning_rate(self):
        """The learning rate: a variable, or the schedule's current
        value."""
        if self._schedule is not None:
            return self._schedule(self._iterations)
        return self._lr_var

    @learning_rate.setter
    def learning_rate(self, value):
        if self._schedule is not None or \
                isinstance(value, LearningRateSchedule):
            if self.built:
                raise TypeError(
                    "This optimizer's learning rate cannot change between "
                    "a fixed value and a `LearningRateSchedule` after it "
                    "has been used: traced train steps read the old one. "
                    "Create a new optimizer.")
            self._schedule = None
            if isinstance(value, LearningRateSchedule):
                self._schedule = value
                return
        self._set_lr(value)

    lr = learning_rate

    def _current_lr(self):
        if self._schedule is not None:
            return tf.cast(self._schedule(self._iterations), tf.float32)
        return self._lr_var.read_value()

    @property
    def iterations(self):
        return self._iterations

    # ---- slots ------------------------------------------------------
    def add_variable_from_reference(self, reference_variable, name,
                                    initializer="zeros"):
        v = reference_variable
        base = getattr(v, "path", None) or v.name
        base = base[:-2] if base.endswith(":0") else base
        # Keras 3's slot names ('dense_kernel_momentum'); get_slot keeps
        # tfmini's short keys.
        name = self._keras_slot_names.get(name, name)
        _trace_frames._refuse_variable_on_retrace()
        with backend.init_scope():
            if initializer == "zeros":
                value = tf.zeros(tuple(v.shape), v.dtype)
            elif callable(initializer):
                value = initializer(tuple(v.shape), v.dtype)
            else:
                from .. import initializers
                value = initializers.get(initializer)(tuple(v.shape),
                                                      v.dtype)
            slot = KerasVariable(
                value, path=f"{self.name}/{base.replace('/', '_')}_{name}",
                trainable=False)
        self._slot_list.append(slot)
        if _tracking.PENDING in self.__dict__:
            # A tf.train.Checkpoint restored before the slots existed.
            self._restore_deferred("_variables", self.variables)
        return slot

    def get_slot(self, var, slot_name):
        return self._slots[_var_key(var)][slot_name]

    def get_slot_names(self):
        names = []
        for slots in self._slots.values():
            for n in slots:
                if n not in names:
                    names.append(n)
        return names

    def build(self, var_list):
        """Create the slots of the variables not seen before."""
        for v in var_list:
            key = _var_key(v)
            if key in self._slots:
                continue
            self._slots[key] = {
                n: self.add_variable_from_reference(v, n, init)
                for n, init in self._slot_specs(v)}
            self._slot_owners.append(v)
        self.built = True

    def _slot_specs(self, var):
        """[(slot name, initializer)] for var."""
        return []

    @property
    def variables(self):
        out = [self._iterations]
        if self._lr_var is not None:
            out.append(self._lr_var)
        return out + list(self._slot_list)

    # ---- applying gradients -----------------------------------------
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        self._exclude_ids.update(id(v) for v in var_list or ())
        self._exclude_names = tuple(var_names or ())

    def _decays(self, v):
        if id(v) in self._exclude_ids:
            return False
        return not any(n in v.name for n in self._exclude_names)

    def _clip(self, grads):
        if self.clipvalue is not None:
            c = float(self.clipvalue)
            return [tf.clip_by_value(g, -c, c) for g in grads]
        if self.clipnorm is not None:
            c = float(self.clipnorm)
            out = []
            for g in grads:
                norm = tf.sqrt(tf.reduce_sum(tf.square(g)))
                out.append(g * (c / tf.maximum(norm, c)))
            return out
        if self.global_clipnorm is not None:
            c = float(self.global_clipnorm)
            total = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g))
                                      for g in grads])) \
                if hasattr(tf, "add_n") else \
                tf.sqrt(sum(tf.reduce_sum(tf.square(g)) for g in grads))
            scale = c / tf.maximum(total, c)
            return [g * scale for g in grads]
        return grads

    def apply_gradients(self, grads_and_vars, name=None,
                        skip_gradients_aggregation=False, **kwargs):
        """Apply one step: grads_and_vars is an iterable of (gradient,
        variable). Pairs with a None gradient are skipped (an error if
        all are None). Returns the step count variable."""
        pairs = list(grads_and_vars)
        from tfmini.distribute import updates as _dist
        if _dist.in_replica_update():
            # Under a strategy, on a replica: sum the replicas' gradients
            # and step once (tfmini/distribute/updates.py).
            return _dist.apply_gradients(self, pairs, name,
                                         skip_gradients_aggregation)
        kept = [(g, v) for g, v in pairs if g is not None]
        if not kept:
            raise ValueError(
                f"No gradients provided for any variable: "
                f"{[v.name for _, v in pairs]}. Provided `grads_and_vars` "
                f"is {tuple((g, v.name) for g, v in pairs)}.")
        if len(kept) < len(pairs):
            missing = [v.name for g, v in pairs if g is None]
            _logger.warning("Gradients do not exist for variables %s when "
                            "minimizing the loss. If you're using "
                            "`model.compile()`, did you forget to provide a "
                            "`loss` argument?", missing)
        grads = [g for g, _ in kept]
        variables = [v for _, v in kept]
        for v in variables:
            if not backend.is_variable(v):
                raise TypeError(f"apply_gradients expects tf.Variables, got "
                                f"{type(v).__name__}")
        self.build(variables)
        grads = self._clip(grads)
        lr = self._current_lr()
        if self.weight_decay:
            wd = lr * float(self.weight_decay)
            for v in variables:
                if self._decays(v):
                    v.assign_sub(v * tf.cast(wd, v.dtype), read_value=False)
        coef = self._prepare_step(lr)
        for g, v in zip(grads, variables):
            if g.dtype != v.dtype:
                g = tf.cast(g, v.dtype)
            self._update(g, v, coef)
        self._iterations.assign_add(1, read_value=False)
        for v in variables:
            if v.constraint is not None:
                v.assign(v.constraint(v), read_value=False)
        return self._iterations

    def _prepare_step(self, lr):
        """Values shared by all variables' updates in one step."""
        return {"lr": lr}

    def _update(self, gradient, variable, coef):
        lr = coef["lr"]
        if lr.dtype != variable.dtype:
            lr = tf.cast(lr, variable.dtype)
        self.update_step(gradient, variable, lr)

    def update_step(self, gradient, variable, learning_rate):
        raise NotImplementedError

    def minimize(self, loss, var_list, tape=None):
        """Compute the gradients of loss (a tensor, with the tape that
        recorded it, or a callable of no arguments) and apply them."""
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        if callable(loss):
            with tf.GradientTape() as t:
                value = loss()
            grads = t.gradient(value, var_list)
        else:
            if tape is None:
                raise ValueError("`tape` is required when a `Tensor` loss "
                                 "is passed. Received: loss=%s, tape=None."
                                 % (loss,))
            grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def get_config(self):
        if self._lr_var is not None:
            lr = self._lr_var.numpy().item()
        elif isinstance(self._schedule, LearningRateSchedule):
            from .schedules import serialize
            lr = serialize(self._schedule)
        else:
            lr = None
        return {"name": self.name, "learning_rate": lr,
                "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "clipvalue": self.clipvalue,
                "global_clipnorm": self.global_clipnorm}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            from .schedules import deserialize
            config["learning_rate"] = deserialize(config["learning_rate"],
                                                  custom_objects)
        return cls(**config)
