"""The reduce family beyond the OpSpec table: properties over random
shapes and axes (hypothesis, NumPy as the oracle), special values,
accuracy, determinism across thread counts, the Python API and errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tfmini as tf
from tfmini import _C
from specs.spec_reduce import (REDUCTIONS, _np_scan, _np_sort)

SETTINGS = settings(max_examples=60, deadline=None)
INT_DTYPES = ["int8", "uint8", "int16", "int32", "int64"]
NUM_DTYPES = ["float32", "float64"] + INT_DTYPES


def _values(rng, shape, dtype, lo=-3, hi=3):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    x = rng.uniform(lo, hi, size=shape)
    if np.dtype(dtype).kind in "iu":
        x = np.round(x)
        if np.dtype(dtype).kind == "u":
            x = np.abs(x)
    return x.astype(dtype)


@st.composite
def shape_and_axes(draw, min_rank=0):
    """A shape (dims 0..4, rank min_rank..5) and an axis argument in any
    of TF's forms: None, an int, a list in any order with negatives."""
    rank = draw(st.integers(min_rank, 5))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank,
                                max_size=rank)))
    form = draw(st.sampled_from(["none", "int", "list"]))
    if form == "none":
        return shape, None, None
    if form == "int":
        if rank == 0:
            return shape, None, None
        ax = draw(st.integers(-rank, rank - 1))
        return shape, ax, (ax % rank,)
    axes = draw(st.lists(st.integers(0, max(rank - 1, 0)), unique=True,
                         max_size=rank)) if rank else []
    given_axes = [a - rank if draw(st.booleans()) else a for a in axes]
    return shape, given_axes, tuple(axes)


REDUCTION_NAMES = [r[0] for r in REDUCTIONS]


@SETTINGS
@given(case=shape_and_axes(), keepdims=st.booleans(),
       name=st.sampled_from(REDUCTION_NAMES),
       dtype=st.sampled_from(NUM_DTYPES), seed=st.integers(0, 2**32 - 1))
def test_reductions_match_numpy(case, keepdims, name, dtype, seed):
    shape, axis, np_axis = case
    _, tf_fn, np_fn, dtypes, _, _, _ = REDUCTIONS[REDUCTION_NAMES.index(name)]
    if dtypes == ("bool",):
        dtype = "bool"
    elif dtype not in dtypes and name == "reduce_logsumexp":
        dtype = "float64"
    lo, hi = (0.5, 1.5) if name == "reduce_prod" else (-3, 3)
    x = _values(np.random.default_rng(seed), shape, dtype, lo, hi)
    got = tf_fn(x, axis=axis, keepdims=keepdims)
    want = np.asarray(np_fn(x, np_axis, keepdims)).astype(x.dtype)
    assert got.dtype.name == want.dtype.name
    assert tuple(got.shape) == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got.numpy(), want)


floats_any = hnp.arrays(
    st.sampled_from([np.float32, np.float64]),
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
    elements=st.floats(width=32, allow_nan=True, allow_infinity=True))


