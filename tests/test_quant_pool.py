"""Int8 MaxPool, AvgPool and Softmax (QuantizedMaxPool, QuantizedAvgPool,
QuantizedSoftmax) against NumPy references of TF Lite's formulas: pooling
keeps the input's scale and zero point (AvgPool rounds half away from
zero over the window's valid elements), Softmax gives scale 1/256 and
zero point -128."""
import numpy as np
import pytest

import tfmini as tf

from quant_util import call as _call


def _windows(x, k, s, same):
    """(oy, ox, the window's valid part x[b, y0:y1, x0:x1, :])."""
    b, h, w, c = x.shape
    if same:
        oh, ow = -(-h // s[0]), -(-w // s[1])
        pt = max((oh - 1) * s[0] + k[0] - h, 0) // 2
        pl = max((ow - 1) * s[1] + k[1] - w, 0) // 2
    else:
        oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
        pt = pl = 0
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * s[0] - pt, ox * s[1] - pl
            yield oy, ox, x[:, max(y0, 0):min(y0 + k[0], h),
                            max(x0, 0):min(x0 + k[1], w), :]


def _pool_ref(x, k, s, same, is_max):
    outs = {}
    for oy, ox, win in _windows(x, k, s, same):
        flat = win.reshape(win.shape[0], -1, win.shape[3]).astype(np.int64)
        if is_max:
            v = flat.max(axis=1)
        else:
            n = flat.shape[1]
            acc = flat.sum(axis=1)
            # TF Lite: (acc +- n/2) / n, C division (toward zero)
            v = np.where(acc > 0, (acc + n // 2) // n,
                         -((-acc + n // 2) // n))
        outs[oy, ox] = v
    oh = max(k[0] for k in outs) + 1
    ow = max(k[1] for k in outs) + 1
    y = np.zeros((x.shape[0], oh, ow, x.shape[3]), np.int8)
    for (oy, ox), v in outs.items():
        y[:, oy, ox, :] = v
    return y


@pytest.mark.parametrize("op", ["QuantizedMaxPool", "QuantizedAvgPool"])
@pytest.mark.parametrize("k,s,same", [((2, 2), (2, 2), False),
                                      ((3, 3), (1, 1), True),
                                      ((3, 2), (2, 1), True),
                                      ((2, 3), (3, 2), False),
                                      ((1, 1), (1, 1), False)])
def test_int8_pool_matches_tflite_formula(op, k, s, same):
    rng = np.random.default_rng(sum(k) + sum(s))
    x = rng.integers(-128, 128, (2, 7, 9, 5)).astype(np.int8)
    got = _call(op, (x,), ints=s + k, i=(int(same),))
    want = _pool_ref(x, k, s, same, op == "QuantizedMaxPool")
    assert got.dtype == np.int8 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_int8_avg_pool_rounds_half_away_from_zero():
    x = np.array([1, 2, -1, -2], np.int8).reshape(1, 2, 2, 1)
    # means 1.5 and -1.5 over two valid elements
    got = _call("QuantizedAvgPool", (x,), ints=(1, 1, 1, 2), i=(0,))
    np.testing.assert_array_equal(got.ravel(), [2, -2])


def _softmax_ref(x, scale, beta):
    d = x.max(axis=-1, keepdims=True).astype(np.int64) - x
    e = np.exp(-beta * scale * d)
    v = e / e.sum(axis=-1, keepdims=True) * 256
    return np.clip(np.floor(v + 0.5) - 128, -128, 127)


@pytest.mark.parametrize("scale,beta,shape", [
    (0.1, 1.0, (4, 10)), (0.02, 1.0, (3, 2, 17)), (0.5, 0.5, (6, 3)),
    (1.0, 1.0, (2, 1)), (0.05, 2.0, (1, 300))])
def test_int8_softmax_matches_tflite_formula(scale, beta, shape):
    rng = np.random.default_rng(int(scale * 100))
    x = rng.integers(-128, 128, shape).astype(np.int8)
    got = _call("QuantizedSoftmax", (x,), f=(scale, beta))
    want = _softmax_ref(x, scale, beta)
    assert got.dtype == np.int8 and got.shape == x.shape
    # float rounding may land one step off exactly at a half
    diff = np.abs(got.astype(int) - want)
    assert diff.max() <= 1 and np.mean(diff == 0) > 0.99
    # dequantized (scale 1/256, zero point -128) it is the softmax
    real = (got.astype(np.float64) + 128) / 256
    xf = x.astype(np.float64) * scale * beta
    sm = np.exp(xf - xf.max(-1, keepdims=True))
    sm /= sm.sum(-1, keepdims=True)
    assert np.abs(real - sm).max() <= 1 / 256 + 1e-9


def test_int8_softmax_edges():
    # one class: probability 1, which saturates at 127 (255/256)
    got = _call("QuantizedSoftmax", (np.full((2, 1), 5, np.int8),),
                f=(0.1, 1.0))
    np.testing.assert_array_equal(got, [[127], [127]])
    # all equal: 1/C each
    got = _call("QuantizedSoftmax", (np.zeros((1, 4), np.int8),),
                f=(0.1, 1.0))
    np.testing.assert_array_equal(got, [[-64] * 4])
    # empty
    assert _call("QuantizedSoftmax", (np.zeros((0, 3), np.int8),),
                 f=(0.1, 1.0)).shape == (0, 3)


def test_int8_pool_bad_inputs():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="QuantizedMaxPool: padding must be VALID or "
                             "SAME"):
        _call("QuantizedMaxPool", (np.zeros((1, 4, 4, 1), np.int8),),
              ints=(1, 1, 2, 2), i=(2,))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="QuantizedAvgPool"):
        _call("QuantizedAvgPool", (np.zeros((1, 2, 2, 1), np.int8),),
              ints=(1, 1, 3, 3), i=(0,))


def test_int8_softmax_matches_tflite():
    """tests/data/tflite_softmax_int8.npz: the int8 input and output of
    the SOFTMAX of a full-int8 model converted and run by TF 2.21's
    tf.lite (Dense(10) then Softmax, 200 rows; input scale stored)."""
    import pathlib
    d = np.load(pathlib.Path(__file__).parent / "data" /
                "tflite_softmax_int8.npz")
    got = _call("QuantizedSoftmax", (d["x"],), f=(float(d["scale"]), 1.0))
    np.testing.assert_array_equal(got, d["y"])


@pytest.mark.parametrize("name,op,k,s,same", [
    ("avg", "QuantizedAvgPool", (3, 3), (2, 2), 1),
    ("max", "QuantizedMaxPool", (3, 2), (2, 1), 1),
    ("avgv", "QuantizedAvgPool", (2, 2), (2, 2), 0)])
def test_int8_pool_matches_tflite(name, op, k, s, same):
    """tests/data/tflite_pool_int8.npz: int8 inputs and outputs of
    AVERAGE_POOL_2D and MAX_POOL_2D in full-int8 models converted and run
    by TF 2.21's tf.lite (Conv2D(4, 1) then the pool, 10 rows each)."""
    import pathlib
    d = np.load(pathlib.Path(__file__).parent / "data" /
                "tflite_pool_int8.npz")
    got = _call(op, (d[name + "_x"],), ints=s + k, i=(same,))
    np.testing.assert_array_equal(got, d[name + "_y"])
