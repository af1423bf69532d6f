"""What the tf.function guides (intro_to_graphs, function,
concrete_function) show a user, checked against TF 2.21's output.

Expected strings are literals of what TF 2.21 (CPU) printed for the same
snippets; TF itself is not imported here."""
import collections
import re

import numpy as np
import pytest

import tfmini as tf
from tfmini.function import FunctionSignatureError

F32 = "TensorSpec(shape=(), dtype=tf.float32, name=None)"
I32 = "TensorSpec(shape=(), dtype=tf.int32, name=None)"


# ---- printing signatures -------------------------------------------------

def test_pretty_printed_concrete_signatures_lists_each_trace():
    @tf.function
    def clip(v):
        return tf.maximum(0., v)

    clip(tf.constant(1.5))
    clip([4, -4])
    # TF 2.21's output:
    assert clip.pretty_printed_concrete_signatures() == (
        "Input Parameters:\n"
        f"  v (POSITIONAL_OR_KEYWORD): {F32}\n"
        "Output Type:\n"
        f"  {F32}\n"
        "Captures:\n"
        "  None\n"
        "\n"
        "Input Parameters:\n"
        "  v (POSITIONAL_OR_KEYWORD): List[Literal[4], Literal[-4]]\n"
        "Output Type:\n"
        "  TensorSpec(shape=(2,), dtype=tf.float32, name=None)\n"
        "Captures:\n"
        "  None")


def test_printing_a_concrete_function():
    @tf.function
    def power(base, e):
        return base ** e

    cube = power.get_concrete_function(tf.TensorSpec([None], tf.float32), 3)
    # TF 2.21's str():
    assert str(cube) == (
        "ConcreteFunction Input Parameters:\n"
        "  base (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None,), "
        "dtype=tf.float32, name=None)\n"
        "  e (POSITIONAL_OR_KEYWORD): Literal[3]\n"
        "Output Type:\n"
        "  TensorSpec(shape=(None,), dtype=tf.float32, name=None)\n"
        "Captures:\n"
        "  None")
    # TF 2.21's repr, up to the address:
    assert re.fullmatch(
        r"<ConcreteFunction \(base: TensorSpec\(shape=\(None,\), "
        r"dtype=tf\.float32, name=None\), e: Literal\[3\]\) -> "
        r"TensorSpec\(shape=\(None,\), dtype=tf\.float32, name=None\) "
        r"at 0x[0-9A-F]+>", repr(cube))
    assert cube.pretty_printed_signature(verbose=False) == (
        "(base: TensorSpec(shape=(None,), dtype=tf.float32, name=None), "
        "e: Literal[3]) -> TensorSpec(shape=(None,), dtype=tf.float32, "
        "name=None)")
    np.testing.assert_allclose(cube(tf.constant([2.0, 3.0])).numpy(),
                               [8.0, 27.0])


def test_signature_text_of_every_parameter_kind():
    Pair = collections.namedtuple("Pair", ["p", "q"])

    @tf.function
    def f(x, pair, *rest, k=None, **extra):
        return {"out": x, "more": (None, x)}

    cf = f.get_concrete_function(
        tf.constant([1.0]), Pair(tf.constant(1), "s"), 2.5, (),
        k=[True, tf.constant(1, tf.int64)], zz=[])
    spec = "TensorSpec(shape=(1,), dtype=tf.float32, name=None)"
    # The lines TF 2.21 printed for the same call:
    assert str(cf) == (
        "ConcreteFunction Input Parameters:\n"
        f"  x (POSITIONAL_ONLY): {spec}\n"
        f"  pair (POSITIONAL_ONLY): Pair[['p', {I32}], ['q', "
        "Literal['s']]]\n"
        "  rest_0 (POSITIONAL_ONLY): Literal[2.5]\n"
        "  rest_1 (POSITIONAL_ONLY): Tuple[]\n"
        "  k (KEYWORD_ONLY): List[Literal[True], TensorSpec(shape=(), "
        "dtype=tf.int64, name=None)]\n"
        "  zz (KEYWORD_ONLY): List[]\n"
        "Output Type:\n"
        f"  Dict[['out', {spec}], ['more', Tuple[Literal[None], {spec}]]]\n"
        "Captures:\n"
        "  None")
    assert repr(cf).startswith(
        f"<ConcreteFunction (x: {spec}, pair: Pair[['p', {I32}], ['q', "
        "Literal['s']]], rest_0: Literal[2.5], rest_1: Tuple[], /, *, k: ")


