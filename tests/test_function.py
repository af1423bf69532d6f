"""tf.function: the tracing rules one by one (TF_SEMANTICS.md, tf.function).

Cache-key details are in test_function_cache.py, eager-vs-traced
equality in test_function_harness.py, memory in test_function_memory.py."""
import collections
import gc
import logging
import sys
import weakref

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini.errors import OperatorNotAllowedInGraphError

HAS_VARIABLES = hasattr(tf, "Variable") and hasattr(tf, "GradientTape")
needs_variables = pytest.mark.skipif(not HAS_VARIABLES,
                                     reason="needs tf.Variable/GradientTape")


def c(x, dtype=None):
    return tf.constant(x, dtype=dtype)


# ---- tracing and retracing ----------------------------------------------

def test_traces_once_per_signature_and_reuses_graph():
    traces = []

    @tf.function
    def f(x, y):
        traces.append(1)
        return x * y + 1.0

    r1 = f(c([1.0, 2.0]), c([3.0, 4.0]))
    r2 = f(c([5.0, 6.0]), c([7.0, 8.0]))
    np.testing.assert_allclose(r1.numpy(), [4.0, 9.0])
    np.testing.assert_allclose(r2.numpy(), [36.0, 49.0])
    assert len(traces) == 1
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("first,second", [
    (lambda: c([1.0, 2.0]), lambda: c([1.0, 2.0, 3.0])),       # shape
    (lambda: c([1.0, 2.0]), lambda: c([1.0, 2.0], tf.float64)),  # dtype
    (lambda: c([1.0, 2.0]), lambda: c([[1.0, 2.0]])),           # rank
    (lambda: 1, lambda: 2),                                     # value
    (lambda: 1, lambda: 1.0),                                   # type
    (lambda: True, lambda: 1),                                  # bool/int
    (lambda: "a", lambda: "b"),
    (lambda: [c(1.0)], lambda: [c(1.0), c(1.0)]),               # structure
    (lambda: (1, 2), lambda: [1, 2]),                           # tuple/list
])
def test_retrace_triggers(first, second):
    @tf.function
    def f(x):
        return c(1.0)

    f(first())
    f(first())
    assert f.experimental_get_tracing_count() == 1
    f(second())
    assert f.experimental_get_tracing_count() == 2
    f(first())
    f(second())
    assert f.experimental_get_tracing_count() == 2


def test_python_values_are_baked_in():
    @tf.function
    def f(x, n):
        return x * float(n)

    assert f(c(2.0), 3).numpy() == 6.0
    assert f(c(2.0), 4).numpy() == 8.0
    assert f(c(5.0), 3).numpy() == 15.0
    assert f.experimental_get_tracing_count() == 2


def test_each_function_object_has_its_own_cache():
    def body(x):
        return x + 1.0

    f, g = tf.function(body), tf.function(body)
    f(c(1.0))
    g(c(1.0))
    assert f.experimental_get_tracing_count() == 1
    assert g.experimental_get_tracing_count() == 1


def test_closures_and_globals_are_frozen_at_trace_time():
    scale = [2.0]

    @tf.function
    def f(x):
        return x * scale[0]

    assert f(c(1.0)).numpy() == 2.0
    scale[0] = 10.0
    assert f(c(1.0)).numpy() == 2.0      # same signature: cached graph
    assert f(c([1.0])).numpy() == [10.0]  # a new trace sees the new value


def test_decorator_forms_and_members():
    def body(x):
        """Doc."""
        return x

    f = tf.function(body)
    g = tf.function()(body)
    h = tf.function(input_signature=[tf.TensorSpec([2])])(body)
    for fn in (f, g, h):
        assert fn.python_function is body
        assert fn.__name__ == "body" and fn.__doc__ == "Doc."
    assert f.input_signature is None
    assert h.input_signature == (tf.TensorSpec([2]),)


def test_structured_outputs():
    Pair = collections.namedtuple("Pair", "a b")

    @tf.function
    def f(x):
        return {"sum": x + 1.0, "parts": [x, (x * 2.0, None)],
                "pair": Pair(x, 3), "n": 7}

    for _ in range(2):
        r = f(c(1.0))
        assert set(r) == {"sum", "parts", "pair", "n"}
        assert r["sum"].numpy() == 2.0
        assert r["parts"][0].numpy() == 1.0
        assert r["parts"][1][0].numpy() == 2.0 and r["parts"][1][1] is None
        assert isinstance(r["pair"], Pair) and r["pair"].b.numpy() == 3
        assert isinstance(r["n"], tf.Tensor) and r["n"].dtype == tf.int32


@pytest.mark.parametrize("ret,check", [
    (lambda x: None, lambda r: r is None),
    (lambda x: x, lambda r: r.numpy() == 1.0),
    (lambda x: (x, x + 1.0), lambda r: isinstance(r, tuple) and
     r[1].numpy() == 2.0),
    (lambda x: [x], lambda r: isinstance(r, list) and r[0].numpy() == 1.0),
    (lambda x: 2.5, lambda r: r.numpy() == 2.5),
])
def test_output_kinds(ret, check):
    f = tf.function(ret)
    assert check(f(c(1.0)))
    assert check(f(c(1.0)))      # the C path packs the same way


