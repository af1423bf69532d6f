"""Shape / array ops beyond the OpSpec table: argument forms, defaults and
dtypes as TF has them, big inputs (the tiled and parallel kernel paths),
and the errors (TF's exception type, the op name and the shapes in the
message)."""
import gc

import numpy as np
import pytest

import tfmini as tf

IAE = tf.errors.InvalidArgumentError
rng = np.random.default_rng(0)
A = np.arange(6, dtype=np.float32).reshape(2, 3)


def expect(exc, fn, *words):
    with pytest.raises(exc) as e:
        fn()
    for w in words:
        assert w in str(e.value), (w, str(e.value))


# ---- argument forms and defaults -------------------------------------------

def test_reshape_shape_forms():
    a = tf.constant(A)
    for shape in ([3, 2], (3, 2), tf.constant([3, 2]),
                  tf.constant([3, 2], tf.int64), np.array([3, 2]),
                  tf.TensorShape([3, 2]), [tf.constant(3), -1]):
        assert tf.reshape(a, shape).shape == (3, 2)
    assert tf.reshape(a, 6).shape == (6,)
    assert tf.reshape(tf.constant([7.0]), []).shape == ()
    assert tf.reshape(tf.zeros([0, 4]), [-1, 2]).shape == (0, 2)


def test_shape_size_rank_dtypes():
    a = tf.constant(A)
    assert tf.shape(a).dtype == tf.int32
    assert tf.shape(a, out_type=tf.int64).dtype == tf.int64
    assert tf.size(a).dtype == tf.int32 and int(tf.size(a)) == 6
    assert tf.size(a, out_type="int64").dtype == tf.int64
    assert int(tf.rank(tf.zeros([1, 2, 3]))) == 3
    np.testing.assert_array_equal(tf.shape(tf.zeros([0, 5])).numpy(), [0, 5])


def test_zeros_ones_dtypes():
    assert tf.zeros([2]).dtype == tf.float32
    assert tf.zeros((2, 3), dtype=tf.int64).numpy().tolist() == [[0] * 3] * 2
    assert tf.ones([2], tf.bool).numpy().tolist() == [True, True]
    assert tf.ones([3], "float16").numpy().tolist() == [1.0] * 3
    assert tf.zeros([]).shape == ()
    assert tf.zeros(tf.constant([2, 2])).shape == (2, 2)
    x = tf.constant([[1, 2]], tf.int8)
    assert tf.zeros_like(x).dtype == tf.int8
    assert tf.ones_like(x).numpy().tolist() == [[1, 1]]
    assert tf.ones_like(x, dtype=tf.float64).dtype == tf.float64
    assert tf.zeros_like(tf.constant(2.5, tf.float16)).numpy() == 0


def test_fill_dtype_from_value():
    assert tf.fill([2], 3).dtype == tf.int32
    assert tf.fill([2], 3.0).dtype == tf.float32
    assert tf.fill([2, 1], True).numpy().tolist() == [[True], [True]]
    assert tf.fill([], 4.0).shape == ()


def test_range_forms():
    assert tf.range(10).numpy().tolist() == list(range(10))
    assert tf.range(10).dtype == tf.int32
    assert tf.range(2, 10, 3).numpy().tolist() == [2, 5, 8]
    assert tf.range(5, 0, -2).numpy().tolist() == [5, 3, 1]
    assert tf.range(0).shape == (0,)
    assert tf.range(3.0).dtype == tf.float32
    assert tf.range(1, 2.0, 0.5).numpy().tolist() == [1.0, 1.5]
    assert tf.range(4, dtype=tf.float64).dtype == tf.float64
    assert tf.range(tf.constant(3, tf.int64)).dtype == tf.int64
    assert tf.range(tf.constant(1), 4).numpy().tolist() == [1, 2, 3]
    assert tf.range(3, dtype=tf.float16).numpy().tolist() == [0, 1, 2]
    big = 3_000_000_000
    assert tf.range(big, big + 3, dtype=tf.int64).numpy().tolist() == [
        big, big + 1, big + 2]


def test_linspace():
    got = tf.linspace(0.0, 1.0, 11)
    np.testing.assert_allclose(got.numpy(), np.linspace(0, 1, 11), rtol=1e-6)
    assert got.numpy()[-1] == 1.0
    assert tf.linspace(2.0, 5.0, 1).numpy().tolist() == [2.0]
    d = tf.linspace(tf.constant(0.0, tf.float64), 1.0, 3)
    assert d.dtype == tf.float64


