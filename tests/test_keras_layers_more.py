"""Conv1D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, 1D
pooling, shape, merge and preprocessing layers: values against NumPy,
gradients against finite differences, eager == traced, configs, weight
names, save/load, and a small model that trains with fit."""
import numpy as np
import pytest

import tfmini as tf

keras = tf.keras
L = keras.layers
rng = np.random.default_rng(0)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- NumPy references ------------------------------------------------------

def np_conv1d(x, k, stride=1, padding="valid", dilation=1):
    kk = (k.shape[0] - 1) * dilation + 1
    n = x.shape[1]
    if padding == "causal":
        x = np.pad(x, ((0, 0), (kk - 1, 0), (0, 0)))
    elif padding == "same":
        out = -(-n // stride)
        total = max((out - 1) * stride + kk - n, 0)
        x = np.pad(x, ((0, 0), (total // 2, total - total // 2), (0, 0)))
    steps = (x.shape[1] - kk) // stride + 1
    y = np.zeros((x.shape[0], steps, k.shape[2]))
    for t in range(steps):
        for a in range(k.shape[0]):
            y[:, t] += x[:, t * stride + a * dilation] @ k[a]
    return y


def np_depthwise(x, k, padding="valid"):
    kh, kw, c, m = k.shape
    if padding == "same":
        ph, pw = kh - 1, kw - 1
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2),
                       (pw // 2, pw - pw // 2), (0, 0)))
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    y = np.zeros((x.shape[0], oh, ow, c * m))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i:i + kh, j:j + kw, :]           # n kh kw c
            y[:, i, j, :] = np.einsum("nabc,abcm->ncm", patch,
                                      k).reshape(x.shape[0], c * m)
    return y


def np_conv_transpose(x, k, stride, padding, output_padding=None):
    n, h, w, c = x.shape
    kh, kw, f, _ = k.shape
    full = np.zeros((n, (h - 1) * stride + kh, (w - 1) * stride + kw, f))
    for i in range(h):
        for j in range(w):
            full[:, i * stride:i * stride + kh,
                 j * stride:j * stride + kw, :] += np.einsum(
                     "nc,abfc->nabf", x[:, i, j, :], k)

    def crop(length_in, kern):
        # Keras' output length, then TF's SAME offset for that length.
        if output_padding is None:
            out = (length_in * stride if padding == "same" else
                   length_in * stride + max(kern - stride, 0))
        else:
            pad = kern // 2 if padding == "same" else 0
            out = (length_in - 1) * stride + kern - 2 * pad + output_padding
        if padding == "same":
            return max((length_in - 1) * stride + kern - out, 0) // 2, out
        return 0, out
    t, oh = crop(h, kh)
    l, ow = crop(w, kw)
    full = np.pad(full, ((0, 0), (0, max(0, t + oh - full.shape[1])),
                         (0, max(0, l + ow - full.shape[2])), (0, 0)))
    return full[:, t:t + oh, l:l + ow, :]


def np_pool1d(x, p, s, op):
    steps = (x.shape[1] - p) // s + 1
    return np.stack([op(x[:, t * s:t * s + p], axis=1)
                     for t in range(steps)], 1)


# ---- values ---------------------------------------------------------------

@pytest.mark.parametrize("padding,stride,dilation", [
    ("valid", 1, 1), ("same", 2, 1), ("causal", 1, 2), ("valid", 2, 1)])
def test_conv1d_values(padding, stride, dilation):
    x = rand(2, 9, 3)
    layer = L.Conv1D(4, 3, strides=stride, padding=padding,
                     dilation_rate=dilation, bias_initializer="ones")
    y = layer(x).numpy()
    want = np_conv1d(x, layer.kernel.numpy(), stride, padding, dilation) + 1
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert layer.compute_output_shape(x.shape) == y.shape


@pytest.mark.parametrize("padding,stride,out_pad", [
    ("valid", 2, None), ("same", 2, None), ("valid", 1, None),
    ("same", 3, None), ("same", 2, 1), ("valid", 3, 2), ("same", 3, 2)])
def test_conv2d_transpose_values(padding, stride, out_pad):
    x = rand(2, 3, 4, 3)
    layer = L.Conv2DTranspose(5, (3, 2), strides=stride, padding=padding,
                              output_padding=out_pad)
    y = layer(x).numpy()
    want = np_conv_transpose(x, layer.kernel.numpy(), stride, padding,
                             out_pad)
    assert y.shape == want.shape == layer.compute_output_shape(x.shape)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding,mult", [("valid", 1), ("same", 2)])
def test_depthwise_and_separable_values(padding, mult):
    x = rand(2, 5, 6, 3)
    dw = L.DepthwiseConv2D(3, padding=padding, depth_multiplier=mult,
                           bias_initializer="ones")
    y = dw(x).numpy()
    want = np_depthwise(x, dw.kernel.numpy(), padding) + 1
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    sep = L.SeparableConv2D(4, 3, padding=padding, depth_multiplier=mult)
    y = sep(x).numpy()
    mid = np_depthwise(x, sep.depthwise_kernel.numpy(), padding)
    want = mid @ sep.pointwise_kernel.numpy()[0, 0]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_pooling_1d_and_global():
    x = rand(2, 7, 3)
    np.testing.assert_allclose(L.MaxPooling1D(2)(x).numpy(),
                               np_pool1d(x, 2, 2, np.max), rtol=1e-6)
    np.testing.assert_allclose(L.AveragePooling1D(3, strides=1)(x).numpy(),
                               np_pool1d(x, 3, 1, np.mean), rtol=1e-5)
    assert L.MaxPooling1D(2, padding="same")(x).shape == (2, 4, 3)
    np.testing.assert_allclose(L.GlobalAveragePooling1D()(x).numpy(),
                               x.mean(1), rtol=1e-5)
    np.testing.assert_allclose(L.GlobalMaxPooling1D(keepdims=True)(x).numpy(),
                               x.max(1, keepdims=True))
    mask = np.array([[1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 0]], bool)
    got = L.GlobalAveragePooling1D()(x, mask=mask).numpy()
    want = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_global_average_pooling_1d_uses_embedding_mask():
    ids = np.array([[3, 1, 0, 0], [2, 2, 2, 0]])
    inp = keras.Input((4,), dtype="int32")
    emb = L.Embedding(5, 2, mask_zero=True)
    out = L.GlobalAveragePooling1D()(emb(inp))
    model = keras.Model(inp, out)
    table = emb.embeddings.numpy()
    want = np.stack([table[[3, 1]].mean(0), table[[2, 2, 2]].mean(0)])
    np.testing.assert_allclose(model(ids).numpy(), want, rtol=1e-5)


def test_shape_layers():
    x = rand(2, 3, 4, 2)
    np.testing.assert_array_equal(
        L.UpSampling2D((2, 3))(x).numpy(),
        np.repeat(np.repeat(x, 2, axis=1), 3, axis=2))
    np.testing.assert_array_equal(
        L.ZeroPadding2D(((1, 2), (0, 3)))(x).numpy(),
        np.pad(x, ((0, 0), (1, 2), (0, 3), (0, 0))))
    np.testing.assert_array_equal(L.ZeroPadding2D(1)(x).numpy(),
                                  np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))))
    np.testing.assert_array_equal(
        L.Cropping2D(((1, 0), (1, 2)))(x).numpy(), x[:, 1:, 1:2])
    v = rand(2, 5)
    np.testing.assert_array_equal(L.RepeatVector(3)(v).numpy(),
                                  np.repeat(v[:, None], 3, 1))
    y = rand(2, 3, 4, 5)
    np.testing.assert_array_equal(L.Permute((3, 1, 2))(y).numpy(),
                                  y.transpose(0, 3, 1, 2))
    with pytest.raises(ValueError, match="Permute"):
        L.Permute((1, 3))
    with pytest.raises(ValueError, match="leaves nothing"):
        L.Cropping2D(((2, 1), (0, 0)))(x)


