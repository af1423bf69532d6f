"""tf.random: distributions (statistical checks with wide margins: each
fails by chance with probability far below 1e-6), TF's seed rules,
determinism across thread counts, and errors."""
import math

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

N = 200_000


@pytest.fixture(autouse=True)
def _clear_global_seed():
    tf.random.set_seed(None)
    yield
    tf.random.set_seed(None)


def _assert_mean_std(x, mean, std, n_sigma=6):
    x = np.asarray(x, np.float64).ravel()
    n = x.size
    # Standard errors of the sample mean and sample std.
    assert abs(x.mean() - mean) < n_sigma * std / math.sqrt(n), x.mean()
    assert abs(x.std() - std) < n_sigma * std / math.sqrt(2 * n), x.std()


# ---- distributions ----------------------------------------------------------

@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_normal_mean_and_std(dtype):
    x = tf.random.normal([N], mean=2.0, stddev=3.0, dtype=dtype, seed=1)
    assert x.dtype == dtype and x.shape == (N,)
    _assert_mean_std(x.numpy(), 2.0, 3.0)


def test_normal_is_normal():
    x = tf.random.normal([N], seed=2).numpy().astype(np.float64)
    # Tail mass and higher moments of N(0, 1).
    assert abs(np.mean(np.abs(x) > 1.96) - 0.05) < 0.004
    assert abs(np.mean(x ** 3)) < 0.05
    assert abs(np.mean(x ** 4) - 3.0) < 0.15


def test_normal_float16():
    x = tf.random.normal([4096], dtype=tf.float16, seed=3)
    assert x.dtype == tf.float16
    _assert_mean_std(x.numpy(), 0.0, 1.0)


def test_normal_with_tensor_parameters_broadcasts():
    mean = tf.constant([0.0, 100.0])
    x = tf.random.normal([N // 2, 2], mean=mean, stddev=tf.constant(2.0),
                         seed=4).numpy()
    _assert_mean_std(x[:, 0], 0.0, 2.0)
    _assert_mean_std(x[:, 1], 100.0, 2.0)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_uniform_range_and_moments(dtype):
    x = tf.random.uniform([N], -1.0, 3.0, dtype=dtype, seed=5).numpy()
    assert x.min() >= -1.0 and x.max() < 3.0
    _assert_mean_std(x, 1.0, 4.0 / math.sqrt(12))
    # Each quarter of the range gets a quarter of the draws.
    counts = np.histogram(x, bins=4, range=(-1, 3))[0]
    assert np.all(np.abs(counts - N / 4) < 6 * math.sqrt(N / 4))


def test_uniform_defaults_to_unit_interval():
    x = tf.random.uniform([1000], seed=6).numpy()
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() < 1


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_uniform_int_covers_range_evenly(dtype):
    x = tf.random.uniform([N], minval=-5, maxval=7, dtype=dtype,
                          seed=7).numpy()
    assert x.dtype == dtype.as_numpy_dtype
    assert x.min() == -5 and x.max() == 6
    counts = np.bincount(x + 5, minlength=12)
    expected = N / 12
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 60   # 11 degrees of freedom: P(chi2 > 60) ~ 1e-8


def test_uniform_int_full_int32_range():
    x = tf.random.uniform([1000], minval=-2**31, maxval=2**31,
                          dtype=tf.int32, seed=8).numpy()
    assert x.min() < -2**29 and x.max() > 2**29


def test_uniform_int64_wide_range():
    x = tf.random.uniform([1000], minval=0, maxval=2**62, dtype=tf.int64,
                          seed=9).numpy()
    assert x.min() >= 0 and x.max() > 2**60


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_truncated_normal_stays_within_two_stddevs(dtype):
    x = tf.random.truncated_normal([N], mean=1.0, stddev=2.0, dtype=dtype,
                                   seed=10).numpy()
    assert x.min() >= 1.0 - 4.0 and x.max() <= 1.0 + 4.0
    # The std of N(0, 1) truncated to [-2, 2].
    phi = math.exp(-2.0) / math.sqrt(2 * math.pi)
    z = math.erf(2 / math.sqrt(2))
    std = 2.0 * math.sqrt(1 - 4 * phi / z)
    _assert_mean_std(x, 1.0, std)


def test_shuffle_is_a_permutation_of_rows():
    x = np.arange(1000 * 3).reshape(1000, 3).astype("int32")
    y = tf.random.shuffle(x, seed=11).numpy()
    assert y.shape == x.shape and y.dtype == x.dtype
    assert not np.array_equal(y, x)
    # Rows move whole.
    np.testing.assert_array_equal(y[:, 1] - y[:, 0], 1)
    np.testing.assert_array_equal(np.sort(y[:, 0]), x[:, 0])


def test_shuffle_is_uniform_over_positions():
    # Where element 0 of 4 lands, over many shuffles: each slot ~1/4.
    firsts = [int(np.argmax(tf.random.shuffle(np.arange(4), seed=12)
                            .numpy() == 0)) for _ in range(2000)]
    counts = np.bincount(firsts, minlength=4)
    assert np.all(np.abs(counts - 500) < 6 * math.sqrt(2000 * 0.25 * 0.75))


@pytest.mark.parametrize("value", [np.float16(3.0) * np.ones((5, 2)),
                                   np.array(7.0), np.zeros((0, 3)),
                                   np.ones((1, 4), bool)])
def test_shuffle_edge_cases_keep_dtype_and_values(value):
    y = tf.random.shuffle(value).numpy()
    assert y.dtype == value.dtype and y.shape == value.shape
    np.testing.assert_array_equal(np.sort(y, axis=0) if y.ndim else y,
                                  np.sort(value, axis=0) if value.ndim
                                  else value)


def test_shapes_from_tensorshape_and_tensor():
    assert tf.random.normal(tf.TensorShape([2, 3])).shape == (2, 3)
    assert tf.random.uniform(tf.constant([4, 1])).shape == (4, 1)
    assert tf.random.normal([]).shape == ()
    assert tf.random.normal([0, 5]).shape == (0, 5)


# ---- seeds ------------------------------------------------------------------

def test_global_seed_replays_the_same_program():
    def program():
        return [tf.random.normal([3]).numpy(),
                tf.random.uniform([3]).numpy(),
                tf.random.normal([3], seed=5).numpy(),
                tf.random.normal([3], seed=5).numpy(),
                tf.random.shuffle(np.arange(10)).numpy()]
    tf.random.set_seed(1234)
    first = program()
    tf.random.set_seed(1234)
    second = program()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    # Successive calls differ, also with the same op seed.
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[2], first[3])
    tf.random.set_seed(4321)
    assert not np.array_equal(program()[0], first[0])


