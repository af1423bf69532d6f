"""Memory: cached calls leave nothing behind; deleted functions free their
graphs; failures leak nothing."""
import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C


def c(x):
    return tf.constant(x)


def live():
    """(tensors, buffers, graphs, concrete functions) alive in the core."""
    gc.collect()
    tensors, buffers, _ = _C.live_counts()
    graphs, concretes = _C.function_live_counts()
    return tensors, buffers, graphs, concretes


def test_100k_cached_calls_leave_memory_flat():
    @tf.function
    def f(x, y):
        return x * y + 1.0

    x, y = c(np.ones(16, np.float32)), c(2.0)
    for _ in range(1000):
        f(x, y)
    before = live()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(100_000):
        r = f(x, y)
    del r
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename")
                if s.size_diff > 0)
    assert live() == before
    assert grown < 64 * 1024, grown
    assert f.experimental_get_tracing_count() == 1


def test_slow_path_hits_leave_memory_flat():
    @tf.function
    def f(x, *, k=1.0):
        return x * k

    x = c([1.0, 2.0])
    for _ in range(100):
        f(x, k=2.0)
    before = live()
    for _ in range(5000):
        f(x, k=2.0)
    assert live() == before


def test_failing_calls_leak_nothing():
    @tf.function(input_signature=[tf.TensorSpec([None]),
                                  tf.TensorSpec([None])])
    def f(x, y):
        return x * 2.0 + y

    a, b = c([1.0, 2.0]), c([1.0, 2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        f(a, b)
    before = live()
    for _ in range(2000):
        with pytest.raises(tf.errors.InvalidArgumentError):
            f(a, b)
    assert live() == before


def test_failing_traces_leave_no_graph():
    before = live()

    @tf.function
    def f(x):
        return x + c(np.ones(3, np.float64))

    for _ in range(50):
        with pytest.raises(tf.errors.InvalidArgumentError):
            f(c(np.ones(3, np.float32)))
    del f
    assert live() == before


def test_deleted_function_frees_its_graphs():
    before = live()

    def make():
        @tf.function
        def f(x, n):
            return x * float(n)
        for n in range(20):
            f(c([1.0, 2.0]), n)
        f.get_concrete_function(tf.TensorSpec([None]), 1)
        return f

    f = make()
    assert live()[2] >= before[2] + 21
    ref = weakref.ref(f)
    del f
    assert ref() is None
    assert live() == before


def test_function_in_a_reference_cycle_is_collected():
    before = live()

    def make():
        holder = {}

        @tf.function
        def f(x):
            holder["me"] = f         # f -> closure -> holder -> f
            return x + 1.0
        f(c(1.0))
        return weakref.ref(f)

    ref = make()
    gc.collect()
    assert ref() is None
    assert live() == before


def test_bound_method_graphs_go_with_the_instance():
    class Model:
        @tf.function
        def __call__(self, x):
            return x * 2.0

    before = live()
    m = Model()
    for n in range(1, 5):
        m(c(np.ones(n, np.float32)))
    assert live()[2] > before[2]
    del m
    assert live() == before


def test_graphs_of_dead_identity_keys_are_freed():
    class Config:
        k = 3.0

    @tf.function
    def f(cfg, x):
        return x * cfg.k

    x = c(1.0)
    f(Config(), x)
    baseline = live()
    for _ in range(30):
        f(Config(), x)       # a new object each call: a trace each
    assert live()[2] == baseline[2]


@pytest.mark.skipif(not hasattr(tf, "GradientTape"), reason="needs tapes")
def test_calls_under_a_tape_leave_memory_flat():
    @tf.function
    def f(x):
        return x * x

    x = c([1.0, 2.0])
    for _ in range(10):
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        t.gradient(y, x)
    del t, y
    before = live()
    for _ in range(2000):
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        g = t.gradient(y, x)
    del g, y, t
    assert live() == before