@SETTINGS
@given(x=floats_any, data=st.data())
def test_max_min_propagate_nan_and_inf(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    np.testing.assert_array_equal(tf.reduce_max(x, axis).numpy(),
                                  np.max(x, axis))
    np.testing.assert_array_equal(tf.reduce_min(x, axis).numpy(),
                                  np.min(x, axis))
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.sum(x.astype(np.float64), axis).astype(x.dtype)
    np.testing.assert_allclose(tf.reduce_sum(x, axis).numpy(), want,
                               rtol=1e-5)


@SETTINGS
@given(x=floats_any, data=st.data())
def test_argmax_argmin_first_nan_and_first_tie(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    # Round to a few values so that ties are common.
    x = np.where(np.isfinite(x), np.round(np.clip(x, -2, 2)), x)
    np.testing.assert_array_equal(tf.argmax(x, axis).numpy(),
                                  np.argmax(x, axis))
    np.testing.assert_array_equal(tf.argmin(x, axis).numpy(),
                                  np.argmin(x, axis))


@SETTINGS
@given(case=shape_and_axes(min_rank=1), dtype=st.sampled_from(NUM_DTYPES),
       exclusive=st.booleans(), reverse=st.booleans(),
       prod=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_scans_match_numpy(case, dtype, exclusive, reverse, prod, seed):
    shape, _, _ = case
    axis = int(np.random.default_rng(seed).integers(len(shape)))
    x = _values(np.random.default_rng(seed), shape, dtype,
                *((0.5, 1.5) if prod else (-3, 3)))
    fn = tf.math.cumprod if prod else tf.cumsum
    got = fn(x, axis=axis - len(shape), exclusive=exclusive,
             reverse=reverse)
    want = _np_scan(x, axis, exclusive, reverse, prod)
    assert got.dtype.name == dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def _descending_order(x):
    """Stable descending order along the last axis, NaN largest (the
    reference for sort/argsort DESCENDING and top_k)."""
    idx = np.arange(x.shape[-1])
    out = np.empty(x.shape, np.int64)
    for pos in np.ndindex(*x.shape[:-1]):
        row = x[pos]
        nan = np.isnan(row) if row.dtype.kind == "f" else np.zeros(
            row.shape, bool)
        key = np.where(nan, 0, -row.astype(np.float64))
        out[pos] = np.lexsort((idx, key, ~nan))
    return out


@st.composite
def sort_inputs(draw):
    dtype = draw(st.sampled_from(["float32", "float64", "int8", "uint8",
                                  "int32", "int64"]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                  max_side=90))
    if dtype.startswith("float"):
        elems = st.sampled_from([0.0, -0.0, 1.5, -1.5, 2.0, np.inf,
                                 -np.inf, np.nan, 1e-30, -7.25])
    else:
        info = np.iinfo(dtype)
        elems = st.one_of(st.integers(-2, 2).filter(
            lambda v: v >= info.min), st.sampled_from([info.min, info.max]))
    return draw(hnp.arrays(dtype, shape, elements=elems))


@SETTINGS
@given(x=sort_inputs(), data=st.data())
def test_sort_and_argsort_are_stable(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    # Ascending: NumPy's stable sort (NaN last, -0.0 == 0.0).
    want_i = np.argsort(x, axis=axis, kind="stable")
    np.testing.assert_array_equal(tf.argsort(x, axis=axis).numpy(), want_i)
    np.testing.assert_array_equal(tf.sort(x, axis=axis).numpy(),
                                  _np_sort(x, axis, False))
    # Descending: greatest (NaN) first, ties still in input order.
    moved = np.moveaxis(x, axis, -1)
    want_d = np.moveaxis(_descending_order(moved), -1, axis)
    got_d = tf.argsort(x, axis=axis, direction="DESCENDING")
    assert got_d.dtype == tf.int32
    np.testing.assert_array_equal(got_d.numpy(), want_d)
    np.testing.assert_array_equal(
        tf.sort(x, axis=axis, direction="DESCENDING").numpy(),
        np.take_along_axis(x, want_d, axis))


@SETTINGS
@given(x=sort_inputs(), data=st.data())
def test_top_k_is_stable_descending_prefix(x, data):
    k = data.draw(st.integers(0, x.shape[-1]))
    order = _descending_order(x)[..., :k]
    v, i = tf.math.top_k(x, k=k)
    np.testing.assert_array_equal(i.numpy(), order)
    np.testing.assert_array_equal(v.numpy(),
                                  np.take_along_axis(x, order, -1))


# ---- accuracy and determinism ----------------------------------------------

def test_float32_sum_of_16m_is_as_accurate_as_numpy():
    x = np.random.default_rng(1).random(1 << 24, dtype=np.float32)
    exact = np.sum(x, dtype=np.float64)
    got = float(tf.reduce_sum(x).numpy())
    ulp = float(np.spacing(np.float32(exact)))
    assert abs(got - exact) <= max(abs(float(np.sum(x)) - exact), ulp)
    got_mean = float(tf.reduce_mean(x).numpy())
    assert abs(got_mean - exact / x.size) <= 2 * float(
        np.spacing(np.float32(exact / x.size)))


@pytest.mark.parametrize("shape,axis", [((200001,), None), ((3, 70000), 1),
                                        ((70000, 3), 0), ((400, 500), 0),
                                        ((20, 3000, 4), [0, 2])])
def test_results_do_not_depend_on_thread_count(shape, axis):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    n = _C.get_num_threads()
    try:
        _C.set_num_threads(1)
        one = [f(x, axis).numpy() for f in (tf.reduce_sum, tf.reduce_max,
                                            tf.reduce_logsumexp)]
        _C.set_num_threads(max(n, 3))
        many = [f(x, axis).numpy() for f in (tf.reduce_sum, tf.reduce_max,
                                             tf.reduce_logsumexp)]
    finally:
        _C.set_num_threads(n)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


def test_integer_sums_wrap_and_means_truncate():
    x = np.array([100, 100, 100], np.int8)
    assert tf.reduce_sum(x).numpy() == np.int8(44)        # 300 mod 256
    assert tf.reduce_mean(np.array([-3, -4], np.int32)).numpy() == -3
    assert tf.reduce_mean(np.array([7, 8], np.int64)).numpy() == 7
    big = np.full(10, 2**62, np.int64)
    assert tf.reduce_sum(big).numpy() == np.sum(big)       # wraps as NumPy


def test_empty_reductions_give_identities():
    e32 = np.zeros((0, 3), np.float32)
    np.testing.assert_array_equal(tf.reduce_sum(e32, 0).numpy(), [0, 0, 0])
    np.testing.assert_array_equal(tf.reduce_prod(e32, 0).numpy(), [1, 1, 1])
    assert tf.reduce_max(e32).numpy() == -np.inf
    assert tf.reduce_min(e32).numpy() == np.inf
    assert np.isnan(tf.reduce_mean(e32).numpy())
    assert tf.reduce_logsumexp(e32).numpy() == -np.inf
    ei = np.zeros((0,), np.int32)
    assert tf.reduce_max(ei).numpy() == np.iinfo(np.int32).min
    assert tf.reduce_min(ei).numpy() == np.iinfo(np.int32).max
    assert tf.reduce_mean(ei).numpy() == 0
    assert tf.reduce_all(np.zeros((0,), bool)).numpy()
    assert not tf.reduce_any(np.zeros((0,), bool)).numpy()
    assert tf.reduce_sum(e32, 1).shape == (0,)


def test_logsumexp_does_not_overflow():
    x = np.array([1000.0, 1000.0, -np.inf], np.float32)
    np.testing.assert_allclose(tf.reduce_logsumexp(x).numpy(),
                               1000 + np.log(2), rtol=1e-6)
    assert tf.reduce_logsumexp(np.array([np.inf, 1.0])).numpy() == np.inf
    assert tf.reduce_logsumexp(np.array([-np.inf, -np.inf])).numpy() \
        == -np.inf
    assert np.isnan(tf.reduce_logsumexp(np.array([np.nan, 1.0])).numpy())


# ---- the Python API ------------------------------------------------------------

def test_namespaces():
    for n in ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
              "reduce_prod", "reduce_all", "reduce_any", "reduce_logsumexp",
              "argmax", "argmin", "cumsum"]:
        assert getattr(tf.math, n) is getattr(tf, n)
    assert tf.nn.top_k is tf.math.top_k
    assert callable(tf.math.cumprod) and callable(tf.math.reduce_variance)
    assert callable(tf.sort) and callable(tf.argsort)
    assert callable(tf.math.reduce_std)


def test_axis_forms_and_defaults():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want = x.sum(axis=(0, 2))
    for axis in ([0, 2], (2, 0), [-1, -3], np.array([0, 2]),
                 tf.constant([0, 2]), tf.constant([0, 2], tf.int64)):
        np.testing.assert_array_equal(tf.reduce_sum(x, axis).numpy(), want)
    assert tf.reduce_sum(x, tf.constant(1)).shape == (2, 4)
    assert tf.reduce_sum(x, np.int64(1), keepdims=True).shape == (2, 1, 4)
    assert tf.reduce_sum(x, keepdims=True).shape == (1, 1, 1)
    assert tf.reduce_sum([1, 2, 3]).dtype == tf.int32
    assert tf.argmax(x).dtype == tf.int64
    assert tf.argmax(x).shape == (3, 4)                  # axis None = 0
    assert tf.argmax(x, tf.constant(2), output_type=tf.int32).dtype \
        == tf.int32
    assert tf.math.top_k(x, 2, index_type=tf.int64).indices.dtype \
        == tf.int64
    assert tf.math.top_k(x).values.shape == (2, 3, 1)    # k defaults to 1
    assert tf.math.top_k(x, k=tf.constant(2)).values.shape == (2, 3, 2)
    assert tf.argsort(x).dtype == tf.int32


def test_float16_goes_through_float32():
    x = np.linspace(-1, 1, 301).astype(np.float16)
    for fn in (tf.reduce_sum, tf.reduce_mean, tf.reduce_max,
               tf.reduce_logsumexp):
        assert fn(x).dtype == tf.float16
    np.testing.assert_allclose(tf.reduce_sum(x).numpy(),
                               x.astype(np.float64).sum(), atol=1e-2)
    assert tf.sort(x).dtype == tf.float16
    assert tf.argmax(x).numpy() == 300


def test_variance_and_std():
    x = np.random.default_rng(3).standard_normal((4, 5))
    np.testing.assert_allclose(tf.math.reduce_variance(x, 1).numpy(),
                               np.var(x, 1))
    with pytest.raises(TypeError):
        tf.math.reduce_variance(np.array([1, 2, 3]))
    if not hasattr(tf.math, "sqrt"):
        with pytest.raises(NotImplementedError):
            tf.math.reduce_std(x)
    else:
        np.testing.assert_allclose(tf.math.reduce_std(x, 0).numpy(),
                                   np.std(x, 0))


def test_large_reductions_match_numpy_on_every_path():
    rng = np.random.default_rng(4)
    for shape, axis in [((1 << 20,), None), ((7, 200000), 1),
                        ((200000, 7), 0), ((3, 5000, 70), 1),
                        ((40, 30, 20, 10), [0, 2]),
                        ((40, 30, 20, 10), [1, 3])]:
        x = rng.standard_normal(shape).astype(np.float32)
        ax = tuple(axis) if isinstance(axis, list) else axis
        np.testing.assert_allclose(
            tf.reduce_sum(x, axis).numpy(),
            x.astype(np.float64).sum(axis=ax), rtol=1e-5, atol=1e-3)
        np.testing.assert_array_equal(tf.reduce_max(x, axis).numpy(),
                                      x.max(axis=ax))
        xi = (x * 100).astype(np.int32)
        np.testing.assert_array_equal(tf.reduce_sum(xi, axis).numpy(),
                                      xi.sum(axis=ax, dtype=np.int32))
    x = rng.standard_normal((1 << 20,)).astype(np.float32)
    x[777777] = 99
    assert tf.argmax(x).numpy() == 777777
    x[5] = np.nan
    assert tf.argmax(x).numpy() == 5 and tf.argmin(x).numpy() == 5


# ---- errors ------------------------------------------------------------------

InvalidArgument = tf.errors.InvalidArgumentError


def test_bad_axes_are_errors_naming_op_axis_and_shape():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(InvalidArgument, match=r"Sum.*dimension 2.*\[2,3\]"):
        tf.reduce_sum(x, 2)
    with pytest.raises(InvalidArgument, match=r"Max.*-3.*\[2,3\]"):
        tf.reduce_max(x, [-3])
    with pytest.raises(InvalidArgument, match=r"Mean.*duplicate.*\[0,-2\]"):
        tf.reduce_mean(x, [0, -2])
    with pytest.raises(InvalidArgument, match="Sum"):
        tf.reduce_sum(np.float32(1), 0)
    with pytest.raises(InvalidArgument):
        tf.reduce_sum(x, [[0], [1]])
    with pytest.raises(TypeError):
        tf.reduce_sum(x, 0.5)


def test_bad_dtypes_are_errors():
    with pytest.raises(InvalidArgument, match="Sum.*bool"):
        tf.reduce_sum(np.array([True]))
    with pytest.raises(InvalidArgument, match="All.*float32"):
        tf.reduce_all(np.zeros(2, np.float32))
    with pytest.raises(InvalidArgument, match="ReduceLogSumExp.*int32"):
        tf.reduce_logsumexp(np.zeros(2, np.int32))
    with pytest.raises(InvalidArgument, match="Cumsum.*bool"):
        tf.cumsum(np.array([True]))
    with pytest.raises(InvalidArgument, match="Sort.*bool"):
        tf.sort(np.array([True]))
    with pytest.raises(TypeError):
        tf.argmax(np.zeros(3), output_type=tf.float32)


def test_arg_scan_sort_topk_errors():
    with pytest.raises(InvalidArgument, match=r"ArgMax.*empty.*\[2,0\]"):
        tf.argmax(np.zeros((2, 0)), 1)
    with pytest.raises(InvalidArgument, match="ArgMin.*axis 2"):
        tf.argmin(np.zeros((2, 3)), 2)
    with pytest.raises(InvalidArgument, match="ArgMax"):
        tf.argmax(np.float32(3))
    with pytest.raises(InvalidArgument, match="Cumsum.*axis -3"):
        tf.cumsum(np.zeros((2, 3)), -3)
    with pytest.raises(InvalidArgument, match=r"TopKV2.*k=4.*had 3"):
        tf.math.top_k(np.zeros((2, 3)), 4)
    with pytest.raises(InvalidArgument, match="TopKV2.*k >= 0"):
        tf.math.top_k(np.zeros((2, 3)), -1)
    with pytest.raises(InvalidArgument, match="TopKV2"):
        tf.math.top_k(np.float32(1))
    with pytest.raises(ValueError, match="direction"):
        tf.sort(np.zeros(3), direction="UP")
    with pytest.raises(InvalidArgument, match="Sort"):
        tf.sort(np.float32(1))
    with pytest.raises(InvalidArgument, match="Sort.*axis 1"):
        tf.argsort(np.zeros(3), axis=1)


def test_no_tensor_leaks():
    before = _C.live_counts()[0]
    x = np.random.default_rng(5).standard_normal((50, 40)).astype(np.float32)
    for _ in range(3):
        tf.reduce_sum(x, 0)
        tf.reduce_logsumexp(x, [0, 1])
        tf.math.top_k(x, 3)
        tf.sort(x, 0)
        tf.cumsum(x, 1)
        tf.argmax(x, 1)
        with pytest.raises(InvalidArgument):
            tf.reduce_sum(x, 5)
    assert _C.live_counts()[0] == before
