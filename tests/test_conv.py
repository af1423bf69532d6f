"""Convolution and pooling beyond the OpSpec table: a grid of strides,
paddings and dilations against NumPy, backprop ops against finite
differences of the forward op, pooling ties, the parallel paths, shape
errors, and (where the runtime has them) unknown dims and tape grads."""
import gc
import itertools

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID
from tfmini.ops import conv_ops
from specs.spec_conv import (np_avg_pool, np_avg_pool_grad, np_conv2d,
                             np_conv2d_backprop_filter,
                             np_conv2d_backprop_input, np_max_pool,
                             np_max_pool_grad, pads_1d)


def rand(rng, shape, dtype="float64"):
    return rng.standard_normal(shape).astype(dtype)


def naive_conv2d(x, f, strides, padding, dilations):
    """One output element at a time: the plainest possible reference."""
    n, h, w, c = x.shape
    kh, kw, _, o = f.shape
    (sh, sw), (dh, dw) = strides, dilations
    oh, pt, _ = pads_1d(h, kh, sh, dh, padding)
    ow, pl, _ = pads_1d(w, kw, sw, dw, padding)
    y = np.zeros((n, oh, ow, o))
    for b, i, j, q in itertools.product(range(n), range(oh), range(ow),
                                        range(o)):
        for a, e, ch in itertools.product(range(kh), range(kw), range(c)):
            ih, iw = i * sh - pt + a * dh, j * sw - pl + e * dw
            if 0 <= ih < h and 0 <= iw < w:
                y[b, i, j, q] += x[b, ih, iw, ch] * f[a, e, ch, q]
    return y


@pytest.mark.parametrize("strides,padding,dilations", [
    ((1, 1), "SAME", (1, 1)), ((2, 3), "SAME", (1, 1)),
    ((2, 1), "VALID", (1, 2)), ((1, 1), "SAME", (2, 2))])
def test_reference_agrees_with_naive_loop(strides, padding, dilations):
    rng = np.random.default_rng(1)
    x, f = rand(rng, (2, 6, 7, 2)), rand(rng, (3, 2, 2, 3))
    np.testing.assert_allclose(
        np_conv2d(x, f, strides, padding, dilations),
        naive_conv2d(x, f, strides, padding, dilations), rtol=1e-12)


GRID = [(s, p, d) for s in [(1, 1), (2, 2), (3, 2)]
        for p in ["SAME", "VALID"] for d in [(1, 1), (2, 2), (1, 3)]]


