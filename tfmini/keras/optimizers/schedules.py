"""keras.optimizers.schedules: learning rates as functions of the step.

A schedule is called with the optimizer's step count (a tensor, so the
rate is computed by ops and follows the step inside a traced train
step without retracing)."""
import math

import tfmini as tf


class LearningRateSchedule:
    def __call__(self, step):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _step(step):
    return tf.cast(step, tf.float32)


def _check_steps(value, what):
    """Refuses a step count that is not > 0 (Keras' message)."""
    if value <= 0:
        raise ValueError(f"Argument `{what}` must be > 0. "
                         f"Received: {what}={value}")


class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ** (step / decay_steps), the
    exponent floored when staircase."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate,
                 staircase=False, name="ExponentialDecay"):
        _check_steps(decay_steps, "decay_steps")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = float(decay_steps)
        self.decay_rate = float(decay_rate)
        self.staircase = bool(staircase)
        self.name = name

    def __call__(self, step):
        p = _step(step) / self.decay_steps
        if self.staircase:
            p = tf.floor(p)
        return self.initial_learning_rate * tf.pow(
            tf.constant(self.decay_rate), p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase,
                "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate,
                 staircase=False, name="InverseTimeDecay"):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = float(decay_steps)
        self.decay_rate = float(decay_rate)
        self.staircase = bool(staircase)
        self.name = name

    def __call__(self, step):
        p = _step(step) / self.decay_steps
        if self.staircase:
            p = tf.floor(p)
        return self.initial_learning_rate / (1.0 + self.decay_rate * p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase,
                "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[i] while boundaries[i-1] < step <= boundaries[i]."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(values) != len(boundaries) + 1:
            raise ValueError("The length of boundaries should be 1 less "
                             "than the length of values")
        self.boundaries = [float(b) for b in boundaries]
        self.values = [float(v) for v in values]
        self.name = name

    def __call__(self, step):
        s = _step(step)
        out = tf.constant(self.values[-1])
        for b, v in reversed(list(zip(self.boundaries, self.values[:-1]))):
            out = tf.where(s <= b, tf.constant(v), out)
        return out

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values,
                "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine from initial_learning_rate down to alpha times it over
    decay_steps. With warmup_target, first a linear ramp from
    initial_learning_rate to warmup_target over warmup_steps, then the
    cosine from warmup_target (Keras 3: without warmup_target,
    warmup_steps is ignored)."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0,
                 name="CosineDecay", warmup_target=None, warmup_steps=0):
        _check_steps(decay_steps, "decay_steps")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.alpha = float(alpha)
        self.name = name
        self.warmup_target = (None if warmup_target is None
                              else float(warmup_target))
        self.warmup_steps = warmup_steps

    def _cosine(self, s, top):
        frac = s / float(self.decay_steps)
        cosine = 0.5 * (1.0 + tf.cos(math.pi * frac))
        return top * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        s = _step(step)
        d = float(self.decay_steps)
        if self.warmup_target is None:
            return self._cosine(tf.minimum(s, d), self.initial_learning_rate)
        w = float(self.warmup_steps)
        s = tf.minimum(s, d + w)
        top = self.warmup_target
        decayed = self._cosine(tf.maximum(s - w, 0.0), top)
        if w <= 0:
            return decayed
        warm = self.initial_learning_rate + (
            top - self.initial_learning_rate) * (s / w)
        return tf.where(s < w, warm, decayed)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha,
                "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """SGDR (Loshchilov & Hutter): cosine periods, the i-th t_mul^i times
    first_decay_steps long and m_mul^i times as high."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0,
                 m_mul=1.0, alpha=0.0, name="SGDRDecay"):
        _check_steps(first_decay_steps, "first_decay_steps")
        self.initial_learning_rate = float(initial_learning_rate)
        self.first_decay_steps = first_decay_steps
        self._t_mul = float(t_mul)
        self._m_mul = float(m_mul)
        self.alpha = float(alpha)
        self.name = name

    def __call__(self, step):
        frac = _step(step) / float(self.first_decay_steps)
        t_mul = self._t_mul
        if t_mul == 1.0:
            i = tf.floor(frac)
            frac = frac - i
        else:
            # The period index from the geometric sum of period lengths.
            i = tf.floor(tf.math.log(1.0 - frac * (1.0 - t_mul)) /
                         math.log(t_mul))
            before = (1.0 - tf.pow(tf.constant(t_mul), i)) / (1.0 - t_mul)
            frac = (frac - before) / tf.pow(tf.constant(t_mul), i)
        m_fac = tf.pow(tf.constant(self._m_mul), i)
        cosine = 0.5 * m_fac * (1.0 + tf.cos(math.pi * frac))
        return self.initial_learning_rate * (
            (1.0 - self.alpha) * cosine + self.alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps,
                "t_mul": self._t_mul, "m_mul": self._m_mul,
                "alpha": self.alpha, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) (1 - step / decay_steps)^power + end, the step
    capped at decay_steps; with cycle, decay_steps grows to the first
    multiple of itself not below the step."""

    def __init__(self, initial_learning_rate, decay_steps,
                 end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        _check_steps(decay_steps, "decay_steps")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.cycle = bool(cycle)
        self.name = name

    def __call__(self, step):
        s = _step(step)
        d = tf.constant(float(self.decay_steps))
        if self.cycle:
            mult = tf.where(tf.equal(s, 0.0), tf.constant(1.0),
                            tf.math.ceil(s / d))
            d = d * mult
        else:
            s = tf.minimum(s, d)
        p = s / d
        return ((self.initial_learning_rate - self.end_learning_rate) *
                tf.pow(1.0 - p, self.power) + self.end_learning_rate)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


def serialize(schedule):
    """Keras 3's form: {'module', 'class_name', 'config',
    'registered_name'}."""
    return {"module": "keras.optimizers.schedules",
            "class_name": type(schedule).__name__,
            "config": schedule.get_config(), "registered_name": None}


_BY_NAME = {c.__name__: c for c in (
    ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay, CosineDecay,
    CosineDecayRestarts, PolynomialDecay)}


def deserialize(config, custom_objects=None):
    known = dict(_BY_NAME)
    known.update(custom_objects or {})
    name = config.get("class_name")
    if name not in known:
        raise ValueError(f"Unknown learning rate schedule: {name!r}. "
                         f"Known: {sorted(known)}")
    return known[name].from_config(config["config"])
