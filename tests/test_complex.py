"""complex64 / complex128: conversion, reprs, casts, elementwise math,
tf.complex/real/imag/conj/abs/angle, reductions, matmul, gradients (TF's
convention: grad * conj(f'(z))), tf.function, checkpoints and saved
models. Expected values are NumPy's, and for gradients TF 2.21's own
(computed once with TensorFlow and written here)."""
import numpy as np
import pytest

import tfmini as tf

C64, C128 = tf.complex64, tf.complex128


def rand_c(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)
    return z.astype(dtype)


def close(a, b, dtype=np.complex128):
    tol = 1e-5 if np.dtype(dtype) == np.complex64 else 1e-12
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol,
                               atol=tol)


# ---- dtypes, conversion, repr ------------------------------------------

def test_dtype_objects():
    assert tf.complex64.real_dtype == tf.float32
    assert tf.complex128.real_dtype == tf.float64
    assert tf.float32.real_dtype == tf.float32
    assert tf.complex64.is_complex and not tf.complex64.is_floating
    assert not tf.float32.is_complex
    assert tf.complex64.size == 8 and tf.complex128.size == 16
    assert tf.complex64.as_numpy_dtype is np.complex64
    assert str(tf.complex64) == "<dtype: 'complex64'>"
    assert repr(tf.complex128) == "tf.complex128"
    assert tf.as_dtype(np.complex64) is tf.complex64
    assert tf.as_dtype("complex128") is tf.complex128
    assert tf.dtypes.complex64 is tf.complex64
    with pytest.raises(TypeError, match="Cannot find minimum value"):
        tf.complex64.min


def test_python_complex_is_complex128_and_reprs_match_tf():
    assert (repr(tf.constant(1 + 2j)) ==
            "<tf.Tensor: shape=(), dtype=complex128, numpy=(1+2j)>")
    z = tf.constant([1 + 2j, 3 - 1j], dtype=tf.complex64)
    assert repr(z) == ("<tf.Tensor: shape=(2,), dtype=complex64, numpy="
                       "array([1.+2.j, 3.-1.j], dtype=complex64)>")
    assert str(z) == ("tf.Tensor([1.+2.j 3.-1.j], shape=(2,), "
                      "dtype=complex64)")
    assert tf.constant([1 + 2j, 3]).dtype == tf.complex128


def test_conversion_rules():
    a = np.array([1 + 2j, -0.5j], np.complex64)
    t = tf.constant(a)
    assert t.dtype == tf.complex64
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(np.asarray(memoryview(t)), a)
    assert tf.constant(1, dtype=tf.complex64).numpy() == 1 + 0j
    assert tf.constant(1.5, dtype=tf.complex128).numpy() == 1.5 + 0j
    np.testing.assert_array_equal(
        tf.constant([1.0, 2.0], dtype=tf.complex64).numpy(), [1, 2])
    assert tf.constant(1 + 2j, dtype=tf.complex64).numpy() == 1 + 2j
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.constant(1 + 2j, dtype=tf.float32)
    with pytest.raises(ValueError, match="mixed types"):
        tf.constant([1, 2 + 1j])
    # Python scalars adopt a complex operand's dtype, as in TF.
    z = tf.constant(1 + 2j, tf.complex64)
    assert (z + 1).dtype == tf.complex64
    assert (1.5 * z).numpy() == 1.5 + 3j
    with pytest.raises(TypeError):
        tf.constant(1.0) + 1j


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_casts(dt):
    z = tf.constant(np.array([1.5 + 2j, -3 + 0.5j, 0j], dt))
    np.testing.assert_array_equal(tf.cast(z, tf.float32).numpy(),
                                  [1.5, -3, 0])
    np.testing.assert_array_equal(tf.cast(z, tf.int32).numpy(), [1, -3, 0])
    np.testing.assert_array_equal(tf.cast(z, tf.bool).numpy(),
                                  [True, True, False])
    np.testing.assert_array_equal(
        tf.cast(tf.constant([0j, 2j], dt), tf.bool).numpy(), [False, True])
    other = tf.complex128 if dt == np.complex64 else tf.complex64
    np.testing.assert_array_equal(tf.cast(z, other).numpy(), z.numpy())
    for src in (tf.int32, tf.int64, tf.float16, tf.float64, tf.bool):
        x = tf.cast(tf.constant([1, 0, 3]), src)
        np.testing.assert_array_equal(
            tf.cast(x, tf.as_dtype(dt)).numpy(),
            np.array([1, 0, 1 if src == tf.bool else 3], dt))


