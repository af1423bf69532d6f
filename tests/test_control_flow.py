"""tf.cond, tf.while_loop, tf.switch_case, tf.case, tf.TensorArray and
tf.Assert: eagerly (plain Python), and through the graph path with the
C hooks replaced by reference doubles (see test_autograph.py), which
checks everything the Python side does before the C core sees a flat
list of tensors: flattening, conversions, structure/dtype/shape checks
with TF's messages."""
import collections
import importlib

import numpy as np
import pytest

import tfmini as tf
from tfmini.errors import InvalidArgumentError, OutOfRangeError
from tfmini.ops import control_flow_ops as cf

_fn_module = importlib.import_module("tfmini.function")
TRACING = hasattr(_fn_module, "Function")
GRAPH_CF = TRACING and cf._GRAPH_CONTROL_FLOW
_T = tf.constant


class Hooks:
    """Reference doubles for the graph hooks, recording their calls."""

    def __init__(self):
        self.calls = []

    def cond(self, pred, true_fn, false_fn):
        t, f = true_fn(), false_fn()
        self.calls.append(("cond", len(t)))
        for a, b in zip(t, f):
            assert isinstance(a, tf.Tensor) and a.dtype == b.dtype
        return t if pred.numpy() else f

    def while_(self, cond_fn, body_fn, loop_vars, shape_invariants,
               maximum_iterations):
        self.calls.append(("while", [tuple(s.as_list()) if s.rank is not None
                                     else None for s in shape_invariants]))
        for v in loop_vars:
            assert isinstance(v, tf.Tensor)
        n = 0
        while maximum_iterations is None or n < int(maximum_iterations):
            if not cond_fn(*loop_vars).numpy():
                break
            loop_vars = body_fn(*loop_vars)
            n += 1
        return loop_vars

    def assert_(self, condition, data, summarize):
        self.calls.append(("assert", len(data)))
        cf.Assert(bool(condition.numpy()), data, summarize)


@pytest.fixture
def graph(monkeypatch):
    h = Hooks()
    monkeypatch.setattr(cf, "_is_tracing", lambda: True)
    monkeypatch.setattr(cf, "_graph_cond", h.cond)
    monkeypatch.setattr(cf, "_graph_while", h.while_)
    monkeypatch.setattr(cf, "_graph_assert", h.assert_)
    return h


def test_public_names():
    for name in ("cond", "while_loop", "switch_case", "case", "TensorArray",
                 "Assert"):
        assert getattr(tf, name) is getattr(cf, name)


# ---- tf.cond -------------------------------------------------------------

def test_cond_runs_only_the_taken_branch():
    ran = []

    def t():
        ran.append("t")
        return _T(1)

    def f():
        ran.append("f")
        return _T(2)

    assert int(tf.cond(_T(True), t, f)) == 1
    assert int(tf.cond(_T(3) > 5, t, f)) == 2
    assert int(tf.cond(False, t, f)) == 2
    assert ran == ["t", "f", "f"]


def test_cond_keeps_structure():
    out = tf.cond(_T(True), lambda: {"a": (_T(1), [_T(2.0)])},
                  lambda: {"a": (_T(3), [_T(4.0)])})
    assert isinstance(out, dict) and isinstance(out["a"], tuple)
    assert int(out["a"][0]) == 1 and float(out["a"][1][0]) == 2.0


@pytest.mark.parametrize("kwargs,msg", [
    (dict(true_fn=None, false_fn=lambda: 1), "'true_fn' argument required"),
    (dict(true_fn=lambda: 1, false_fn=None), "'false_fn' argument required"),
    (dict(true_fn=1, false_fn=lambda: 1), "'true_fn' must be callable."),
    (dict(true_fn=lambda: 1, false_fn="x"), "'false_fn' must be callable."),
])
def test_cond_argument_errors(kwargs, msg):
    with pytest.raises(TypeError, match=msg):
        tf.cond(_T(True), **kwargs)


def test_cond_non_scalar_pred_is_ambiguous():
    with pytest.raises(ValueError):
        tf.cond(_T([True, False]), lambda: 1, lambda: 2)


