"""Gradients through graph control flow: a GradientTape recording INSIDE
a tf.function around tf.cond / tf.while_loop / tf.switch_case / tf.case
and AutoGraph-converted if/while/for (Note [Control flow gradients] in
tfmini/ops/control_flow_grad.py). Every case is checked three ways: the
traced gradient against the eager one (plain Python control flow under
the tape) and against central finite differences in float64."""
import numpy as np
import pytest

import tfmini as tf


def _np(t):
    return None if t is None else np.asarray(t.numpy())


def _grad_fn(f):
    """x -> (f(x), d f(x) / dx) with the tape inside."""
    def g(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return y, tape.gradient(y, x)
    return g


def _finite_diff(f, x, eps=1e-5):
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        out[i] = (float(f(tf.constant(hi)).numpy()) -
                  float(f(tf.constant(lo)).numpy())) / (2 * eps)
    return out


# ---- the cases: scalar functions of x built from graph control flow -----

def cond_simple(x):
    return tf.cond(tf.reduce_sum(x) > 1., lambda: tf.reduce_sum(x * x * 3.),
                   lambda: tf.reduce_sum(tf.sin(x)))


def cond_nested(x):
    s = tf.reduce_sum(x)

    def inner():
        return tf.cond(s > 2., lambda: s * s, lambda: tf.exp(s))
    return tf.cond(s > 0., inner, lambda: -s * 4.)


def cond_uses_one_capture_per_branch(x):
    a, b = x[0] * 2., x[1] * 3.
    return tf.cond(x[0] > x[1], lambda: a * a, lambda: tf.sin(b))


def cond_returns_capture(x):
    s = tf.reduce_sum(x)
    return tf.cond(s > 0., lambda: s, lambda: s * s * s)


def cond_structured(x):
    out = tf.cond(x[0] > 0., lambda: {"v": x * x, "n": tf.constant(2)},
                  lambda: {"v": tf.tanh(x), "n": tf.constant(3)})
    return tf.reduce_sum(out["v"]) * tf.cast(out["n"], x.dtype)


def while_power(x):
    return tf.reduce_sum(tf.while_loop(
        lambda i, y: i < 3, lambda i, y: (i + 1, y * x),
        [0, tf.ones_like(x)])[1])


def while_captures(x):
    z = x * 2.
    _, y = tf.while_loop(lambda i, y: i < 4,
                         lambda i, y: (i + 1, tf.sin(y) * z + 0.1),
                         [0, x])
    return tf.reduce_sum(y)


def while_data_dependent(x):
    # The iteration count depends on x: the gradient follows the taken
    # number of iterations.
    return tf.reduce_sum(tf.while_loop(
        lambda y: tf.reduce_sum(y) < 20., lambda y: y * 1.5 + x, [x])[0])


def while_maximum_iterations(x):
    return tf.reduce_sum(tf.while_loop(
        lambda y: tf.reduce_sum(y) < 1e6, lambda y: y * x, [x],
        maximum_iterations=4)[0])


def while_nested_cond(x):
    def body(i, y):
        y = tf.cond(tf.reduce_sum(y) > 1., lambda: y * 0.5 * x,
                    lambda: y * 3. + x)
        return i + 1, y
    return tf.reduce_sum(tf.while_loop(lambda i, y: i < 5, body,
                                       [0, x])[1])


def while_nested_while(x):
    def body(i, y):
        y = tf.while_loop(lambda j, u: j < 2,
                          lambda j, u: (j + 1, tf.sin(u) + y * 0.5),
                          [0, y])[1]
        return i + 1, y * x
    return tf.reduce_sum(tf.while_loop(lambda i, y: i < 3, body,
                                       [0, x])[1])


def while_structured(x):
    def body(s):
        return {"a": s["a"] * x, "b": (s["b"][0] + s["a"], s["b"][1] + 1)}
    out = tf.while_loop(lambda s: s["b"][1] < 3, body,
                        [{"a": x, "b": (tf.zeros_like(x), 0)}])[0]
    return tf.reduce_sum(out["a"] + out["b"][0])


def while_tensor_array(x):
    ta = tf.TensorArray(x.dtype, size=3, element_shape=x.shape)

    def body(i, ta, y):
        y = tf.sin(y) * x
        return i + 1, ta.write(i, y), y
    _, ta, _ = tf.while_loop(lambda i, ta, y: i < 3, body, [0, ta, x])
    return tf.reduce_sum(ta.stack() * [[1.], [2.], [3.]])


def switch_case_three(x):
    s = tf.reduce_sum(x)
    idx = tf.cast(s > 0., tf.int32) + tf.cast(s > 1., tf.int32)
    return tf.switch_case(idx, [lambda: s, lambda: s * s,
                                lambda: tf.exp(s)])


def case_pairs(x):
    s = tf.reduce_sum(x)
    return tf.case([(s < 0., lambda: -s), (s < 1., lambda: s * s)],
                   default=lambda: tf.sqrt(s))


CASES = [
    (cond_simple, [0.3, 0.2], [0.9, 0.8]),
    (cond_nested, [0.3, 0.2], [1.5, 1.0], [-0.4, 0.1]),
    (cond_uses_one_capture_per_branch, [0.9, 0.2], [0.1, 0.7]),
    (cond_returns_capture, [0.3, 0.2], [-0.5, 0.1]),
    (cond_structured, [0.3, -0.2], [-0.3, 0.2]),
    (while_power, [1.1, 0.7]),
    (while_captures, [0.3, -0.4]),
    (while_data_dependent, [0.9, 1.3]),
    (while_maximum_iterations, [1.2, 0.8]),
    (while_nested_cond, [0.7, 0.15], [0.2, 0.3]),
    (while_nested_while, [0.3, 0.6]),
    (while_structured, [0.8, 1.1]),
    (while_tensor_array, [0.5, -0.6]),
    (switch_case_three, [-0.3, 0.1], [0.3, 0.2], [0.6, 0.7]),
    (case_pairs, [-0.3, 0.1], [0.3, 0.2], [0.6, 0.7]),
]
PARAMS = [pytest.param(f, x, id=f"{f.__name__}-{i}")
          for f, *xs in CASES for i, x in enumerate(xs)]


@pytest.mark.parametrize("f,x", PARAMS)
def test_traced_gradient_matches_eager_and_finite_differences(f, x):
    x32 = tf.constant(np.array(x, np.float32))
    y_e, g_e = _grad_fn(f)(x32)
    y_t, g_t = tf.function(_grad_fn(f))(x32)
    assert g_t is not None, "the traced gradient came back None"
    np.testing.assert_allclose(_np(y_t), _np(y_e), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(g_t), _np(g_e), rtol=1e-4, atol=1e-5)
    # float64: traced gradient against finite differences of the eager
    # function.
    x64 = tf.constant(np.array(x, np.float64))
    _, g64 = tf.function(_grad_fn(f))(x64)
    np.testing.assert_allclose(_np(g64), _finite_diff(f, x), rtol=1e-5,
                               atol=1e-6)


def test_the_graph_has_an_if_and_the_gradient_is_a_while():
    fn = tf.function(_grad_fn(cond_simple))
    x = tf.constant([0.3, 0.2])
    fn(x)
    ops = [op.type for op in fn.get_concrete_function(x).graph
           .get_operations()]
    assert "If" in ops and "While" in ops


# ---- variables read inside branches and bodies ----------------------

def test_variable_read_in_cond_branch_gets_its_gradient():
    w = tf.Variable(2.0)

    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cond(x > 0., lambda: x * w * w, lambda: w * 3.)
        return t.gradient(y, [x, w])

    for v, expect in [(3., [4., 12.]), (-3., [0., 3.])]:
        eager = f(tf.constant(v))
        traced = tf.function(f)(tf.constant(v))
        np.testing.assert_allclose([_np(g) for g in traced], expect)
        # Eagerly the untaken branch never ran, so x's gradient is None;
        # in the graph x is an input of the If and gets zeros (as TF).
        np.testing.assert_allclose([0. if g is None else _np(g)
                                    for g in eager], expect)


def test_keras_layer_inside_cond_trains_in_a_tf_function():
    layer = tf.keras.layers.Dense(3)
    layer.build((None, 2))

    def step(x, flag):
        with tf.GradientTape() as t:
            y = tf.cond(flag, lambda: layer(x),
                        lambda: x[:, :1] * tf.ones([1, 3]))
            loss = tf.reduce_sum(y * y)
        return [loss] + t.gradient(loss, layer.trainable_variables)

    x = tf.constant([[1., 2.]])
    eager = step(x, tf.constant(True))
    traced = tf.function(step)(x, tf.constant(True))
    for a, b in zip(eager, traced):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-5)
    # The other branch does not use the layer: zero gradients (TF's
    # graph cond gives zeros too), not None.
    other = tf.function(step)(x, tf.constant(False))
    assert all(np.all(_np(g) == 0) for g in other[1:])