def np_resize_bilinear_half_pixel(x, sh, sw):
    """TF2 tf.image.resize(method='bilinear'), written out per pixel."""
    n, h, w, c = x.shape
    out = np.zeros((n, h * sh, w * sw, c))
    for i in range(h * sh):
        fy = (i + 0.5) / sh - 0.5
        y0 = int(np.floor(fy))
        ly = fy - y0
        ya, yb = min(max(y0, 0), h - 1), min(max(y0 + 1, 0), h - 1)
        for j in range(w * sw):
            fx = (j + 0.5) / sw - 0.5
            x0 = int(np.floor(fx))
            lx = fx - x0
            xa, xb = min(max(x0, 0), w - 1), min(max(x0 + 1, 0), w - 1)
            top = x[:, ya, xa] * (1 - lx) + x[:, ya, xb] * lx
            bot = x[:, yb, xa] * (1 - lx) + x[:, yb, xb] * lx
            out[:, i, j] = top * (1 - ly) + bot * ly
    return out


def test_upsampling_bilinear():
    x = rand(2, 3, 4, 2)
    layer = L.UpSampling2D((2, 3), interpolation="bilinear")
    np.testing.assert_allclose(layer(x).numpy(),
                               np_resize_bilinear_half_pixel(x, 2, 3),
                               rtol=1e-5, atol=1e-6)
    # A constant image stays constant; edges are clamped, not zero.
    ones = np.ones((1, 2, 2, 1), np.float32)
    np.testing.assert_allclose(layer(ones).numpy(), 1.0, rtol=1e-6)
    assert L.UpSampling2D.from_config(layer.get_config()).interpolation \
        == "bilinear"