def test_non_tensor_return_is_a_type_error():
    @tf.function
    def f(x):
        return object()

    with pytest.raises(TypeError, match="must return zero or more Tensors"):
        f(c(1.0))


# ---- input_signature -----------------------------------------------------

def test_input_signature_none_dims_never_retrace():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def g(x):
        return x * 2.0

    for n in (1, 4, 9):
        r = g(c(np.ones((n, 3), np.float32)))
        assert r.shape == (n, 3)
    assert g.experimental_get_tracing_count() == 1
    cf = g.get_concrete_function()
    assert cf.inputs[0].shape.as_list() == [None, 3]


@pytest.mark.parametrize("bad", [
    lambda: c(np.ones((2, 4), np.float32)),     # shape
    lambda: c(np.ones((2, 3), np.int32)),       # dtype
    lambda: c(np.ones((3,), np.float32)),       # rank
    lambda: "text",
])
def test_input_signature_mismatch_is_type_and_value_error(bad):
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def g(x):
        return x

    g(c(np.ones((1, 3), np.float32)))
    with pytest.raises(TypeError) as e1:
        g(bad())
    assert isinstance(e1.value, ValueError)
    assert "'x'" in str(e1.value)
    assert g.experimental_get_tracing_count() == 1


def test_input_signature_converts_python_values():
    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
    def g(x):
        return x + 1.0

    np.testing.assert_allclose(g([1.0, 2.0]).numpy(), [2.0, 3.0])
    np.testing.assert_allclose(g(np.array([1, 2], np.float32)).numpy(),
                               [2.0, 3.0])
    assert g.experimental_get_tracing_count() == 1


def test_input_signature_rejects_extra_arguments():
    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def g(x, y=1):
        return x

    g(c(1.0))
    with pytest.raises(TypeError):
        g(c(1.0), 2)


def test_input_signature_nested():
    spec = [tf.TensorSpec([None]), (tf.TensorSpec([]), tf.TensorSpec([]))]

    @tf.function(input_signature=spec)
    def g(v, pair):
        return v * pair[0] + pair[1]

    r = g(c([1.0, 2.0]), (c(2.0), c(1.0)))
    np.testing.assert_allclose(r.numpy(), [3.0, 5.0])
    g(c([1.0, 2.0, 3.0]), (c(2.0), c(1.0)))
    assert g.experimental_get_tracing_count() == 1


def test_bad_input_signature():
    with pytest.raises(TypeError):
        tf.function(input_signature=tf.TensorSpec([1]))(lambda x: x)
    with pytest.raises(TypeError):
        tf.function(input_signature=[3])(lambda x: x)


# ---- reduce_retracing ----------------------------------------------------

def test_reduce_retracing_generalizes_the_second_shape():
    @tf.function(reduce_retracing=True)
    def f(x):
        return x + 1.0

    f(c(np.ones(2, np.float32)))
    f(c(np.ones(3, np.float32)))
    assert f.experimental_get_tracing_count() == 2
    for n in (4, 5, 6, 2, 3):
        assert f(c(np.ones(n, np.float32))).shape == (n,)
    assert f.experimental_get_tracing_count() == 2
    shapes = [cf.inputs[0].shape.as_list() for cf in
              [f.get_concrete_function(c(np.ones(k, np.float32)))
               for k in (2, 7)]]
    assert shapes == [[2], [None]]     # the most specific match wins


def test_reduce_retracing_keeps_dtype_and_rank_apart():
    @tf.function(reduce_retracing=True)
    def f(x):
        return x

    f(c([1.0]))
    f(c([1.0, 2.0]))
    f(c([[1.0]]))
    f(c([1, 2]))
    assert f.experimental_get_tracing_count() == 4


def test_without_reduce_retracing_every_shape_traces():
    @tf.function
    def f(x):
        return x

    for n in range(1, 5):
        f(c(np.ones(n, np.float32)))
    assert f.experimental_get_tracing_count() == 4


# ---- concrete functions --------------------------------------------------

def test_get_concrete_function_with_specs_serves_calls():
    @tf.function
    def f(x):
        return x * 2.0

    cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32))
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(cf(c([1.0, 2.0])).numpy(), [2.0, 4.0])
    f(c([1.0, 2.0, 3.0]))       # compatible with the traced spec
    assert f.experimental_get_tracing_count() == 1
    assert f.get_concrete_function(tf.TensorSpec([None])) is cf
    with pytest.raises(TypeError):
        cf(c([1, 2]))


def test_concrete_function_graph_and_signature():
    @tf.function
    def f(x, y):
        return x + y

    cf = f.get_concrete_function(c([1.0]), c([2.0]))
    ops = cf.graph.get_operations()
    assert [o.type for o in ops] == ["Placeholder", "Placeholder", "AddV2"]
    assert [o.name for o in ops] == ["x", "y", "add"]
    assert ops[2].inputs == ["x:0", "y:0"]
    args, kwargs = cf.structured_input_signature
    assert args == (tf.TensorSpec([1]), tf.TensorSpec([1])) and kwargs == {}
    text = f.pretty_printed_concrete_signatures()
    spec = "TensorSpec(shape=(1,), dtype=tf.float32, name=None)"
    assert text == (f"Input Parameters:\n"
                    f"  x (POSITIONAL_OR_KEYWORD): {spec}\n"
                    f"  y (POSITIONAL_OR_KEYWORD): {spec}\n"
                    f"Output Type:\n  {spec}\nCaptures:\n  None")