def test_variable_read_in_while_body():
    v = tf.Variable([[0.5, -0.2], [0.3, 0.8]])

    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.while_loop(lambda i, y: i < 3,
                              lambda i, y: (i + 1, tf.tanh(tf.matmul(y, v))),
                              [0, x])[1]
            s = tf.reduce_sum(y)
        return t.gradient(s, [x, v])

    x = tf.constant([[0.1, 0.2]])
    for a, b in zip(f(x), tf.function(f)(x)):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-5, atol=1e-7)


def test_watched_eager_tensor_captured_by_a_branch():
    x = tf.constant(3.)

    def f(p):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cond(p, lambda: x * x, lambda: x)
        return t.gradient(y, x)

    assert float(tf.function(f)(tf.constant(True))) == 6.
    assert float(tf.function(f)(tf.constant(False))) == 1.


def test_unconnected_source_is_none():
    def f(x, w):
        with tf.GradientTape() as t:
            t.watch([x, w])
            y = tf.cond(x > 0., lambda: x * 2., lambda: x * 3.)
        return t.gradient(y, [x, w])

    gx, gw = tf.function(f)(tf.constant(1.), tf.constant(2.))
    assert float(gx) == 2. and gw is None


def test_zero_iterations_pass_the_gradient_through():
    def f(x, n):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.while_loop(lambda i, y: i < n,
                              lambda i, y: (i + 1, y * x), [0, x])[1]
        return y, t.gradient(y, x)

    fn = tf.function(f)
    assert [float(v) for v in fn(tf.constant(2.), tf.constant(0))] == [2., 1.]
    assert [float(v) for v in fn(tf.constant(2.), tf.constant(4))] == \
        [32., 80.]


