"""The random ops that used to soft-place, on the GPU against the CPU
(issue 21, random.cu / kernels_random.c): RandomShuffle (the CPU's
permutation for the same seed: made on the host, rows gathered on the
GPU), Multinomial (tf.random.categorical and stateless_categorical, the
CPU's samples; float16/32/64 logits, int32/int64 samples) and the
float16 draws (uniform bit for bit; normals through CUDA's logf/sincosf,
within a half ulp). Eager, traced run by run, and a traced Generator's
state read back on the GPU; the placement log shows none of them on the
CPU. tests/test_random_cuda_host.py proves the same bodies and glue on
the host. Every test skips without a GPU."""
import numpy as np
import pytest

import tfmini as tf

from gpu_util import CPU, GPU, GPU_NAME, logged, on_gpu_only


def draw(device, fn, seed=7):
    tf.random.set_seed(seed)
    with tf.device(device):
        return fn()


def both(fn, seed=7):
    want = draw(CPU, fn, seed)
    got = draw(GPU, fn, seed)
    assert got.device == GPU_NAME and got.dtype == want.dtype
    assert got.shape == want.shape
    return got.numpy(), want.numpy()


# ---- RandomShuffle ----

SHUFFLE_SHAPES = [(), (1,), (1, 4), (2,), (3,), (7, 3), (5, 2, 3), (4, 0),
                  (0, 2), (1000,), (4097, 5)]


@pytest.mark.parametrize("shape", SHUFFLE_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64, np.float16, np.uint8,
                                   np.bool_, np.complex128],
                         ids=lambda d: d.__name__)
def test_shuffle_is_the_cpus_permutation(shape, dtype):
    x = (np.arange(int(np.prod(shape))) * 37 % 101).reshape(shape)
    x = (x * (1 + 1j) if dtype is np.complex128 else x).astype(dtype)

    def fn():
        return tf.random.shuffle(tf.constant(x), seed=3)
    got, want = both(fn)
    np.testing.assert_array_equal(got, want)


def test_shuffle_of_many_rows_is_the_cpus():
    x = np.arange(300000, dtype=np.int64).reshape(100000, 3)
    got, want = both(lambda: tf.random.shuffle(tf.constant(x), seed=11))
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, x)
    np.testing.assert_array_equal(np.sort(got[:, 0]), x[:, 0])


def test_shuffle_with_a_staged_permutation_is_the_cpus():
    """Past 131072 rows the permutation is over 1 MiB and goes to the GPU
    through device.c's pinned staging halves (a synchronized copy) before
    the host copy is freed; below it, a plain copy from pageable memory."""
    x = np.arange(300001, dtype=np.int32)
    got, want = both(lambda: tf.random.shuffle(tf.constant(x), seed=13))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.sort(got), x)


def test_repeated_shuffles_continue_the_cpus_stream():
    x = np.arange(40, dtype=np.float32).reshape(20, 2)

    def fn():
        return tf.stack([tf.random.shuffle(tf.constant(x), seed=5)
                         for _ in range(3)])
    got, want = both(fn)
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got[0], got[1])


# ---- Multinomial ----

def logits(shape, dtype, seed, special=False):
    x = np.random.default_rng(seed).standard_normal(shape) * 3
    if special:
        x.reshape(-1)[::7] = -np.inf
        x.reshape(-1)[3::11] = np.nan
        x[1] = -np.inf           # no finite logit: every sample is classes
    return x.astype(dtype)


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (5, 3), (33, 10),
                                   (3, 100000), (0, 4)], ids=str)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: d.__name__)
@pytest.mark.parametrize("out", [tf.int32, tf.int64], ids=str)
@pytest.mark.parametrize("n", [0, 1, 6, 257])
def test_categorical_is_the_cpus(shape, dtype, out, n):
    x = logits(shape, dtype, shape[1] + n)
    got, want = both(lambda: tf.random.categorical(tf.constant(x), n,
                                                   dtype=out, seed=9))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: d.__name__)
def test_categorical_with_infinities_and_nans_is_the_cpus(dtype):
    x = logits((4, 30), dtype, 1, special=True)
    got, want = both(lambda: tf.random.categorical(tf.constant(x), 50,
                                                   seed=2))
    np.testing.assert_array_equal(got, want)
    assert (got[1] == 30).all()


