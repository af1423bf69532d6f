"""tf.GradientTape semantics, one by one (TF_SEMANTICS.md, GradientTape),
plus tf.stop_gradient and tf.custom_gradient. Only Add/Sub/Mul/Neg/Cast
are needed here; per-op gradients are checked in test_gradients.py."""
import collections
import logging

import numpy as np
import pytest

import tfmini as tf


def c(x, dtype=tf.float32):
    return tf.constant(x, dtype)


def val(t):
    return None if t is None else t.numpy().tolist()


# ---- what is watched -------------------------------------------------------

def test_constants_need_watch():
    x = c(3.0)
    with tf.GradientTape() as t:
        y = x * x
    assert t.gradient(y, x) is None
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    assert val(t.gradient(y, x)) == 6.0


def test_trainable_variables_watched_automatically():
    v = tf.Variable(2.0)
    frozen = tf.Variable(5.0, trainable=False)
    with tf.GradientTape() as t:
        y = v * v + frozen * frozen
    gv, gf = t.gradient(y, [v, frozen])
    assert val(gv) == 4.0 and gf is None


def test_non_trainable_variable_after_watch():
    frozen = tf.Variable(5.0, trainable=False)
    with tf.GradientTape() as t:
        t.watch(frozen)
        y = frozen * frozen
    assert val(t.gradient(y, frozen)) == 10.0


def test_watch_accessed_variables_false():
    x, w = tf.Variable(2.0), tf.Variable(5.0)
    with tf.GradientTape(watch_accessed_variables=False,
                         persistent=True) as t:
        t.watch(x)
        y = x * x
        z = w * w * w
    assert val(t.gradient(y, x)) == 4.0
    assert t.gradient(z, w) is None
    assert t.watched_variables() == (x,)


