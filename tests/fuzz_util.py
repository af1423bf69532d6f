"""Helpers of the API fuzz tests (tests/test_fuzz_ops.py): hypothesis
strategies for arrays, shapes and junk arguments, the one rule every
fuzzed call must obey (`check_call`), integer and cast references with
TF's wrapping semantics, and a leak check on the core's live counts."""
import contextlib
import gc
import math
import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfmini as tf

# The default run is fast and the same every time. The long profile
# (test_fuzz_ops.test_long_profile, marked slow, or by hand:
# TFMINI_FUZZ_EXAMPLES=500 TFMINI_FUZZ_RANDOM=1) digs deeper, with fresh
# random examples each run.
EXAMPLES = int(os.environ.get("TFMINI_FUZZ_EXAMPLES", "25"))
RANDOM = os.environ.get("TFMINI_FUZZ_RANDOM") == "1"
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                derandomize=not RANDOM, database=None,
                suppress_health_check=list(HealthCheck))

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16",
          "float32", "float64"]
INTS = ["int8", "uint8", "int16", "int32", "int64"]
FLOATS = ["float16", "float32", "float64"]

# What a call may raise: TF's errors and Python's argument errors. Not
# RuntimeError, SystemError, OverflowError, KeyError, AttributeError...
# (those mean an unchecked path).
ALLOWED = (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError,
           tf.errors.UnimplementedError, ValueError, TypeError, IndexError)

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1

# Arguments of the wrong kind, for every slot of every op.
JUNK = [None, "abc", b"x", {}, {"a": 1}, set(), object(), [[1, 2], [3]],
        [1, [2]], [None], 1.5, float("nan"), float("inf"), -1, 0, 2 ** 45,
        2 ** 63, -2 ** 63 - 1, 2 ** 70, -2 ** 70, 1e300, True, [],
        [[[]]], slice(1), Ellipsis, np.float64(2.5), np.array([1, 2]),
        np.array("s"), np.array([1 + 2j]), np.zeros((2, 0)),
        np.zeros([1] * 9), [2 ** 70], [-1, -1], [1e300]]


class CallError(AssertionError):
    pass


# Outputs up to this many bytes are computed; from BEYOND_MEMORY on no
# allocator can give them (the call must fail, quickly). Sizes between
# would really be allocated and written: tests skip them (the machine
# is shared, and a 10 GB tensor proves nothing a 10 MB one does not).
SMALL_BYTES = 10 ** 7
BEYOND_MEMORY = 2 ** 45


def alloc_zone(shape, dtype):
    """"ok" (computable), "skip" (feasible but too big for a test) or
    "error" (more bytes than int64 counts, zero dims aside, or than any
    machine has: the call must fail)."""
    nbytes = np.dtype(dtype).itemsize
    for d in shape:
        nbytes *= d or 1
    if nbytes > INT64_MAX:  # NumPy's rule too: zeros do not excuse it
        return "error"
    if 0 in shape:
        return "ok"
    if nbytes <= SMALL_BYTES:
        return "ok"
    return "skip" if nbytes < BEYOND_MEMORY else "error"


def _is_op_error(e):
    return isinstance(e, tf.errors.OpError)


def check_call(fn, names, expect=None, compare=None):
    """Run fn(). It must return or raise one of ALLOWED; a TF error must
    name one of `names` (the op). expect: None (either outcome is fine),
    "error" (it must raise), or a NumPy value the result must match
    (through compare(got, want), default exact). Returns (result or None,
    exception or None)."""
    try:
        out = fn()
    except ALLOWED as e:
        msg = str(e)
        assert msg, f"{type(e).__name__} without a message"
        if _is_op_error(e) and not any(n in msg for n in names):
            raise CallError(f"{type(e).__name__} does not name any of "
                            f"{names}: {msg}") from e
        if expect is not None and not isinstance(expect, str):
            raise CallError(f"raised {type(e).__name__}: {msg}; expected "
                            f"{expect!r}") from e
        return None, e
    except BaseException as e:
        raise CallError(f"{type(e).__name__} is not an allowed error: "
                        f"{e}") from e
    if isinstance(expect, str) and expect == "error":
        raise CallError(f"expected an error, got {out!r}")
    if expect is not None:
        got = out.numpy() if hasattr(out, "numpy") else out
        (compare or assert_same)(got, expect)
    return out, None


def assert_same(got, want):
    """Exact equality of dtype, shape and values (NaN equal to NaN)."""
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(got, want)
    else:
        assert np.array_equal(got, want), (got, want)


def assert_close(rtol, atol):
    def compare(got, want):
        want = np.asarray(want)
        got = np.asarray(got)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert got.shape == want.shape, (got.shape, want.shape)
        np.testing.assert_allclose(got.astype(np.float64),
                                   want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)
    return compare


