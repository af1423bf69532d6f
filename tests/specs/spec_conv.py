"""OpSpecs for the conv family (csrc/ops/ops_conv.def), and the NumPy
references they are checked against (also used by tests/test_conv.py).

The references are written the direct way, one window offset at a time
over a padded input, with no im2col: an independent route to the same
numbers. Backprop references are the adjoints, written the same way."""
import numpy as np

import tfmini as tf
from tfmini.ops import conv_ops

from .opspec import FLOATS, OpSpec


# ---- NumPy references ------------------------------------------------
def pads_1d(n, k, s, d, padding):
    """(out, pad_before, pad_after) of one spatial dim, TF's arithmetic."""
    eff = (k - 1) * d + 1
    if padding == "SAME":
        out = -(-n // s)
        total = max((out - 1) * s + eff - n, 0)
        return out, total // 2, total - total // 2
    before, after = (0, 0) if padding == "VALID" else padding
    return (n + before + after - eff) // s + 1, before, after


def _geometry(x_shape, kh, kw, strides, padding, dilations):
    _, h, w, _ = x_shape
    (sh, sw), (dh, dw) = strides, dilations
    ph = padding if isinstance(padding, str) else padding[0]
    pw = padding if isinstance(padding, str) else padding[1]
    oh, pt, pb = pads_1d(h, kh, sh, dh, ph)
    ow, pl, pr = pads_1d(w, kw, sw, dw, pw)
    return oh, ow, ((0, 0), (pt, pb), (pl, pr), (0, 0))


def _window(i, d, s, out):
    """Rows of the padded input that window offset i reads."""
    return slice(i * d, i * d + (out - 1) * s + 1, s)


def np_conv2d(x, f, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """padding: "SAME", "VALID" or ((top, bottom), (left, right))."""
    kh, kw, _, o = f.shape
    oh, ow, pad = _geometry(x.shape, kh, kw, strides, padding, dilations)
    xp = np.pad(x, pad)
    y = np.zeros((x.shape[0], oh, ow, o), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, _window(i, dilations[0], strides[0], oh),
                       _window(j, dilations[1], strides[1], ow)]
            y += patch @ f[i, j]
    return y


def np_conv2d_backprop_input(x_shape, f, dy, strides=(1, 1),
                             padding="VALID", dilations=(1, 1)):
    kh, kw = f.shape[:2]
    oh, ow, pad = _geometry(x_shape, kh, kw, strides, padding, dilations)
    (pt, pb), (pl, pr) = pad[1], pad[2]
    n, h, w, c = x_shape
    dxp = np.zeros((n, h + pt + pb, w + pl + pr, c), dtype=dy.dtype)
    for i in range(kh):
        for j in range(kw):
            dxp[:, _window(i, dilations[0], strides[0], oh),
                _window(j, dilations[1], strides[1], ow)] += dy @ f[i, j].T
    return dxp[:, pt:pt + h, pl:pl + w]


def np_conv2d_backprop_filter(x, f_shape, dy, strides=(1, 1),
                              padding="VALID", dilations=(1, 1)):
    kh, kw = f_shape[:2]
    oh, ow, pad = _geometry(x.shape, kh, kw, strides, padding, dilations)
    xp = np.pad(x, pad)
    df = np.zeros(f_shape, dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, _window(i, dilations[0], strides[0], oh),
                       _window(j, dilations[1], strides[1], ow)]
            df[i, j] = np.einsum("nhwc,nhwo->co", patch, dy)
    return df


def np_depthwise(x, f, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """Depthwise conv: filter [kh, kw, c, m], output channel c * m + k."""
    kh, kw, c, m = f.shape
    oh, ow, pad = _geometry(x.shape, kh, kw, strides, padding, dilations)
    xp = np.pad(x, pad)
    y = np.zeros((x.shape[0], oh, ow, c, m), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, _window(i, dilations[0], strides[0], oh),
                       _window(j, dilations[1], strides[1], ow)]
            y += patch[..., None] * f[i, j]
    return y.reshape(x.shape[0], oh, ow, c * m)


def np_depthwise_backprop_input(x_shape, f, dy, strides=(1, 1),
                                padding="VALID", dilations=(1, 1)):
    kh, kw, c, m = f.shape
    oh, ow, pad = _geometry(x_shape, kh, kw, strides, padding, dilations)
    (pt, pb), (pl, pr) = pad[1], pad[2]
    n, h, w, _ = x_shape
    dy5 = dy.reshape(n, oh, ow, c, m)
    dxp = np.zeros((n, h + pt + pb, w + pl + pr, c), dtype=dy.dtype)
    for i in range(kh):
        for j in range(kw):
            dxp[:, _window(i, dilations[0], strides[0], oh),
                _window(j, dilations[1], strides[1], ow)] += (
                    dy5 * f[i, j]).sum(-1)
    return dxp[:, pt:pt + h, pl:pl + w]


def np_depthwise_backprop_filter(x, f_shape, dy, strides=(1, 1),
                                 padding="VALID", dilations=(1, 1)):
    kh, kw, c, m = f_shape
    oh, ow, pad = _geometry(x.shape, kh, kw, strides, padding, dilations)
    xp = np.pad(x, pad)
    dy5 = dy.reshape(x.shape[0], oh, ow, c, m)
    df = np.zeros(f_shape, dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, _window(i, dilations[0], strides[0], oh),
                       _window(j, dilations[1], strides[1], ow)]
            df[i, j] = np.einsum("nhwc,nhwcm->cm", patch, dy5)
    return df


def _pool_windows(x, ksize, strides, padding):
    """Yields (oh, ow, rows, cols) of each window, clipped to x."""
    (kh, kw), (sh, sw) = ksize, strides
    oh, ow, pad = _geometry(x.shape, kh, kw, strides, padding, (1, 1))
    pt, pl = pad[1][0], pad[2][0]
    h, w = x.shape[1:3]
    for a in range(oh):
        for b in range(ow):
            h0, w0 = a * sh - pt, b * sw - pl
            yield (a, b, slice(max(h0, 0), min(h0 + kh, h)),
                   slice(max(w0, 0), min(w0 + kw, w)))


def _pool_out(x, ksize, strides, padding):
    oh, ow, _ = _geometry(x.shape, ksize[0], ksize[1], strides, padding,
                          (1, 1))
    return np.zeros((x.shape[0], oh, ow, x.shape[3]), dtype=x.dtype)


def np_max_pool(x, ksize, strides, padding):
    y = _pool_out(x, ksize, strides, padding)
    for a, b, r, c in _pool_windows(x, ksize, strides, padding):
        y[:, a, b] = x[:, r, c].max(axis=(1, 2))
    return y


def np_avg_pool(x, ksize, strides, padding):
    y = _pool_out(x, ksize, strides, padding)
    for a, b, r, c in _pool_windows(x, ksize, strides, padding):
        y[:, a, b] = x[:, r, c].mean(axis=(1, 2))
    return y


def np_max_pool_grad(x, g, ksize, strides, padding):
    """Each gradient to the first maximum of its window (row-major)."""
    dx = np.zeros_like(x)
    for a, b, r, c in _pool_windows(x, ksize, strides, padding):
        win = x[:, r, c]                          # n, wh, ww, ch
        n, wh, ww, ch = win.shape
        first = win.reshape(n, wh * ww, ch).argmax(axis=1)
        for i in range(n):
            for k in range(ch):
                ih, iw = divmod(first[i, k], ww)
                dx[i, r.start + ih, c.start + iw, k] += g[i, a, b, k]
    return dx


def np_max_pool_grad_grad(x, gg, ksize, strides, padding):
    """The gradient of the input gradient, gathered at each argmax."""
    y = _pool_out(x, ksize, strides, padding)
    for a, b, r, c in _pool_windows(x, ksize, strides, padding):
        win, gwin = x[:, r, c], gg[:, r, c]
        n, wh, ww, ch = win.shape
        first = win.reshape(n, wh * ww, ch).argmax(axis=1)
        y[:, a, b] = np.take_along_axis(
            gwin.reshape(n, wh * ww, ch), first[:, None], axis=1)[:, 0]
    return y


def np_avg_pool_grad(x_shape, g, ksize, strides, padding):
    x = np.zeros(x_shape, dtype=g.dtype)
    dx = np.zeros_like(x)
    for a, b, r, c in _pool_windows(x, ksize, strides, padding):
        count = (r.stop - r.start) * (c.stop - c.start)
        dx[:, r, c] += g[:, a, b][:, None, None] / count
    return dx


# ---- tfmini's side --------------------------------------------------
def tf_padding(padding):
    """A reference padding as tf.nn.conv2d takes it (NHWC pairs)."""
    if isinstance(padding, str):
        return padding
    return [[0, 0], list(padding[0]), list(padding[1]), [0, 0]]


def tf_conv_three(case, x, f, dy):
    """Conv2D and its input and filter gradients of one case (x shape,
    filter shape, strides, padding, dilations) through tfmini, as
    tensors of the operands' dtype."""
    xs, fs, strides, padding, dil = case
    pad = tf_padding(padding)
    y = tf.nn.conv2d(x, f, strides, pad, dilations=dil)
    dx = conv_ops.conv2d_backprop_input(list(xs), f, dy, strides, pad,
                                        dilations=dil)
    df = conv_ops.conv2d_backprop_filter(x, list(fs), dy, strides, pad,
                                         dilations=dil)
    return y, dx, df


# ---- the specs -------------------------------------------------------


def _out_shape(x_shape, f_shape, strides, padding, dilations):
    oh, ow, _ = _geometry(x_shape, f_shape[0], f_shape[1], strides, padding,
                          dilations)
    return (x_shape[0], oh, ow, f_shape[3])


CONV_CASES = [
    # (x shape, filter shape, strides, padding, dilations)
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    ((2, 7, 6, 2), (3, 2, 2, 3), (2, 2), "SAME", (1, 1)),
    ((1, 8, 7, 2), (3, 3, 2, 2), (2, 3), "VALID", (1, 1)),
    ((2, 7, 7, 1), (3, 3, 1, 2), (1, 1), "SAME", (2, 2)),
    ((1, 9, 8, 2), (2, 3, 2, 2), (1, 2), "VALID", (2, 1)),
    ((1, 5, 6, 2), (2, 2, 2, 3), (1, 1), ((1, 0), (2, 1)), (1, 1)),
    ((3, 4, 4, 5), (1, 1, 5, 3), (1, 1), "VALID", (1, 1)),
    ((0, 4, 4, 2), (3, 3, 2, 2), (1, 1), "SAME", (1, 1)),
]


def _case_name(case):
    xs, fs, s, p, d = case
    pad = p if isinstance(p, str) else "EXPLICIT"
    return f"{xs[1]}x{xs[2]}k{fs[0]}{fs[1]}s{s[0]}{s[1]}d{d[0]}{d[1]}{pad}"


def _conv_specs(case):
    xs, fs, s, p, d = case
    ys = _out_shape(xs, fs, s, p, d)
    tp, name = tf_padding(p), _case_name(case)
    kw = dict(strides=s, padding=p, dilations=d)
    return [
        OpSpec(f"conv2d-{name}",
               lambda x, f: tf.nn.conv2d(x, f, list(s), tp,
                                         dilations=list(d)),
               lambda x, f: np_conv2d(x, f, **kw),
               [(xs, fs)], FLOATS, grad=(0, 1), rtol=1e-4, atol=1e-5,
               ops=["Conv2D"], second_order=xs[0] > 0),
        OpSpec(f"conv2d_backprop_input-{name}",
               lambda f, dy: conv_ops.conv2d_backprop_input(
                   xs, f, dy, list(s), tp, dilations=list(d)),
               lambda f, dy: np_conv2d_backprop_input(xs, f, dy, **kw),
               [(fs, ys)], FLOATS, grad=(0, 1), rtol=1e-4, atol=1e-5,
               ops=["Conv2DBackpropInput"]),
        OpSpec(f"conv2d_backprop_filter-{name}",
               lambda x, dy: conv_ops.conv2d_backprop_filter(
                   x, fs, dy, list(s), tp, dilations=list(d)),
               lambda x, dy: np_conv2d_backprop_filter(x, fs, dy, **kw),
               [(xs, ys)], FLOATS, grad=(0, 1), rtol=1e-4, atol=1e-5,
               ops=["Conv2DBackpropFilter"]),
    ]


DEPTHWISE_CASES = [
    # (x shape, filter shape [kh, kw, in, multiplier], strides, padding,
    # dilations)
    ((2, 5, 5, 3), (3, 3, 3, 1), (1, 1), "SAME", (1, 1)),
    ((2, 7, 6, 2), (3, 2, 2, 2), (2, 2), "SAME", (1, 1)),
    ((1, 8, 7, 4), (3, 3, 4, 3), (2, 1), "VALID", (1, 1)),
    ((1, 7, 7, 2), (3, 3, 2, 1), (1, 1), "SAME", (2, 2)),
    ((1, 6, 8, 2), (2, 3, 2, 2), (1, 1), ((1, 0), (2, 1)), (1, 2)),
    ((0, 4, 4, 2), (3, 3, 2, 2), (1, 1), "SAME", (1, 1)),
]


def _depthwise_specs(case):
    xs, fs, s, p, d = case
    ys = _out_shape(xs, fs, s, p, d)
    ys = ys[:3] + (fs[2] * fs[3],)
    tp, name = tf_padding(p), _case_name(case)
    st = [1, s[0], s[1], 1]
    kw = dict(strides=s, padding=p, dilations=d)
    return [
        OpSpec(f"depthwise_conv2d-{name}m{fs[3]}",
               lambda x, f: tf.nn.depthwise_conv2d(x, f, st, tp,
                                                   dilations=list(d)),
               lambda x, f: np_depthwise(x, f, **kw),
               [(xs, fs)], FLOATS, grad=(0, 1), rtol=1e-4, atol=1e-5,
               ops=["DepthwiseConv2dNative"], second_order=xs[0] > 0),
        OpSpec(f"depthwise_backprop_input-{name}m{fs[3]}",
               lambda f, dy: tf.nn.depthwise_conv2d_backprop_input(
                   xs, f, dy, st, tp, dilations=list(d)),
               lambda f, dy: np_depthwise_backprop_input(xs, f, dy, **kw),
               [(fs, ys)], FLOATS, grad=(0, 1), rtol=1e-4, atol=1e-5,
               ops=["DepthwiseConv2dNativeBackpropInput"]),
        OpSpec(f"depthwise_backprop_filter-{name}m{fs[3]}",
               lambda x, dy: tf.nn.depthwise_conv2d_backprop_filter(
                   x, fs, dy, st, tp, dilations=list(d)),
               lambda x, dy: np_depthwise_backprop_filter(x, fs, dy, **kw),
               [(xs, ys)], FLOATS, grad=(0, 1), rtol=1e-4, atol=1e-5,
               ops=["DepthwiseConv2dNativeBackpropFilter"]),
    ]


POOL_CASES = [
    # (x shape, ksize, strides, padding)
    ((2, 6, 6, 3), (2, 2), (2, 2), "VALID"),
    ((1, 5, 7, 2), (3, 3), (2, 2), "SAME"),
    ((2, 5, 5, 1), (3, 2), (1, 1), "SAME"),
    ((1, 7, 6, 2), (3, 3), (2, 1), "VALID"),
]


def _pool_specs(case):
    xs, k, s, p = case
    name = f"{xs[1]}x{xs[2]}k{k[0]}{k[1]}s{s[0]}{s[1]}{p}"
    ys = _pool_out(np.zeros(xs), k, s, p).shape
    mp = lambda x: tf.nn.max_pool2d(x, list(k), list(s), p)  # noqa: E731
    return [
        OpSpec(f"max_pool2d-{name}", mp,
               lambda x: np_max_pool(x, k, s, p), [(xs,)], FLOATS,
               grad=(0,), ops=["MaxPool"], second_order=True),
        OpSpec(f"avg_pool2d-{name}",
               lambda x: tf.nn.avg_pool2d(x, list(k), list(s), p),
               lambda x: np_avg_pool(x, k, s, p), [(xs,)], FLOATS,
               grad=(0,), ops=["AvgPool"], second_order=True),
        OpSpec(f"max_pool_grad-{name}",
               lambda x, g: conv_ops._max_pool_grad(x, mp(x), g, k, s, p),
               lambda x, g: np_max_pool_grad(x, g, k, s, p),
               [(xs, ys)], FLOATS, grad=(1,), ops=["MaxPoolGrad"]),
        OpSpec(f"max_pool_grad_grad-{name}",
               lambda x, gg: conv_ops._max_pool_grad_grad(x, mp(x), gg, k,
                                                          s, p),
               lambda x, gg: np_max_pool_grad_grad(x, gg, k, s, p),
               [(xs, xs)], FLOATS, grad=(1,), ops=["MaxPoolGradGrad"]),
        OpSpec(f"avg_pool_grad-{name}",
               lambda x, g: conv_ops._avg_pool_grad(x, g, k, s, p),
               lambda x, g: np_avg_pool_grad(x.shape, g, k, s, p),
               [(xs, ys)], FLOATS, grad=(1,), ops=["AvgPoolGrad"]),
    ]


SPECS = ([s for case in CONV_CASES for s in _conv_specs(case)]
         + [s for case in DEPTHWISE_CASES for s in _depthwise_specs(case)]
         + [s for case in POOL_CASES for s in _pool_specs(case)])
