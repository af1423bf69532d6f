"""tf.random: seeded sampling over the C random ops (csrc/ops/ops_random.def).

Seeds follow TF's rules (tf.random.set_seed's documentation):
  - global seed set, op seed not: the op seed comes from a generator that
    set_seed resets, so the same program gives the same numbers;
  - op seed only: a fixed default global seed is used, also deterministic;
  - neither: fresh random seeds on every call.
Each (seed, op seed) pair is a stream; its calls are counted here, so two
calls with the same seeds differ, and set_seed (which resets the counts)
replays them. See Note [Random streams] in csrc/kernels/cpu/random.c for
what the kernels do with the attrs, including inside tf.function."""
import itertools
import numbers
import os
import random as _pyrandom

import numpy as np

from .. import _C
from .. import dtypes as _dtypes
from .._opids import ID
from .._tensor import Tensor
from ..errors import InvalidArgumentError
from ..tensor_shape import TensorShape

__all__ = []
_NAMESPACES = {"random": [
    "set_seed", "normal", "uniform", "truncated_normal", "shuffle",
    "categorical",
    "stateless_normal", "stateless_uniform", "stateless_truncated_normal",
    "Generator", "get_global_generator", "set_global_generator"]}

_NORMAL = ID["RandomStandardNormal"]
_UNIFORM = ID["RandomUniform"]
_UNIFORM_INT = ID["RandomUniformInt"]
_TRUNCATED = ID["TruncatedNormal"]
_SHUFFLE = ID["RandomShuffle"]

_DEFAULT_GRAPH_SEED = 87654321   # TF's seed when only an op seed is given
_MAXINT32 = 2**31 - 1
_INT64_MASK = 2**64 - 1


class _SeedState:
    """The global seed, the op-seed generator it drives, and the call
    count of every seed pair used since the last set_seed."""

    def __init__(self):
        self.global_seed = None
        self.op_seeds = None
        self.counters = {}
        self.entropy = _pyrandom.Random(os.urandom(16))
        self.instances = itertools.count(1)


_state = _SeedState()


def set_seed(seed):
    """Sets the global random seed: after it, a program's random ops
    produce the same sequence of numbers on every run."""
    if seed is None:
        _state.global_seed = None
        _state.op_seeds = None
    else:
        seed = _to_int(seed, "seed")
        _state.global_seed = seed
        _state.op_seeds = _pyrandom.Random(seed)
    _state.counters.clear()


def _to_int(v, what):
    if isinstance(v, Tensor):
        v = v.numpy()
    try:
        return int(np.asarray(v).item())
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an integer, got {v!r}") from None


def _signed64(v):
    v &= _INT64_MASK
    return v - 2**64 if v >= 2**63 else v


def _get_seed(op_seed):
    """TF's random_seed.get_seed: (seed, seed2), or None for
    nondeterministic."""
    if op_seed is not None:
        op_seed = _to_int(op_seed, "seed")
    if _state.global_seed is not None:
        if op_seed is None:
            op_seed = _state.op_seeds.randint(0, _MAXINT32)
        seeds = (_state.global_seed, op_seed)
    elif op_seed is not None:
        seeds = (_DEFAULT_GRAPH_SEED, op_seed)
    else:
        return None
    if seeds == (0, 0):
        seeds = (0, _MAXINT32)   # (0, 0) means "random" to TF's kernels
    return seeds


def _tracing():
    from ..trace_frames import _tracing
    return _tracing()


def _seed_attrs(op_seed):
    """i-attrs (seed, seed2, counter, instance) for one stateful call."""
    seeds = _get_seed(op_seed)
    if seeds is None:
        seed = _state.entropy.getrandbits(63)
        seed2 = _state.entropy.getrandbits(63)
        counter = 0
    else:
        seed, seed2 = _signed64(seeds[0]), _signed64(seeds[1])
        counter = _state.counters.get((seed, seed2), 0)
        _state.counters[(seed, seed2)] = counter + 1
    instance = next(_state.instances) if _tracing() else 0
    return [seed, seed2, counter, instance]