def test_cond_graph_path(graph):
    x = _T(2.0)
    out = tf.cond(x > 1, lambda: (x * 2, 1), lambda: (x, 5))
    assert isinstance(out, tuple)
    assert float(out[0]) == 4.0
    # Python numbers become tensors, as graph outputs must.
    assert isinstance(out[1], tf.Tensor) and int(out[1]) == 1
    assert graph.calls == [("cond", 2)]


def test_cond_graph_pred_conversions(graph):
    assert int(tf.cond(_T([True]), lambda: _T(1), lambda: _T(2))) == 1
    assert int(tf.cond(_T(0), lambda: _T(1), lambda: _T(2))) == 2
    with pytest.raises(ValueError, match="must be a scalar"):
        tf.cond(_T([True, True]), lambda: _T(1), lambda: _T(2))


def test_cond_graph_none_outputs(graph):
    assert tf.cond(_T(True), lambda: None, lambda: None) is None
    assert graph.calls == [("cond", 0)]


@pytest.mark.parametrize("t,f,detail", [
    (lambda: (_T(1), _T(2)), lambda: (_T(1),), "number of elements"),
    (lambda: (_T(1),), lambda: [_T(1)], "sequence type"),
    (lambda: _T(1), lambda: _T(1.0), "different types"),
    (lambda: {"a": _T(1)}, lambda: {"b": _T(1)}, "set of keys"),
])
def test_cond_graph_branch_mismatch(graph, t, f, detail):
    with pytest.raises(TypeError) as info:
        tf.cond(_T(True), t, f)
    msg = str(info.value)
    assert ("true_fn and false_fn arguments to tf.cond must have the same "
            "number, type, and overall structure of return values.") in msg
    assert detail in msg


def test_cond_graph_bad_output(graph):
    with pytest.raises(TypeError, match="must be a tensor"):
        tf.cond(_T(True), lambda: object(), lambda: object())


# ---- tf.while_loop -------------------------------------------------------

def test_while_loop_sum():
    i, s = tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s + i * i),
                         [_T(0), _T(0)])
    assert int(i) == 10 and int(s) == 285


def test_while_loop_tf_docs_examples():
    r = tf.while_loop(lambda i: tf.less(i, 10), lambda i: (tf.add(i, 1),),
                      [_T(0)])[0]
    assert int(r) == 10
    Pair = collections.namedtuple("Pair", "j, k")
    ijk = tf.while_loop(lambda i, p: i < 10,
                        lambda i, p: (i + 1, Pair(p.j + p.k, p.j - p.k)),
                        (_T(0), Pair(_T(1), _T(2))))
    assert isinstance(ijk[1], Pair)
    assert (int(ijk[1].j), int(ijk[1].k)) == (32, 64)


def test_while_loop_shapes_may_vary_eagerly():
    _, m = tf.while_loop(lambda i, m: i < 3,
                         lambda i, m: [i + 1, tf.concat([m, m], 0)],
                         [_T(0), tf.ones([2, 2])],
                         shape_invariants=[tf.TensorShape([]),
                                           tf.TensorShape([None, 2])])
    assert m.shape == (16, 2)


def test_while_loop_returns_tensors():
    out = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + 0.5),
                        [0, 0.0])
    assert all(isinstance(v, tf.Tensor) for v in out)
    assert int(out[0]) == 3 and float(out[1]) == 1.5
    out = tf.while_loop(lambda i: i < 0, lambda i: i + 1, [7])
    assert isinstance(out, list) and int(out[0]) == 7


def test_while_loop_single_tensor():
    assert int(tf.while_loop(lambda i: i < 5, lambda i: i + 2, _T(0))) == 6


def test_while_loop_maximum_iterations():
    out = tf.while_loop(lambda i: True, lambda i: i + 1, [_T(0)],
                        maximum_iterations=7)
    assert int(out[0]) == 7
    with pytest.raises(ValueError, match="must be a scalar"):
        tf.while_loop(lambda i: True, lambda i: i + 1, [_T(0)],
                      maximum_iterations=_T([1, 2]))


