"""The CNN train step's backward around the convs: MaxPoolGrad for
disjoint windows (kernels/cpu/conv_pool_grad.c) and the pool gradient
pass (graph/pass_pool_grad.c), which turns MaxPoolGrad -> ReluGrad ->
bias Sum into one _FusedMaxPoolGrad node. Fused must equal unfused and
eager in values and gradients."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID
from tfmini.ops import conv_ops

from specs.spec_conv import np_max_pool, np_max_pool_grad


def _optimized_types(fn, *args):
    cf = fn.get_concrete_function(*args)
    return [op.type for op in cf.optimized_graph.get_operations()]


def _unfused(step, *args):
    before = tf._C.graph_passes()
    tf.config.optimizer.set_experimental_options({"epilogue": False})
    try:
        plain = tf.function(step)
        out = [t.numpy() for t in plain(*args)]
        types = _optimized_types(plain, *args)
        assert "_FusedMaxPoolGrad" not in types and "MaxPoolGrad" in types
        return out
    finally:
        tf._C.set_graph_passes(before)


def _cnn_step(dtype, pool=2, stride=2, padding="VALID", hw=(9, 8)):
    """conv + bias -> relu -> max pool, twice, then a dense layer: the
    loss and the gradients of every weight and of the images."""
    rng = np.random.default_rng(17)
    w1 = tf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(dtype) * 0.4)
    b1 = tf.Variable(rng.standard_normal((4,)).astype(dtype) * 0.3)
    w2 = tf.Variable(rng.standard_normal((3, 3, 4, 5)).astype(dtype) * 0.4)
    b2 = tf.Variable(rng.standard_normal((5,)).astype(dtype) * 0.3)

    def features(x):
        c = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w1, 1, "SAME"), b1))
        c = tf.nn.max_pool2d(c, pool, stride, padding)
        c = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(c, w2, 1, "SAME"), b2))
        return tf.nn.max_pool2d(c, pool, stride, padding)

    p = features(tf.zeros((1,) + hw + (3,), dtype))
    wd = tf.Variable(rng.standard_normal(
        (int(np.prod(p.shape[1:])), 3)).astype(dtype) * 0.3)

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            f = features(x)
            logits = tf.matmul(tf.reshape(f, (x.shape[0], -1)), wd)
            loss = tf.reduce_sum(tf.sin(logits))
        return (loss,) + tuple(tape.gradient(loss, [w1, b1, w2, b2, wd, x]))
    x = tf.constant(rng.standard_normal((2,) + hw + (3,)).astype(dtype))
    return step, x


GEOMS = [(2, 2, "VALID", (9, 8)),      # disjoint, odd size: cells left out
         (2, 2, "SAME", (9, 7)),       # disjoint, clipped windows
         (2, 3, "VALID", (11, 10)),    # gaps between windows
         (3, 2, "SAME", (9, 8))]       # overlapping: the scatter path


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("geom", GEOMS,
                         ids=["2s2valid", "2s2same", "2s3valid", "3s2same"])
def test_fused_equals_unfused_and_eager(dtype, geom):
    step, x = _cnn_step(dtype, *geom)
    eager = [t.numpy() for t in step(x)]
    fused = tf.function(step)
    got = [t.numpy() for t in fused(x)]
    types = _optimized_types(fused, x)
    assert types.count("_FusedMaxPoolGrad") == 2
    for op in ("MaxPoolGrad", "ReluGrad"):
        assert op not in types
    # Both bias gradients came out of the fused nodes: no Sum over a
    # conv-sized gradient is left (only the loss's).
    assert types.count("Sum") <= 1
    want = _unfused(step, x)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else \
        dict(rtol=1e-12, atol=1e-12)
    for g, w, e in zip(got, want, eager):
        np.testing.assert_allclose(g, w, **tol)
        np.testing.assert_allclose(g, e, **tol)


def test_keras_cnn_step_is_fused():
    rng = np.random.default_rng(3)
    L = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input((12, 12, 3)),
        L.Conv2D(6, 3, padding="same", activation="relu"),
        L.MaxPooling2D(), L.Conv2D(8, 3, padding="same", activation="relu"),
        L.MaxPooling2D(), L.Flatten(), L.Dense(4)])
    x = tf.constant(rng.random((5, 12, 12, 3), dtype=np.float32))
    y = tf.constant(rng.integers(0, 4, 5).astype(np.int32))
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        return (loss,) + tuple(tape.gradient(loss,
                                             model.trainable_variables))
    got = [t.numpy() for t in tf.function(step)(x, y)]
    assert _optimized_types(tf.function(step), x, y).count(
        "_FusedMaxPoolGrad") == 2
    want = _unfused(step, x, y)
    eager = [t.numpy() for t in step(x, y)]
    for g, w, e in zip(got, want, eager):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_second_reader_of_pool_gradient_is_not_fused():
    """The pool's input gradient is also returned: MaxPoolGrad's output
    has a second reader, so it must stay a tensor of its own."""
    rng = np.random.default_rng(5)
    z = tf.constant(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))

    @tf.function
    def f(z):
        with tf.GradientTape() as tape:
            tape.watch(z)
            y = tf.nn.relu(z)
            loss = tf.reduce_sum(tf.sin(tf.nn.max_pool2d(y, 2, 2, "VALID")))
        return tape.gradient(loss, [z, y])
    types = _optimized_types(f, z)
    assert "_FusedMaxPoolGrad" not in types and "MaxPoolGrad" in types
    dz, dy = (t.numpy() for t in f(z))
    y = np.maximum(z.numpy(), 0)
    g = np.cos(np_max_pool(y, (2, 2), (2, 2), "VALID"))
    np.testing.assert_allclose(dy, np_max_pool_grad(y, g, (2, 2), (2, 2),
                                                    "VALID"), rtol=1e-6)
    np.testing.assert_allclose(dz, np.where(y > 0, dy, 0), rtol=1e-6)


def test_relu_of_another_tensor_is_not_fused():
    """ReluGrad against a tensor other than the pooled one: the routed
    cell's value does not decide its sign, so nothing fuses."""
    rng = np.random.default_rng(6)
    z = tf.constant(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))

    @tf.function
    def f(z):
        with tf.GradientTape() as tape:
            tape.watch(z)
            y = tf.nn.relu(z)
            loss = tf.reduce_sum(tf.nn.max_pool2d(y * 2.0 - 0.5, 2, 2,
                                                  "VALID"))
        return tape.gradient(loss, z)
    assert "_FusedMaxPoolGrad" not in _optimized_types(f, z)
    y = np.maximum(z.numpy(), 0) * 2 - 0.5
    g = np.ones((2, 3, 3, 3), np.float32)
    want = np_max_pool_grad(y, g, (2, 2), (2, 2), "VALID") * 2
    want = np.where(z.numpy() > 0, want, 0)
    np.testing.assert_allclose(f(z).numpy(), want, rtol=1e-6)


