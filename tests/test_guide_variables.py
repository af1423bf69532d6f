"""What a user of TF's "Introduction to Variables" guide (and the variable
part of "TensorFlow basics") sees: printed variables, assignment and its
errors, arithmetic giving tensors, copies, names, devices. Each expected
text is what TensorFlow 2.21 printed for the same snippet (the snippets
are our own, not the guide's)."""
import pytest

import tfmini as tf
from test_guide_tensors import printed

PRINTED = [
    ("""
     v = tf.Variable([[1.0, 2.0], [3.0, 4.0]]); print(v)
     print(repr(tf.Variable([False, True]))); print(repr(tf.Variable(3)))
     print(tf.Variable(2.5, name="w"))
     """, """\
<tf.Variable 'Variable:0' shape=(2, 2) dtype=float32, numpy=
array([[1., 2.],
       [3., 4.]], dtype=float32)>
<tf.Variable 'Variable:0' shape=(2,) dtype=bool, numpy=array([False,  True])>
<tf.Variable 'Variable:0' shape=() dtype=int32, numpy=3>
<tf.Variable 'w:0' shape=() dtype=float32, numpy=2.5>
"""),
    ("""
     v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
     print(v.shape, v.dtype, v.name, v.trainable,
           tf.Variable(1., trainable=False).trainable)
     print(v.numpy()); print(tf.convert_to_tensor(v))
     print(tf.math.argmax(v)); print(tf.reshape(v, [4])); print(v + 1)
     print(v[0]); print(v[:, 1])
     """, """\
(2, 2) <dtype: 'float32'> Variable:0 True False
[[1. 2.]
 [3. 4.]]
tf.Tensor(
[[1. 2.]
 [3. 4.]], shape=(2, 2), dtype=float32)
tf.Tensor([1 1], shape=(2,), dtype=int64)
tf.Tensor([1. 2. 3. 4.], shape=(4,), dtype=float32)
tf.Tensor(
[[2. 3.]
 [4. 5.]], shape=(2, 2), dtype=float32)
tf.Tensor([1. 2.], shape=(2,), dtype=float32)
tf.Tensor([2. 4.], shape=(2,), dtype=float32)
"""),
    ("""
     a = tf.Variable([2.0, 3.0]); a.assign([5, 6]); print(a)
     b = tf.Variable(a); a.assign_add([1., 1.]); print(a.numpy(), b.numpy())
     a.assign_sub([2., 2.]); print(a.numpy())
     v = tf.Variable([1., 2., 3.]); v[0].assign(9.); v[1:].assign([7., 8.])
     print(v.numpy())
     """, """\
<tf.Variable 'Variable:0' shape=(2,) dtype=float32, numpy=array([5., 6.], dtype=float32)>
[6. 7.] [5. 6.]
[4. 5.]
[9. 7. 8.]
"""),
    ("""
     with tf.device('CPU:0'):
       a = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
       c = tf.matmul(a, tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
     print(c); print(a.device); print(c.device)
     """, """\
tf.Tensor(
[[22. 28.]
 [49. 64.]], shape=(2, 2), dtype=float32)
/job:localhost/replica:0/task:0/device:CPU:0
/job:localhost/replica:0/task:0/device:CPU:0
"""),
    ("""
     v = tf.Variable([1., 2.], name="same")
     w = tf.Variable([1., 2.], name="same"); print(v == w, v.name, w.name)
     """, "tf.Tensor([ True  True], shape=(2,), dtype=bool) same:0 same:0\n"),
    # While tracing, TF shows no value.
    ("""
     @tf.function
     def show(v):
         print(v)
         return v.read_value()
     show(tf.Variable([1., 2.]))
     """, "<tf.Variable 'Variable:0' shape=(2,) dtype=float32>\n"),
]


@pytest.mark.parametrize("code,want", PRINTED,
                         ids=[f"p{i}" for i in range(len(PRINTED))])
def test_prints_as_tf(code, want):
    assert printed(code) == want


def test_assign_shape_mismatch_is_value_error():
    a = tf.Variable([2.0, 3.0])
    with pytest.raises(ValueError, match=r"shape \(2,\), and the assigned "
                                         r"value shape \(3,\)"):
        a.assign([1.0, 2.0, 3.0])
    assert a.numpy().tolist() == [2.0, 3.0]


@pytest.mark.parametrize("stmt,use", [
    ("v += 1", "variable.assign_add(value)"),
    ("v -= 1", "variable.assign_sub(value)"),
    ("v *= 2", "var.assign(var * value)"),
    ("v /= 2", "var.assign(var / value)"),
    ("v **= 2", "var.assign(var ** value)"),
])
def test_in_place_operators_refuse_like_tf(stmt, use):
    # Python would otherwise fall back to `v = v + 1`, silently turning
    # the variable into a tensor.
    ns = {"v": tf.Variable([1.0, 2.0])}
    with pytest.raises(RuntimeError) as e:
        exec(stmt, ns)
    op = stmt.split()[1]
    assert str(e.value).startswith(f"`variable {op} value` with "
                                   "`tf.Variable`s is not supported. Use "
                                   f"`{use}`")
    assert isinstance(ns["v"], tf.Variable)
    assert ns["v"].numpy().tolist() == [1.0, 2.0]


def test_item_assignment_deletion_and_hash():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(TypeError, match="item assignment"):
        v[0] = 5.0
    with pytest.raises(TypeError, match="item deletion"):
        del v[0]
    # TF 2.21's message ends with the variable's repr.
    with pytest.raises(TypeError) as e:
        hash(v)
    assert str(e.value) == (
        "Variable is unhashable. Instead, use variable.ref() as the key. "
        "(Variable: <tf.Variable 'Variable:0' shape=(2,) dtype=float32, "
        "numpy=array([1., 2.], dtype=float32)>)")
    assert {v.ref(): 1}[v.ref()] == 1


def test_assign_add_shape_mismatch_is_invalid_argument():
    # TF raises InvalidArgumentError here; tfmini's is also a ValueError.
    v = tf.Variable([1.0, 2.0])
    for method in (v.assign_add, v.assign_sub):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Shape mismatch.*\[3\].*\[2\]"):
            method([1.0, 2.0, 3.0])
    assert v.numpy().tolist() == [1.0, 2.0]


def test_sparse_variable_methods():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    assert v.scatter_nd_update([[0, 1]], [9.0]) is v
    assert v.numpy().tolist() == [[1.0, 9.0], [3.0, 4.0]]
    v.scatter_nd_add([[1, 0], [1, 0]], [1.0, 1.0])
    v.scatter_nd_sub([[1, 1]], [4.0])
    v.scatter_nd_max([[0, 0]], [7.0])
    v.scatter_nd_min([[0, 1]], [8.0])
    assert v.numpy().tolist() == [[7.0, 8.0], [5.0, 0.0]]
    # TF 2.21: tf.Tensor([[5. 0.]], shape=(1, 2), dtype=float32)
    assert str(v.sparse_read([1])) == \
        "tf.Tensor([[5. 0.]], shape=(1, 2), dtype=float32)"
    assert v.gather_nd([[0, 1], [1, 0]]).numpy().tolist() == [8.0, 5.0]
