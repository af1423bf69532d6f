"""tf.lite: post-training quantization (dynamic range and full int8) of
saved models, the Interpreter in TF Lite's API shape, the int8 GEMM
(VNNI and the portable loops) against NumPy's integers, the quantized
ops' errors, and the C runtime running a quantized model."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini.saved_model import file_format as F

from quant_util import (OPS, build_c_predict, c_predict, call as _call,
                        lite_predict as _predict, on_portable_gemm)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _digits():
    (x, y), (xt, yt) = tf.keras.datasets.digits.load_data()
    return (x[..., None].astype(np.float32), y,
            xt[..., None].astype(np.float32), yt)


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "examples" / "web"))
    try:
        import make_model
    finally:
        sys.path.pop(0)
    model, _ = make_model.build(epochs=4, seed=0)
    path = tmp_path_factory.mktemp("lite_cnn") / "1"
    tf.saved_model.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    tf.random.set_seed(1)
    x, y, _, _ = _digits()
    model = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(512, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.003),
                  loss="sparse_categorical_crossentropy")
    model.fit(x, y, epochs=6, batch_size=32, verbose=0)
    path = tmp_path_factory.mktemp("lite_mlp") / "1"
    tf.saved_model.save(model, str(path))
    return path


def _model_bytes(path):
    return (pathlib.Path(path) / "saved_model.tfm").read_bytes()


def _convert(path, int8=False):
    c = tf.lite.TFLiteConverter.from_saved_model(str(path))
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    if int8:
        x = _digits()[0]
        c.representative_dataset = lambda: ([x[i:i + 1]]
                                            for i in range(0, 1000, 5))
        c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return c.convert()


def _ops(content):
    model = F.decode(content)
    g = [s[2] for t, s in model["sections"] if t == b"FUNC" and s[2]][0]
    nvars = [len(s) for t, s in model["sections"] if t == b"VARS"]
    return [n["op"].decode() for n in g["nodes"]], (nvars[0] if nvars else 0)


# ---- the converter and the interpreter ----------------------------------

def test_converter_api_shape(cnn):
    content = _convert(cnn)
    assert isinstance(content, bytes) and content[:8] == F.MAGIC
    assert tf.lite.convert(str(cnn)) == content
    c = tf.lite.TFLiteConverter.from_saved_model(str(cnn))
    assert c.convert() == _model_bytes(cnn)       # no optimizations
    ops, _ = _ops(content)
    # conv1's 144 weights are under the 1024 threshold and stay float;
    # conv2 is a hybrid conv (tests/test_quant_hybrid.py).
    assert ops.count("Conv2D") == 1 and ops.count("Dequantize") == 0
    assert ops.count("HybridConv2DPacked") == 1
    assert "HybridFullyConnectedPacked" in ops and "BatchMatMulV2" not in ops
    with pytest.raises(OSError, match="does not exist"):
        tf.lite.TFLiteConverter.from_saved_model(str(cnn) + "_missing")


def test_full_int8_needs_a_representative_dataset(cnn):
    c = tf.lite.TFLiteConverter.from_saved_model(str(cnn))
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    with pytest.raises(ValueError, match="representative_dataset"):
        c.convert()
    c.representative_dataset = lambda: iter(())
    with pytest.raises(ValueError, match="no samples"):
        c.convert()
    c.representative_dataset = lambda: iter([[np.zeros((1, 8, 8, 1)),
                                              np.zeros(3)]])
    with pytest.raises(ValueError, match="2 inputs per sample"):
        c.convert()


def test_full_int8_graph(cnn):
    ops, nvars = _ops(_convert(cnn, int8=True))
    assert ops.count("QuantizedConv2DPacked") == 2
    assert ops.count("QuantizedFullyConnectedPacked") == 1
    assert "Conv2D" not in ops and "Relu" not in ops
    assert nvars == 0           # biases folded in as int32 constants


def test_interpreter_api(cnn):
    x = _digits()[2][:3]
    content = _convert(cnn)
    it = tf.lite.Interpreter(model_content=content)
    inp, = it.get_input_details()
    out, = it.get_output_details()
    assert inp["name"] == "inputs" and inp["dtype"] == np.float32
    assert list(inp["shape_signature"]) == [-1, 8, 8, 1]
    assert list(inp["shape"]) == [1, 8, 8, 1]
    assert out["index"] == 1 and out["dtype"] == np.float32
    with pytest.raises(ValueError, match="expected type FLOAT32"):
        it.set_tensor(0, x.astype(np.float64))
    with pytest.raises(ValueError, match="Dimension mismatch"):
        it.set_tensor(0, x)
    it.resize_tensor_input(0, [3, 8, 8, 1])
    it.set_tensor(0, x)
    with pytest.raises(RuntimeError, match="allocate_tensors"):
        it.invoke()
    it.allocate_tensors()
    it.invoke()
    got = it.get_tensor(out["index"])
    want = tf.saved_model.load(str(cnn)).signatures["serving_default"](
        inputs=x)["output_0"]
    assert got.shape == (3, 10)
    np.testing.assert_allclose(got, np.asarray(want), atol=0.05)
    with pytest.raises(ValueError, match="out of range"):
        it.get_tensor(7)
    with pytest.raises(ValueError, match="bad magic"):
        tf.lite.Interpreter(model_content=b"not a model at all")
    run = it.get_signature_runner()
    np.testing.assert_allclose(run(inputs=x)["output_0"], got, rtol=1e-6)
    # model_path: the file or its folder
    it2 = tf.lite.Interpreter(model_path=str(cnn))
    assert it2.get_signature_list()["serving_default"]["outputs"] == [
        "output_0"]


@pytest.mark.parametrize("which", ["cnn", "mlp"])
def test_accuracy_within_one_point(which, request):
    path = request.getfixturevalue(which)
    _, _, xt, yt = _digits()
    acc = {}
    for mode, content in (("float", _model_bytes(path)),
                          ("dynamic", _convert(path)),
                          ("int8", _convert(path, int8=True))):
        acc[mode] = np.mean(_predict(content, xt).argmax(1) == yt)
    assert acc["float"] > 0.9, acc
    assert abs(acc["dynamic"] - acc["float"]) <= 0.01, acc
    assert abs(acc["int8"] - acc["float"]) <= 0.01, acc


def test_size_about_four_times_smaller(mlp):
    f = len(_model_bytes(mlp))
    d, q = len(_convert(mlp)), len(_convert(mlp, int8=True))
    # Weights are exactly 4x smaller; per-channel scales, the float
    # biases and the graph itself keep the whole file a little above 1/4.
    assert f / d > 3.3 and f / q > 3.3, (f, d, q)


# ---- the int8 GEMM and the quantized ops ---------------------------------

_SHAPES = [(1, 1, 1), (1, 4, 16), (2, 3, 5), (3, 17, 15), (5, 64, 64),
           (7, 65, 129), (64, 512, 10), (1, 1000, 3), (4, 0, 3),
           (0, 5, 3), (33, 130, 70)]


def _accum_cases():
    rng = np.random.default_rng(0)
    for m, k, n in _SHAPES:
        a = rng.integers(-128, 128, (m, k)).astype(np.int8)
        b = rng.integers(-128, 128, (k, n)).astype(np.int8)
        for zp in (0, -128, 127, 9):
            got = _call("QuantizedMatMulAccum", (a, b), i=(0, zp))
            want = (a.astype(np.int64) - zp) @ b.astype(np.int64)
            assert got.dtype == np.int32 and np.array_equal(got, want), \
                (m, k, n, zp)
    # extremes: every product at its largest, a deep K
    a = np.full((3, 4000), -128, np.int8)
    b = np.full((4000, 20), -128, np.int8)
    got = _call("QuantizedMatMulAccum", (a, b), i=(0, 127))
    assert np.array_equal(got, (a.astype(np.int64) - 127) @ b)
    return "ok"


def test_qgemm_matches_numpy():
    assert _accum_cases() == "ok"


def test_qgemm_portable_path_matches_numpy():
    """The same cases with TFMINI_QGEMM_REF=1: the loops a CPU without
    AVX512-VNNI (or the wasm build) runs."""
    on_portable_gemm("test_lite", "_accum_cases")


def _requant_ref(acc, s_in, ws, s_out, z_out, act):
    v = np.round(acc * (s_in * ws.astype(np.float64) / s_out)) + z_out
    lo = max(-128, z_out) if act else -128
    hi = min(127, z_out + round(6 / s_out)) if act == 2 else 127
    return np.clip(v, lo, hi).astype(np.int8)


@pytest.mark.parametrize("act", [0, 1, 2])
def test_quantized_fully_connected_matches_reference(act):
    rng = np.random.default_rng(act)
    x = rng.integers(-128, 128, (6, 40)).astype(np.int8)
    w = rng.integers(-127, 128, (40, 9)).astype(np.int8)
    ws = rng.uniform(0.001, 0.01, 9).astype(np.float32)
    bias = rng.integers(-5000, 5000, 9).astype(np.int32)
    s_in, z_in, s_out, z_out = 0.05, 3, 0.2, -7
    got = _call("QuantizedFullyConnected", (x, w, ws, bias),
                i=(0, z_in, z_out, act), f=(s_in, s_out))
    acc = (x.astype(np.int64) - z_in) @ w + bias
    want = _requant_ref(acc, s_in, ws, s_out, z_out, act)
    assert np.abs(got.astype(int) - want).max() <= 1


@pytest.mark.parametrize("strides,pad,dil", [
    ((1, 1), 1, (1, 1)), ((2, 2), 1, (1, 1)), ((1, 2), 0, (1, 1)),
    ((1, 1), 0, (2, 2)), ((3, 3), 1, (1, 1))])
def test_quantized_conv2d_matches_reference(strides, pad, dil):
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (2, 9, 8, 5)).astype(np.int8)
    w = rng.integers(-127, 128, (3, 3, 5, 4)).astype(np.int8)
    ws = rng.uniform(0.001, 0.01, 4).astype(np.float32)
    bias = rng.integers(-3000, 3000, 4).astype(np.int32)
    s_in, z_in, s_out, z_out = 0.03, -20, 0.1, 5
    attrs = dict(ints=strides + dil, i=(pad, z_in, z_out, 1),
                 f=(s_in, s_out))
    got = _call("QuantizedConv2D", (x, w, ws, bias), **attrs)
    # float reference: Conv2D over the zero-point-shifted integers is
    # exact in float64 at these sizes.
    xf = tf.constant((x.astype(np.float64) - z_in))
    acc = np.asarray(tf.nn.conv2d(xf, tf.constant(w.astype(np.float64)),
                                  strides=list(strides),
                                  padding="SAME" if pad else "VALID",
                                  dilations=list(dil)))
    want = _requant_ref(np.round(acc) + bias, s_in, ws, s_out, z_out, 1)
    assert got.shape == want.shape
    assert np.abs(got.astype(int) - want).max() <= 1


def test_quantize_dequantize_round_trip():
    x = np.linspace(-3, 5, 101).astype(np.float32)
    q = _call("Quantize", (x,), i=(0, -10), f=(0.04,))
    assert q.dtype == np.int8
    np.testing.assert_array_equal(
        q, np.clip(np.round(x / 0.04) - 10, -128, 127).astype(np.int8))
    back = _call("Dequantize", (q,), i=(0, -10), f=(0.04,))
    inside = (x > -4.7) & (x < 5.4)
    assert np.abs(back - x)[inside].max() <= 0.02 + 1e-6
    w = np.arange(-6, 6, dtype=np.int8).reshape(4, 3)
    s = np.array([0.5, 1, 2], np.float32)
    np.testing.assert_allclose(_call("Dequantize", (w, s)), w * s)


def test_hybrid_fully_connected_close_to_float():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 300)).astype(np.float32)
    w = rng.standard_normal((300, 20)).astype(np.float32)
    s = (np.abs(w).max(0) / 127).astype(np.float32)
    q = np.round(w / s).astype(np.int8)
    got = _call("HybridFullyConnected", (x, q, s))
    want = x @ (q * s)
    assert np.abs(got - want).max() < 0.02 * np.abs(want).max()


@pytest.mark.parametrize("op,inputs,kw,match", [
    ("HybridFullyConnected",
     (np.zeros((2, 3), np.float32), np.zeros((4, 5), np.int8),
      np.ones(5, np.float32)), {}, r"input \[2,3\] and weights \[4,5\]"),
    ("HybridFullyConnected",
     (np.zeros((2, 4), np.float32), np.zeros((4, 5), np.float32),
      np.ones(5, np.float32)), {}, "weights must be int8, got float32"),
    ("HybridFullyConnected",
     (np.zeros((2, 4), np.float32), np.zeros((4, 5), np.int8),
      np.ones(4, np.float32)), {}, r"weights \[4,5\] and scale \[4\]"),
    ("Quantize", (np.zeros(3, np.int32),), dict(f=(1.0,)),
     "input must be float32, got int32"),
    ("Quantize", (np.zeros(3, np.float32),), dict(f=(0.0,)),
     "scale must be finite and > 0"),
    ("Quantize", (np.zeros(3, np.float32),), dict(f=(1.0,), i=(0, 300)),
     r"zero_point must be in \[-128, 127\]"),
    ("Dequantize", (np.zeros((2, 3), np.int8), np.ones(4, np.float32)), {},
     r"input \[2,3\] and scale \[4\]"),
    ("QuantizedConv2D",
     (np.zeros((1, 4, 4), np.int8), np.zeros((3, 3, 1, 2), np.int8),
      np.ones(2, np.float32)), dict(ints=(1, 1, 1, 1), f=(1.0, 1.0)),
     r"QuantizedConv2D: input must have rank 4, got shape \[1,4,4\]"),
    ("QuantizedConv2D",
     (np.zeros((1, 4, 4, 3), np.int8), np.zeros((3, 3, 1, 2), np.int8),
      np.ones(2, np.float32)), dict(ints=(1, 1, 1, 1), f=(1.0, 1.0)),
     "QuantizedConv2D"),
    ("QuantizedFullyConnected",
     (np.zeros((2, 4), np.int8), np.zeros((4, 3), np.int8),
      np.ones(3, np.float32), np.zeros(3, np.float32)),
     dict(f=(1.0, 1.0)), "bias must be int32, got float32"),
    ("QuantizedFullyConnected",
     (np.zeros((2, 4), np.int8), np.zeros((4, 3), np.int8),
      np.ones(3, np.float32)), dict(f=(1.0, 1.0), i=(0, 0, 0, 5)),
     "activation must be"),
    ("QuantizedMatMulAccum",
     (np.zeros((2, 70000), np.int8), np.zeros((70000, 1), np.int8)), {},
     "may overflow"),
])
def test_bad_inputs_name_the_op(op, inputs, kw, match):
    with pytest.raises(tf.errors.InvalidArgumentError, match=match) as e:
        _call(op, inputs, **kw)
    assert op in str(e.value)


def test_quantized_ops_have_no_gradient():
    x = tf.Variable(np.ones((2, 4), np.float32))
    w, s = tf.constant(np.ones((4, 3), np.int8)), tf.constant(
        np.ones(3, np.float32))
    with tf.GradientTape() as t:
        y = _C.call(OPS["HybridFullyConnected"], (x, w, s))
    with pytest.raises(tf.errors.UnimplementedError,
                       match="HybridFullyConnected: quantized ops are for "
                             "inference only"):
        t.gradient(y, x)


# ---- the C runtime ------------------------------------------------------

def test_c_runtime_runs_a_quantized_model(cnn, tmp_path):
    exe = build_c_predict(tmp_path)
    x = _digits()[2][:2]
    for int8 in (False, True):
        content = _convert(cnn, int8=int8)
        d = tmp_path / ("int8" if int8 else "dynamic")
        d.mkdir()
        (d / "saved_model.tfm").write_bytes(content)
        np.testing.assert_allclose(c_predict(exe, d, x),
                                   _predict(content, x),
                                   rtol=1e-5, atol=1e-6)


def test_model_server_serves_a_quantized_model(cnn, tmp_path):
    """tfmini_model_server reads the quantized file as it is."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import test_model_server as ms
    finally:
        sys.path.pop(0)
    if not ms._have_libraries():
        pytest.skip(f"tfmini_model_server needs libmicrohttpd and jansson: "
                    f"apt-get install {ms.PACKAGES}")
    import tfmini.rt
    out = tmp_path / "bin"
    out.mkdir()
    r = subprocess.run(["make", "-C", str(ROOT / "tools" / "serving"),
                        f"BUILD={out}", f"RT_INC={tfmini.rt.get_include()}",
                        f"RT_LIB={tfmini.rt.get_lib()}",
                        "RT_LINK=-ltfmini_rt"],
                       capture_output=True, text=True, env=ms._env())
    assert r.returncode == 0, r.stdout + r.stderr
    content = _convert(cnn, int8=True)
    base = tmp_path / "models"
    (base / "1").mkdir(parents=True)
    (base / "1" / "saved_model.tfm").write_bytes(content)
    x = _digits()[2][:3]
    s = ms.Server(out / "tfmini_model_server", "digits", base)
    try:
        status, body = s.predict({"instances": x.tolist()})
    finally:
        s.stop()
    assert status == 200, body
    np.testing.assert_allclose(np.array(body["predictions"]),
                               _predict(content, x), rtol=1e-4, atol=1e-5)