def test_while_loop_argument_errors():
    with pytest.raises(TypeError, match="'cond' must be callable."):
        tf.while_loop(1, lambda i: i, [_T(0)])
    with pytest.raises(TypeError, match="'body' must be callable."):
        tf.while_loop(lambda i: True, None, [_T(0)])
    with pytest.raises(ValueError, match="'loop_vars' must be provided."):
        tf.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(TypeError, match="parallel_iterations"):
        tf.while_loop(lambda i: True, lambda i: i, [_T(0)],
                      parallel_iterations=0)


def test_while_loop_structure_error():
    with pytest.raises(ValueError, match="same structure as loop_vars"):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,),
                      [_T(0), _T(0)])


def test_while_loop_reads_variables():
    class FakeVariable:                 # anything with _as_tensor()
        def _as_tensor(self):
            return _T(3)

    out = tf.while_loop(lambda v: v < 10, lambda v: v * 2, [FakeVariable()])
    assert int(out[0]) == 12


def test_while_loop_graph_path(graph):
    Pair = collections.namedtuple("Pair", "a b")
    out = tf.while_loop(lambda i, p: i < 4,
                        lambda i, p: (i + 1, Pair(p.a + 1.0, p.b * 2)),
                        [0, Pair(_T([1.0, 2.0]), _T(3))])
    assert int(out[0]) == 4 and isinstance(out[1], Pair)
    np.testing.assert_allclose(out[1].a.numpy(), [5.0, 6.0])
    assert int(out[1].b) == 48
    assert graph.calls == [("while", [(), (2,), ()])]


def test_while_loop_graph_shape_invariants(graph):
    out = tf.while_loop(lambda i, m: i < 2,
                        lambda i, m: (i + 1, tf.concat([m, m], 0)),
                        [_T(0), tf.ones([1, 2])],
                        shape_invariants=[tf.TensorShape([]),
                                          tf.TensorShape([None, 2])])
    assert out[1].shape == (4, 2)
    assert graph.calls == [("while", [(), (None, 2)])]


def test_while_loop_graph_shape_error(graph):
    with pytest.raises(ValueError) as info:
        tf.while_loop(lambda i, m: i < 2,
                      lambda i, m: (i + 1, tf.concat([m, m], 0)),
                      [_T(0), tf.ones([1, 2])])
    msg = str(info.value)
    assert "enters the loop with shape (1, 2), but has shape (2, 2) after " \
           "one iteration" in msg
    assert "shape_invariants" in msg


def test_while_loop_graph_dtype_error(graph):
    with pytest.raises(TypeError, match="enters the loop with type int32, "
                                        "but has type float32"):
        tf.while_loop(lambda i: i < 2, lambda i: tf.cast(i, tf.float32),
                      [_T(0)])


def test_while_loop_graph_invariant_incompatible(graph):
    with pytest.raises(ValueError, match="not compatible with the initial "
                                         "shape"):
        tf.while_loop(lambda m: True, lambda m: m, [tf.ones([2])],
                      shape_invariants=[tf.TensorShape([3])])
    with pytest.raises(ValueError, match="same nested structure"):
        tf.while_loop(lambda i, j: True, lambda i, j: (i, j),
                      [_T(0), _T(0)], shape_invariants=[tf.TensorShape([])])


def test_while_loop_graph_condition_checks(graph):
    with pytest.raises(TypeError, match="must be a bool tensor"):
        tf.while_loop(lambda i: i, lambda i: i - 1, [_T(3)])


def test_while_loop_graph_maximum_iterations(graph):
    out = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [_T(0)],
                        maximum_iterations=_T(5))
    assert int(out[0]) == 5


# ---- tf.switch_case and tf.case ------------------------------------------

def test_switch_case_eager():
    fns = [lambda: _T(17), lambda: _T(31)]
    assert int(tf.switch_case(_T(0), fns)) == 17
    assert int(tf.switch_case(_T(1), fns)) == 31
    assert int(tf.switch_case(_T(7), fns)) == 31          # last = default
    assert int(tf.switch_case(_T(-1), {0: fns[0], 1: fns[1]},
                              default=lambda: _T(-1))) == -1
    assert int(tf.switch_case(_T(1), [(1, fns[1]), (0, fns[0])])) == 31