def test_tape_outside_the_traced_call():
    # The call is replayed op by op under the tape (csrc/graph/exec.h):
    # the taken branch and every iteration are recorded.
    @tf.function
    def f(x):
        y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x),
                          [0, x])[1]
        return tf.cond(y > 10., lambda: y * 2., lambda: y)

    for v, expect in [(2., 2 * 4 * 8.), (1.5, 4 * 1.5 ** 3)]:
        x = tf.constant(v)
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        np.testing.assert_allclose(float(t.gradient(y, x)), expect,
                                   rtol=1e-6)


# ---- AutoGraph: Python if / while / for with a tape inside ----------

def ag_if(x):
    if x > 1.:
        y = x * x
        z = 2. * x
    else:
        y = tf.sin(x)
        z = x
    return y + z


def ag_while_break(x):
    y = x
    i = 0
    while y < 50.:
        y = y * x + 1.
        i += 1
        if i > 10:
            break
    return y


def ag_for_tensor_continue(x):
    s = tf.zeros([])
    for e in tf.constant([1., -2., 3.]):
        if e > 0:
            s = s + e * x
        else:
            continue
        s = s * 0.5
    return s


def ag_for_range_tensor_array(x):
    s = x
    ta = tf.TensorArray(tf.float32, size=5, element_shape=[])
    for i in tf.range(5):
        s = tf.sin(s) + x
        ta = ta.write(i, s)
    return tf.reduce_sum(ta.stack())


@pytest.mark.parametrize("f,xs", [
    (ag_if, [2., 0.5]),
    (ag_while_break, [1.7, 1.1]),
    (ag_for_tensor_continue, [1.3]),
    (ag_for_range_tensor_array, [0.4]),
])
def test_autograph_control_flow_gradient(f, xs):
    traced = tf.function(_grad_fn(f))
    for v in xs:
        x = tf.constant(v)
        y_e, g_e = _grad_fn(f)(x)
        y_t, g_t = traced(x)
        assert g_t is not None
        np.testing.assert_allclose(float(y_t), float(y_e), rtol=1e-6)
        np.testing.assert_allclose(float(g_t), float(g_e), rtol=1e-5)


def test_autograph_state_after_the_gradient_is_the_forward_one():
    # The gradient graph reruns the loop body: the Python variables the
    # body sets must still hold the forward results afterwards.
    @tf.function
    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = x
            while y < 10.:
                y = y * x
        g = t.gradient(y, x)
        return y, g

    y, g = f(tf.constant(2.))
    assert float(y) == 16. and float(g) == 32.


# ---- what is refused, with a clear error ----------------------------