def test_pretty_printed_signatures_list_every_trace():
    @tf.function
    def f(x, n):
        return x

    f(c(1.0), 1)
    f(c([1.0, 2.0]), 2)
    text = f.pretty_printed_concrete_signatures()
    assert text.count("Input Parameters:") == 2
    assert "n (POSITIONAL_OR_KEYWORD): Literal[1]\n" in text
    assert "n (POSITIONAL_OR_KEYWORD): Literal[2]\n" in text
    assert "shape=(2,)" in text


def test_dead_code_is_pruned():
    @tf.function
    def f(x):
        unused = x * 3.0       # noqa: F841
        return x + 1.0

    cf = f.get_concrete_function(c(1.0))
    assert len(cf.graph.get_operations()) == 5   # x, 2 Consts, mul, add
    assert cf._plan_steps == 1


# ---- methods -------------------------------------------------------------

class Scaler:
    def __init__(self, k):
        self.k = k
        self.traces = 0

    @tf.function
    def apply(self, x):
        self.traces += 1
        return x * self.k


def test_bound_methods_share_a_cache_per_instance():
    a, b = Scaler(2.0), Scaler(3.0)
    x = c([1.0])
    assert a.apply(x).numpy() == [2.0]
    assert a.apply(x).numpy() == [2.0]
    assert a.apply is a.apply
    assert a.traces == 1 and a.apply.experimental_get_tracing_count() == 1
    assert b.apply(x).numpy() == [3.0]
    assert b.traces == 1
    assert Scaler.apply.experimental_get_tracing_count() == 0


def test_bound_method_does_not_keep_its_instance_alive():
    a = Scaler(2.0)
    a.apply(c(1.0))
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None
    assert len(Scaler.apply._descriptor_cache) == 0


def test_method_called_through_the_class():
    a = Scaler(2.0)
    assert Scaler.apply(a, c(1.0)).numpy() == 2.0


# ---- side effects --------------------------------------------------------

def test_python_print_at_trace_tf_print_every_call(capsys):
    @tf.function
    def f(x):
        print("python print")
        tf.print("tf.print", x)
        return x

    for _ in range(3):
        f(c([1, 2, 3]))
    out, err = capsys.readouterr()
    assert out.count("python print") == 1
    assert err == "tf.print [1 2 3]\n" * 3


def test_python_side_effects_only_while_tracing():
    log = []

    @tf.function
    def f(x):
        log.append("called")
        return x

    f(c(1.0))
    f(c(2.0))
    assert log == ["called"]


def test_run_functions_eagerly_runs_the_body_every_call():
    log = []

    @tf.function
    def f(x):
        log.append(tf.executing_eagerly())
        return x + 1.0

    f(c(1.0))
    tf.config.run_functions_eagerly(True)
    try:
        assert tf.config.functions_run_eagerly()
        assert f(c(1.0)).numpy() == 2.0
        f(c(1.0))
    finally:
        tf.config.run_functions_eagerly(False)
    assert log == [False, True, True]
    assert f(c(5.0)).numpy() == 6.0
    assert log == [False, True, True]


def test_executing_eagerly_and_init_scope():
    seen = {}

    @tf.function
    def f(x):
        seen["traced"] = tf.executing_eagerly()
        with tf.init_scope():
            seen["init_scope"] = tf.executing_eagerly()
            k = c(2.0) * 3.0          # runs now: a concrete tensor
            seen["k"] = k.numpy()
        return x * k

    assert f(c(1.0)).numpy() == 6.0
    assert seen == {"traced": False, "init_scope": True, "k": 6.0}
    assert tf.executing_eagerly()


# ---- symbolic tensors ----------------------------------------------------

def test_symbolic_tensor_printing_and_eager_only_errors():
    seen = {}

    @tf.function
    def f(x):
        y = x + x
        seen["str"] = str(y)
        seen["repr"] = repr(y)
        seen["name"] = y.name
        seen["x"] = str(x)
        with pytest.raises(AttributeError):       # as TF's SymbolicTensor
            y.numpy()
        with pytest.raises(OperatorNotAllowedInGraphError,
                           match="as a Python bool is not allowed"):
            bool(y)
        with pytest.raises(OperatorNotAllowedInGraphError):
            float(y)
        return y

    f(c([1.0, 2.0]))
    assert seen["str"] == 'Tensor("add:0", shape=(2,), dtype=float32)'
    assert seen["repr"] == "<tf.Tensor 'add:0' shape=(2,) dtype=float32>"
    assert seen["name"] == "add:0"
    assert seen["x"] == 'Tensor("x:0", shape=(2,), dtype=float32)'