def test_fill_shapes_and_copies():
    z = tf.constant(rand_c((2, 3), np.complex128))
    zn = z.numpy()
    np.testing.assert_array_equal(tf.zeros([2], tf.complex64).numpy(), [0, 0])
    np.testing.assert_array_equal(tf.ones([2], tf.complex128).numpy(),
                                  [1, 1])
    np.testing.assert_array_equal(tf.ones_like(z).numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(tf.zeros_like(z).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(tf.fill([2, 2], tf.constant(1 - 1j)),
                                  np.full((2, 2), 1 - 1j))
    np.testing.assert_array_equal(tf.transpose(z).numpy(), zn.T)
    np.testing.assert_array_equal(tf.reshape(z, [3, 2]).numpy(),
                                  zn.reshape(3, 2))
    np.testing.assert_array_equal(tf.concat([z, z], 0).numpy(),
                                  np.concatenate([zn, zn]))
    np.testing.assert_array_equal(tf.gather(z, [2, 0], axis=1).numpy(),
                                  zn[:, [2, 0]])
    np.testing.assert_array_equal(z[1, ::2].numpy(), zn[1, ::2])
    np.testing.assert_array_equal(tf.pad(z, [[1, 0], [0, 1]]).numpy(),
                                  np.pad(zn, [[1, 0], [0, 1]]))
    np.testing.assert_array_equal(tf.stack([z, z]).numpy(),
                                  np.stack([zn, zn]))


# ---- elementwise -------------------------------------------------------

BINARY = [
    (tf.add, np.add), (tf.subtract, np.subtract), (tf.multiply, np.multiply),
    (tf.math.divide, np.divide), (tf.pow, np.power),
    (tf.math.squared_difference, lambda x, y: (x - y) * np.conj(x - y)),
    (tf.math.divide_no_nan, np.divide),
]


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("tfop,npop", BINARY)
@pytest.mark.parametrize("sa,sb", [((2, 3), (2, 3)), ((2, 3), (3,)),
                                   ((), (4,)), ((4, 1), (1, 5)),
                                   ((0, 3), (3,))])
def test_binary_vs_numpy(dt, tfop, npop, sa, sb):
    x, y = rand_c(sa, dt, 1), rand_c(sb, dt, 2)
    out = tfop(tf.constant(x), tf.constant(y))
    assert out.dtype == tf.as_dtype(dt)
    close(out.numpy(), npop(x, y), dt)


def test_operators_and_divide_no_nan_at_zero():
    z = tf.constant([1 + 2j, -3 + 0.5j], tf.complex64)
    close((z / z).numpy(), [1, 1], np.complex64)
    close((z ** 2).numpy(), np.array([1 + 2j, -3 + 0.5j]) ** 2, np.complex64)
    close((-z).numpy(), [-1 - 2j, 3 - 0.5j], np.complex64)
    close(tf.math.divide_no_nan(z, tf.zeros_like(z)).numpy(), [0, 0])
    assert (z == z).numpy().all() and not (z != z).numpy().any()
    np.testing.assert_array_equal(tf.equal(z, tf.constant(1 + 2j,
                                                          tf.complex64)),
                                  [True, False])


UNARY = [
    (tf.exp, np.exp), (tf.math.log, np.log), (tf.sqrt, np.sqrt),
    (tf.square, np.square), (tf.math.reciprocal, lambda x: 1 / x),
    (tf.math.rsqrt, lambda x: 1 / np.sqrt(x)), (tf.sin, np.sin),
    (tf.cos, np.cos), (tf.tan, np.tan), (tf.tanh, np.tanh),
    (tf.sinh, np.sinh), (tf.cosh, np.cosh), (tf.math.expm1, np.expm1),
    (tf.math.log1p, np.log1p), (tf.negative, np.negative),
    (tf.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    (tf.sign, lambda x: x / np.abs(x)),
]


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("tfop,npop", UNARY)
def test_unary_vs_numpy(dt, tfop, npop):
    x = rand_c((3, 4), dt, 3)
    out = tfop(tf.constant(x))
    assert out.dtype == tf.as_dtype(dt)
    close(out.numpy(), npop(x.astype(np.complex128)).astype(dt), dt)


def test_sign_of_zero():
    assert tf.sign(tf.constant(0j)).numpy() == 0


@pytest.mark.parametrize("dt,rdt", [(np.complex64, np.float32),
                                    (np.complex128, np.float64)])
def test_complex_parts(dt, rdt):
    x = rand_c((2, 3), dt, 4)
    t = tf.constant(x)
    for f, ref in ((tf.math.real, np.real), (tf.math.imag, np.imag),
                   (tf.abs, np.abs), (tf.math.abs, np.abs),
                   (tf.math.angle, np.angle)):
        out = f(t)
        assert out.dtype == tf.as_dtype(rdt), f
        close(out.numpy(), ref(x).astype(rdt), dt)
    assert abs(t).dtype == tf.as_dtype(rdt)
    conj = tf.math.conj(t)
    assert conj.dtype == tf.as_dtype(dt)
    np.testing.assert_array_equal(conj.numpy(), np.conj(x))
    re, im = tf.constant(x.real), tf.constant(x.imag)
    made = tf.complex(re, im)
    assert made.dtype == tf.as_dtype(dt)
    np.testing.assert_array_equal(made.numpy(), x)
    # broadcasting parts
    np.testing.assert_array_equal(
        tf.complex(re, tf.constant(rdt(1))).numpy(), x.real + 1j)


def test_complex_of_nan_keeps_parts():
    z = tf.complex(tf.constant([np.inf]), tf.constant([np.nan])).numpy()
    assert np.isinf(z.real[0]) and np.isnan(z.imag[0])


def test_parts_of_real_tensors_as_tf():
    x = tf.constant([1.0, -2.0])
    assert tf.math.real(x) is x
    assert tf.math.conj(x) is x
    np.testing.assert_array_equal(tf.math.imag(x).numpy(), [0, 0])
    np.testing.assert_allclose(tf.math.angle(x).numpy(), [0, np.pi],
                               rtol=1e-6)
    assert tf.math.conj(tf.constant([1, 2])).dtype == tf.int32
    with pytest.raises(TypeError, match="incorrect types: int32 int32"):
        tf.complex(1, 2)
    with pytest.raises(TypeError, match="float32 float64"):
        tf.complex(tf.constant(1.0), tf.constant(2.0, tf.float64))
    assert tf.complex(1.0, 2.0).dtype == tf.complex64


@pytest.mark.parametrize("f,name", [
    (lambda z: tf.math.less(z, z), "Less"),
    (lambda z: z < z, "Less"),
    (lambda z: tf.nn.relu(z), "Relu"),
    (lambda z: tf.maximum(z, z), "Maximum"),
    (lambda z: tf.reduce_max(z), "Max"),
    (lambda z: tf.math.floor(z), "Floor"),
    (lambda z: tf.round(z), "Round"),
    (lambda z: tf.math.is_nan(z), "IsNan"),
    (lambda z: tf.math.floordiv(z, z), "FloorDiv"),
    (lambda z: tf.math.real(tf.constant(["a"])), "Real"),
])
def test_unsupported_ops_name_op_and_dtype(f, name):
    z = tf.constant([1 + 1j], tf.complex64)
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError)) as e:
        f(z)
    if name != "Real":
        assert name in str(e.value) and "complex64" in str(e.value)


# ---- reductions and matmul ---------------------------------------------

@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), -1])
def test_reductions(dt, axis):
    x = rand_c((3, 4, 5), dt, 5) / 2
    t = tf.constant(x)
    for f, ref in ((tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean),
                   (tf.reduce_prod, np.prod)):
        out = f(t, axis=axis)
        assert out.dtype == tf.as_dtype(dt)
        want = ref(x.astype(np.complex128), axis=axis)
        np.testing.assert_allclose(out.numpy(), want, rtol=2e-5 if
                                   dt == np.complex64 else 1e-12)
    out = tf.reduce_sum(t, axis=axis, keepdims=True)
    assert out.shape == np.sum(x, axis=axis, keepdims=True).shape


