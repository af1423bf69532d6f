"""Variable updates in traced functions: assign_sub/assign_add of a
fusable value become one fused node (csrc/graph/fuse_updates.c), and a
compiled fused node writes straight into the variable it updates when no
one can see the difference (Note [Fused writes into variables] in
csrc/graph/exec.c). Values must match eager bitwise, and every reader
of the old value must still see the old value."""
import numpy as np
import pytest

import tfmini as tf
from graph_util import bits_equal

BIG = (256, 400)        # over the 65,536 elements native code needs


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(
        np.float32)


def optimized_types(fn, *args):
    return [op.type for op in fn.get_concrete_function(*args)
            .optimized_graph.get_operations()]


def eager_and_traced(step, shape, *args, calls=3):
    """step(v, *args) run `calls` times on a fresh variable eagerly and
    traced: both final values, and the traced function."""
    v_e, v_t = tf.Variable(rand(shape)), tf.Variable(rand(shape))
    for _ in range(calls):
        step(v_e, *args)
    fn = tf.function(lambda *a: step(v_t, *a))
    for _ in range(calls):
        fn(*args)
    return v_e.numpy(), v_t.numpy(), fn


@pytest.mark.parametrize("shape", [(3, 5), BIG])
@pytest.mark.parametrize("add", [False, True])
def test_sgd_update_is_one_fused_assign(shape, add):
    g = tf.constant(rand(shape, 1))

    def step(v, g):
        upd = 0.01 * g
        return v.assign_add(upd) if add else v.assign_sub(upd)

    e, t, fn = eager_and_traced(step, shape, g)
    bits_equal(e, t)
    types = optimized_types(fn, g)
    assert "AssignSubVariableOp" not in types
    assert "AssignAddVariableOp" not in types
    assert types.count("_FusedElementwise") == 1
    cf = fn.get_concrete_function(g)
    assert cf._native_steps == cf._variable_writes == (shape == BIG)


def test_value_read_twice_is_not_expanded():
    g = tf.constant(rand(BIG, 1))
    v = tf.Variable(rand(BIG))

    @tf.function
    def f(g):
        upd = g * 0.5
        v.assign_sub(upd)
        return upd

    out = f(g)
    assert "AssignSubVariableOp" in optimized_types(f, g)
    bits_equal(out, rand(BIG, 1) * np.float32(0.5))
    bits_equal(v, rand(BIG) - rand(BIG, 1) * np.float32(0.5))


def test_hand_written_adam_matches_eager_bitwise():
    g = tf.constant(rand(BIG, 1))
    m, s = tf.Variable(tf.zeros(BIG)), tf.Variable(tf.zeros(BIG))
    m2, s2 = tf.Variable(tf.zeros(BIG)), tf.Variable(tf.zeros(BIG))
    t, t2 = tf.Variable(0.0), tf.Variable(0.0)

    def adam(p, g, m, s, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
        t.assign_add(1.0)
        lr_t = lr * tf.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)
        m.assign(b1 * m + (1.0 - b1) * g)
        s.assign(b2 * s + (1.0 - b2) * g * g)
        p.assign_sub(lr_t * m / (tf.sqrt(s) + eps))

    p_e, p_t = tf.Variable(rand(BIG)), tf.Variable(rand(BIG))
    fn = tf.function(lambda g: adam(p_t, g, m2, s2, t2))
    for _ in range(3):
        adam(p_e, g, m, s, t)
        fn(g)
    for a, b in [(p_e, p_t), (m, m2), (s, s2)]:
        bits_equal(a, b)
    # One compiled node updates p, m and s (Note [Fusable updates]) and
    # writes all three in place; the scalar part is not compiled.
    cf = fn.get_concrete_function(g)
    fused = [op for op in cf.optimized_graph.get_operations()
             if op.type == "_FusedElementwise" and len(op.outputs) == 3]
    assert len(fused) == 1
    assert cf._native_steps == 1 and cf._variable_writes == 3


def test_a_tensor_held_outside_keeps_the_old_value():
    v = tf.Variable(rand(BIG))
    step = tf.function(lambda: v.assign(v * 2.0 + 1.0))
    step()
    held = v.value()                      # shares the variable's buffer
    before = held.numpy().copy()
    step()
    bits_equal(held, before)
    bits_equal(v, before * np.float32(2.0) + np.float32(1.0))


def test_a_read_returned_by_the_function_keeps_the_old_value():
    v = tf.Variable(rand(BIG))

    @tf.function
    def f():
        old = v.read_value()
        v.assign(old * 2.0 + 1.0)
        return old

    start = v.numpy()
    bits_equal(f(), start)
    bits_equal(v, start * np.float32(2.0) + np.float32(1.0))


def test_a_read_between_the_update_and_its_assign():
    v = tf.Variable(rand(BIG))

    @tf.function
    def f():
        new = v * 2.0 + 1.0
        seen = tf.reduce_sum(v.read_value())     # before the assign
        v.assign(new)
        return seen, tf.reduce_sum(v.read_value())

    start = v.numpy()
    seen, after = f()
    assert float(seen) == float(tf.reduce_sum(tf.constant(start)))
    want = start * np.float32(2.0) + np.float32(1.0)
    bits_equal(v, want)
    assert float(after) == float(tf.reduce_sum(tf.constant(want)))


