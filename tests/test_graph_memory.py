"""The executor's memory plan (Note [Memory plan] in csrc/graph/exec.c):
static-shape intermediates share one arena kept across calls, elementwise
ops write over inputs that die at them, and none of it changes a number.
The "memory" pass switched off gives the old per-output allocation."""
import gc
import io
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C


@pytest.fixture
def memory_pass():
    """Set the memory pass for functions traced in the test; restore it
    afterwards. Fusion and the matmul epilogue are off here, so that the
    plan has chains of kernel steps to place; test_fused_* below run
    with them on."""
    before = _C.graph_passes()

    def set_(on):
        tf.config.optimizer.set_experimental_options(
            {"memory": on, "fusion": False, "epilogue": False})

    yield set_
    _C.set_graph_passes(before)


def test_fused_steps_get_planned_outputs():
    """With fusion on, fused nodes take their outputs from the arena (in
    place over a dying full-shape input), a call allocates only what it
    returns, and the numbers are those of the unfused graph."""
    assert all(_C.graph_passes().values())

    def f(x, w):
        h = tf.nn.relu(tf.matmul(x, w) + 1.0)      # _FusedMatMul
        g = tf.exp(h * 0.5) * h - 1.0              # _FusedElementwise
        return tf.reduce_sum(tf.tanh(g) * 2.0 + g)

    rng = np.random.default_rng(5)
    x = tf.constant(rng.standard_normal((64, 48)).astype(np.float32))
    w = tf.constant(rng.standard_normal((48, 64)).astype(np.float32))
    fused = tf.function(f)
    got = fused(x, w)
    cf = fused.get_concrete_function(x, w)
    types = [op.type for op in cf.optimized_graph.get_operations()]
    assert "_FusedMatMul" in types and "_FusedElementwise" in types
    plan = cf._memory_plan
    assert plan["arena_slots"] >= 2 and plan["inplace_steps"] >= 1
    assert plan["arena_bytes"] <= 2 * 64 * 64 * 4
    assert _peak_of(fused, x, w, calls=5) <= 64
    before = _C.graph_passes()
    try:
        tf.config.optimizer.set_experimental_options({"memory": False})
        plain = tf.function(f)(x, w)
    finally:
        _C.set_graph_passes(before)
    np.testing.assert_array_equal(got.numpy(), plain.numpy())


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((32, 784)).astype(np.float32)
    y = rng.integers(0, 10, 32)
    w1 = (rng.standard_normal((784, 128)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((128, 10)) * 0.05).astype(np.float32)
    return tf.constant(x), tf.constant(y), w1, w2


def _train_step(w1, w2):
    v1, v2 = tf.Variable(w1), tf.Variable(w2)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            logits = tf.matmul(tf.nn.relu(tf.matmul(xb, v1)), v2)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=yb, logits=logits))
        g1, g2 = tape.gradient(loss, [v1, v2])
        v1.assign_sub(0.01 * g1)
        v2.assign_sub(0.01 * g2)
        return loss

    return v1, v2, step


def _peak_of(fn, *args, calls=3):
    """Bytes above the live bytes before the calls, at their peak."""
    gc.collect()
    base = _C.live_counts()[2]
    _C.peak_bytes(True)
    for _ in range(calls):
        r = fn(*args)
        del r
    gc.collect()
    return _C.peak_bytes() - base


def test_peak_bytes_counts_the_high_water_mark():
    gc.collect()
    base = _C.live_counts()[2]
    _C.peak_bytes(True)
    a = tf.zeros([1024, 256])          # 1 MiB
    del a
    gc.collect()
    assert _C.live_counts()[2] == base
    assert _C.peak_bytes(True) >= base + 1024 * 256 * 4
    assert _C.peak_bytes() == base     # the reset starts from live bytes
    with pytest.raises(TypeError):
        _C.peak_bytes(True, False)


def test_train_step_peak_is_at_most_the_eager_peak(memory_pass):
    memory_pass(True)
    tx, ty, w1, w2 = _mlp()
    _, _, eager = _train_step(w1, w2)
    eager_peak = _peak_of(eager, tx, ty)
    _, _, step = _train_step(w1, w2)
    traced = tf.function(step)
    traced.get_concrete_function(tx, ty)       # trace only: the arena
    traced_peak = _peak_of(traced, tx, ty)     # is allocated in here
    assert traced_peak <= eager_peak, (traced_peak, eager_peak)
    # The gradient of w1 (401 KB) and 0.01 * it share bytes: the plan
    # needs about one of them, where per-output allocation holds both.
    memory_pass(False)
    _, _, step = _train_step(w1, w2)
    plain = tf.function(step)
    plain.get_concrete_function(tx, ty)
    plain_peak = _peak_of(plain, tx, ty)
    assert traced_peak < plain_peak, (traced_peak, plain_peak)
    assert traced_peak < 784 * 128 * 4 * 1.2


