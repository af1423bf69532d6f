"""tf.image basics, composed from tfmini ops (gather, einsum, elementwise),
so they trace inside tf.function and differentiate. Images are [h, w, c]
or batches [b, h, w, c], as TF."""
import enum

import numpy as np

from .. import dtypes as _dtypes

__all__ = ["ResizeMethod", "resize", "flip_left_right", "flip_up_down",
           "random_flip_left_right", "random_flip_up_down", "central_crop",
           "crop_to_bounding_box", "pad_to_bounding_box",
           "resize_with_crop_or_pad", "convert_image_dtype",
           "adjust_brightness", "adjust_contrast",
           "per_image_standardization", "rgb_to_grayscale",
           "grayscale_to_rgb", "random_brightness", "random_contrast"]


def _tf():
    import tfmini
    return tfmini


class ResizeMethod(str, enum.Enum):
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def _image(image, what):
    tf = _tf()
    image = tf.convert_to_tensor(image)
    rank = len(image.shape)
    if rank not in (3, 4):
        raise ValueError(f"tf.image.{what}: 'image' must have rank 3 or 4 "
                         f"([h, w, c] or [b, h, w, c]), got shape "
                         f"{list(image.shape)}")
    for d in image.shape[-3:]:
        if d is None:
            raise ValueError(f"tf.image.{what}: tfmini needs the image's "
                             f"height, width and channels known, got "
                             f"{list(image.shape)}")
    return image, rank == 3


def _bilinear_matrix(in_size, out_size):
    """TF2's half-pixel-centre bilinear weights (resize_bilinear_op.cc,
    HalfPixelScaler): src = (i + 0.5) * in/out - 0.5, lower =
    max(floor(src), 0), upper = min(ceil(src), in - 1),
    lerp = src - floor(src)."""
    m = np.zeros((out_size, in_size), np.float64)
    scale = in_size / out_size
    for i in range(out_size):
        src = (i + 0.5) * scale - 0.5
        f = np.floor(src)
        lo = int(max(f, 0))
        hi = int(min(np.ceil(src), in_size - 1))
        lerp = src - f
        m[i, lo] += 1 - lerp
        m[i, hi] += lerp
    return m.astype(np.float32)


def _nearest_index(in_size, out_size):
    """TF2's half-pixel nearest: min(floor((i + 0.5) * in/out), in - 1)."""
    scale = in_size / out_size
    return np.minimum(np.floor((np.arange(out_size) + 0.5) * scale),
                      in_size - 1).astype(np.int32)


def resize(images, size, method=ResizeMethod.BILINEAR,
           preserve_aspect_ratio=False, antialias=False, name=None):
    """tf.image.resize (TF2 semantics: half-pixel centres). Bilinear gives
    float32; nearest keeps the dtype, as TF."""
    tf = _tf()
    images, single = _image(images, "resize")
    method = ResizeMethod(method) if not isinstance(method, ResizeMethod) \
        else method
    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR):
        raise NotImplementedError(f"tf.image.resize: method {method.value!r}"
                                  f" is not in tfmini yet (bilinear and "
                                  f"nearest are)")
    if antialias:
        raise NotImplementedError("tf.image.resize: antialias=True is not "
                                  "in tfmini yet")
    size = [int(s) for s in (size.numpy() if hasattr(size, "numpy")
                             else size)]
    if len(size) != 2 or min(size) <= 0:
        raise ValueError(f"tf.image.resize: size must be 2 positive "
                         f"integers [new_height, new_width], got {size}")
    h, w = images.shape[-3], images.shape[-2]
    if preserve_aspect_ratio:
        scale = min(size[0] / h, size[1] / w)
        size = [max(int(round(h * scale)), 1), max(int(round(w * scale)), 1)]
    x = images if not single else tf.expand_dims(images, 0)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        x = tf.gather(x, _nearest_index(h, size[0]), axis=1)
        x = tf.gather(x, _nearest_index(w, size[1]), axis=2)
    else:
        if not x.dtype.is_floating or x.dtype != _dtypes.float32:
            x = tf.cast(x, _dtypes.float32)
        x = tf.einsum("oh,bhwc->bowc", _bilinear_matrix(h, size[0]), x)
        x = tf.einsum("pw,bowc->bopc", _bilinear_matrix(w, size[1]), x)
    return x[0] if single else x


