"""keras.initializers: how a new weight is filled.

An initializer is called as init(shape, dtype) and returns a tensor.
Random ones seeded with an int draw as Keras 3 on TF does, so their
values are TF's: the stateless ops with seed [seed mod (2^31 - 2), 0]
(keras' draw_seed and _cast_seed). Unseeded ones draw from tf.random (a
fresh draw each call, reproducible under tf.random.set_seed)."""
import math

import numpy as np

import tfmini as tf

from . import backend


def _dtype(dtype):
    return tf.as_dtype(dtype or backend.floatx())


def _seeded(seed):
    """The stateless seed Keras 3 gives an int seed, or None."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return [int(seed) % (2**31 - 2), 0]
    return None


def _normal(shape, mean, stddev, dtype, seed):
    s = _seeded(seed)
    if s is not None:
        return tf.random.stateless_normal(shape, s, mean, stddev, dtype)
    return tf.random.normal(shape, mean, stddev, dtype=dtype, seed=seed)


def _truncated_normal(shape, mean, stddev, dtype, seed):
    s = _seeded(seed)
    if s is not None:
        return tf.random.stateless_truncated_normal(shape, s, mean, stddev,
                                                    dtype)
    return tf.random.truncated_normal(shape, mean, stddev, dtype=dtype,
                                      seed=seed)


def _uniform(shape, minval, maxval, dtype, seed):
    s = _seeded(seed)
    if s is not None:
        return tf.random.stateless_uniform(shape, s, minval, maxval, dtype)
    return tf.random.uniform(shape, minval, maxval, dtype=dtype, seed=seed)


def _fans(shape):
    """(fan_in, fan_out) as Keras computes them: a kernel (..., in, out)
    counts its receptive field (the leading dims) in both."""
    shape = tuple(int(d) for d in shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = 1
    for d in shape[:-2]:
        receptive *= d
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class: subclasses implement __call__(shape, dtype=None)."""

    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Zeros(Initializer):
    def __call__(self, shape, dtype=None, **kwargs):
        return tf.zeros(shape, dtype=_dtype(dtype))


class Ones(Initializer):
    def __call__(self, shape, dtype=None, **kwargs):
        return tf.ones(shape, dtype=_dtype(dtype))


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        return tf.fill(shape, tf.cast(self.value, _dtype(dtype)))

    def get_config(self):
        return {"value": self.value}


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        return _normal(shape, self.mean, self.stddev, _dtype(dtype),
                       self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, **kwargs):
        return _uniform(shape, self.minval, self.maxval, _dtype(dtype),
                        self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval,
                "seed": self.seed}


class TruncatedNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        return _truncated_normal(shape, self.mean, self.stddev,
                                 _dtype(dtype), self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class VarianceScaling(Initializer):
    """Samples with variance scale / n, n = fan_in, fan_out or their
    mean; 'truncated_normal' divides the stddev by 0.8796... (the stddev
    of a unit normal truncated at two standard deviations)."""

    def __init__(self, scale=1.0, mode="fan_in",
                 distribution="truncated_normal", seed=None):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be positive float. "
                             f"Received: scale={scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode!r}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal",
                                "uniform"):
            raise ValueError(f"Invalid `distribution` argument: "
                             f"{distribution!r}")
        self.scale, self.mode = scale, mode
        self.distribution, self.seed = distribution, seed

    def __call__(self, shape, dtype=None, **kwargs):
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out,
             "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        variance = self.scale / max(1.0, n)
        dt = _dtype(dtype)
        if self.distribution == "truncated_normal":
            stddev = math.sqrt(variance) / 0.87962566103423978
            return _truncated_normal(shape, 0.0, stddev, dt, self.seed)
        if self.distribution == "untruncated_normal":
            return _normal(shape, 0.0, math.sqrt(variance), dt, self.seed)
        limit = math.sqrt(3.0 * variance)
        return _uniform(shape, -limit, limit, dt, self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode,
                "distribution": self.distribution, "seed": self.seed}


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times gain: the QR factor of a normal
    draw, its columns' signs fixed by R's diagonal so the result is
    uniform over orthogonal matrices. Shapes of rank > 2 are flattened to
    (prod(shape[:-1]), shape[-1]). The QR runs on the host with NumPy
    (an initializer runs once per weight)."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, **kwargs):
        shape = tuple(int(d) for d in shape)
        if len(shape) < 2:
            raise ValueError(f"The tensor to initialize must be at least "
                             f"two-dimensional. Received: shape={shape} of "
                             f"rank {len(shape)}.")
        rows = int(np.prod(shape[:-1]))
        cols = shape[-1]
        flat = (max(rows, cols), min(rows, cols))
        a = _normal(flat, 0.0, 1.0, tf.float32, self.seed).numpy()
        q, r = np.linalg.qr(a.astype(np.float64))
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        q = (self.gain * q).reshape(shape)
        return tf.constant(q.astype(_dtype(dtype).as_numpy_dtype))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        shape = tuple(int(d) for d in shape)
        if len(shape) != 2:
            raise ValueError(f"Identity matrix initializer can only be used "
                             f"for 2D matrices. Received: shape={shape}")
        return tf.constant((self.gain * np.eye(*shape)).astype(
            _dtype(dtype).as_numpy_dtype))

    def get_config(self):
        return {"gain": self.gain}


def _scaling(name, scale, mode, distribution):
    def __init__(self, seed=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    def get_config(self):
        return {"seed": self.seed}
    return type(name, (VarianceScaling,),
                {"__init__": __init__, "get_config": get_config,
                 "__doc__": f"VarianceScaling(scale={scale}, mode={mode!r}, "
                            f"distribution={distribution!r})."})


GlorotUniform = _scaling("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _scaling("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
HeUniform = _scaling("HeUniform", 2.0, "fan_in", "uniform")
HeNormal = _scaling("HeNormal", 2.0, "fan_in", "truncated_normal")
LecunUniform = _scaling("LecunUniform", 1.0, "fan_in", "uniform")
LecunNormal = _scaling("LecunNormal", 1.0, "fan_in", "truncated_normal")

_BY_NAME = {
    "zeros": Zeros, "ones": Ones, "constant": Constant,
    "random_normal": RandomNormal, "random_uniform": RandomUniform,
    "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
    "he_uniform": HeUniform, "he_normal": HeNormal,
    "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal,
    "orthogonal": Orthogonal, "identity": Identity,
}
for _cls in list(_BY_NAME.values()):
    _BY_NAME[_cls.__name__] = _cls
del _cls

# Keras' lower-case aliases.
zeros, ones, constant = Zeros, Ones, Constant
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
he_uniform, he_normal = HeUniform, HeNormal
orthogonal = Orthogonal


def serialize(initializer):
    """{'class_name', 'config'} of an Initializer (get() reads it back);
    a plain callable comes back as it is."""
    if initializer is None:
        return None
    if isinstance(initializer, Initializer):
        return {"module": "keras.initializers",
                "class_name": type(initializer).__name__,
                "config": initializer.get_config()}
    return initializer


def get(identifier):
    """An initializer from a name, a class, an instance or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]()
        except KeyError:
            raise ValueError(f"Unknown initializer: {identifier!r}. Known: "
                             f"{sorted(k for k in _BY_NAME if k.islower())}"
                             ) from None
    if isinstance(identifier, dict) and "class_name" in identifier:
        cls = _BY_NAME.get(identifier["class_name"])
        if cls is None:
            raise ValueError(f"Unknown initializer: "
                             f"{identifier['class_name']!r}")
        return cls.from_config(dict(identifier.get("config") or {}))
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: "
                     f"{identifier!r}")