def test_train_step_results_identical_with_the_pass_off(memory_pass):
    tx, ty, w1, w2 = _mlp(1)
    results = {}
    for mode in ("eager", "on", "off"):
        memory_pass(mode != "off")
        v1, v2, step = _train_step(w1, w2)
        fn = step if mode == "eager" else tf.function(step)
        losses = [fn(tx, ty).numpy() for _ in range(4)]
        results[mode] = (np.array(losses), v1.numpy(), v2.numpy())
        if mode != "eager":
            plan = fn.get_concrete_function(tx, ty)._memory_plan
            if mode == "on":
                assert plan["arena_slots"] > 5 and plan["inplace_steps"] > 0
                assert plan["arena_held"]
            else:
                assert plan == {"arena_bytes": 0, "arena_slots": 0,
                                "inplace_steps": 0, "arena_held": False}
    for k in range(3):
        np.testing.assert_array_equal(results["on"][k], results["off"][k])
        np.testing.assert_array_equal(results["on"][k], results["eager"][k])


def test_environment_variable_turns_the_pass_off():
    code = ("import tfmini as tf\n"
            "f = tf.function(lambda x: tf.exp(x * 2.0) + 1.0)\n"
            "print(f.get_concrete_function(tf.constant([1.0]))"
            "._memory_plan['arena_slots'])\n")
    # Fusion off in both runs: fused, the function has no intermediate.
    env = dict(os.environ, TFMINI_GRAPH_PASSES_OFF="memory,fusion")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "0"
    env["TFMINI_GRAPH_PASSES_OFF"] = "fusion"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) >= 1


def test_second_call_allocates_only_its_outputs(memory_pass):
    memory_pass(True)

    @tf.function
    def f(x):
        h = tf.tanh(tf.matmul(x, x) * 0.5 + 1.0)
        return tf.reduce_sum(tf.exp(h - 1.0) * h)

    x = tf.constant(np.random.default_rng(2).standard_normal(
        (64, 64)).astype(np.float32))
    f(x)
    plan = f.get_concrete_function(x)._memory_plan
    assert plan["arena_held"] and plan["arena_bytes"] >= 64 * 64 * 4
    # Arena slots chain in place: 64x64 floats, at most two at a time.
    assert plan["arena_bytes"] <= 2 * 64 * 64 * 4
    assert plan["inplace_steps"] >= 3
    # From now on a call allocates its 4-byte output only.
    assert _peak_of(f, x, calls=5) <= 64


def _ew_chain(x, y):
    a = x * 2.0 + 1.0           # Mul then Add in place over the product
    b = tf.exp(-tf.abs(a))      # Abs, Neg, Exp in place
    c = a * b                   # a is live until here: b must not be on it
    d = tf.tanh(c) - y          # y is a function input: never written
    return d, y * 1.0


def test_inplace_chains_match_eager(memory_pass):
    rng = np.random.default_rng(3)
    x = tf.constant(rng.standard_normal((17, 33)).astype(np.float32))
    y = tf.constant(rng.standard_normal((17, 33)).astype(np.float32))
    y_before = y.numpy().copy()
    want = [t.numpy() for t in _ew_chain(x, y)]
    memory_pass(True)
    f = tf.function(_ew_chain)
    for _ in range(3):
        got = [t.numpy() for t in f(x, y)]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(y.numpy(), y_before)
    assert f.get_concrete_function(x, y)._memory_plan["inplace_steps"] >= 3


def test_inplace_with_broadcasting_and_shared_operand(memory_pass):
    memory_pass(True)
    rng = np.random.default_rng(4)
    xn = rng.standard_normal((8, 5)).astype(np.float32)
    rn = rng.standard_normal((5,)).astype(np.float32)

    def f(x, row):
        a = x * 3.0               # dies at the Add below: full shape
        b = a + row               # row broadcast over a's rows
        c = b * b                 # the same dying slot twice
        d = row - c               # the broadcast operand first
        return d * 0.5

    want = f(tf.constant(xn), tf.constant(rn)).numpy()
    got = tf.function(f)(tf.constant(xn), tf.constant(rn)).numpy()
    np.testing.assert_array_equal(got, want)
    a = xn * np.float32(3)
    b = a + rn
    np.testing.assert_allclose(got, (rn - b * b) * np.float32(0.5),
                               rtol=1e-6)


