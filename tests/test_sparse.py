"""tf.sparse.SparseTensor: the Sparse tensors guide's values and printed
text (the table below is what TensorFlow 2.21 prints for each
expression), errors, gradients by finite differences for
sparse_dense_matmul and to_dense, tf.function, tf.nest and memory."""

import numpy as np
import pytest

import tfmini as tf

from _leaks import assert_no_leak

TF_REPRS = [
    ('st1',
     'SparseTensor(indices=tf.Tensor(\n[[0 3]\n [2 4]], shape=(2, 2), dtype=int64), values=tf.Tensor([10 20], shape=(2,), dtype=int32), dense_shape=tf.Tensor([ 3 10], shape=(2,), dtype=int64))'),
    ('st1.shape',
     'TensorShape([3, 10])'),
    ('st1.dtype',
     'tf.int32'),
    ('tf.SparseTensorSpec(shape=[3, 10], dtype=tf.int32)',
     'SparseTensorSpec(TensorShape([3, 10]), tf.int32)'),
    ('tf.sparse.to_dense(st1)',
     '<tf.Tensor: shape=(3, 10), dtype=int32, numpy=\narray([[ 0,  0,  0, 10,  0,  0,  0,  0,  0,  0],\n       [ 0,  0,  0,  0,  0,  0,  0,  0,  0,  0],\n       [ 0,  0,  0,  0, 20,  0,  0,  0,  0,  0]], dtype=int32)>'),
    ('tf.sparse.from_dense([[1, 0, 0, 8], [0, 0, 0, 0], [0, 0, 3, 0]])',
     'SparseTensor(indices=tf.Tensor(\n[[0 0]\n [0 3]\n [2 2]], shape=(3, 2), dtype=int64), values=tf.Tensor([1 8 3], shape=(3,), dtype=int32), dense_shape=tf.Tensor([3 4], shape=(2,), dtype=int64))'),
    ('tf.sparse.to_dense(tf.sparse.from_dense([[1, 0, 0, 8], [0, 0, 0, 0], [0, 0, 3, 0]]))',
     '<tf.Tensor: shape=(3, 4), dtype=int32, numpy=\narray([[1, 0, 0, 8],\n       [0, 0, 0, 0],\n       [0, 0, 3, 0]], dtype=int32)>'),
    ('tf.sparse.add(st_a, st_b)',
     'SparseTensor(indices=tf.Tensor(\n[[0 2]\n [3 0]\n [3 4]], shape=(3, 2), dtype=int64), values=tf.Tensor([87. 38.  2.], shape=(3,), dtype=float32), dense_shape=tf.Tensor([ 4 10], shape=(2,), dtype=int64))'),
    ('tf.sparse.to_dense(tf.sparse.add(st_a, st_b))',
     '<tf.Tensor: shape=(4, 10), dtype=float32, numpy=\narray([[ 0.,  0., 87.,  0.,  0.,  0.,  0.,  0.,  0.,  0.],\n       [ 0.,  0.,  0.,  0.,  0.,  0.,  0.,  0.,  0.,  0.],\n       [ 0.,  0.,  0.,  0.,  0.,  0.,  0.,  0.,  0.,  0.],\n       [38.,  0.,  0.,  0.,  2.,  0.,  0.,  0.,  0.,  0.]], dtype=float32)>'),
    ('tf.sparse.add(st_a, tf.ones([4, 10]))',
     '<tf.Tensor: shape=(4, 10), dtype=float32, numpy=\narray([[ 1.,  1., 32.,  1.,  1.,  1.,  1.,  1.,  1.,  1.],\n       [ 1.,  1.,  1.,  1.,  1.,  1.,  1.,  1.,  1.,  1.],\n       [ 1.,  1.,  1.,  1.,  1.,  1.,  1.,  1.,  1.,  1.],\n       [ 1.,  1.,  1.,  1.,  3.,  1.,  1.,  1.,  1.,  1.]], dtype=float32)>'),
    ('tf.sparse.sparse_dense_matmul(st_c, mat)',
     '<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\narray([[ 4.5,  6. ],\n       [18. , 20. ]], dtype=float32)>'),
    ('tf.sparse.sparse_dense_matmul(st_c, mat2, adjoint_a=True)',
     '<tf.Tensor: shape=(3, 2), dtype=float32, numpy=\narray([[-6. , -8. ],\n       [ 1.5,  3. ],\n       [12. , 16. ]], dtype=float32)>'),
    ('tf.sparse.sparse_dense_matmul(st_c, tf.transpose(mat), adjoint_b=True)',
     '<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\narray([[ 4.5,  6. ],\n       [18. , 20. ]], dtype=float32)>'),
    ('tf.sparse.sparse_dense_matmul(tf.transpose(mat), tf.sparse.transpose(st_c))',
     '<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\narray([[ 4.5, 18. ],\n       [ 6. , 20. ]], dtype=float32)>'),
    ('tf.sparse.reduce_sum(st_c)',
     '<tf.Tensor: shape=(), dtype=float32, numpy=3.5>'),
    ('tf.sparse.reduce_sum(st_c, axis=1)',
     '<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1.5, 2. ], dtype=float32)>'),
    ('tf.sparse.reduce_sum(st_c, axis=0, keepdims=True)',
     '<tf.Tensor: shape=(1, 3), dtype=float32, numpy=array([[-2. ,  1.5,  4. ]], dtype=float32)>'),
    ('tf.sparse.reorder(tf.sparse.SparseTensor(indices=[[2, 1], [0, 0], [1, 2]], values=[1., 2., 3.], dense_shape=[3, 3]))',
     'SparseTensor(indices=tf.Tensor(\n[[0 0]\n [1 2]\n [2 1]], shape=(3, 2), dtype=int64), values=tf.Tensor([2. 3. 1.], shape=(3,), dtype=float32), dense_shape=tf.Tensor([3 3], shape=(2,), dtype=int64))'),
    ('tf.sparse.reshape(st_c, [3, 2])',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 1]\n [2 1]], shape=(3, 2), dtype=int64), values=tf.Tensor([ 1.5 -2.   4. ], shape=(3,), dtype=float32), dense_shape=tf.Tensor([3 2], shape=(2,), dtype=int64))'),
    ('tf.sparse.reshape(st_c, [-1])',
     'SparseTensor(indices=tf.Tensor(\n[[1]\n [3]\n [5]], shape=(3, 1), dtype=int64), values=tf.Tensor([ 1.5 -2.   4. ], shape=(3,), dtype=float32), dense_shape=tf.Tensor([6], shape=(1,), dtype=int64))'),
    ('tf.sparse.concat(1, [st_c, st_c])',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [0 4]\n [1 0]\n [1 2]\n [1 3]\n [1 5]], shape=(6, 2), dtype=int64), values=tf.Tensor([ 1.5  1.5 -2.   4.  -2.   4. ], shape=(6,), dtype=float32), dense_shape=tf.Tensor([2 6], shape=(2,), dtype=int64))'),
    ('tf.sparse.concat(0, [st_c, st_c])',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 0]\n [1 2]\n [2 1]\n [3 0]\n [3 2]], shape=(6, 2), dtype=int64), values=tf.Tensor([ 1.5 -2.   4.   1.5 -2.   4. ], shape=(6,), dtype=float32), dense_shape=tf.Tensor([4 3], shape=(2,), dtype=int64))'),
    ('tf.sparse.slice(st_c, [0, 1], [2, 2])',
     'SparseTensor(indices=tf.Tensor(\n[[0 0]\n [1 1]], shape=(2, 2), dtype=int64), values=tf.Tensor([1.5 4. ], shape=(2,), dtype=float32), dense_shape=tf.Tensor([2 2], shape=(2,), dtype=int64))'),
    ('tf.sparse.retain(st_c, [True, False, True])',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 2]], shape=(2, 2), dtype=int64), values=tf.Tensor([1.5 4. ], shape=(2,), dtype=float32), dense_shape=tf.Tensor([2 3], shape=(2,), dtype=int64))'),
    ('tf.sparse.transpose(st_c)',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 0]\n [2 1]], shape=(3, 2), dtype=int64), values=tf.Tensor([-2.   1.5  4. ], shape=(3,), dtype=float32), dense_shape=tf.Tensor([3 2], shape=(2,), dtype=int64))'),
    ('st_c * 2.0',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 0]\n [1 2]], shape=(3, 2), dtype=int64), values=tf.Tensor([ 3. -4.  8.], shape=(3,), dtype=float32), dense_shape=tf.Tensor([2 3], shape=(2,), dtype=int64))'),
    ('st_c / 2.0',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 0]\n [1 2]], shape=(3, 2), dtype=int64), values=tf.Tensor([ 0.75 -1.    2.  ], shape=(3,), dtype=float32), dense_shape=tf.Tensor([2 3], shape=(2,), dtype=int64))'),
    ('st_c * tf.constant([[1.0], [10.0]])',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 0]\n [1 2]], shape=(3, 2), dtype=int64), values=tf.Tensor([  1.5 -20.   40. ], shape=(3,), dtype=float32), dense_shape=tf.Tensor([2 3], shape=(2,), dtype=int64))'),
    ('st_c * tf.constant([1.0, 2.0, 3.0])',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 0]\n [1 2]], shape=(3, 2), dtype=int64), values=tf.Tensor([ 3. -2. 12.], shape=(3,), dtype=float32), dense_shape=tf.Tensor([2 3], shape=(2,), dtype=int64))'),
    ('tf.math.square(st_c)',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 0]\n [1 2]], shape=(3, 2), dtype=int64), values=tf.Tensor([ 2.25  4.   16.  ], shape=(3,), dtype=float32), dense_shape=tf.Tensor([2 3], shape=(2,), dtype=int64))'),
    ('tf.cast(st_c, tf.int32)',
     'SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 0]\n [1 2]], shape=(3, 2), dtype=int64), values=tf.Tensor([ 1 -2  4], shape=(3,), dtype=int32), dense_shape=tf.Tensor([2 3], shape=(2,), dtype=int64))'),
    ('tf.sparse.eye(3)',
     'SparseTensor(indices=tf.Tensor(\n[[0 0]\n [1 1]\n [2 2]], shape=(3, 2), dtype=int64), values=tf.Tensor([1. 1. 1.], shape=(3,), dtype=float32), dense_shape=tf.Tensor([3 3], shape=(2,), dtype=int64))'),
    ('tf.nest.flatten(st_c, expand_composites=True)',
     '[<tf.Tensor: shape=(3, 2), dtype=int64, numpy=\narray([[0, 1],\n       [1, 0],\n       [1, 2]])>, <tf.Tensor: shape=(3,), dtype=float32, numpy=array([ 1.5, -2. ,  4. ], dtype=float32)>, <tf.Tensor: shape=(2,), dtype=int64, numpy=array([2, 3])>]'),
    ('tf.sparse.to_dense(st_c, default_value=-1.0)',
     '<tf.Tensor: shape=(2, 3), dtype=float32, numpy=\narray([[-1. ,  1.5, -1. ],\n       [-2. , -1. ,  4. ]], dtype=float32)>'),
]