def test_unknown_dims_print_as_none():
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def f(x):
        seen.append(str(x * 2.0))
        return x

    f(c(np.ones((2, 3), np.float32)))
    assert seen == ['Tensor("mul:0", shape=(None, 3), dtype=float32)']


def test_node_names_are_unique():
    @tf.function
    def f(x):
        return (x + 1.0) + (x + 2.0)

    names = [o.name for o in
             f.get_concrete_function(c(1.0)).graph.get_operations()]
    assert len(names) == len(set(names))
    assert {"add", "add_1", "add_2"} <= set(names)


def test_leaked_symbolic_tensor_is_a_clear_error():
    leak = []

    @tf.function
    def f(x):
        leak.append(x * 2.0)
        return x

    f(c(1.0))
    with pytest.raises(TypeError, match="leaked out"):
        leak[0] + 1.0

    @tf.function
    def g(x):
        return x + leak[0]

    with pytest.raises(TypeError, match="out of scope"):     # as TF
        g(c(1.0))


def test_leaked_tensor_outlives_its_function():
    leak = []

    def body(x):
        leak.append(x * 2.0)
        return x

    f = tf.function(body)
    f(c(1.0))
    del f
    gc.collect()
    assert "shape=()" in str(leak[0])     # printable, no dangling graph
    with pytest.raises(TypeError, match="used outside"):
        leak[0] * 2.0


# ---- errors name the user's line -----------------------------------------

def test_runtime_error_names_the_line_that_made_the_op():
    @tf.function(input_signature=[tf.TensorSpec([None]),
                                  tf.TensorSpec([None])])
    def f(x, y):
        z = x * 2.0
        return z + y   # THE LINE

    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        f(c([1.0, 2.0]), c([1.0, 2.0, 3.0]))
    msg = str(e.value)
    assert "Incompatible shapes for AddV2: [2] vs [3]" in msg
    line = next(i for i, text in enumerate(open(__file__), 1)
                if "# THE LINE" in text and "return z + y" in text)
    assert f'File "{__file__}", line {line}, in f' in msg
    assert "Node 'add' (AddV2)" in msg


def test_trace_time_error_has_the_user_frame():
    @tf.function
    def f(x, y):
        return x + y

    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        f(c([1.0, 2.0]), c([1.0, 2.0, 3.0]))
    frames = [fr.name for fr in e.traceback]
    assert "f" in frames
    assert any("while tracing tf.function 'f'" in n
               for n in getattr(e.value, "__notes__", []))
    assert f.experimental_get_tracing_count() == 0


# ---- nesting -------------------------------------------------------------

def test_function_calling_function_is_traced_inline():
    inner_traces = []

    @tf.function
    def inner(x):
        inner_traces.append(1)
        return x * 2.0

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    assert outer(c(1.0)).numpy() == 3.0
    assert outer(c(2.0)).numpy() == 5.0
    ops = outer.get_concrete_function(c(1.0)).graph.get_operations()
    assert "Mul" in [o.type for o in ops]
    assert inner(c(1.0)).numpy() == 2.0     # its own cache still works
    assert len(inner_traces) == 2


# ---- retracing warning ---------------------------------------------------

def test_retracing_warning_names_the_argument(caplog):
    @tf.function
    def f(x, n):
        return x

    with caplog.at_level(logging.WARNING, logger="tfmini"):
        for i in range(6):
            f(c(1.0), i)
    warnings = [r.getMessage() for r in caplog.records
                if "retracing" in r.getMessage()]
    assert len(warnings) == 2         # at most 2 per function
    assert warnings[0].startswith("5 out of the last 5 calls to <function")
    assert "reduce_retracing=True" in warnings[0]
    assert "argument 'n': Python value 3 -> 4" in warnings[0]


def test_retracing_warning_shape_change(caplog):
    @tf.function
    def f(x):
        return x

    with caplog.at_level(logging.WARNING, logger="tfmini"):
        for i in range(1, 6):
            f(c(np.ones(i, np.float32)))
    msg = " ".join(r.getMessage() for r in caplog.records)
    assert "argument 'x': shape (4,) -> (5,)" in msg


def test_no_warning_when_calls_mostly_hit(caplog):
    @tf.function
    def f(x):
        return x

    with caplog.at_level(logging.WARNING, logger="tfmini"):
        for i in range(1, 6):
            f(c(np.ones(i, np.float32)))
            for _ in range(3):
                f(c(np.ones(i, np.float32)))
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]


# ---- tf.print ------------------------------------------------------------

@pytest.mark.parametrize("value,summarize,text", [
    (np.arange(10), 3, "[0 1 2 ... 7 8 9]"),
    (np.arange(10), -1, "[0 1 2 3 4 5 6 7 8 9]"),
    (np.arange(5), 3, "[0 1 2 3 4]"),
    (np.array(6.0, np.float32), 3, "6"),
    (np.array([0.5, 1.0, 1e-10], np.float32), 3, "[0.5 1 1e-10]"),
    (np.array([0.1], np.float64), 3, "[0.1]"),
    (np.array([True, False]), 3, "[1 0]"),
    (np.arange(4).reshape(2, 2), 3, "[[0 1]\n [2 3]]"),
    (np.arange(8).reshape(4, 2), 1, "[[0 1]\n ...\n [6 7]]"),
    (np.array([np.inf, -np.inf, np.nan], np.float32), 3, "[inf -inf nan]"),
])
def test_tf_print_format(capsys, value, summarize, text):
    tf.print(c(value), summarize=summarize)
    assert capsys.readouterr().err == text + "\n"