def test_variables_and_constants_are_never_written_in_place(memory_pass):
    memory_pass(True)
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    c = np.full((2, 3), 10.0, np.float32)

    @tf.function
    def f(x):
        r = v.read_value()
        a = tf.exp(r * 0.0) + r       # reads of v die here
        k = tf.constant(c)
        return a + k + x, r

    x = tf.constant(np.ones((2, 3), np.float32))
    for _ in range(3):
        out, r = f(x)
    np.testing.assert_array_equal(v.numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(r.numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(
        out.numpy(), np.arange(6).reshape(2, 3) + 12.0)
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 3)))


def test_outputs_of_earlier_calls_keep_their_values(memory_pass):
    memory_pass(True)

    @tf.function
    def f(x):
        h = x * 2.0
        g = h + 1.0
        return g * 3.0, h - 1.0    # h is read later and is an output

    a = tf.constant(np.ones(100, np.float32))
    b = tf.constant(np.full(100, 5.0, np.float32))
    r1 = f(a)
    r2 = f(b)
    np.testing.assert_array_equal(r1[0].numpy(), np.full(100, 9.0))
    np.testing.assert_array_equal(r1[1].numpy(), np.full(100, 1.0))
    np.testing.assert_array_equal(r2[0].numpy(), np.full(100, 33.0))
    np.testing.assert_array_equal(r2[1].numpy(), np.full(100, 9.0))


def test_cond_branch_returning_an_intermediate(memory_pass):
    """An If whose branch returns its input: that value lives on in the
    If's output, so it must not be in arena memory that gets reused."""
    memory_pass(True)

    def f(x, p):
        y = x * 3.0
        z = tf.cond(p, lambda: y, lambda: y * 2.0)
        w = tf.exp(x * 0.0) * 7.0      # would land on y's bytes
        return z + w

    x = tf.constant(np.arange(10, dtype=np.float32))
    g = tf.function(f)
    for p in (True, False, True):
        want = f(x, tf.constant(p)).numpy()
        np.testing.assert_array_equal(g(x, tf.constant(p)).numpy(), want)


def test_while_loop_with_intermediates(memory_pass):
    memory_pass(True)

    def f(x):
        y = x * 0.5 + 1.0

        def body(i, acc):
            return i + 1, acc * 0.5 + tf.tanh(y) * 2.0

        _, acc = tf.while_loop(lambda i, acc: i < 5, body,
                               (tf.constant(0), y))
        return acc + y * 1.5

    x = tf.constant(np.linspace(-3, 3, 40, dtype=np.float32))
    want = f(x).numpy()
    g = tf.function(f)
    for _ in range(2):
        np.testing.assert_array_equal(g(x).numpy(), want)


def test_unknown_shapes_use_own_buffers(memory_pass):
    memory_pass(True)

    @tf.function(input_signature=[tf.TensorSpec([None])])
    def f(x):
        return tf.exp(x * 2.0 + 1.0) * 0.5

    for n in (3, 1000, 7):
        x = np.linspace(-1, 1, n).astype(np.float32)
        want = (np.exp(x * np.float32(2) + np.float32(1)) * np.float32(0.5))
        np.testing.assert_allclose(f(tf.constant(x)).numpy(), want,
                                   rtol=1e-6)
    assert f.get_concrete_function()._memory_plan["arena_slots"] == 0


def test_reentrant_call_through_print_gets_its_own_arena(memory_pass):
    """tf.print writes through sys.stderr; a stream that calls the same
    function again runs the plan while it is running."""
    memory_pass(True)
    depth = []

    def body(x):
        y = x * 2.0 + 1.0
        tf.print(y[0])
        z = tf.exp(x * 0.0) * 5.0       # planned next to y, not on it
        return y * z + x

    g = tf.function(body)
    inner = tf.constant(np.full(64, 100.0, np.float32))

    class Stream(io.StringIO):
        def write(self, s):
            if not depth:
                depth.append(1)
                self.inner = g(inner).numpy()
                depth.pop()
            return super().write(s)

    x = tf.constant(np.arange(64, dtype=np.float32))
    g(x)                                   # trace and hold the arena
    old = sys.stderr
    sys.stderr = stream = Stream()
    try:
        out = g(x).numpy()
    finally:
        sys.stderr = old
    xn = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(out, (xn * 2 + 1) * 5 + xn)
    np.testing.assert_array_equal(stream.inner, np.full(64, 201.0 * 5 + 100))
    assert g.get_concrete_function(x)._memory_plan["arena_held"]