@pytest.mark.parametrize("args,exc,msg", [
    ((1, [lambda: 1]), TypeError, "'branch_index' must be a Tensor"),
    ((_T(1.0), [lambda: 1]), TypeError, "must be an integer Tensor"),
    ((_T(0), []), ValueError, "at least one item"),
    ((_T(0), [(0, lambda: 1), 1]), TypeError, "must be a 2-tuple"),
    ((_T(0), [("a", lambda: 1)]), TypeError, "key must be a Python `int`"),
    ((_T(0), [(0, 1)]), TypeError, "fn for key 0 must be callable."),
    ((_T(0), {0: lambda: 1, 2: lambda: 2}), ValueError,
     "must form contiguous range"),
])
def test_switch_case_errors(args, exc, msg):
    with pytest.raises(exc, match=msg):
        tf.switch_case(*args)


def test_switch_case_graph(graph):
    fns = {0: lambda: _T(10), 1: lambda: _T(20), 2: lambda: _T(30)}
    for i, want in [(0, 10), (1, 20), (2, 30), (5, 30), (-3, 30)]:
        assert int(tf.switch_case(_T(i), fns)) == want
    assert all(c[0] == "cond" for c in graph.calls)


def test_case_eager():
    x = _T(3)
    assert int(tf.case([(x < 2, lambda: _T(1)), (x < 5, lambda: _T(2))],
                       default=lambda: _T(3))) == 2
    assert int(tf.case([(x > 10, lambda: _T(1))],
                       default=lambda: _T(9))) == 9
    # Without a default the last function is the default, but its
    # predicate must hold.
    assert int(tf.case([(x > 10, lambda: _T(1)), (x > 1, lambda: _T(7))])) \
        == 7
    with pytest.raises(InvalidArgumentError,
                       match="None of conditions evaluated as True"):
        tf.case([(x > 10, lambda: _T(1)), (x > 100, lambda: _T(2))])
    with pytest.raises(InvalidArgumentError, match="exclusive=True"):
        tf.case([(x > 1, lambda: _T(1)), (x > 2, lambda: _T(2))],
                exclusive=True)


def test_case_errors():
    with pytest.raises(TypeError, match="must be a 2-tuple"):
        tf.case([_T(True)])
    with pytest.raises(TypeError, match="must be callable"):
        tf.case([(_T(True), 3)])
    with pytest.raises(ValueError, match="must not be empty"):
        tf.case([])


def test_case_graph(graph):
    x = _T(3)
    pairs = [(x < 2, lambda: _T(1)), (x < 5, lambda: _T(2))]
    assert int(tf.case(pairs, default=lambda: _T(3))) == 2
    assert int(tf.case(pairs)) == 2
    with pytest.raises(InvalidArgumentError, match="exclusive=True"):
        tf.case([(x > 1, lambda: _T(1)), (x > 2, lambda: _T(2))],
                exclusive=True)
    assert ("assert", 2) in graph.calls


# ---- tf.Assert -----------------------------------------------------------

def test_assert_eager():
    assert tf.Assert(_T(True), ["never shown"]) is None
    with pytest.raises(InvalidArgumentError) as info:
        tf.Assert(_T(1) > 2, ["x is", _T([1, 2, 3, 4, 5])])
    msg = str(info.value)
    assert "to be true. Summarized data: x is" in msg
    assert "1, 2, 3, ..." in msg
    with pytest.raises(InvalidArgumentError, match="1, 2, 3, 4, 5"):
        tf.Assert(False, [_T([1, 2, 3, 4, 5])], summarize=-1)
    assert tf.debugging.Assert is tf.Assert if hasattr(tf, "debugging") \
        else True


def test_assert_graph(graph):
    tf.Assert(_T(True), ["ok"])
    with pytest.raises(InvalidArgumentError, match="bad"):
        tf.Assert(_T(False), ["bad"])
    assert graph.calls == [("assert", 1), ("assert", 1)]


# ---- tf.TensorArray ------------------------------------------------------

