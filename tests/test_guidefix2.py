"""guidefix2's checks: gradients of weak tensors (TF 2.21's results,
printed by tests/data/make_weak_gradients_tf221.py under TF and pasted
here as TF_WEAK_GRADIENTS), and the guide cells it fixed.

The numpy behaviour mode is process-wide, so what runs under it runs in
a child process."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MAKER = os.path.join(HERE, "data", "make_weak_gradients_tf221.py")

# /work/tfvenv/bin/python tests/data/make_weak_gradients_tf221.py
TF_WEAK_GRADIENTS = {'all: weak source, weak target': ['float32', True, 6.0],
 'all: weak source through a float16 product': ['float32', True, 2.0],
 'all: weak source, strong target (maximum is strong)': [['float32',
                                                          True,
                                                          1.0],
                                                         ['float32',
                                                          False,
                                                          3.0]],
 'all: weak vector source': ['float32',
                             True,
                             [2.7182817459106445, 7.389056205749512]],
 'all: strong source': ['float32', False, 2.0],
 'all: variable source, weak operand': ['float32', False, 3.0],
 'all: weak and strong sources in a dict': {'a': ['float32', True, 4.0],
                                            'b': ['float32', False, 3.0],
                                            'c': [['float32', True, 4.0]]},
 'all: weak source, strong output gradient': ['float32', True, 10.0],
 'all: strong source, weak output gradient': ['float32', False, 10.0],
 'all: weak source is the target': ['float32', True, 1.0],
 'all: unconnected weak source, zero': ['float32', True, 0.0],
 'all: unconnected weak source, none': None,
 'all: weak int source': None,
 'all: weak float64 source': [['float64', True, 4.0],
                              ['float64', True, 8.0]],
 'all: second order': [['float32', True, 27.0], ['float32', True, 18.0]],
 'all: persistent tape, repeated source': [['float32', True, [2.0, 4.0]],
                                           ['float32', True, [2.0, 4.0]]],
 'all: jacobian': ['float32', True, [[2.0, 0.0], [0.0, 4.0]]],
 'all: batch_jacobian': ['float32',
                         True,
                         [[[2.0, 0.0], [0.0, 4.0]],
                          [[6.0, 0.0], [0.0, 8.0]]]],
 'all: inside tf.function': [['float16', False, 6.0], ['weak']],
 'safe: weak source, weak target': ['float32', True, 6.0],
 'safe: weak source through a float16 product': ['float32', True, 2.0],
 'safe: weak source, strong target (maximum is strong)': [['float32',
                                                           True,
                                                           1.0],
                                                          ['float32',
                                                           False,
                                                           3.0]],
 'safe: weak vector source': ['float32',
                              True,
                              [2.7182817459106445, 7.389056205749512]],
 'safe: strong source': ['float32', False, 2.0],
 'safe: variable source, weak operand': ['float32', False, 3.0],
 'safe: weak and strong sources in a dict': {'a': ['float32', True, 4.0],
                                             'b': ['float32', False, 3.0],
                                             'c': [['float32', True, 4.0]]},
 'safe: weak source, strong output gradient': ['float32', True, 10.0],
 'safe: strong source, weak output gradient': ['float32', False, 10.0],
 'safe: weak source is the target': ['float32', True, 1.0],
 'safe: unconnected weak source, zero': ['float32', True, 0.0],
 'safe: unconnected weak source, none': None,
 'safe: weak int source': None,
 'safe: weak float64 source': 'TypeError',
 'safe: second order': [['float32', True, 27.0], ['float32', True, 18.0]],
 'safe: persistent tape, repeated source': [['float32', True, [2.0, 4.0]],
                                            ['float32', True, [2.0, 4.0]]],
 'safe: jacobian': ['float32', True, [[2.0, 0.0], [0.0, 4.0]]],
 'safe: batch_jacobian': ['float32',
                          True,
                          [[[2.0, 0.0], [0.0, 4.0]],
                           [[6.0, 0.0], [0.0, 8.0]]]],
 'safe: inside tf.function': [['float16', False, 6.0], ['weak']]}

CHILD = r'''
import importlib.util, json, sys
import tfmini as tf
import tfmini.experimental.numpy as tnp
spec = importlib.util.spec_from_file_location("maker", sys.argv[1])
maker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(maker)
out = {"cases": maker.run(tf, tnp)}

# A weak source's gradient is a new tensor: the user's output gradient
# and a gradient shared by repeated sources stay as they were.
tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="all")
x = tf.constant(3.0)
og = tf.constant(5.0, tf.float32)
with tf.GradientTape() as t:
    t.watch(x)
    y = tf.identity(x)
g = t.gradient(y, x, output_gradients=og)
s = tf.constant(2.0, tf.float32)
with tf.GradientTape() as t:
    t.watch([x, s])
    y = x * s
gx, gs = t.gradient(y, [x, s])
out["fresh"] = [type(og).__name__, g is og, type(g).__name__,
                type(gs).__name__, type(gx).__name__]


@tf.function
def passthrough(v):
    return v * 2


out["function_output"] = type(passthrough(tf.constant(1.0))).__name__
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def child():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", CHILD, MAKER], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


def _cases():
    spec = importlib.util.spec_from_file_location("maker", MAKER)
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    return maker.CASES


def test_literal_covers_every_case_in_both_modes():
    names = [f"{m}: {c}" for m in ("all", "safe") for c in _cases()]
    assert sorted(names) == sorted(TF_WEAK_GRADIENTS)


@pytest.mark.parametrize("key", sorted(TF_WEAK_GRADIENTS))
def test_weak_gradient_is_tfs(child, key):
    assert child["cases"][key] == TF_WEAK_GRADIENTS[key]


def test_weak_gradient_is_a_new_tensor(child):
    assert child["fresh"] == ["EagerTensor", False, "EagerWeakTensor",
                              "EagerTensor", "EagerWeakTensor"]


def test_function_output_keeps_weakness(child):
    assert child["function_output"] == "EagerWeakTensor"


# ---- legacy tf.add & co. with a NumPy operand (ops/numpy_operands.py) --
# TF 2.21's results (/work/tfvenv/bin/python, legacy mode): the first
# operand fixes the dtype and a NumPy operand is cast to it.
TF_NUMPY_OPERANDS = [
    ("tf.add(tf.constant(1), np.array(1.7, np.float16))", "int32", 2),
    ("tf.add(tf.constant(1), np.array([1.7, -2.5]))", "int32", [2, -1]),
    ("tf.add(tf.constant(1, tf.int8), np.array(3, np.int64))", "int8", 4),
    ("tf.add(tf.constant(1), np.float16(1.7))", "int32", 2),
    ("tf.add(tf.constant(1), np.array(True))", "int32", 2),
    ("tf.add(np.array(1, np.int8), np.array(1.5))", "int8", 2),
    ("tf.add(1, np.array(1.5))", "int32", 2),
    ("tf.add(1.5, np.array(2, np.int64))", "float32", 3.5),
    ("tf.subtract(tf.constant(1), np.array(1.7, np.float16))", "int32", 0),
    ("tf.multiply(tf.constant(2), np.array(1.7, np.float32))", "int32", 2),
    ("tf.maximum(tf.constant(1), np.array(1.7, np.float16))", "int32", 1),
    ("tf.add(tf.Variable(1), np.array(1.7, np.float16))", "int32", 2),
    # the guide's cell 14: (b + a) + c
    ("tf.add(tf.add(tf.constant(1), np.array(1, np.int8)), "
     "np.array(1, np.float16))", "int32", 3),
]


@pytest.mark.parametrize("expr,dtype,value", TF_NUMPY_OPERANDS)
def test_numpy_operand_is_cast_as_tf(expr, dtype, value):
    import numpy as np  # noqa: F401 (expr uses it)
    import tfmini as tf
    r = eval(expr)
    assert (r.dtype.name, r.numpy().tolist()) == (dtype, value)


def test_numpy_operand_cast_in_a_trace():
    import numpy as np
    import tfmini as tf

    @tf.function
    def f(x):
        return tf.add(x, np.array([1.7, 2.5], np.float16))
    assert f(tf.constant([1, 1])).numpy().tolist() == [2, 3]


def test_python_values_are_not_cast():
    # TF refuses these too (InvalidArgumentError there): only NumPy
    # values are cast; tfmini keeps its TypeError.
    import numpy as np
    import tfmini as tf
    with pytest.raises(TypeError, match="Cannot convert 1.5"):
        tf.add(tf.constant(1), 1.5)
    with pytest.raises(TypeError, match=r"Cannot convert \[1.7\]"):
        tf.add(tf.constant(1), [1.7])
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.add(tf.constant(1), np.array(["a"]))


# ---- custom gradients in saved models (Note [Saved custom gradients]) --
# /work/tfvenv/bin/python tests/data/make_saved_custom_gradients_tf221.py
# (with experimental_custom_gradients=False TF's loaded functions fail
# under a tape, LookupError for IdentityN; tfmini's differentiate as
# plain graphs, as they did before custom gradients were saved.)
TF_SAVED_CUSTOM_GRADIENTS = [
    [2.1213202476501465, 2.8284270763397217], [[20.0, 0.0], 200.0],
    [0.3535534143447876, 0.3535534143447876], 2, 18.0]
PLAIN_GRADIENTS = [[6.0, 8.0], [[6.0, 0.0], 6.0], [3.0, 3.0], 2, 18.0]


def _saved_gradients(custom_gradients):
    spec = importlib.util.spec_from_file_location(
        "saved_maker",
        os.path.join(HERE, "data", "make_saved_custom_gradients_tf221.py"))
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return maker.run(sys.executable, "import tfmini as tf\n",
                     custom_gradients, env)


def test_saved_custom_gradients_are_tfs():
    got = _saved_gradients(True)

    def flat(x):
        return sum((flat(v) for v in x), []) if isinstance(x, list) \
            else [x]
    assert isinstance(got, list), got
    assert flat(got) == pytest.approx(flat(TF_SAVED_CUSTOM_GRADIENTS),
                                      rel=1e-6), got


def test_custom_gradients_left_out_give_plain_gradients():
    assert _saved_gradients(False) == PLAIN_GRADIENTS


def test_saved_custom_gradient_of_the_guide_in_one_process(tmp_path):
    # advanced_autodiff's cells 4-6; TF prints tf.Tensor(2.0, ...).
    import tfmini as tf

    @tf.custom_gradient
    def clip_gradients(y):
        def backward(dy):
            return tf.clip_by_norm(dy, 0.5)
        return y, backward

    class MyModule(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(None)])
        def call_custom_grad(self, x):
            return clip_gradients(x)

    tf.saved_model.save(MyModule(), str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    v = tf.Variable(2.0)
    with tf.GradientTape() as t:
        t.watch(v)
        with tf.GradientTape() as inner:
            output = loaded.call_custom_grad(v * v)
        g = inner.gradient(output, v)
    assert float(g) == 2.0
    # The gradient graph is differentiated again: d/dv of 2v * 0.5/|1|.
    assert float(t.gradient(g, v)) == 1.0
    assert float(loaded.call_custom_grad(tf.constant(3.0))) == 3.0


def test_bad_custom_gradient_entry_is_a_structure_error(tmp_path):
    import tfmini as tf
    from tfmini.saved_model import _structure
    load = importlib.import_module("tfmini.saved_model.load")

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([])])
        def f(self, x):
            return x * 2.0

        @tf.function(input_signature=[tf.TensorSpec([]),
                                      tf.TensorSpec([])])
        def g(self, x, y):
            return [x * y]

    tf.saved_model.save(M(), str(tmp_path))
    m = tf.saved_model.load(str(tmp_path))
    cf = m.f.get_concrete_function()
    gcf = m.g.get_concrete_function()       # (leaves, dys) -> [gradient]
    load._custom_gradient(cf, gcf, {"wrt": [0], "variables": []}, [])
    for bad in ({"wrt": [1], "variables": []},
                {"wrt": [0], "variables": [0]},
                {"wrt": [], "variables": []},
                {"wrt": "0", "variables": []}):
        with pytest.raises(_structure.StructureError):
            load._custom_gradient(cf, gcf, bad, [])


# ---- a from_generator loop in a trace (function guide 26) ---------------
def test_generator_loop_in_a_trace_runs_the_generator_per_call(caplog):
    import tfmini as tf
    state = {"k": 1}

    def numbers():
        for i in range(3):
            yield i * state["k"], 0

    ds = tf.data.Dataset.from_generator(numbers, (tf.int32, tf.int32))
    with caplog.at_level("WARNING", logger="tfmini"):
        assert [int(x) for x, _ in ds] == [0, 1, 2]     # eager: silent

    @tf.function
    def total(dataset):
        s = tf.constant(0)
        for x, y in dataset:
            s += tf.abs(y - x)
        return s

    with caplog.at_level("WARNING", logger="tfmini"):
        assert int(total(ds)) == 3
        state["k"] = 10
        # As TF 2.21: the graph loops over the dataset and runs the
        # generator again (Note [Dataset loops in a graph]).
        assert int(total(ds)) == 30
    assert "from_generator" not in caplog.text