def test_reduction_values_as_tf():
    z = tf.constant([1 + 2j, -3 + 0.5j], tf.complex64)
    assert tf.reduce_sum(z).numpy() == -2 + 2.5j
    assert tf.reduce_mean(z).numpy() == -1 + 1.25j
    assert tf.reduce_prod(z).numpy() == -4 - 5.5j
    np.testing.assert_array_equal(
        tf.reduce_sum(tf.constant([[1 + 1j, 2], [3, 4j]]), axis=0).numpy(),
        [4 + 1j, 2 + 4j])
    np.testing.assert_array_equal(
        tf.reduce_sum(tf.zeros([0, 2], tf.complex64), axis=0).numpy(), [0, 0])


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("m,k,n", [(1, 2, 1), (3, 4, 5), (40, 70, 33),
                                   (0, 3, 2)])
def test_matmul(dt, m, k, n):
    a, b = rand_c((m, k), dt, 6), rand_c((k, n), dt, 7)
    out = tf.matmul(a, b)
    assert out.dtype == tf.as_dtype(dt)
    tol = 1e-4 if dt == np.complex64 else 1e-12
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        tf.matmul(a.T, b, transpose_a=True).numpy(), a @ b, rtol=tol,
        atol=tol)
    np.testing.assert_allclose(
        tf.matmul(a.conj().T, b, adjoint_a=True).numpy(), a @ b, rtol=tol,
        atol=tol)
    np.testing.assert_allclose(
        tf.matmul(a, b.conj().T, adjoint_b=True).numpy(), a @ b, rtol=tol,
        atol=tol)


