"""tf.experimental.numpy: NumPy's promotion and functions over tensors,
and the tf_numpy guide's first sections printed as TF 2.21 prints them.
experimental_enable_numpy_behavior changes every tensor for the rest of
the process (as in TF), so the guide runs in a subprocess."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfmini as tf

tnp = tf.experimental.numpy

GUIDE = textwrap.dedent('''
    import tfmini as tf
    tnp = tf.experimental.numpy
    tnp.experimental_enable_numpy_behavior()
    x = tnp.ones([5, 3], dtype=tnp.float32)
    print("Created ND array with shape = %s, rank = %s, dtype = %s on "
          "device = %s\\n" % (x.shape, x.ndim, x.dtype, x.device))
    print("Is `x` a tf.Tensor? %s" % isinstance(x, tf.Tensor))
    print("Is `x` a tnp.ndarray? %s" % isinstance(x, tnp.ndarray))
    print("Type promotion for operations")
    values = [tnp.asarray(1, dtype=d) for d in
              (tnp.int32, tnp.int64, tnp.float32, tnp.float64)]
    for i, v1 in enumerate(values):
        for v2 in values[i + 1:]:
            print("%s + %s => %s" % (v1.dtype.name, v2.dtype.name,
                                     (v1 + v2).dtype.name))
    print("Type inference during array creation")
    print("tnp.asarray(1).dtype == tnp.%s" % tnp.asarray(1).dtype.name)
    print("tnp.asarray(1.).dtype == tnp.%s\\n" % tnp.asarray(1.).dtype.name)
    tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    print("When prefer_float32 is True:")
    print("tnp.asarray(1.).dtype == tnp.%s" % tnp.asarray(1.).dtype.name)
    print("tnp.add(1., 2.).dtype == tnp.%s" % tnp.add(1., 2.).dtype.name)
    tnp.experimental_enable_numpy_behavior(prefer_float32=False)
    print("When prefer_float32 is False:")
    print("tnp.asarray(1.).dtype == tnp.%s" % tnp.asarray(1.).dtype.name)
    print("tnp.add(1., 2.).dtype == tnp.%s" % tnp.add(1., 2.).dtype.name)
    x = tnp.ones([2, 3])
    y = tnp.ones([3])
    z = tnp.ones([1, 2, 1])
    print("Broadcasting shapes %s, %s and %s gives shape %s" % (
        x.shape, y.shape, z.shape, (x + y + z).shape))
    x = tnp.arange(24).reshape(2, 3, 4)
    print("Basic indexing")
    print(x[1, tnp.newaxis, 1:3, ...], "\\n")
    print("Boolean indexing")
    print(x[:, (True, False, True)], "\\n")
    print("Advanced indexing")
    print(x[1, (0, 0, 1), tnp.asarray([0, 1, 1])])


    class Model(object):
        def __init__(self):
            self.weights = None

        def predict(self, inputs):
            if self.weights is None:
                size = inputs.shape[1]
                stddev = tnp.sqrt(size).astype(tnp.float32)
                w1 = tnp.random.randn(size, 64).astype(tnp.float32) / stddev
                bias = tnp.random.randn(64).astype(tnp.float32)
                w2 = tnp.random.randn(64, 2).astype(tnp.float32) / 8
                self.weights = (w1, bias, w2)
            else:
                w1, bias, w2 = self.weights
            y = tnp.matmul(inputs, w1) + bias
            y = tnp.maximum(y, 0)
            return tnp.matmul(y, w2)
    out = Model().predict(tnp.ones([2, 32], dtype=tnp.float32))
    print(out.shape, out.dtype.name)
    v = tnp.asarray([[1., 2.], [3., 4.]])
    with tf.GradientTape() as tape:
        tape.watch(v)
        picked = v[(0, 1, 1), (1, 0, 1)]
        loss = tnp.sum(picked * tnp.asarray([1., 2., 3.]))
    print(tape.gradient(loss, v).numpy().tolist())
''')

EXPECTED = '''\
Created ND array with shape = (5, 3), rank = 2, dtype = <dtype: 'float32'> on device = /job:localhost/replica:0/task:0/device:CPU:0

Is `x` a tf.Tensor? True
Is `x` a tnp.ndarray? True
Type promotion for operations
int32 + int64 => int64
int32 + float32 => float64
int32 + float64 => float64
int64 + float32 => float64
int64 + float64 => float64
float32 + float64 => float64
Type inference during array creation
tnp.asarray(1).dtype == tnp.int64
tnp.asarray(1.).dtype == tnp.float64

When prefer_float32 is True:
tnp.asarray(1.).dtype == tnp.float32
tnp.add(1., 2.).dtype == tnp.float32
When prefer_float32 is False:
tnp.asarray(1.).dtype == tnp.float64
tnp.add(1., 2.).dtype == tnp.float64
Broadcasting shapes (2, 3), (3,) and (1, 2, 1) gives shape (1, 2, 3)
Basic indexing
tf.Tensor(
[[[16 17 18 19]
  [20 21 22 23]]], shape=(1, 2, 4), dtype=int64) 

Boolean indexing
tf.Tensor(
[[[ 0  1  2  3]
  [ 8  9 10 11]]

 [[12 13 14 15]
  [20 21 22 23]]], shape=(2, 2, 4), dtype=int64) 

Advanced indexing
tf.Tensor([12 13 17], shape=(3,), dtype=int64)
(2, 2) float32
[[0.0, 1.0], [2.0, 3.0]]
'''


def test_tf_numpy_guide_prints_as_tensorflow():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", GUIDE], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout == EXPECTED


# ---- without numpy behavior (this process's tensors stay TF's) ----------

@pytest.mark.parametrize("a,b,want", [
    (np.int32(1), np.int64(1), "int64"),
    (np.int32(1), np.float32(1), "float64"),
    (np.float32(1), np.float64(1), "float64"),
    (np.int8(1), np.uint8(1), "int16"),
])
def test_promotion_follows_numpy(a, b, want):
    out = tnp.add(tnp.asarray(a), tnp.asarray(b))
    assert out.dtype.name == want == np.result_type(a, b).name


def test_python_scalars_are_weak():
    x = tnp.asarray([1, 2], dtype=tnp.int32)
    assert tnp.add(x, 1).dtype == tf.int32
    assert tnp.add(x, 1.5).dtype == tf.float64
    f = tnp.asarray([1.0], dtype=tnp.float32)
    assert tnp.multiply(f, 2.0).dtype == tf.float32


def test_functions_match_numpy():
    a = np.arange(6.0).reshape(2, 3)
    t = tnp.asarray(a)
    np.testing.assert_allclose(tnp.sum(t, axis=0).numpy(), a.sum(0))
    np.testing.assert_allclose(tnp.mean(t).numpy(), a.mean())
    np.testing.assert_allclose(tnp.dot(t, t.numpy().T).numpy(), a @ a.T)
    np.testing.assert_allclose(tnp.transpose(t).numpy(), a.T)
    np.testing.assert_allclose(tnp.clip(t, 1, 4).numpy(), np.clip(a, 1, 4))
    np.testing.assert_allclose(tnp.sqrt(tnp.asarray([4, 9])).numpy(),
                               [2.0, 3.0])
    assert tnp.sqrt(tnp.asarray([4, 9])).dtype == tf.float64
    assert tnp.divide(tnp.asarray([1, 2]), 2).dtype == tf.float64
    assert tnp.arange(5).dtype == tf.int64
    assert tnp.linspace(0, 1, 5).numpy().tolist() == [0, .25, .5, .75, 1]
    assert int(tnp.argmax(tnp.asarray([[1, 5], [7, 2]]))) == 2
    assert tnp.shape(t) == (2, 3) and tnp.ndim(t) == 2 and tnp.size(t) == 6
    assert tnp.concatenate([tnp.asarray([1], dtype=tnp.int32),
                            tnp.asarray([2.5])]).dtype == tf.float64
    assert isinstance(t, tnp.ndarray) and isinstance(t, tf.Tensor)


def test_behavior_not_enabled_here():
    assert not hasattr(tf.constant([1]), "astype")