def test_tf_print_mixed_inputs_and_streams(capsys):
    x = c([1, 2])
    tf.print("x:", x, [x, 3], {"b": 1, "a": x}, sep="|", end="!\n",
             output_stream=sys.stdout)
    out = capsys.readouterr().out
    assert out == "x:|[1 2]|[[1 2], 3]|{'a': [1 2], 'b': 1}!\n"


def test_tf_print_traced_matches_eager(capsys):
    def body(x):
        tf.print("value", x, {"k": [x, 1]}, summarize=2)
        return x

    x = c(np.arange(6).reshape(2, 3))
    body(x)
    eager = capsys.readouterr().err
    f = tf.function(body)
    f(x)
    f(x)
    assert capsys.readouterr().err == eager * 2


def test_tf_print_to_a_file_object(tmp_path):
    path = tmp_path / "log.txt"
    with open(path, "w") as fh:
        @tf.function
        def f(x):
            tf.print(x, output_stream=fh)
            return x
        f(c(1))
        f(c(2))
    assert path.read_text() == "1\n2\n"


# ---- TensorSpec ----------------------------------------------------------

def test_tensor_spec():
    s = tf.TensorSpec([None, 3], tf.float32, name="x")
    assert repr(s) == ("TensorSpec(shape=(None, 3), dtype=tf.float32, "
                       "name='x')")
    assert s.shape.as_list() == [None, 3] and s.dtype == tf.float32
    assert s.is_compatible_with(c(np.ones((5, 3), np.float32)))
    assert not s.is_compatible_with(c(np.ones((5, 4), np.float32)))
    assert not s.is_compatible_with(c(np.ones((5, 3), np.float64)))
    assert tf.TensorSpec.from_tensor(c([1, 2])) == tf.TensorSpec([2],
                                                                 tf.int32)
    assert tf.TensorSpec([2]) == tf.TensorSpec((2,), "float32")
    assert len({tf.TensorSpec([2]), tf.TensorSpec([2])}) == 1
    assert tf.TensorSpec([1, None]).is_subtype_of(tf.TensorSpec([None] * 2))
    assert not tf.TensorSpec([None]).is_subtype_of(tf.TensorSpec([1]))


# ---- variables (need the tape work) --------------------------------------

@needs_variables
def test_variables_are_captured_by_reference():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def f(x):
        return x * v

    np.testing.assert_allclose(f(c(1.0)).numpy(), [1.0, 2.0])
    v.assign([3.0, 4.0])
    np.testing.assert_allclose(f(c(1.0)).numpy(), [3.0, 4.0])
    assert f.experimental_get_tracing_count() == 1


@needs_variables
def test_assign_runs_every_call_and_in_program_order():
    v = tf.Variable(0.0)

    @tf.function
    def f(x):
        before = v.read_value()
        v.assign_add(x)
        after = v.read_value()
        v.assign(after * 2.0)
        return before, after

    b, a = f(c(1.0))
    assert (b.numpy(), a.numpy(), v.numpy()) == (0.0, 1.0, 2.0)
    b, a = f(c(1.0))
    assert (b.numpy(), a.numpy(), v.numpy()) == (2.0, 3.0, 6.0)


@needs_variables
def test_variables_passed_as_arguments_key_by_identity():
    a, b = tf.Variable(1.0), tf.Variable(2.0)

    @tf.function
    def f(v, x):
        return v * x

    assert f(a, c(3.0)).numpy() == 3.0
    assert f(b, c(3.0)).numpy() == 6.0
    assert f(a, c(1.0)).numpy() == 1.0
    assert f.experimental_get_tracing_count() == 2


@needs_variables
def test_variable_created_on_first_trace_only():
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        return x + v

    # A new variable on every call cannot be a graph: as in TF, the first
    # call traces twice and the second trace's creation is the error.
    with pytest.raises(ValueError, match="singleton tf.Variables created "
                                         "on the first call"):
        f(c(1.0))


@needs_variables
def test_lazily_built_weights_do_not_retrace():
    class Dense:
        def __init__(self):
            self.w = None

        def __call__(self, x):
            if self.w is None:
                self.w = tf.Variable(
                    np.full(x.shape[-1], 2.0, np.float32))
            return x * self.w

    layer = Dense()

    @tf.function
    def f(x):
        return layer(x)

    np.testing.assert_allclose(f(c([1.0, 2.0])).numpy(), [2.0, 4.0])
    # The trace that made the variable is followed by one that makes
    # none (as in TF, which counts both).
    assert f.experimental_get_tracing_count() == 2
    np.testing.assert_allclose(f(c([3.0, 4.0])).numpy(), [6.0, 8.0])
    assert f.experimental_get_tracing_count() == 2


