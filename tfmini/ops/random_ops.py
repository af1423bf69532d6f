"""tf.random: seeded sampling over the C random ops (csrc/ops/ops_random.def).

Seeds follow TF's rules (tf.random.set_seed's documentation):
  - global seed set, op seed not: the op seed comes from a generator that
    set_seed resets, so the same program gives the same numbers;
  - op seed only: a fixed default global seed is used, also deterministic;
  - neither: fresh random seeds on every call.
The numbers are TF's, bit for bit: every op is Philox4x32-10 under a
key and a 128-bit counter that this module derives as TF does (see Note
[Random streams] in csrc/kernels/cpu/random.c for the attrs and how the
kernels turn words into numbers):
  - tf.random.uniform/normal/truncated_normal: key = seed, counter =
    (offset, op seed); like TF's kernel cache, each (op, dtype, seed, op
    seed) keeps its offset, which moves 256 blocks per output drawn, so
    two calls with the same seeds differ and set_seed (which resets the
    offsets) replays them; an op traced into a tf.function is a kernel
    of its own, starting at offset 0 and moving on with each run, and a
    graph numbers the op seeds it picks 0, 1, 2, ... (TF's rule);
  - stateless_*: the seed pair scrambled by one Philox block (TF's
    GenerateKey), no state;
  - tf.random.Generator: its state [counter lo, counter hi, key] (TF's
    Philox state), moved 256 blocks per output drawn."""
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
from ..trackable import Trackable as _Trackable

__all__ = []
_NAMESPACES = {"random": [
    "set_seed", "normal", "uniform", "truncated_normal", "shuffle",
    "categorical",
    "stateless_normal", "stateless_uniform", "stateless_truncated_normal",
    "stateless_categorical",
    "Generator", "get_global_generator", "set_global_generator",
    "Algorithm"]}

_NORMAL = ID["RandomStandardNormal"]
_UNIFORM = ID["RandomUniform"]
_UNIFORM_INT = ID["RandomUniformInt"]
_TRUNCATED = ID["TruncatedNormal"]
_SHUFFLE = ID["RandomShuffle"]
_MULTINOMIAL = ID["Multinomial"]

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
        self.graph_seeds = {}


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


def _truncate_seed(seed):
    return seed % _MAXINT32


def _get_seed(op_seed):
    """TF's random_seed.get_seed: (seed, seed2), or None for
    nondeterministic."""
    if op_seed is not None:
        op_seed = _to_int(op_seed, "seed")
    if _state.global_seed is not None:
        if op_seed is None:
            op_seed = _graph_op_seed() if _tracing() else \
                _state.op_seeds.randint(0, _MAXINT32)
        seeds = (_truncate_seed(_state.global_seed), _truncate_seed(op_seed))
    elif op_seed is not None:
        seeds = (_DEFAULT_GRAPH_SEED, _truncate_seed(op_seed))
    else:
        return None
    if seeds == (0, 0):
        seeds = (0, _MAXINT32)   # (0, 0) means "random" to TF's kernels
    return seeds


def _graph_op_seed():
    """TF's op seed in a graph: 0, 1, 2, ... per graph (a retrace is a
    new graph), so every tf.function draws the same sequence."""
    from ..trace_frames import _frames
    frames = _frames()
    frame = frames[-1] if frames else None
    entry = _state.graph_seeds.get(id(frame))
    if entry is None or entry[0] is not frame:
        if len(_state.graph_seeds) > 64:    # traces long done
            _state.graph_seeds.clear()
        entry = _state.graph_seeds[id(frame)] = [frame, 0]
    entry[1] += 1
    return entry[1] - 1


def _tracing():
    from ..trace_frames import _tracing
    return _tracing()


_BLOCKS_PER_OUTPUT = 256   # TF's reservation per output drawn


def _numel(ints):
    n = 1
    for d in ints:
        n *= d
    return n