@pytest.mark.parametrize("strides,padding,dilations", GRID)
def test_conv2d_grid_matches_numpy(strides, padding, dilations):
    rng = np.random.default_rng(2)
    x, f = rand(rng, (2, 9, 10, 3)), rand(rng, (3, 2, 3, 4))
    got = tf.nn.conv2d(x, f, list(strides), padding,
                       dilations=list(dilations))
    np.testing.assert_allclose(
        got.numpy(), np_conv2d(x, f, strides, padding, dilations),
        rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("xs,fs", [((4, 16, 16, 8), (3, 3, 8, 16)),
                                   ((3, 20, 20, 16), (1, 1, 16, 24)),
                                   ((2, 12, 11, 5), (5, 4, 5, 33))])
@pytest.mark.parametrize("threads", [1, 2])
def test_big_shapes_all_three_ops(xs, fs, threads):
    """Many row blocks, edge tiles of the GEMM and the threaded paths."""
    rng = np.random.default_rng(3)
    x, f = rand(rng, xs, "float32"), rand(rng, fs, "float32")
    y = np_conv2d(x, f, (1, 1), "SAME")
    dy = rand(rng, y.shape, "float32")
    old = _C.get_num_threads()
    _C.set_num_threads(threads)
    try:
        got_y = tf.nn.conv2d(x, f, 1, "SAME").numpy()
        got_dx = conv_ops.conv2d_backprop_input(xs, f, dy, 1, "SAME")
        got_df = conv_ops.conv2d_backprop_filter(x, fs, dy, 1, "SAME")
    finally:
        _C.set_num_threads(old)
    tol = dict(rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(got_y, y, **tol)
    np.testing.assert_allclose(
        got_dx.numpy(), np_conv2d_backprop_input(xs, f, dy,
                                                 padding="SAME"), **tol)
    np.testing.assert_allclose(
        got_df.numpy(), np_conv2d_backprop_filter(x, fs, dy,
                                                  padding="SAME"),
        rtol=2e-4, atol=2e-3)


def test_backprop_filter_is_deterministic():
    rng = np.random.default_rng(4)
    x = rand(rng, (8, 16, 16, 4), "float32")
    dy = rand(rng, (8, 16, 16, 8), "float32")
    runs = [conv_ops.conv2d_backprop_filter(x, (3, 3, 4, 8), dy, 1,
                                            "SAME").numpy()
            for _ in range(3)]
    assert all(np.array_equal(runs[0], r) for r in runs[1:])


@pytest.mark.parametrize("strides", [2, [2], [2, 2], [1, 2, 2, 1]])
def test_stride_forms_agree(strides):
    rng = np.random.default_rng(5)
    x, f = rand(rng, (1, 7, 7, 2)), rand(rng, (3, 3, 2, 2))
    np.testing.assert_allclose(
        tf.nn.conv2d(x, f, strides, "SAME").numpy(),
        np_conv2d(x, f, (2, 2), "SAME"), rtol=1e-10)


# ---- backprop ops against finite differences of Conv2D --------------
FD_CASES = [((1, 5, 6, 2), (3, 2, 2, 3), (2, 2), "SAME", (1, 1)),
            ((2, 6, 5, 1), (2, 2, 1, 2), (1, 2), "VALID", (2, 1)),
            ((1, 4, 5, 2), (2, 3, 2, 2), (1, 1), [[0, 0], [1, 0], [2, 1],
                                                   [0, 0]], (1, 1))]


def _fd_grad(fn, v, eps=1e-3):
    g = np.zeros_like(v)
    for idx in np.ndindex(v.shape):
        up, down = v.copy(), v.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (fn(up) - fn(down)) / (2 * eps)
    return g


@pytest.mark.parametrize("xs,fs,strides,padding,dilations", FD_CASES)
def test_backprop_ops_match_finite_differences(xs, fs, strides, padding,
                                               dilations):
    rng = np.random.default_rng(6)
    x, f = rand(rng, xs), rand(rng, fs)
    kw = dict(strides=list(strides), padding=padding,
              dilations=list(dilations))
    dy = rand(rng, tf.nn.conv2d(x, f, **kw).shape)

    def loss(xv, fv):
        return float(np.sum(tf.nn.conv2d(xv, fv, **kw).numpy() * dy))

    want_dx = _fd_grad(lambda v: loss(v, f), x)
    want_df = _fd_grad(lambda v: loss(x, v), f)
    got_dx = conv_ops.conv2d_backprop_input(xs, f, dy, **kw).numpy()
    got_df = conv_ops.conv2d_backprop_filter(x, fs, dy, **kw).numpy()
    np.testing.assert_allclose(got_dx, want_dx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_df, want_df, rtol=1e-6, atol=1e-8)

    # The three-input forms (what the gradient rules use) agree.
    ints, mode = _attrs(strides, padding, dilations)
    three_dx = _C.call(ID["Conv2DBackpropInput"], (x, f, dy), ints=ints,
                       i=(mode,))
    three_df = _C.call(ID["Conv2DBackpropFilter"], (x, f, dy), ints=ints,
                       i=(mode,))
    np.testing.assert_array_equal(three_dx.numpy(), got_dx)
    np.testing.assert_array_equal(three_df.numpy(), got_df)


def _attrs(strides, padding, dilations):
    if isinstance(padding, str):
        mode, pads = {"VALID": 0, "SAME": 1}[padding], (0, 0, 0, 0)
    else:
        mode, pads = 2, tuple(padding[1]) + tuple(padding[2])
    return tuple(strides) + tuple(dilations) + (0,) * 4 + pads, mode


def test_backprop_input_sizes_may_leave_batch_and_depth_unknown():
    rng = np.random.default_rng(7)
    f, dy = rand(rng, (3, 3, 2, 4)), rand(rng, (3, 4, 4, 4))
    full = conv_ops.conv2d_backprop_input((3, 7, 8, 2), f, dy, 2, "SAME")
    part = conv_ops.conv2d_backprop_input((-1, 7, 8, -1), f, dy, 2, "SAME")
    assert part.shape == (3, 7, 8, 2)
    np.testing.assert_array_equal(full.numpy(), part.numpy())


def test_conv2d_transpose_is_backprop_input():
    rng = np.random.default_rng(8)
    x = rand(rng, (2, 4, 4, 3))          # [batch, h, w, in]
    f = rand(rng, (3, 3, 5, 3))          # [h, w, out, in]
    out_shape = (2, 8, 7, 5)
    got = tf.nn.conv2d_transpose(x, f, out_shape, 2, "SAME")
    assert got.shape == out_shape
    want = np_conv2d_backprop_input(out_shape, f, x, (2, 2), "SAME")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    as_tensor = tf.nn.conv2d_transpose(x, f, tf.constant(out_shape), 2,
                                       "SAME")
    np.testing.assert_array_equal(as_tensor.numpy(), got.numpy())


# ---- pooling --------------------------------------------------------
def test_max_pool_grad_ties_go_to_first():
    x = np.ones((1, 4, 4, 2))
    g = np.arange(1.0, 9.0).reshape(1, 2, 2, 2)
    y = tf.nn.max_pool2d(x, 2, 2, "VALID")
    dx = conv_ops._max_pool_grad(x, y, g, 2, 2, "VALID").numpy()
    want = np.zeros_like(x)
    want[0, ::2, ::2] = g[0]
    np.testing.assert_array_equal(dx, want)


def test_max_pool_grad_accumulates_over_overlapping_windows():
    x = np.zeros((1, 3, 3, 1))
    x[0, 1, 1, 0] = 5.0                    # the max of every 2x2 window
    g = np.ones((1, 2, 2, 1))
    y = tf.nn.max_pool2d(x, 2, 1, "VALID")
    dx = conv_ops._max_pool_grad(x, y, g, 2, 1, "VALID").numpy()
    assert dx[0, 1, 1, 0] == 4.0 and dx.sum() == 4.0


def test_avg_pool_same_divides_by_real_cells():
    x = np.arange(1.0, 10.0).reshape(1, 3, 3, 1)
    y = tf.nn.avg_pool2d(x, 2, 2, "SAME").numpy()
    # Windows: [1,2,4,5], [3,6], [7,8], [9]; padding is not counted.
    np.testing.assert_allclose(y[0, :, :, 0], [[3.0, 4.5], [7.5, 9.0]])


@pytest.mark.parametrize("k,s,padding", [((2, 2), (2, 2), "VALID"),
                                         ((3, 3), (2, 1), "SAME"),
                                         ((2, 3), (1, 2), "SAME")])
def test_pool_grads_match_finite_differences(k, s, padding):
    rng = np.random.default_rng(9)
    # Distinct values, far apart: no ties within eps.
    x = rng.permutation(60).reshape(1, 5, 6, 2).astype(np.float64) * 0.1
    y = np_max_pool(x, k, s, padding)
    g = rand(rng, y.shape)
    kw = dict(ksize=list(k), strides=list(s), padding=padding)
    got_max = conv_ops._max_pool_grad(x, tf.nn.max_pool2d(x, **kw), g, k, s,
                                      padding).numpy()
    got_avg = conv_ops._avg_pool_grad(x, g, k, s, padding).numpy()
    want_max = _fd_grad(
        lambda v: float(np.sum(tf.nn.max_pool2d(v, **kw).numpy() * g)), x)
    want_avg = _fd_grad(
        lambda v: float(np.sum(tf.nn.avg_pool2d(v, **kw).numpy() * g)), x)
    np.testing.assert_allclose(got_max, want_max, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_avg, want_avg, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_max, np_max_pool_grad(x, g, k, s,
                                                         padding))
    np.testing.assert_allclose(got_avg, np_avg_pool_grad(x.shape, g, k, s,
                                                         padding))


@pytest.mark.parametrize("threads", [1, 2])
def test_pooling_big_shapes(threads):
    rng = np.random.default_rng(10)
    x = rand(rng, (8, 32, 32, 16), "float32")
    old = _C.get_num_threads()
    _C.set_num_threads(threads)
    try:
        mx = tf.nn.max_pool2d(x, 3, 2, "SAME").numpy()
        av = tf.nn.avg_pool2d(x, 3, 2, "SAME").numpy()
    finally:
        _C.set_num_threads(old)
    np.testing.assert_array_equal(mx, np_max_pool(x, (3, 3), (2, 2),
                                                  "SAME"))
    np.testing.assert_allclose(av, np_avg_pool(x, (3, 3), (2, 2), "SAME"),
                               rtol=1e-5, atol=1e-6)


def test_max_pool_nan_propagates():
    x = np.zeros((1, 2, 2, 1), np.float32)
    x[0, 1, 0, 0] = np.nan
    assert np.isnan(tf.nn.max_pool2d(x, 2, 2, "VALID").numpy()).all()


def test_float16_computes_in_float32():
    rng = np.random.default_rng(11)
    x, f = rand(rng, (1, 5, 5, 2), "float16"), rand(rng, (3, 3, 2, 2),
                                                    "float16")
    got = tf.nn.conv2d(x, f, 1, "SAME")
    assert got.dtype == tf.float16
    want = np_conv2d(x.astype(np.float32), f.astype(np.float32), (1, 1),
                     "SAME")
    np.testing.assert_allclose(got.numpy().astype(np.float32), want,
                               rtol=2e-2, atol=2e-2)


# ---- errors -----------------------------------------------------------
X, F = np.zeros((1, 5, 5, 3), np.float32), np.zeros((3, 3, 3, 4),
                                                    np.float32)
ERRORS = [
    ("channels", lambda: tf.nn.conv2d(X, np.zeros((3, 3, 2, 4),
                                                  np.float32), 1, "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2D", "[1,5,5,3]", "[3,3,2,4]"]),
    ("padding string", lambda: tf.nn.conv2d(X, F, 1, "FULL"),
     tf.errors.InvalidArgumentError, ["Conv2D", "FULL"]),
    ("lowercase padding", lambda: tf.nn.conv2d(X, F, 1, "same"),
     tf.errors.InvalidArgumentError, ["Conv2D", "same"]),
    ("zero stride", lambda: tf.nn.conv2d(X, F, 0, "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2D", "strides"]),
    ("batch stride", lambda: tf.nn.conv2d(X, F, [2, 1, 1, 1], "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2D", "strides"]),
    ("stride length", lambda: tf.nn.conv2d(X, F, [1, 1, 1], "SAME"),
     ValueError, ["strides", "3"]),
    ("window > input", lambda: tf.nn.conv2d(
        X, np.zeros((7, 2, 3, 1), np.float32), 1, "VALID"),
     tf.errors.InvalidArgumentError, ["Conv2D", "[1,5,5,3]", "VALID"]),
    ("dilated window > input", lambda: tf.nn.conv2d(
        X, F, 1, "VALID", dilations=3),
     tf.errors.InvalidArgumentError, ["Conv2D", "7x7"]),
    ("rank", lambda: tf.nn.conv2d(np.zeros((5, 5, 3), np.float32), F, 1,
                                  "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2D", "4-D", "[5,5,3]"]),
    ("int dtype", lambda: tf.nn.conv2d(X.astype(np.int32),
                                       F.astype(np.int32), 1, "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2D", "int32"]),
    ("dtype mismatch", lambda: tf.nn.conv2d(X, F.astype(np.float64), 1,
                                            "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2D", "float32", "float64"]),
    ("NCHW", lambda: tf.nn.conv2d(X, F, 1, "SAME", data_format="NCHW"),
     tf.errors.UnimplementedError, ["NHWC"]),
    ("pool window > input", lambda: tf.nn.max_pool2d(X, 6, 1, "VALID"),
     tf.errors.InvalidArgumentError, ["MaxPool", "[1,5,5,3]"]),
    ("pool ksize", lambda: tf.nn.avg_pool2d(X, 0, 1, "VALID"),
     tf.errors.InvalidArgumentError, ["AvgPool", "ksize"]),
    ("pool explicit", lambda: tf.nn.max_pool2d(
        X, 2, 1, [[0, 0], [1, 1], [1, 1], [0, 0]]),
     tf.errors.InvalidArgumentError, ["MaxPool", "padding"]),
    ("backprop input dy", lambda: conv_ops.conv2d_backprop_input(
        (1, 5, 5, 3), F, np.zeros((1, 4, 5, 4), np.float32), 1, "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2DBackpropInput", "[1,4,5,4]",
                                      "[1,5,5,4]"]),
    ("backprop filter dy", lambda: conv_ops.conv2d_backprop_filter(
        X, (3, 3, 3, 4), np.zeros((1, 5, 5, 2), np.float32), 1, "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2DBackpropFilter",
                                      "[1,5,5,2]"]),
    ("huge stride", lambda: tf.nn.conv2d(X, F, 2**40, "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2D", "int32"]),
    ("huge input_sizes", lambda: conv_ops.conv2d_backprop_input(
        (1, 2**40, 5, 3), F, np.zeros((1, 5, 5, 4), np.float32), 1,
        "SAME"),
     tf.errors.InvalidArgumentError, ["Conv2DBackpropInput", "input_sizes"]),
    ("max pool grad shape", lambda: conv_ops._max_pool_grad(
        X, np.zeros((1, 2, 2, 3), np.float32),
        np.zeros((1, 3, 2, 3), np.float32), 2, 2, "VALID"),
     tf.errors.InvalidArgumentError, ["MaxPoolGrad", "[1,3,2,3]"]),
]


@pytest.mark.parametrize("fn,exc,words", [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_errors_name_op_and_shapes(fn, exc, words):
    before = _C.live_counts()[:2]
    with pytest.raises(exc) as info:
        fn()
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    del info
    assert _C.live_counts()[:2] == before


def test_empty_inputs():
    f = np.ones((3, 3, 2, 4), np.float32)
    y = tf.nn.conv2d(np.zeros((0, 5, 5, 2), np.float32), f, 1, "SAME")
    assert y.shape == (0, 5, 5, 4)
    x = np.ones((2, 5, 5, 0), np.float32)
    y = tf.nn.conv2d(x, np.ones((3, 3, 0, 4), np.float32), 1, "SAME")
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 5, 5, 4)))


# ---- shape rules on unknown dims (-1), as tracing runs them ------------
# Called through ctypes with the structs of csrc/ops/op.h (keep in step).
import ctypes  # noqa: E402


class _Shape(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int), ("dims", ctypes.c_int64 * 8)]


