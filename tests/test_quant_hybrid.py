"""HybridConv2DPacked, the dynamic-range convolution (Note [Hybrid
convolution] in csrc/kernels/cpu/quant_hybrid.c): against a NumPy
reference of the same quantization steps, bit for bit (the integer part
is exact, and the float steps are the same float32 operations in the
same order), across channel counts, batches, strides, paddings,
dilations and activations; against the float convolution within the
quantization error; the direct VNNI conv against im2col and the VNNI
GEMM; the float path of CPUs without VNNI; the converter emitting it; a converted model
in the C runtime; and its errors."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini.lite._convert import pack_weights, quantize_weights

from quant_util import (OPS, build_c_predict, c_predict, call as _call,
                        lite_predict as _run)

ROOT = pathlib.Path(__file__).resolve().parent.parent
F32 = np.float32


# ---- the NumPy reference -------------------------------------------------

def _round_away(v):
    """tfm_qround_away in float32: clamp to +-1e6, add +-0.5, truncate."""
    v = np.minimum(v, F32(1e6))
    v = np.where(v >= F32(-1e6), v, F32(-1e6)).astype(F32)
    return np.trunc((v + np.where(v >= 0, F32(0.5), F32(-0.5))).astype(F32)
                    ).astype(np.int64)


def _quantize_image(x):
    """One image -> (uint8 values as int64, scale, zero point): the
    asymmetric range holding 0, in float32 steps."""
    lo = min(F32(0), x.min()) if x.size else F32(0)
    hi = max(F32(0), x.max()) if x.size else F32(0)
    s = F32(F32(hi - lo) / F32(255))
    if not (s > 0) or not np.isfinite(s):
        s = F32(1)
    zp = int(np.clip(_round_away(np.array(F32(-lo) / s, F32)), 0, 255))
    inv = F32(F32(1) / s)
    u = np.clip(_round_away((x * inv).astype(F32)) + zp, 0, 255)
    return u, s, zp


def _geometry(n, k, s, d, mode, pads):
    eff = (k - 1) * d + 1
    if mode == 1:
        out = -(-n // s)
        return out, max((out - 1) * s + eff - n, 0) // 2
    before, after = pads if mode == 2 else (0, 0)
    return (n + before + after - eff) // s + 1, before


def _reference(x, q, ws, bias, strides, dil, mode, pads, act):
    """The kernel's steps: each image quantized, sum (u - zp) w over the
    taps inside the image (a padding tap reads the zero point: 0), then
    float32 (v * s_img) * ws + bias, activation."""
    B, H, W, C = x.shape
    KH, KW, _, O = q.shape
    OH, pt = _geometry(H, KH, strides[0], dil[0], mode, pads[:2])
    OW, pl = _geometry(W, KW, strides[1], dil[1], mode, pads[2:])
    y = np.zeros((B, OH, OW, O), F32)
    w64 = q.astype(np.int64)
    for b in range(B):
        u, s, zp = _quantize_image(x[b])
        c = u - zp
        acc = np.zeros((OH, OW, O), np.int64)
        for i in range(KH):
            for j in range(KW):
                iy = np.arange(OH) * strides[0] + i * dil[0] - pt
                ix = np.arange(OW) * strides[1] + j * dil[1] - pl
                my = (iy >= 0) & (iy < H)
                mx = (ix >= 0) & (ix < W)
                tap = np.zeros((OH, OW, C), np.int64)
                tap[np.ix_(my, mx)] = c[np.ix_(iy[my], ix[mx])]
                acc += tap @ w64[i, j]
        f = (acc.astype(F32) * s).astype(F32) * ws
        if bias is not None:
            f = (f + bias).astype(F32)
        if act:
            f = np.where(f < 0, F32(0), f)
        if act == 2:
            f = np.where(f > 6, F32(6), f)
        y[b] = f
    return y


# ---- the op --------------------------------------------------------------

def _attrs(kh, kw, c, o, strides, dil, mode, pads, act):
    ints = tuple(strides) + tuple(dil) + (kh, kw, c, o) + \
        (tuple(pads) if mode == 2 else ())
    return dict(ints=ints, i=(mode, 0, 0, act))


def _hybrid(x, q, ws, bias, strides=(1, 1), dil=(1, 1), mode=1,
            pads=(0, 0, 0, 0), act=0):
    kh, kw, c, o = q.shape
    wp, cs = pack_weights(q.reshape(-1, o))
    ins = (x, wp, ws, cs) + (() if bias is None else (bias,))
    return _call("HybridConv2DPacked", ins,
                 **_attrs(kh, kw, c, o, strides, dil, mode, pads, act))


# (batch, h, w, c, kh, kw, out, strides, dilations, pad mode, pads)
_SHAPES = [
    (1, 8, 8, 1, 3, 3, 16, (1, 1), (1, 1), 1, None),
    (3, 4, 4, 16, 3, 3, 32, (1, 1), (1, 1), 1, None),
    (3, 9, 8, 3, 3, 3, 20, (2, 2), (1, 1), 1, None),
    (1, 7, 10, 4, 2, 3, 17, (1, 2), (1, 1), 0, None),
    (3, 9, 9, 17, 3, 3, 64, (1, 1), (2, 2), 0, None),
    (1, 6, 7, 17, 1, 1, 70, (1, 1), (1, 1), 1, None),
    (3, 5, 6, 16, 3, 2, 33, (2, 1), (1, 1), 2, (1, 0, 2, 1)),
    (1, 11, 5, 4, 5, 3, 9, (3, 2), (1, 2), 1, None),
    (0, 5, 5, 4, 3, 3, 8, (1, 1), (1, 1), 1, None),
    (3, 6, 6, 3, 3, 3, 130, (1, 1), (1, 1), 1, None),
]


def _case_inputs(n, shape):
    b, h, w, c, kh, kw, o = shape[:7]
    rng = np.random.default_rng(100 + n)
    # images of different ranges, some all positive (zero point 0), one
    # with a far outlier: each keeps its own scale
    x = rng.standard_normal((b, h, w, c)).astype(F32) * F32(3)
    if b > 1:
        x[1] = np.abs(x[1])
    if b > 2:
        x[2, 0, 0, 0] = 200
    wf = rng.standard_normal((kh, kw, c, o)).astype(F32) * F32(0.2)
    q, ws = quantize_weights(wf)
    bias = rng.standard_normal(o).astype(F32)
    return x, wf, q, ws, bias


def _cases():
    """[(name, HybridConv2DPacked's output)], each checked here against
    the NumPy reference, bit for bit."""
    out = []
    for n, shape in enumerate(_SHAPES):
        st, dil, mode, pads = shape[7:]
        pads = pads or (0, 0, 0, 0)
        x, _, q, ws, bias = _case_inputs(n, shape)
        for act in (0, 1, 2):
            for b in (bias, None) if act == 1 else (bias,):
                got = _hybrid(x, q, ws, b, st, dil, mode, pads, act)
                want = _reference(x, q, ws, b, st, dil, mode, pads, act)
                assert got.dtype == np.float32 and got.shape == want.shape
                np.testing.assert_array_equal(got, want,
                                              err_msg=f"{n} act {act}")
                out.append((f"{n}/{act}/{b is None}", got))
    return out


def test_hybrid_conv_equals_the_numpy_reference():
    if not _vnni():
        pytest.skip("no AVX512-VNNI: this CPU takes the float path "
                    "(tested below)")
    assert len(_cases()) == len(_SHAPES) * 4


_CHILD = ("import sys, numpy as np; sys.path.insert(0, %r); "
          "import test_quant_hybrid as t; "
          "np.savez(sys.argv[1], **{k.replace('/', '_'): v "
          "for k, v in t.%s()})")


def _child(env, case, tmp_path):
    f = tmp_path / "other.npz"
    r = subprocess.run([sys.executable, "-c",
                        _CHILD % (str(ROOT / "tests"), case), str(f)],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **env))
    assert r.returncode == 0, r.stderr[-2000:]
    return np.load(f)


def _vnni():
    import ctypes
    return bool(ctypes.CDLL(_C.__file__).tfm_qgemm_uses_vnni())


def test_im2col_path_gives_the_same_floats(tmp_path):
    """With TFMINI_QCONV_IM2COL=1 (read once per process) a child runs the
    same cases through im2col and the packed VNNI GEMM: the same floats
    as the direct conv."""
    if not _vnni():
        pytest.skip("no AVX512-VNNI: the int8 paths do not run here")
    mine = {k.replace("/", "_"): v for k, v in _cases()}
    other = _child({"TFMINI_QCONV_IM2COL": "1"}, "_cases", tmp_path)
    assert sorted(other.files) == sorted(mine)
    for k, v in mine.items():
        np.testing.assert_array_equal(other[k], v, err_msg=k)


def _float_cases():
    """[(name, output)] with the float path taken (no VNNI), each checked
    here against the float convolution of the dequantized filter."""
    out = []
    for n, shape in enumerate(_SHAPES):
        st, dil, mode, pads = shape[7:]
        pads = pads or (0, 0, 0, 0)
        x, _, q, ws, bias = _case_inputs(n, shape)
        for act in (0, 1, 2):
            got = _hybrid(x, q, ws, bias, st, dil, mode, pads, act)
            want = _float_conv(x, q * ws, bias, st, dil, mode, pads, act)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3,
                                       err_msg=f"{n} act {act}")
            out.append((f"{n}/{act}", got))
    return out


@pytest.mark.parametrize("conv", ["onednn", "im2col"])
def test_without_vnni_the_float_conv_of_the_dequantized_filter(conv,
                                                               tmp_path):
    """TFMINI_QGEMM_REF=1 stands for a CPU without VNNI (and the wasm
    build): there the layer is the float conv of the dequantized filter
    (oneDNN's, or with TFMINI_CONV=im2col, as in builds without oneDNN,
    im2col and the float GEMM), within the int8 paths' quantization
    error of them."""
    env = {"TFMINI_QGEMM_REF": "1"}
    if conv == "im2col":
        env["TFMINI_CONV"] = "im2col"
    other = _child(env, "_float_cases", tmp_path)
    assert len(other.files) == len(_SHAPES) * 3
    for n, shape in enumerate(_SHAPES):
        st, dil, mode, pads = shape[7:]
        pads = pads or (0, 0, 0, 0)
        x, wf, q, ws, bias = _case_inputs(n, shape)
        if not x.size:
            continue
        int8 = _reference(x, q, ws, bias, st, dil, mode, pads, 0)
        fl = other[f"{n}_0"]
        bound = _error_bound(x, wf, ws) + 1e-4
        assert (np.abs(int8 - fl).max(axis=(1, 2)) <= bound).all(), n


def _float_conv(x, w, bias, strides, dil, mode, pads, act):
    pad = "SAME" if mode == 1 else "VALID"
    if mode == 2:
        x = np.pad(x, ((0, 0), pads[:2], pads[2:], (0, 0)))
    y = np.asarray(tf.nn.conv2d(x, w.astype(F32), strides=strides,
                                padding=pad, dilations=dil))
    if bias is not None:
        y = y + bias
    if act:
        y = np.maximum(y, 0)
    if act == 2:
        y = np.minimum(y, 6)
    return y


def _error_bound(x, wf, ws):
    """[B, O]: each product of the int8 form is off the float one by at
    most |w| s/2 + |x| ws/2 + s ws/4 (s the image's step, ws the
    channel's), summed over the window."""
    k = wf.shape[0] * wf.shape[1] * wf.shape[2]
    out = []
    for b in range(x.shape[0]):
        _, s, _ = _quantize_image(x[b])
        out.append(k * (np.abs(wf).max() * s / 2 + np.abs(x[b]).max() * ws
                        / 2 + s * ws / 4))
    return np.array(out)


@pytest.mark.parametrize("n", [0, 1, 2, 4, 6])
def test_close_to_the_float_conv(n):
    """Against Conv2D of the float weights, within the quantization
    error (_error_bound)."""
    shape = _SHAPES[n]
    st, dil, mode, pads = shape[7:]
    pads = pads or (0, 0, 0, 0)
    x, wf, q, ws, bias = _case_inputs(n, shape)
    got = _hybrid(x, q, ws, bias, st, dil, mode, pads, 0)
    want = _float_conv(x, wf, bias, st, dil, mode, pads, 0)
    bound = _error_bound(x, wf, ws) + 1e-4
    for b in range(x.shape[0]):
        err = np.abs(got[b] - want[b]).max(axis=(0, 1))
        assert (err <= bound[b]).all(), (b, err, bound[b])
        # and not trivially: well inside the output's own scale
        assert err.max() < 0.05 * (np.abs(want[b]).max() + 1)


def test_relu6_and_nan_inputs_stay_defined():
    """A NaN or infinite image gets scale 1 (its outputs mean nothing
    but are written, no crash); other images of the batch are as alone."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 5, 5, 4)).astype(F32)
    x[1, 2, 2, 1] = np.nan
    x[2, 0, 0, 0] = np.inf
    q = rng.integers(-127, 128, (3, 3, 4, 8)).astype(np.int8)
    ws = np.full(8, 0.01, F32)
    got = _hybrid(x, q, ws, None, act=2)
    alone = _hybrid(x[:1], q, ws, None, act=2)
    np.testing.assert_array_equal(got[:1], alone)
    assert got.shape == (3, 5, 5, 8)


# ---- errors and gradient ---------------------------------------------------

def _bad(**over):
    x = np.zeros((1, 4, 4, 3), F32)
    wp, cs = pack_weights(np.zeros((27, 2), np.int8))
    ins = dict(x=x, wp=wp, ws=np.ones(2, F32), cs=cs)
    ins.update(over)
    return tuple(v for v in ins.values() if v is not None)


@pytest.mark.parametrize("inputs,kw,match", [
    (_bad(x=np.zeros((1, 4, 4, 3), np.int8)), {},
     r"input must be float32, got int8 \[1,4,4,3\]"),
    (_bad(x=np.zeros((4, 4, 3), F32)), {},
     r"input must have rank 4, got shape \[4,4,3\]"),
    (_bad(x=np.zeros((1, 4, 4, 5), F32)), {},
     r"input \[1,4,4,5\] has 5 channels, the filter \[3,3,3,2\] wants 3"),
    (_bad(wp=np.zeros(10, np.int8)), {},
     r"packed weights \[10\] do not hold \[K=27, N=2\] weights"),
    (_bad(cs=np.zeros(3, np.int32)), {},
     r"column sums has shape \[3\], expected \[2\]"),
    (_bad(cs=np.zeros(2, F32)), {}, "column sums must be int32, got float"),
    (_bad() + (np.zeros(2, np.int32),), {},
     "bias must be float32, got int32"),
    (_bad()[:3], {}, "expects 4 inputs"),
    (_bad(), dict(i=(1, 0, 0, 7)), "activation must be"),
    (_bad(), dict(ints=(1, 1, 1, 1)), r"filter sizes \(ints\[4..7\]"),
])
def test_bad_inputs_name_op_shapes_and_dtypes(inputs, kw, match):
    attrs = dict(ints=(1, 1, 1, 1, 3, 3, 3, 2), i=(1, 0, 0, 0))
    attrs.update(kw)
    with pytest.raises(tf.errors.InvalidArgumentError, match=match) as e:
        _call("HybridConv2DPacked", inputs, **attrs)
    assert "HybridConv2DPacked" in str(e.value)


def test_has_no_gradient():
    x = tf.Variable(np.ones((1, 4, 4, 3), F32))
    wp, cs = pack_weights(np.ones((27, 2), np.int8))
    with tf.GradientTape() as t:
        y = _C.call(OPS["HybridConv2DPacked"],
                    (x, tf.constant(wp), tf.constant(np.ones(2, F32)),
                     tf.constant(cs)),
                    ints=(1, 1, 1, 1, 3, 3, 3, 2), i=(1, 0, 0, 0))
    with pytest.raises(tf.errors.UnimplementedError,
                       match="HybridConv2DPacked: quantized ops are for "
                             "inference only"):
        t.gradient(y, x)


# ---- the converter and the C runtime ---------------------------------------

def _ops(content):
    from tfmini.saved_model import file_format as F
    model = F.decode(content)
    g = [s[2] for t, s in model["sections"] if t == b"FUNC" and s[2]][0]
    return [n["op"].decode() for n in g["nodes"]]


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    tf.random.set_seed(3)
    m = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)),
        tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        tf.keras.layers.Conv2D(24, 2, strides=2, padding="valid",
                               use_bias=False),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10)])
    path = tmp_path_factory.mktemp("hybrid_cnn") / "1"
    tf.saved_model.save(m, str(path))
    c = tf.lite.TFLiteConverter.from_saved_model(str(path))
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    return m, c.convert()


def test_converter_emits_hybrid_conv(cnn):
    model, content = cnn
    ops = _ops(content)
    # conv1's 144 weights are under TF Lite's 1024 threshold: float; the
    # other two convs (4608, 3072) become hybrid, bias and Relu fused
    assert ops.count("Conv2D") == 1, ops
    assert ops.count("HybridConv2DPacked") == 2, ops
    assert "Dequantize" not in ops and ops.count("Relu") == 1, ops
    x = np.random.default_rng(0).uniform(0, 16, (5, 8, 8, 1)).astype(F32)
    got, want = _run(content, x), np.asarray(model(x))
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max(), (got, want)


def test_c_runtime_runs_the_dynamic_range_model(cnn, tmp_path):
    _, content = cnn
    exe = build_c_predict(tmp_path)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "saved_model.tfm").write_bytes(content)
    x = np.random.default_rng(1).uniform(0, 16, (2, 8, 8, 1)).astype(F32)
    np.testing.assert_allclose(c_predict(exe, tmp_path / "m", x),
                               _run(content, x), rtol=1e-5, atol=1e-6)


def test_junk_geometry_raises_or_runs():
    """Random strides, dilations, paddings, filter sizes and activations
    (zero, negative, too large) on valid packed weights, and inputs of
    NaN, 1e30 and empty images: each call runs or raises an error naming
    the op; nothing crashes."""
    import random
    rnd = random.Random(1)
    steps = [1, 1, 1, 2, 3, 0, -1]
    pads = [0, 1, 2, -1, 2 ** 40]
    ran = 0
    for k in range(600):
        kh, kw, c, o = (rnd.choice([1, 2, 3]), rnd.choice([1, 3]),
                        rnd.choice([1, 3, 4]), rnd.choice([1, 5, 17]))
        q = np.random.default_rng(k).integers(-127, 128, (kh * kw * c, o))
        wp, cs = pack_weights(q.astype(np.int8))
        shape = (rnd.choice([0, 1, 2]), rnd.choice([0, 1, 4, 6, 9]),
                 rnd.choice([1, 5, 8]), rnd.choice([c, c, c + 1]))
        x = np.random.default_rng(k).standard_normal(shape).astype(F32)
        x *= F32(rnd.choice([1, 1e30]))
        if x.size and rnd.random() < 0.2:
            x.flat[0] = np.nan
        ints = tuple(rnd.choice(steps) for _ in range(4)) + \
            (kh, kw, c, o) + tuple(rnd.choice(pads) for _ in range(4))
        if rnd.random() < 0.2:
            ints = ints[:rnd.choice([0, 4, 6])]
        ins = (x, wp, np.full(o, rnd.choice([0.01, 1e30]), F32), cs)
        if rnd.random() < 0.5:
            ins += (np.ones(o, F32),)
        try:
            _call("HybridConv2DPacked", ins, ints=ints,
                  i=(rnd.choice([0, 1, 1, 2, 3, -1]), 0, 0,
                     rnd.choice([0, 1, 2, 3])))
            ran += 1
        except (tf.errors.InvalidArgumentError,
                tf.errors.ResourceExhaustedError) as e:
            assert "HybridConv2DPacked" in str(e), str(e)
    assert ran > 0
