"""tf.image against NumPy references of TF's documented math (TF2's
half-pixel-centre resize, convert_image_dtype's scaling rules)."""
import numpy as np
import pytest

import tfmini as tf


def _ref_bilinear(img, oh, ow):
    """Pixel by pixel, resize_bilinear_op.cc with half_pixel_centers."""
    h, w, c = img.shape
    out = np.zeros((oh, ow, c))

    def coord(i, n_in, n_out):
        src = (i + 0.5) * n_in / n_out - 0.5
        f = np.floor(src)
        return int(max(f, 0)), int(min(np.ceil(src), n_in - 1)), src - f
    for y in range(oh):
        y0, y1, ly = coord(y, h, oh)
        for x in range(ow):
            x0, x1, lx = coord(x, w, ow)
            top = img[y0, x0] + (img[y0, x1] - img[y0, x0]) * lx
            bot = img[y1, x0] + (img[y1, x1] - img[y1, x0]) * lx
            out[y, x] = top + (bot - top) * ly
    return out


def test_resize_bilinear_known_values_and_reference():
    row = tf.constant([[[0.0], [1.0]]])              # 1 x 2 x 1
    out = tf.image.resize(row, [1, 4])
    np.testing.assert_allclose(out.numpy()[0, :, 0], [0, .25, .75, 1])
    rng = np.random.default_rng(0)
    img = rng.random((5, 7, 3)).astype(np.float32)
    for oh, ow in [(3, 4), (9, 13), (5, 7), (1, 1), (10, 3)]:
        got = tf.image.resize(img, [oh, ow]).numpy()
        np.testing.assert_allclose(got, _ref_bilinear(img, oh, ow),
                                   rtol=1e-5, atol=1e-6)
    batch = tf.image.resize(np.stack([img, img * 2]), [4, 4])
    assert batch.shape == (2, 4, 4, 3) and batch.dtype == tf.float32
    np.testing.assert_allclose(batch.numpy()[1], 2 * batch.numpy()[0],
                               rtol=1e-5)
    u8 = tf.image.resize(np.uint8([[[0], [255]]]), [1, 4])
    assert u8.dtype == tf.float32                       # as TF


def test_resize_nearest_half_pixel():
    x = np.arange(4, dtype=np.int32).reshape(1, 4, 1) + 1   # [1,2,3,4]
    out = tf.image.resize(x, [1, 2], method="nearest")
    assert out.dtype == tf.int32                         # keeps the dtype
    np.testing.assert_array_equal(out.numpy()[0, :, 0], [2, 4])
    up = tf.image.resize(x, [1, 8], method=tf.image.ResizeMethod.
                         NEAREST_NEIGHBOR)
    np.testing.assert_array_equal(up.numpy()[0, :, 0],
                                  [1, 1, 2, 2, 3, 3, 4, 4])
    with pytest.raises(NotImplementedError, match="bicubic"):
        tf.image.resize(x, [2, 2], method="bicubic")
    with pytest.raises(ValueError, match="rank 3 or 4"):
        tf.image.resize(np.zeros((4, 4)), [2, 2])


def test_resize_traces_and_differentiates():
    img = tf.Variable(np.random.default_rng(1).random((1, 4, 4, 1)),
                      dtype=tf.float32)

    @tf.function
    def f():
        with tf.GradientTape() as t:
            y = tf.reduce_sum(tf.image.resize(img, [8, 8]))
        return y, t.gradient(y, img)
    y, g = f()
    # Every input pixel's weights sum to (8/4)^2 when upsampling by 2.
    np.testing.assert_allclose(g.numpy(), np.full((1, 4, 4, 1), 4.0),
                               rtol=1e-5)
    np.testing.assert_allclose(y.numpy(), img.numpy().sum() * 4, rtol=1e-5)


def test_flips_and_crops():
    img = np.arange(2 * 4 * 6 * 3).reshape(2, 4, 6, 3).astype(np.float32)
    np.testing.assert_array_equal(tf.image.flip_left_right(img).numpy(),
                                  img[:, :, ::-1])
    np.testing.assert_array_equal(tf.image.flip_up_down(img[0]).numpy(),
                                  img[0, ::-1])
    np.testing.assert_array_equal(
        tf.image.crop_to_bounding_box(img, 1, 2, 2, 3).numpy(),
        img[:, 1:3, 2:5])
    padded = tf.image.pad_to_bounding_box(img[0], 1, 2, 7, 9).numpy()
    assert padded.shape == (7, 9, 3)
    np.testing.assert_array_equal(padded[1:5, 2:8], img[0])
    assert padded.sum() == img[0].sum()
    with pytest.raises(ValueError):
        tf.image.crop_to_bounding_box(img, 3, 0, 2, 2)
    with pytest.raises(ValueError):
        tf.image.pad_to_bounding_box(img, 0, 0, 3, 3)
    # TF's offsets: crop (-diff) // 2, pad diff // 2.
    r = tf.image.resize_with_crop_or_pad(img[0], 3, 9).numpy()
    ref = np.zeros((3, 9, 3), np.float32)
    ref[:, 1:7] = img[0, 0:3]
    np.testing.assert_array_equal(r, ref)
    # central_crop: start = int((h - h * f) / 2)
    c = tf.image.central_crop(img[0], 0.5).numpy()
    np.testing.assert_array_equal(c, img[0, 1:3, 1:5])
    with pytest.raises(ValueError):
        tf.image.central_crop(img, 0.0)


