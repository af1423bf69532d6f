"""kernels_index.c's GPU kernels, GatherV2 with batch dims and
TensorScatterMin/Max against the CPU's (issue 21): each op placed on the
GPU with nothing soft-placed, results bit for bit where the kernels are
exact (all of them but repeated-index float scatters of equal values of
another sign: -0.0 and 0.0). Every test skips without a GPU
(conftest.py); the glue and the .cu bodies were checked on the host by
tests/test_index_cuda_host.py."""
import numpy as np
import pytest

import tfmini as tf

from gpu_util import GPU, bits_equal, both, on_gpu_only


SPECIALS = [0.0, -0.0, 1.5, np.inf, -np.inf, np.nan, 1e-40, 3e38]


@pytest.mark.parametrize("fn,op", [(tf.math.is_nan, "IsNan"),
                                   (tf.math.is_inf, "IsInf"),
                                   (tf.math.is_finite, "IsFinite")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_predicates(capfd, fn, op, dtype):
    with np.errstate(over="ignore"):
        x = np.array(SPECIALS * 100, dtype)
    g, c, where = both(capfd, lambda: fn(tf.constant(x)))
    on_gpu_only(where, [op])
    bits_equal(g, c)


@pytest.mark.parametrize("args,dtype", [((0, 1000, 3), tf.int32),
                                        ((-5, 100000, 7), tf.int64),
                                        ((0.5, 1000.25, 0.37), tf.float32),
                                        ((-3.0, 7.0, 1e-4), tf.float64)])
def test_range(capfd, args, dtype):
    g, c, where = both(capfd, lambda: tf.range(*args, dtype=dtype))
    on_gpu_only(where, ["Range"])
    bits_equal(g, c)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_linspace(capfd, dtype):
    g, c, where = both(capfd, lambda: tf.linspace(
        tf.constant(-2.5, dtype), tf.constant(7.25, dtype), 100001))
    on_gpu_only(where, ["LinSpace"])
    bits_equal(g, c)


def test_gather_nd_and_its_gradient(capfd):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 30, 8)).astype(np.float32)
    idx = rng.integers(0, 30, (500, 2)).astype(np.int32)
    idx[:, 0] %= 40

    def run():
        v = tf.constant(x)
        with tf.GradientTape() as t:
            t.watch(v)
            y = tf.gather_nd(v, idx)
            s = tf.reduce_sum(y * y)
        return y, t.gradient(s, v)

    (gy, gd), (cy, cd), where = both(capfd, run)
    on_gpu_only(where, ["GatherNd", "Range", "TensorScatterAdd"])
    bits_equal(gy, cy)
    np.testing.assert_allclose(gd.numpy(), cd.numpy(), rtol=1e-5,
                               atol=1e-5)


def test_gather_nd_bad_index_is_the_cpus_error():
    x = tf.constant(np.ones((4, 5), np.float32))
    with tf.device(GPU):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            tf.gather_nd(x, [[1, 5]])
    assert "GatherNd" in str(e.value) and "[1, 5]" in str(e.value)


@pytest.mark.parametrize("shape,axis,bd", [((8, 50, 6), 1, 1),
                                           ((4, 3, 20, 5), 2, 2),
                                           ((4, 3, 20, 5), 2, 1)])
def test_gather_with_batch_dims(capfd, shape, axis, bd):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(0, shape[axis], shape[:bd] + (17,)).astype(np.int64)
    g, c, where = both(capfd, lambda: tf.gather(x, idx, axis=axis,
                                                batch_dims=bd))
    on_gpu_only(where, ["GatherV2"])
    bits_equal(g, c)


@pytest.mark.parametrize("shape,dtype", [((1000003,), np.bool_),
                                         ((300, 517), np.float32),
                                         ((7, 9, 11, 13), np.int32),
                                         ((5, 0), np.float64)])
def test_where_and_boolean_mask(capfd, shape, dtype):
    rng = np.random.default_rng(2)
    cond = (rng.random(shape) < 0.4).astype(dtype)
    g, c, where = both(capfd, lambda: tf.where(tf.constant(cond)))
    on_gpu_only(where, ["Where"])
    bits_equal(g, c)
    if len(shape) == 2:
        x = rng.standard_normal(shape).astype(np.float32)
        g, c, _ = both(capfd, lambda: tf.boolean_mask(
            tf.constant(x), tf.constant(cond.astype(bool))))
        bits_equal(g, c)


@pytest.mark.parametrize("fn,op", [(tf.tensor_scatter_nd_min,
                                    "TensorScatterMin"),
                                   (tf.tensor_scatter_nd_max,
                                    "TensorScatterMax")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64])
def test_scatter_min_max(capfd, fn, op, dtype):
    rng = np.random.default_rng(3)
    t = (rng.standard_normal((100, 4)) * 50).astype(dtype)
    u = (rng.standard_normal((3000, 4)) * 50).astype(dtype)
    idx = rng.integers(0, 100, (3000, 1)).astype(np.int32)
    if np.dtype(dtype).kind == "f":
        t[0, 0] = np.nan          # stays
        u[::7, 1] = np.nan        # never wins
    g, c, where = both(capfd, lambda: fn(tf.constant(t), idx,
                                         tf.constant(u)))
    on_gpu_only(where, [op])
    bits_equal(g, c)


def test_where_in_a_traced_function(capfd):
    # Traced, Where's output shape is unknown ([-1, 1]): the executor
    # counts on the host, the kernel counts again and checks, and the
    # plan is never captured (Note [Where on the GPU]).
    @tf.function
    def f(c):
        return tf.where(c)

    cond = np.arange(2000) % 3 == 0
    g, c, where = both(capfd, lambda: [f(tf.constant(cond))
                                       for _ in range(3)][-1])
    on_gpu_only(where, ["Where"])
    bits_equal(g, c)
