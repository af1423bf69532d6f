"""Fused nodes compiled to machine code (Note [Native fused programs] in
csrc/graph/fused.h): big fused nodes run as one compiled C loop, with the
same numbers as the unfused ops (bitwise for exact ops), a disk cache,
and the block evaluator whenever there is no compiler, it fails, an op
has no native formula, or the "native" option is off."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tfmini as tf
from tfmini.ops.activation_ops import _relu_grad
from graph_util import (bits_equal, draw_ops, passes, run_program,
                        value_scale)

BIG = (64, 1031)        # 65,984 elements: just over the native threshold


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory; programs compiled earlier in this process
    are still found in memory, so tests that look at the directory use
    programs of their own (a LeakyRelu alpha is part of the source)."""
    monkeypatch.setenv("TFMINI_CACHE_DIR", str(tmp_path))
    return tmp_path / "native"


def compiled(fn, *args):
    """Nodes compiled, after one call (the compiler runs on the first
    call, not when the function is traced)."""
    fn(*args)
    return fn.get_concrete_function(*args)._native_steps


def unfused(f, *args):
    with passes(fusion=False, remapping=False):
        return tf.function(f)(*args).numpy()


def rand(shape, dtype=np.float32, seed=0):
    return tf.constant(np.random.default_rng(seed).standard_normal(shape)
                       .astype(dtype))


def files(d):
    return sorted(p.suffix for p in d.iterdir()) if d.exists() else []


def test_big_exact_chain_is_compiled_and_bitwise_equal(cache):
    x, b = rand(BIG), rand(BIG[-1:], seed=1)

    def f(x, b):
        y = (x * 1.5 + b) * x - 0.25
        return tf.nn.leaky_relu(tf.maximum(y * y - x, -1.0), 0.3125)

    fn = tf.function(f)
    assert compiled(fn, x, b) == 1
    bits_equal(fn(x, b).numpy(), unfused(f, x, b))
    bits_equal(fn(x, b).numpy(), f(x, b).numpy())        # eager
    assert files(cache) == [".c", ".so"]
    src = next(cache.glob("*.c")).read_text()
    assert "tfm_native" in src and "#pragma omp simd" in src


def test_small_nodes_keep_the_block_evaluator():
    x = rand((100, 100))
    fn = tf.function(lambda x: tf.nn.relu(x * 2.0 + 1.0))
    assert compiled(fn, x) == 0


def test_transcendental_chain_is_close_to_unfused():
    x = rand(BIG)

    def f(x):
        y = (x * 1.5 + 0.25) * tf.sigmoid(x) - 0.5
        return tf.nn.relu(y * y - x) + tf.tanh(x) * tf.exp(-x * x)

    fn = tf.function(f)
    assert compiled(fn, x) == 1
    np.testing.assert_allclose(fn(x).numpy(), unfused(f, x), rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float64_and_casts_inside(dtype):
    x = rand(BIG, dtype)
    other = tf.float64 if dtype == np.float32 else tf.float32

    def f(x):
        y = tf.cast(x * 3.0, other) + 1.0
        return tf.cast(tf.abs(y) - 2.0, x.dtype) * x

    fn = tf.function(f)
    assert compiled(fn, x) == 1
    bits_equal(fn(x).numpy(), unfused(f, x))


def test_extra_outputs_and_bias_broadcast():
    x, b = rand(BIG), rand((1, BIG[-1]), seed=2)

    def f(x, b):
        h = x * b + 1.0
        return tf.nn.relu(h) * 2.0, h

    fn = tf.function(f)
    assert compiled(fn, x, b) == 1
    with passes(fusion=False, remapping=False):
        want = [t.numpy() for t in tf.function(f)(x, b)]
    for got, w in zip(fn(x, b), want):
        bits_equal(got.numpy(), w)


def test_matmul_epilogue_in_place():
    x, w, b = rand((256, 64)), rand((64, 512), seed=1), rand((512,), seed=2)

    def f(x):
        return tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))

    fn = tf.function(f)
    types = [op.type for op in fn.get_concrete_function(x)
             .optimized_graph.get_operations()]
    assert "_FusedMatMul" in types
    assert compiled(fn, x) == 1
    bits_equal(fn(x).numpy(), unfused(f, x))


def test_column_broadcast_is_not_compiled_but_right():
    x, c = rand(BIG), rand((BIG[0], 1), seed=3)

    def f(x, c):
        return tf.nn.relu(x * c + 1.0)

    fn = tf.function(f)
    assert compiled(fn, x, c) == 0
    bits_equal(fn(x, c).numpy(), unfused(f, x, c))


