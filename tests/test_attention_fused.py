"""The fused ops behind the Transformer block (issue 17): _LayerNorm and
_LayerNormGrad (keras LayerNormalization over the last axis), _SoftmaxGrad
(Softmax's gradient), and reshapes written over their dying input by the
memory plan. NumPy references, finite differences, eager == traced, bad
inputs, and keras MultiHeadAttention + LayerNormalization against values
and gradients stored from TF 2.21 (tests/data/tf221_mha_layernorm.npz,
made by tf.keras 3 on the same fixed weights)."""
import os

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

L = tf.keras.layers
DATA = os.path.join(os.path.dirname(__file__), "data",
                    "tf221_mha_layernorm.npz")


def layer_norm(x, g, b, eps=1e-3):
    return _C.call(ID["_LayerNorm"], (x, g, b), f=(eps,))


def layer_norm_grad(dy, x, g, eps=1e-3):
    return _C.call(ID["_LayerNormGrad"], (dy, x, g), f=(eps,))


def softmax_grad(y, dy, axis=-1):
    return _C.call(ID["_SoftmaxGrad"], (y, dy), i=(axis,))


def np_layer_norm(x, g, b, eps):
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(x.var(-1, keepdims=True) + eps) * g + b


def np_layer_norm_grad(dy, x, g, eps):
    dy, x = dy.astype(np.float64), x.astype(np.float64)
    r = 1 / np.sqrt(x.var(-1, keepdims=True) + eps)
    xh = (x - x.mean(-1, keepdims=True)) * r
    v = g * dy
    dx = r * (v - v.mean(-1, keepdims=True)
              - xh * (v * xh).mean(-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return dx, (dy * xh).sum(rows), dy.sum(rows)


def _rand(*shape, seed=0, dtype=np.float32, scale=1.0, shift=0.0):
    r = np.random.default_rng(seed)
    return (r.normal(size=shape) * scale + shift).astype(dtype)


# Big enough that the kernels go parallel and split rows into blocks.
SHAPES = [(3, 7), (2, 5, 16), (2048, 128), (33, 64, 40), (1, 1)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_layer_norm_and_its_gradient_match_numpy(shape, dtype, tol):
    n = shape[-1]
    x = _rand(*shape, seed=1, dtype=dtype, scale=3.0, shift=5.0)
    g = _rand(n, seed=2, dtype=dtype)
    b = _rand(n, seed=3, dtype=dtype)
    dy = _rand(*shape, seed=4, dtype=dtype)
    y = layer_norm(x, g, b, 1e-3)
    assert y.dtype == tf.as_dtype(dtype) and tuple(y.shape) == shape
    np.testing.assert_allclose(y.numpy(), np_layer_norm(x, g, b, 1e-3),
                               rtol=tol, atol=tol)
    got = layer_norm_grad(dy, x, g, 1e-3)
    want = np_layer_norm_grad(dy, x, g, 1e-3)
    rows = int(np.prod(shape[:-1]))
    for k, (a, w) in enumerate(zip(got, want)):
        # dgamma/dbeta sum over every row: float32 rounding grows with it
        t = tol * (1 if k == 0 else max(1.0, np.sqrt(rows)))
        np.testing.assert_allclose(a.numpy(), w, rtol=t, atol=t)
    # the tape's gradient of _LayerNorm is the fused gradient
    xt, gt, bt = tf.constant(x), tf.constant(g), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([xt, gt, bt])
        out = tf.reduce_sum(layer_norm(xt, gt, bt) * tf.constant(dy))
    for a, w in zip(tape.gradient(out, [xt, gt, bt]), got):
        np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=tol, atol=tol)


def test_layer_norm_block_sums_do_not_depend_on_threads():
    # dgamma/dbeta are summed per block of rows in a fixed order.
    x, dy = _rand(4096, 64, seed=5), _rand(4096, 64, seed=6)
    g = _rand(64, seed=7)
    first = [t.numpy() for t in layer_norm_grad(dy, x, g)]
    tf.config.threading.set_intra_op_parallelism_threads(1)
    try:
        again = [t.numpy() for t in layer_norm_grad(dy, x, g)]
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(0)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_layer_norm_constant_rows_and_empty():
    x = np.full((3, 4), 2.5, np.float32)
    y = layer_norm(x, np.ones(4, np.float32), np.full(4, 0.5, np.float32))
    np.testing.assert_array_equal(y.numpy(), np.full((3, 4), 0.5))
    e = np.zeros((0, 4), np.float32)
    dx, dg, db = layer_norm_grad(e, e, np.ones(4, np.float32))
    assert dx.shape == (0, 4)
    np.testing.assert_array_equal(dg.numpy(), np.zeros(4))
    np.testing.assert_array_equal(db.numpy(), np.zeros(4))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_layer_norm_half_dtypes_compute_in_float32(dtype):
    x = _rand(6, 32, seed=8, scale=2.0)
    g, b = _rand(32, seed=9), _rand(32, seed=10)
    y = layer_norm(tf.cast(x, dtype), tf.cast(g, dtype), tf.cast(b, dtype))
    assert y.dtype == tf.as_dtype(dtype)
    xr = tf.cast(tf.cast(x, dtype), "float32").numpy()
    gr = tf.cast(tf.cast(g, dtype), "float32").numpy()
    br = tf.cast(tf.cast(b, dtype), "float32").numpy()
    tol = 1e-2 if dtype == "float16" else 6e-2
    np.testing.assert_allclose(tf.cast(y, "float32").numpy(),
                               np_layer_norm(xr, gr, br, 1e-3),
                               rtol=tol, atol=tol)


def test_fused_ops_traced_equal_eager():
    x, g, b = _rand(8, 64, 32, seed=11), _rand(32, seed=12), _rand(32, seed=13)
    p = tf.nn.softmax(_rand(8, 4, 16, 16, seed=14)).numpy()
    dp = _rand(8, 4, 16, 16, seed=15)

    def f(x, g, b, p, dp):
        return (layer_norm(x, g, b),) + tuple(layer_norm_grad(x * 0.5, x, g)) \
            + (softmax_grad(p, dp),)
    eager = f(x, g, b, p, dp)
    traced = tf.function(f)(*(tf.constant(v) for v in (x, g, b, p, dp)))
    for a, w in zip(traced, eager):
        np.testing.assert_array_equal(a.numpy(), w.numpy())


@pytest.mark.parametrize("shape,axis", [((5, 9), -1), ((128, 64, 64), -1),
                                        ((3, 4, 5), 1), ((4, 6), 0)])
def test_softmax_gradient_is_the_fused_op(shape, axis):
    s = _rand(*shape, seed=16, dtype=np.float64)
    dy = _rand(*shape, seed=17, dtype=np.float64)
    e = np.exp(s - s.max(axis, keepdims=True))
    y = e / e.sum(axis, keepdims=True)
    want = y * (dy - (dy * y).sum(axis, keepdims=True))
    np.testing.assert_allclose(softmax_grad(y, dy, axis).numpy(), want,
                               rtol=1e-12, atol=1e-14)
    st = tf.constant(s)
    with tf.GradientTape() as tape:
        tape.watch(st)
        out = tf.reduce_sum(tf.nn.softmax(st, axis=axis) * tf.constant(dy))
    np.testing.assert_allclose(tape.gradient(out, st).numpy(), want,
                               rtol=1e-12, atol=1e-14)

    @tf.function
    def step(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            out = tf.reduce_sum(tf.nn.softmax(v, axis=axis) * dy)
        return tape.gradient(out, v)
    np.testing.assert_allclose(step(st).numpy(), want, rtol=1e-12,
                               atol=1e-14)
    types = {op.type for op in step.get_concrete_function(
        st).graph.get_operations()}
    assert "_SoftmaxGrad" in types


def test_second_order_through_layer_norm_matches_composite():
    # d/dx of a function of the gradient: _LayerNormGrad's own rule,
    # against the same math composed of plain ops (differentiated by the
    # tape op by op).
    x = tf.constant(_rand(4, 6, seed=18, dtype=np.float64, scale=2.0))
    g = tf.constant(_rand(6, seed=19, dtype=np.float64))
    b = tf.constant(_rand(6, seed=20, dtype=np.float64))
    c = tf.constant(_rand(4, 6, seed=21, dtype=np.float64))

    def composite(x, g, b):
        m, v = tf.nn.moments(x, [1], keepdims=True)
        return (x - m) * tf.math.rsqrt(v + 1e-3) * g + b

    def second(fn):
        with tf.GradientTape() as outer:
            outer.watch([x, g])
            with tf.GradientTape() as inner:
                inner.watch([x, g])
                y = tf.reduce_sum(fn(x, g, b) * c)
            gx, gg = inner.gradient(y, [x, g])
            z = tf.reduce_sum(gx * gx) + tf.reduce_sum(gg * tf.sin(gg))
        return outer.gradient(z, [x, g])
    for a, w in zip(second(layer_norm), second(composite)):
        np.testing.assert_allclose(a.numpy(), w.numpy(), rtol=1e-9,
                                   atol=1e-11)


def test_bad_inputs_name_the_op_shapes_and_dtypes():
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_LayerNorm: gamma .* x \[2,4\] and gamma \[3\]"):
        layer_norm(x, np.ones(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="_LayerNorm: x and beta must have the same "
                             "dtype, got float32 and float64"):
        layer_norm(x, np.ones(4, np.float32), np.zeros(4))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="_LayerNorm: x must be float.*got int32"):
        layer_norm(np.zeros((2, 4), np.int32), np.ones(4, np.int32),
                   np.zeros(4, np.int32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="_LayerNorm: x must have rank >= 1"):
        layer_norm(np.float32(1), np.ones(1, np.float32),
                   np.ones(1, np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="_LayerNorm: epsilon must be a number >= 0"):
        layer_norm(x, np.ones(4, np.float32), np.zeros(4, np.float32), -1.0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_LayerNormGrad: dy and x must have the same "
                             r"shape, got \[2,3\] and \[2,4\]"):
        layer_norm_grad(np.zeros((2, 3), np.float32), x,
                        np.ones(4, np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_SoftmaxGrad: softmax and grad must have the "
                             r"same shape, got \[2,4\] and \[4,2\]"):
        softmax_grad(x, np.zeros((4, 2), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="_SoftmaxGrad: softmax and grad must have the "
                             "same dtype, got float32 and float64"):
        softmax_grad(x, np.zeros((2, 4)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="_SoftmaxGrad"):
        softmax_grad(x, x, 2)


def test_keras_layer_normalization_uses_the_fused_op_on_the_last_axis():
    x = tf.TensorSpec((2, 3, 8), tf.float32)
    last, other = L.LayerNormalization(), L.LayerNormalization(axis=1)
    for layer, fused in ((last, True), (other, False)):
        f = tf.function(lambda v: layer(v))
        types = {op.type for op in
                 f.get_concrete_function(x).graph.get_operations()}
        assert ("_LayerNorm" in types) == fused


def test_mha_and_layer_norm_match_tf_2_21():
    d = np.load(DATA)
    x = d["x"]
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3)
    ln = L.LayerNormalization(epsilon=1e-3)
    mha(x, x)
    ln(x)
    mha.set_weights([d[f"mha_w{i}"] for i in range(8)])
    ln.set_weights([d["ln_w0"], d["ln_w1"]])
    coef = np.linspace(-1, 1, x.size).reshape(x.shape).astype(np.float32)
    weights = mha.trainable_weights + ln.trainable_weights

    def run(xt):
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = ln(mha(xt, xt) + xt)
            loss = tf.reduce_sum(y * tf.constant(coef))
        return (y,) + tuple(tape.gradient(loss, [xt] + weights))
    eager = run(tf.constant(x))
    traced = tf.function(run)(tf.constant(x))
    want = [d["y"], d["gx"]] + [d[f"g{i}"] for i in range(10)]
    for got in (eager, traced):
        for a, w in zip(got, want):
            np.testing.assert_allclose(a.numpy(), w, rtol=2e-4, atol=2e-5)


def test_reshape_of_a_dying_value_is_written_over_it():
    a = tf.constant(_rand(64, 48, seed=22))
    w = tf.constant(_rand(48, 96, seed=23))

    @tf.function
    def f(a, w):
        h = tf.reshape(tf.matmul(a, w), (64, 8, 12))       # h dies here
        kept = tf.matmul(a, w) * 2.0
        r = tf.reshape(kept, (8, 8, 96))                   # kept read again
        return tf.reduce_sum(h, 2), r, kept + 1.0
    got = f(a, w)
    m = a.numpy() @ w.numpy()
    np.testing.assert_allclose(got[0].numpy(),
                               m.reshape(64, 8, 12).sum(2), rtol=1e-4,
                               atol=1e-3)
    np.testing.assert_allclose(got[1].numpy(), (m * 2).reshape(8, 8, 96),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got[2].numpy(), m * 2 + 1, rtol=1e-5,
                               atol=1e-4)
    again = f(a, w)
    for x, y in zip(got, again):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert f.get_concrete_function(a, w)._memory_plan["inplace_steps"] >= 1