def test_quantized_ops_survive_junk_calls():
    """Random shapes, dtypes, input counts and attributes (NaN and huge
    scales, zero points out of range, empty tensors): each call either
    runs or raises an error naming its op; nothing crashes."""
    import random
    rnd = random.Random(0)
    names = ["Quantize", "Dequantize", "QuantizedMatMulAccum",
             "HybridFullyConnected", "QuantizedFullyConnected",
             "QuantizedConv2D"]
    dtypes = [np.int8, np.float32, np.int32, np.uint8]
    ints = [0, 1, -1, 2, 3, 127, -128, 300, 2 ** 45]
    floats = [0.0, 1.0, -1.0, 0.5, 1e30, float("nan"), float("inf")]
    ran = 0
    for k in range(1500):
        op = rnd.choice(names)
        nin = rnd.choice([1, 2, 3, 4])
        inputs = []
        for _ in range(nin):
            shape = tuple(rnd.choice([0, 1, 2, 3, 5])
                          for _ in range(rnd.choice([0, 1, 2, 4, 4])))
            v = np.random.default_rng(k).standard_normal(shape)
            dt = rnd.choice(dtypes)
            inputs.append((v * 50).astype(dt) if dt != np.float32 else
                          (v * rnd.choice([1, 1e30])).astype(dt))
        kw = dict(ints=tuple(rnd.choice(ints[:5])
                             for _ in range(rnd.choice([0, 4]))),
                  i=tuple(rnd.choice(ints) for _ in range(6)),
                  f=tuple(rnd.choice(floats) for _ in range(4)))
        try:
            _call(op, inputs, **kw)
            ran += 1
        except (tf.errors.InvalidArgumentError,
                tf.errors.ResourceExhaustedError) as e:
            assert op in str(e), (op, str(e))
    assert ran > 0


