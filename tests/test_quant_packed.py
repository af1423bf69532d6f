"""The packed forms of the quantized GEMM ops (Note [Packed int8 weights]
in csrc/kernels/cpu/qgemm.h): the converter's packing against the
unpacked ops, on both GEMM paths (VNNI and the portable loops), the
fused float input and output, converted models with no cache lookup
(no memcmp) on any call, and bad inputs."""
import ctypes
import pathlib
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini.lite._convert import pack_weights
from tfmini.saved_model import file_format as F

from quant_util import OPS, call as _call, on_portable_gemm

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _lookups():
    lib = ctypes.CDLL(_C.__file__)
    lib.tfm_qgemm_cache_lookups.restype = ctypes.c_longlong
    return lib.tfm_qgemm_cache_lookups()


def test_pack_weights_layout():
    rng = np.random.default_rng(0)
    for k, n in [(1, 1), (5, 17), (64, 512), (130, 10), (4, 16), (7, 33)]:
        q = rng.integers(-127, 128, (k, n)).astype(np.int8)
        p, cs = pack_weights(q)
        k4 = -(-k // 4)
        assert p.shape == (k4 * 4 * n,) and p.dtype == np.int8
        for kk in range(k):
            for nn in range(n):
                w = min(16, n - nn // 16 * 16)
                at = nn // 16 * k4 * 64 + ((kk // 4) * w + nn % 16) * 4 \
                    + kk % 4
                assert p[at] == q[kk, nn], (k, n, kk, nn)
        assert int(np.abs(p.astype(int)).sum()) == \
            int(np.abs(q.astype(int)).sum())
        np.testing.assert_array_equal(cs, q.astype(np.int64).sum(0))
        assert cs.dtype == np.int32


def _offset(bias, z_in, cs):
    b = np.zeros(len(cs), np.int64) if bias is None else bias
    return (b - (z_in + 128) * cs.astype(np.int64)).astype(np.int32)


_FC_SHAPES = [(1, 1, 1), (1, 64, 512), (3, 17, 15), (7, 65, 129),
              (64, 512, 10), (5, 4, 16), (33, 130, 70), (0, 8, 3)]


def _packed_cases():
    """Packed ops against the unpacked ones (which the old tests check
    against NumPy), bit for bit, with int8 and float in and out."""
    rng = np.random.default_rng(1)
    for m, k, n in _FC_SHAPES:
        w = rng.integers(-127, 128, (k, n)).astype(np.int8)
        ws = rng.uniform(0.001, 0.01, n).astype(np.float32)
        bias = rng.integers(-5000, 5000, n).astype(np.int32)
        wp, cs = pack_weights(w)
        off = _offset(bias, 3, cs)
        x = rng.integers(-128, 128, (m, k)).astype(np.int8)
        for act in (0, 1, 2):
            kw = dict(i=(0, 3, -7, act), f=(0.05, 0.2))
            want = _call("QuantizedFullyConnected", (x, w, ws, bias), **kw)
            got = _call("QuantizedFullyConnectedPacked",
                        (x, wp, ws, off), dtype=1, **kw)
            assert got.dtype == np.int8 and np.array_equal(got, want), \
                (m, k, n, act)
            # float out: the same int8, dequantized in the same pass
            gotf = _call("QuantizedFullyConnectedPacked",
                         (x, wp, ws, off), dtype=7, **kw)
            np.testing.assert_array_equal(
                gotf, (want.astype(np.float32) + 7) * np.float32(0.2))
        # float in: Quantize fused
        xf = rng.standard_normal((m, k)).astype(np.float32) * 3
        xq = _call("Quantize", (xf,), i=(0, 3), f=(0.05,))
        want = _call("QuantizedFullyConnected", (xq, w, ws),
                     i=(0, 3, -7, 1), f=(0.05, 0.2))
        got = _call("QuantizedFullyConnectedPacked",
                    (xf, wp, ws, _offset(None, 3, cs)), i=(0, 3, -7, 1),
                    f=(0.05, 0.2), dtype=1)
        assert np.array_equal(got, want), (m, k, n)
        # dynamic range
        want = _call("HybridFullyConnected", (xf, w, ws))
        got = _call("HybridFullyConnectedPacked", (xf, wp, ws, cs))
        assert np.array_equal(got, want), (m, k, n)
    # conv: float and int8 in, with the filter's sizes in ints[4..7]
    for strides, pad, dil in [((1, 1), 1, (1, 1)), ((2, 2), 1, (1, 1)),
                              ((1, 2), 0, (1, 1)), ((1, 1), 0, (2, 2))]:
        x = rng.integers(-128, 128, (2, 9, 8, 5)).astype(np.int8)
        w = rng.integers(-127, 128, (3, 3, 5, 20)).astype(np.int8)
        ws = rng.uniform(0.001, 0.01, 20).astype(np.float32)
        bias = rng.integers(-3000, 3000, 20).astype(np.int32)
        wp, cs = pack_weights(w.reshape(-1, 20))
        want = _call("QuantizedConv2D", (x, w, ws, bias),
                     ints=strides + dil, i=(pad, -20, 5, 1), f=(0.03, 0.1))
        got = _call("QuantizedConv2DPacked",
                    (x, wp, ws, _offset(bias, -20, cs)),
                    ints=strides + dil + (3, 3, 5, 20), i=(pad, -20, 5, 1),
                    f=(0.03, 0.1), dtype=1)
        assert np.array_equal(got, want), (strides, pad, dil)
        xf = rng.standard_normal((2, 9, 8, 5)).astype(np.float32)
        xq = _call("Quantize", (xf,), i=(0, -20), f=(0.03,))
        want = _call("QuantizedConv2D", (xq, w, ws), ints=strides + dil,
                     i=(pad, -20, 5, 0), f=(0.03, 0.1))
        got = _call("QuantizedConv2DPacked",
                    (xf, wp, ws, _offset(None, -20, cs)),
                    ints=strides + dil + (3, 3, 5, 20), i=(pad, -20, 5, 0),
                    f=(0.03, 0.1), dtype=7)
        np.testing.assert_array_equal(
            got, (want.astype(np.float32) - 5) * np.float32(0.1))
    return "ok"


def test_packed_ops_match_the_unpacked_ones():
    assert _packed_cases() == "ok"
    # the unpacked reference calls above look their packing up; the
    # packed ones alone never do
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, (64, 512)).astype(np.int8)
    wp, cs = pack_weights(w)
    ws = np.full(512, 0.01, np.float32)
    before = _lookups()
    for _ in range(3):
        _call("QuantizedFullyConnectedPacked",
              (rng.standard_normal((4, 64)).astype(np.float32), wp, ws, cs),
              i=(0, 0, 0, 1), f=(0.05, 0.1), dtype=1)
        _call("HybridFullyConnectedPacked",
              (rng.standard_normal((4, 64)).astype(np.float32), wp, ws, cs))
    assert _lookups() == before


def test_packed_ops_portable_path():
    """The same cases with TFMINI_QGEMM_REF=1: the packed layout read by
    the plain loops (CPUs without VNNI, the wasm build)."""
    on_portable_gemm("test_quant_packed", "_packed_cases")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    tf.random.set_seed(3)
    m = tf.keras.Sequential([tf.keras.layers.Input((64,)),
                             tf.keras.layers.Dense(512, activation="relu"),
                             tf.keras.layers.Dense(10, activation="softmax")])
    path = tmp_path_factory.mktemp("qp_mlp") / "1"
    tf.saved_model.save(m, str(path))
    return path


def _convert(path, x=None):
    c = tf.lite.TFLiteConverter.from_saved_model(str(path))
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    if x is not None:
        c.representative_dataset = lambda: ([x[i:i + 1]]
                                            for i in range(len(x)))
    return c.convert()


def _graph(content):
    model = F.decode(content)
    return [s[2] for t, s in model["sections"] if t == b"FUNC" and s[2]][0]


def test_converted_mlp_is_packed_fused_and_never_looks_up(mlp, tmp_path):
    x = np.random.default_rng(4).standard_normal((100, 64)).astype(
        np.float32)
    fn = tf.saved_model.load(str(mlp)).signatures["serving_default"]
    key = next(iter(fn.structured_input_signature[1]))
    ref = np.asarray(next(iter(fn(**{key: x}).values())))
    for form, content in (("dynamic", _convert(mlp)),
                          ("int8", _convert(mlp, x))):
        g = _graph(content)
        ops = [n["op"].decode() for n in g["nodes"]]
        if form == "int8":
            # one node per layer, int8 between them, softmax in int8
            assert ops.count("QuantizedFullyConnectedPacked") == 2
            assert "Quantize" not in ops and "QuantizedSoftmax" in ops
            assert ops.count("Dequantize") == 1
            assert "Softmax" not in ops and "BatchMatMulV2" not in ops
        else:
            assert ops.count("HybridFullyConnectedPacked") == 2
        w = [n for n in g["nodes"] if n["name"].endswith(b"/weights")]
        assert w and all(len(F.tensor_value(n["pay"]).shape) == 1
                         for n in w)
        d = tmp_path / form
        d.mkdir()
        (d / "saved_model.tfm").write_bytes(content)
        f = tf.saved_model.load(str(d)).signatures["serving_default"]
        f(**{key: x[:1]})
        before = _lookups()
        got = [np.asarray(next(iter(f(**{key: x[:n]}).values())))
               for n in (1, 64, 100)]
        assert _lookups() == before, form
        # within int8 tolerance of float (softmax outputs: steps of 1/256)
        np.testing.assert_allclose(got[2], ref, atol=0.03)
        np.testing.assert_array_equal(got[2][:64], got[1])


def test_converted_cnn_runs_pool_and_softmax_in_int8(tmp_path):
    sys.path.insert(0, str(ROOT / "examples" / "web"))
    try:
        import make_model
    finally:
        sys.path.pop(0)
    model, _ = make_model.build(epochs=3, seed=0)
    tf.saved_model.save(model, str(tmp_path / "f"))
    (x, _), (xt, yt) = tf.keras.datasets.digits.load_data()
    x = x[..., None].astype(np.float32)
    xt = xt[..., None].astype(np.float32)
    content = _convert(tmp_path / "f", x[:200:4])
    ops = [n["op"].decode() for n in _graph(content)["nodes"]]
    assert ops.count("QuantizedConv2DPacked") == 2
    assert ops.count("QuantizedFullyConnectedPacked") == 1
    assert "QuantizedMaxPool" in ops and "QuantizedSoftmax" in ops
    assert "MaxPool" not in ops and "Quantize" not in ops
    assert ops.count("Dequantize") == 1             # the output only
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "saved_model.tfm").write_bytes(content)
    fq = tf.saved_model.load(str(tmp_path / "q")).signatures[
        "serving_default"]
    ff = tf.saved_model.load(str(tmp_path / "f")).signatures[
        "serving_default"]
    before = _lookups()
    pq = np.asarray(fq(inputs=xt)["output_0"])
    assert _lookups() == before
    pf = np.asarray(ff(inputs=xt)["output_0"])
    acc_q, acc_f = np.mean(pq.argmax(1) == yt), np.mean(pf.argmax(1) == yt)
    assert acc_f > 0.85 and abs(acc_q - acc_f) <= 0.01, (acc_q, acc_f)


