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


class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ** (step / decay_steps), the
    exponent floored when staircase."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate,
                 staircase=False, name="ExponentialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. "
                             f"Received: decay_steps={decay_steps}")
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


class CosineDecay(LearningRateSchedule):
    """Cosine from initial_learning_rate down to alpha times it over
    decay_steps (after an optional linear warmup)."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0,
                 name="CosineDecay", warmup_target=None, warmup_steps=0):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = float(decay_steps)
        self.alpha = float(alpha)
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = float(warmup_steps)

    def __call__(self, step):
        s = _step(step)
        top = (self.initial_learning_rate if self.warmup_target is None
               else float(self.warmup_target))
        t = tf.minimum(tf.maximum(s - self.warmup_steps, 0.0),
                       self.decay_steps) / self.decay_steps
        cosine = 0.5 * (1.0 + tf.cos(math.pi * t))
        decayed = top * ((1.0 - self.alpha) * cosine + self.alpha)
        if self.warmup_steps > 0:
            warm = self.initial_learning_rate + (
                top - self.initial_learning_rate) * s / self.warmup_steps
            decayed = tf.where(s < self.warmup_steps, warm, decayed)
        return decayed


def serialize(schedule):
    return {"class_name": type(schedule).__name__,
            "config": schedule.get_config()}


def deserialize(config):
    cls = {c.__name__: c for c in (ExponentialDecay, InverseTimeDecay,
                                   PiecewiseConstantDecay, CosineDecay)}
    return cls[config["class_name"]].from_config(config["config"])
