"""Per-thread runtime state (issue 14): tapes, pause barriers, the trace
stack, the device scope and name scopes belong to the thread that set
them, as in TF; the caches they share stay correct under concurrent use.
Every test uses real threads, forces its interleaving with Events and
gives each wait a timeout, so a broken build fails instead of hanging.
tests/tsan.sh runs this file under ThreadSanitizer."""
import threading

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

WAIT = 20          # seconds: any wait longer than this is a failure
BIG = 70000        # elements: kernels this big run without the GIL


def run_threads(targets):
    """Run each callable in its own thread; re-raise the first error."""
    errors = []

    def wrap(fn):
        def body():
            try:
                fn()
            except BaseException as e:   # noqa: BLE001 (re-raised below)
                errors.append(e)
        return body

    threads = [threading.Thread(target=wrap(fn), daemon=True)
               for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 3)
        assert not t.is_alive(), "a thread hung"
    if errors:
        raise errors[0]


def must(event):
    assert event.wait(WAIT), "an event never came"


def device_scope():
    """This thread's device scope (-1 none, 0 CPU, 1+n GPU n)."""
    old = _C.set_device_scope(-1)
    _C.set_device_scope(old)
    return old


# ---- the reproducer ---------------------------------------------

def test_tracing_in_another_thread_does_not_pause_this_tape():
    in_trace, may_finish = threading.Event(), threading.Event()

    @tf.function
    def traced(v):
        in_trace.set()
        may_finish.wait(WAIT)
        return v * 2.0

    x = tf.constant([1.0, 2.0, 3.0])
    out = []
    t = threading.Thread(target=lambda: out.append(traced(tf.constant(1.0))))
    with tf.GradientTape() as tape:
        tape.watch(x)
        t.start()
        must(in_trace)
        assert _C.tapes_active() == 1      # the trace paused only its thread
        a = x * 3.0
        may_finish.set()
        t.join(WAIT)
        y = tf.reduce_sum(a * x)
    assert not t.is_alive()
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [6, 12, 18])
    assert float(out[0]) == 2.0