def _seed_attrs(op_seed, op, dtype, ints, blocks=None):
    """i-attrs (key, counter hi, counter lo, instance) for one stateful
    call of op drawing a `dtype` tensor of shape `ints` (which uses
    `blocks` Philox blocks; TF reserves 256 per output)."""
    seeds = _get_seed(op_seed)
    if seeds is None:
        key = _state.entropy.getrandbits(64)
        hi = _state.entropy.getrandbits(64)
        lo = 0
    elif _tracing():
        # A graph's op is a kernel of its own, as in TF: it starts at the
        # stream's beginning and each run moves on (counted in C).
        key, hi = seeds
        lo = 0
    else:
        key, hi = seeds
        k = (op, dtype._enum, key, hi)
        lo = _state.counters.get(k, 0)
        if blocks is None:
            blocks = _numel(ints) * _BLOCKS_PER_OUTPUT
        _state.counters[k] = lo + blocks
    instance = next(_state.instances) if _tracing() else 0
    return _attrs_of(key, hi, lo, instance)


def _attrs_of(key, ctr_hi, ctr_lo, instance=0):
    # A counter past 2^64 carries into its high half, as TF's Skip does.
    ctr_hi += ctr_lo >> 64
    return [_signed64(key), _signed64(ctr_hi), _signed64(ctr_lo),
            instance]


def _philox(key, ctr):
    """One Philox4x32-10 block: the four words for counter words `ctr`
    under the 64-bit `key` (used to scramble stateless seeds)."""
    k0, k1 = key & 0xFFFFFFFF, key >> 32
    c0, c1, c2, c3 = ctr
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & 0xFFFFFFFF,
                          (p0 >> 32) ^ c3 ^ k1, p0 & 0xFFFFFFFF)
        k0 = (k0 + 0x9E3779B9) & 0xFFFFFFFF
        k1 = (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return c0, c1, c2, c3


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


def _sample(op, shape, dtype, attrs_fn, loc, scale):
    """A float sample with f = (loc, scale) folded into the kernel when
    both are Python numbers, else applied with ops afterwards.
    attrs_fn(op, dtype, ints) gives the i-attrs and the inputs (none, or
    a Philox state read when the op runs)."""
    ints = _shape_list(shape)
    iattrs, inputs = attrs_fn(op, dtype, ints)
    if _is_number(loc) and _is_number(scale):
        return _C.call(op, inputs, ints=ints, i=iattrs,
                       f=(float(loc), float(scale)), dtype=dtype._enum)
    base = (0.0, 1.0)
    x = _C.call(op, inputs, ints=ints, i=iattrs, f=base,
                dtype=dtype._enum)
    return _affine(x, scale, loc)


def normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None,
           name=None):
    """Samples from Normal(mean, stddev)."""
    d = _float_dtype(dtype, "normal")
    return _sample(_NORMAL, shape, d, _stateful(seed), mean, stddev)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                     seed=None, name=None):
    """Samples from Normal(mean, stddev), redrawing values more than 2
    stddevs from the mean."""
    d = _float_dtype(dtype, "truncated_normal")
    return _sample(_TRUNCATED, shape, d, _stateful(seed), mean, stddev)


def _stateful(op_seed):
    return lambda op, dtype, ints: (_seed_attrs(op_seed, op, dtype, ints),
                                    ())


