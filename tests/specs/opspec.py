"""OpSpec: how to call one op from tfmini and from NumPy."""
import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
NUMERIC = FLOATS + INTS


def uniform(lo=-2.0, hi=2.0):
    """Inputs drawn uniformly from [lo, hi] (ints: rounded)."""
    def make(rng, shape, dtype):
        x = rng.uniform(lo, hi, size=shape)
        if np.dtype(dtype).kind in "iu":
            x = np.round(x)
        elif np.dtype(dtype).kind == "b":
            x = x > (lo + hi) / 2
        return x.astype(dtype)
    return make


def positive(lo=0.1, hi=3.0):
    return uniform(lo, hi)


def away_from_zero(lo=0.5, hi=2.0):
    """Magnitudes in [lo, hi] with random signs (for /, %, kinks)."""
    def make(rng, shape, dtype):
        x = rng.uniform(lo, hi, size=shape) * rng.choice([-1, 1], size=shape)
        if np.dtype(dtype).kind in "iu":
            x = np.where(x < 0, np.floor(x), np.ceil(x))
        return x.astype(dtype)
    return make


@dataclasses.dataclass
class OpSpec:
    """One op behaviour to test.

    fn(*tf_inputs) -> tfmini result; ref(*np_inputs) -> NumPy result (the
    oracle). shapes: a list of input-shape tuples, one tuple per case.
    inputs: one generator per input (default: uniform(-2, 2)).
    grad: indices of inputs to check gradients for (float dtypes only);
    () for non-differentiable ops.
    """
    name: str
    fn: Callable
    ref: Callable
    shapes: Sequence[tuple]
    dtypes: Sequence[str] = FLOATS
    inputs: Optional[Sequence[Callable]] = None
    grad: Sequence[int] = ()
    rtol: float = 1e-5
    atol: float = 1e-6
    ops: Sequence[str] = ()     # TF op names of the C table this covers
    second_order: bool = False  # also check the gradient of the gradient
    grad_rtol: float = 1e-3     # finite differences, float64
    grad_atol: float = 1e-4

    def make_inputs(self, rng, shapes, dtype):
        gens = self.inputs or [uniform()] * len(shapes)
        return [g(rng, s, dtype) for g, s in zip(gens, shapes)]