def test_one_hot_options():
    got = tf.one_hot([1, -1, 3], 3, on_value=5, off_value=-1)
    assert got.dtype == tf.int32
    assert got.numpy().tolist() == [[-1, 5, -1], [-1, -1, -1], [-1, -1, -1]]
    b = tf.one_hot(tf.constant([[0], [2]], tf.int64), 3, dtype=tf.bool)
    assert b.shape == (2, 1, 3) and b.dtype == tf.bool
    assert tf.one_hot([0, 1], 2, axis=0).numpy().tolist() == [[1, 0],
                                                              [0, 1]]
    assert tf.one_hot(2, 4).numpy().tolist() == [0, 0, 1, 0]
    with pytest.raises(TypeError):
        tf.one_hot([0], 2, on_value=tf.constant(1.0), dtype=tf.int32)


def test_eye():
    np.testing.assert_array_equal(tf.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(tf.eye(2, 4, dtype=tf.int32).numpy(),
                                  np.eye(2, 4, dtype=np.int32))
    assert tf.eye(4, 2).numpy().tolist() == np.eye(4, 2).tolist()
    assert tf.eye(2, batch_shape=[3, 1]).shape == (3, 1, 2, 2)
    assert tf.linalg.eye(2).shape == (2, 2)


def test_stack_unstack_split_forms():
    vals = [1.0, tf.constant(2.0), 3]
    s = tf.stack(vals)
    assert s.dtype == tf.float32 and s.numpy().tolist() == [1, 2, 3]
    assert tf.concat([tf.constant([1, 2]), [3]], 0).numpy().tolist() == [
        1, 2, 3]
    assert tf.concat([tf.constant(A)], 1).shape == (2, 3)
    parts = tf.unstack(tf.constant(A), num=3, axis=1)
    assert isinstance(parts, list) and len(parts) == 3
    parts = tf.split(tf.constant(A), tf.constant([2, 1]), axis=1)
    assert [p.shape for p in parts] == [(2, 2), (2, 1)]
    parts = tf.split(tf.constant(A), tf.constant(3), axis=-1)
    assert len(parts) == 3


def test_many_values_past_the_arity_limit():
    vals = [np.float32(i) for i in range(600)]
    s = tf.stack(vals)
    np.testing.assert_array_equal(s.numpy(), np.arange(600,
                                                       dtype=np.float32))
    c = tf.concat([tf.constant([i]) for i in range(520)], 0)
    np.testing.assert_array_equal(c.numpy(), np.arange(520))
    m = tf.stack([tf.constant([i, -i]) for i in range(300)], axis=1)
    assert m.shape == (2, 300)
    u = tf.unstack(tf.range(700))
    assert len(u) == 700 and int(u[699]) == 699 and u[5].shape == ()


def test_pad_modes_and_values():
    a = tf.constant(A)
    got = tf.pad(a, [[0, 1], [1, 0]], constant_values=-2.5)
    np.testing.assert_array_equal(
        got.numpy(), np.pad(A, [[0, 1], [1, 0]], constant_values=-2.5))
    got = tf.pad(a, tf.constant([[1, 1], [2, 2]]), mode="SYMMETRIC")
    np.testing.assert_array_equal(
        got.numpy(), np.pad(A, [[1, 1], [2, 2]], mode="symmetric"))
    got = tf.pad(tf.constant([True]), [[1, 0]], constant_values=True)
    assert got.numpy().tolist() == [True, True]
    expect(ValueError, lambda: tf.pad(a, [[1, 1], [1, 1]], mode="WRAP"),
           "mode")


def test_gather_forms():
    p = tf.constant(A)
    assert tf.gather(p, 1).numpy().tolist() == A[1].tolist()
    assert tf.gather(p, [[0], [1]], axis=-1).shape == (2, 2, 1)
    idx64 = tf.constant([2, 0], tf.int64)
    np.testing.assert_array_equal(tf.gather(p, idx64, axis=1).numpy(),
                                  A[:, [2, 0]])
    assert tf.gather(p, tf.zeros([0], tf.int32)).shape == (0, 3)


def test_gather_nd_batch_dims():
    params = rng.standard_normal((2, 3, 4)).astype(np.float32)
    idx = np.array([[[0, 1], [2, 3]], [[1, 1], [0, 0]]])
    got = tf.gather_nd(params, idx, batch_dims=1)
    want = np.stack([params[b][tuple(idx[b].T)] for b in range(2)])
    np.testing.assert_array_equal(got.numpy(), want)


def test_where_forms():
    c = tf.constant([[True, False], [False, True]])
    assert tf.where(c).dtype == tf.int64
    assert tf.where(c, 1.0, 0.0).numpy().tolist() == [[1, 0], [0, 1]]
    assert tf.where([True, False], tf.constant([1, 2]), 7).numpy().tolist() \
        == [1, 7]
    assert tf.where(tf.zeros([3], tf.bool)).shape == (0, 1)
    f = tf.constant([0.0, -0.0, 2.0, float("nan")])
    assert tf.where(f).numpy().ravel().tolist() == [2, 3]
    expect(ValueError, lambda: tf.where(c, x=1.0), "both")


def test_where_of_bfloat16_and_complex_conditions():
    # As TF 2.21: -0.0 is zero; a complex is nonzero when either part is.
    b = tf.constant([1.0, 0.0, -0.0, 2.0], tf.bfloat16)
    assert tf.where(b).numpy().tolist() == [[0], [3]]
    assert tf.function(tf.where)(b).numpy().tolist() == [[0], [3]]
    z = tf.constant([[0, 1j], [2, 0]], tf.complex128)
    assert tf.where(z).numpy().tolist() == [[0, 1], [1, 0]]


def test_boolean_mask_axis():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m = np.array([True, False, True, True])
    got = tf.boolean_mask(x, m, axis=2)
    np.testing.assert_array_equal(got.numpy(), x[:, :, m])
    m2 = x[0] > 0
    np.testing.assert_array_equal(tf.boolean_mask(x, m2, axis=1).numpy(),
                                  x[:, m2])


def test_scatter_repeated_indices_add_accumulates():
    t = tf.zeros([4])
    got = tf.tensor_scatter_nd_add(t, [[1], [1], [3]], [1.0, 2.0, 5.0])
    assert got.numpy().tolist() == [0, 3, 0, 5]
    got = tf.tensor_scatter_nd_update(tf.constant(A), [[1]], [[7, 8, 9]])
    assert got.numpy().tolist() == [[0, 1, 2], [7, 8, 9]]
    whole = tf.tensor_scatter_nd_update(tf.constant(A), tf.zeros([1, 0],
                                                                 tf.int32),
                                        [tf.ones([2, 3])])
    assert whole.numpy().tolist() == [[1] * 3] * 2


def test_scatter_nd():
    got = tf.scatter_nd([[4], [3], [1], [7], [3]],
                        tf.constant([9, 10, 11, 12, 1]), [8])
    assert got.dtype == tf.int32
    assert got.numpy().tolist() == [0, 11, 0, 11, 9, 0, 0, 12]


def test_transpose_default_and_bool_int8():
    x = rng.integers(0, 2, (3, 4, 5)).astype(bool)
    np.testing.assert_array_equal(tf.transpose(x).numpy(), x.T)
    y = rng.integers(-9, 9, (4, 7)).astype(np.int8)
    np.testing.assert_array_equal(tf.transpose(y, perm=[1, 0]).numpy(), y.T)


# ---- big inputs: the tiled transpose and the parallel paths ----------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "float16"])
def test_big_transpose(dtype):
    x = rng.standard_normal((130, 70, 9)).astype(dtype)
    for perm in ([1, 0, 2], [2, 1, 0], [0, 2, 1], [1, 2, 0]):
        np.testing.assert_array_equal(tf.transpose(x, perm).numpy(),
                                      np.transpose(x, perm))


def test_big_copies():
    x = rng.standard_normal((300, 400)).astype(np.float32)
    t = tf.constant(x)
    np.testing.assert_array_equal(tf.reshape(t, [-1]).numpy(), x.ravel())
    np.testing.assert_array_equal(tf.concat([t, t], 1).numpy(),
                                  np.concatenate([x, x], 1))
    np.testing.assert_array_equal(tf.stack([t, t], 1).numpy(),
                                  np.stack([x, x], 1))
    a, b = tf.split(t, [100, -1], 1)
    np.testing.assert_array_equal(b.numpy(), x[:, 100:])
    np.testing.assert_array_equal(tf.tile(t, [2, 1]).numpy(),
                                  np.tile(x, [2, 1]))
    np.testing.assert_array_equal(t[::-1, 1::3].numpy(), x[::-1, 1::3])
    np.testing.assert_array_equal(tf.reverse(t, [1]).numpy(), x[:, ::-1])
    idx = rng.integers(0, 300, 500)
    np.testing.assert_array_equal(tf.gather(t, idx).numpy(), x[idx])
    np.testing.assert_array_equal(tf.gather(t, idx[:50] % 400,
                                            axis=1).numpy(),
                                  x[:, idx[:50] % 400])
    c = x > 0
    np.testing.assert_array_equal(tf.where(c, t, -t).numpy(),
                                  np.where(c, x, -x))
    np.testing.assert_array_equal(
        tf.where(c[:, :1], t, 0.0).numpy(), np.where(c[:, :1], x, 0))
    np.testing.assert_array_equal(tf.broadcast_to(t[0], [300, 400]).numpy(),
                                  np.broadcast_to(x[0], (300, 400)))
    np.testing.assert_array_equal(
        tf.pad(t, [[3, 3], [5, 5]], "REFLECT").numpy(),
        np.pad(x, [[3, 3], [5, 5]], mode="reflect"))
    assert tf.fill([500, 300], 2.0).numpy().sum() == 300000
    assert tf.range(100000).numpy()[-1] == 99999
    oh = tf.one_hot(idx, 300)
    np.testing.assert_array_equal(oh.numpy().argmax(1), idx)


# ---- errors: TF's exception type, op name and shapes in the message --------

def test_reshape_count_mismatch():
    a = tf.constant(A)
    expect(IAE, lambda: tf.reshape(a, [4, 2]), "Reshape", "6", "8")
    expect(IAE, lambda: tf.reshape(a, [4, -1]), "Reshape", "6", "4")
    expect(IAE, lambda: tf.reshape(a, [-1, -1]), "only one")
    expect(IAE, lambda: tf.reshape(a, [-2, -3]), "non-negative")
    expect(IAE, lambda: tf.reshape(tf.zeros([0]), [0, -1]), "empty")


def test_bad_perm():
    a = tf.constant(A)
    expect(IAE, lambda: tf.transpose(a, [0, 0]), "Transpose", "[2,3]",
           "permutation")
    expect(IAE, lambda: tf.transpose(a, [0, 2]), "Transpose", "[2,3]")
    expect(IAE, lambda: tf.transpose(a, [1]), "Transpose", "rank 2")


def test_bad_axis():
    a = tf.constant(A)
    expect(IAE, lambda: tf.expand_dims(a, 3), "ExpandDims", "3")
    expect(IAE, lambda: tf.expand_dims(a, -4), "ExpandDims")
    expect(IAE, lambda: tf.concat([a, a], 2), "ConcatV2", "axis 2")
    expect(IAE, lambda: tf.stack([a, a], 3), "Pack")
    expect(IAE, lambda: tf.unstack(a, axis=2), "Unpack")
    expect(IAE, lambda: tf.gather(a, [0], axis=2), "GatherV2")
    expect(IAE, lambda: tf.squeeze(a, [0]), "Squeeze", "dim[0]", "2")
    expect(IAE, lambda: tf.squeeze(a, [5]), "Squeeze")
    expect(IAE, lambda: tf.reverse(a, [0, -2]), "ReverseV2", "more than once")
    expect(IAE, lambda: tf.split(a, 2, axis=3), "Split")
    expect(IAE, lambda: tf.one_hot([1], 3, axis=3), "OneHot", "axis")
    expect(IAE, lambda: tf.concat([tf.constant(1.0), tf.constant(2.0)], 0),
           "ConcatV2", "scalars")


def test_negative_sizes():
    a = tf.constant(A)
    expect(IAE, lambda: tf.slice(a, [0, 0], [-2, 1]), "Slice", "size[0]")
    expect(IAE, lambda: tf.slice(a, [0, 2], [1, 2]), "Slice", "size[1]",
           "[0, 1]")
    expect(IAE, lambda: tf.slice(a, [3, 0], [1, 1]), "Slice", "begin[0]")
    expect(IAE, lambda: tf.tile(a, [1, -1]), "Tile", "multiples[1]")
    expect(IAE, lambda: tf.tile(a, [1]), "Tile", "length 2")
    expect(IAE, lambda: tf.pad(a, [[0, -1], [0, 0]]), "PadV2",
           "non-negative")
    expect(IAE, lambda: tf.pad(a, [[0, 0]]), "PadV2", "[2,2]")
    expect(IAE, lambda: tf.fill([2, -1], 1.0), "Fill", "[2,-1]")
    expect(IAE, lambda: tf.zeros([-3]), "Fill")
    expect(IAE, lambda: tf.one_hot([1], -1), "OneHot", "depth")
    expect(IAE, lambda: tf.split(a, [1, -2, 4], 1), "SplitV")
    expect(IAE, lambda: tf.linspace(0.0, 1.0, 0), "LinSpace", "num > 0")


def test_out_of_range_indices():
    a = tf.constant(A)
    expect(IAE, lambda: tf.gather(a, [0, 5]), "GatherV2", "indices[1] = 5",
           "[0, 2)")
    expect(IAE, lambda: tf.gather(a, [[0], [-1]], axis=1), "GatherV2",
           "indices[1,0] = -1", "[0, 3)")
    expect(IAE, lambda: tf.gather_nd(a, [[0, 0], [1, 3]]), "GatherNd",
           "indices[1] = [1, 3]", "[2,3]")
    expect(IAE, lambda: tf.tensor_scatter_nd_update(a, [[2]], [[1., 2, 3]]),
           "TensorScatterUpdate", "[2]", "[2,3]")
    expect(IAE, lambda: tf.tensor_scatter_nd_add(a, [[0, -1]], [1.0]),
           "TensorScatterAdd")
    expect(IAE, lambda: a[2], "slice index 2 of dimension 0 out of bounds")
    expect(IAE, lambda: a[:, -4], "slice index -4 of dimension 1")


def test_ragged_shapes():
    a = tf.constant(A)
    expect(IAE, lambda: tf.concat([a, tf.zeros([2, 4])], 0), "ConcatV2",
           "[2,3]", "[2,4]")
    expect(IAE, lambda: tf.concat([a, tf.zeros([3])], 0), "ConcatV2",
           "Ranks", "[2,3]", "[3]")
    expect(IAE, lambda: tf.stack([a, tf.zeros([3, 2])]), "Pack", "[2,3]",
           "[3,2]")
    expect(IAE, lambda: tf.split(a, 2, axis=1), "Split", "evenly divide",
           "[2,3]")
    expect(IAE, lambda: tf.split(a, [1, 1], axis=1), "SplitV", "[2,3]")
    expect(IAE, lambda: tf.broadcast_to(a, [4, 3]), "BroadcastTo", "[2,3]",
           "[4,3]")
    expect(IAE, lambda: tf.where(tf.constant([True, False]), a, a),
           "SelectV2", "[2]", "[2,3]")
    expect(IAE, lambda: tf.pad(a, [[2, 0], [0, 0]], "REFLECT"), "MirrorPad",
           "[2,3]")
    expect(IAE, lambda: tf.pad(a, [[3, 0], [0, 0]], "SYMMETRIC"),
           "MirrorPad")
    expect(IAE, lambda: tf.gather(tf.zeros([2, 3]), tf.zeros([3, 1],
                                                             tf.int32),
                                  axis=1, batch_dims=1), "GatherV2",
           "batch_dims")
    expect(IAE, lambda: tf.gather_nd(a, [[0, 0, 0]]), "GatherNd",
           "innermost")
    expect(IAE, lambda: tf.tensor_scatter_nd_update(a, [[0]], [1.0, 2.0]),
           "TensorScatterUpdate", "[1,3]", "[2]")


def test_dtype_errors():
    a = tf.constant(A)
    expect(IAE, lambda: tf.concat([a, tf.constant([[1, 2, 3]])], 0),
           "ConcatV2", "float32", "int32")
    expect(IAE, lambda: tf.stack([tf.constant(1.0),
                                  tf.constant(1.0, tf.float64)]), "Pack")
    expect(IAE, lambda: tf.gather(a, tf.constant([0.0])), "GatherV2",
           "float32")
    expect(IAE, lambda: tf.where(tf.constant([1, 0]), a[0, :2], a[1, :2]),
           "SelectV2", "bool")
    expect(IAE, lambda: tf.where(tf.constant(True), tf.constant(1.0),
                                 tf.constant(1.0, tf.float64)), "SelectV2")
    expect(IAE, lambda: tf.tensor_scatter_nd_add(tf.constant([True]), [[0]],
                                                 [True]), "TensorScatterAdd",
           "bool")
    expect(IAE, lambda: tf.shape(a, out_type=tf.float32), "Shape", "int32")


def test_range_errors():
    expect(IAE, lambda: tf.range(0, 5, 0), "Range", "delta != 0")
    expect(IAE, lambda: tf.range(5, 0), "Range", "start <= limit")
    expect(IAE, lambda: tf.range(0, 5, -1), "Range", "start >= limit")
    expect(IAE, lambda: tf.range(0.0, 1.0, 0.0), "Range")
    expect(TypeError, lambda: tf.range(0, 2.5, dtype=tf.int32))


def test_error_does_not_leak():
    before = tf._C.live_counts()[0]
    a = tf.constant(A)
    for _ in range(50):
        with pytest.raises(IAE):
            tf.gather(a, [0, 9])
        with pytest.raises(IAE):
            tf.split(a, [1, 1], 1)
    del a
    assert tf._C.live_counts()[0] <= before + 1


# ---- shape rules on symbolic shapes (unknown dims, -1) ---------------------
# Tracing runs the same infer rules on shapes with unknown dims. Until
# tracing lands they are called here through ctypes, with the structs of
# csrc/ops/op.h (keep in step with it).

import ctypes  # noqa: E402

from tfmini._opids import ID  # noqa: E402


class _Shape(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int), ("dims", ctypes.c_int64 * 8)]