class _Meta(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("shape", _Shape)]


class _Attrs(ctypes.Structure):
    _fields_ = [("n_ints", ctypes.c_int), ("ints", ctypes.c_int64 * 64),
                ("i", ctypes.c_int64 * 6), ("f", ctypes.c_double * 4),
                ("dtype", ctypes.c_int)]


_LIB = ctypes.CDLL(_C.__file__)
_LIB.tfm_error_message.restype = ctypes.c_char_p
_F32 = 7
N = None


def _infer(rule, op, shapes, ints, padding):
    metas = (_Meta * len(shapes))()
    for k, shape in enumerate(shapes):
        metas[k].dtype = _F32
        metas[k].shape.ndim = len(shape)
        for d, v in enumerate(shape):
            metas[k].shape.dims[d] = -1 if v is None else v
    a = _Attrs()
    a.n_ints = len(ints)
    for k, v in enumerate(ints):
        a.ints[k] = v
    a.i[0] = {"VALID": 0, "SAME": 1}[padding]
    out = (_Meta * 256)()
    nout = ctypes.c_int(0)
    rc = getattr(_LIB, rule)(ID[op], metas, len(shapes), ctypes.byref(a),
                             out, ctypes.byref(nout))
    if rc:
        raise tf.errors.InvalidArgumentError(
            None, None, _LIB.tfm_error_message().decode())
    assert nout.value == 1
    return tuple(None if out[0].shape.dims[d] < 0 else out[0].shape.dims[d]
                 for d in range(out[0].shape.ndim))


