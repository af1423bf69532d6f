"""tensor[...] against NumPy: ints, slices (negative steps too), ...,
tf.newaxis, scalar int tensors, boolean masks, and the errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tfmini as tf
from tfmini.ops import array_ops

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)

KEYS = [
    0, -1, 1, (1, 2), (-1, -2, -3), (0, 1, 2),
    slice(None), slice(1, None), slice(None, -1), slice(None, None, -1),
    (slice(None), 1), (Ellipsis, 0), (Ellipsis, slice(1, 3)),
    (0, Ellipsis, -1), (None,), (None, 0), (Ellipsis, None),
    (slice(None), None, slice(None, None, 2)),
    (slice(None, None, -2), slice(3, 0, -1), slice(-1, -5, -2)),
    (slice(10, 20),), (slice(-20, 20, 3),), (slice(5, 1),),
    (1, None, Ellipsis, None, 2), (), Ellipsis,
    (slice(None), slice(None), slice(None), None),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_basic_keys(key, dtype):
    x = X.astype(dtype)
    got = tf.constant(x)[key]
    want = x[key]
    assert got.shape == want.shape
    assert got.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), want)


def test_scalar_and_empty():
    s = tf.constant(3.5)
    assert float(s[()]) == 3.5
    assert s[None].shape == (1,)
    assert s[...].shape == ()
    e = tf.zeros([0, 3])
    assert e[:, 1].shape == (0,)
    assert e[::-1].shape == (0, 3)


def test_tensor_and_numpy_indices():
    t = tf.constant(X)
    np.testing.assert_array_equal(t[tf.constant(1)].numpy(), X[1])
    np.testing.assert_array_equal(t[tf.constant(-1, tf.int64)].numpy(),
                                  X[-1])
    np.testing.assert_array_equal(t[np.int64(1), np.int32(2)].numpy(),
                                  X[1, 2])
    np.testing.assert_array_equal(
        t[tf.constant(0):tf.constant(2), ::tf.constant(2)].numpy(),
        X[0:2, ::2])


def test_index_with_tensor_index_method():
    t = tf.constant(X)
    i = tf.constant(2)
    assert list(range(5))[i] == 2          # Tensor.__index__
    np.testing.assert_array_equal(t[:, i].numpy(), X[:, 2])


def test_symbolic_style_gather_path():
    """Scalar index tensors that cannot be attributes (symbolic while
    tracing) become a whole slice plus a gather; forced here eagerly."""
    t = tf.constant(X)
    cases = [
        ((tf.constant(1),), X[1]),
        ((slice(None), tf.constant(2)), X[:, 2]),
        ((tf.constant(1), slice(None, None, -1), tf.constant(3)),
         X[1, ::-1, 3]),
        ((Ellipsis, tf.constant(0)), X[..., 0]),
        ((None, tf.constant(1), 2), X[None, 1, 2]),
        ((tf.constant(0), None, Ellipsis, 1), X[0, None, ..., 1]),
    ]
    for key, want in cases:
        got = array_ops._getitem(t, key, _force_dynamic=True)
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(got.numpy(), want)


def test_boolean_mask_key():
    t = tf.constant(X)
    m = X[:, :, 0] > 5
    np.testing.assert_array_equal(t[tf.constant(m)].numpy(), X[m])
    np.testing.assert_array_equal(t[m].numpy(), X[m])


def test_iteration_uses_indexing():
    rows = [r.numpy() for r in tf.constant(X)]
    assert len(rows) == 2
    np.testing.assert_array_equal(rows[1], X[1])


@pytest.mark.parametrize("key,words", [
    (5, ["slice index 5 of dimension 0 out of bounds"]),
    (-3, ["slice index -3 of dimension 0 out of bounds"]),
    ((0, 3), ["slice index 3 of dimension 1 out of bounds"]),
    ((0, 0, 0, 0), ["StridedSlice", "Index out of range"]),
    ((Ellipsis, Ellipsis), ["Multiple ellipses"]),
    ((slice(None, None, 0),), ["strides[0] must be non-zero"]),
])
def test_errors(key, words):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.constant(X)[key]
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize("key", ["a", 1.5, [1.5], tf.constant(1.0),
                                 tf.constant([0, 1])])
def test_bad_key_types(key):
    with pytest.raises(TypeError) as e:
        tf.constant(X)[key]
    assert "valid indices" in str(e.value)


def test_scalar_item_of_vector_tensor_index_is_type_error():
    with pytest.raises(TypeError):
        tf.constant(X)[tf.constant([1])]


# ---- hypothesis: random keys against NumPy ---------------------------------

bounds = st.one_of(st.none(), st.integers(-7, 7))


@st.composite
def shapes_and_keys(draw):
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=4)))
    n = draw(st.integers(0, len(shape) + 2))
    key = []
    has_ellipsis = False
    for _ in range(n):
        kind = draw(st.sampled_from(["int", "slice", "slice", "none",
                                     "ellipsis"]))
        if kind == "int":
            key.append(draw(st.integers(-6, 6)))
        elif kind == "slice":
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(
                lambda s: s != 0)))
            key.append(slice(draw(bounds), draw(bounds), step))
        elif kind == "none":
            key.append(None)
        elif not has_ellipsis:
            has_ellipsis = True
            key.append(Ellipsis)
    return shape, tuple(key)


@settings(max_examples=300, deadline=None)
@given(shapes_and_keys())
def test_random_keys_match_numpy(case):
    shape, key = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    try:
        want = x[key]
    except (IndexError, ValueError):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.constant(x)[key]
        return
    got = tf.constant(x)[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


@settings(max_examples=100, deadline=None)
@given(shapes_and_keys())
def test_random_keys_strided_slice_direct(case):
    """The same keys through tf.strided_slice with masks built by hand,
    for keys without ellipsis/new axes (plain begin/end/stride lists)."""
    shape, key = case
    if any(k is None or k is Ellipsis or isinstance(k, int) for k in key):
        return
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    if len(key) > len(shape):
        return
    begin = [0 if k.start is None else k.start for k in key]
    end = [0 if k.stop is None else k.stop for k in key]
    strides = [1 if k.step is None else k.step for k in key]
    bmask = sum(1 << i for i, k in enumerate(key) if k.start is None)
    emask = sum(1 << i for i, k in enumerate(key) if k.stop is None)
    if not key:
        return
    got = tf.strided_slice(tf.constant(x), begin, end, strides,
                           begin_mask=bmask, end_mask=emask)
    np.testing.assert_array_equal(got.numpy(), x[key])


@settings(max_examples=150, deadline=None)
@given(shapes_and_keys())
def test_random_keys_slice_grad(case):
    """StridedSliceGrad (indexing's gradient) puts dy back where the
    slice read: zeros elsewhere."""
    shape, key = case
    x = np.zeros(shape, np.float32)
    try:
        view = x[key]
    except (IndexError, ValueError):
        return
    dy = np.arange(1, view.size + 1, dtype=np.float32).reshape(view.shape)
    ints, masks, _ = array_ops._slice_spec(key)
    n = len(ints) // 3
    got = array_ops._strided_slice_grad(dy, list(shape), ints[:n],
                                        ints[n:2 * n], ints[2 * n:], *masks)
    want = np.zeros(shape, np.float32)
    want[key] = dy
    np.testing.assert_array_equal(got.numpy(), want)


def test_slice_grad_dy_shape_mismatch():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        array_ops._strided_slice_grad(tf.zeros([2]), [3, 4], [0], [2], [1])
    assert "StridedSliceGrad" in str(e.value)
    assert "[2,4]" in str(e.value)


# ---- regressions found by tests/test_fuzz_ops.py ---------------------------

@pytest.mark.parametrize("mask", [1 << 10, 1 << 3, -2 ** 63])
def test_ellipsis_mask_bits_past_the_spec_mean_nothing(mask):
    """An ellipsis bit past the spec's entries once suppressed the
    implicit trailing ellipsis and left dims unplanned (uninitialized
    reads: garbage values)."""
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    got = tf.strided_slice(tf.constant(x), [0], [1], ellipsis_mask=mask)
    np.testing.assert_array_equal(got.numpy(), x[0:1])


def test_int64_edge_indices():
    t = tf.constant(X)
    IAE = tf.errors.InvalidArgumentError
    for key in (2 ** 63 - 1, -2 ** 63, (0, 2 ** 63 - 1)):
        with pytest.raises(IAE, match="StridedSlice"):
            t[key]
    for key in (2 ** 63, -2 ** 70, (0, 2 ** 64)):
        with pytest.raises(IndexError, match="StridedSlice"):
            t[key]
    # Slice bounds and steps past int64 clamp, as Python's do.
    for key in (slice(None, 2 ** 70), slice(-2 ** 70, None),
                slice(None, None, 2 ** 70), slice(None, None, -2 ** 70),
                (Ellipsis, slice(2 ** 64, -2 ** 64, -1))):
        np.testing.assert_array_equal(t[key].numpy(), X[key])
