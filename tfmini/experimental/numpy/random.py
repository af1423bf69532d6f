"""tnp.random: NumPy's random functions over tf.random (float64 unless
prefer_float32, as tnp's other floats)."""
from ... import random as _random

__all__ = ["normal", "rand", "randint", "randn", "seed",
           "standard_normal", "uniform"]


def _float():
    from . import _default_float
    return _default_float()


def _size(size):
    if size is None:
        return []
    return [int(size)] if isinstance(size, int) else [int(d) for d in size]


def seed(s):
    _random.set_seed(int(s))


def randn(*args):
    return _random.normal(list(args), dtype=_float())


def standard_normal(size=None):
    return _random.normal(_size(size), dtype=_float())


def normal(loc=0.0, scale=1.0, size=None):
    return _random.normal(_size(size), loc, scale, dtype=_float())


def rand(*args):
    return _random.uniform(list(args), dtype=_float())


def uniform(low=0.0, high=1.0, size=None):
    return _random.uniform(_size(size), low, high, dtype=_float())


def randint(low, high=None, size=None, dtype=int):
    import numpy as np
    if high is None:
        low, high = 0, low
    dt = np.int64 if dtype is int else dtype
    return _random.uniform(_size(size), low, high, dtype=dt)