CONV, BPI, BPF = ("tfm_infer_conv2d", "tfm_infer_conv2d_backprop_input",
                  "tfm_infer_conv2d_backprop_filter")
S1, S2 = [1, 1, 1, 1], [2, 2, 1, 1]


@pytest.mark.parametrize("rule,op,shapes,ints,padding,want", [
    (CONV, "Conv2D", [(N, 8, 8, 1), (3, 3, 1, 32)], S1, "SAME",
     (N, 8, 8, 32)),
    (CONV, "Conv2D", [(N, 7, N, 3), (3, 2, 3, 4)], S2, "SAME", (N, 4, N, 4)),
    (CONV, "Conv2D", [(N, N, N, N), (3, 3, 3, 4)], S1, "VALID",
     (N, N, N, 4)),
    (CONV, "Conv2D", [(2, 8, 8, 3), (N, 3, 3, N)], S1, "VALID",
     (2, N, 6, N)),
    (BPI, "Conv2DBackpropInput", [(N, 8, 8, 1), (3, 3, 1, 32),
                                  (N, 8, 8, 32)], S1, "SAME", (N, 8, 8, 1)),
    (BPI, "Conv2DBackpropInput", [(3, 3, 1, 32), (N, 4, 4, 32)],
     S2 + [-1, 8, 7, -1], "SAME", (N, 8, 7, 1)),
    (BPI, "Conv2DBackpropInput", [(N, N, N, 2), (3, 3, 2, 4),
                                  (N, N, N, 4)], S2, "VALID", (N, N, N, 2)),
    (BPF, "Conv2DBackpropFilter", [(N, 8, 8, 1), (3, 3, 1, 32),
                                   (N, 8, 8, 32)], S1, "SAME",
     (3, 3, 1, 32)),
    (BPF, "Conv2DBackpropFilter", [(N, 9, 9, 2), (N, 4, 4, 5)],
     S2 + [3, 3, 2, 5], "VALID", (3, 3, 2, 5)),
    ("tfm_infer_pool", "MaxPool", [(N, 8, 8, 32)], [2, 2, 2, 2], "VALID",
     (N, 4, 4, 32)),
    ("tfm_infer_pool", "AvgPool", [(N, N, 5, 3)], [2, 2, 3, 3], "SAME",
     (N, N, 3, 3)),
    ("tfm_infer_max_pool_grad", "MaxPoolGrad",
     [(N, 8, 8, 3), (N, 4, 4, 3), (N, 4, 4, 3)], [2, 2, 2, 2], "VALID",
     (N, 8, 8, 3)),
    ("tfm_infer_max_pool_grad", "MaxPoolGradGrad",
     [(N, 8, 8, 3), (N, 4, 4, 3), (N, 8, 8, 3)], [2, 2, 2, 2], "VALID",
     (N, 4, 4, 3)),
    ("tfm_infer_avg_pool_grad", "AvgPoolGrad", [(N, 8, 8, 3), (N, 4, 4, 3)],
     [2, 2, 2, 2], "VALID", (N, 8, 8, 3)),
])
def test_shape_rules_with_unknown_dims(rule, op, shapes, ints, padding,
                                       want):
    assert _infer(rule, op, shapes, ints, padding) == want