def test_control_flow_graphs(tmp_path):
    """Dynamic range rewrites the top-level graph of a model with a
    tf.cond in it; full int8 calibration cannot run If and says so."""
    class M(tf.Module):
        def __init__(self):
            self.w = tf.Variable(np.random.RandomState(0).randn(
                64, 32).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 64],
                                                    tf.float32)])
        def f(self, x):
            y = tf.matmul(x, self.w)
            return tf.cond(tf.reduce_sum(y) > 0, lambda: y, lambda: -y)
    m = M()
    tf.saved_model.save(m, str(tmp_path), signatures={"serving_default":
                                                      m.f})
    x = np.random.RandomState(1).randn(3, 64).astype(np.float32)
    content = tf.lite.convert(str(tmp_path))
    assert "HybridFullyConnectedPacked" in _ops(content)[0]
    np.testing.assert_allclose(_predict(content, x), np.asarray(m.f(x)),
                               rtol=0.05, atol=0.05 * np.abs(
                                   np.asarray(m.f(x))).max())
    with pytest.raises(NotImplementedError, match="cannot run 'If'"):
        tf.lite.convert(str(tmp_path), representative_dataset=lambda: iter(
            [[x[:1]]]))


def _packed_cases():
    """QuantizedMatMulAccum against numpy where the packed weights are
    kept between calls (Note [Packed weights] in qgemm.c): the same
    weights twice (the second call reads the kept packing), more weight
    matrices than the cache holds, and a variable's weights changed in
    place between calls."""
    rng = np.random.default_rng(5)

    def check(a, b, zp=3):
        got = _call("QuantizedMatMulAccum", (a, b), i=(0, zp))
        want = (a.astype(np.int64) - zp) @ np.asarray(b).astype(np.int64)
        assert np.array_equal(got, want), (a.shape, np.shape(b))

    for m, k, n in [(1, 64, 256), (1, 100, 70), (3, 1024, 1024),
                    (4, 7, 65), (9, 130, 129)]:
        b = tf.constant(rng.integers(-128, 128, (k, n)).astype(np.int8))
        for rows in (m, 1, m + 5):
            a = rng.integers(-128, 128, (rows, k)).astype(np.int8)
            check(a, b)
            check(a, b)
    a = rng.integers(-128, 128, (2, 40)).astype(np.int8)
    for _ in range(150):            # past the cache's 64 entries
        check(a, rng.integers(-128, 128, (40, 24)).astype(np.int8))
    w = tf.Variable(rng.integers(-128, 128, (40, 24)).astype(np.int8))
    for _ in range(4):
        check(a, w.value())
        w.assign(rng.integers(-128, 128, (40, 24)).astype(np.int8))
    return "ok"


