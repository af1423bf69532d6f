"""Eager-op benchmarks against NumPy (and TF, JAX and PyTorch when
installed): per-op overhead on tiny tensors, matmul throughput (square,
and the MLP and attention shapes of issue 17), and memory-bound
elementwise and reduction throughput on 16M floats. JAX's ops return
before their work is done, so its rows wait for the result.

    python3 -m pytest benchmarks --benchmark-enable
    python3 benchmarks/report.py        # the table in RESULTS.md

Never a pass/fail on speed: these only measure."""
import numpy as np
import pytest
from _common import impl_params, module, needs_tfmini, synced, to_impl

BIG = 1 << 24           # 16M float32: 64 MiB per tensor


def _info(benchmark, group, work=None, unit=None):
    benchmark.group = group
    if work is not None:
        benchmark.extra_info["work"] = work        # bytes or flops per call
        benchmark.extra_info["unit"] = unit


# ---- per-op overhead ----------------------------------------------------------

@pytest.mark.parametrize("impl", impl_params())
def test_tiny_add(benchmark, impl, rng):
    """`a + b` on 2-element float32 tensors: almost all overhead."""
    x = rng.standard_normal(2).astype(np.float32)
    a, b = to_impl(impl, x), to_impl(impl, x + 1)
    _info(benchmark, "tiny a + b")
    r = benchmark(synced(impl, lambda: a + b))
    np.testing.assert_allclose(np.asarray(r), x + x + 1, rtol=1e-6)


@needs_tfmini("matmul")
@pytest.mark.parametrize("impl", impl_params())
def test_tiny_matmul(benchmark, impl, rng):
    """matmul of 2x2 float32 matrices: dispatch overhead."""
    x = rng.standard_normal((2, 2)).astype(np.float32)
    a = to_impl(impl, x)
    mm = module(impl).matmul
    _info(benchmark, "tiny matmul 2x2")
    r = benchmark(synced(impl, lambda: mm(a, a)))
    np.testing.assert_allclose(np.asarray(r), x @ x, rtol=1e-5)


# ---- matmul throughput ---------------------------------------------------------

@needs_tfmini("matmul")
@pytest.mark.parametrize("n", [256, 1024, 2048])
@pytest.mark.parametrize("impl", impl_params())
def test_matmul(benchmark, impl, n, rng):
    x = rng.standard_normal((n, n)).astype(np.float32)
    a = to_impl(impl, x)
    mm = module(impl).matmul
    _info(benchmark, f"matmul {n}", 2 * n ** 3, "GFLOP/s")
    f = synced(impl, lambda: mm(a, a))
    if n >= 1024:
        r = benchmark.pedantic(f, rounds=5, warmup_rounds=1)
    else:
        r = benchmark(f)
    got = np.asarray(r)[:4, :4]
    np.testing.assert_allclose(got, (x[:4] @ x[:, :4]), rtol=1e-3,
                               atol=1e-3 * n ** 0.5)


# (batch, m, k, n): the MLP's first layer at batch 32, an attention
# block's projections (256 tokens, 512 wide) and its per-head score
# matmuls (8 heads of 64x64).
GEMM_SHAPES = [(None, 32, 784, 128), (None, 256, 512, 512), (8, 64, 64, 64)]


def _gemm_name(shape):
    b, m, k, n = shape
    return f"{m}x{k}x{n}" if b is None else f"{b}x{m}x{k}x{n}"


@needs_tfmini("matmul")
@pytest.mark.parametrize("shape", GEMM_SHAPES,
                         ids=[_gemm_name(s) for s in GEMM_SHAPES])
@pytest.mark.parametrize("impl", impl_params())
def test_matmul_shapes(benchmark, impl, shape, rng):
    """float32 [b,] m x k @ k x n: the shapes issue 17 names beside the
    square ones (batched: one matmul call over all b)."""
    b, m, k, n = shape
    lead = () if b is None else (b,)
    x = rng.standard_normal(lead + (m, k)).astype(np.float32)
    y = rng.standard_normal(lead + (k, n)).astype(np.float32)
    xa, ya = to_impl(impl, x), to_impl(impl, y)
    mm = module(impl).matmul
    _info(benchmark, f"matmul {_gemm_name(shape)}",
          2 * (b or 1) * m * k * n, "GFLOP/s")
    r = benchmark(synced(impl, lambda: mm(xa, ya)))
    np.testing.assert_allclose(np.asarray(r), x @ y, rtol=1e-3,
                               atol=1e-3 * k ** 0.5)


# ---- memory-bound throughput -----------------------------------------------------

@pytest.mark.parametrize("impl", impl_params())
def test_add_16m(benchmark, impl, rng):
    """a + b over 16M float32: reads 2, writes 1 (GB/s of that traffic)."""
    x = rng.standard_normal(BIG).astype(np.float32)
    a, b = to_impl(impl, x), to_impl(impl, x)
    _info(benchmark, "add 16M float32", 3 * x.nbytes, "GB/s")
    r = benchmark.pedantic(synced(impl, lambda: a + b), rounds=10,
                           warmup_rounds=2)
    assert np.asarray(r)[123] == 2 * x[123]


@needs_tfmini("reduce_sum")
@pytest.mark.parametrize("impl", impl_params())
def test_reduce_sum_16m(benchmark, impl, rng):
    """sum of 16M float32 (GB/s of input read)."""
    x = rng.standard_normal(BIG).astype(np.float32)
    a = to_impl(impl, x)
    total = {"tfmini": lambda: module("tfmini").reduce_sum(a),
             "numpy": lambda: x.sum(),
             "tensorflow": lambda: module("tensorflow").reduce_sum(a),
             "jax": lambda: a.sum().block_until_ready(),
             "torch": lambda: a.sum()}[impl]
    _info(benchmark, "reduce_sum 16M float32", x.nbytes, "GB/s")
    r = benchmark.pedantic(total, rounds=10, warmup_rounds=2)
    np.testing.assert_allclose(float(np.asarray(r)), float(x.sum(dtype=np.float64)),
                               rtol=1e-3, atol=1.0)