def _names():
    return {
        "tf": tf,
        "st1": tf.sparse.SparseTensor(indices=[[0, 3], [2, 4]],
                                      values=[10, 20], dense_shape=[3, 10]),
        "st_a": tf.sparse.SparseTensor(indices=[[0, 2], [3, 4]],
                                       values=[31., 2.], dense_shape=[4, 10]),
        "st_b": tf.sparse.SparseTensor(indices=[[0, 2], [3, 0]],
                                       values=[56., 38.], dense_shape=[4, 10]),
        "st_c": tf.sparse.SparseTensor(indices=[[0, 1], [1, 0], [1, 2]],
                                       values=[1.5, -2., 4.],
                                       dense_shape=[2, 3]),
        "mat": tf.constant([[1., 2.], [3., 4.], [5., 6.]]),
        "mat2": tf.constant([[1., 2.], [3., 4.]]),
    }


@pytest.mark.parametrize("expr,text", TF_REPRS,
                         ids=[e for e, _ in TF_REPRS])
def test_prints_as_tensorflow(expr, text):
    assert repr(eval(expr, _names())) == text


def test_guide_print():
    st = tf.sparse.SparseTensor(indices=[[0, 3], [2, 4]], values=[10, 20],
                                dense_shape=[3, 10])
    assert str(st) == (
        "SparseTensor(indices=tf.Tensor(\n[[0 3]\n [2 4]], shape=(2, 2), "
        "dtype=int64), values=tf.Tensor([10 20], shape=(2,), dtype=int32), "
        "dense_shape=tf.Tensor([ 3 10], shape=(2,), dtype=int64))")
    assert tf.SparseTensor is tf.sparse.SparseTensor