def test_tensor_array_write_read_stack():
    ta = tf.TensorArray(tf.float32, size=3)
    for i in range(3):
        assert ta.write(i, _T([i, i + 0.5])) is ta     # eager: in place
    assert int(ta.size()) == 3 and ta.size().dtype == tf.int32
    np.testing.assert_allclose(ta.stack().numpy(),
                               [[0, 0.5], [1, 1.5], [2, 2.5]])
    np.testing.assert_allclose(ta.read(_T(1)).numpy(), [1, 1.5])
    assert ta.element_shape == (2,)
    assert ta.dtype == tf.float32


def test_tensor_array_unwritten_are_zeros():
    ta = tf.TensorArray(tf.int32, size=3, element_shape=[2])
    ta = ta.write(1, _T([4, 5]))
    np.testing.assert_array_equal(ta.stack().numpy(), [[0, 0], [4, 5],
                                                       [0, 0]])


def test_tensor_array_unstack_gather_concat():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    ta = ta.unstack(_T([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    assert int(ta.size()) == 3
    np.testing.assert_allclose(ta.gather([2, 0]).numpy(),
                               [[5, 6], [1, 2]])
    np.testing.assert_allclose(ta.concat().numpy(), [1, 2, 3, 4, 5, 6])
    ta2 = tf.TensorArray(tf.float32, size=2).scatter([1, 0],
                                                     _T([[1.0], [2.0]]))
    np.testing.assert_allclose(ta2.stack().numpy(), [[2.0], [1.0]])


def test_tensor_array_dynamic_size():
    ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
    for i in range(4):
        ta = ta.write(i, i * 10)
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 10, 20, 30])
    ta = ta.write(6, 60)
    assert int(ta.size()) == 7


def test_tensor_array_errors():
    ta = tf.TensorArray(tf.float32, size=2)
    with pytest.raises(OutOfRangeError, match="not resizeable and size is: "
                                              "2"):
        ta.write(2, 1.0)
    with pytest.raises(OutOfRangeError, match="negative"):
        ta.write(-1, 1.0)
    with pytest.raises(InvalidArgumentError,
                       match="TensorArray dtype is float32 but Op is trying "
                             "to write dtype int32"):
        ta.write(0, _T(1))
    ta.write(0, _T([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"Incompatible shape for value "
                                         r"\(\(3,\)\), expected \(\(2,\)\)"):
        ta.write(1, _T([1.0, 2.0, 3.0]))
    with pytest.raises(OutOfRangeError, match="Tried to read from index 5"):
        ta.read(5)
    ta.read(0)
    with pytest.raises(InvalidArgumentError, match="twice"):
        ta.read(0)                                  # clear_after_read
    with pytest.raises(ValueError, match="Cannot unstack 3 tensors"):
        tf.TensorArray(tf.float32, size=2).unstack(_T([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Size must be declared"):
        tf.TensorArray(tf.float32)
    with pytest.raises(InvalidArgumentError, match="scalar shape"):
        tf.TensorArray(tf.float32, size=1).write(0, 1.0).concat()


def test_tensor_array_read_many():
    ta = tf.TensorArray(tf.float32, size=1, clear_after_read=False)
    ta.write(0, 3.0)
    assert float(ta.read(0)) == float(ta.read(0)) == 3.0


def test_tensor_array_graph_loop(graph):
    # As a loop variable the TensorArray is one dense buffer, written
    # functionally.
    x = _T([1.0, 2.0, 3.0])
    ta = tf.TensorArray(tf.float32, size=3, element_shape=[])
    i, ta = tf.while_loop(lambda i, ta: i < 3,
                          lambda i, ta: (i + 1, ta.write(i, x[i] * x[i])),
                          [_T(0), ta])
    assert isinstance(ta, tf.TensorArray)
    np.testing.assert_allclose(ta.stack().numpy(), [1.0, 4.0, 9.0])
    np.testing.assert_allclose(ta.read(_T(2)).numpy(), 9.0)
    np.testing.assert_allclose(ta.gather(_T([0, 2])).numpy(), [1.0, 9.0])
    assert int(ta.size()) == 3
    assert graph.calls == [("while", [(), (3,)])]


def test_tensor_array_graph_needs_element_shape(graph):
    ta = tf.TensorArray(tf.float32, size=3)
    with pytest.raises(ValueError, match="needs a fully known element "
                                         "shape"):
        tf.while_loop(lambda i, ta: i < 3,
                      lambda i, ta: (i + 1, ta.write(i, 1.0)), [_T(0), ta])


def test_tensor_array_graph_dynamic_size_invariant(graph):
    ta = tf.TensorArray(tf.float32, size=1, dynamic_size=True,
                        element_shape=[2])
    tf.while_loop(lambda i, ta: i < 0, lambda i, ta: (i, ta), [_T(0), ta])
    assert graph.calls == [("while", [(), (None, 2)])]


def test_tensor_array_graph_cond(graph):
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[])
    ta = ta.write(0, 1.0)
    out = tf.cond(_T(True), lambda: ta.write(1, 5.0), lambda: ta)
    np.testing.assert_allclose(out.stack().numpy(), [1.0, 5.0])


# ---- gradients (eager control flow is Python: the tape sees the ops) -----

@pytest.mark.skipif(not hasattr(tf, "GradientTape"),
                    reason="needs tf.GradientTape")
def test_gradient_through_eager_loop_and_cond():
    x = _T(1.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x),
                             [_T(0), _T(1.0)])
        y = tf.cond(y > 1.0, lambda: y * 2.0, lambda: y)
    # y = 2 x**3, dy/dx = 6 x**2
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 6 * 1.5 ** 2,
                               rtol=1e-6)


@pytest.mark.skipif(not GRAPH_CF, reason="needs graph control flow")
def test_traced_cond_and_loop():
    @tf.function
    def f(x, n):
        i, s = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + x),
                             [_T(0), _T(0.0)])
        return tf.cond(s > 3.0, lambda: s, lambda: -s)

    assert float(f(_T(1.0), _T(5))) == 5.0
    assert float(f(_T(1.0), _T(2))) == -2.0


# ---- a TensorArray written only inside a traced loop ------------------
# Note [TensorArray element shape probe]: the body is traced once to learn
# the element shape.

@pytest.mark.skipif(not GRAPH_CF, reason="needs graph control flow")
def test_tensor_array_element_shape_learned_in_traced_loop():
    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=3)

        def body(i, ta, y):
            y = y * 2.0
            return i + 1, ta.write(i, y), y
        _, ta, _ = tf.while_loop(lambda i, ta, y: i < 3, body, [0, ta, x])
        return ta.stack()

    np.testing.assert_allclose(f(_T([1.0, 2.0])).numpy(),
                               [[2, 4], [4, 8], [8, 16]])