@needs_variables
def test_variable_initial_value_computed_in_the_trace_is_lifted():
    holder = []

    @tf.function
    def f(x):
        if not holder:
            holder.append(tf.Variable(c([1.0, 2.0]) * 3.0))
        return x * holder[0]

    np.testing.assert_allclose(f(c(1.0)).numpy(), [3.0, 6.0])
    np.testing.assert_allclose(holder[0].numpy(), [3.0, 6.0])


@needs_variables
def test_variable_initial_value_from_an_input_is_an_error():
    @tf.function
    def f(x):
        return tf.Variable(x * 2.0)

    with pytest.raises(ValueError, match="depends on the function's input"):
        f(c(1.0))


@needs_variables
def test_tape_inside_traced_function():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            y = v * v * x
        g = tape.gradient(y, v)
        v.assign_sub(0.1 * g)
        return y

    x = c([3.0, 4.0])
    expect = np.array([1.0, 2.0], np.float32)
    for _ in range(3):
        y = step(x)
        np.testing.assert_allclose(y.numpy(), expect * expect * [3.0, 4.0],
                                   rtol=1e-6)
        expect = expect - 0.1 * 2 * expect * np.array([3.0, 4.0])
        np.testing.assert_allclose(v.numpy(), expect, rtol=1e-6)
    assert step.experimental_get_tracing_count() == 1


@needs_variables
def test_outer_tape_records_a_traced_call():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def f(x):
        return x * x * v

    x = c([3.0, 4.0])
    for _ in range(2):               # the tracing call and a cached one
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        gx, gv = t.gradient(y, [x, v])
        np.testing.assert_allclose(gx.numpy(), [6.0, 16.0])
        np.testing.assert_allclose(gv.numpy(), [9.0, 16.0])


@needs_variables
def test_tape_outside_does_not_record_the_trace():
    v = tf.Variable(2.0)

    @tf.function
    def f(x):
        return x * v

    with tf.GradientTape() as t:
        y = f(c(3.0))
    assert t.gradient(y, v).numpy() == 3.0


# ---- misuse of the internals: errors, never crashes ----------------------

def test_internal_misuse_raises():
    g = _C.Graph("g")
    with pytest.raises(TypeError):
        g.placeholder(99, (1,), "x")
    with pytest.raises(ValueError):
        g.placeholder(7, (1,) * 9, "x")
    with pytest.raises(ValueError):
        g.placeholder(7, (-3,), "x")
    with pytest.raises(RuntimeError):
        g.pop()                              # not being traced
    with pytest.raises(RuntimeError):
        _C.ConcreteBase()._run([])           # not built
    with pytest.raises(RuntimeError):
        _C.init_scope_exit()
    with pytest.raises(ValueError):
        _C.print_v2(["a"], [c(1.0)], 2, 3)   # texts != tensors + 1
    with pytest.raises(TypeError):
        _C.ConcreteBase()._build(g, [1.0], 1, None)
    with pytest.raises(AttributeError):
        _C.FunctionBase()(c(1.0))            # no Python slow path
    with pytest.raises(tf.errors.UnimplementedError):
        _C.call(tf._opids.ID["Placeholder"], [])   # no kernel

    @tf.function
    def state_op_by_hand():
        return _C.call(tf._opids.ID["ReadVariableOp"], [])

    with pytest.raises(tf.errors.InternalError, match="its own"):
        state_op_by_hand()                   # no payload: refused
    ph = g.placeholder(7, (2,), "x")
    with pytest.raises(TypeError, match="used outside"):
        ph + 1.0
    cf = _C.ConcreteBase()
    cf._build(g, [ph], 1, None)
    with pytest.raises(RuntimeError):
        cf._build(g, [ph], 1, None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="input 'x'"):
        cf._run([c([1.0, 2.0, 3.0])])
    with pytest.raises(tf.errors.InvalidArgumentError):
        cf._run([])
    assert cf._run([c([1.0, 2.0])]).numpy().tolist() == [1.0, 2.0]


def test_trace_stack_recovers_from_an_unclosed_init_scope():
    @tf.function
    def f(x):
        tf.init_scope().__enter__()          # never exited
        raise KeyError("boom")

    with pytest.raises(KeyError):
        f(c(1.0))
    assert tf.executing_eagerly()
    assert not _C.tracing()
    assert (c(1.0) + 1.0).numpy() == 2.0