def _uniform(shape, minval, maxval, dtype, attrs_fn, fn, full=False):
    d = _dtypes.as_dtype(dtype)
    ints = _shape_list(shape)
    if d.is_integer:
        if maxval is None and not full:
            raise ValueError(f"Must specify maxval for integer dtype "
                             f"{d.name}")
        if d not in (_dtypes.int32, _dtypes.int64):
            raise ValueError(f"tf.random.{fn}: integer dtype must be int32 "
                             f"or int64, got {d.name}")
        if full:
            lo, hi = 0, 1     # unused: f[0] = 1 asks for the whole range
        else:
            lo = _to_int(minval, "minval")
            hi = _to_int(maxval, "maxval")
        iattrs, inputs = attrs_fn(_UNIFORM_INT, d, ints)
        return _C.call(_UNIFORM_INT, inputs, ints=ints, i=iattrs + [lo, hi],
                       f=(1.0 if full else 0.0, 0.0), dtype=d._enum)
    if not d.is_floating:
        raise ValueError(f"tf.random.{fn}: dtype must be a float or "
                         f"int32/int64, got {d.name}")
    if maxval is None:
        maxval = 1.0
    iattrs, inputs = attrs_fn(_UNIFORM, d, ints)
    if _is_number(minval) and _is_number(maxval):
        return _C.call(_UNIFORM, inputs, ints=ints, i=iattrs,
                       f=(float(minval), float(maxval)), dtype=d._enum)
    x = _C.call(_UNIFORM, inputs, ints=ints, i=iattrs,
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
    return _uniform(shape, minval, maxval, dtype, _stateful(seed),
                    "uniform")


def shuffle(value, seed=None, name=None):
    """value with its slices along dim 0 in a random order."""
    from .constant_op import convert_to_tensor
    value = convert_to_tensor(value)
    dims = value._shape_tuple
    rows = dims[0] if dims and dims[0] is not None else 1
    # TF reserves rows - 1 words, in whole blocks, for a shuffle.
    blocks = (rows + 2) // 4 if rows > 1 else 0
    return _C.call(_SHUFFLE, (value,),
                   i=_seed_attrs(seed, _SHUFFLE, value.dtype, [rows],
                                 blocks))


def _multinomial(logits, num_samples, dtype, attrs_fn):
    """The Multinomial op (TF's CPU kernel, numbers included) over the
    [batch, classes] logits; attrs_fn(op, ints, blocks) -> i-attrs."""
    from .array_ops import _tensor, _int
    dtype = _dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. "
                         f"Accepted dtypes are (tf.int32, tf.int64).")
    logits = _tensor(logits)
    n = _int(num_samples, "categorical: num_samples")
    dims = logits._shape_tuple
    batch = dims[0] if len(dims) == 2 and dims[0] is not None else 1
    # TF reserves 256 blocks per output, for ceil4(n) * 2 outputs a row.
    blocks = batch * ((max(n, 0) + 3) // 4 * 4) * 2 * _BLOCKS_PER_OUTPUT
    ints = [batch, max(n, 0)]
    return _C.call(_MULTINOMIAL, (logits,),
                   i=attrs_fn(_MULTINOMIAL, ints, blocks)[:4] + [n],
                   dtype=dtype._enum)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """num_samples class indices for each row of the [batch, classes]
    logits, drawn with probabilities softmax(row): TF's Multinomial
    kernel and its numbers for a given seed. A row with no finite logit
    gives num_classes, as TF."""
    def attrs(op, ints, blocks):
        return _seed_attrs(seed, op, _dtypes.float32, ints, blocks)
    return _multinomial(logits, num_samples, dtype, attrs)


def stateless_categorical(logits, num_samples, seed, dtype=_dtypes.int64,
                          name=None):
    """categorical with a [2] seed: the same seed, the same draws (TF's
    StatelessMultinomial)."""
    key, hi = _stateless_key(seed)
    return _multinomial(logits, num_samples, dtype,
                        lambda op, ints, blocks: _attrs_of(key, hi, 0))


# ---- stateless: the same seed always gives the same numbers -------------

def _stateless_key(seed):
    """TF's GenerateKey: the seed pair, as counter words under a fixed
    key, becomes through one Philox block the key and counter high half
    (so no part of the seed needs to be strong). Returns (key, ctr_hi)."""
    if isinstance(seed, Tensor):
        if seed._symbolic:
            raise ValueError("tfmini's stateless random ops need a seed "
                             "known when the function is traced")
        seed = seed.numpy()
    s = np.asarray(seed)
    if s.shape != (2,) or s.dtype.kind not in "iu":
        raise ValueError(f"seed must be a shape [2] integer tensor, got "
                         f"{seed!r}")
    # Each seed as TF's static_cast<uint64>: int32 sign-extends.
    s0, s1 = (int(v) & _INT64_MASK for v in s)
    w = _philox(0x02461E29_3EC8F720,
                (s0 & 0xFFFFFFFF, s0 >> 32, s1 & 0xFFFFFFFF, s1 >> 32))
    return w[0] | w[1] << 32, w[2] | w[3] << 32


def _stateless(seed, alg="auto_select"):
    if alg not in (None, "auto_select", "philox", 1, 3) and \
            getattr(alg, "name", None) not in ("AUTO_SELECT", "PHILOX"):
        raise NotImplementedError(f"tfmini's stateless random ops use "
                                  f"Philox (TF's CPU choice), not {alg!r}")
    key, hi = _stateless_key(seed)
    # No run counting: a graph replays the same numbers too.
    return lambda op, dtype, ints: (_attrs_of(key, hi, 0), ())


def stateless_normal(shape, seed, mean=0.0, stddev=1.0,
                     dtype=_dtypes.float32, name=None, alg="auto_select"):
    d = _float_dtype(dtype, "stateless_normal")
    return _sample(_NORMAL, shape, d, _stateless(seed, alg), mean,
                   stddev)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0,
                               dtype=_dtypes.float32, name=None,
                               alg="auto_select"):
    d = _float_dtype(dtype, "stateless_truncated_normal")
    return _sample(_TRUNCATED, shape, d, _stateless(seed, alg), mean,
                   stddev)