def test_sum_that_is_not_a_bias_gradient_stays():
    """A Sum of dx over other axes (or keeping dims) is not db: dx fuses,
    the Sum stays a node of its own."""
    rng = np.random.default_rng(7)
    z = tf.constant(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))

    @tf.function
    def f(z):
        with tf.GradientTape() as tape:
            tape.watch(z)
            y = tf.nn.relu(z)
            loss = tf.reduce_sum(tf.sin(tf.nn.max_pool2d(y, 2, 2, "VALID")))
        dz = tape.gradient(loss, z)
        return (tf.reduce_sum(dz, [0, 1, 2], keepdims=True),
                tf.reduce_sum(dz, [1, 2]), tf.reduce_sum(dz, [0, 1, 2]))
    types = _optimized_types(f, z)
    assert types.count("_FusedMaxPoolGrad") == 1
    # The loss's Sum and the three of dz, less the one db took.
    assert types.count("Sum") == 4 - 1
    kept, per_image, db = (t.numpy() for t in f(z))
    y = np.maximum(z.numpy(), 0)
    g = np.cos(np_max_pool(y, (2, 2), (2, 2), "VALID"))
    dz = np.where(y > 0, np_max_pool_grad(y, g, (2, 2), (2, 2), "VALID"),
                  0)
    np.testing.assert_allclose(kept, dz.sum((0, 1, 2), keepdims=True),
                               rtol=1e-5)
    np.testing.assert_allclose(per_image, dz.sum((1, 2)), rtol=1e-5)
    np.testing.assert_allclose(db, dz.sum((0, 1, 2)), rtol=1e-5)