def test_batch_matmul_and_adjoint():
    a = rand_c((2, 3, 4), np.complex128, 8)
    b = rand_c((4, 2), np.complex128, 9)
    np.testing.assert_allclose(tf.matmul(a, b).numpy(), a @ b, rtol=1e-12)
    adj = tf.linalg.adjoint(a)
    np.testing.assert_array_equal(adj.numpy(), np.conj(a.transpose(0, 2, 1)))
    np.testing.assert_array_equal(
        tf.linalg.matrix_transpose(a, conjugate=True).numpy(), adj.numpy())
    z = tf.constant([[1 + 2j, -3 + 0.5j]], tf.complex64)
    assert tf.matmul(z, z, adjoint_b=True).numpy()[0, 0] == 14.25 + 0j


# ---- gradients ---------------------------------------------------------

X = np.array([1 + 2j, 3 - 1j])
Y = np.array([0.5 - 1j, 2 + 0.5j])


def grads(f, *args):
    args = [tf.constant(a) for a in args]
    with tf.GradientTape() as t:
        for a in args:
            t.watch(a)
        out = f(*args)
    return [g.numpy() for g in t.gradient(out, args)]


# TF 2.21's gradients of the same functions at X, Y (complex128).
TF_GRADS = [
    (lambda a, b: tf.reduce_sum(tf.abs(a * b)), (X, Y),
     [[0.5 + 1j, 1.95576072 - 0.65192024j],
      [1 - 2j, 3.06785996 + 0.76696499j]]),
    (lambda a: tf.reduce_sum(tf.math.real(a * a)), (X,), [[2 - 4j, 6 + 2j]]),
    (lambda a: tf.reduce_sum(tf.math.imag(a * a)), (X,), [[4 + 2j, -2 + 6j]]),
    (lambda a: tf.reduce_sum(a), (X,), [[1, 1]]),
    (lambda a: tf.reduce_sum(tf.abs(a)), (X,),
     [[0.4472136 + 0.89442719j, 0.9486833 - 0.31622777j]]),
    (lambda a: tf.reduce_sum(tf.math.real(tf.math.conj(a) * Y)), (X,),
     [[0.5 - 1j, 2 + 0.5j]]),
    (lambda a, b: tf.reduce_sum(tf.abs(a / b)), (X, Y),
     [[0.4 + 0.8j, 0.46017899 - 0.153393j],
      [-0.8 + 1.6j, -0.7218494 - 0.18046235j]]),
    (lambda a: tf.reduce_sum(tf.math.real(tf.exp(a))), (X,),
     [[-1.13120438 - 2.47172667j, 10.85226191 + 16.90139654j]]),
    (lambda a: tf.reduce_sum(tf.math.imag(tf.math.log(a))), (X,),
     [[-0.4 + 0.2j, 0.1 + 0.3j]]),
    (lambda a: tf.reduce_sum(tf.math.real(tf.sqrt(a))), (X,),
     [[0.28443224 + 0.17578879j, 0.27754003 - 0.04503855j]]),
    (lambda a: tf.reduce_sum(tf.abs(tf.square(a))), (X,), [[2 + 4j, 6 - 2j]]),
    (lambda a: tf.reduce_sum(tf.math.angle(a)), (X,),
     [[-0.4 + 0.2j, 0.1 + 0.3j]]),
    (lambda a: tf.math.real(tf.reduce_mean(a * a)), (X,), [[1 - 2j, 3 + 1j]]),
    (lambda a: tf.math.real(tf.reduce_prod(a)), (X,), [[3 + 1j, 1 - 2j]]),
    (lambda a: a * a, (X,), [[2 - 4j, 6 + 2j]]),
    (lambda a: tf.math.imag(-a * Y), (X,), [[1 - 0.5j, -0.5 - 2j]]),
    (lambda a: tf.reduce_sum(tf.abs(a ** 3)), (X,),
     [[6.70820393 + 13.41640786j, 28.46049894 - 9.48683298j]]),
    (lambda a: tf.reduce_sum(tf.abs(tf.math.reciprocal(a))), (X,),
     [[-0.08944272 - 0.17888544j, -0.09486833 + 0.03162278j]]),
    (lambda a: tf.reduce_sum(tf.abs(tf.tanh(a))), (X,),
     [[-0.41167834 - 0.494436j, -0.00413456 - 0.00903429j]]),
    (lambda a: tf.reduce_sum(tf.abs(tf.sin(a))), (X,),
     [[0.12211248 + 3.66485082j, -0.11803192 - 1.53207423j]]),
    (lambda a: tf.reduce_sum(tf.abs(tf.cos(a))), (X,),
     [[-0.12398773 + 3.72113113j, 0.09091921 - 1.18014677j]]),
    (lambda a: tf.reduce_sum(tf.cast(a, tf.float64)), (X,), [[1, 1]]),
    (lambda r: tf.reduce_sum(tf.abs(tf.cast(r, tf.complex128) * Y)),
     (np.array([1.0, 2.0]),), [[1.11803399, 2.06155281]]),
    (lambda r, i: tf.reduce_sum(tf.abs(tf.complex(r, i) * Y)),
     (np.array([1.0, 2.0]), np.array([-0.5, 3.0])),
     [[1, 1.14354375], [-0.5, 1.71531562]]),
]