class _Meta(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("shape", _Shape)]


class _Attrs(ctypes.Structure):
    _fields_ = [("n_ints", ctypes.c_int), ("ints", ctypes.c_int64 * 64),
                ("i", ctypes.c_int64 * 6), ("f", ctypes.c_double * 4),
                ("dtype", ctypes.c_int)]


_LIB = ctypes.CDLL(tf._C.__file__)
_LIB.tfm_error_message.restype = ctypes.c_char_p
_F32, _I32 = 7, 4


def _infer(rule, op, shapes, ints=(), i=(), dtypes=None, adtype=_F32):
    n = len(shapes)
    metas = (_Meta * max(n, 1))()
    for k, s in enumerate(shapes):
        metas[k].dtype = dtypes[k] if dtypes else _F32
        metas[k].shape.ndim = len(s)
        for d, v in enumerate(s):
            metas[k].shape.dims[d] = -1 if v is None else v
    a = _Attrs()
    a.n_ints = len(ints)
    for k, v in enumerate(ints):
        a.ints[k] = v
    for k, v in enumerate(i):
        a.i[k] = v
    a.dtype = adtype
    out = (_Meta * 256)()
    nout = ctypes.c_int(0)
    fn = getattr(_LIB, rule)
    rc = fn(ID[op], metas, n, ctypes.byref(a), out, ctypes.byref(nout))
    if rc:
        raise IAE(_LIB.tfm_error_message().decode())
    return [tuple(None if out[k].shape.dims[d] < 0 else out[k].shape.dims[d]
                  for d in range(out[k].shape.ndim))
            for k in range(nout.value)]


