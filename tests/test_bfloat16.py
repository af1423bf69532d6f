"""tf.bfloat16: the dtype, its NumPy face (ml_dtypes, as TF's), casts
rounded to nearest even, every float op (computed in float32 and rounded
back), the bfloat16 GEMM, gradients, tf.function, saved models and
checkpoints. Reference bits come from ml_dtypes, which TF itself uses."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf

ml_dtypes = pytest.importorskip(
    "ml_dtypes", reason="bfloat16's NumPy type comes from ml_dtypes")
BF16 = ml_dtypes.bfloat16


def bf16_round(x):
    """float32 values rounded to bfloat16 and widened back (ml_dtypes)."""
    return np.asarray(x, np.float32).astype(BF16).astype(np.float32)


def bits(a):
    return np.asarray(a).view(np.uint16)


# ---- the dtype -------------------------------------------------------
def test_dtype_attributes_and_names():
    d = tf.bfloat16
    assert repr(d) == "tf.bfloat16" and str(d) == "<dtype: 'bfloat16'>"
    assert d.name == "bfloat16" and d.size == 2
    assert d.is_floating and not d.is_integer and not d.is_complex
    assert d.as_numpy_dtype is BF16
    assert tf.as_dtype("bfloat16") is d
    assert tf.as_dtype(BF16) is d and tf.as_dtype(np.dtype(BF16)) is d
    assert d == "bfloat16" and d != tf.float16
    assert float(d.max) == pytest.approx(3.38953e38, rel=1e-5)
    assert float(d.min) == -float(d.max)


def test_repr_and_str_as_tf_prints_them():
    t = tf.constant([1.0, 2.5, 3.14159], dtype=tf.bfloat16)
    # TF 2.21's output, verbatim.
    assert repr(t) == ("<tf.Tensor: shape=(3,), dtype=bfloat16, "
                       "numpy=array([1, 2.5, 3.14062], dtype=bfloat16)>")
    assert str(t) == ("tf.Tensor([1 2.5 3.14062], shape=(3,), "
                      "dtype=bfloat16)")
    assert repr(tf.constant(1.5, tf.bfloat16)) == \
        "<tf.Tensor: shape=(), dtype=bfloat16, numpy=1.5>"
    v = tf.Variable([1.0, 2.0], dtype=tf.bfloat16)
    assert repr(v) == ("<tf.Variable 'Variable:0' shape=(2,) "
                       "dtype=bfloat16, numpy=array([1, 2], "
                       "dtype=bfloat16)>")


# ---- NumPy interop ---------------------------------------------------
def test_numpy_gives_an_ml_dtypes_array_and_takes_one_back():
    x = np.array([[1.5, -2.0], [1e-3, 3e38]], np.float32).astype(BF16)
    t = tf.constant(x)
    assert t.dtype == tf.bfloat16 and t.shape == (2, 2)
    out = t.numpy()
    assert out.dtype == BF16
    np.testing.assert_array_equal(bits(out), bits(x))
    # Strided input is gathered; a requested dtype widens exactly.
    np.testing.assert_array_equal(bits(tf.constant(x[:, ::-1]).numpy()),
                                  bits(x[:, ::-1]))
    wide = tf.constant(x, dtype=tf.float32)
    assert wide.dtype == tf.float32
    np.testing.assert_array_equal(wide.numpy(), x.astype(np.float32))
    assert np.asarray(t).dtype == BF16


def test_python_values_and_numpy_floats_round_to_nearest_even():
    vals = [1.00390625, 1.01171875, -2.7182817, 65504.0, 1e-40, 0.1]
    t = tf.constant(vals, dtype=tf.bfloat16)
    np.testing.assert_array_equal(bits(t.numpy()),
                                  bits(np.array(vals, np.float32)
                                       .astype(BF16)))
    a = np.linspace(-3, 3, 101)
    np.testing.assert_array_equal(
        bits(tf.constant(a, dtype=tf.bfloat16).numpy()),
        bits(a.astype(np.float32).astype(BF16)))
    assert tf.constant(np.int32(7), dtype=tf.bfloat16).numpy() == 7


def test_without_ml_dtypes_tensors_work_and_numpy_names_it():
    code = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import tfmini as tf\n"
        "t = tf.constant([1.0, 2.0], dtype=tf.bfloat16) * 3\n"
        "assert t.dtype == tf.bfloat16\n"
        "print(float(tf.reduce_sum(tf.cast(t, tf.float32))))\n"
        "try:\n"
        "    t.numpy()\n"
        "except ImportError as e:\n"
        "    print('ImportError', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "9.0"
    assert lines[1].startswith("ImportError") and "ml_dtypes" in lines[1]


# ---- casts -----------------------------------------------------------
def test_float32_to_bfloat16_matches_ml_dtypes_bit_for_bit():
    rng = np.random.RandomState(0)
    with np.errstate(over="ignore", invalid="ignore"):
        x = _cast_inputs(rng)
    finite = ~np.isnan(x)
    got = tf.cast(tf.constant(x), tf.bfloat16).numpy()
    with np.errstate(invalid="ignore"):
        want = x.astype(BF16)
    np.testing.assert_array_equal(bits(got)[finite], bits(want)[finite])
    # NaN stays NaN (quiet), with its sign.
    nan = np.isnan(got.astype(np.float32))
    np.testing.assert_array_equal(nan, ~finite)
    np.testing.assert_array_equal(np.signbit(got.astype(np.float32))[nan],
                                  np.signbit(x[nan]))


def _cast_inputs(rng):
    """Values of every magnitude, ties, extremes, and random bits (NaN
    payloads included)."""
    scale = 10.0 ** rng.randint(-40, 38, 4000)
    return np.concatenate([
        (rng.randn(4000) * scale).astype(np.float32),
        # Ties (odd and even), the largest finite values, subnormals.
        np.array([1.00390625, 1.01171875, 3.38953e38, 3.4e38, -3.4e38,
                  1e-40, -1e-45, 0.0, -0.0, np.inf, -np.inf], np.float32),
        rng.randint(0, 2 ** 32, 4000, dtype=np.uint64)
        .astype(np.uint32).view(np.float32)])


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64,
                                   tf.int8, tf.uint8, tf.int32, tf.int64,
                                   tf.bool])
def test_casts_both_ways(dtype):
    x = np.array([0.0, 1.0, -2.0, 3.5, 100.25, -0.75], np.float32)
    if dtype == tf.bool:
        x = np.array([0.0, 1.0, -0.0, 0.5], np.float32)
    elif dtype.is_integer:
        x = np.trunc(x)
        if dtype == tf.uint8:
            x = np.abs(x)
    b = tf.cast(tf.constant(x), tf.bfloat16)
    there = tf.cast(b, dtype)
    assert there.dtype == dtype
    np.testing.assert_array_equal(
        there.numpy(), bf16_round(x).astype(dtype.as_numpy_dtype))
    back = tf.cast(there, tf.bfloat16)
    np.testing.assert_array_equal(
        back.numpy().astype(np.float32),
        bf16_round(bf16_round(x).astype(dtype.as_numpy_dtype)))


# ---- ops -------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a / b,
    lambda a, b: tf.maximum(a, b), lambda a, b: tf.exp(a),
    lambda a, b: tf.tanh(a), lambda a, b: tf.sigmoid(b),
    lambda a, b: tf.nn.relu(a), lambda a, b: tf.reduce_sum(a, axis=1),
    lambda a, b: tf.reduce_mean(a), lambda a, b: tf.nn.softmax(a),
    lambda a, b: tf.sqrt(tf.abs(a)), lambda a, b: tf.transpose(a),
    lambda a, b: tf.concat([a, b], 0), lambda a, b: a[1:, ::2],
])
def test_ops_match_float32_within_bfloat16_precision(fn):
    # One op each: every op rounds its float32 result once (as TF's).
    rng = np.random.RandomState(1)
    a = bf16_round(rng.randn(6, 8))
    b = bf16_round(rng.rand(6, 8) + 0.5)
    got = fn(tf.constant(a, tf.bfloat16), tf.constant(b, tf.bfloat16))
    assert got.dtype == tf.bfloat16
    want = fn(tf.constant(a), tf.constant(b)).numpy()
    # One rounding of the float32 result (relative 2**-8).
    np.testing.assert_allclose(got.numpy().astype(np.float32), want,
                               rtol=2 ** -8, atol=1e-6)
    np.testing.assert_array_equal(got.numpy().astype(np.float32),
                                  bf16_round(want))


def test_mixed_dtypes_are_refused_naming_both():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="bfloat16.*float32|float32.*bfloat16"):
        tf.constant([1.0], tf.bfloat16) + tf.constant([1.0])


@pytest.mark.parametrize("shape_a, shape_b, kw", [
    ((64, 48), (48, 32), {}),
    ((48, 64), (48, 32), {"transpose_a": True}),
    ((64, 48), (32, 48), {"transpose_b": True}),
    ((3, 17, 9), (3, 9, 5), {}),
    ((2, 1, 5, 7), (4, 7, 3), {}),
    ((5, 0), (0, 4), {}),
])
def test_matmul_accumulates_in_float32(shape_a, shape_b, kw):
    rng = np.random.RandomState(2)
    a = bf16_round(rng.randn(*shape_a))
    b = bf16_round(rng.randn(*shape_b))
    got = tf.matmul(tf.constant(a, tf.bfloat16),
                    tf.constant(b, tf.bfloat16), **kw)
    assert got.dtype == tf.bfloat16
    ta = np.swapaxes(a, -1, -2) if kw.get("transpose_a") else a
    tb = np.swapaxes(b, -1, -2) if kw.get("transpose_b") else b
    want = np.matmul(ta.astype(np.float64), tb.astype(np.float64))
    assert got.shape == want.shape
    # float32 accumulation, one rounding at the end: within half a
    # bfloat16 ulp of the exact product (plus float32's sum error).
    err = np.abs(got.numpy().astype(np.float64) - want)
    assert np.all(err <= np.abs(want) * 2 ** -8 + 1e-4), err.max()


def test_matmul_fallback_path_agrees():
    """TFMINI_GEMM=eigen takes the widening loops instead of oneDNN's
    bfloat16 primitive: both round the same float32 sums."""
    code = (
        "import numpy as np, tfmini as tf\n"
        "r = np.random.RandomState(3)\n"
        "a = tf.cast(tf.constant(r.randn(70, 40).astype('f')), "
        "tf.bfloat16)\n"
        "b = tf.cast(tf.constant(r.randn(40, 30).astype('f')), "
        "tf.bfloat16)\n"
        "c = tf.matmul(a, b, transpose_b=False)\n"
        "np.save(__import__('sys').argv[1], "
        "tf.cast(c, tf.float32).numpy())\n")
    outs = []
    for i, gemm in enumerate(["dnnl", "eigen"]):
        path = f"/tmp/tfm_bf16_{os.getpid()}_{i}.npy"
        env = dict(os.environ, TFMINI_GEMM=gemm)
        r = subprocess.run([sys.executable, "-c", code, path], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(np.load(path))
        os.remove(path)
    # Summation order may differ: at most one bfloat16 ulp apart.
    np.testing.assert_allclose(outs[0], outs[1], rtol=2 ** -7, atol=1e-3)


# ---- gradients, variables, graphs, files -----------------------------
def test_gradients_flow_in_bfloat16():
    x = tf.Variable([[1.0, -2.0], [0.5, 3.0]], dtype=tf.bfloat16)
    w = tf.constant([[2.0], [1.0]], tf.bfloat16)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)) * 3.0)
    g = tape.gradient(y, x)
    assert g.dtype == tf.bfloat16
    # relu passes rows 0 (0) and 1 (4): dy/dx = 3 * w^T on row 1 only.
    np.testing.assert_array_equal(g.numpy().astype(np.float32),
                                  [[0.0, 0.0], [6.0, 3.0]])


def test_variable_updates_round_each_step():
    v = tf.Variable([1.0, 256.0], dtype=tf.bfloat16)
    v.assign_add([2 ** -9, 1.0])      # both below half an ulp: unchanged
    np.testing.assert_array_equal(v.numpy().astype(np.float32),
                                  [1.0, 256.0])
    v.assign_sub([-0.5, 2.0])
    np.testing.assert_array_equal(v.numpy().astype(np.float32),
                                  [1.5, 254.0])
    v.assign(tf.constant([3.0, 4.0], tf.bfloat16))
    assert v.dtype == tf.bfloat16
    opt = tf.keras.optimizers.SGD(0.5)
    opt.apply_gradients([(tf.constant([1.0, 2.0], tf.bfloat16), v)])
    np.testing.assert_array_equal(v.numpy().astype(np.float32),
                                  [2.5, 3.0])


def test_tf_function_traces_bfloat16():
    w = tf.Variable(tf.cast(tf.reshape(tf.range(12.0), (4, 3)),
                            tf.bfloat16))

    @tf.function
    def f(x):
        return tf.nn.relu(tf.matmul(x, w) - 20.0), tf.reduce_max(x)

    x = tf.constant(np.arange(8, dtype=np.float32).reshape(2, 4),
                    tf.bfloat16)
    y, m = f(x)
    y_eager = tf.nn.relu(tf.matmul(x, w) - 20.0)
    assert y.dtype == tf.bfloat16 and m.dtype == tf.bfloat16
    np.testing.assert_array_equal(bits(y.numpy()), bits(y_eager.numpy()))
    cf = f.get_concrete_function(tf.TensorSpec([None, 4], tf.bfloat16))
    assert cf(x)[0].dtype == tf.bfloat16


def test_saved_model_round_trip(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(tf.constant([[0.5], [-1.25]],
                                             tf.bfloat16))

        @tf.function(input_signature=[tf.TensorSpec([None, 2],
                                                    tf.bfloat16)])
        def __call__(self, x):
            return tf.matmul(x, self.w) + tf.constant(1.0, tf.bfloat16)

    m = M()
    x = tf.constant([[2.0, 4.0]], tf.bfloat16)
    tf.saved_model.save(m, str(tmp_path / "m"))
    back = tf.saved_model.load(str(tmp_path / "m"))
    y = back(x)
    assert y.dtype == tf.bfloat16
    np.testing.assert_array_equal(y.numpy().astype(np.float32), [[-3.0]])
    np.testing.assert_array_equal(bits(back.w.numpy()), bits(m.w.numpy()))


def test_checkpoint_round_trip(tmp_path):
    v = tf.Variable(tf.constant([1.0, 3.14159, -2e20], tf.bfloat16))
    path = tf.train.Checkpoint(v=v).save(str(tmp_path / "ck"))
    w = tf.Variable(tf.zeros([3], tf.bfloat16))
    tf.train.Checkpoint(v=w).restore(path)
    assert w.dtype == tf.bfloat16
    np.testing.assert_array_equal(bits(w.numpy()), bits(v.numpy()))


def test_moments_accumulate_in_float32():
    # 4096 values of 1 + 2**-7: a bfloat16 running sum would stall; the
    # sums run in float32 and only the results round.
    x = tf.fill([4096], tf.constant(1.0078125, tf.bfloat16))
    mean, var = tf.nn.moments(x, [0])
    assert mean.dtype == tf.bfloat16 and var.dtype == tf.bfloat16
    assert float(tf.cast(mean, tf.float32)) == 1.0078125
    assert float(tf.cast(var, tf.float32)) == 0.0


# ---- the op table, in bfloat16 ---------------------------------------
def _table_cases():
    """Every OpSpec case that runs in float16 (data movement, casts,
    reductions, matmul...): the same op in bfloat16 against float32 on
    the same (bfloat16-exact) inputs, rounded once."""
    sys.path.insert(0, os.path.dirname(__file__))
    from specs import SPECS
    return [(spec, shapes) for spec in SPECS if "float16" in spec.dtypes
            for shapes in spec.shapes]


_CASES = _table_cases()


@pytest.mark.parametrize("case", _CASES, ids=[
    f"{s.name}-" + "x".join("(" + ",".join(map(str, sh)) + ")"
                            for sh in shapes) for s, shapes in _CASES])
def test_op_table_in_bfloat16(case):
    spec, shapes = case
    rng = np.random.default_rng(0)
    xs = [bf16_round(x) if x.dtype.kind == "f" else x
          for x in spec.make_inputs(rng, shapes, "float32")]
    want = spec.fn(*[tf.constant(x) for x in xs])
    got = spec.fn(*[tf.constant(x, tf.bfloat16) if x.dtype.kind == "f"
                    else tf.constant(x) for x in xs])
    pairs = (list(zip(got, want)) if isinstance(want, (tuple, list))
             else [(got, want)])
    for g, w in pairs:
        assert g.shape == w.shape
        w = w.numpy()
        if g.dtype == tf.bfloat16:
            assert w.dtype == np.float32
            g = g.numpy().astype(np.float32)
            # Per-element ops round their float32 result once; sums and
            # products of many terms may differ by an ulp or two.
            np.testing.assert_allclose(g, bf16_round(w), rtol=2 ** -7,
                                       atol=1e-6)
        else:
            assert g.dtype.as_numpy_dtype == w.dtype
            np.testing.assert_array_equal(g.numpy(), w)