@pytest.mark.parametrize("rule,op,shapes,ints,words", [
    (CONV, "Conv2D", [(N, 8, 8, 2), (3, 3, 1, 32)], S1, ["[?,8,8,2]"]),
    (CONV, "Conv2D", [(N, 2, N, 1), (3, 3, 1, 4)], S1, ["larger"]),
    (BPI, "Conv2DBackpropInput", [(N, 8, 8, 1), (3, 3, 1, 32),
                                  (N, 8, 7, 32)], S1, ["[?,8,7,32]"]),
    ("tfm_infer_max_pool_grad", "MaxPoolGrad",
     [(N, 8, 8, 3), (N, 4, 4, 3), (N, 4, 5, 3)], [2, 2, 2, 2],
     ["[?,4,5,3]"]),
])
def test_shape_rules_still_check_known_dims(rule, op, shapes, ints, words):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _infer(rule, op, shapes, ints, "VALID")
    assert op in str(info.value)
    for w in words:
        assert w in str(info.value)


# ---- with the runtime's tracing and tape, once they exist -------------
def _need(*names):
    missing = [n for n in names if not callable(getattr(tf, n, None))]
    if missing:
        pytest.skip(f"runtime lacks {', '.join(missing)}")


def test_unknown_batch_dim_traces():
    _need("function", "TensorSpec")
    calls = []

    @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1],
                                                tf.float32)])
    def net(x):
        f = tf.constant(np.ones((3, 3, 1, 4), np.float32))
        y = tf.nn.conv2d(x, f, 1, "SAME")
        calls.append(y.shape.as_list())
        return tf.nn.max_pool2d(y, 2, 2, "VALID")

    rng = np.random.default_rng(12)
    for n in (3, 5):
        x = rand(rng, (n, 8, 8, 1), "float32")
        want = np_max_pool(np_conv2d(x, np.ones((3, 3, 1, 4), np.float32),
                                     (1, 1), "SAME"), (2, 2), (2, 2),
                           "VALID")
        np.testing.assert_allclose(net(x).numpy(), want, rtol=1e-5)
    assert calls == [[None, 8, 8, 4]]