def test_infer_unknown_dims():
    N = None
    assert _infer("tfm_infer_reshape", "Reshape", [(N, 28, 28)],
                  ints=[-1, 784]) == [(N, 784)]
    assert _infer("tfm_infer_reshape", "Reshape", [(N, 3)],
                  ints=[2, 5]) == [(2, 5)]
    assert _infer("tfm_infer_transpose", "Transpose", [(N, 3)],
                  ints=[1, 0]) == [(3, N)]
    assert _infer("tfm_infer_concat", "ConcatV2", [(N, 3), (2, 3)],
                  i=[0]) == [(N, 3)]
    assert _infer("tfm_infer_concat", "ConcatV2", [(N, 3), (2, N)],
                  i=[1]) == [(2, N)]
    assert _infer("tfm_infer_pack", "Pack", [(N, 3), (4, N)],
                  i=[1]) == [(4, 2, 3)]
    assert _infer("tfm_infer_split", "Split", [(N, 4)],
                  i=[0, 2]) == [(N, 4), (N, 4)]
    assert _infer("tfm_infer_split", "SplitV", [(N, 4)], ints=[1, -1],
                  i=[0]) == [(1, 4), (N, 4)]
    assert _infer("tfm_infer_tile", "Tile", [(N, 3)],
                  ints=[2, 2]) == [(N, 6)]
    assert _infer("tfm_infer_pad", "PadV2", [(N, 3)],
                  ints=[1, 1, 0, 2]) == [(N, 5)]
    assert _infer("tfm_infer_squeeze", "Squeeze", [(N, 1, 3)]) == [(N, 3)]
    assert _infer("tfm_infer_squeeze", "Squeeze", [(N, 3)],
                  ints=[0]) == [(3,)]
    assert _infer("tfm_infer_slice", "Slice", [(N, 5)],
                  ints=[0, 1, -1, 2]) == [(N, 2)]
    # x[:, 0], x[1:3], x[..., None] on a [?, 5] tensor
    ss = "tfm_infer_strided_slice"
    assert _infer(ss, "StridedSlice", [(N, 5)], ints=[0, 0, 0, 1, 1, 1],
                  i=[1, 1, 0, 0, 2]) == [(N,)]
    assert _infer(ss, "StridedSlice", [(N, 5)], ints=[1, 3, 1],
                  i=[0, 0, 0, 0, 0]) == [(N, 5)]
    assert _infer(ss, "StridedSlice", [(N, 5)], ints=[0, 0, 0, 0, 1, 1],
                  i=[0, 0, 1, 2, 0]) == [(N, 5, 1)]
    assert _infer("tfm_infer_gather", "GatherV2", [(10, 4), (N,)],
                  i=[0, 0], dtypes=[_F32, _I32]) == [(N, 4)]
    assert _infer("tfm_infer_gather_nd", "GatherNd", [(N, 4), (N, 1)],
                  dtypes=[_F32, _I32]) == [(N, 4)]
    assert _infer("tfm_infer_one_hot", "OneHot", [(N,), (), ()],
                  i=[5, -1], dtypes=[_I32, _F32, _F32]) == [(N, 5)]
    assert _infer("tfm_infer_broadcast_to", "BroadcastTo", [(N, 1)],
                  ints=[4, 3]) == [(4, 3)]
    assert _infer("tfm_infer_where", "Where", [(N, 3)],
                  i=[-1], dtypes=[0]) == [(N, 2)]
    assert _infer("tfm_infer_shape_of", "Shape", [(N, 3)],
                  adtype=_I32) == [(2,)]
    with pytest.raises(IAE, match="Cannot infer argument `num`"):
        _infer("tfm_infer_unpack", "Unpack", [(N, 3)], i=[0, -1])
    assert len(_infer("tfm_infer_unpack", "Unpack", [(N, 3)],
                      i=[1, -1])) == 3
    with pytest.raises(IAE, match="requested shape has 8"):
        _infer("tfm_infer_reshape", "Reshape", [(2, 3)], ints=[4, 2])