_W = np.zeros(8 * 5, np.int8)       # [K=8, N=5] packed


@pytest.mark.parametrize("op,inputs,kw,match", [
    ("QuantizedFullyConnectedPacked",
     (np.zeros((2, 8), np.int8), _W, np.ones(5, np.float32),
      np.zeros(5, np.int32)), dict(f=(1.0, 1.0), dtype=1), None),
    ("QuantizedFullyConnectedPacked",
     (np.zeros((2, 9), np.int8), _W, np.ones(5, np.float32),
      np.zeros(5, np.int32)), dict(f=(1.0, 1.0)),
     r"packed weights \[40\] do not hold \[K=9, N=5\] weights, which "
     r"pack to \[60\]"),
    ("QuantizedFullyConnectedPacked",
     (np.zeros((2, 8), np.int8), _W.reshape(8, 5), np.ones(5, np.float32),
      np.zeros(5, np.int32)), dict(f=(1.0, 1.0)),
     r"packed weights must have rank 1, got shape \[8,5\]"),
    ("QuantizedFullyConnectedPacked",
     (np.zeros((2, 8), np.int8), _W, np.ones(5, np.float32),
      np.zeros(4, np.int32)), dict(f=(1.0, 1.0)),
     r"offset has shape \[4\], expected \[5\]"),
    ("QuantizedFullyConnectedPacked",
     (np.zeros((2, 8), np.int32), _W, np.ones(5, np.float32),
      np.zeros(5, np.int32)), dict(f=(1.0, 1.0)),
     "input must be int8 or float32, got int32"),
    ("QuantizedFullyConnectedPacked",
     (np.zeros((2, 8), np.int8), _W, np.ones(5, np.float32),
      np.zeros(5, np.int32)), dict(f=(1.0, 1.0), dtype=4),
     "output dtype must be int8 or float32, got int32"),
    ("QuantizedFullyConnectedPacked",
     (np.zeros((2, 8), np.int8), _W, np.ones(5, np.float32),
      np.zeros(5, np.int32)), dict(f=(0.0, 1.0)),
     "scale must be finite and > 0"),
    ("HybridFullyConnectedPacked",
     (np.zeros((2, 8), np.int8), _W, np.ones(5, np.float32),
      np.zeros(5, np.int32)), {}, "input must be float32, got int8"),
    ("HybridFullyConnectedPacked",
     (np.zeros((2, 8), np.float32), _W, np.ones(5, np.float32),
      np.zeros(5, np.float32)), {}, "column sums must be int32, got float32"),
    ("QuantizedConv2DPacked",
     (np.zeros((1, 4, 4, 3), np.int8), np.zeros(72, np.int8),
      np.ones(2, np.float32), np.zeros(2, np.int32)),
     dict(ints=(1, 1, 1, 1, 3, 3, 2, 2), f=(1.0, 1.0)),
     r"input \[1,4,4,3\] has 3 channels, the filter \[3,3,2,2\] wants 2"),
    ("QuantizedConv2DPacked",
     (np.zeros((1, 4, 4, 3), np.int8), np.zeros(72, np.int8),
      np.ones(2, np.float32), np.zeros(2, np.int32)),
     dict(ints=(1, 1, 1, 1), f=(1.0, 1.0)), r"filter sizes \(ints\[4..7\]"),
    ("QuantizedConv2DPacked",
     (np.zeros((1, 4, 4, 2), np.int8), np.zeros(72, np.int8),
      np.ones(3, np.float32), np.zeros(3, np.int32)),
     dict(ints=(1, 1, 1, 1, 3, 3, 2, 2), f=(1.0, 1.0)),
     "do not hold|scale has 3 values"),
    ("QuantizedMaxPool", (np.zeros((1, 4, 4, 3), np.float32),),
     dict(ints=(1, 1, 2, 2)), "input must be int8, got float32"),
    ("QuantizedAvgPool", (np.zeros((4, 4, 3), np.int8),),
     dict(ints=(1, 1, 2, 2)), r"input must have rank 4, got shape \[4,4,3\]"),
    ("QuantizedSoftmax", (np.zeros((2, 3), np.int8),), dict(f=(0.1, 0.0)),
     r"input scale \(f\[0\]\) and beta \(f\[1\]\) must be finite and > 0"),
    ("QuantizedSoftmax", (np.zeros((2, 3), np.float32),), dict(f=(0.1, 1.0)),
     "input must be int8, got float32"),
])
def test_bad_inputs_name_the_op(op, inputs, kw, match):
    if match is None:           # the well-formed call the others break
        assert _call(op, inputs, **kw).shape == (2, 5)
        return
    with pytest.raises(tf.errors.InvalidArgumentError, match=match) as e:
        _call(op, inputs, **kw)
    assert op in str(e.value)