def _shape_list(shape):
    """shape (list, tuple, TensorShape, NumPy array or eager int tensor)
    as a list of Python ints."""
    if isinstance(shape, Tensor):
        if shape._symbolic:
            raise ValueError("tfmini's random ops need a shape known when "
                             "the function is traced, got the symbolic "
                             f"tensor {shape}; pass a Python list or "
                             "tensor.shape instead")
        shape = shape.numpy()
    if isinstance(shape, TensorShape):
        dims = shape.as_list()
        if dims is None or any(d is None for d in dims):
            raise ValueError(f"shape {shape} is not fully defined")
        return [int(d) for d in dims]
    if isinstance(shape, np.ndarray):
        if shape.ndim != 1:
            raise InvalidArgumentError(
                f"shape must be a vector of int32 or int64, got shape "
                f"{list(shape.shape)}")
        shape = shape.tolist()
    if isinstance(shape, (numbers.Integral, np.integer)):
        raise InvalidArgumentError(f"shape must be a vector of int32 or "
                                   f"int64, got the scalar {shape}")
    return [_to_int(d, "shape dimension") for d in shape]


def _float_dtype(dtype, fn):
    d = _dtypes.as_dtype(dtype)
    if not d.is_floating:
        raise TypeError(f"tf.random.{fn}: dtype must be a float type "
                        f"(float16, float32, float64), got {d.name}")
    return d


def _is_number(v):
    return isinstance(v, (numbers.Real, np.number)) and not isinstance(
        v, bool)


def _affine(x, scale, shift):
    """x * scale + shift through ops, for tensor parameters (which then
    get gradients, as in TF)."""
    from .math_ops import add, multiply
    from .constant_op import convert_to_tensor
    scale = convert_to_tensor(scale, dtype_hint=x.dtype)
    shift = convert_to_tensor(shift, dtype_hint=x.dtype)
    return add(multiply(x, scale), shift)


def _sample(op, shape, dtype, iattrs, loc, scale):
    """A float sample with f = (loc, scale) folded into the kernel when
    both are Python numbers, else applied with ops afterwards."""
    ints = _shape_list(shape)
    if _is_number(loc) and _is_number(scale):
        return _C.call(op, (), ints=ints, i=iattrs,
                       f=(float(loc), float(scale)), dtype=dtype._enum)
    base = (0.0, 1.0)
    x = _C.call(op, (), ints=ints, i=iattrs, f=base, dtype=dtype._enum)
    return _affine(x, scale, loc)


def normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None,
           name=None):
    """Samples from Normal(mean, stddev)."""
    d = _float_dtype(dtype, "normal")
    return _sample(_NORMAL, shape, d, _seed_attrs(seed), mean, stddev)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                     seed=None, name=None):
    """Samples from Normal(mean, stddev), redrawing values more than 2
    stddevs from the mean."""
    d = _float_dtype(dtype, "truncated_normal")
    return _sample(_TRUNCATED, shape, d, _seed_attrs(seed), mean, stddev)


def _uniform(shape, minval, maxval, dtype, iattrs, fn):
    d = _dtypes.as_dtype(dtype)
    if d.is_integer:
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype "
                             f"{d.name}")
        if d not in (_dtypes.int32, _dtypes.int64):
            raise ValueError(f"tf.random.{fn}: integer dtype must be int32 "
                             f"or int64, got {d.name}")
        lo = _to_int(minval, "minval")
        hi = _to_int(maxval, "maxval")
        return _C.call(_UNIFORM_INT, (), ints=_shape_list(shape),
                       i=iattrs + [lo, hi], dtype=d._enum)
    if not d.is_floating:
        raise ValueError(f"tf.random.{fn}: dtype must be a float or "
                         f"int32/int64, got {d.name}")
    if maxval is None:
        maxval = 1.0
    if _is_number(minval) and _is_number(maxval):
        return _C.call(_UNIFORM, (), ints=_shape_list(shape), i=iattrs,
                       f=(float(minval), float(maxval)), dtype=d._enum)
    x = _C.call(_UNIFORM, (), ints=_shape_list(shape), i=iattrs,
                f=(0.0, 1.0), dtype=d._enum)
    from .math_ops import subtract
    from .constant_op import convert_to_tensor
    lo = convert_to_tensor(minval, dtype_hint=d)
    return _affine(x, subtract(maxval, lo), lo)


def uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None,
            name=None):
    """Samples from [minval, maxval): floats uniformly (maxval defaults
    to 1), integers (int32/int64, maxval required) with a tiny modulo
    bias, as in TF."""
    return _uniform(shape, minval, maxval, dtype, _seed_attrs(seed),
                    "uniform")


def shuffle(value, seed=None, name=None):
    """value with its slices along dim 0 in a random order."""
    return _C.call(_SHUFFLE, (value,), i=_seed_attrs(seed))


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """num_samples class indices for each row of the [batch, classes]
    logits, drawn with probabilities softmax(row). The Gumbel-max trick:
    argmax(logits - log(-log(u))) for uniform u is such a draw; it takes
    one op seed, as TF's Multinomial does. A row of all -inf gives
    num_classes, as TF."""
    from .array_ops import _tensor, _int, expand_dims, where, fill
    from .math_ops import cast, log, negative, add, equal
    from .reduce_ops import argmax, reduce_max
    dtype = _dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. "
                         f"Accepted dtypes are (tf.int32, tf.int64).")
    logits = _tensor(logits)
    if not logits.dtype.is_floating:
        raise InvalidArgumentError(
            f"Multinomial: logits must be a float tensor, got "
            f"{logits.dtype.name}")
    dims = logits._shape_tuple
    if len(dims) != 2:
        raise InvalidArgumentError(
            f"Multinomial: logits should be a matrix, got shape "
            f"{list(logits.shape)}")
    if None in dims:
        raise ValueError(f"tfmini: categorical needs the shape of logits "
                         f"known when traced, got {logits.shape}")
    n = _int(num_samples, "categorical: num_samples")
    if n < 0:
        raise InvalidArgumentError(
            f"Multinomial: num_samples should be non-negative, got {n}")
    batch, classes = dims
    if classes == 0:
        raise InvalidArgumentError(
            "Multinomial: num_classes should be positive, got 0")
    work = logits.dtype if logits.dtype != _dtypes.float16 \
        else _dtypes.float32
    # u from [tiny, 1): log(0) would make a -inf score.
    u = _C.call(_UNIFORM, (), ints=[batch, n, classes],
                i=_seed_attrs(seed),
                f=(float(np.finfo(work.as_numpy_dtype).tiny), 1.0),
                dtype=work._enum)
    gumbel = negative(log(negative(log(u))))
    scores = add(expand_dims(cast(logits, work), 1), gumbel)
    out = argmax(scores, axis=-1, output_type=dtype)
    dead = equal(reduce_max(logits, axis=-1, keepdims=True),
                 float("-inf"))
    return where(dead, fill([batch, n], cast(classes, dtype)), out)


# ---- stateless: the same seed always gives the same numbers -------------

def _stateless_attrs(seed):
    if isinstance(seed, Tensor):
        if seed._symbolic:
            raise ValueError("tfmini's stateless random ops need a seed "
                             "known when the function is traced")
        seed = seed.numpy()
    s = np.asarray(seed)
    if s.shape != (2,) or s.dtype.kind not in "iu":
        raise ValueError(f"seed must be a shape [2] integer tensor, got "
                         f"{seed!r}")
    # A stream apart from the stateful ops' (counter -1 is never used
    # there), with no run counting: graphs replay the same numbers too.
    return [_signed64(int(s[0])), _signed64(int(s[1])), -1, 0]