# ---- regressions found by tests/test_fuzz_ops.py ---------------------------

HUGE = 2 ** 32      # HUGE * HUGE wraps int64 to 0


@pytest.mark.parametrize("fn, op", [
    (lambda: tf.zeros([HUGE, HUGE]), "Fill"),
    (lambda: tf.fill([HUGE, 3, HUGE], 1.0), "Fill"),
    (lambda: tf.tile(tf.constant([[1.0]]), [HUGE, HUGE]), "Tile"),
    (lambda: tf.tile(tf.constant([1.0, 2.0]), [2 ** 63 - 1]), "Tile"),
    (lambda: tf.reshape(tf.zeros([0]), [HUGE, HUGE, 0]), "Reshape"),
    (lambda: tf.reshape(tf.zeros([0]), [HUGE, HUGE]), "Reshape"),
    (lambda: tf.broadcast_to(tf.constant(1.0), [HUGE, HUGE]), "BroadcastTo"),
    (lambda: tf.one_hot([0, 1, 2, 3], 2 ** 62), "OneHot"),
    (lambda: tf.pad(tf.zeros([2]), [[2 ** 62, 2 ** 62]]), "PadV2"),
    (lambda: tf.pad(tf.zeros([2]), [[2 ** 63 - 1, 1]]), "PadV2"),
    (lambda: tf.split(tf.zeros([5]), [2 ** 62] * 4 + [5]), "SplitV"),
    (lambda: tf.concat([tf.zeros([2 ** 61, 0], tf.int8)] * 5, 0),
     "ConcatV2"),
])
def test_shapes_past_int64_are_refused(fn, op):
    """Element counts that wrap int64 once sized a buffer far smaller than
    the shape (a crash on the first read); they are refused like NumPy
    refuses them, naming the op."""
    gc.collect()
    before = tf._C.live_counts()
    expect(IAE, fn, op)
    gc.collect()
    assert tf._C.live_counts() == before