# ---- errors ----------------------------------------------------------------

C = dict(indices=[[0, 1], [1, 0], [1, 2]], values=[1.5, -2., 4.],
         dense_shape=[2, 3])


@pytest.mark.parametrize("expr,err,text", [
    ("tf.sparse.to_dense(tf.sparse.SparseTensor([[2, 1], [0, 0]], [1., 2.],"
     " [3, 3]))", tf.errors.InvalidArgumentError,
     r"SparseToDense: indices\[1\] = \[0,0\] is out of order"),
    ("tf.sparse.to_dense(tf.sparse.SparseTensor([[5, 1]], [1.], [3, 3]))",
     tf.errors.InvalidArgumentError,
     r"SparseToDense: indices\[0\] = \[5,1\] is out of bounds: need 0 <= "
     r"index < \[3,3\]"),
    ("tf.sparse.add(c, tf.sparse.SparseTensor([[0, 0]], [1.], [3, 3]))",
     tf.errors.InvalidArgumentError,
     r"SparseAdd: Operands' shapes do not match: got 2 and 3 for "
     r"dimension 0"),
    ("tf.sparse.sparse_dense_matmul(c, tf.ones([2, 2]))",
     tf.errors.InvalidArgumentError,
     r"SparseTensorDenseMatMul: Cannot multiply A and B because inner "
     r"dimension does not match: 3 vs. 2"),
    ("tf.sparse.sparse_dense_matmul(c, tf.ones([3, 2], tf.float64))",
     tf.errors.InvalidArgumentError, r"float32 and float64"),
    ("tf.sparse.reshape(c, [4, 2])", tf.errors.InvalidArgumentError,
     r"SparseReshape: Input to reshape is a tensor with 6 dense values, "
     r"but the requested shape has 8"),
    ("tf.sparse.SparseTensor([[0, 0]], [1., 2.], [3, 3])", ValueError,
     r"indices of shape \(1, 2\) do not match values of shape \(2,\)"),
    ("tf.sparse.SparseTensor([[0.5, 0]], [1.], [3, 3])", TypeError,
     "indices must be integers"),
    ("c * tf.ones([4, 4])", tf.errors.InvalidArgumentError,
     r"SparseDenseCwiseMul: cannot broadcast a dense tensor of shape "
     r"\(4, 4\)"),
    ("c + c", TypeError, "unsupported operand"),
])
def test_errors(expr, err, text):
    with pytest.raises(err, match=text):
        eval(expr, {"tf": tf, "c": tf.sparse.SparseTensor(**C)})


