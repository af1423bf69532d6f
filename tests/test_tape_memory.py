"""Tapes release what they hold: after gradient() (non-persistent), on
deletion (persistent), and when a reference cycle runs through a tape
(see Note [Tape lifetime] in csrc/runtime/tape.h)."""
import gc
import os
import resource
import weakref

import numpy as np

import tfmini as tf


def live():
    gc.collect()
    return tf._C.live_counts()


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def train_step(w, b, x, y):
    with tf.GradientTape() as tape:
        err = w * x + b - y
        loss = err * err
    gw, gb = tape.gradient(loss, [w, b])
    w.assign_sub(gw * 0.01)
    b.assign_sub(gb * 0.01)


def test_ten_thousand_training_steps_stay_flat():
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.normal(size=16).astype(np.float32))
    b = tf.Variable(np.zeros(16, np.float32))
    x = tf.constant(rng.normal(size=16).astype(np.float32))
    y = x * 3.0 + 1.0
    for _ in range(1000):
        train_step(w, b, x, y)
    counts, rss = live(), rss_kb()
    for _ in range(9000):
        train_step(w, b, x, y)
    assert live() == counts
    # Allocator noise only: a leak of one tensor per step would be far
    # above this (9000 steps x ~100 bytes x several tensors). Under ASan
    # freed memory sits in a quarantine, so RSS says nothing there.
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        assert rss_kb() - rss < 2048
    assert tf._C.tapes_active() == 0
    np.testing.assert_allclose(w.numpy() * x.numpy() + b.numpy(),
                               y.numpy(), atol=1e-3)


def test_non_persistent_tape_frees_records_after_gradient():
    x = tf.constant(np.ones(1000, np.float32))
    base = live()
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
        z = y * y
    core = t._tape
    assert core.record_count == 2
    g = t.gradient(z, x)
    assert core.record_count == 0
    del y, z, g, core
    assert live() == base


def test_persistent_tape_frees_on_deletion():
    x = tf.constant(np.ones(1000, np.float32))
    base = live()
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    for _ in range(3):
        t.gradient(z, x)
    assert t._tape.record_count == 2
    del y, z
    assert live() != base        # the tape keeps its record alive
    del t
    assert live() == base


def test_reset_frees_records():
    x = tf.constant(np.ones(100, np.float32))
    with tf.GradientTape() as t:
        t.watch(x)
        for _ in range(10):
            _ = x * x
        assert t._tape.record_count == 10
        t.reset()
        assert t._tape.record_count == 0


def test_ops_on_unwatched_tensors_are_not_recorded():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        for _ in range(5):
            _ = tf.constant([3.0]) * 2.0     # nothing watched
        _ = tf.cast(x, tf.int32) * 2         # integer path
    assert t._tape.record_count == 1        # the cast only


def test_cycle_through_custom_gradient_closure_is_collected():
    base = live()

    def make():
        tape = tf.GradientTape(persistent=True)

        @tf.custom_gradient
        def f(x):
            def grad(dy):
                _ = tape            # the record points back at the tape
                return dy
            return x * 1.0, grad

        x = tf.constant(np.ones(100, np.float32))
        with tape:
            tape.watch(x)
            y = f(x)
        assert tape._tape.record_count == 1     # f's inside is not
        return weakref.ref(tape), weakref.ref(tape._tape)

    ref, core_ref = make()
    gc.collect()
    assert ref() is None and core_ref() is None
    assert live() == base


def test_cycle_through_variable_attributes_is_collected():
    base = live()
    v = tf.Variable(np.ones(100, np.float32))
    v.me = v
    ref = weakref.ref(v)
    del v
    gc.collect()
    assert ref() is None
    assert live() == base


def test_tape_dropped_while_recording_leaves_the_stack():
    x = tf.constant(1.0)
    t = tf.GradientTape()
    t.__enter__()
    t.watch(x)
    assert tf._C.tapes_active() == 1
    del t
    gc.collect()
    assert tf._C.tapes_active() == 0
    _ = x * x                    # no tape to record on: must not crash


def test_watched_variables_do_not_outlive_their_objects():
    with tf.GradientTape() as t:
        v = tf.Variable(1.0)
        _ = v * 2.0
    ref = weakref.ref(v)
    del v, _
    gc.collect()
    assert ref() is None
    assert t.watched_variables() == ()


def test_tape_keeps_only_what_rules_read():
    # exp(x + 1): Add's rule needs no values and Exp's only its output, so
    # the tape must not keep the sum alive once the user drops it.
    x = tf.constant(np.ones(100_000, np.float32))

    def held(drop):
        gc.collect()
        before = tf._C.live_counts()[2]
        with tf.GradientTape() as t:
            t.watch(x)
            a = x + 1.0
            y = tf.exp(a)
        if drop:
            del a
        gc.collect()
        grown = tf._C.live_counts()[2] - before
        g = t.gradient(y, x)
        np.testing.assert_allclose(g.numpy(), np.exp(2.0), rtol=1e-6)
        return grown

    tf._C.set_tape_stub_min(1 << 62)
    try:
        kept_all = held(True)
    finally:
        tf._C.set_tape_stub_min(1024)
    assert kept_all >= 2 * 400_000            # a and y
    assert held(True) < 2 * 400_000            # only y