def test_empty_shapes_with_big_dims_still_work():
    assert tf.zeros([2 ** 40, 0]).shape == (2 ** 40, 0)
    assert tf.reshape(tf.zeros([0]), [2 ** 40, 0]).shape == (2 ** 40, 0)
    assert tf.tile(tf.zeros([0, 1]), [1, 2 ** 40]).shape == (0, 2 ** 40)
    # Up to NumPy's limit (2^63 bytes, zero dims aside), so that every
    # such tensor converts to an array (and prints).
    t = tf.zeros([2 ** 60, 0], tf.float32)
    assert t.numpy().shape == (2 ** 60, 0)
    assert "shape=(1152921504606846976, 0)" in repr(t)
    expect(IAE, lambda: tf.zeros([2 ** 61, 0], tf.float32), "Fill",
           "float32")
    expect(IAE, lambda: tf.one_hot(tf.zeros([0], tf.int32), 2 ** 63 - 1),
           "OneHot")


def test_pad_constant_is_exact_and_checked():
    big = 2 ** 60 + 1          # not a float64
    got = tf.pad(tf.constant([1], tf.int64), [[1, 1]], constant_values=big)
    assert got.numpy().tolist() == [big, 1, big]
    got = tf.pad(tf.constant([1], tf.uint8), [[1, 0]], constant_values=255)
    assert got.numpy().tolist() == [255, 1]
    got = tf.pad(tf.constant([1], tf.int8), [[0, 1]],
                 constant_values=tf.constant(-128, tf.int8))
    assert got.numpy().tolist() == [1, -128]
    got = tf.pad(tf.constant([1.5]), [[1, 0]], constant_values=2 ** 60 + 1)
    assert got.numpy().tolist() == [2.0 ** 60, 1.5]
    for bad in (2 ** 40, 1.5, float("nan"), float("inf"), -1):
        expect(TypeError, lambda: tf.pad(tf.constant([1], tf.uint8),
                                         [[1, 1]], constant_values=bad),
               "PadV2")
    expect(TypeError, lambda: tf.pad(tf.constant([1]), [[1, 1]],
                                     constant_values="x"), "PadV2")
    # The op itself refuses a constant its dtype cannot hold.
    pad = tfm_ops_id("PadV2")
    expect(IAE, lambda: tf._C.call(pad, (tf.constant([1]),), [1, 1], None,
                                   [1.5]), "PadV2", "int32")
    expect(IAE, lambda: tf._C.call(pad, (tf.constant([1], tf.int8),),
                                   [1, 1], [0, 1, 300]), "PadV2", "int8")