def stateless_uniform(shape, seed, minval=0, maxval=None,
                      dtype=_dtypes.float32, name=None, alg="auto_select"):
    d = _dtypes.as_dtype(dtype)
    full = d.is_integer and minval is None and maxval is None
    if d.is_integer and not full and (minval is None or maxval is None):
        raise ValueError("For integer dtype {}, minval and maxval must be "
                         "both `None` or both non-`None`; got minval={} "
                         "and maxval={}".format(d.name, minval, maxval))
    return _uniform(shape, minval, maxval, d, _stateless(seed, alg),
                    "stateless_uniform", full=full)


# ---- tf.random.Generator -------------------------------------------------

def _state_from_seed(seed):
    """TF's _make_1d_state for Philox: a Python int cut into three 64-bit
    words (low first), or a list of up to three ints, zero-padded."""
    if isinstance(seed, Tensor):
        seed = seed.numpy()
    if isinstance(seed, (numbers.Integral, np.integer)) or \
            np.ndim(seed) == 0:
        seed = int(np.asarray(seed).item())
        words = []
        for _ in range(3):
            words.append(seed & _INT64_MASK)
            seed >>= 64
        return words
    words = [int(v) & _INT64_MASK for v in np.asarray(seed).reshape(-1)]
    if len(words) > 3:
        raise ValueError(f"seed should have no more than 3 elements for "
                         f"Philox, got {len(words)}")
    return words + [0] * (3 - len(words))


def _check_alg(alg):
    if alg in (None, 1, "philox", "auto_select", 3) or \
            getattr(alg, "name", None) in ("PHILOX", "AUTO_SELECT"):
        return
    raise NotImplementedError(f"tfmini's tf.random.Generator implements "
                              f"Philox (TF's default), not {alg!r}")