def test_unknown_rank_signature_traces_once_per_rank():
    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def g(x):
        return x * 2.0

    assert g(c(1.0)).numpy() == 2.0
    assert g(c([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]
    assert g(c([1.0, 2.0, 3.0])).shape == (3,)
    assert g(c([[1.0]])).shape == (1, 1)
    # One graph per rank inside, one trace as TF counts (TF 2.21: 1);
    # tests/test_unknown_rank.py has the rest.
    assert g.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError):
        g(c([1, 2]))
    assert repr(tf.TensorSpec(None)) == ("TensorSpec(shape=<unknown>, "
                                         "dtype=tf.float32, name=None)")
    assert g.get_concrete_function(tf.TensorSpec(None)) is \
        g.get_concrete_function()


# ---- graph control flow (the primitives under tf.cond / tf.while_loop) ---

from tfmini.function import _graph_assert, _graph_cond, _graph_while  # noqa
from tfmini.tensor_shape import TensorShape  # noqa: E402

SCALAR = TensorShape([])


def test_graph_cond_runs_only_the_taken_branch(capsys):
    @tf.function
    def f(x, p):
        y = x * 2.0

        def yes():
            tf.print("yes")
            return [y + 1.0, x]

        def no():
            tf.print("no")
            return [y - 1.0, x * 0.0 + 3.0]
        return _graph_cond(p, yes, no)

    x = c([1.0, 2.0])
    a, b = f(x, c(True))
    assert a.numpy().tolist() == [3.0, 5.0] and b.numpy().tolist() == [1, 2]
    a, b = f(x, c(False))
    assert a.numpy().tolist() == [1.0, 3.0] and b.numpy().tolist() == [3, 3]
    assert capsys.readouterr().err == "yes\nno\n"
    assert f.experimental_get_tracing_count() == 1
    types = [o.type for o in
             f.get_concrete_function(x, c(True)).graph.get_operations()]
    assert types.count("If") == 1 and "Print" not in " ".join(types)


def test_graph_cond_output_shapes_and_errors():
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None]), tf.TensorSpec([])])
    def f(x, s):
        out = _graph_cond(s > 0.0, lambda: [x, x], lambda: [x[:1], x])
        seen.append([str(o.shape) for o in out])
        return out

    f(c([1.0, 2.0]), c(1.0))
    assert seen == [["(None,)", "(None,)"]]

    @tf.function
    def bad_dtype(p):
        return _graph_cond(p, lambda: [c(1.0)], lambda: [c(1)])

    with pytest.raises(TypeError, match="float32 in true_fn but int32"):
        bad_dtype(c(True))

    @tf.function
    def bad_rank(p):
        return _graph_cond(p, lambda: [c(1.0)], lambda: [c([1.0])])

    with pytest.raises(ValueError, match="one rank"):
        bad_rank(c(True))

    @tf.function
    def bad_pred(p):
        return _graph_cond(p, lambda: [c(1.0)], lambda: [c(2.0)])

    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
        bad_pred(c([True, False]))


def test_graph_while_loops_in_the_executor():
    @tf.function
    def f(n):
        return _graph_while(lambda i, a: i < n,
                            lambda i, a: [i + 1, a * 2.0],
                            [c(0), c(1.0)], [SCALAR, SCALAR], None)

    for n in (0, 3, 10):
        i, a = f(c(n))
        assert i.numpy() == n and a.numpy() == 2.0 ** n
    assert f.experimental_get_tracing_count() == 1


def test_graph_while_shape_invariants_and_max_iterations():
    @tf.function
    def f(x, m):
        return _graph_while(lambda v: tf.reduce_sum(v) < 100.0,
                            lambda v: [v * 2.0], [x],
                            [TensorShape([None])], m)[0]

    if not hasattr(tf, "reduce_sum"):
        pytest.skip("needs tf.reduce_sum")
    assert f(c([1.0, 2.0]), 4).numpy().tolist() == [16.0, 32.0]
    assert f(c([1.0, 2.0]), 100).numpy().tolist() == [64.0, 128.0]

    @tf.function
    def changes_shape(x):
        return _graph_while(lambda v: c(True), lambda v: [v[:1]], [x],
                            [TensorShape([2])], 3)

    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        changes_shape(c([1.0, 2.0]))


def test_nested_control_flow_captures_through_every_level():
    @tf.function
    def f(x, n):
        k = x * 10.0          # captured two levels down

        def body(i, acc):
            inner = _graph_cond(i % 2 == 0, lambda: [acc + k],
                                lambda: [acc - 1.0])
            return [i + 1, inner[0]]
        return _graph_while(lambda i, acc: i < n, body, [c(0), x],
                            [SCALAR, SCALAR], None)[1]

    def reference(x, n):
        acc = x
        for i in range(n):
            acc = acc + x * 10 if i % 2 == 0 else acc - 1
        return acc

    for n in (0, 1, 4, 7):
        assert f(c(1.5), c(n)).numpy() == reference(1.5, n)


def test_graph_assert_checks_every_call():
    @tf.function
    def f(x):
        _graph_assert(x > 0.0, ["x must be positive:", x], None)
        return x + 1.0   # ASSERT LINE

    assert f(c(1.0)).numpy() == 2.0
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        f(c(-2.0))
    msg = str(e.value)
    assert "x must be positive:\n-2" in msg
    assert "Node 'Assert'" in msg and "in f" in msg
    assert f(c(3.0)).numpy() == 4.0


def test_error_inside_a_branch_names_the_branch_line():
    @tf.function(input_signature=[tf.TensorSpec([None]), tf.TensorSpec([]),
                                  tf.TensorSpec([None])])
    def f(x, s, y):
        return _graph_cond(s > 0.0, lambda: [x + y],   # BRANCH LINE
                           lambda: [x])

    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        f(c([1.0, 2.0]), c(1.0), c([1.0, 2.0, 3.0]))
    line = next(i for i, text in enumerate(open(__file__), 1)
                if "# BRANCH LINE" in text and "lambda" in text)
    assert f"line {line}" in str(e.value)
    assert f(c([1.0, 2.0]), c(-1.0), c([1.0]))[0].numpy().tolist() == [1, 2]