def test_tape_gradients_first_and_second_order():
    _need("GradientTape")
    rng = np.random.default_rng(13)
    x = tf.constant(rand(rng, (2, 6, 6, 2)))
    f = tf.constant(rand(rng, (3, 3, 2, 3)))
    dy, vx, vf = (rand(rng, (2, 3, 3, 3)), rand(rng, (2, 6, 6, 2)),
                  rand(rng, (3, 3, 2, 3)))
    with tf.GradientTape(persistent=True) as outer:
        outer.watch([x, f])
        with tf.GradientTape() as inner:
            inner.watch([x, f])
            y = tf.nn.conv2d(x, f, 2, "SAME")
        gx, gf = inner.gradient(y, [x, f], output_gradients=tf.constant(dy))
    np.testing.assert_allclose(gx.numpy(), np_conv2d_backprop_input(
        (2, 6, 6, 2), f.numpy(), dy, (2, 2), "SAME"), rtol=1e-10)
    np.testing.assert_allclose(gf.numpy(), np_conv2d_backprop_filter(
        x.numpy(), (3, 3, 2, 3), dy, (2, 2), "SAME"), rtol=1e-10)
    # <gx, vx> + <gf, vf> is linear in each of x and f: its gradient
    # wrt x is BPI(vf, dy) and wrt f is BPF(vx, dy).
    ggx, ggf = outer.gradient([gx, gf], [x, f], output_gradients=[
        tf.constant(vx), tf.constant(vf)])
    np.testing.assert_allclose(ggx.numpy(), np_conv2d_backprop_input(
        (2, 6, 6, 2), vf, dy, (2, 2), "SAME"), rtol=1e-10)
    np.testing.assert_allclose(ggf.numpy(), np_conv2d_backprop_filter(
        vx, (3, 3, 2, 3), dy, (2, 2), "SAME"), rtol=1e-10)