def test_activations_with_helpers_are_compiled():
    # Elu, Selu, Softplus and Gelu had no native form before their
    # formulas moved to kernels/ew_formulas.def.
    x = rand(BIG)

    def f(x):
        return (tf.nn.elu(x * 2.0) + tf.nn.selu(x) + tf.nn.softplus(x)
                + tf.nn.gelu(x) + tf.nn.gelu(x, approximate=True))

    fn = tf.function(f)
    assert compiled(fn, x) == 1
    np.testing.assert_allclose(fn(x).numpy(), unfused(f, x), rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("cc", ["/nonexistent/cc", "false"])
def test_no_working_compiler_falls_back(cache, monkeypatch, cc):
    monkeypatch.setenv("TFMINI_CC", cc)
    x = rand(BIG)
    alpha = 0.1 + len(cc) / 1000        # a program of this test's own

    def f(x):
        return tf.nn.leaky_relu(x * 2.0 + 1.0, alpha)

    fn = tf.function(f)
    assert compiled(fn, x) == 0
    bits_equal(fn(x).numpy(), unfused(f, x))
    assert ".so" not in files(cache)


def test_native_option_off(cache):
    x = rand(BIG)

    def f(x):
        return tf.nn.leaky_relu(x * 2.0 + 1.0, 0.0625)

    with passes(native=False):
        fn = tf.function(f)
        assert compiled(fn, x) == 0
        bits_equal(fn(x).numpy(), unfused(f, x))
    assert files(cache) == []


def test_disk_cache_is_reused_by_a_new_process(cache, tmp_path):
    import subprocess
    import sys
    code = ("import numpy as np, tfmini as tf\n"
            "x = tf.constant(np.ones((64, 1031), np.float32))\n"
            "f = tf.function(lambda x: tf.nn.leaky_relu(x - 3.0, 0.015625))\n"
            "s = float(tf.reduce_sum(f(x)))\n"
            "print(f.get_concrete_function(x)._native_steps, s)\n")
    env = dict(os.environ, TFMINI_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, check=True)
            for _ in range(2)]
    for r in runs:
        assert r.stdout.split() == ["1", str(-2.0 * 0.015625 * 64 * 1031)]
    assert files(cache) == [".c", ".so"]


def relu_grad(a, b):
    """ReluGrad, which takes equal shapes, on broadcast operands."""
    z = tf.zeros_like(a + b)
    return _relu_grad(a + z, b + z)


UNARY = [tf.negative, tf.abs, tf.square, tf.nn.relu, tf.nn.relu6,
         tf.sign, tf.floor, tf.math.softsign, tf.sqrt, tf.exp, tf.sigmoid,
         tf.tanh, tf.math.log1p]
BINARY = [tf.add, tf.subtract, tf.multiply, tf.maximum, tf.minimum,
          tf.math.squared_difference, tf.divide, tf.math.divide_no_nan,
          relu_grad]
EXACT = {tf.negative, tf.abs, tf.square, tf.nn.relu, tf.nn.relu6, tf.sign,
         tf.floor, tf.add, tf.subtract, tf.multiply, tf.maximum, tf.minimum,
         tf.math.squared_difference, tf.divide, tf.math.divide_no_nan,
         tf.math.softsign, tf.sqrt, relu_grad}


@st.composite
def big_programs(draw):
    """Random DAGs of elementwise ops over a 65,984-element output with
    full, scalar and periodic inputs."""
    shapes = [BIG] + [draw(st.sampled_from([BIG, (), BIG[-1:],
                                            (1, BIG[-1])]))
                      for _ in range(draw(st.integers(0, 3)))]
    ops = draw_ops(draw, len(shapes), UNARY, BINARY, 10)
    return shapes, ops, draw(st.sampled_from([np.float32, np.float64]))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(big_programs(), st.integers(0, 2**31 - 1))
def test_random_big_programs_native_vs_unfused(prog, seed):
    shapes, ops, dtype = prog
    rng = np.random.default_rng(seed)
    inputs = [tf.constant((rng.random(s) * 2 + 0.1).astype(dtype))
              for s in shapes]

    program = run_program(ops, 1)

    def f(*inputs):
        return program(*inputs)[0]

    fn = tf.function(f)
    # Every big fused node compiles: all these input kinds have a form.
    big = [op for op in fn.get_concrete_function(*inputs)
           .optimized_graph.get_operations()
           if op.type == "_FusedElementwise"
           and op.outputs[0].shape.num_elements() >= 65536]
    assert compiled(fn, *inputs) == len(big)
    got = fn(*inputs).numpy()
    want = unfused(f, *inputs)
    with np.errstate(all="ignore"):
        if all(op in EXACT for op, _ in ops):
            bits_equal(got, want)
        else:
            rtol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(got, want, rtol=rtol,
                                       atol=rtol * value_scale(ops, inputs),
                                       equal_nan=True)


def test_compiles_with_sigchld_ignored(cache):
    import subprocess
    import sys
    code = ("import signal, numpy as np, tfmini as tf\n"
            "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
            "x = tf.constant(np.ones((64, 1031), np.float32))\n"
            "f = tf.function(lambda x: tf.nn.leaky_relu(x * 3.0, 0.375))\n"
            "f(x)\n"
            "print(f.get_concrete_function(x)._native_steps)\n")
    env = dict(os.environ, TFMINI_CACHE_DIR=str(cache.parent))
    r = subprocess.run([sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["1"]


def test_leaky_relu_with_nan_alpha_keeps_the_evaluator():
    x = rand(BIG)
    fn = tf.function(lambda x: tf.nn.leaky_relu(x * 2.0, float("nan")))
    assert compiled(fn, x) == 0
    bits_equal(fn(x).numpy(),
               unfused(lambda x: tf.nn.leaky_relu(x * 2.0, float("nan")), x))