def test_custom_gradient_in_another_thread_does_not_pause_this_tape():
    inside, may_finish = threading.Event(), threading.Event()

    @tf.custom_gradient
    def f(v):
        inside.set()
        may_finish.wait(WAIT)

        def grad(dy):
            return dy * 7.0
        return v * 1.0, grad

    x = tf.constant(2.0)
    t = threading.Thread(target=lambda: f(tf.constant(1.0)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        t.start()
        must(inside)
        y = x * x
        may_finish.set()
        t.join(WAIT)
    assert float(tape.gradient(y, x)) == 4.0


# ---- a thread records only on its own tapes -------------------------------

def test_other_threads_ops_on_a_watched_tensor_are_not_recorded():
    x = tf.constant([1.0, 2.0])
    got = {}
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        before = tape._tape.record_count
        run_threads([lambda: got.update(y=x * 5.0,
                                        active=_C.tapes_active())])
        assert tape._tape.record_count == before
        z = x * 3.0
    assert got["active"] == 0
    assert tape.gradient(got["y"], x) is None
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [3, 3])


def test_variable_reads_are_watched_by_the_reading_threads_tape_only():
    v = tf.Variable(3.0)
    read, done = threading.Event(), threading.Event()
    seen = {}

    def other():
        with tf.GradientTape() as tape:
            must(read)
            seen["vars"] = tape.watched_variables()
            seen["grad"] = tape.gradient(tf.constant(1.0) * 2.0, v)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with tf.GradientTape() as tape:
        y = v * v
        read.set()
        must(done)
    t.join(WAIT)
    assert seen["vars"] == () and seen["grad"] is None
    assert tape.watched_variables() == (v,)
    assert float(tape.gradient(y, v)) == 6.0


def test_tape_exited_in_another_thread_stops_recording_here():
    # TF forgets the tape only in the exiting thread's tape set; tfmini
    # takes it off the entering thread's stack too (Note [Tapes and
    # threads] in csrc/runtime/tape.c): it is no longer recording.
    x = tf.constant(2.0)
    tape = tf.GradientTape(persistent=True)
    tape.__enter__()
    tape.watch(x)
    y = x * x
    run_threads([lambda: tape.__exit__(None, None, None)])
    assert not tape._recording
    assert _C.tapes_active() == 0
    z = x * 10.0                      # not recorded any more
    assert float(tape.gradient(y, x)) == 4.0
    assert tape.gradient(z, x) is None
    with tape:                        # and it can be entered again here
        w = x * 5.0
    assert float(tape.gradient(w, x)) == 5.0


def test_tape_watched_and_differentiated_from_another_thread():
    x = tf.constant(3.0)
    watched, computed = threading.Event(), threading.Event()
    out = {}
    tape = tf.GradientTape()

    def helper():
        tape.watch(x)
        watched.set()
        must(computed)
        out["g"] = tape.gradient(out["y"], x)

    t = threading.Thread(target=helper)
    with tape:
        t.start()
        must(watched)
        out["y"] = x * x * x
    computed.set()
    t.join(WAIT)
    assert float(out["g"]) == 27.0


def test_tape_left_entered_by_a_finished_thread_is_safe():
    tapes = []

    def enter_and_leave():
        tape = tf.GradientTape()
        tape.__enter__()
        tapes.append(tape)

    run_threads([enter_and_leave])
    tape = tapes.pop()
    assert tape._recording
    x = tf.constant(1.0)
    tape.watch(x)
    y = x * 2.0                   # this thread never entered it
    assert tape.gradient(y, x) is None
    tape.__exit__(None, None, None)
    assert not tape._recording
    del tape                      # freed after its thread ended
    # and a tape that is still entered when freed
    run_threads([enter_and_leave])
    tapes.clear()
    assert _C.tapes_active() == 0


def test_concurrent_tapes_give_each_thread_its_gradient():
    n = 4
    start = threading.Barrier(n, timeout=WAIT)
    results = [None] * n

    def worker(i):
        def body():
            rng = np.random.default_rng(i)
            small = tf.constant(rng.standard_normal(5).astype(np.float32))
            big = tf.constant(rng.standard_normal(BIG).astype(np.float32))
            v = tf.Variable(float(i + 1))
            start.wait()
            for _ in range(5):
                with tf.GradientTape(persistent=True) as tape:
                    tape.watch([small, big])
                    y = tf.reduce_sum(small * small) * (i + 1.0) \
                        + tf.reduce_sum(tf.sin(big)) + v * v * v
                gs, gb, gv = tape.gradient(y, [small, big, v])
                assert tape.watched_variables() == (v,)
                np.testing.assert_allclose(
                    gs.numpy(), 2 * (i + 1) * small.numpy(), rtol=1e-6)
                np.testing.assert_allclose(gb.numpy(), np.cos(big.numpy()),
                                           rtol=1e-5, atol=1e-6)
                assert float(gv) == pytest.approx(3 * (i + 1) ** 2)
            results[i] = True
        return body

    run_threads([worker(i) for i in range(n)])
    assert all(results)


# ---- tracing, device scope, name scope -----------------------------------

def test_trace_stack_is_per_thread():
    in_trace, may_finish = threading.Event(), threading.Event()
    seen = {}

    @tf.function
    def traced(v):
        in_trace.set()
        may_finish.wait(WAIT)
        return v + 1.0

    t = threading.Thread(target=lambda: traced(tf.constant(1.0)))
    t.start()
    must(in_trace)
    seen["eager"] = tf.executing_eagerly()
    seen["value"] = (tf.constant(2.0) * 3.0).numpy()   # runs eagerly here
    may_finish.set()
    t.join(WAIT)
    assert seen["eager"] is True and seen["value"] == 6.0


def test_device_scope_is_per_thread():
    entered, checked = threading.Event(), threading.Event()
    seen = {}

    def other():
        with tf.device("/CPU:0"):
            seen["inside"] = device_scope()
            entered.set()
            must(checked)
        seen["after"] = device_scope()

    t = threading.Thread(target=other)
    t.start()
    must(entered)
    here = device_scope()
    checked.set()
    t.join(WAIT)
    assert seen == {"inside": 0, "after": -1}
    assert here == -1
    with tf.device("/CPU:0"):
        run_threads([lambda: seen.update(fresh=device_scope())])
        assert device_scope() == 0
    assert seen["fresh"] == -1


def test_name_scope_is_per_thread():
    entered, made = threading.Event(), threading.Event()
    names = {}

    def other():
        with tf.name_scope("outer"):
            entered.set()
            must(made)
            names["other"] = tf.Variable(1.0, name="w").name

    t = threading.Thread(target=other)
    t.start()
    must(entered)
    names["here"] = tf.Variable(1.0, name="w").name
    made.set()
    t.join(WAIT)
    assert names == {"here": "w:0", "other": "outer/w:0"}


# ---- tf.function from several threads ------------------------------------

def test_function_called_concurrently_hits_one_cache_entry():
    n, calls = 4, 30
    v = tf.Variable(np.ones(BIG, np.float32))

    @tf.function
    def f(x, y):
        return tf.reduce_sum(x * y + v), x * 2.0

    start = threading.Barrier(n, timeout=WAIT)

    def worker(i):
        def body():
            x = tf.constant(np.full(BIG, float(i), np.float32))
            y = tf.constant(np.full(BIG, 2.0, np.float32))
            start.wait()
            for _ in range(calls):
                s, d = f(x, y)
                assert float(s) == pytest.approx(BIG * (2.0 * i + 1))
                assert float(d.numpy()[-1]) == 2.0 * i
        return body

    run_threads([worker(i) for i in range(n)])
    assert f.experimental_get_tracing_count() == 1


def test_function_first_call_from_several_threads_traces_once():
    # The traces are serialized per function, as in TF (its Function
    # holds a lock while tracing): the threads that wait then hit the
    # cache instead of tracing again.
    n = 4
    arrived = threading.Barrier(n, timeout=WAIT)
    tracing = threading.Event()

    @tf.function
    def f(x):
        tracing.set()
        return x * 3.0

    def worker(i):
        def body():
            arrived.wait()
            assert float(f(tf.constant(float(i)))) == 3.0 * i
        return body

    run_threads([worker(i) for i in range(n)])
    assert f.experimental_get_tracing_count() == 1


def test_function_retraces_concurrently_with_calls():
    n = 4
    start = threading.Barrier(n, timeout=WAIT)

    @tf.function
    def f(x):
        return tf.reduce_sum(x * x) + tf.cast(tf.size(x), tf.float32)

    def worker(i):
        def body():
            start.wait()
            for k in range(1, 12):
                size = (i * 7 + k) % 9 + 1      # shapes that retrace
                x = tf.constant(np.arange(size, dtype=np.float32))
                want = float(np.sum(np.arange(size) ** 2) + size)
                assert float(f(x)) == want
        return body

    run_threads([worker(i) for i in range(n)])
    assert f.experimental_get_tracing_count() <= 9 + 1


def test_function_traced_while_another_thread_records_its_calls():
    in_trace, may_finish = threading.Event(), threading.Event()

    @tf.function
    def g(v):
        return v * v

    @tf.function
    def slow(v):
        in_trace.set()
        may_finish.wait(WAIT)
        return v + 1.0

    x = tf.constant(3.0)
    g(x)                                 # traced before
    t = threading.Thread(target=lambda: slow(tf.constant(0.0)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        t.start()
        must(in_trace)
        y = g(x)                         # recorded: the other thread traces
        may_finish.set()
        t.join(WAIT)
    assert float(tape.gradient(y, x)) == 6.0


# ---- the shared caches and allocators under concurrent use ----------------

def test_shared_caches_and_allocators_under_concurrent_use():
    # Big enough that kernels, fused (and natively compiled) programs and
    # random kernels run without the GIL, overlapping the other threads'
    # allocations, cache lookups and tape records (tests/tsan.sh checks
    # this test for races).
    n = 3
    start = threading.Barrier(n, timeout=WAIT)
    w = tf.Variable(np.full((64, 64), 0.5, np.float32))

    @tf.function
    def chain(x):
        return tf.reduce_sum(tf.tanh(x * 0.5 + 1.0) * x - x / 3.0)

    @tf.function
    def noise(x):
        return x + tf.random.uniform([BIG], seed=7)

    @tf.function
    def step(v, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(x, w) * v)
        g = tape.gradient(loss, v)
        v.assign_sub(0.1 * g)
        return loss

    def worker(i):
        def body():
            xs = np.linspace(-1, 1, BIG, dtype=np.float32) * (i + 1)
            x = tf.constant(xs)
            want = float(np.sum(np.tanh(xs * 0.5 + 1.0) * xs - xs / 3.0))
            m = tf.constant(np.full((64, 64), i + 1.0, np.float32))
            v = tf.Variable(np.ones((64, 64), np.float32))
            start.wait()
            for k in range(6):
                assert float(chain(x)) == pytest.approx(want, rel=1e-4)
                r = noise(x).numpy() - xs
                assert r.shape == (BIG,) and 0 <= r.min() and r.max() < 1
                loss = float(step(v, m))
                # v shrinks by 0.1 * (m @ w) each step: all ones times
                # 0.5 * 64 * (i + 1).
                shrink = 0.1 * 32.0 * (i + 1)
                assert loss == pytest.approx(
                    64 * 64 * 32.0 * (i + 1) * (1 - shrink * k), rel=1e-4)
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = tf.reduce_sum(tf.exp(x * 0.001))
                g = tape.gradient(y, x).numpy()
                np.testing.assert_allclose(g, 0.001 * np.exp(xs * 0.001),
                                           rtol=1e-5)
        return body

    run_threads([worker(i) for i in range(n)])


def test_keras_models_trained_in_parallel_threads():
    n = 3
    start = threading.Barrier(n, timeout=WAIT)
    final = [None] * n

    def worker(i):
        def body():
            rng = np.random.default_rng(i)
            x = tf.constant(rng.standard_normal((128, 300)).astype(np.float32))
            y = tf.constant(rng.standard_normal((128, 1)).astype(np.float32))
            model = tf.keras.Sequential([
                tf.keras.layers.Dense(300, activation="relu"),
                tf.keras.layers.Dense(1)])
            opt = tf.keras.optimizers.Adam(0.01)

            @tf.function
            def step(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean((model(x) - y) ** 2)
                g = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(g, model.trainable_variables))
                return loss

            start.wait()
            losses = [float(step(x, y)) for _ in range(10)]
            assert losses[-1] < 0.5 * losses[0], losses
            model.compile(optimizer="sgd", loss="mse")
            model.fit(x, y, epochs=1, batch_size=64, verbose=0)
            final[i] = losses[-1]
        return body

    run_threads([worker(i) for i in range(n)])
    assert all(f is not None for f in final)


def test_run_functions_eagerly_is_process_wide_as_in_tf():
    seen = {}

    @tf.function
    def f(x):
        seen.setdefault("eager", []).append(tf.executing_eagerly())
        return x + 1.0

    tf.config.run_functions_eagerly(True)
    try:
        run_threads([lambda: f(tf.constant(1.0))])
    finally:
        tf.config.run_functions_eagerly(False)
    f(tf.constant(1.0))
    assert seen["eager"] == [True, False]