def test_threads_calling_one_plan_get_separate_arenas(memory_pass):
    """Big kernels run without the interpreter lock, so another thread
    can start the same plan while one is inside it."""
    memory_pass(True)
    rng = np.random.default_rng(5)
    w = tf.constant(rng.standard_normal((256, 256)).astype(np.float32))

    @tf.function
    def f(x):
        h = tf.nn.relu(tf.matmul(x, w) * 0.1 + 1.0)
        return tf.reduce_sum(tf.matmul(h, w) * 0.5, axis=1)

    xs = [tf.constant(rng.standard_normal((256, 256)).astype(np.float32))
          for _ in range(4)]
    want = [f(x).numpy() for x in xs]
    bad = []

    def worker(k):
        for _ in range(30):
            got = f(xs[k]).numpy()
            if not np.array_equal(got, want[k]):
                bad.append(k)
                return

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_tape_replay_and_memory_plan_agree(memory_pass):
    """Under a GradientTape the trace is replayed through the dispatcher
    (no arena: the tape keeps what it records); gradients match eager."""
    memory_pass(True)
    rng = np.random.default_rng(6)
    x = tf.constant(rng.standard_normal((16, 8)).astype(np.float32))
    v = tf.Variable(rng.standard_normal((8, 4)).astype(np.float32))

    def loss(x):
        h = tf.tanh(tf.matmul(x, v) * 2.0 + 0.5)
        return tf.reduce_sum(h * h)

    g = tf.function(loss)
    g(x)
    with tf.GradientTape() as t1:
        l1 = loss(x)
    with tf.GradientTape() as t2:
        l2 = g(x)
    np.testing.assert_array_equal(l1.numpy(), l2.numpy())
    np.testing.assert_allclose(t1.gradient(l1, v).numpy(),
                               t2.gradient(l2, v).numpy(), rtol=1e-6)


def test_leaves_nothing_behind(memory_pass):
    memory_pass(True)

    @tf.function
    def f(x):
        return tf.reduce_sum(tf.exp(x * 2.0) * x)

    x = tf.constant(np.ones(1000, np.float32))
    f(x)
    gc.collect()
    before = _C.live_counts()
    for _ in range(200):
        f(x)
    gc.collect()
    assert _C.live_counts() == before
    # Deleting the function frees its arena.
    del f
    gc.collect()
    assert _C.live_counts()[2] <= before[2] - 4000


def test_conv_train_step_identical_with_the_pass_off(memory_pass):
    """Many kernels at once (conv, pooling, bias, softmax, reductions,
    their gradients): arena memory holds old values from the last call,
    so a kernel that counted on fresh zeroed memory would show here."""
    rng = np.random.default_rng(7)
    x = tf.constant(rng.standard_normal((4, 12, 12, 3)).astype(np.float32))
    y = tf.constant(rng.integers(0, 5, 4))
    k0 = (rng.standard_normal((3, 3, 3, 8)) * 0.2).astype(np.float32)
    w0 = (rng.standard_normal((8 * 6 * 6, 5)) * 0.1).astype(np.float32)
    results = {}
    for on in (True, False):
        memory_pass(on)
        k, w = tf.Variable(k0), tf.Variable(w0)
        b = tf.Variable(np.zeros(8, np.float32))

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                h = tf.nn.conv2d(x, k, strides=1, padding="SAME")
                h = tf.nn.relu(tf.nn.bias_add(h, b))
                h = tf.nn.max_pool2d(h, 2, 2, "VALID")
                logits = tf.matmul(tf.reshape(h, [4, -1]), w)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=y, logits=logits))
            grads = tape.gradient(loss, [k, b, w])
            for v, g in zip([k, b, w], grads):
                v.assign_sub(0.1 * g)
            return loss, tf.reduce_sum(tf.square(grads[0]))

        out = [[t.numpy() for t in step(x, y)] for _ in range(4)]
        results[on] = (out, k.numpy(), b.numpy(), w.numpy())
        if on:
            assert step.get_concrete_function(
                x, y)._memory_plan["arena_slots"] > 10
    np.testing.assert_array_equal(np.array(results[True][0]),
                                  np.array(results[False][0]))
    for a, c in zip(results[True][1:], results[False][1:]):
        np.testing.assert_array_equal(a, c)
