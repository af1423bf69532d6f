"""Gradient all-reduce overlapped with the backward pass (Note [Overlapped
gradient all-reduce] in tfmini/distribute/overlap.py), in process with a
fake slow all-reduce; the MPI runs are in test_distribute_mpi.py."""
import threading
import time

import numpy as np
import pytest

import tfmini as tf
from tfmini import backprop
from tfmini.distribute import overlap


def mlp(layers=4, width=32):
    tf.keras.utils.set_random_seed(0)
    m = tf.keras.Sequential(
        [tf.keras.layers.Dense(width, activation="tanh", input_shape=(8,))] +
        [tf.keras.layers.Dense(width, activation="tanh")
         for _ in range(layers - 2)] + [tf.keras.layers.Dense(1)])
    return m


X = np.random.default_rng(0).normal(size=(16, 8)).astype(np.float32)


class SlowSum:
    """A fake all-reduce over 2 identical workers: the sum (x2) arrives
    `delay` seconds after start, computed on a thread, as a transport
    would deliver it while the caller computes."""

    def __init__(self, delay=0.05):
        self.delay = delay
        self.started = []          # (time, reported gradients so far)
        self.reported = 0

    def start(self, arrays):
        self.started.append((time.perf_counter(), self.reported))

        def run():
            time.sleep(self.delay)
            for a in arrays:
                a *= 2
        th = threading.Thread(target=run)
        th.start()
        return th

    def poll(self, handles):
        pass

    def wait(self, handles):
        for th in handles:
            th.join()


class CountedSession(overlap.Session):
    def __call__(self, j, grad):
        self.backend.reported += 1
        super().__call__(j, grad)


@pytest.fixture
def hooked(monkeypatch):
    """backprop's hook giving a Session over a SlowSum (what a strategy's
    worker gets, with MPI replaced)."""
    backend = SlowSum()

    def hook(flat_sources):
        overlap.drain()
        return CountedSession(backend, 2048, len(flat_sources))
    monkeypatch.setattr(backprop, "_gradient_hook", hook)
    overlap.stats.reset()
    yield backend
    overlap.drain()


def grads_of(model):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(X) ** 2)
    return tape.gradient(loss, model.trainable_variables)


def test_tape_reports_each_gradient_when_complete():
    m = mlp(3, 16)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(m(X) ** 2)
    seen = []
    flat = tape._tape.gradient([loss], list(m.trainable_variables), None,
                               False, True,
                               lambda j, g: seen.append((j, g.numpy())))
    # The last layer's gradients are complete first; each one reported
    # is already the final value.
    assert [j for j, _ in seen] == [5, 4, 3, 2, 1, 0]
    for j, g in seen:
        np.testing.assert_array_equal(g, flat[j].numpy())


def test_a_variable_read_twice_is_reported_after_its_first_read():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        a = v * w                      # v read here ...
        b = tf.reduce_sum(a * a)
        loss = b + tf.reduce_sum(v)    # ... and here, later
    seen = []
    flat = tape._tape.gradient([loss], [v, w], None, False, True,
                               lambda j, g: seen.append((j, g.numpy())))
    assert sorted(j for j, _ in seen) == [0, 1]
    for j, g in seen:
        np.testing.assert_array_equal(g, flat[j].numpy())
    np.testing.assert_allclose(flat[0].numpy(), 2 * 9 * np.array([1, 2]) + 1)


def test_an_error_in_the_hook_stops_the_walk():
    m = mlp(3, 8)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(m(X))

    def boom(j, g):
        raise KeyError("from the hook")
    with pytest.raises(KeyError, match="from the hook"):
        tape._tape.gradient([loss], list(m.trainable_variables), None,
                            False, True, boom)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(m(X))
    with pytest.raises(TypeError, match="on_ready must be callable"):
        tape._tape.gradient([loss], list(m.trainable_variables), None,
                            False, True, 3)


def test_buckets_start_during_the_backward_pass(hooked):
    backend = hooked
    m = mlp(6, 32)                   # ~4 KiB per layer, 2 KiB buckets
    grads = grads_of(m)
    n = len(grads)
    assert overlap.stats.backward_passes == 1
    assert overlap.stats.buckets >= 3
    # All but the bucket finish() starts began while the tape walked,
    # each before the first layers' gradients existed.
    assert overlap.stats.buckets_started_in_backward >= \
        overlap.stats.buckets - 1
    assert backend.started[0][1] < n // 2
    assert overlap.stats.lead_seconds > 0
    # tape.gradient still gives this worker's own gradients ...
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(m(X) ** 2)
    backprop_hook, backprop._gradient_hook = backprop._gradient_hook, None
    try:
        plain = tape.gradient(loss, m.trainable_variables)
    finally:
        backprop._gradient_hook = backprop_hook
    for g, p in zip(grads, plain):
        np.testing.assert_array_equal(g.numpy(), p.numpy())
    # ... and the all-reduce asked for them takes the buckets' sums.
    sums, rest = overlap.take(list(grads))
    assert rest == [] and overlap.stats.reused == n
    for g, s in zip(grads, sums):
        np.testing.assert_allclose(s, 2 * g.numpy())