class Generator(_Trackable):
    """A random number generator with its own state, independent of
    tf.random.set_seed: TF's Philox state [counter low, counter high,
    key], which every draw moves 256 blocks per output, so its numbers
    are TF's. The state lives in an int64 variable, `_state_var` as in
    TF, which checkpoints save and restore."""

    @property
    def _words(self):
        return [int(w) & _INT64_MASK for w in self._state_var.numpy()]

    @_words.setter
    def _words(self, words):
        from ..trace_frames import init_scope
        value = np.array([_signed64(w) for w in words], np.int64)
        var = self.__dict__.get("_state_var")
        with init_scope():      # state moves now, also while tracing
            if var is None:
                from ..variables import Variable
                from ..distribute.strategy import get_strategy, has_strategy
                self._state_var = Variable(value, trainable=False,
                                           name="StateVar")
                self._distribution_strategy = (
                    get_strategy() if has_strategy() else None)
            else:
                var.assign(value, read_value=False)

    def _trackable_children(self):
        return [(("_state_var",), self._state_var)]

    def __init__(self, copy_from=None, state=None, alg=None):
        _check_alg(alg)
        if copy_from is not None:
            self._words = list(copy_from._words)
        elif state is not None:
            # Word by word: NumPy turns a list mixing small ints and
            # ints >= 2**63 into floats, losing the key's low bits.
            s = (state.numpy() if isinstance(state, Tensor) else
                 np.array([int(v) for v in np.ravel(np.asarray(
                     state, dtype=object))], dtype=object)).reshape(-1)
            if s.size != 3:
                raise ValueError(f"The size of the state for Philox must "
                                 f"be 3, got {s.size}")
            self._words = [int(v) & _INT64_MASK for v in s]
        else:
            self._words = [0, 0, _state.entropy.getrandbits(64)]

    @classmethod
    def from_seed(cls, seed, alg=None):
        _check_alg(alg)
        g = cls.__new__(cls)
        g._words = _state_from_seed(seed)
        return g

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        return cls(alg=alg)

    @classmethod
    def from_state(cls, state, alg=None):
        return cls(state=state, alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg=None):
        c = np.asarray(counter).reshape(-1)
        k = np.asarray(key).reshape(-1)
        return cls(state=[int(c[0]), int(c[1]) if c.size > 1 else 0,
                          int(k[0])], alg=alg)

    @property
    def state(self):
        """The state variable (TF returns the variable too)."""
        return self._state_var

    @property
    def algorithm(self):
        return 1   # Philox, TF's Algorithm.PHILOX

    @property
    def key(self):
        from .constant_op import constant
        return constant(_signed64(self._words[2]), dtype=_dtypes.int64)

    def reset(self, state):
        self.__init__(state=state)

    def reset_from_seed(self, seed):
        self._words = _state_from_seed(seed)

    def reset_from_key_counter(self, key, counter):
        self._words = Generator.from_key_counter(key, counter)._words

    def skip(self, delta):
        """Moves the counter as `delta` draws of one output would."""
        self._advance(_to_int(delta, "delta"))

    def _advance(self, n):
        lo, hi, key = self._words
        ctr = ((hi << 64) | lo) + n * _BLOCKS_PER_OUTPUT
        ctr &= (1 << 128) - 1
        self._words = [ctr & _INT64_MASK, ctr >> 64, key]

    def _attrs(self, op, dtype, ints):
        n = _numel(ints)
        if _tracing():
            if self._traced_on_replica():
                return [0, 0, 0, 0], (self._replica_state_node(n),)
            # In a graph the op reads the state when it runs and the
            # graph moves it on, as TF's stateful ops do: eager draws and
            # graph runs then share one stream.
            from .constant_op import constant
            state = self._state_var.read_value()
            self._state_var.assign_add(
                constant([n * _BLOCKS_PER_OUTPUT, 0, 0], _dtypes.int64),
                read_value=False)
            return [0, 0, 0, 0], (state,)
        replica = self._replica()
        if replica is not None:
            return self._replica_attrs(replica, n), ()
        lo, hi, key = self._words
        self._advance(n)
        return _attrs_of(key, hi, lo), ()

    # Note [Generators on replicas]: a Generator made under a strategy
    # has, in TF, a mirrored state (one copy per replica, replica 0's
    # saved) and each replica draws with its key hashed with its replica
    # id: key' = the first uint64 of Philox(key, counter=[replica_id, 0]).
    # Replicas here are threads of one run sharing the state variable,
    # so a run keeps the copies: each replica starts from the state as
    # the run found it, and replica 0's copy is written back (TF's copies
    # stay equal while the replicas make the same draws). Eager only: a
    # traced draw still uses the shared state and the plain key.
    def _replica(self):
        if self.__dict__.get("_distribution_strategy") is None or \
                _tracing():
            return None
        from ..distribute.replica import current_replica
        return current_replica()

    def _traced_on_replica(self):
        """Traced inside strategy.run: the draw must see its replica."""
        if self.__dict__.get("_distribution_strategy") is None:
            return False
        from ..distribute.replica import current_replica
        return current_replica() is not None

    def _replica_state_node(self, n):
        """The Philox state [lo, hi, key] of a traced draw, computed when
        the graph runs (on the replica's thread) by the eager rule of
        Note [Generators on replicas]; outside a replica, the plain state,
        moved on."""
        import numpy as np

        from ..trace_frames import _frames
        from .script_ops import numpy_function
        frames = _frames()
        if frames:
            frames[-1].on_replica = True

        def state():
            from ..distribute.replica import current_replica
            replica = current_replica()
            if replica is None:
                lo, hi, key = self._words
                self._advance(n)
            else:
                lo, hi, key = self._replica_words(replica, n)
            return np.array([_signed64(lo), _signed64(hi), _signed64(key)],
                            np.int64)

        from ..tensor_spec import TensorSpec
        return numpy_function(state, [], TensorSpec([3], _dtypes.int64))

    def _replica_attrs(self, replica, n):
        lo, hi, key = self._replica_words(replica, n)
        return _attrs_of(key, hi, lo)

    def _replica_words(self, replica, n):
        """This replica's [lo, hi, hashed key] for a draw of n outputs."""
        rid = replica._replica_id
        group = getattr(replica, "_group", None)
        with _replica_lock:
            run = self.__dict__.get("_replica_run")
            if group is None or run is None or run[0] is not group:
                run = (group, list(self._words), {})
                self._replica_run = run
            lo, hi, key = run[2].get(rid, run[1])
            ctr = (((hi << 64) | lo) + n * _BLOCKS_PER_OUTPUT) & \
                ((1 << 128) - 1)
            run[2][rid] = [ctr & _INT64_MASK, ctr >> 64, key]
            if rid == 0:
                self._words = run[2][0]
        o = _philox(key, (rid & 0xFFFFFFFF, rid >> 32, 0, 0))
        return [lo, hi, o[0] | (o[1] << 32)]

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
               name=None):
        d = _float_dtype(dtype, "Generator.normal")
        return _sample(_NORMAL, shape, d, self._attrs, mean, stddev)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0,
                         dtype=_dtypes.float32, name=None):
        d = _float_dtype(dtype, "Generator.truncated_normal")
        return _sample(_TRUNCATED, shape, d, self._attrs, mean, stddev)

    def uniform(self, shape, minval=0, maxval=None, dtype=_dtypes.float32,
                name=None):
        return _uniform(shape, minval, maxval, dtype, self._attrs,
                        "Generator.uniform")

    def uniform_full_int(self, shape, dtype=_dtypes.int64, name=None):
        return _uniform(shape, None, None, dtype, self._attrs,
                        "Generator.uniform_full_int", full=True)

    def make_seeds(self, count=1):
        """A [2, count] int64 tensor of seeds for the stateless ops: TF's
        full-range keys over zeros."""
        from .array_ops import stack, zeros_like
        keys = self.uniform_full_int([count], dtype=_dtypes.int64)
        return stack([keys, zeros_like(keys)])

    def split(self, count=1):
        """count new generators, each with state [0, 0, key] for a key
        drawn from this one, as TF."""
        keys = self.uniform_full_int([count], dtype=_dtypes.int64).numpy()
        return [Generator(state=[0, 0, int(k)]) for k in keys]