def test_time_distributed():
    x = rand(2, 5, 3)
    td = L.TimeDistributed(L.Dense(4))
    y = td(x).numpy()
    dense = td.layer
    np.testing.assert_allclose(y, x @ dense.kernel.numpy() +
                               dense.bias.numpy(), rtol=1e-5, atol=1e-6)
    assert [w.name for w in td.weights] == ["kernel", "bias"]
    assert td.compute_output_shape((None, 5, 3)) == (None, 5, 4)
    again = L.TimeDistributed.from_config(td.get_config())
    assert isinstance(again.layer, L.Dense) and again.layer.units == 4
    with pytest.raises(ValueError, match="at least 3"):
        L.TimeDistributed(L.Dense(2))(rand(2, 3))


def test_merge_layers():
    a, b, c = rand(2, 3), rand(2, 3), rand(2, 3)
    np.testing.assert_allclose(L.Multiply()([a, b, c]).numpy(), a * b * c,
                               rtol=1e-6)
    np.testing.assert_allclose(L.Average()([a, b, c]).numpy(),
                               (a + b + c) / 3, rtol=1e-6)
    np.testing.assert_array_equal(L.Maximum()([a, b]).numpy(),
                                  np.maximum(a, b))
    np.testing.assert_array_equal(L.Minimum()([a, b]).numpy(),
                                  np.minimum(a, b))
    np.testing.assert_array_equal(L.subtract([a, b]).numpy(), a - b)
    with pytest.raises(ValueError, match="exactly 2"):
        L.Subtract()([a, b, c])
    np.testing.assert_allclose(L.Dot(axes=1)([a, b]).numpy(),
                               (a * b).sum(1, keepdims=True), rtol=1e-5)
    an = a / np.linalg.norm(a, axis=1, keepdims=True)
    bn = b / np.linalg.norm(b, axis=1, keepdims=True)
    np.testing.assert_allclose(L.Dot(1, normalize=True)([a, b]).numpy(),
                               (an * bn).sum(1, keepdims=True), rtol=1e-5)
    x, y = rand(2, 3, 4), rand(2, 5, 4)
    np.testing.assert_allclose(L.Dot(axes=(2, 2))([x, y]).numpy(),
                               np.einsum("nid,njd->nij", x, y), rtol=1e-5,
                               atol=1e-6)
    z = rand(2, 3, 6)
    np.testing.assert_allclose(L.dot([x, z], axes=1).numpy(),
                               np.einsum("ndi,ndj->nij", x, z), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(ValueError, match="incompatibility"):
        L.Dot(axes=1)([x, y])


def test_merge_masks_are_anded():
    ids_a = np.array([[1, 2, 0, 0]])
    ids_b = np.array([[3, 0, 4, 0]])
    ia, ib = keras.Input((4,), dtype="int32"), keras.Input((4,),
                                                           dtype="int32")
    ea = L.Embedding(5, 3, mask_zero=True)(ia)
    eb = L.Embedding(5, 3, mask_zero=True)(ib)
    merged = L.Multiply()([ea, eb])
    out = L.GlobalAveragePooling1D()(merged)
    model = keras.Model([ia, ib], [merged, out])
    m, pooled = model([ids_a, ids_b])
    # Only step 0 is unmasked in both inputs.
    np.testing.assert_allclose(pooled.numpy(), m.numpy()[:, 0], rtol=1e-6)
    mask = L.Maximum().compute_mask(None, [tf.constant([[True, False]]),
                                           None])
    np.testing.assert_array_equal(mask.numpy(), [[True, False]])


def test_normalization_adapt_and_invert():
    x = rand(40, 3) * np.array([1, 10, 100], np.float32) + 5
    norm = L.Normalization()
    norm.adapt(x)
    np.testing.assert_allclose(norm.mean.numpy().ravel(), x.mean(0),
                               rtol=1e-5)
    np.testing.assert_allclose(norm(x).numpy(),
                               (x - x.mean(0)) / x.std(0), rtol=1e-4,
                               atol=1e-4)
    assert [w.name for w in norm.weights] == ["mean", "variance", "count"]
    assert int(norm.count.numpy()) == 40
    assert not norm.trainable_weights
    inv = L.Normalization(mean=x.mean(0), variance=x.var(0), invert=True)
    np.testing.assert_allclose(inv(norm(x)).numpy(), x, rtol=1e-4)
    # axis=None: one scalar statistic; adapt from a dataset of batches.
    ds = tf.data.Dataset.from_tensor_slices(x).batch(16)
    whole = L.Normalization(axis=None)
    whole.adapt(ds)
    np.testing.assert_allclose(whole(x).numpy(),
                               (x - x.mean()) / x.std(), rtol=1e-4,
                               atol=1e-4)
    images = rand(6, 4, 4, 2)
    per_channel = L.Normalization(axis=-1)
    per_channel.adapt(images)
    np.testing.assert_allclose(per_channel.variance.numpy().ravel(),
                               images.var(axis=(0, 1, 2)), rtol=1e-4)
    cfg = L.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0]).get_config()
    again = L.Normalization.from_config(cfg)
    np.testing.assert_allclose(again(np.array([[3.0, 5.0]],
                                              np.float32)).numpy(),
                               [[1.0, 1.0]], rtol=1e-6)