def test_tape_pool_gradients():
    _need("GradientTape")
    rng = np.random.default_rng(14)
    x = tf.constant(rng.permutation(72).reshape(2, 6, 6, 1) * 0.5)
    g = rand(rng, (2, 3, 3, 1))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        mx = tf.nn.max_pool2d(x, 3, 2, "SAME")
        av = tf.nn.avg_pool2d(x, 3, 2, "SAME")
    got_max = tape.gradient(mx, x, output_gradients=tf.constant(g))
    got_avg = tape.gradient(av, x, output_gradients=tf.constant(g))
    args = ((3, 3), (2, 2), "SAME")
    np.testing.assert_allclose(got_max.numpy(),
                               np_max_pool_grad(x.numpy(), g, *args))
    np.testing.assert_allclose(got_avg.numpy(),
                               np_avg_pool_grad((2, 6, 6, 1), g, *args))


# ---- regressions found by tests/test_fuzz_ops.py ---------------------------

@pytest.mark.parametrize("fn, op", [
    # 2**32 x 2**32 outputs: the element count wrapped int64 to 0.
    (lambda: tf.nn.conv2d(tf.zeros([1, 2, 2, 1]), tf.ones([1, 1, 1, 1]), 1,
                          [[0, 0], [2 ** 31 - 1, 2 ** 31 - 1],
                           [2 ** 31 - 1, 2 ** 31 - 1], [0, 0]]), "Conv2D"),
    (lambda: tf.nn.conv2d_transpose(tf.zeros([1, 1, 1, 1]),
                                    tf.zeros([1, 1, 16, 1]),
                                    [1, 2 ** 30, 2 ** 30, 16], 2 ** 31 - 1,
                                    "VALID"), "Conv2DBackpropInput"),
    (lambda: conv_ops.conv2d_backprop_filter(
        tf.zeros([1, 1, 1, 1]), [2 ** 30, 2 ** 30, 1, 16],
        tf.zeros([1, 1, 1, 16]), 2 ** 31 - 1,
        [[0, 0], [2 ** 30, 2 ** 30], [2 ** 30, 2 ** 30], [0, 0]]),
     "Conv2DBackpropFilter"),
])
def test_outputs_past_int64_are_refused(fn, op):
    gc.collect()
    before = _C.live_counts()
    with pytest.raises(tf.errors.InvalidArgumentError, match=op):
        fn()
    gc.collect()
    assert _C.live_counts() == before