def test_input_signature_trace_is_listed_before_any_call():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def ident(v):
        return v

    spec = "TensorSpec(shape=(None,), dtype=tf.int32, name=None)"
    assert ident.pretty_printed_concrete_signatures(verbose=False) == \
        f"(v: {spec}) -> {spec}"


def test_get_concrete_function_does_not_trigger_retracing_warning(caplog):
    @tf.function
    def f(x):
        return x

    for n in range(1, 8):
        f.get_concrete_function(tf.TensorSpec([n]))
    assert f.experimental_get_tracing_count() == 7
    assert "retracing" not in caplog.text


def test_concrete_function_wrong_dtype_is_invalid_argument():
    @tf.function
    def twice(a):
        return a + a

    cf = twice.get_concrete_function(tf.constant(1.0))
    assert cf(a=tf.constant(2.5)).numpy() == 5.0
    # TF 2.21 raises InvalidArgumentError ("... was expected to be a float
    # tensor but is a int32 tensor"); tfmini's error is also a TypeError.
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        cf(tf.constant(3))
    with pytest.raises(TypeError):
        cf(tf.constant(3))
    with pytest.raises(FunctionSignatureError):
        cf(tf.constant(1.0), tf.constant(2.0))


# ---- graphs --------------------------------------------------------------

def test_as_graph_def_lists_nodes_with_inputs():
    @tf.function
    def twice(a):
        return a + a

    graph = twice.get_concrete_function(tf.constant(1.0)).graph
    nodes = graph.as_graph_def().node
    # TF 2.21 printed `[] -> a`, `['a', 'a'] -> add`, `['add'] -> Identity`.
    assert [(list(n.input), n.name, n.op) for n in nodes] == [
        ([], "a", "Placeholder"), (["a", "a"], "add", "AddV2"),
        (["add"], "Identity", "Identity")]
    assert str(graph.as_graph_def()) == (
        'node {\n  name: "a"\n  op: "Placeholder"\n}\n'
        'node {\n  name: "add"\n  op: "AddV2"\n  input: "a"\n'
        '  input: "a"\n}\n'
        'node {\n  name: "Identity"\n  op: "Identity"\n  input: "add"\n}\n')


def test_python_loop_unrolls_into_a_bigger_graph():
    @tf.function
    def total(pairs):
        acc = tf.constant(0)
        for p, q in pairs:
            acc += tf.abs(q - p)
        return acc

    def size(n):
        graph = total.get_concrete_function([(2, 5)] * n).graph
        return len(graph.as_graph_def().node)

    assert size(8) > size(2)
    assert total([(2, 5), (7, 1)]).numpy() == 9


# ---- tf.Module -----------------------------------------------------------