def test_op_seed_alone_is_deterministic_per_process():
    a1 = tf.random.uniform([4], seed=7).numpy()
    a2 = tf.random.uniform([4], seed=7).numpy()
    assert not np.array_equal(a1, a2)
    tf.random.set_seed(None)        # resets the per-seed call counts
    np.testing.assert_array_equal(tf.random.uniform([4], seed=7).numpy(), a1)


def test_no_seed_is_nondeterministic():
    a = tf.random.normal([8]).numpy()
    tf.random.set_seed(None)
    b = tf.random.normal([8]).numpy()
    assert not np.array_equal(a, b)


def test_different_op_seeds_give_different_streams():
    tf.random.set_seed(3)
    a = tf.random.normal([8], seed=1).numpy()
    tf.random.set_seed(3)
    b = tf.random.normal([8], seed=2).numpy()
    assert not np.array_equal(a, b)


def test_thread_count_does_not_change_numbers():
    old = _C.get_num_threads()
    try:
        _C.set_num_threads(1)
        tf.random.set_seed(9)
        one = [tf.random.normal([100_003]).numpy(),
               tf.random.uniform([100_003], maxval=10, dtype=tf.int64).numpy(),
               tf.random.truncated_normal([50_001]).numpy()]
        _C.set_num_threads(max(2, old))
        tf.random.set_seed(9)
        many = [tf.random.normal([100_003]).numpy(),
                tf.random.uniform([100_003], maxval=10,
                                  dtype=tf.int64).numpy(),
                tf.random.truncated_normal([50_001]).numpy()]
    finally:
        _C.set_num_threads(old)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