def _raw(x, y, g, k=2, s=2, padding="VALID"):
    return _C.call(ID["_FusedMaxPoolGrad"], (x, y, g),
                   **conv_ops._pool_attrs(k, s, padding, "MaxPoolGrad"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k,s,padding", [(2, 2, "VALID"), (3, 3, "SAME"),
                                         (2, 3, "SAME"), (3, 1, "VALID")])
def test_raw_op_matches_numpy(dtype, k, s, padding):
    """Ties (values repeat) go to the first maximum; negative maxima and
    zeros get no gradient; db is the channel sum of dx."""
    rng = np.random.default_rng(8)
    x = rng.integers(-3, 4, (3, 7, 8, 19)).astype(dtype)
    y = np_max_pool(x, (k, k), (s, s), padding)
    g = rng.standard_normal(y.shape).astype(dtype)
    dx, db = (t.numpy() for t in _raw(tf.constant(x), tf.constant(y),
                                      tf.constant(g), k, s, padding))
    want = np.where(x > 0, np_max_pool_grad(x, g, (k, k), (s, s), padding),
                    0)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(db, want.sum((0, 1, 2)), rtol=1e-5,
                               atol=1e-5)
    # The plain MaxPoolGrad takes the same fast path when windows are
    # disjoint: it equals the reference without the relu too.
    plain = conv_ops._max_pool_grad(tf.constant(x), tf.constant(y),
                                    tf.constant(g), k, s, padding).numpy()
    np.testing.assert_allclose(plain, np_max_pool_grad(
        x, g, (k, k), (s, s), padding), rtol=1e-6, atol=1e-6)


def test_raw_op_nan_is_a_maximum_and_gets_no_relu_gradient():
    x = np.array([[[[1.0], [np.nan]], [[3.0], [np.nan]]]], np.float32)
    y = np.full((1, 1, 1, 1), np.nan, np.float32)
    g = np.full((1, 1, 1, 1), 2.0, np.float32)
    plain = conv_ops._max_pool_grad(x, y, g, 2, 2, "VALID").numpy()
    np.testing.assert_array_equal(plain.ravel(), [0, 2, 0, 0])
    dx, db = (t.numpy() for t in _raw(tf.constant(x), tf.constant(y),
                                      tf.constant(g)))
    np.testing.assert_array_equal(dx.ravel(), [0, 0, 0, 0])
    np.testing.assert_array_equal(db, [0])


