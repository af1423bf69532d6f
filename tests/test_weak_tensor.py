"""WeakTensor (dtype_conversion_mode "all" / "safe"), checked against
TF 2.21: tests/data/weak_tensor_tf221.json, written by
tests/data/make_weak_tensor_tf221.py with TF's interpreter, holds TF's
`x + y` for every pair of (dtype, weak) operands and Python scalars in
both modes, and the dtype, weakness and repr of ops on weak values.

The mode is process-wide (it changes every tensor's operators), so what
runs under it runs in a child process."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini.experimental.numpy import promotion, weak_tensor

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "weak_tensor_tf221.json")) as f:
    TF = json.load(f)
ROOT = os.path.dirname(HERE)


def _Weak(name):
    # Marking a fresh tensor weak changes nothing else: no mode needed.
    return weak_tensor.mark(tf.zeros((), name))


def _operand(name):
    if name in ("pi", "pf", "pc"):
        return {"pi": 1, "pf": 1.0, "pc": 1j}[name]
    if name.endswith("w"):
        return _Weak(name[:-1])
    return np.zeros((), tf.as_dtype(name).as_numpy_dtype)


def _describe(dt, weak):
    return dt.name + (",w" if weak else "")


@pytest.mark.parametrize("mode", ["all", "safe"])
def test_result_pair_is_tfs_for_every_pair(mode):
    wrong = []
    for key, want in sorted(TF[mode].items()):
        a, b = key.split(",")
        try:
            got = _describe(*promotion.result_pair(mode, _operand(a),
                                                   _operand(b)))
        except TypeError:
            got = "TypeError"
        if got != want:
            wrong.append((key, want, got))
    assert not wrong
    assert len(TF[mode]) == 20 * 23 - 1


def test_weak_pairs_fold_left_to_right_as_tf():
    # int8 + 1.0 is a weak float64; that + float16 is float16.
    assert _describe(*promotion.result_pair(
        "all", np.int8(1), 1.0)) == "float64,w"
    assert promotion.result_pair("all", np.int8(1), 1.0,
                                 np.float16(1)) == (tf.float16, False)
    assert promotion.result_pair("all", 1, 2.0) == (tf.float32, True)
    with pytest.raises(OverflowError):
        promotion.result_pair("all", 2**40, 1.0)


def test_safe_refusal_names_weak_operands():
    with pytest.raises(TypeError) as e:
        promotion.result_pair("safe", _Weak("float32"), np.int8(1))
    assert "between (<dtype: 'float32'>, weak=True) and (<dtype: 'int8'>, " \
        "weak=False) is disallowed" in str(e.value)


CHILD = r'''
import json, sys
import numpy as np
import tfmini as tf
import tfmini.experimental.numpy as tnp
from tfmini.experimental.numpy import weak_tensor as W

data = json.load(open(sys.argv[1]))
out = {}


def desc(t):
    return t.dtype.name + (",w" if W.is_weak(t) else "")


def operand(n):
    if n in ("pi", "pf", "pc"):
        return {"pi": 1, "pf": 1.0, "pc": 1j}[n]
    if n.endswith("w"):
        return W.mark(tf.zeros((), n[:-1]))
    return tf.zeros((), n)


for mode in ("all", "safe"):
    tnp.experimental_enable_numpy_behavior(dtype_conversion_mode=mode)
    got = {}
    for key in data[mode]:
        a, b = key.split(",")
        try:
            got[key] = desc(operand(a) + operand(b))
        except TypeError:
            got[key] = "TypeError"
        except Exception as e:
            got[key] = type(e).__name__
    out[mode] = got

tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="all")
exprs = {}
for e in data["exprs"]:
    try:
        t = eval(e)
        exprs[e] = {"dtype": desc(t), "repr": repr(t)}
    except Exception as ex:
        exprs[e] = {"error": type(ex).__name__}
out["exprs"] = exprs
out["str"] = {e: str(eval(e)) for e in data["str"]}

shown = []


@tf.function
def h(x):
    w = tf.sqrt(tf.identity(tf.constant([1.0, 2.0])))
    shown.extend([repr(w), str(w), type(w).__name__])
    return w


h(tf.constant(1.0, tf.float32))
out["graph"] = shown

out["dtype_given"] = [desc(tf.ones_like(tf.constant(1.0), tf.float32)),
                      desc(tf.zeros_like(tf.constant(1), dtype=tf.int32))]
keep = tf.constant

# Back in the legacy mode nothing is weak and tf's functions are its own.
tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="legacy")
out["legacy"] = [desc(tf.constant(1.5)), desc(tf.abs(-2.0)),
                 repr(tf.constant(5)), tf.constant.__module__,
                 desc(tf.constant(1, tf.int8) + 1), desc(keep(1.5))]
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def child():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    path = os.path.join(HERE, "data", "weak_tensor_tf221.json")
    run = subprocess.run([sys.executable, "-c", CHILD, path], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def _skip_bool_add(key):
    # bool + bool: TF's AddV2 has no bool kernel; the table leaves it out.
    return key == "bool,bool"


@pytest.mark.parametrize("mode", ["all", "safe"])
def test_operator_add_on_weak_tensors_is_tfs(child, mode):
    wrong = [(k, v, child[mode][k]) for k, v in sorted(TF[mode].items())
             if not _skip_bool_add(k) and child[mode][k] != v]
    assert not wrong


def test_ops_keep_weakness_and_repr_as_tf(child):
    wrong = []
    for e, want in TF["exprs"].items():
        got = child["exprs"][e]
        if got != {k: want[k] for k in got if k in want} or \
                set(got) != set(want):
            wrong.append((e, want, got))
    assert not wrong
    assert child["str"] == TF["str"]


def test_guide_values():
    # The tf_numpy_type_promotion guide's cells 7-9, 11, 22, 26-27.
    e = TF["exprs"]
    assert e["tf.constant(5)"]["repr"] == \
        "<tf.Tensor: shape=(), dtype=int32, numpy=5, weak=True>"
    assert e["tf.constant(1.2) + tf.constant(3.1, tf.float16)"]["dtype"] \
        == "float16"
    assert e["tnp.array(1.0)"]["dtype"] == "float32,w"


def test_traced_weak_tensor_prints_as_tf(child):
    assert child["graph"] == TF["function"]["graph"]


def test_legacy_mode_has_no_weak_tensors(child):
    assert child["legacy"] == [
        "float32", "float32",
        "<tf.Tensor: shape=(), dtype=int32, numpy=5>",
        "tfmini.ops.constant_op", "int8", "float32"]


def test_a_dtype_argument_makes_a_strong_tensor(child):
    # TF: tf.ones_like(weak, tf.float32) is a strong float32.
    assert child["dtype_given"] == ["float32", "int32"]


def test_function_traces_weak_and_strong_apart():
    script = (
        "import tfmini as tf, json\n"
        "import tfmini.experimental.numpy as tnp\n"
        "from tfmini.experimental.numpy import weak_tensor as W\n"
        "tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="
        "'all')\n"
        "seen = []\n"
        "@tf.function\n"
        "def f(x):\n"
        "    seen.append(1)\n"
        "    return x + tf.constant(1.0, tf.float16)\n"
        "d = lambda t: t.dtype.name + (',w' if W.is_weak(t) else '')\n"
        "r = [d(f(tf.constant(1.0))), d(f(tf.constant(1.0))),\n"
        "     d(f(tf.constant(1.0, tf.float32))), d(f(tf.constant(2.0)))]\n"
        "print(json.dumps({'results': r, 'traces': len(seen)}))\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", script], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    want = TF["function"]
    assert got == {"results": want["results"], "traces": want["traces"]}