def test_random_flip_seeded_per_image():
    img = np.arange(64 * 2 * 2).reshape(64, 2, 2, 1).astype(np.float32)
    tf.random.set_seed(3)
    out = tf.image.random_flip_left_right(img, seed=5).numpy()
    flipped = [np.array_equal(o, i[:, ::-1]) for o, i in zip(out, img)]
    kept = [np.array_equal(o, i) for o, i in zip(out, img)]
    assert all(f or k for f, k in zip(flipped, kept))
    assert 10 < sum(flipped) < 54        # one coin per image
    tf.random.set_seed(3)
    again = tf.image.random_flip_left_right(img, seed=5).numpy()
    np.testing.assert_array_equal(out, again)


def test_convert_image_dtype_rules():
    u8 = np.array([0, 1, 127, 255], np.uint8)
    f = tf.image.convert_image_dtype(u8, tf.float32).numpy()
    np.testing.assert_allclose(f, u8 / 255.0, rtol=1e-6)
    back = tf.image.convert_image_dtype(
        tf.constant([0.0, 0.5, 1.0, 1.2, -0.1]), tf.uint8, saturate=True)
    # scale by 255.5 and truncate; saturate clips
    np.testing.assert_array_equal(back.numpy(), [0, 127, 255, 255, 0])
    i16 = tf.image.convert_image_dtype(u8, tf.int16).numpy()
    np.testing.assert_array_equal(i16, u8.astype(np.int16) * 128)
    down = tf.image.convert_image_dtype(np.int32([2 ** 31 - 1, 2 ** 24]),
                                        tf.uint8).numpy()
    np.testing.assert_array_equal(down, [255, 2])     # // 2**23
    same = tf.image.convert_image_dtype(u8, tf.uint8)
    np.testing.assert_array_equal(same.numpy(), u8)


def test_adjustments_and_standardization():
    rng = np.random.default_rng(2)
    img = rng.random((2, 3, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(
        tf.image.adjust_brightness(img, 0.25).numpy(), img + 0.25, rtol=1e-6)
    mean = img.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(
        tf.image.adjust_contrast(img, 2.0).numpy(),
        (img - mean) * 2 + mean, rtol=1e-5, atol=1e-6)
    u8 = (img * 255).astype(np.uint8)
    b = tf.image.adjust_brightness(u8, 0.5)
    assert b.dtype == tf.uint8
    ref = np.clip(u8 / 255.0 + 0.5, 0, 1) * 255.5
    np.testing.assert_array_equal(b.numpy(), np.minimum(ref, 255).astype(
        np.uint8))
    s = tf.image.per_image_standardization(img).numpy()
    m = img.mean(axis=(1, 2, 3), keepdims=True)
    sd = np.maximum(img.std(axis=(1, 2, 3), keepdims=True),
                    1 / np.sqrt(36))
    np.testing.assert_allclose(s, (img - m) / sd, rtol=1e-4, atol=1e-5)
    flat = tf.image.per_image_standardization(np.full((2, 2, 1), 3, np.uint8))
    assert flat.dtype == tf.float32
    np.testing.assert_array_equal(flat.numpy(), np.zeros((2, 2, 1)))
    g = tf.image.rgb_to_grayscale(img).numpy()
    np.testing.assert_allclose(
        g[..., 0], img @ np.array([0.2989, 0.5870, 0.1140]), rtol=1e-5)
    assert tf.image.grayscale_to_rgb(g).shape == (2, 3, 4, 3)


def test_random_brightness_and_contrast_stay_in_range():
    img = np.random.default_rng(4).random((4, 4, 3)).astype(np.float32)
    for _ in range(5):
        d = tf.image.random_brightness(img, 0.2).numpy() - img
        assert np.allclose(d, d.flat[0], atol=1e-6)     # one delta
        assert -0.2 <= d.flat[0] <= 0.2
    out = tf.image.random_contrast(img, 0.5, 1.5).numpy()
    mean = img.mean(axis=(0, 1))
    factor = (out - mean) / (img - mean)
    assert 0.5 <= factor.mean() <= 1.5
    with pytest.raises(ValueError):
        tf.image.random_contrast(img, 1.0, 0.5)