def test_watching_is_per_tape():
    x = c(3.0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x
    assert val(inner.gradient(y, x)) == 6.0
    assert outer.gradient(y, x) is None


def test_variable_read_before_tape_is_a_tensor():
    v = tf.Variable(3.0)
    r = v.read_value()            # read outside: a plain tensor
    with tf.GradientTape() as t:
        y = r * r
    assert t.gradient(y, v) is None


def test_watch_nested_structures():
    a, b, d = c(1.0), c(2.0), c(3.0)
    with tf.GradientTape() as t:
        t.watch({"a": a, "rest": [b, (d,)]})
        y = a * b * d
    ga, gb, gd = t.gradient(y, [a, b, d])
    assert (val(ga), val(gb), val(gd)) == (6.0, 3.0, 2.0)


def test_watch_rejects_numpy():
    with tf.GradientTape() as t:
        with pytest.raises(ValueError, match="not tf.Tensor"):
            t.watch(np.array([1.0]))
        with pytest.raises(ValueError):
            t.watch([c(1.0), 2.0])


def test_watch_integer_warns_and_gives_none(caplog):
    x = tf.constant(3)
    with caplog.at_level(logging.WARNING):
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
    assert "floating" in caplog.text
    with caplog.at_level(logging.WARNING):
        assert t.gradient(y, x) is None


# ---- gradient() --------------------------------------------------------------

def test_result_has_structure_of_sources():
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    Pair = collections.namedtuple("Pair", "first second")
    with tf.GradientTape(persistent=True) as t:
        y = a * b
    g = t.gradient(y, {"b": b, "a": [a]})
    assert set(g) == {"a", "b"} and isinstance(g["a"], list)
    assert val(g["b"]) == 1.0 and val(g["a"][0]) == 2.0
    p = t.gradient(y, Pair(a, b))
    assert isinstance(p, Pair) and val(p.first) == 2.0
    assert val(t.gradient(y, (b,))[0]) == 1.0
    assert isinstance(t.gradient(y, a), tf.Tensor)


def test_list_and_nonscalar_targets_are_summed():
    x = c([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y1 = x * x                    # non-scalar: summed
        y2 = x * 3.0
    assert val(t.gradient(y1, x)) == [2.0, 4.0]
    assert val(t.gradient([y1, y2], x)) == [5.0, 7.0]
    assert val(t.gradient({"p": y1, "q": [y2]}, x)) == [5.0, 7.0]


def test_output_gradients_weight_targets():
    x = c([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = x * 3.0
    assert val(t.gradient(y, x, output_gradients=c([10.0, 1.0]))) == \
        [20.0, 4.0]
    g = t.gradient([y, z], x, output_gradients=[c([1.0, 0.0]), None])
    assert val(g) == [5.0, 3.0]
    assert val(t.gradient(y, x, output_gradients=[np.array([0.5, 0.5])])) \
        == [1.0, 2.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        t.gradient(y, x, output_gradients=c([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError):
        t.gradient([y, z], x, output_gradients=[c([1.0, 1.0])])


def test_unconnected_gradients():
    x, u = c([1.0, 2.0]), c([[1.0, 1.0, 1.0]])
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, u])
        y = x * x
    assert t.gradient(y, u) is None
    assert t.gradient(y, u, unconnected_gradients="none") is None
    z = t.gradient(y, u, unconnected_gradients="zero")
    assert z.shape == (1, 3) and val(z) == [[0.0, 0.0, 0.0]]
    z = t.gradient(y, [x, u],
                   unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert val(z[0]) == [2.0, 4.0] and val(z[1]) == [[0.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match="unconnected_gradients"):
        t.gradient(y, x, unconnected_gradients="ones")
    v = tf.Variable([1.0, 2.0, 3.0])
    assert val(t.gradient(y, v, unconnected_gradients="zero")) == [0.0] * 3


def test_variable_target_as_tf_2_21():
    # TF 2.21 takes a variable target as its handle: d v / d v is ones
    # (watched or not), nothing else is connected to it. Values checked
    # against TF 2.21.
    x = tf.Variable(2.0)
    with tf.GradientTape() as t:
        _ = x * 1
    assert float(t.gradient(x, x)) == 1.0
    with tf.GradientTape(persistent=True,
                         watch_accessed_variables=False) as t:
        z = x + 0
    assert float(t.gradient(x, x)) == 1.0
    assert t.gradient(x, z) is None
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        y = v * 2
    gv, gx = t.gradient(v, [v, x])
    assert val(gv) == [1.0, 1.0] and gx is None
    assert val(t.gradient([v, y], v)) == [3.0, 3.0]
    assert float(t.gradient(x, x, output_gradients=c(3.0))) == 3.0
    assert float(t.gradient(v, x, unconnected_gradients="zero")) == 0.0
    # The UnreadVariable that assign returns is the same handle.
    assert val(t.gradient(v.assign([5.0, 5.0]), v)) == [1.0, 1.0]


def test_repeated_sources_and_source_is_target():
    x = c(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
    g1, g2 = t.gradient(y, [x, x])
    assert val(g1) == val(g2) == 6.0
    assert val(t.gradient(y, y)) == 1.0
    assert val(t.gradient(x, x)) == 1.0


def test_gradient_wrt_intermediate_tensor():
    x = c(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        z = x * x
        y = z * z + x
    gz, gx = t.gradient(y, [z, x])
    assert val(gz) == 18.0 and val(gx) == 4 * 27.0 + 1


def test_source_list_with_bad_type():
    x = c(1.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    with pytest.raises(ValueError):
        t.gradient(y, [x, 3.0])


def test_non_persistent_tape_is_one_shot():
    x = c(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    t.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent GradientTape "
                       "can only be used to compute one set of gradients"):
        t.gradient(y, x)
    with pytest.raises(RuntimeError):
        t.jacobian(y, x)


def test_gradient_on_tape_never_entered():
    with pytest.raises(RuntimeError):
        tf.GradientTape().gradient(c(1.0), c(1.0))


def test_persistent_tape_answers_many_times():
    x = c(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    assert val(t.gradient(z, x)) == 108.0
    assert val(t.gradient(y, x)) == 6.0
    assert val(t.gradient(z, x)) == 108.0


def test_non_persistent_gradient_inside_block_stops_recording():
    x = c(3.0)
    t = tf.GradientTape()
    with t:
        t.watch(x)
        y = x * x
        g = t.gradient(y, x)
        assert not t._recording
    assert val(g) == 6.0


# ---- higher order --------------------------------------------------------------

def test_nested_tapes_second_derivative():
    x = c(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert float(dy) == 27.0 and float(d2y) == 18.0


def test_third_derivative_nested():
    x = c(3.0)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = x * x * x
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    assert (float(y), float(d1), float(d2), float(d3)) == (27, 27, 18, 6)


def test_persistent_tape_records_its_own_gradients(caplog):
    x = c(3.0)
    with caplog.at_level(logging.WARNING):
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x * x
            d1 = t.gradient(y, x)
            d2 = t.gradient(d1, x)
            d3 = t.gradient(d2, x)
    assert (float(y), float(d1), float(d2), float(d3)) == (27, 27, 18, 6)
    # Outside the block, nothing more is recorded: d3 is a constant.
    assert t.gradient(d3, x) is None


def test_variables_higher_order():
    v = tf.Variable(2.0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = v * v * v * v
        g = inner.gradient(y, v)
    h = outer.gradient(g, v)
    assert float(g) == 32.0 and float(h) == 48.0


# ---- jacobians -------------------------------------------------------------------

def test_jacobian():
    x = c([1.0, 2.0, 3.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    j = t.jacobian(y, x)
    assert j.shape == (3, 3)
    np.testing.assert_allclose(j.numpy(), np.diag([2.0, 4.0, 6.0]))


def test_jacobian_shapes_and_structure():
    x = c([[1.0, 2.0], [3.0, 4.0]])
    w = tf.Variable([5.0, 6.0])
    u = c(1.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch([x, u])
        y = x * w                     # [2, 2]
    jx, jw, ju = t.jacobian(y, [x, w, u])
    assert jx.shape == (2, 2, 2, 2) and jw.shape == (2, 2, 2)
    assert ju is None
    want_x = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for k in range(2):
            want_x[i, k, i, k] = [5.0, 6.0][k]
    np.testing.assert_allclose(jx.numpy(), want_x)
    want_w = np.zeros((2, 2, 2))
    for i in range(2):
        for k in range(2):
            want_w[i, k, k] = x.numpy()[i, k]
    np.testing.assert_allclose(jw.numpy(), want_w)
    z = t.jacobian(y, u, unconnected_gradients="zero")
    assert z.shape == (2, 2) and not z.numpy().any()


def test_batch_jacobian():
    x = c([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x * x
    j = t.batch_jacobian(y, x)
    assert j.shape == (3, 2, 2)
    want = np.stack([np.diag(3 * r ** 2) for r in x.numpy()])
    np.testing.assert_allclose(j.numpy(), want)


def test_batch_jacobian_first_dims_must_match():
    x = c([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as t:
        t.watch(x)
        y = c([[1.0], [2.0], [3.0]]) * c(2.0)
    with pytest.raises(ValueError, match="first dimension"):
        t.batch_jacobian(y, x)


# ---- stop_recording / reset / watched_variables / re-entry -------------------

def test_stop_recording():
    x = c(4.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        with t.stop_recording():
            y = x * x
        z = x * x
    assert t.gradient(y, x) is None
    assert val(t.gradient(z, x)) == 8.0
    with pytest.raises(RuntimeError, match="not recording"):
        with t.stop_recording():
            pass


def test_stop_recording_only_stops_this_tape():
    x = c(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            with inner.stop_recording():
                y = x * x
    assert inner.gradient(y, x) is None
    assert val(outer.gradient(y, x)) == 4.0


def test_reset():
    x = c(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        loss = x * x
        t.reset()
        t.watch(x)
        loss = loss + x * 3.0
    assert val(t.gradient(loss, x)) == 3.0
    with pytest.raises(ValueError):
        tf.GradientTape().reset()


def test_watched_variables_in_creation_order():
    b = tf.Variable(1.0)
    a = tf.Variable(2.0)
    unused = tf.Variable(3.0)
    frozen = tf.Variable(4.0, trainable=False)
    with tf.GradientTape() as t:
        _ = a * frozen
        _ = b * a
    w = t.watched_variables()
    assert isinstance(w, tuple) and len(w) == 2
    assert w[0] is b and w[1] is a
    assert unused not in [id(x) for x in w]
    t.gradient(_, [a])
    assert t.watched_variables()[1] is a     # kept after the one shot


def test_reentering_a_recording_tape():
    t = tf.GradientTape()
    with t:
        with pytest.raises(ValueError, match="still recording"):
            with t:
                pass


def test_tape_reentered_after_exit_keeps_recording():
    x = c(2.0)
    t = tf.GradientTape()
    with t:
        t.watch(x)
        y = x * x
    with t:
        z = y * x
    assert val(t.gradient(z, x)) == 12.0


# ---- dtypes ------------------------------------------------------------------------

def test_cast_gradients():
    x = c([1.0, 2.0])
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.cast(x, tf.float64) * tf.constant(3.0, tf.float64)
        k = tf.cast(x, tf.int32)
        z = tf.cast(k, tf.float32) * x
    g = t.gradient(y, x)
    assert g.dtype == tf.float32 and val(g) == [3.0, 3.0]
    assert val(t.gradient(z, x)) == [1.0, 2.0]      # int path: no gradient


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_float_dtypes(dtype):
    x = tf.constant([1.0, 2.0], dtype)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x - x
    g = t.gradient(y, x)
    assert g.dtype == dtype and val(g) == [1.0, 3.0]


# ---- stop_gradient and custom_gradient ---------------------------------------------

def test_stop_gradient():
    x = c(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * tf.stop_gradient(x)
    assert val(t.gradient(y, x)) == 3.0
    assert val(tf.stop_gradient(x)) == 3.0
    v = tf.Variable(2.0)
    with tf.GradientTape() as t:
        y = tf.stop_gradient(v) * v
    assert val(t.gradient(y, v)) == 2.0


def test_custom_gradient_replaces_the_gradient():
    @tf.custom_gradient
    def f(x):
        def grad(dy):
            return dy * 10.0
        return x * x, grad

    x = c(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x) * 2.0
    assert float(y) == 18.0
    assert val(t.gradient(y, x)) == 20.0


def test_custom_gradient_several_inputs_and_outputs():
    @tf.custom_gradient
    def f(a, b):
        def grad(da, db):
            return da * 2.0 + db, db * 3.0
        return [a * b, a + b], grad

    a, b = c(2.0), c(5.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch([a, b])
        p, s = f(a, b)
    assert (float(p), float(s)) == (10.0, 7.0)
    ga, gb = t.gradient([p, s], [a, b])
    assert (val(ga), val(gb)) == (3.0, 3.0)
    # An output with no gradient reaches grad_fn as zeros.
    ga, gb = t.gradient(p, [a, b])
    assert (val(ga), val(gb)) == (2.0, 0.0)


def test_custom_gradient_is_differentiable_again():
    @tf.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * x * x
        return x * x * x, grad

    x = c(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        g = inner.gradient(y, x)
    assert float(g) == 12.0
    assert val(outer.gradient(g, x)) == 12.0


def test_custom_gradient_with_variables():
    v = tf.Variable(3.0)

    @tf.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            assert len(variables) == 1 and variables[0] is v
            return dy * 7.0, [dy * 100.0]
        return x * v, grad

    x = c(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    gx, gv = t.gradient(y, [x, v])
    assert (val(gx), val(gv)) == (7.0, 100.0)


def test_custom_gradient_variables_errors():
    v = tf.Variable(3.0)

    @tf.custom_gradient
    def needs(x):
        return x * v, lambda dy: dy

    with pytest.raises(TypeError, match="variables"):
        needs(c(1.0))

    @tf.custom_gradient
    def wrong_count(x):
        return x * v, lambda dy, variables=None: (dy, [dy, dy])

    with tf.GradientTape() as t:
        y = wrong_count(c(1.0))
    with pytest.raises(ValueError, match="each variable"):
        t.gradient(y, v)


def test_custom_gradient_wrong_number_of_gradients():
    @tf.custom_gradient
    def f(a, b):
        return a * b, lambda dy: dy

    a = c(1.0)
    with tf.GradientTape() as t:
        t.watch(a)
        y = f(a, c(2.0))
    with pytest.raises(ValueError, match="expected to return 2"):
        t.gradient(y, a)


def test_custom_gradient_python_error_propagates():
    class Boom(Exception):
        pass

    @tf.custom_gradient
    def f(x):
        def grad(dy):
            raise Boom("from grad_fn")
        return x * 1.0, grad

    x = c(1.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    with pytest.raises(Boom):
        t.gradient(y, x)


def test_custom_gradient_outside_tape_and_decorator_forms():
    def impl(x):
        return x * 2.0, lambda dy: dy * 5.0

    f = tf.custom_gradient(impl)
    g = tf.custom_gradient()(impl)
    assert float(f(c(1.0))) == 2.0 and float(g(c(1.0))) == 2.0
    assert f.__name__ == "impl"


def test_gradient_of_bad_rule_shapes_is_clear():
    @tf.custom_gradient
    def f(x):
        return x * 1.0, lambda dy: c([1.0, 2.0, 3.0])

    x = c([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"shape \[3\].*shape \[2\]"):
        t.gradient(y, x)