@pytest.mark.parametrize("k", range(len(TF_GRADS)))
def test_gradients_match_tf(k):
    f, args, want = TF_GRADS[k]
    got = grads(f, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.array(w), rtol=1e-7, atol=1e-7)


def test_matmul_gradient_matches_tf():
    a = np.array([[1 + 1j, 2 - 1j], [0.5j, 3]])
    b = np.array([[2 - 1j], [1 + 3j]])
    ga, gb = grads(lambda p, q: tf.reduce_sum(tf.abs(tf.matmul(p, q))), a, b)
    np.testing.assert_allclose(
        ga, [[1 + 2j, 2.6 - 1.8j],
             [-0.28315751 + 2.21806714j, 3.16192549 - 0.04719292j]],
        rtol=1e-7)
    np.testing.assert_allclose(
        gb, [[1.87192918 - 0.36517521j], [1.99105127 + 4.83157507j]],
        rtol=1e-7)


def _fd(loss, z, eps=1e-6):
    """dL/dx + i dL/dy by central differences (TF's convention)."""
    z = np.array(z, np.complex128)
    g = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        for unit, part in ((1, 1), (1j, 1j)):
            zp, zm = z.copy(), z.copy()
            zp[idx] += eps * unit
            zm[idx] -= eps * unit
            d = (loss(tf.constant(zp)).numpy() -
                 loss(tf.constant(zm)).numpy()) / (2 * eps)
            g[idx] += part * d
    return g