@needs_variables
def test_variables_inside_branches_and_loops():
    v = tf.Variable(0.0)

    @tf.function
    def f(p, n):
        _graph_cond(p, lambda: (v.assign_add(1.0), [])[1],
                    lambda: (v.assign_sub(1.0), [])[1])
        _graph_while(lambda i: i < n,
                     lambda i: (v.assign_add(10.0), [i + 1])[1],
                     [c(0)], [SCALAR], None)
        return v.read_value()

    assert f(c(True), c(2)).numpy() == 21.0
    assert f(c(False), c(0)).numpy() == 20.0
    assert v.numpy() == 20.0


@needs_variables
def test_outer_tape_sees_the_taken_branch():
    @tf.function
    def f(x, p):
        return _graph_cond(p, lambda: [x * x], lambda: [x * 3.0])[0]

    x = c(2.0)
    for p, want in ((True, 4.0), (False, 3.0)):
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x, c(p))
        assert t.gradient(y, x).numpy() == want


# ---- what TF's function guide inspects (values from TF 2.21) -------------

def test_graph_def_ends_each_output_in_an_identity_node():
    @tf.function
    def f(a):
        return a + 1.0, tf.identity(a), a

    nodes = f.get_concrete_function(c(1.0)).graph.as_graph_def().node
    # The user's own tf.identity keeps "Identity"; outputs number on.
    assert [(n.name, n.op, list(n.input)) for n in nodes[-4:]] == [
        ("Identity", "Identity", ["a"]),
        ("Identity_1", "Identity", ["add"]),
        ("Identity_2", "Identity", ["Identity"]),
        ("Identity_3", "Identity", ["a"])]


def test_function_type_and_inference_fn():
    @tf.function
    def double(a):
        return a + a

    cf = double.get_concrete_function(c("a"))
    spec = "TensorSpec(shape=(), dtype=tf.string, name=None)"
    assert str(cf.function_type) == f"(a: {spec}) -> {spec}"
    assert repr(cf.function_type) == (
        f"Input Parameters:\n  a (POSITIONAL_OR_KEYWORD): {spec}\n"
        f"Output Type:\n  {spec}\nCaptures:\n  None")
    assert cf.inference_fn(c("x")).numpy() == b"xx"

    @tf.function
    def two(a):
        return a + 1.0, a * 2.0

    outs = two.get_concrete_function(c(1.0)).inference_fn(c(2.0))
    assert isinstance(outs, tuple) and [float(o) for o in outs] == [3., 4.]
    with pytest.raises(TypeError, match="takes 1 tensors, got 2"):
        cf.inference_fn(c("x"), c("y"))


def test_leaked_symbolic_tensor_has_no_numpy_as_in_tf():
    leaked = []

    @tf.function
    def leak(a):
        leaked.append(a + 1)
        return a

    leak(c(1))
    assert not hasattr(leaked[0], "numpy")
    with pytest.raises(AttributeError) as e:
        leaked[0].numpy()
    assert str(e.value) == "'SymbolicTensor' object has no attribute 'numpy'"


def test_trace_type_is_an_abstract_base():
    TraceType = tf.types.experimental.TraceType
    with pytest.raises(TypeError):
        TraceType()

    class Kind(TraceType):
        def is_subtype_of(self, other):
            return self == other

        def most_specific_common_supertype(self, others):
            return self

        def __eq__(self, other):
            return type(other) is Kind

        def __hash__(self):
            return 0

    assert Kind() == Kind()


def test_tracing_type_protocol_shares_a_trace_between_equal_types():
    class ByClass(tf.types.experimental.TraceType):
        def __init__(self, obj):
            self.cls = type(obj)

        def is_subtype_of(self, other):
            return self == other

        def most_specific_common_supertype(self, others):
            return self if all(self == o for o in others) else None

        def __eq__(self, other):
            return type(other) is ByClass and self.cls is other.cls

        def __hash__(self):
            return hash(self.cls)

    class Fruit:
        def __tf_tracing_type__(self, context):
            return ByClass(self)

    class Apple(Fruit):
        flavor = c([1, 2])

    class Mango(Fruit):
        flavor = c([3, 4])

    traces = []

    @tf.function
    def mix(a, b):
        traces.append(1)
        return a.flavor + b.flavor

    # TF 2.21: one trace for (Apple, Mango) however many objects, a new
    # one for (Mango, Mango).
    assert mix(Apple(), Mango()).numpy().tolist() == [4, 6]
    assert mix(Apple(), Mango()).numpy().tolist() == [4, 6]
    assert len(traces) == 1
    assert mix(Mango(), Mango()).numpy().tolist() == [6, 8]
    assert len(traces) == 2
    assert "ByClass object at" in mix.pretty_printed_concrete_signatures()

    class Unhashable(Fruit):
        def __tf_tracing_type__(self, context):
            return []

    with pytest.raises(TypeError, match="unhashable"):
        mix(Unhashable(), Apple())