def test_rescaling_and_category_encoding():
    img = rng.integers(0, 256, (2, 3), dtype=np.uint8)
    np.testing.assert_allclose(L.Rescaling(1 / 127.5, offset=-1)(img)
                               .numpy(), img / 127.5 - 1, atol=1e-6)
    ids = np.array([[0, 1], [0, 0], [1, 2], [3, 1]])
    np.testing.assert_array_equal(
        L.CategoryEncoding(4)(ids).numpy(),
        [[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 0, 1]])
    np.testing.assert_array_equal(
        L.CategoryEncoding(4, output_mode="count")(ids).numpy(),
        [[1, 1, 0, 0], [2, 0, 0, 0], [0, 1, 1, 0], [0, 1, 0, 1]])
    np.testing.assert_array_equal(
        L.CategoryEncoding(4, output_mode="one_hot")([3, 2, 0, 1]).numpy(),
        np.eye(4)[[3, 2, 0, 1]])
    w = rng.uniform(size=(4, 2)).astype(np.float32)
    got = L.CategoryEncoding(4, output_mode="count")(ids, count_weights=w)
    want = np.zeros((4, 4))
    for i in range(4):
        for j in range(2):
            want[i, ids[i, j]] += w[i, j]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="num_tokens"):
        L.CategoryEncoding(3)(np.array([[0, 3]]))