# ---- gradients (central differences, float64) ------------------------------

def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d.flat[i] = eps
        g.flat[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


IND = [[0, 1], [1, 0], [1, 2], [2, 2]]
SHAPE = [3, 3]


def _sp(values):
    return tf.sparse.SparseTensor(IND, values, SHAPE)


@pytest.mark.parametrize("adj_a,adj_b", [(False, False), (True, False),
                                         (False, True), (True, True)])
def test_sparse_dense_matmul_gradients(adj_a, adj_b):
    v0 = np.array([0.5, -1.5, 2.0, 0.25])
    b0 = np.arange(6, dtype=np.float64).reshape(3, 2) / 3.0 - 0.5
    if adj_b:
        b0 = b0.T.copy()
    w = tf.constant(np.linspace(-1, 1, 6).reshape(3, 2))

    def loss(v, b):
        return tf.reduce_sum(tf.sparse.sparse_dense_matmul(
            _sp(v), b, adjoint_a=adj_a, adjoint_b=adj_b) * w)
    v, b = tf.constant(v0), tf.constant(b0)
    with tf.GradientTape() as tape:
        tape.watch([v, b])
        y = loss(v, b)
    gv, gb = tape.gradient(y, [v, b])
    np.testing.assert_allclose(
        gv.numpy(), _fd(lambda x: float(loss(tf.constant(x), b)), v0),
        rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        gb.numpy(), _fd(lambda x: float(loss(v, tf.constant(x))), b0),
        rtol=1e-6, atol=1e-8)
    dense = tf.sparse.to_dense(_sp(v)).numpy()
    a = dense.T if adj_a else dense
    bb = b0.T if adj_b else b0
    np.testing.assert_allclose(
        tf.sparse.sparse_dense_matmul(_sp(v), b, adjoint_a=adj_a,
                                      adjoint_b=adj_b).numpy(), a @ bb)


def test_to_dense_gradient():
    v0 = np.array([0.5, -1.5, 2.0, 0.25])
    w = tf.constant(np.arange(9.0).reshape(3, 3))

    def loss(v):
        return tf.reduce_sum(tf.sparse.to_dense(_sp(v), default_value=2.0)
                             ** 2 * w)
    v = tf.constant(v0)
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = loss(v)
    np.testing.assert_allclose(
        tape.gradient(y, v).numpy(),
        _fd(lambda x: float(loss(tf.constant(x))), v0), rtol=1e-6)


def test_gradient_through_add_and_mul():
    v = tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(v)
        s = tf.sparse.add(_sp(v), _sp(v * 3.0)) * tf.constant(
            [[1.0, 2.0, 3.0]], tf.float64)
        y = tf.sparse.reduce_sum(s)
    # d/dv of sum(4 v_i * col_scale(i)); columns 1, 0, 2, 2
    assert tape.gradient(y, v).numpy().tolist() == [8.0, 4.0, 12.0, 12.0]


# ---- tf.function and nest --------------------------------------------------

def test_sparse_in_tf_function():
    @tf.function
    def f(sp, d):
        return tf.sparse.sparse_dense_matmul(sp, d), sp * 2.0
    sp = tf.sparse.SparseTensor(**C)
    d = tf.ones([3, 2])
    out, doubled = f(sp, d)
    assert out.numpy().tolist() == [[1.5, 1.5], [2.0, 2.0]]
    assert isinstance(doubled, tf.sparse.SparseTensor)
    assert doubled.values.numpy().tolist() == [3.0, -4.0, 8.0]
    assert doubled.shape.as_list() == [2, 3]
    f(tf.sparse.SparseTensor([[0, 0], [1, 1], [0, 2]], [1., 2., 3.],
                             [2, 3]), d)
    assert f.experimental_get_tracing_count() == 1
    f(tf.sparse.SparseTensor([[0, 0]], [1.], [3, 3]), d)
    assert f.experimental_get_tracing_count() == 2


def test_sparse_tensor_spec_signature():
    @tf.function(input_signature=[
        tf.SparseTensorSpec(shape=[2, 3], dtype=tf.float32)])
    def total(sp):
        return tf.reduce_sum(tf.sparse.to_dense(sp), axis=1)
    assert total(tf.sparse.SparseTensor(**C)).numpy().tolist() == [1.5, 2.0]
    assert "SparseTensorSpec(TensorShape([2, 3]), tf.float32)" in \
        total.get_concrete_function().pretty_printed_signature()
    with pytest.raises(TypeError):
        total(tf.sparse.SparseTensor([[0, 0]], [1.], [3, 3]))


def test_nest_expand_composites():
    sp = tf.sparse.SparseTensor(**C)
    flat = tf.nest.flatten([sp], expand_composites=True)
    assert [t.shape.as_list() for t in flat] == [[3, 2], [3], [2]]
    back = tf.nest.pack_sequence_as([sp], flat, expand_composites=True)
    assert tf.sparse.to_dense(back[0]).numpy().tolist() == \
        tf.sparse.to_dense(sp).numpy().tolist()
    assert tf.nest.flatten(sp) == [sp]


def test_spec_equality():
    a = tf.SparseTensorSpec([2, 3], tf.float32)
    assert a == tf.sparse.SparseTensor(**C)._type_spec
    assert a != tf.SparseTensorSpec([2, None], tf.float32)
    assert a.is_compatible_with(tf.SparseTensorSpec([2, None], tf.float32))


# ---- memory ---------------------------------------------------------------

def test_sparse_ops_do_not_leak():
    def round_():
        sp = tf.sparse.SparseTensor(**C)
        _ = (tf.sparse.to_dense(sp), tf.sparse.from_dense([[0, 1], [2, 0]]),
             tf.sparse.add(sp, sp), tf.sparse.reorder(sp), repr(sp),
             tf.sparse.sparse_dense_matmul(sp, tf.ones([3, 2])),
             tf.sparse.concat(0, [sp, sp]), tf.sparse.slice(sp, [0, 0],
                                                            [1, 2]),
             sp * 2.0, tf.abs(sp), tf.sparse.reduce_sum(sp, axis=0))
        try:
            tf.sparse.to_dense(tf.sparse.SparseTensor([[9, 9]], [1.],
                                                      [2, 2]))
        except tf.errors.InvalidArgumentError:
            pass
        v = tf.constant([1.0, 2.0, 3.0])
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.reduce_sum(tf.sparse.sparse_dense_matmul(
                tf.sparse.SparseTensor(C["indices"], v, C["dense_shape"]),
                tf.ones([3, 2])))
        tape.gradient(y, v)
    assert_no_leak(round_)


SPARSE_GUIDE = """\
st1 = tf.sparse.SparseTensor(indices=[[0, 3], [2, 4]], values=[10, 20], dense_shape=[3, 10])
print(st1)
def pprint_sparse_tensor(st):
  s = "<SparseTensor shape=%s \\n values={" % (st.dense_shape.numpy().tolist(),)
  for (index, value) in zip(st.indices, st.values):
    s += f"\\n  %s: %s" % (index.numpy().tolist(), value.numpy().tolist())
  return s + "}>"
print(pprint_sparse_tensor(st1))
st2 = tf.sparse.from_dense([[1, 0, 0, 8], [0, 0, 0, 0], [0, 0, 3, 0]])
print(pprint_sparse_tensor(st2))
st3 = tf.sparse.to_dense(st2)
print(st3)
st_a = tf.sparse.SparseTensor(indices=[[0, 2], [3, 4]], values=[31, 2], dense_shape=[4, 10])
st_b = tf.sparse.SparseTensor(indices=[[0, 2], [3, 0]], values=[56, 38], dense_shape=[4, 10])
st_sum = tf.sparse.add(st_a, st_b)
print(pprint_sparse_tensor(st_sum))
st_c = tf.sparse.SparseTensor(indices=([0, 1], [1, 0], [1, 1]), values=[13, 15, 17], dense_shape=(2,2))
mb = tf.constant([[4], [6]])
product = tf.sparse.sparse_dense_matmul(st_c, mb)
print(product)
sparse_pattern_A = tf.sparse.SparseTensor(indices = [[2,4], [3,3], [3,4], [4,3], [4,4], [5,4]], values = [1,1,1,1,1,1], dense_shape = [8,5])
sparse_pattern_B = tf.sparse.SparseTensor(indices = [[0,2], [1,1], [1,3], [2,0], [2,4], [2,5], [3,5], [4,5], [5,0], [5,4], [5,5], [6,1], [6,3], [7,2]], values = [1,1,1,1,1,1,1,1,1,1,1,1,1,1], dense_shape = [8,6])
sparse_pattern_C = tf.sparse.SparseTensor(indices = [[3,0], [4,0]], values = [1,1], dense_shape = [8,6])
sparse_patterns_list = [sparse_pattern_A, sparse_pattern_B, sparse_pattern_C]
sparse_pattern = tf.sparse.concat(axis=1, sp_inputs=sparse_patterns_list)
print(tf.sparse.to_dense(sparse_pattern))
sparse_slice_A = tf.sparse.slice(sparse_pattern_A, start = [0,0], size = [8,5])
sparse_slice_B = tf.sparse.slice(sparse_pattern_B, start = [0,5], size = [8,6])
sparse_slice_C = tf.sparse.slice(sparse_pattern_C, start = [0,10], size = [8,6])
print(tf.sparse.to_dense(sparse_slice_A))
print(tf.sparse.to_dense(sparse_slice_B))
print(tf.sparse.to_dense(sparse_slice_C))
st2_plus_5 = tf.sparse.map_values(tf.add, st2, 5)
print(tf.sparse.to_dense(st2_plus_5))
st2_plus_5 = tf.sparse.SparseTensor(st2.indices, st2.values + 5, st2.dense_shape)
print(tf.sparse.to_dense(st2_plus_5))
dataset = tf.data.Dataset.from_tensor_slices(st_a)
for element in dataset:
  print(pprint_sparse_tensor(element))
batched_dataset = dataset.batch(2)
for element in batched_dataset:
  print (pprint_sparse_tensor(element))
unbatched_dataset = batched_dataset.unbatch()
for element in unbatched_dataset:
  print (pprint_sparse_tensor(element))
@tf.function
def f(x,y):
  return tf.sparse.sparse_dense_matmul(x,y)
a = tf.sparse.SparseTensor(indices=[[0, 3], [2, 4]], values=[15, 25], dense_shape=[3, 10])
b = tf.sparse.to_dense(tf.sparse.transpose(a))
c = f(a,b)
print(c)
sparse_pattern = tf.sparse.SparseTensor(indices=[[0, 0], [1, 1], [2, 2]], values=[-1., 0., 2.], dense_shape=[3, 3])
print(tf.sparse.reduce_max(sparse_pattern) if hasattr(tf.sparse, 'reduce_max') else '')
"""

SPARSE_GUIDE_OUTPUT = """\
SparseTensor(indices=tf.Tensor(
[[0 3]
 [2 4]], shape=(2, 2), dtype=int64), values=tf.Tensor([10 20], shape=(2,), dtype=int32), dense_shape=tf.Tensor([ 3 10], shape=(2,), dtype=int64))
<SparseTensor shape=[3, 10] 
 values={
  [0, 3]: 10
  [2, 4]: 20}>
<SparseTensor shape=[3, 4] 
 values={
  [0, 0]: 1
  [0, 3]: 8
  [2, 2]: 3}>
tf.Tensor(
[[1 0 0 8]
 [0 0 0 0]
 [0 0 3 0]], shape=(3, 4), dtype=int32)
<SparseTensor shape=[4, 10] 
 values={
  [0, 2]: 87
  [3, 0]: 38
  [3, 4]: 2}>
tf.Tensor(
[[ 78]
 [162]], shape=(2, 1), dtype=int32)
tf.Tensor(
[[0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0]
 [0 0 0 0 0 0 1 0 1 0 0 0 0 0 0 0 0]
 [0 0 0 0 1 1 0 0 0 1 1 0 0 0 0 0 0]
 [0 0 0 1 1 0 0 0 0 0 1 1 0 0 0 0 0]
 [0 0 0 1 1 0 0 0 0 0 1 1 0 0 0 0 0]
 [0 0 0 0 1 1 0 0 0 1 1 0 0 0 0 0 0]
 [0 0 0 0 0 0 1 0 1 0 0 0 0 0 0 0 0]
 [0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0]], shape=(8, 17), dtype=int32)
tf.Tensor(
[[0 0 0 0 0]
 [0 0 0 0 0]
 [0 0 0 0 1]
 [0 0 0 1 1]
 [0 0 0 1 1]
 [0 0 0 0 1]
 [0 0 0 0 0]
 [0 0 0 0 0]], shape=(8, 5), dtype=int32)
tf.Tensor(
[[0]
 [0]
 [1]
 [1]
 [1]
 [1]
 [0]
 [0]], shape=(8, 1), dtype=int32)
tf.Tensor([], shape=(8, 0), dtype=int32)
tf.Tensor(
[[ 6  0  0 13]
 [ 0  0  0  0]
 [ 0  0  8  0]], shape=(3, 4), dtype=int32)
tf.Tensor(
[[ 6  0  0 13]
 [ 0  0  0  0]
 [ 0  0  8  0]], shape=(3, 4), dtype=int32)
<SparseTensor shape=[10] 
 values={
  [2]: 31}>
<SparseTensor shape=[10] 
 values={}>
<SparseTensor shape=[10] 
 values={}>
<SparseTensor shape=[10] 
 values={
  [4]: 2}>
<SparseTensor shape=[2, 10] 
 values={
  [0, 2]: 31}>
<SparseTensor shape=[2, 10] 
 values={
  [1, 4]: 2}>
<SparseTensor shape=[10] 
 values={
  [2]: 31}>
<SparseTensor shape=[10] 
 values={}>
<SparseTensor shape=[10] 
 values={}>
<SparseTensor shape=[10] 
 values={
  [4]: 2}>
tf.Tensor(
[[225   0   0]
 [  0   0   0]
 [  0   0 625]], shape=(3, 3), dtype=int32)
tf.Tensor(2.0, shape=(), dtype=float32)
"""


def test_sparse_guide_prints_as_tensorflow(capsys):
    exec(SPARSE_GUIDE, {"tf": tf})
    assert capsys.readouterr().out == SPARSE_GUIDE_OUTPUT


# ---- randomized: every op against NumPy on the dense array -----------------

def _random_sparse(rng, shape):
    dense = rng.integers(-5, 6, size=shape).astype(np.float32)
    dense[rng.random(shape) < 0.6] = 0
    return dense, tf.sparse.from_dense(dense)


@pytest.mark.parametrize("seed", range(10))
def test_random_sparse_against_numpy(seed):
    rng = np.random.default_rng(seed)
    m, n = (int(v) for v in rng.integers(1, 6, size=2))
    d, sp = _random_sparse(rng, (m, n))
    d2, sp2 = _random_sparse(rng, (m, n))
    np.testing.assert_array_equal(tf.sparse.to_dense(sp).numpy(), d)
    np.testing.assert_array_equal(
        tf.sparse.to_dense(tf.sparse.add(sp, sp2)).numpy(), d + d2)
    b = rng.standard_normal((n, 3)).astype(np.float32)
    np.testing.assert_allclose(
        tf.sparse.sparse_dense_matmul(sp, b).numpy(), d @ b, rtol=1e-5,
        atol=1e-5)
    np.testing.assert_allclose(tf.sparse.reduce_sum(sp, axis=0).numpy(),
                               d.sum(0))
    np.testing.assert_array_equal(
        tf.sparse.to_dense(tf.sparse.transpose(sp)).numpy(), d.T)
    np.testing.assert_array_equal(
        tf.sparse.to_dense(tf.sparse.reshape(sp, [-1])).numpy(),
        d.reshape(-1))
    np.testing.assert_array_equal(
        tf.sparse.to_dense(tf.sparse.concat(1, [sp, sp2])).numpy(),
        np.concatenate([d, d2], 1))
    a0, a1 = int(rng.integers(0, m)), int(rng.integers(0, n))
    np.testing.assert_array_equal(
        tf.sparse.to_dense(tf.sparse.slice(sp, [a0, a1], [2, 3])).numpy(),
        d[a0:a0 + 2, a1:a1 + 3])
    np.testing.assert_array_equal(
        tf.sparse.to_dense(sp * tf.constant(d2)).numpy(), d * d2)


def test_keras_fit_and_predict_take_a_sparse_x():
    """Keras feeds SparseTensor batches to a sparse Input: predict in
    order equals the model's call; shuffled fit slices the same rows."""
    x = tf.keras.Input(shape=(4,), sparse=True)
    model = tf.keras.Model(x, tf.keras.layers.Dense(3)(x))
    sp = tf.sparse.SparseTensor(
        indices=[(0, 0), (0, 1), (0, 2), (4, 3), (5, 0), (5, 1)],
        values=[1.0, 2, 3, 4, 5, 6], dense_shape=(6, 4))
    want = model(sp).numpy()
    np.testing.assert_allclose(model.predict(sp, batch_size=4, verbose=0),
                               want, rtol=1e-6)
    model.compile("sgd", "mse")
    dense = tf.sparse.to_dense(sp).numpy()
    target = dense[:, :3] * 0.5
    h = model.fit(sp, target, batch_size=2, shuffle=True, epochs=3,
                  verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    with pytest.raises(ValueError, match="cardinality"):
        model.fit(sp, target[:5], verbose=0)