@pytest.mark.parametrize("classes", [257, 1000, 70000])
def test_categorical_of_wide_rows_is_the_cpus(classes):
    """Rows wider than random.cu's MN_CHUNK take their shift from chunk
    maxima in parallel: ties, infinities, NaNs and a row without a finite
    logit give the CPU's samples still."""
    x = logits((4, classes), np.float32, classes, special=True)
    row = x[2][np.isfinite(x[2])]
    x[2, ::300] = row.max() + 1       # the largest, in several chunks
    got, want = both(lambda: tf.random.categorical(tf.constant(x), 64,
                                                   seed=5))
    np.testing.assert_array_equal(got, want)
    assert (got[1] == classes).all()


def test_stateless_categorical_is_the_cpus():
    x = logits((6, 12), np.float32, 4)
    seed = tf.constant([17, -3], tf.int64)
    got, want = both(lambda: tf.random.stateless_categorical(
        tf.constant(x), 40, seed))
    np.testing.assert_array_equal(got, want)


# ---- float16 draws ----

def half_ulps(a, b):
    """How many float16 steps apart a and b are, elementwise."""
    ia = a.view(np.int16).astype(np.int64)
    ib = b.view(np.int16).astype(np.int64)
    ia = np.where(ia < 0, -32768 - ia, ia)
    ib = np.where(ib < 0, -32768 - ib, ib)
    return np.abs(ia - ib)


@pytest.mark.parametrize("shape", [(), (1,), (5,), (4, 3), (1025,)],
                         ids=str)
def test_float16_uniform_is_the_cpus(shape):
    got, want = both(lambda: tf.random.uniform(shape, -2.5, 3.0,
                                               dtype=tf.float16, seed=4))
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("kind", ["normal", "truncated_normal"])
@pytest.mark.parametrize("shape", [(1,), (7,), (1025,)], ids=str)
def test_float16_normals_are_the_cpus_within_a_half_ulp(kind, shape):
    f = getattr(tf.random, kind)
    got, want = both(lambda: f(shape, 0.5, 2.0, dtype=tf.float16, seed=3))
    assert half_ulps(got, want).max() <= 1


def test_traced_generator_float16_reads_its_state_on_the_gpu():
    def runs(device):
        g = tf.random.Generator.from_seed(99)

        @tf.function
        def f():
            with tf.device(device):
                return g.uniform([9], dtype=tf.float16), g.normal(
                    [3], dtype=tf.float16)

        out = [[t.numpy() for t in f()] for _ in range(3)]
        return out, g.state.numpy()

    (got, gs), (want, ws) = runs(GPU), runs(CPU)
    for g_, w_ in zip(got, want):
        np.testing.assert_array_equal(g_[0].view(np.uint16),
                                      w_[0].view(np.uint16))
        assert half_ulps(g_[1], w_[1]).max() <= 1
    np.testing.assert_array_equal(gs, ws)
    assert not np.array_equal(got[0][0], got[1][0])


# ---- traced, and where they ran ----

def test_traced_shuffle_and_categorical_match_the_cpus_run_by_run():
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    lg = logits((3, 5), np.float32, 6)

    def runs(device):
        tf.random.set_seed(21)

        @tf.function
        def f():
            with tf.device(device):
                return (tf.random.shuffle(tf.constant(x)),
                        tf.random.categorical(tf.constant(lg), 4))

        return [[t.numpy() for t in f()] for _ in range(3)]

    got, want = runs(GPU), runs(CPU)
    for gr, wr in zip(got, want):
        for g_, w_ in zip(gr, wr):
            np.testing.assert_array_equal(g_, w_)
    assert not np.array_equal(got[0][0], got[1][0])   # fresh each run


def test_the_random_ops_run_on_the_gpu(capfd):
    def all_of_them():
        with tf.device(GPU):
            x = tf.constant(np.arange(12, dtype=np.float32).reshape(6, 2))
            lg = tf.constant(logits((2, 4), np.float32, 0))
            return [tf.random.shuffle(x, seed=1),
                    tf.random.categorical(lg, 3, seed=1),
                    tf.random.stateless_categorical(lg, 3, [1, 2]),
                    tf.random.uniform([5], dtype=tf.float16, seed=1),
                    tf.random.normal([5], dtype=tf.float16, seed=1),
                    tf.random.truncated_normal([5], dtype=tf.float16,
                                               seed=1)]

    outs, where = logged(capfd, all_of_them)
    assert all(t.device == GPU_NAME for t in outs)
    on_gpu_only(where, ["RandomShuffle", "Multinomial", "RandomUniform",
                        "RandomStandardNormal", "TruncatedNormal"])