def stateless_normal(shape, seed, mean=0.0, stddev=1.0,
                     dtype=_dtypes.float32, name=None, alg="auto_select"):
    d = _float_dtype(dtype, "stateless_normal")
    return _sample(_NORMAL, shape, d, _stateless_attrs(seed), mean, stddev)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0,
                               dtype=_dtypes.float32, name=None,
                               alg="auto_select"):
    d = _float_dtype(dtype, "stateless_truncated_normal")
    return _sample(_TRUNCATED, shape, d, _stateless_attrs(seed), mean,
                   stddev)


def stateless_uniform(shape, seed, minval=0, maxval=None,
                      dtype=_dtypes.float32, name=None, alg="auto_select"):
    return _uniform(shape, minval, maxval, dtype, _stateless_attrs(seed),
                    "stateless_uniform")


# ---- tf.random.Generator -------------------------------------------------

_GENERATOR_TAG = 0x47656E657261746F   # "Generato": apart from op seeds


class Generator:
    """A random number generator with its own state (a key and a call
    counter), independent of tf.random.set_seed."""

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            self._key, self._counter = copy_from._key, copy_from._counter
        elif state is not None:
            s = np.asarray(state.numpy() if isinstance(state, Tensor)
                           else state).reshape(-1)
            self._key = _signed64(int(s[0]))
            self._counter = int(s[1]) if s.size > 1 else 0
        else:
            self._key = _state.entropy.getrandbits(63)
            self._counter = 0

    @classmethod
    def from_seed(cls, seed, alg=None):
        g = cls.__new__(cls)
        g._key = _signed64(_to_int(seed, "seed"))
        g._counter = 0
        return g

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        return cls()

    @classmethod
    def from_state(cls, state, alg=None):
        return cls(state=state)

    @property
    def state(self):
        from .constant_op import constant
        return constant([self._key, self._counter], dtype=_dtypes.int64)

    def reset_from_seed(self, seed):
        self._key = _signed64(_to_int(seed, "seed"))
        self._counter = 0

    def _attrs(self):
        c = self._counter
        self._counter += 1
        instance = next(_state.instances) if _tracing() else 0
        return [self._key, _GENERATOR_TAG, c, instance]

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
               name=None):
        d = _float_dtype(dtype, "Generator.normal")
        return _sample(_NORMAL, shape, d, self._attrs(), mean, stddev)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0,
                         dtype=_dtypes.float32, name=None):
        d = _float_dtype(dtype, "Generator.truncated_normal")
        return _sample(_TRUNCATED, shape, d, self._attrs(), mean, stddev)

    def uniform(self, shape, minval=0, maxval=None, dtype=_dtypes.float32,
                name=None):
        return _uniform(shape, minval, maxval, dtype, self._attrs(),
                        "Generator.uniform")

    def uniform_full_int(self, shape, dtype=_dtypes.int64, name=None):
        d = _dtypes.as_dtype(dtype)
        bits = 8 * d.size
        lo, hi = -2**(bits - 1), 2**(bits - 1)
        # The kernel's range is [lo, hi) with hi exclusive: int64's full
        # range does not fit its attrs, so it loses its top value.
        return _uniform(shape, lo, min(hi, 2**63 - 1), d, self._attrs(),
                        "Generator.uniform_full_int")

    def make_seeds(self, count=1):
        """A [2, count] int64 tensor of seeds for the stateless ops."""
        return self.uniform([2, count], -2**63, 2**63 - 1,
                            dtype=_dtypes.int64)

    def split(self, count=1):
        """count new generators, with keys drawn from this one."""
        keys = self.uniform([count], -2**63, 2**63 - 1,
                            dtype=_dtypes.int64).numpy()
        return [Generator.from_seed(int(k)) for k in keys]


_global_generator = None


def get_global_generator():
    global _global_generator
    if _global_generator is None:
        _global_generator = Generator.from_non_deterministic_state()
    return _global_generator


def set_global_generator(generator):
    global _global_generator
    _global_generator = generator