def test_many_channels_cross_the_block_size():
    """C = 150: the channel loop runs in blocks of 64 and a tail."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4, 6, 150)).astype(np.float32)
    y = np_max_pool(x, (2, 2), (2, 2), "VALID")
    g = rng.standard_normal(y.shape).astype(np.float32)
    dx, db = (t.numpy() for t in _raw(tf.constant(x), tf.constant(y),
                                      tf.constant(g)))
    want = np.where(x > 0, np_max_pool_grad(x, g, (2, 2), (2, 2), "VALID"),
                    0)
    np.testing.assert_allclose(dx, want, rtol=1e-6)
    np.testing.assert_allclose(db, want.sum((0, 1, 2)), rtol=1e-5,
                               atol=1e-5)


def test_raw_op_errors_name_op_shapes_and_dtypes():
    x = tf.zeros((1, 4, 4, 2))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_FusedMaxPoolGrad: grad has shape "
                             r"\[1,2,2,3\], expected \[1,2,2,2\]"):
        _raw(x, tf.zeros((1, 2, 2, 2)), tf.zeros((1, 2, 2, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_FusedMaxPoolGrad.*float32.*float64|"
                             r"_FusedMaxPoolGrad.*float64.*float32"):
        _raw(x, tf.zeros((1, 2, 2, 2)), tf.zeros((1, 2, 2, 2), tf.float64))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_FusedMaxPoolGrad"):
        _raw(tf.zeros((1, 4, 4, 2), tf.int32), tf.zeros((1, 2, 2, 2),
                                                        tf.int32),
             tf.zeros((1, 2, 2, 2), tf.int32))


def test_empty_batch():
    dx, db = (t.numpy() for t in _raw(tf.zeros((0, 4, 4, 3)),
                                      tf.zeros((0, 2, 2, 3)),
                                      tf.zeros((0, 2, 2, 3))))
    assert dx.shape == (0, 4, 4, 3)
    np.testing.assert_array_equal(db, np.zeros(3, np.float32))


# ---- Conv2D -> activation with no bias (pass_conv_epilogue.c) --------

def _fused_conv_arity(fn, *args):
    cf = fn.get_concrete_function(*args)
    return [len(op.inputs) for op in cf.optimized_graph.get_operations()
            if op.type == "_FusedConv2D"]


def _nobias_step(act, dtype):
    rng = np.random.default_rng(31)
    w1 = tf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(dtype) * 0.4)
    w2 = tf.Variable(rng.standard_normal((3, 3, 4, 4)).astype(dtype) * 0.4)

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            c = act(tf.nn.conv2d(x, w1, 1, "SAME"))
            c = act(tf.nn.conv2d(c, w2, 2, "VALID"))
            loss = tf.reduce_sum(tf.sin(c))
        return (loss,) + tuple(tape.gradient(loss, [w1, w2, x]))
    x = tf.constant(rng.standard_normal((2, 7, 6, 3)).astype(dtype))
    return step, x


@pytest.mark.parametrize("act", [tf.nn.relu, tf.nn.relu6],
                         ids=["relu", "relu6"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_relu_without_bias_fused_equals_unfused(act, dtype):
    step, x = _nobias_step(act, dtype)
    eager = [t.numpy() for t in step(x)]
    fused = tf.function(step)
    got = [t.numpy() for t in fused(x)]
    types = _optimized_types(fused, x)
    assert _fused_conv_arity(fused, x) == [2, 2]
    assert "Conv2D" not in types and act.__name__.capitalize() not in types
    before = tf._C.graph_passes()
    tf.config.optimizer.set_experimental_options({"epilogue": False})
    try:
        plain = tf.function(step)
        want = [t.numpy() for t in plain(x)]
        assert "_FusedConv2D" not in _optimized_types(plain, x)
    finally:
        tf._C.set_graph_passes(before)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else \
        dict(rtol=1e-12, atol=1e-12)
    for g, w, e in zip(got, want, eager):
        np.testing.assert_allclose(g, w, **tol)
        np.testing.assert_allclose(g, e, **tol)


def test_conv_relu_without_bias_second_reader_is_not_fused():
    """The conv's output is also returned: the pre-activation tensor must
    exist, so the Relu stays apart."""
    rng = np.random.default_rng(32)
    w = tf.constant(rng.standard_normal((3, 3, 2, 3)).astype(np.float32))
    x = tf.constant(rng.standard_normal((1, 5, 5, 2)).astype(np.float32))

    @tf.function
    def f(x):
        c = tf.nn.conv2d(x, w, 1, "SAME")
        return tf.nn.relu(c), c
    types = _optimized_types(f, x)
    assert "_FusedConv2D" not in types and "Relu" in types
    r, c = (t.numpy() for t in f(x))
    np.testing.assert_array_equal(r, np.maximum(c, 0))


def test_conv_elu_without_bias_in_training_is_not_fused():
    """Elu's gradient reads its input, the conv's output: a second
    reader, so in a training graph nothing fuses; in inference it does."""
    rng = np.random.default_rng(33)
    w = tf.Variable(rng.standard_normal((3, 3, 2, 3)).astype(np.float32))
    x = tf.constant(rng.standard_normal((1, 5, 5, 2)).astype(np.float32))

    def train(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.nn.elu(tf.nn.conv2d(x, w, 1, "SAME")))
        return loss, tape.gradient(loss, w)
    assert "_FusedConv2D" not in _optimized_types(tf.function(train), x)
    infer = tf.function(lambda x: tf.nn.elu(tf.nn.conv2d(x, w, 1, "SAME")))
    assert _fused_conv_arity(infer, x) == [2]
    c = tf.nn.conv2d(x, w, 1, "SAME").numpy()
    np.testing.assert_allclose(infer(x).numpy(),
                               np.where(c > 0, c, np.expm1(c)), rtol=1e-5,
                               atol=1e-6)
    got = [t.numpy() for t in tf.function(train)(x)]
    want = [t.numpy() for t in train(x)]
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_keras_conv_without_bias_is_fused():
    rng = np.random.default_rng(34)
    layer = tf.keras.layers.Conv2D(4, 3, padding="same", use_bias=False,
                                   activation="relu")
    x = tf.constant(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))
    layer(x)
    f = tf.function(lambda x: layer(x))
    assert _fused_conv_arity(f, x) == [2]
    np.testing.assert_allclose(f(x).numpy(), layer(x).numpy(), rtol=1e-5,
                               atol=1e-6)


def test_raw_fused_conv_without_bias():
    rng = np.random.default_rng(35)
    x = tf.constant(rng.standard_normal((1, 4, 4, 2)).astype(np.float64))
    f = tf.constant(rng.standard_normal((3, 3, 2, 3)).astype(np.float64))
    attrs = dict(ints=(1, 1, 1, 1) + tuple(conv_ops._NO_SIZES)
                 + tuple(conv_ops._NO_PADS), i=(conv_ops._SAME, 2))
    want = np.clip(tf.nn.conv2d(x, f, 1, "SAME").numpy(), 0, 6)
    for dt in (np.float64, np.float32):
        got = _C.call(ID["_FusedConv2D"], (tf.cast(x, dt), tf.cast(f, dt)),
                      **attrs).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_random_geometries_match_numpy():
    """Windows and strides of 1-4 on each axis, both paddings, channel
    counts around the block size: plain MaxPoolGrad (disjoint or
    scatter path) and _FusedMaxPoolGrad against the reference."""
    rng = np.random.default_rng(40)
    for _ in range(30):
        kh, kw, sh, sw = (int(v) for v in rng.integers(1, 5, 4))
        padding = ["VALID", "SAME"][int(rng.integers(0, 2))]
        h, w = int(rng.integers(kh, 10)), int(rng.integers(kw, 10))
        c = int(rng.choice([1, 3, 63, 64, 65]))
        x = rng.integers(-4, 5, (2, h, w, c)).astype(np.float32)
        y = np_max_pool(x, (kh, kw), (sh, sw), padding)
        g = rng.standard_normal(y.shape).astype(np.float32)
        want = np_max_pool_grad(x, g, (kh, kw), (sh, sw), padding)
        plain = conv_ops._max_pool_grad(
            tf.constant(x), tf.constant(y), tf.constant(g), [kh, kw],
            [sh, sw], padding).numpy()
        what = f"k=({kh},{kw}) s=({sh},{sw}) {padding} {x.shape}"
        np.testing.assert_allclose(plain, want, rtol=1e-6, atol=1e-6,
                                   err_msg=what)
        dx, db = (t.numpy() for t in _raw(tf.constant(x), tf.constant(y),
                                          tf.constant(g), [kh, kw],
                                          [sh, sw], padding))
        relu = np.where(x > 0, want, 0)
        np.testing.assert_allclose(dx, relu, rtol=1e-6, atol=1e-6,
                                   err_msg=what)
        np.testing.assert_allclose(db, relu.sum((0, 1, 2)), rtol=1e-5,
                                   atol=1e-5, err_msg=what)


def test_large_enough_to_split_over_threads():
    """4x32x32x64: over the kernels' parallel threshold, so the rows are
    split over threads and db is summed from per-thread parts."""
    rng = np.random.default_rng(41)
    x = rng.standard_normal((4, 32, 32, 64)).astype(np.float32)
    y = np_max_pool(x, (2, 2), (2, 2), "VALID")
    g = rng.standard_normal(y.shape).astype(np.float32)
    want = np_max_pool_grad(x, g, (2, 2), (2, 2), "VALID")
    relu = np.where(x > 0, want, 0)
    for _ in range(2):      # the same bits every run
        dx, db = (t.numpy() for t in _raw(tf.constant(x), tf.constant(y),
                                          tf.constant(g)))
        np.testing.assert_array_equal(dx, relu)
        np.testing.assert_allclose(db, relu.sum((0, 1, 2)), rtol=1e-5,
                                   atol=1e-5)
        if _:
            np.testing.assert_array_equal(db, first)
        first = db
    plain = conv_ops._max_pool_grad(tf.constant(x), tf.constant(y),
                                    tf.constant(g), 2, 2, "VALID").numpy()
    np.testing.assert_array_equal(plain, want)