def test_body_that_assigns_a_variable_refuses_a_gradient():
    w = tf.Variable(1.0)

    @tf.function
    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)

            def body(i, y):
                w.assign_add(1.)
                return i + 1, y * x * w
            y = tf.while_loop(lambda i, y: i < 2, body, [0, x])[1]
        return t.gradient(y, x)

    with pytest.raises(NotImplementedError, match="assigns a variable"):
        f(tf.constant(2.))

    @tf.function
    def nested(x):
        with tf.GradientTape() as t:
            t.watch(x)

            def body(i, y):
                y = tf.cond(y > 100., lambda: y,
                            lambda: w.assign_add(1.).read_value() * y)
                return i + 1, y * x
            y = tf.while_loop(lambda i, y: i < 2, body, [0, x])[1]
        return t.gradient(y, x)

    with pytest.raises(NotImplementedError, match="assigns a variable"):
        nested(tf.constant(2.))


def test_forward_with_assignments_under_a_tape_still_runs():
    w = tf.Variable(1.0)

    @tf.function
    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cond(x > 0., lambda: w.assign_add(x).read_value() * x,
                        lambda: x)
        return y

    assert float(f(tf.constant(2.))) == 6. and float(w.numpy()) == 3.


def test_second_order_is_refused_not_none():
    @tf.function
    def f(x):
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t:
                t.watch(x)
                y = tf.cond(x > 0., lambda: x * x * x, lambda: x)
            g = t.gradient(y, x)
        return t2.gradient(g, x)

    with pytest.raises(NotImplementedError, match="gradients of gradients"):
        f(tf.constant(2.))