def test_update_reading_another_variable_and_itself():
    a, b = tf.Variable(rand(BIG)), tf.Variable(rand(BIG, 1))
    a0, b0 = a.numpy(), b.numpy()

    @tf.function
    def f():
        a.assign(a * b + b)
        b.assign(b * a - 1.0)         # reads the new a

    f()
    a1 = a0 * b0 + b0
    bits_equal(a, a1)
    bits_equal(b, b0 * a1 - np.float32(1.0))


def test_update_under_a_tape_is_recorded_and_right():
    v = tf.Variable(rand(BIG))
    x = tf.Variable(rand(BIG, 2))
    f = tf.function(lambda: v.assign_sub(0.5 * x))
    f()
    with tf.GradientTape() as tape:
        f()
        loss = tf.reduce_sum(v * 1.0)
    step = np.float32(0.5) * rand(BIG, 2)
    bits_equal(v, rand(BIG) - step - step)
    assert tape.gradient(loss, v) is not None


def test_failed_assert_between_update_and_assign_leaves_the_variable():
    v = tf.Variable(np.ones(BIG, np.float32))

    @tf.function
    def step(x):
        new = v * 2.0 + 1.0
        tf.Assert(x > 0, [x])
        v.assign(new)

    with pytest.raises(tf.errors.InvalidArgumentError):
        step(tf.constant(-1.0))
    bits_equal(v, np.ones(BIG, np.float32))
    step(tf.constant(1.0))
    bits_equal(v, np.full(BIG, 3.0, np.float32))


def test_print_between_update_and_assign_sees_the_old_value():
    v = tf.Variable(np.ones(BIG, np.float32))
    seen = []

    class Spy:
        def write(self, s):
            seen.append(float(v.numpy()[0, 0]))

    @tf.function
    def step():
        new = v * 2.0 + 1.0
        tf.print("tick", output_stream=Spy())
        v.assign(new)

    step()
    assert seen == [1.0]
    assert float(v.numpy()[0, 0]) == 3.0


def test_another_thread_never_sees_half_an_update():
    import threading
    v = tf.Variable(np.zeros((1024, 1024), np.float32))

    @tf.function
    def step():
        v.assign((v + 0.5) + 0.5)      # every element k -> k + 1

    step()
    assert step.get_concrete_function()._native_steps == 1
    bad, stop = [], []

    def reader():
        while not stop:
            t = v.read_value()
            a = t.numpy().copy()
            if a.min() != a.max() or not np.array_equal(a, t.numpy()):
                bad.append(a)

    th = threading.Thread(target=reader)
    th.start()
    for _ in range(100):
        step()
    stop.append(1)
    th.join()
    assert not bad
    assert float(v.numpy().min()) == float(v.numpy().max()) == 101.0


def test_two_assigns_of_one_variable_in_one_fused_node():
    v = tf.Variable(rand(BIG))
    start = v.numpy()

    @tf.function
    def f():
        v.assign(v * 2.0 + 1.0)
        v.assign(v * 3.0)              # reads the first assign's value

    f()
    a = start * np.float32(2.0) + np.float32(1.0)
    bits_equal(v, a * np.float32(3.0))


def test_read_after_assign_returned_and_printed(capsys):
    v = tf.Variable(np.full(BIG, 2.0, np.float32))
    seen = []

    class Spy:
        def write(self, s):
            seen.append(float(v.numpy()[0, 0]))

    @tf.function
    def f():
        v.assign(v * 2.0 + 1.0)
        tf.print("after", output_stream=Spy())
        return v.read_value()

    out = f()
    assert seen == [5.0]
    bits_equal(out, np.full(BIG, 5.0, np.float32))
    v.assign(tf.zeros(BIG))
    bits_equal(out, np.full(BIG, 5.0, np.float32))   # a tensor of its own


def test_failing_op_after_assign_sees_the_assign_done():
    v = tf.Variable(np.ones(BIG, np.float32))
    x = tf.constant([1.0, 2.0])

    @tf.function
    def f(i):
        v.assign(v * 2.0 + 1.0)
        return tf.gather(x, i)

    with pytest.raises(tf.errors.InvalidArgumentError):
        f(tf.constant(5))
    bits_equal(v, np.full(BIG, 3.0, np.float32))       # as eagerly


def test_sgd_and_adam_updates_write_in_place():
    g = tf.constant(rand(BIG, 1))
    p = tf.Variable(rand(BIG))
    f = tf.function(lambda g: p.assign_sub(0.01 * g))
    assert f.get_concrete_function(g)._variable_writes == 1


def test_print_stream_writing_the_variable_is_not_skipped():
    v = tf.Variable(np.full(BIG, 1.0, np.float32))

    class Reset:
        def write(self, s):
            v.assign(tf.zeros(BIG))

    def f():
        v.assign(v * 2.0 + 1.0)
        tf.print("tick", output_stream=Reset())
        return v * 3.0 + 1.0

    eager = f().numpy()
    v.assign(np.full(BIG, 1.0, np.float32))
    bits_equal(tf.function(f)(), eager)
    bits_equal(eager, np.ones(BIG, np.float32))