def _flip(image, axis_from_end, what):
    tf = _tf()
    image, single = _image(image, what)
    return tf.reverse(image, [len(image.shape) - axis_from_end])


def flip_left_right(image):
    return _flip(image, 2, "flip_left_right")


def flip_up_down(image):
    return _flip(image, 3, "flip_up_down")


def _random_flip(image, axis_from_end, seed, what):
    """One coin for an image, one per image for a batch (TF's rule)."""
    tf = _tf()
    image, single = _image(image, what)
    flipped = tf.reverse(image, [len(image.shape) - axis_from_end])
    if single:
        coin = tf.random.uniform([], seed=seed) < 0.5
        return tf.where(coin, flipped, image)
    coin = tf.random.uniform([image.shape[0], 1, 1, 1], seed=seed) < 0.5
    return tf.where(coin, flipped, image)


def random_flip_left_right(image, seed=None):
    return _random_flip(image, 2, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    return _random_flip(image, 3, seed, "random_flip_up_down")


def crop_to_bounding_box(image, offset_height, offset_width, target_height,
                         target_width):
    image, single = _image(image, "crop_to_bounding_box")
    h, w = image.shape[-3], image.shape[-2]
    oh, ow, th, tw = (int(v) for v in (offset_height, offset_width,
                                       target_height, target_width))
    if oh < 0 or ow < 0:
        raise ValueError("offset_height and offset_width must be >= 0")
    if th <= 0 or tw <= 0:
        raise ValueError("target_height and target_width must be > 0")
    if oh + th > h or ow + tw > w:
        raise ValueError(
            f"crop_to_bounding_box: the box [{oh}:{oh + th}, {ow}:{ow + tw}]"
            f" is outside the image of height {h} and width {w}")
    return image[..., oh:oh + th, ow:ow + tw, :]


def pad_to_bounding_box(image, offset_height, offset_width, target_height,
                        target_width):
    tf = _tf()
    image, single = _image(image, "pad_to_bounding_box")
    h, w = image.shape[-3], image.shape[-2]
    oh, ow, th, tw = (int(v) for v in (offset_height, offset_width,
                                       target_height, target_width))
    after_h, after_w = th - oh - h, tw - ow - w
    if oh < 0 or ow < 0:
        raise ValueError("offset_height and offset_width must be >= 0")
    if after_h < 0 or after_w < 0:
        raise ValueError(
            f"pad_to_bounding_box: an image of height {h} and width {w} at "
            f"offset ({oh}, {ow}) does not fit in {th} x {tw}")
    pads = [[oh, after_h], [ow, after_w], [0, 0]]
    return tf.pad(image, pads if single else [[0, 0]] + pads)


def resize_with_crop_or_pad(image, target_height, target_width):
    """Crops or pads (centred, zeros) to the target size, TF's offsets."""
    image, _ = _image(image, "resize_with_crop_or_pad")
    h, w = image.shape[-3], image.shape[-2]
    th, tw = int(target_height), int(target_width)
    if th <= 0 or tw <= 0:
        raise ValueError("target_height and target_width must be > 0")
    dw, dh = tw - w, th - h
    cropped = crop_to_bounding_box(image, max(-dh // 2, 0),
                                   max(-dw // 2, 0), min(th, h), min(tw, w))
    return pad_to_bounding_box(cropped, max(dh // 2, 0), max(dw // 2, 0),
                               th, tw)


def central_crop(image, central_fraction):
    image, _ = _image(image, "central_crop")
    f = float(central_fraction)
    if f <= 0.0 or f > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    if f == 1.0:
        return image
    h, w = image.shape[-3], image.shape[-2]
    top = int((h - h * f) / 2)
    left = int((w - w * f) / 2)
    return image[..., top:h - top, left:w - left, :]


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """TF's rules: floats are in [0, 1], integers in [0, MAX]; int to int
    shifts by the ratio of (MAX + 1)s, float to int scales by MAX + 0.5 and
    truncates, int to float scales by 1 / MAX; float to float casts."""
    tf = _tf()
    image = tf.convert_to_tensor(image)
    dtype = _dtypes.as_dtype(dtype)
    src = image.dtype
    for d in (src, dtype):
        if not (d.is_floating or d.is_integer):
            raise AttributeError(f"convert_image_dtype: {d.name} is not an "
                                 f"image dtype (integer or floating)")
    if src == dtype:
        return tf.identity(image)
    cast = tf.saturate_cast if saturate else tf.cast
    if src.is_integer and dtype.is_integer:
        if src.max > dtype.max:
            scale = (src.max + 1) // (dtype.max + 1)
            return cast(image // tf.constant(scale, src), dtype)
        scale = (dtype.max + 1) // (src.max + 1)
        return cast(image, dtype) * tf.constant(scale, dtype)
    if src.is_floating and dtype.is_floating:
        return tf.cast(image, dtype)
    if src.is_integer:
        return tf.cast(image, dtype) * tf.constant(1.0 / src.max, dtype)
    return cast(image * tf.constant(dtype.max + 0.5, src), dtype)


def adjust_brightness(image, delta):
    tf = _tf()
    image = tf.convert_to_tensor(image)
    orig = image.dtype
    x = image if orig.is_floating else convert_image_dtype(image,
                                                           _dtypes.float32)
    x = x + tf.cast(delta, x.dtype)
    return x if orig.is_floating else convert_image_dtype(x, orig,
                                                          saturate=True)


def adjust_contrast(images, contrast_factor):
    """(x - mean) * factor + mean, the mean per image and channel."""
    tf = _tf()
    images, _ = _image(images, "adjust_contrast")
    orig = images.dtype
    x = images if orig.is_floating else convert_image_dtype(images,
                                                            _dtypes.float32)
    mean = tf.reduce_mean(x, axis=[-3, -2], keepdims=True)
    x = (x - mean) * tf.cast(contrast_factor, x.dtype) + mean
    return x if orig.is_floating else convert_image_dtype(x, orig,
                                                          saturate=True)


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1/sqrt(N)) over each image's N values;
    integer images are cast (not scaled) to float32, as TF."""
    tf = _tf()
    image, _ = _image(image, "per_image_standardization")
    if not image.dtype.is_floating:
        image = tf.cast(image, _dtypes.float32)
    n = int(np.prod(image.shape[-3:]))
    axes = [-1, -2, -3]
    mean = tf.reduce_mean(image, axis=axes, keepdims=True)
    std = tf.sqrt(tf.reduce_mean(tf.square(image - mean), axis=axes,
                                 keepdims=True))
    floor = tf.constant(1.0 / np.sqrt(n), image.dtype)
    return (image - mean) / tf.maximum(std, floor)


def rgb_to_grayscale(images, name=None):
    tf = _tf()
    images = tf.convert_to_tensor(images)
    if images.shape[-1] != 3:
        raise ValueError(f"rgb_to_grayscale: the last dimension must be 3 "
                         f"(RGB), got shape {list(images.shape)}")
    orig = images.dtype
    x = convert_image_dtype(images, _dtypes.float32)
    w = tf.constant([[0.2989], [0.5870], [0.1140]], _dtypes.float32)
    gray = tf.tensordot(x, w, axes=[[len(images.shape) - 1], [0]])
    return convert_image_dtype(gray, orig)


def grayscale_to_rgb(images, name=None):
    tf = _tf()
    images = tf.convert_to_tensor(images)
    if images.shape[-1] != 1:
        raise ValueError(f"grayscale_to_rgb: the last dimension must be 1, "
                         f"got shape {list(images.shape)}")
    return tf.concat([images] * 3, axis=-1)


def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta drawn from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    tf = _tf()
    delta = tf.random.uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor drawn from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    tf = _tf()
    factor = tf.random.uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)