@pytest.mark.parametrize("f", [
    lambda a: tf.sigmoid(a), lambda a: tf.math.rsqrt(a),
    lambda a: tf.math.expm1(a), lambda a: tf.math.log1p(a),
    lambda a: tf.tan(a), lambda a: tf.sinh(a), lambda a: tf.cosh(a),
    lambda a: tf.math.divide_no_nan(a, tf.constant(Y)),
    lambda a: tf.pow(tf.constant(Y), a),
    lambda a: tf.matmul(tf.reshape(a, [1, 2]), tf.reshape(a * 2j, [1, 2]),
                        adjoint_b=True),
    lambda a: tf.linalg.adjoint(tf.reshape(a, [2, 1])) * 1j,
])
def test_gradients_by_finite_differences(f):
    def loss(a):
        return tf.reduce_sum(tf.abs(f(a)) ** 2 + tf.math.real(f(a)))
    got = grads(loss, X)[0]
    np.testing.assert_allclose(got, _fd(loss, X), rtol=1e-5, atol=1e-6)


def test_variable_and_optimizer_step():
    v = tf.Variable([1 + 2j, 3 - 1j])
    assert repr(v) == ("<tf.Variable 'Variable:0' shape=(2,) "
                       "dtype=complex128, numpy=array([1.+2.j, 3.-1.j])>")
    with tf.GradientTape() as t:
        loss = tf.reduce_sum(tf.abs(v) ** 2)
    g = t.gradient(loss, v)
    np.testing.assert_allclose(g.numpy(), 2 * v.numpy())
    v.assign_sub(0.25 * g)
    np.testing.assert_allclose(v.numpy(), [0.5 + 1j, 1.5 - 0.5j])


# ---- graphs, checkpoints, saved models --------------------------------

def test_tf_function_traces_complex():
    @tf.function
    def f(z, r):
        w = tf.complex(r, r) * z + tf.math.conj(z)
        return tf.abs(w), tf.reduce_sum(w), tf.matmul(
            tf.reshape(w, [1, -1]), tf.reshape(w, [-1, 1]))

    z = rand_c((3,), np.complex64, 10)
    r = np.float32([1, 2, 3])
    w = (r + 1j * r) * z + np.conj(z)
    a, s, m = f(tf.constant(z), tf.constant(r))
    close(a.numpy(), np.abs(w), np.complex64)
    close(s.numpy(), w.sum(), np.complex64)
    close(m.numpy(), [[np.sum(w * w)]], np.complex64)
    spec = tf.TensorSpec([None], tf.complex64)
    cf = tf.function(lambda z: tf.exp(z) * 2).get_concrete_function(spec)
    close(cf(tf.constant(z)).numpy(), np.exp(z) * 2, np.complex64)