def test_persistent_tape_asks_twice_and_jacobian():
    # Note [While again]: later requests run the gradient sub-graph traced
    # with the op through another While sharing it.
    w = tf.Variable(1.5)

    def twice(x):
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = tf.cond(x > 0., lambda: x * x * w, lambda: x)
            z = tf.while_loop(lambda i, z: i < 3,
                              lambda i, z: (i + 1, z * x), [0, y])[1]
        return (t.gradient(y, x), t.gradient(z, x), t.gradient(z, w),
                t.gradient(y, w))

    for v in (2., -2.):
        x = tf.constant(v)
        want = twice(x)
        got = tf.function(twice)(x)
        for a, b in zip(want, got):
            np.testing.assert_allclose(_np(b), 0. if a is None else _np(a),
                                       rtol=1e-6)

    def jac(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cond(tf.reduce_sum(x) > 0., lambda: x * x * w,
                        lambda: -x)
            y = tf.while_loop(lambda i, y: i < 2,
                              lambda i, y: (i + 1, tf.sin(y) * x), [0, y])[1]
        return t.jacobian(y, x)

    for v in ([1., 2.], [-1., -2.]):
        x = tf.constant(v)
        np.testing.assert_allclose(_np(tf.function(jac)(x)), _np(jac(x)),
                                   rtol=1e-5, atol=1e-7)


def test_varying_shape_loop_refuses_only_when_differentiated():
    def loop(x):
        return tf.while_loop(
            lambda i, y: i < 3, lambda i, y: (i + 1, tf.concat([y, y * x],
                                                              0)),
            [0, x], shape_invariants=[tf.TensorShape([]),
                                      tf.TensorShape([None])])[1]

    @tf.function
    def forward_only(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = loop(x)
        return y

    assert forward_only(tf.constant([2.])).shape == (8,)

    @tf.function
    def grad(x):
        with tf.GradientTape() as t:
            t.watch(x)
            s = tf.reduce_sum(loop(x))
        return t.gradient(s, x)

    with pytest.raises(NotImplementedError, match="shape stays fixed"):
        grad(tf.constant([2.]))


def test_no_tape_no_gradient_graph():
    # Without a tape the function's graph holds only the forward If.
    @tf.function
    def f(x):
        return tf.cond(x > 0., lambda: x * x, lambda: x)

    x = tf.constant(2.)
    f(x)
    ops = [op.type for op in f.get_concrete_function(x).graph
           .get_operations()]
    assert ops.count("If") == 1 and "While" not in ops


# ---- memory: the gradient machinery frees what it made -----------------

def _live():
    import gc
    from tfmini import _C
    gc.collect()
    tensors, buffers, _ = _C.live_counts()
    graphs, concretes = _C.function_live_counts()
    return tensors, buffers, graphs, concretes


def test_traces_with_tapes_leave_nothing_behind():
    def make():
        def f(x):
            with tf.GradientTape() as t:
                t.watch(x)
                y = tf.while_loop(
                    lambda i, y: i < 3,
                    lambda i, y: (i + 1, tf.cond(y > 1., lambda: y * x,
                                                 lambda: y + x)), [0, x])[1]
                # A tape that records but is never asked: its gradient
                # sub-graphs are never attached.
                with tf.GradientTape() as unused:
                    unused.watch(x)
                    tf.cond(x > 0., lambda: x * 2., lambda: x)
            return t.gradient(y, x)
        return tf.function(f)

    x = tf.constant(0.7)
    make()(x)
    before = _live()
    for _ in range(5):
        g = make()
        g(x)
        g(x)
        del g
    assert _live() == before


def test_tape_made_inside_a_branch():
    # The tape lives in the outer cond's true branch; the inner cond is
    # recorded on it (and only on it).
    @tf.function
    def f(x):
        def branch():
            with tf.GradientTape() as t:
                t.watch(x)
                y = tf.cond(x > 1., lambda: x * x * x, lambda: x * 5.)
            return t.gradient(y, x)
        return tf.cond(x > 0., branch, lambda: tf.constant(-1.))

    assert float(f(tf.constant(2.))) == 12.
    assert float(f(tf.constant(0.5))) == 5.
    assert float(f(tf.constant(-2.))) == -1.


def test_no_gradient_graph_for_code_traced_under_the_watcher():
    # Tracing a branch pushes only the variable watcher: an inner cond
    # there is not recorded (no While for its gradient is made).
    w = tf.Variable(2.)

    @tf.function
    def f(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cond(x > 0., lambda: tf.cond(x > 1., lambda: x * w,
                                                lambda: x), lambda: x)
        return t.gradient(y, [x, w])

    gx, gw = f(tf.constant(3.))
    assert float(gx) == 2. and float(gw) == 3.
    gx, gw = f(tf.constant(0.5))
    assert float(gx) == 1. and float(gw) == 0.


def test_keras_fit_through_a_layer_with_a_tensor_cond():
    # model.fit traces its train step (the tape inside): the cond's
    # gradient must match run_eagerly's step for step.
    class Gate(tf.keras.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1], 1),
                                     initializer="ones")

        def call(self, x):
            s = tf.reduce_mean(x)
            return tf.cond(s > 0., lambda: tf.matmul(x, self.w),
                           lambda: tf.matmul(x, self.w) * 0.5)

    def run(eager):
        m = tf.keras.Sequential([tf.keras.layers.Input((3,)), Gate()])
        m.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse",
                  run_eagerly=eager)
        x = np.array([[1., 2., 3.], [-1., -2., -4.], [.5, .5, .5]],
                     np.float32)
        y = np.array([[1.], [2.], [3.]], np.float32)
        h = m.fit(x, y, epochs=3, batch_size=1, verbose=0, shuffle=False)
        return h.history["loss"], m.layers[-1].w.numpy()

    (le, we), (lt, wt) = run(True), run(False)
    np.testing.assert_allclose(lt, le, rtol=1e-5)
    np.testing.assert_allclose(wt, we, rtol=1e-5)
    assert not np.allclose(wt, 1.)      # it trained


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 70])
def test_large_loop_variable_is_stacked_in_chunks(n):
    # 64 x 40 = 2560 elements >= CHUNK_MIN_ELEMENTS: the forward loop
    # keeps chunks of 32 rows (WhileRecorder); iteration counts around a
    # chunk's end must give the eager gradient.
    from tfmini.ops import control_flow_grad as cfg
    assert 64 * 40 >= cfg.CHUNK_MIN_ELEMENTS and cfg.CHUNK == 32
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.standard_normal((40, 40)).astype(np.float32) * 0.2)
    x = tf.constant(rng.standard_normal((64, 40)).astype(np.float32))

    def f(x, n):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.while_loop(lambda i, y: i < n,
                              lambda i, y: (i + 1,
                                            tf.tanh(tf.matmul(y, w)) + x),
                              [0, x])[1]
            loss = tf.reduce_sum(y * y)
        return [loss] + t.gradient(loss, [x, w])

    want = f(x, tf.constant(n))
    got = tf.function(f)(x, tf.constant(n))
    for a, b in zip(want, got):
        # n = 0: eagerly w was never read (None); the graph gives zeros.
        a = np.zeros_like(_np(b)) if a is None else _np(a)
        np.testing.assert_allclose(_np(b), a, rtol=2e-4, atol=1e-4)