def test_packed_ops_have_no_gradient():
    x = tf.Variable(np.ones((2, 8), np.float32))
    wp, cs = pack_weights(np.ones((8, 3), np.int8))
    with tf.GradientTape() as t:
        y = _C.call(OPS["QuantizedFullyConnectedPacked"],
                    (x, tf.constant(wp), tf.constant(np.ones(3, np.float32)),
                     tf.constant(cs)), f=(0.1, 0.1), dtype=7)
    with pytest.raises(tf.errors.UnimplementedError,
                       match="QuantizedFullyConnectedPacked: quantized ops "
                             "are for inference only"):
        t.gradient(y, x)


def test_new_quantized_ops_survive_junk_calls():
    """Random shapes, dtypes, attributes (NaN and huge scales, zero points
    out of range, empty tensors, filter sizes that do not match): each
    call runs or raises an error naming its op; nothing crashes."""
    import random
    rnd = random.Random(1)
    names = ["QuantizedFullyConnectedPacked", "HybridFullyConnectedPacked",
             "QuantizedConv2DPacked", "QuantizedMaxPool", "QuantizedAvgPool",
             "QuantizedSoftmax"]
    dtypes = [np.int8, np.float32, np.int32]
    ints = [0, 1, -1, 2, 3, 127, -128, 300, 2 ** 45]
    floats = [0.0, 1.0, -1.0, 0.5, 1e30, float("nan"), float("inf")]
    ran = 0
    for k in range(1500):
        op = rnd.choice(names)
        nin = rnd.choice([1, 4, 4, 5])
        inputs = []
        for j in range(nin):
            rank = rnd.choice([0, 1, 1, 2, 4]) if j else rnd.choice([2, 4])
            shape = tuple(rnd.choice([0, 1, 2, 3, 4, 8, 16])
                          for _ in range(rank))
            v = np.random.default_rng(k).standard_normal(shape)
            dt = rnd.choice(dtypes)
            inputs.append((v * 50).astype(dt) if dt != np.float32 else
                          (v * rnd.choice([1, 1e30])).astype(dt))
        kw = dict(ints=tuple(rnd.choice(ints[:5])
                             for _ in range(rnd.choice([0, 4, 8]))),
                  i=tuple(rnd.choice(ints) for _ in range(6)),
                  f=tuple(rnd.choice(floats) for _ in range(4)),
                  dtype=rnd.choice([0, 1, 7, 4]))
        try:
            _call(op, inputs, **kw)
            ran += 1
        except (tf.errors.InvalidArgumentError,
                tf.errors.ResourceExhaustedError) as e:
            assert op in str(e), (op, str(e))
    assert ran > 0