def test_gradient_through_tf_function():
    @tf.function
    def f(a):
        with tf.GradientTape() as t:
            t.watch(a)
            y = tf.reduce_sum(tf.abs(a * a))
        return t.gradient(y, a)
    np.testing.assert_allclose(f(tf.constant(X)).numpy(),
                               grads(lambda a: tf.reduce_sum(
                                   tf.abs(a * a)), X)[0])


def test_checkpoint_roundtrip(tmp_path):
    v = tf.Variable(rand_c((2, 2), np.complex64, 11))
    ck = tf.train.Checkpoint(v=v)
    path = ck.save(str(tmp_path / "ck"))
    want = v.numpy()
    v.assign(tf.zeros([2, 2], tf.complex64))
    ck.restore(path)
    np.testing.assert_array_equal(v.numpy(), want)


def test_saved_model_roundtrip(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.array([1 + 1j, 2 - 1j], np.complex128))

        @tf.function(input_signature=[tf.TensorSpec([2], tf.complex128)])
        def __call__(self, z):
            return tf.math.real(z * self.w), z * tf.constant(2j)

    m = M()
    z = tf.constant([0.5 + 2j, -1j])
    want = [t.numpy() for t in m(z)]
    tf.saved_model.save(m, str(tmp_path / "sm"))
    back = tf.saved_model.load(str(tmp_path / "sm"))
    got = [t.numpy() for t in back(z)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(back.w.numpy(), m.w.numpy())


def test_cumsum_cumprod():
    x = rand_c((3, 4), np.complex64, 12)
    close(tf.math.cumsum(x, axis=1).numpy(), np.cumsum(x, axis=1),
          np.complex64)
    close(tf.math.cumprod(x, axis=0).numpy(), np.cumprod(x, axis=0),
          np.complex64)
    g = grads(lambda a: tf.math.real(tf.reduce_sum(tf.math.cumprod(a))), X)[0]
    # d/da0 of a0 + a0*a1 = 1 + a1; d/da1 = a0; TF passes back the conj.
    np.testing.assert_allclose(g, np.conj([1 + X[1], X[0]]), rtol=1e-12)


def test_complex_gradients_leave_no_tensors_behind():
    x, y = tf.constant(X), tf.constant(Y)

    def step():
        with tf.GradientTape() as t:
            t.watch([x, y])
            loss = (tf.reduce_sum(tf.abs(tf.pow(x, y) * tf.exp(x) / y)) +
                    tf.math.real(tf.reduce_prod(x)) +
                    tf.reduce_sum(tf.math.angle(
                        tf.complex(tf.math.real(x), tf.math.imag(y)))))
        return t.gradient(loss, [x, y])

    step()
    before = tf._C.live_counts()
    for _ in range(20):
        step()
    assert tf._C.live_counts() == before


def test_norm_of_complex_as_tf():
    z = tf.constant([1 + 2j, 3 - 1j], tf.complex64)
    n = tf.norm(z)
    assert n.dtype == tf.complex64
    np.testing.assert_allclose(n.numpy(), 3.872983455657959, rtol=1e-6)
    n1 = tf.norm(z, ord=1)
    assert n1.dtype == tf.float32
    np.testing.assert_allclose(n1.numpy(), 5.398345947265625, rtol=1e-6)
    fro = tf.norm(tf.reshape(z, [1, 2]), ord="fro", axis=[0, 1])
    np.testing.assert_allclose(fro.numpy(), 3.872983455657959, rtol=1e-6)


def test_cast_to_real_warns_as_tf(caplog):
    z = tf.constant([1 + 2j], tf.complex64)
    with caplog.at_level("WARNING", logger="tfmini"):
        assert tf.cast(z, tf.float32).numpy()[0] == 1
    assert "discard the imaginary part" in caplog.text
    assert "complex64 to an incompatible dtype float32" in caplog.text