def test_prefix_of_a_bigger_draw_is_stable():
    # Element e depends only on e, not on the size asked for.
    big = tf.random.stateless_normal([1001], seed=[1, 2]).numpy()
    small = tf.random.stateless_normal([7], seed=[1, 2]).numpy()
    np.testing.assert_array_equal(big[:7], small)


def test_stateless_ops_repeat_and_depend_on_seed():
    for fn in (tf.random.stateless_normal, tf.random.stateless_uniform,
               tf.random.stateless_truncated_normal):
        a = fn([5], seed=[1, 2]).numpy()
        np.testing.assert_array_equal(fn([5], seed=[1, 2]).numpy(), a)
        assert not np.array_equal(fn([5], seed=[1, 3]).numpy(), a)
    x = tf.random.stateless_uniform([5], seed=tf.constant([4, 5]), minval=0,
                                    maxval=10, dtype=tf.int32).numpy()
    assert x.min() >= 0 and x.max() < 10
    with pytest.raises(ValueError, match="shape \\[2\\]"):
        tf.random.stateless_normal([2], seed=3)


def test_graph_instances_draw_fresh_numbers_each_run():
    # What a traced random op does (see Note [Random streams]): attrs with
    # an instance id > 0 advance per run; instance 0 (eager) replays.
    op = ID["RandomStandardNormal"]
    def run(instance):
        return _C.call(op, (), ints=[4], i=[1, 2, 3, instance],
                       f=(0.0, 1.0), dtype=tf.float32._enum).numpy()
    eager = run(0)
    np.testing.assert_array_equal(run(0), eager)
    first, second = run(10**12), run(10**12)
    np.testing.assert_array_equal(first, eager)   # run 0 draws as eager
    assert not np.array_equal(first, second)
    # A fresh instance (a retrace) starts its own count: it replays.
    np.testing.assert_array_equal(run(10**12 + 1), eager)
    third = run(10**12)
    assert not np.array_equal(third, second)


# ---- Generator --------------------------------------------------------------

def test_generator_from_seed_is_reproducible_and_advances():
    g1 = tf.random.Generator.from_seed(42)
    g2 = tf.random.Generator.from_seed(42)
    a, b = g1.normal([5]).numpy(), g1.normal([5]).numpy()
    np.testing.assert_array_equal(g2.normal([5]).numpy(), a)
    assert not np.array_equal(a, b)
    u = g1.uniform([N], minval=2.0, maxval=4.0).numpy()
    assert u.min() >= 2.0 and u.max() < 4.0
    i = g1.uniform([100], maxval=3, dtype=tf.int32).numpy()
    assert set(i.tolist()) <= {0, 1, 2}
    t = g1.truncated_normal([1000]).numpy()
    assert np.abs(t).max() <= 2.0


def test_generator_independent_of_global_seed():
    tf.random.set_seed(1)
    a = tf.random.Generator.from_seed(5).normal([3]).numpy()
    tf.random.set_seed(2)
    np.testing.assert_array_equal(
        tf.random.Generator.from_seed(5).normal([3]).numpy(), a)


def test_generator_split_and_state():
    g = tf.random.Generator.from_seed(1)
    kids = g.split(2)
    assert not np.array_equal(kids[0].normal([4]).numpy(),
                              kids[1].normal([4]).numpy())
    assert g.make_seeds(3).shape == (2, 3)
    s = tf.random.Generator.from_seed(8)
    s.normal([1])
    copy = tf.random.Generator.from_state(s.state)
    np.testing.assert_array_equal(copy.normal([3]).numpy(),
                                  s.normal([3]).numpy())
    assert isinstance(tf.random.get_global_generator(), tf.random.Generator)


# ---- errors -----------------------------------------------------------------

def test_integer_uniform_needs_maxval():
    with pytest.raises(ValueError, match="maxval"):
        tf.random.uniform([2], dtype=tf.int32)


def test_integer_uniform_needs_a_nonempty_range():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="minval < maxval"):
        tf.random.uniform([2], minval=5, maxval=5, dtype=tf.int32)


def test_float_sampling_rejects_int_dtype():
    with pytest.raises(TypeError, match="float"):
        tf.random.normal([2], dtype=tf.int32)


def test_negative_shape_is_an_error_naming_the_op():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="RandomStandardNormal"):
        tf.random.normal([2, -1])


def test_scalar_shape_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="vector"):
        tf.random.normal(3)
