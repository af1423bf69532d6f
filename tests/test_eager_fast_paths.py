"""The eager fast paths of the common ops' wrappers (reshape, transpose,
concat, expand_dims, cast, matmul, reduce_*, softmax, indexing) and of
_C.call: each must give what the general path gives (value, dtype,
shape, traced node, gradient, error type and text), and must be the path
taken for the common arguments (the general helpers are made to fail,
and the call still works)."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini import extension_dispatch
from tfmini._opids import ID
from tfmini.ops import array_ops, linalg_ops, math_ops, nn_ops, reduce_ops

X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5


def _outcome(fn):
    """(kind, payload) of calling fn: ("ok", (dtype, shape, values)) or
    ("error", (type, message))."""
    try:
        r = fn()
    except Exception as e:       # compared, not swallowed
        return "error", (type(e), str(e))
    return "ok", (r.dtype, tuple(r.shape), r.numpy().tolist())


# (name, fast call, the same call through the general path), over a
# tensor x (2x3 float32 unless a case says otherwise).
CASES = [
    ("reshape", lambda x: tf.reshape(x, [3, 2]),
     lambda x: tf.reshape(x, np.array([3, 2]))),
    ("reshape -1", lambda x: tf.reshape(x, (-1,)),
     lambda x: tf.reshape(x, np.array([-1]))),
    ("reshape bad", lambda x: tf.reshape(x, [4]),
     lambda x: tf.reshape(x, np.array([4]))),
    ("reshape two -1", lambda x: tf.reshape(x, [-1, -1]),
     lambda x: tf.reshape(x, np.array([-1, -1]))),
    ("transpose", lambda x: tf.transpose(x),
     lambda x: tf.transpose(x, np.array([1, 0]))),
    ("transpose perm", lambda x: tf.transpose(x, [1, 0]),
     lambda x: tf.transpose(x, np.array([1, 0]))),
    ("transpose bad perm", lambda x: tf.transpose(x, [0, 0]),
     lambda x: tf.transpose(x, np.array([0, 0]))),
    ("transpose short perm", lambda x: tf.transpose(x, [0]),
     lambda x: tf.transpose(x, np.array([0]))),
    ("expand_dims", lambda x: tf.expand_dims(x, 0),
     lambda x: tf.expand_dims(x, np.int64(0))),
    ("expand_dims -1", lambda x: tf.expand_dims(x, -1),
     lambda x: tf.expand_dims(x, np.int64(-1))),
    ("expand_dims bad", lambda x: tf.expand_dims(x, 9),
     lambda x: tf.expand_dims(x, np.int64(9))),
    ("concat", lambda x: tf.concat([x, x], 0),
     lambda x: tf.concat([x, x], np.int32(0))),
    ("concat tuple axis 1", lambda x: tf.concat((x, x, x), 1),
     lambda x: tf.concat((x, x, x), np.int32(1))),
    ("concat -1", lambda x: tf.concat([x, x], -1),
     lambda x: tf.concat([x, x], np.int32(-1))),
    ("concat dtypes", lambda x: tf.concat([x, tf.cast(x, tf.float64)], 0),
     lambda x: tf.concat([x, tf.cast(x, tf.float64)], np.int32(0))),
    ("concat shapes", lambda x: tf.concat([x, tf.transpose(x)], 0),
     lambda x: tf.concat([x, tf.transpose(x)], np.int32(0))),
    ("concat bad axis", lambda x: tf.concat([x, x], 5),
     lambda x: tf.concat([x, x], np.int32(5))),
    ("matmul", lambda x: tf.matmul(x, tf.transpose(x)),
     lambda x: tf.matmul(x, tf.transpose(x), output_type=x.dtype)),
    ("matmul shapes", lambda x: tf.matmul(x, x),
     lambda x: tf.matmul(x, x, output_type=x.dtype)),
    ("matmul dtypes", lambda x: tf.matmul(x, tf.cast(tf.transpose(x),
                                                     tf.float64)),
     lambda x: tf.matmul(x, tf.cast(tf.transpose(x), tf.float64),
                         output_type=x.dtype)),
    ("matmul rank 1", lambda x: tf.matmul(x[0], x[0]),
     lambda x: tf.matmul(x[0], x[0], output_type=x.dtype)),
    ("softmax", lambda x: tf.nn.softmax(x),
     lambda x: tf.nn.softmax(x, axis=np.int64(-1))),
    ("log_softmax", lambda x: tf.nn.log_softmax(x),
     lambda x: tf.nn.log_softmax(x, axis=np.int64(-1))),
    ("getitem [:, 1]", lambda x: x[:, 1], lambda x: x[:, np.int64(1)]),
    ("getitem [1:]", lambda x: x[1:], lambda x: x[np.int64(1):]),
    ("getitem [::-1, 2]", lambda x: x[::-1, 2],
     lambda x: x[::np.int64(-1), np.int64(2)]),
    ("getitem [0, 1:3:2]", lambda x: x[0, 1:3:2],
     lambda x: x[np.int64(0), 1:3:np.int64(2)]),
    ("getitem [-1, -2]", lambda x: x[-1, -2],
     lambda x: x[np.int64(-1), np.int64(-2)]),
    ("getitem [1]", lambda x: x[1], lambda x: x[np.int64(1)]),
    ("getitem [-3]", lambda x: x[-3], lambda x: x[np.int64(-3)]),
    ("getitem int64 max", lambda x: x[2 ** 63 - 1],
     lambda x: x[np.int64(2 ** 63 - 1)]),
    ("getitem out of range", lambda x: x[:, 7],
     lambda x: x[:, np.int64(7)]),
    ("getitem step 0", lambda x: x[::0], lambda x: x[::np.int64(0)]),
    ("getitem too many", lambda x: x[0, 0, 0],
     lambda x: x[np.int64(0), 0, 0]),
    ("getitem huge bound", lambda x: x[:2 ** 70],
     lambda x: x[:np.int64(2 ** 62)]),
]
for _name, _op in [("reduce_sum", tf.reduce_sum),
                   ("reduce_mean", tf.reduce_mean),
                   ("reduce_max", tf.reduce_max),
                   ("reduce_min", tf.reduce_min),
                   ("reduce_prod", tf.reduce_prod)]:
    CASES += [
        (_name, lambda x, op=_op: op(x),
         lambda x, op=_op: op(x, keepdims=0)),
        (_name + " axis", lambda x, op=_op: op(x, 1),
         lambda x, op=_op: op(x, np.int64(1))),
        (_name + " axis -1 keepdims", lambda x, op=_op: op(x, -1, True),
         lambda x, op=_op: op(x, np.int64(-1), True)),
        (_name + " axes", lambda x, op=_op: op(x, [0, 1]),
         lambda x, op=_op: op(x, np.array([0, 1]))),
        (_name + " axes tuple", lambda x, op=_op: op(x, (1,)),
         lambda x, op=_op: op(x, np.array([1]))),
        (_name + " no axes", lambda x, op=_op: op(x, []),
         lambda x, op=_op: op(x, np.array([], np.int64))),
        (_name + " bad axis", lambda x, op=_op: op(x, 5),
         lambda x, op=_op: op(x, np.int64(5))),
    ]


@pytest.mark.parametrize("name,fast,general", CASES,
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_fast_path_matches_general_path(name, fast, general, dtype):
    x = tf.constant(X.astype(dtype) if dtype != np.int32
                    else np.arange(6, dtype=np.int32).reshape(2, 3))
    got, want = _outcome(lambda: fast(x)), _outcome(lambda: general(x))
    assert got == want


@pytest.mark.parametrize("name,fast,general", CASES,
                         ids=[c[0] for c in CASES])
def test_fast_path_traced(name, fast, general):
    """Symbolic tensors take the same paths: same node (op name), dtype
    and shape, same trace-time error, same value once run."""
    x = tf.constant(X)
    seen = {}

    def run(fn, key):
        @tf.function(autograph=False)
        def f(t):
            r = fn(t)
            seen[key] = (r.name.split(":")[0].rstrip("_0123456789"),
                         r.dtype, tuple(r.shape))
            return r
        return _outcome(lambda: f(x))

    assert run(fast, "fast") == run(general, "general")
    assert seen.get("fast") == seen.get("general")


def test_values_against_numpy():
    x = tf.constant(X)
    np.testing.assert_array_equal(tf.reshape(x, [3, 2]).numpy(),
                                  X.reshape(3, 2))
    np.testing.assert_array_equal(tf.transpose(x).numpy(), X.T)
    np.testing.assert_array_equal(tf.concat([x, x], 1).numpy(),
                                  np.concatenate([X, X], 1))
    np.testing.assert_array_equal(tf.expand_dims(x, 1).numpy(),
                                  X[:, None])
    np.testing.assert_allclose(tf.matmul(x, tf.transpose(x)).numpy(),
                               X @ X.T, rtol=1e-6)
    np.testing.assert_allclose(tf.reduce_sum(x, 1).numpy(), X.sum(1))
    np.testing.assert_allclose(tf.reduce_mean(x).numpy(), X.mean())
    np.testing.assert_array_equal(tf.reduce_max(x, [0, 1]).numpy(),
                                  X.max())
    e = np.exp(X - X.max(-1, keepdims=True))
    np.testing.assert_allclose(tf.nn.softmax(x).numpy(),
                               e / e.sum(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(x[:, 1].numpy(), X[:, 1])
    np.testing.assert_array_equal(x[::-1, 1:].numpy(), X[::-1, 1:])
    np.testing.assert_array_equal(tf.cast(x, tf.int32).numpy(),
                                  X.astype(np.int32))


def test_general_arguments_still_work():
    """Arguments the fast paths leave alone: Python values, lists with
    Python numbers (which take the first tensor's dtype), tensors as
    axes and shapes, flags."""
    x = tf.constant(X)
    c = tf.concat([x, [[1, 2, 3]]], 0)
    assert c.dtype == tf.float32 and c.shape == (3, 3)
    assert tf.concat([x], 0) is not None
    assert tf.reshape(x, tf.constant([3, 2])).shape == (3, 2)
    assert tf.reshape([1, 2, 3, 4], [2, 2]).dtype == tf.int32
    assert tf.transpose([[1, 2]]).shape == (2, 1)
    assert tf.expand_dims(x, tf.constant(0)).shape == (1, 2, 3)
    assert tf.reduce_sum(x, tf.constant(1)).shape == (2,)
    assert tf.reduce_sum([1.5, 2.5]).numpy() == 4.0
    m = tf.matmul([[1.0, 2.0]], [[1.0], [2.0]])
    assert m.dtype == tf.float32 and m.numpy().tolist() == [[5.0]]
    np.testing.assert_allclose(
        tf.matmul(x, x, transpose_b=True).numpy(), X @ X.T, rtol=1e-6)
    with pytest.raises(ValueError, match="Only one of transpose_a"):
        tf.matmul(x, x, transpose_a=True, adjoint_a=True)
    assert tf.matmul(x, tf.transpose(x), output_type=tf.float64).dtype \
        == tf.float64
    with pytest.raises(TypeError, match="axis must be an int"):
        tf.reduce_sum(x, True)
    with pytest.raises(TypeError, match="axis must be an int"):
        tf.reduce_sum(x, 2 ** 70)
    with pytest.raises(ValueError, match="out of range for int64"):
        tf.reshape(x, [2 ** 70])
    with pytest.raises(ValueError, match="out of range for int64"):
        tf.expand_dims(x, 2 ** 70)
    with pytest.raises(ValueError, match="at most 64 ints"):
        tf.reshape(x, [1] * 65)
    with pytest.raises(IndexError, match="out of range"):
        x[2 ** 64]


def test_cast():
    x = tf.constant(X)
    assert tf.cast(x, tf.float32) is x
    assert tf.cast(x, "float32") is x
    y = tf.cast(x, np.float64)
    assert y.dtype == tf.float64
    np.testing.assert_array_equal(y.numpy(), X.astype(np.float64))
    assert tf.cast([1, 2], tf.float32).numpy().tolist() == [1.0, 2.0]


def test_cast_complex_warning(caplog):
    z = tf.complex(tf.constant([1.0]), tf.constant([2.0]))
    with caplog.at_level("WARNING", logger="tfmini"):
        assert tf.cast(z, tf.complex128).dtype == tf.complex128
        assert tf.cast(tf.constant([1.0]), tf.complex64).dtype == \
            tf.complex64
    assert "discard the imaginary part" not in caplog.text
    with caplog.at_level("WARNING", logger="tfmini"):
        assert tf.cast(z, tf.float32).numpy().tolist() == [1.0]
    assert "discard the imaginary part" in caplog.text


def test_gradients_through_fast_paths():
    """The fast paths are ops like any other: a tape records them."""
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.nn.softmax(tf.matmul(
            tf.reshape(x, [3, 2]), tf.transpose(tf.expand_dims(x[:, 1], 0)))
            * tf.concat([x[0:1, :2], x[1:, :2]], 1)[:, :1]))
        z = tf.reduce_mean(tf.cast(x, tf.float64), 1)
    g = tape.gradient(y, x)
    assert g is not None and g.shape == (2, 3)
    np.testing.assert_allclose(tape.gradient(z, x).numpy(),
                               np.full((2, 3), 1 / 3), rtol=1e-6)
    with tf.GradientTape() as tape:
        tape.watch(x)
        w = tf.reduce_sum(x[:, 1]) + tf.reduce_max(x, 1)[0]
    np.testing.assert_array_equal(tape.gradient(w, x).numpy(),
                                  [[0, 1, 1], [0, 1, 0]])


# ---- the fast paths are the ones taken ------------------------------------

def _refuse(*args, **kwargs):
    raise AssertionError("the general path ran")


class _NoNumpy:
    """reduce_ops' `np` with asarray refused (the general axis path)."""
    def __getattr__(self, name):
        if name == "asarray":
            return _refuse
        return getattr(np, name)


def test_paths_taken(monkeypatch):
    x = tf.constant(X)
    monkeypatch.setattr(reduce_ops, "np", _NoNumpy())
    monkeypatch.setattr(reduce_ops, "_axes", _refuse)
    assert tf.reduce_sum(x).numpy() == X.sum()
    monkeypatch.undo()

    monkeypatch.setattr(reduce_ops, "np", _NoNumpy())
    assert tf.reduce_sum(x, 1).shape == (2,)
    assert tf.reduce_max(x, [0, 1], keepdims=True).shape == (1, 1)
    assert tf.reduce_mean(x, ()).shape == (2, 3)

    for helper in ("_ints", "_int", "_common", "_call", "_slice_spec",
                   "_is_bool_mask"):
        monkeypatch.setattr(array_ops, helper, _refuse)
    assert tf.reshape(x, [3, 2]).shape == (3, 2)
    assert tf.transpose(x, (1, 0)).shape == (3, 2)
    assert tf.expand_dims(x, 0).shape == (1, 2, 3)
    assert tf.concat([x, x], 0).shape == (4, 3)
    assert x[:, 1].shape == (2,)
    assert x[1:].shape == (1, 3)
    assert x[0].shape == (3,)
    monkeypatch.undo()

    # transpose converts its input first (Variables), then takes the
    # default perm without _ints.
    monkeypatch.setattr(array_ops, "_ints", _refuse)
    assert tf.transpose(x).shape == (3, 2)
    monkeypatch.undo()

    monkeypatch.setattr(linalg_ops, "_pair", _refuse)
    assert tf.matmul(x, tf.transpose(x)).shape == (2, 2)
    monkeypatch.undo()

    monkeypatch.setattr(nn_ops, "_axis", _refuse)
    assert tf.nn.softmax(x).shape == (2, 3)
    assert tf.nn.log_softmax(x).shape == (2, 3)
    monkeypatch.undo()

    monkeypatch.setattr(math_ops._dtypes, "from_enum", _refuse)
    y = tf.cast(x, tf.float64)
    monkeypatch.undo()
    assert y.dtype == tf.float64


# ---- _C.call's arguments ---------------------------------------------------

def test_c_call_arguments():
    x = tf.constant(X)
    r = ID["Reshape"]
    assert _C.call(r, (x,), [3, 2]).shape == (3, 2)
    assert _C.call(r, (x,), ints=[3, 2]).shape == (3, 2)
    assert _C.call(op=r, inputs=(x,), ints=(6,)).shape == (6,)
    s = _C.call(ID["Sum"], [x], None, i=(1, 1))
    assert s.shape == (1, 1) and s.numpy()[0, 0] == X.sum()
    c = _C.call(ID["Cast"], (x,), dtype=tf.float64._enum)
    assert c.dtype == tf.float64
    with pytest.raises(TypeError, match="unexpected keyword argument "
                       "'shape'"):
        _C.call(r, (x,), shape=[3, 2])
    with pytest.raises(TypeError, match=r"given by name \('ints'\) and "
                       r"position \(3\)"):
        _C.call(r, (x,), [3, 2], ints=[3, 2])
    with pytest.raises(TypeError, match="missing required argument "
                       "'inputs'"):
        _C.call(r)
    with pytest.raises(TypeError, match="missing required argument 'op'"):
        _C.call(inputs=(x,))
    with pytest.raises(TypeError, match="at most 6 arguments"):
        _C.call(r, (x,), None, None, None, None, None)
    with pytest.raises(TypeError, match="must be a sequence"):
        _C.call(r, (x,), 3)
    with pytest.raises(ValueError, match="at most 64 values"):
        _C.call(r, (x,), [1] * 65)


# ---- extension-type dispatch costs nothing once unregistered ---------------

class _Box:
    def __init__(self, v):
        self.v = v


def test_dispatch_unregistered_restores_bare_ops():
    bare_matmul = linalg_ops.matmul
    bare_abs, bare_add = tf.abs, tf.math.add
    assert tf.matmul is bare_matmul and tf.linalg.matmul is bare_matmul

    @tf.experimental.dispatch_for_api(tf.matmul)
    def mm(a: _Box, b: _Box, transpose_a=False, transpose_b=False,
           adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, output_type=None, grad_a=False,
           grad_b=False, name=None):
        return _Box(tf.matmul(a.v, b.v))

    @tf.experimental.dispatch_for_unary_elementwise_apis(_Box)
    def unary(api_func, x):
        return _Box(api_func(x.v))

    try:
        assert tf.matmul is not bare_matmul
        assert tf.linalg.matmul is tf.matmul
        x = tf.constant(X)
        out = tf.matmul(_Box(x), _Box(tf.transpose(x)))
        assert isinstance(out, _Box) and out.v.shape == (2, 2)
        assert isinstance(tf.abs(_Box(x)), _Box)
        assert tf.abs is not bare_abs
        tf.experimental.unregister_dispatch_for(mm)
        # matmul has no handler left: its bare op is back everywhere;
        # abs still dispatches.
        assert tf.matmul is bare_matmul and tf.linalg.matmul is bare_matmul
        assert isinstance(tf.abs(_Box(x)), _Box)
    finally:
        for h in (mm, unary):
            try:
                tf.experimental.unregister_dispatch_for(h)
            except ValueError:
                pass
    assert tf.abs is bare_abs and tf.math.abs is bare_abs
    assert tf.math.add is bare_add
    assert extension_dispatch._TYPES_T[0] == ()
    with pytest.raises(ValueError, match="unsupported type"):
        tf.abs(_Box(tf.constant(X)))

    # Registering again installs the wrappers again.
    @tf.experimental.dispatch_for_api(tf.matmul)
    def mm2(a: _Box, b: _Box, transpose_a=False, transpose_b=False,
            adjoint_a=False, adjoint_b=False, a_is_sparse=False,
            b_is_sparse=False, output_type=None, grad_a=False,
            grad_b=False, name=None):
        return "boxed"

    try:
        assert tf.matmul(_Box(1), _Box(2)) == "boxed"
    finally:
        tf.experimental.unregister_dispatch_for(mm2)
    assert tf.matmul is bare_matmul


def test_c_getitem():
    """_C.getitem takes ints and int slices in int64, and hands every
    other key back (NotImplemented) for _getitem to convert or refuse."""
    x = tf.constant(X)
    np.testing.assert_array_equal(_C.getitem(x, (slice(None), 1)).numpy(),
                                  X[:, 1])
    np.testing.assert_array_equal(_C.getitem(x, slice(None, None, -1))
                                  .numpy(), X[::-1])
    np.testing.assert_array_equal(_C.getitem(x, (-1, slice(0, 3, 2)))
                                  .numpy(), X[-1, 0:3:2])
    assert _C.getitem(x, ()).shape == (2, 3)
    np.testing.assert_array_equal(_C.getitem(x, -1).numpy(), X[-1])
    for key in [True, np.int64(0), 2 ** 63 - 1, (True,), (np.int64(0),), (2 ** 63 - 1,), (2 ** 63,),
                (slice(0, 2 ** 64),), (slice(None, None, 1.0),),
                (Ellipsis, 0), (None, 0), (0,) * 22, [0, 1],
                (tf.constant(0),)]:
        assert _C.getitem(x, key) is NotImplemented, key
    with pytest.raises(tf.errors.InvalidArgumentError):
        _C.getitem(x, (0,) * 21)           # taken, then too many dims
    v = tf.Variable(X)
    np.testing.assert_array_equal(v[:, 1].numpy(), X[:, 1])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="StridedSlice: slice index 7 of dimension 1 "
                       "out of bounds"):
        _C.getitem(x, (slice(None), 7))
    with pytest.raises(TypeError, match=r"getitem\(tensor, key\)"):
        _C.getitem(x)