class _Affine(tf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        self.kernel = tf.Variable(tf.ones([n_in, n_out]), name="kernel")
        self.shift = tf.Variable(tf.zeros([n_out]), name="shift",
                                 trainable=False)

    def __call__(self, x):
        return tf.matmul(x, self.kernel) + self.shift


class _TwoStage(tf.Module):
    def __init__(self):
        super().__init__()
        self.first = _Affine(3, 2)
        self.rest = [_Affine(2, 2, name="second"), {"k": tf.Variable(5.0)}]

    @tf.function
    def __call__(self, x):
        return self.rest[0](self.first(x))


def test_module_finds_variables_and_submodules_as_tf_does():
    m = _TwoStage()
    # TF 2.21's answers for the same module tree:
    assert m.name == "__two_stage" and m.first.name == "__affine"
    assert [v.name for v in m.variables] == [
        "Variable:0", "kernel:0", "shift:0", "kernel:0", "shift:0"]
    assert [v.name for v in m.trainable_variables] == [
        "Variable:0", "kernel:0", "kernel:0"]
    assert [v.name for v in m.non_trainable_variables] == [
        "shift:0", "shift:0"]
    assert [s.name for s in m.submodules] == ["__affine", "second"]
    assert isinstance(m.variables, tuple)
    assert m.trainable_variables[1] is m.first.kernel
    np.testing.assert_allclose(m(tf.ones([1, 3])).numpy(), [[6.0, 6.0]])
    spec = tf.TensorSpec([None, 3])
    assert "TensorSpec(shape=(None, 2), dtype=tf.float32, name=None)" in \
        str(m.__call__.get_concrete_function(spec))


def test_module_names():
    class HTTPServer2D(tf.Module):
        pass

    assert HTTPServer2D().name == "http_server2_d"     # TF 2.21
    assert tf.Module().name == "module"
    assert tf.Module(name="ok_1").name == "ok_1"
    with pytest.raises(ValueError, match="'bad name' is not a valid module "
                                         "name"):
        tf.Module(name="bad name")


def test_module_that_refers_to_itself():
    class Loop(tf.Module):
        def __init__(self):
            super().__init__()
            self.me = self
            self.v = tf.Variable(1)

    m = Loop()
    assert len(m.variables) == 1 and m.submodules == ()


def test_module_holding_a_keras_layer_sees_its_weights():
    # As with tf.keras 2, whose layers are tf.Modules (the modules guide
    # relies on it). TF 2.21's Keras 3 layers are not, and such a holder
    # finds no variables there.
    class Holder(tf.Module):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(2)
            self.dense.build((None, 3))

    h = Holder()
    assert len(h.trainable_variables) == 2
    assert h.submodules == (h.dense,)


# ---- variables inside functions -----------------------------------------

def test_variable_made_on_every_call_is_an_error_on_the_first_call():
    @tf.function
    def fresh(x):
        v = tf.Variable(1.0)
        v.assign_add(x)
        return v.read_value()

    # TF 2.21 raises on the first call: eagerly each call would start
    # from 1.0, which one graph cannot do.
    with pytest.raises(ValueError, match="tf.function only supports "
                                         "singleton tf.Variables created on "
                                         "the first call"):
        fresh(1.0)


def test_variable_made_once_traces_twice_then_reuses():
    printed = []

    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.total = None

        @tf.function
        def __call__(self, step):
            printed.append(step)
            if self.total is None:
                self.total = tf.Variable(0)
            return self.total.assign_add(step)

    c = Counter()
    # TF 2.21: 1, 2, then 4; the trace that made the variable ran the
    # Python body twice, and step=2 traced once more.
    assert [c(1).numpy(), c(1).numpy(), c(2).numpy()] == [1, 2, 4]
    assert printed == [1, 1, 2]
    assert c.__call__.experimental_get_tracing_count() == 3


def test_python_counter_guarding_an_update_is_baked_into_the_graph():
    class Guarded(tf.Module):
        def __init__(self, lift):
            super().__init__()
            self.v = tf.Variable(0)
            self.calls = 0
            self.lift = lift

        @tf.function
        def __call__(self):
            if self.calls == 0:
                if self.lift:
                    with tf.init_scope():
                        self.calls += 1
                        self.v.assign_add(1)
                else:
                    self.calls += 1
                    self.v.assign_add(1)
            return self.v

    plain, lifted = Guarded(False), Guarded(True)
    # TF 2.21: 1, 2, 3 without init_scope and 1, 1, 1 with it.
    assert [int(plain().numpy()) for _ in range(3)] == [1, 2, 3]
    assert [int(lifted().numpy()) for _ in range(3)] == [1, 1, 1]


# ---- tf.debugging --------------------------------------------------------

def test_eager_asserts_raise_with_tf_text():
    x = tf.constant([4.0, -1.0])
    y = tf.constant([4.0, 2.0])
    assert tf.debugging.assert_equal(y, y) is None
    # TF 2.21's messages:
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.debugging.assert_positive(x, message="need pos")
    assert str(e.value) == (
        "need pos.  \nCondition x > 0 did not hold element-wise:\n"
        "x (shape=(2,) dtype=float32) = \n['4.0', '-1.0']")
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.debugging.assert_equal(x, y)
    assert str(e.value) == (
        "Condition x == y did not hold.\n"
        "Indices of first 1 different values:\n[[1]]\n"
        "Corresponding x values:\n[-1.]\n"
        "Corresponding y values:\n[2.]\n"
        "First 2 elements of x:\n[ 4. -1.]\n"
        "First 2 elements of y:\n[4. 2.]")
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.debugging.assert_greater_equal(x, 0.0)
    assert str(e.value) == (
        "Condition x >= y did not hold.\nFirst 2 elements of x:\n"
        "[ 4. -1.]\nFirst 1 elements of y:\n[0.]")
    with pytest.raises(ValueError, match="must have rank 2.  Received "
                                         r"rank 1, shape \(2,\)"):
        tf.debugging.assert_rank(x, 2)


def test_asserts_in_a_function_check_every_call():
    @tf.function
    def safe_sqrt(v):
        tf.debugging.assert_non_negative(v, message="negative input")
        return tf.sqrt(v)

    np.testing.assert_allclose(safe_sqrt(tf.constant([4.0, 9.0])).numpy(),
                               [2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        safe_sqrt(tf.constant([4.0, -9.0]))
    assert "negative input" in str(e.value)
    assert "Condition x >= 0 did not hold element-wise:" in str(e.value)
    assert "[4 -9]" in str(e.value)

    @tf.function
    def ordered(a, b):
        tf.debugging.assert_less(a, b)
        return b - a

    assert ordered(tf.constant(1), tf.constant(3)).numpy() == 2
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Condition x < y did not hold"):
        ordered(tf.constant(3), tf.constant(1))
    assert ordered.experimental_get_tracing_count() == 1


# ---- Python state and iterators -----------------------------------------

def test_python_iterator_is_read_only_while_tracing():
    seen = []

    @tf.function
    def take(it):
        seen.append(next(it))
        return tf.constant(seen[-1])

    it = iter([7, 8, 9])
    # As in TF: the element read at trace time is baked into the graph.
    assert [int(take(it).numpy()) for _ in range(3)] == [7, 7, 7]


def test_dataset_iterator_passed_into_a_function_advances_per_call():
    it = iter(tf.data.Dataset.from_tensor_slices([1, 2, 3, 4]))

    @tf.function
    def take(iterator):
        return next(iterator) * 10

    # As TF: each call pulls the next element (guidefix's iterator node).
    assert [int(take(it).numpy()) for _ in range(3)] == [10, 20, 30]
    assert int(next(it).numpy()) == 4          # eagerly it goes on

    @tf.function
    def total(ds):
        acc = tf.constant(0)
        for v in ds:
            acc += v
        return acc

    assert total(tf.data.Dataset.from_tensor_slices([1, 2, 3])).numpy() == 6


def test_leaked_tensor_errors_have_tf_types():
    box = {}

    @tf.function
    def leaky(a):
        box["t"] = a + 1
        return a + 2

    assert leaky(tf.constant(1)).numpy() == 3
    # TF 2.21: AttributeError for numpy() of the leaked symbolic tensor,
    # TypeError when another function uses it.
    with pytest.raises(AttributeError):
        box["t"].numpy()

    @tf.function
    def uses_leak(b):
        return b + box["t"]

    with pytest.raises(TypeError, match="out of scope"):
        uses_leak(tf.constant(2))


def test_globals_are_frozen_at_trace_time_but_variables_are_read():
    state = {"k": 1}
    counter = tf.Variable(1)

    @tf.function
    def with_global():
        return 1 + state["k"]

    @tf.function
    def with_variable():
        return 1 + counter

    assert with_global().numpy() == 2 and with_variable().numpy() == 2
    state["k"] = 100
    counter.assign(100)
    assert with_global().numpy() == 2           # TF 2.21: still 2
    assert with_variable().numpy() == 101