_global_generator = None
_replica_lock = __import__("threading").Lock()


def get_global_generator():
    global _global_generator
    if _global_generator is None:
        _global_generator = Generator.from_non_deterministic_state()
    return _global_generator


def set_global_generator(generator):
    global _global_generator
    _global_generator = generator


# ---- tf.random.experimental and tf.random.Algorithm ----------------------

class Algorithm:
    """TF's RNG algorithm ids (tfmini implements Philox, TF's CPU
    choice for AUTO_SELECT)."""
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def _seed_dtype(seed):
    from .constant_op import convert_to_tensor
    seed = convert_to_tensor(seed)
    if seed.dtype not in (_dtypes.int32, _dtypes.int64):
        raise ValueError(f"seed must be an int32 or int64 tensor, got "
                         f"{seed.dtype.name}")
    return seed


def stateless_split(seed, num=2, alg="auto_select"):
    """num new seeds from seed, as TF: a [num, 2] full-range draw of the
    seed's dtype."""
    seed = _seed_dtype(seed)
    return stateless_uniform([num, 2], seed, minval=None, maxval=None,
                             dtype=seed.dtype, alg=alg)


def stateless_fold_in(seed, data, alg="auto_select"):
    """A new seed from seed and an integer: TF's [draw from seed, data]."""
    from .array_ops import stack
    from .constant_op import convert_to_tensor
    data = convert_to_tensor(data)
    seed1 = stateless_uniform([], _seed_dtype(seed), minval=None,
                              maxval=None, dtype=data.dtype, alg=alg)
    return stack([seed1, data])


def create_rng_state(seed, alg):
    """TF's Philox state (three int64 words) for an integer seed, as a
    NumPy array."""
    _check_alg(alg)
    return np.array([_signed64(w) for w in _state_from_seed(seed)],
                    np.int64)


class experimental:  # noqa: N801  (TF's namespace)
    """tf.random.experimental."""
    Algorithm = Algorithm
    Generator = Generator
    create_rng_state = staticmethod(create_rng_state)
    get_global_generator = staticmethod(get_global_generator)
    set_global_generator = staticmethod(set_global_generator)
    stateless_split = staticmethod(stateless_split)
    stateless_fold_in = staticmethod(stateless_fold_in)