def test_integer_lookup():
    data = np.array([[12, 1138, 42], [42, 1000, 36]])
    layer = L.IntegerLookup()
    layer.adapt(data)
    assert layer.get_vocabulary() == [-1, 42, 1138, 1000, 36, 12]
    vocab = [12, 36, 1138, 42]
    layer = L.IntegerLookup(vocabulary=vocab)
    np.testing.assert_array_equal(layer(data).numpy(),
                                  [[1, 3, 4], [4, 0, 2]])
    masked = L.IntegerLookup(vocabulary=vocab, mask_token=0)
    np.testing.assert_array_equal(masked(np.array([[12, 0, 7]])).numpy(),
                                  [[2, 0, 1]])
    inv = L.IntegerLookup(vocabulary=vocab, invert=True)
    np.testing.assert_array_equal(inv(np.array([[1, 3, 4], [4, 0, 2]]))
                                  .numpy(), [[12, 1138, 42], [42, -1, 36]])
    hot = L.IntegerLookup(vocabulary=vocab, output_mode="multi_hot")
    np.testing.assert_array_equal(
        hot(np.array([[12, 1138, 42, 42], [42, 7, 36, 7]])).numpy(),
        [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    strict = L.IntegerLookup(vocabulary=vocab, num_oov_indices=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="vocabulary"):
        strict(np.array([7]))
    again = L.IntegerLookup.from_config(layer.get_config())
    assert again.get_vocabulary() == layer.get_vocabulary()

    @tf.function
    def traced(x):
        return layer(x)
    np.testing.assert_array_equal(traced(tf.constant(data)).numpy(),
                                  layer(data).numpy())


# ---- gradients, tracing, configs, weights ---------------------------

GRAD_CASES = [
    ("conv1d", lambda: L.Conv1D(2, 2, padding="causal", dtype="float64"),
     (1, 4, 2)),
    ("conv2d_transpose", lambda: L.Conv2DTranspose(2, 2, strides=2,
                                                   dtype="float64"),
     (1, 2, 2, 2)),
    ("depthwise", lambda: L.DepthwiseConv2D(2, depth_multiplier=2,
                                            dtype="float64"), (1, 3, 3, 2)),
    ("separable", lambda: L.SeparableConv2D(2, 2, padding="same",
                                            dtype="float64"), (1, 3, 3, 2)),
    ("avgpool1d", lambda: L.AveragePooling1D(2, dtype="float64"), (1, 4, 2)),
    ("upsampling", lambda: L.UpSampling2D(dtype="float64"), (1, 2, 2, 1)),
    ("upsampling_bilinear", lambda: L.UpSampling2D(
        interpolation="bilinear", dtype="float64"), (1, 2, 3, 1)),
    ("time_distributed", lambda: L.TimeDistributed(
        L.Dense(2, dtype="float64"), dtype="float64"), (1, 3, 2)),
]


@pytest.mark.parametrize("name,make,shape", GRAD_CASES,
                         ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_finite_differences(name, make, shape):
    layer = make()
    x = tf.Variable(rng.standard_normal(shape))
    layer(x)
    params = [x] + list(layer.trainable_weights)
    r = rng.standard_normal(tuple(layer(x).shape))

    def f():
        return tf.reduce_sum(layer(x) * r)
    with tf.GradientTape() as tape:
        v = f()
    grads = tape.gradient(v, params)
    for p, g in zip(params, grads):
        base = p.numpy()
        num = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sgn in (1, -1):
                q = base.copy()
                q[idx] += sgn * 1e-6
                p.assign(q)
                num[idx] += sgn * float(f()) / 2e-6
            p.assign(base)
        np.testing.assert_allclose(g.numpy(), num, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{name}: {p.name}")


WEIGHTS = [
    (lambda: L.Conv1D(4, 3), (2, 6, 3), [("kernel", (3, 3, 4)),
                                         ("bias", (4,))]),
    (lambda: L.Conv2DTranspose(4, 3, strides=2), (2, 3, 3, 2),
     [("kernel", (3, 3, 4, 2)), ("bias", (4,))]),
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=2), (2, 5, 5, 3),
     [("kernel", (3, 3, 3, 2)), ("bias", (6,))]),
    (lambda: L.SeparableConv2D(4, 3, depth_multiplier=2), (2, 5, 5, 3),
     [("depthwise_kernel", (3, 3, 3, 2)), ("pointwise_kernel", (1, 1, 6, 4)),
      ("bias", (4,))]),
    (lambda: L.MaxPooling1D(3, strides=1, padding="same"), (2, 6, 3), []),
    (lambda: L.GlobalMaxPooling1D(), (2, 6, 3), []),
    (lambda: L.UpSampling2D(3), (2, 2, 3, 1), []),
    (lambda: L.ZeroPadding2D((1, 2)), (2, 2, 3, 1), []),
    (lambda: L.Cropping2D(1), (2, 4, 3, 1), []),
    (lambda: L.RepeatVector(4), (2, 3), []),
    (lambda: L.Permute((2, 1)), (2, 3, 5), []),
    (lambda: L.Rescaling(0.5, 1.0), (2, 3), []),
]


@pytest.mark.parametrize("make,shape,weights", WEIGHTS,
                         ids=[type(w[0]()).__name__ for w in WEIGHTS])
def test_traced_config_and_weights(make, shape, weights):
    layer = make()
    x = rand(*shape)
    eager = layer(x).numpy()
    assert [(w.name, tuple(w.shape)) for w in layer.weights] == weights
    traced = tf.function(lambda t: layer(t))(tf.constant(x)).numpy()
    np.testing.assert_allclose(traced, eager, rtol=1e-6, atol=1e-6)
    assert layer.compute_output_shape(shape) == eager.shape
    again = type(layer).from_config(layer.get_config())
    again(x)
    again.set_weights(layer.get_weights())
    np.testing.assert_allclose(again(x).numpy(), eager, rtol=1e-6,
                               atol=1e-6)


def test_traced_preprocessing_and_merges():
    ids = np.array([[0, 3], [2, 2]])
    enc = L.CategoryEncoding(4, output_mode="count")
    fn = tf.function(lambda t: enc(t))
    np.testing.assert_array_equal(fn(tf.constant(ids)).numpy(),
                                  enc(ids).numpy())
    x = rand(5, 3)
    norm = L.Normalization()
    norm.adapt(x)
    np.testing.assert_allclose(tf.function(lambda t: norm(t))(
        tf.constant(x)).numpy(), norm(x).numpy(), rtol=1e-6)
    a, b = rand(2, 4), rand(2, 4)
    for layer in (L.Dot(1, normalize=True), L.Multiply(), L.Average(),
                  L.Maximum(), L.Minimum(), L.Subtract()):
        traced = tf.function(lambda u, v: layer([u, v]))
        np.testing.assert_allclose(
            traced(tf.constant(a), tf.constant(b)).numpy(),
            layer([a, b]).numpy(), rtol=1e-6, err_msg=layer.name)
        again = type(layer).from_config(layer.get_config())
        np.testing.assert_allclose(again([a, b]).numpy(),
                                   layer([a, b]).numpy(), rtol=1e-6)


def test_bad_inputs_are_clear():
    with pytest.raises(ValueError, match="ndim=3"):
        L.Conv1D(2, 2)(rand(2, 3, 4, 5))
    with pytest.raises(ValueError, match="filters"):
        L.SeparableConv2D(0, 3)
    with pytest.raises(ValueError, match="output padding"):
        L.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    # An output_padding that conv2d cannot map back (as in TF).
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Conv2DBackpropInput"):
        L.Conv2DTranspose(2, (3, 2), strides=3, padding="same",
                          output_padding=0)(rand(1, 3, 4, 3))
    with pytest.raises(ValueError, match="dilation_rate"):
        L.SeparableConv2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="depth_multiplier"):
        L.DepthwiseConv2D(3, depth_multiplier=0)


# ---- models ---------------------------------------------------------

def image_model():
    inp = keras.Input((8, 8, 2))
    x = L.Rescaling(0.5)(inp)
    x = L.ZeroPadding2D(1)(x)
    x = L.SeparableConv2D(4, 3, activation="relu")(x)
    x = L.DepthwiseConv2D(3, padding="same")(x)
    x = L.Conv2DTranspose(3, 2, strides=2)(x)
    x = L.Cropping2D(4)(x)
    x = L.UpSampling2D(1)(x)
    x = L.GlobalAveragePooling2D()(x)
    a = L.Dense(2)(x)
    b = L.Dense(2)(x)
    out = L.Average()([L.Multiply()([a, b]), L.Subtract()([a, b])])
    return keras.Model(inp, out)


def test_save_load_weights_round_trip(tmp_path):
    tf.random.set_seed(3)
    a = image_model()
    x = rand(3, 8, 8, 2)
    path = tmp_path / "m.weights.h5"
    a.save_weights(path)
    tf.random.set_seed(4)
    b = image_model()
    b.load_weights(path)
    np.testing.assert_allclose(b(x).numpy(), a(x).numpy(), rtol=1e-6)


def test_small_models_train_with_fit():
    # Its own generator: the result must not depend on the tests run
    # before it.
    local = np.random.default_rng(7)
    tf.random.set_seed(0)
    x = local.standard_normal((64, 8, 8, 2)).astype(np.float32)
    y = x.mean(axis=(1, 2))[:, :2] * 3
    model = image_model()
    model.compile(optimizer=keras.optimizers.Nadam(0.03), loss="mse")
    hist = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    # About 0.25 over tf seeds 0-4.
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0], \
        hist.history["loss"]

    seq = local.standard_normal((64, 10, 3)).astype(np.float32)
    labels = (seq[:, :, 0].sum(1) > 0).astype(np.uint8)
    norm = L.Normalization()
    norm.adapt(seq.reshape(-1, 3))
    model = keras.Sequential([
        keras.Input((10, 3)), norm,
        L.Conv1D(8, 3, padding="causal", activation="relu"),
        L.MaxPooling1D(2), L.TimeDistributed(L.Dense(4)),
        L.GlobalAveragePooling1D(), L.Dense(2)])
    model.compile(optimizer=keras.optimizers.AdamW(0.02),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True),
                  metrics=["accuracy",
                           keras.metrics.SparseTopKCategoricalAccuracy(k=1)])
    hist = model.fit(seq, labels, epochs=10, batch_size=16, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    assert hist.history["accuracy"][-1] > 0.7