@pytest.mark.skipif(not GRAPH_CF, reason="needs graph control flow")
def test_tensor_array_element_shape_learned_in_autograph_loop():
    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=4)
        s = x
        for i in tf.range(4):
            s = tf.sin(s)
            ta = ta.write(i, s)
        return ta.stack()

    want, s = [], np.array([0.5, 1.0], np.float32)
    for _ in range(4):
        s = np.sin(s)
        want.append(s)
    np.testing.assert_allclose(f(_T([0.5, 1.0])).numpy(), want, rtol=1e-6)


@pytest.mark.skipif(not GRAPH_CF, reason="needs graph control flow")
def test_tensor_array_element_shape_probe_errors():
    def read_first(x):
        ta = tf.TensorArray(tf.float32, size=3)
        return tf.while_loop(
            lambda i, ta: i < 3,
            lambda i, ta: (i + 1, ta.write(i, ta.read(i) + x)),
            [0, ta])[1].stack()

    def ragged(x):
        ta = tf.TensorArray(tf.float32, size=2)

        def body(i, ta):
            ta = ta.write(i, x)
            return i + 1, ta.write(i + 1, tf.concat([x, x], 0))
        return tf.while_loop(lambda i, ta: i < 1, body, [0, ta])[1].stack()

    with pytest.raises(ValueError, match="reads the TensorArray before "
                                         "writing to it"):
        tf.function(read_first)(_T(1.0))
    with pytest.raises(ValueError, match=r"written to it have shape "
                                         r"\(None,\), not fully known"):
        tf.function(ragged)(_T([1.0]))