def test_packed_weights_give_the_unpacked_results():
    assert _packed_cases() == "ok"
    on_portable_gemm("test_lite", "_packed_cases")


def test_quantized_model_same_with_packed_and_portable_gemm(mlp, tmp_path):
    """A converted model run twice (packed once, then reused) gives
    bit-identical outputs to the portable loops, which never pack."""
    path, x = str(mlp), _digits()[0]
    out = {}
    for form in ("dynamic", "int8"):
        c = tf.lite.TFLiteConverter.from_saved_model(path)
        c.optimizations = [tf.lite.Optimize.DEFAULT]
        if form == "int8":
            c.representative_dataset = lambda: ([x[i:i + 1]]
                                                for i in range(0, 200, 10))
        d = tmp_path / form
        d.mkdir()
        (d / "saved_model.tfm").write_bytes(c.convert())
        run = ("import sys, numpy as np; sys.path.insert(0, %r); "
               "import tfmini as tf; x = np.load(%r); "
               "f = tf.saved_model.load(%r).signatures['serving_default']; "
               "a = [np.asarray(f(inputs=x[:n])['output_0']) "
               "for n in (1, 1, 33, 33)]; np.save(%r, np.concatenate("
               "[v.reshape(-1) for v in a]))")
        np.save(tmp_path / "x.npy", x[:64])
        for ref in ("0", "1"):
            dst = tmp_path / f"{form}_{ref}.npy"
            r = subprocess.run(
                [sys.executable, "-c", run % (str(ROOT), str(tmp_path /
                 "x.npy"), str(d), str(dst))], capture_output=True,
                text=True, env=dict(os.environ, TFMINI_QGEMM_REF=ref),
                timeout=300)
            assert r.returncode == 0, r.stderr
            out[form, ref] = np.load(dst)
        assert np.array_equal(out[form, "0"], out[form, "1"]), form