@pytest.mark.parametrize("kw", [
    dict(strides=2 ** 70), dict(strides=[1, 2 ** 64]),
    dict(dilations=2 ** 63), dict(padding=[[0, 0], [2 ** 64, 0], [0, 0],
                                           [0, 0]])])
def test_attribute_ints_past_int64(kw):
    """InvalidArgumentError naming the op, not OverflowError."""
    args = dict(strides=1, padding="SAME")
    args.update(kw)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Conv2D"):
        tf.nn.conv2d(tf.zeros([1, 3, 3, 1]), tf.ones([1, 1, 1, 1]), **args)
    with pytest.raises(TypeError, match="Conv2D"):
        tf.nn.conv2d(tf.zeros([1, 3, 3, 1]), tf.ones([1, 1, 1, 1]), "ab",
                     "SAME")


@pytest.mark.parametrize("fn, op", [
    (lambda: tf.nn.conv2d_transpose(tf.zeros([1, 3, 3, 1]),
                                    tf.zeros([1, 1, 1, 1]), [1, -1, 3, 1],
                                    1, "VALID"), "Conv2DBackpropInput"),
    (lambda: conv_ops.conv2d_backprop_filter(
        tf.zeros([1, 3, 3, 1]), [1, -1, 1, 1], tf.zeros([1, 3, 3, 1]), 1,
        "VALID"), "Conv2DBackpropFilter"),
])
def test_unknown_window_sizes_are_refused(fn, op):
    """A -1 height or width in input_sizes / filter_sizes left the output
    shape unknown at run time: an error that did not name the op."""
    with pytest.raises(tf.errors.InvalidArgumentError, match=op):
        fn()