# ---- strategies ----------------------------------------------------------

def special_values(dtype):
    """The values that break arithmetic: extremes, zeros, NaN, inf."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return [False, True]
    if d.kind in "iu":
        info = np.iinfo(d)
        return [0, 1, -1 if d.kind == "i" else 2, info.min, info.max,
                info.min + 1, info.max - 1, 2, 3, 7]
    info = np.finfo(d)
    return [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, np.nan, np.inf, -np.inf,
            float(info.max), float(-info.max), float(info.tiny),
            float(info.eps), 1e-30, 100.0, 7.0, -3.0]


def elements(dtype):
    d = np.dtype(dtype)
    special = st.sampled_from(special_values(dtype))
    if d.kind == "b":
        return st.booleans()
    if d.kind in "iu":
        info = np.iinfo(d)
        return st.one_of(special, st.integers(-8 if d.kind == "i" else 0, 8),
                         st.integers(int(info.min), int(info.max)))
    width = {2: 16, 4: 32, 8: 64}[d.itemsize]
    return st.one_of(special, st.floats(-10, 10, width=width),
                     st.floats(width=width, allow_nan=True,
                               allow_infinity=True))


def arrays(dtype, shape):
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype))


shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
small_shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                max_side=3)
dtypes = st.sampled_from(DTYPES)


@st.composite
def array_of(draw, dtype=None, shape=None):
    dtype = draw(dtypes) if dtype is None else dtype
    shape = draw(shapes) if shape is None else shape
    return draw(arrays(dtype, shape))


# Integers an attribute may be fuzzed with: small ones mostly, then the
# edges of int32 and int64 and past them.
big_ints = st.sampled_from([-2 ** 63, 2 ** 63 - 1, -2 ** 31, 2 ** 31 - 1,
                            2 ** 31, 2 ** 32, 2 ** 62, -2 ** 62, 2 ** 63,
                            -2 ** 63 - 1, 2 ** 70])
attr_ints = st.one_of(st.integers(-4, 5), st.integers(-4, 5),
                      st.integers(-4, 5), big_ints)


# ---- references with TF's integer semantics ------------------------------

def wrap(values, dtype):
    """Python ints (an object array) wrapped into dtype, two's
    complement, as C and TF's kernels compute them."""
    d = np.dtype(dtype)
    bits = 8 * d.itemsize
    lo = 0 if d.kind == "u" else -(1 << (bits - 1))

    def one(v):
        return (int(v) - lo) % (1 << bits) + lo
    return np.vectorize(one, otypes=[object])(values).astype(d) \
        if np.size(values) else np.zeros(np.shape(values), d)


def as_py(a):
    """An array as an object array of Python ints (exact arithmetic)."""
    return np.asarray(a).astype(object)


def f2i32(v):
    """x86's float -> int32 conversion: truncation, INT_MIN outside."""
    if math.isnan(v) or not -2147483649.0 < v < 2147483648.0:
        return -2 ** 31
    return int(v)


def f2i64(v):
    if math.isnan(v) or not -9223372036854775808.0 <= v < \
            9223372036854775808.0:
        return -2 ** 63
    return int(v)


def cast_ref(x, to):
    """tf.cast's documented semantics (csrc/kernels/cpu/cast.c)."""
    x = np.asarray(x)
    to = np.dtype(to)
    if to.kind == "b":
        return (x != 0) if x.dtype.kind != "f" else (x != 0) | np.isnan(x)
    if x.dtype.kind == "f" and to.kind in "iu":
        flat = x.astype(np.float64).reshape(-1)
        if to.itemsize == 8:
            vals = [f2i64(float(v)) for v in flat]
        else:
            vals = [f2i32(float(v)) for v in flat]
        return wrap(np.array(vals, dtype=object).reshape(x.shape), to)
    if x.dtype.kind in "iub" and to.kind in "iu":
        return wrap(as_py(x.astype(np.int64) if x.dtype.kind == "b" else x),
                    to)
    if to == np.float16:
        # float16 goes through float32 (as TF's and Eigen's casts).
        return x.astype(np.float32).astype(np.float16)
    with np.errstate(all="ignore"):
        return x.astype(to)


# ---- leaks ------------------------------------------------------------------

def live():
    gc.collect()
    return tf._C.live_counts()


@contextlib.contextmanager
def no_leak(what=""):
    """Live tensors, buffers and buffer bytes must be back where they
    started once the block's results are dropped."""
    before = live()
    yield
    after = live()
    assert after == before, (f"{what}: live (tensors, buffers, bytes) "
                             f"went from {before} to {after}")