def tfm_ops_id(name):
    from tfmini._opids import ID
    return ID[name]


def test_range_bounds_must_fit_the_dtype():
    assert tf.range(120, 127, 3, dtype=tf.int8).numpy().tolist() == [
        120, 123, 126]
    expect(IAE, lambda: tf.range(1000, dtype=tf.int8), "Range", "int8")
    expect(IAE, lambda: tf.range(-129, 0, dtype=tf.int8), "Range", "start")
    expect(IAE, lambda: tf.range(0, 10, 300, dtype=tf.uint8), "Range",
           "delta")
    expect(ValueError, lambda: tf.range(2 ** 70), "Range")
    expect(TypeError, lambda: tf.range(0, "a"), "Range")


@pytest.mark.parametrize("fn, op", [
    (lambda: tf.reshape(tf.zeros([1]), [2 ** 70]), "Reshape"),
    (lambda: tf.tile(tf.zeros([1]), [2 ** 64]), "Tile"),
    (lambda: tf.expand_dims(tf.zeros([1]), 2 ** 63), "ExpandDims"),
    (lambda: tf.one_hot([1], 2 ** 70), "OneHot"),
    (lambda: tf.transpose(tf.zeros([1]), np.array([2 ** 64 - 1],
                                                  np.uint64)), "Transpose"),
    (lambda: tf.strided_slice(tf.zeros([2]), [0], [1], begin_mask=2 ** 70),
     "StridedSlice"),
])
def test_python_ints_past_int64_are_value_errors(fn, op):
    """Not OverflowError from deep in the binding."""
    expect(ValueError, fn, op)