def test_overlap_hides_the_slow_all_reduce(hooked):
    backend = hooked
    backend.delay = 0.2
    m = mlp(6, 32)
    grads_of(m)
    t0 = time.perf_counter()
    overlap.drain()
    waited = time.perf_counter() - t0
    # Sequential buckets would take 0.2 s each after the walk; started
    # during it, they run side by side.
    assert overlap.stats.buckets >= 3
    assert waited < 0.2 * (overlap.stats.buckets - 1), waited


def test_replaced_gradients_are_reduced_afresh(hooked):
    m = mlp(3, 16)
    grads = grads_of(m)
    clipped = [g * 0.5 for g in grads]
    sums, rest = overlap.take([clipped[0], grads[1]])
    assert sums[0] is None and rest == [0]
    np.testing.assert_allclose(sums[1], 2 * grads[1].numpy())
    # The table is spent: a second take finds nothing.
    assert overlap.take([grads[1]])[1] == [0]


def test_no_hook_outside_a_strategy():
    assert backprop._gradient_hook in (None, overlap.session_for)
    # session_for gives nothing without a multi-worker replica context.
    assert overlap.session_for([tf.constant(1.0)]) is None


def test_plain_tape_gradient_path_unchanged(monkeypatch):
    """Without a multi-worker strategy the hook is absent or answers None:
    the C tape gets no on_ready and the gradients are the same. (Its cost,
    one None check, was measured against main: see the report; a timing
    assert is too noisy on a shared machine.)"""
    m = mlp(3, 8)
    ref = grads_of(m)
    asked = []

    def not_mine(flat_sources):
        asked.append(len(flat_sources))
        return None
    monkeypatch.setattr(backprop, "_gradient_hook", not_mine)
    got = grads_of(m)
    assert asked == [len(ref)]
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # Persistent tapes and jacobians take the same path.
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        y = v * v
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(tape.jacobian(y, v).numpy(),
                                  [[2.0, 0.0], [0.0, 4.0]])


# ---- the same in a traced step (Note [Overlapped all-reduce in a trace]) --

@pytest.fixture
def traced_hook(monkeypatch):
    """backprop's hook giving a TracedSession over a SlowSum while
    tracing (what a worker's traced step gets, with MPI replaced)."""
    from tfmini import _C
    from tfmini.distribute import overlap_traced
    backend = SlowSum()

    def hook(flat_sources):
        if not _C.tracing():
            return None
        return overlap_traced.TracedSession(backend, 2048,
                                            len(flat_sources))
    monkeypatch.setattr(backprop, "_gradient_hook", hook)
    overlap.stats.reset()
    yield backend
    overlap.drain()


def traced_step(model, reduce=True):
    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        if not reduce:
            return grads, grads
        sums, rest = overlap.take(list(grads))
        assert rest == []
        return grads, sums
    return step


def test_traced_buckets_start_during_the_backward_pass(traced_hook):
    m = mlp(6, 32)
    step = traced_step(m)
    grads, sums = step(X)
    st = overlap.stats
    assert st.backward_passes == 1 and st.buckets >= 3
    assert st.buckets_started_in_backward >= st.buckets - 1
    assert st.lead_seconds > 0 and st.reused == len(grads)
    for g, s in zip(grads, sums):
        np.testing.assert_allclose(s.numpy(), 2 * g.numpy(), rtol=1e-6)
    # In the graph the first bucket's start node comes before the last
    # backward matmul (the executor runs nodes in that order).
    ops = [o.type for o in step.get_concrete_function(X).graph
           .get_operations()]
    first_start = ops.index("EagerPyFunc")
    last_matmul = max(i for i, t in enumerate(ops) if "MatMul" in t)
    assert first_start < last_matmul
    # Each run starts and waits its buckets again.
    step(X)
    assert st.backward_passes == 2 and st.reused == 2 * len(grads)


def test_traced_overlap_hides_the_slow_all_reduce(traced_hook):
    traced_hook.delay = 0.2
    m = mlp(6, 32)
    step = traced_step(m)
    step(X)
    overlap.stats.reset()
    t0 = time.perf_counter()
    step(X)
    took = time.perf_counter() - t0
    # Started one after another during the run, the buckets travel side
    # by side: not 0.2 s each.
    assert overlap.stats.buckets >= 3
    assert took < 0.2 * (overlap.stats.buckets - 1), took


def test_traced_replaced_gradients_are_reduced_afresh(traced_hook):
    m = mlp(3, 16)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(m(x) ** 2)
        grads = tape.gradient(loss, m.trainable_variables)
        sums, rest = overlap.take([grads[0] * 0.5, grads[1]])
        assert sums[0] is None and rest == [0]
        return grads[1], sums[1]
    g, s = step(X)
    np.testing.assert_allclose(s.numpy(), 2 * g.numpy(), rtol=1e-6)


def test_traced_buckets_nobody_waited_for_are_drained(traced_hook):
    from tfmini.distribute import overlap_traced
    m = mlp(6, 32)
    step = traced_step(m, reduce=False)
    step(X)
    started = overlap_traced._started()
    assert len(started) == overlap.stats.buckets >= 3
    # The next backward pass (here: its first start node) waits for them.
    step(X)
    assert len(started) == overlap.stats.buckets // 2
    overlap.drain()
    assert started == []