def test_one_hot_bool_on_value_gives_bool():
    got = tf.one_hot([1, 0], 2, on_value=True, off_value=False)
    assert got.dtype == tf.bool
    assert got.numpy().tolist() == [[False, True], [True, False]]
    expect(TypeError, lambda: tf.one_hot([1], 2, on_value=1.5,
                                         dtype=tf.int32), "OneHot")
    expect(TypeError, lambda: tf.one_hot([1], 2, on_value=-1,
                                         dtype=tf.uint8), "OneHot")


def test_unstack_num_below_minus_one():
    unpack = tfm_ops_id("Unpack")
    expect(IAE, lambda: tf._C.call(unpack, (tf.zeros([2, 3]),), None,
                                   [0, -2]), "Unpack", "num")


def test_gather_indices_from_python_values():
    p = tf.constant([10, 20, 30])
    assert tf.gather(p, np.array([2, 0], np.uint64)).numpy().tolist() == [
        30, 10]
    assert tf.gather(p, np.array([1], np.uint8)).numpy().tolist() == [20]
    expect(ValueError, lambda: tf.gather(p, np.array([2 ** 63], np.uint64)),
           "GatherV2")
    expect(ValueError, lambda: tf.gather(p, [[0, 1], [2]]), "GatherV2")
    expect(TypeError, lambda: tf.gather(p, [0.5]), "GatherV2")


def test_boolean_mask_of_empty_tensors():
    """reshape(-1) next to a zero dim cannot infer the -1."""
    x = np.zeros((0, 0), np.float32)
    got = tf.boolean_mask(tf.constant(x), tf.zeros([0], tf.bool))
    assert got.shape == (0, 0)
    x = np.zeros((2, 0, 3), np.int32)
    m = np.array([True, False])
    np.testing.assert_array_equal(
        tf.boolean_mask(tf.constant(x), m).numpy(), x[m])
