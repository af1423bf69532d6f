"""TF's new type promotion (dtype_conversion_mode "all" / "safe"),
checked against TF 2.21's answer for every pair of dtypes and Python
scalars (tests/data/tnp_promotion_tf221.json, made with TF's `x + y`)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini.experimental.numpy import promotion

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "tnp_promotion_tf221.json")) as f:
    TABLE = json.load(f)
SCALARS = {"pi": 1, "pf": 1.0, "pc": 1j}


def _operand(name):
    if name in SCALARS:
        return SCALARS[name]
    return np.zeros((), tf.as_dtype(name).as_numpy_dtype)


def _pairs(mode):
    # bool + bool is AddV2's missing bool kernel in TF, not promotion.
    return sorted(k for k in TABLE[mode] if k != "bool,bool")


@pytest.mark.parametrize("mode", ["all", "safe"])
def test_every_pair_promotes_as_tf(mode):
    wrong = []
    for key in _pairs(mode):
        a, b = key.split(",")
        want = TABLE[mode][key].split(",")[0]      # ",w": weak in TF
        try:
            got = promotion.result_dtype(mode, _operand(a),
                                         _operand(b)).name
        except TypeError:
            got = "TypeError"
        if got != want:
            wrong.append((key, want, got))
    assert not wrong


def test_safe_refusal_names_both_dtypes_as_tf():
    with pytest.raises(TypeError) as e:
        promotion.result_dtype("safe", np.int8(1), 1.0)
    assert str(e.value) == (
        "In promotion mode PromoMode.SAFE, implicit dtype promotion between "
        "(<dtype: 'int8'>, weak=False) and (<dtype: 'float32'>, weak=True) "
        "is disallowed. You need to explicitly specify the dtype in your "
        "op, or relax your dtype promotion rules (such as from SAFE mode to "
        "ALL mode).")


MODES_SCRIPT = r'''
import numpy as np
import tfmini as tf
import tfmini.experimental.numpy as tnp
try:
    tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="most")
except ValueError as e:
    print(e)
tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="all")
print((tf.constant(10) + tf.constant(5.0)).dtype.name)
print((tf.constant(1, tf.int64) + tf.constant(3.2, tf.float16)).dtype.name)
print((np.array(3.2, np.float16) + tf.constant(1, tf.int8)).dtype.name)
print((tf.constant(1, tf.int8) + 2).dtype.name)
# TF's math functions promote too in these modes, not only operators.
print(tf.add(tf.add(np.array(1, np.int8), tf.constant(1)),
             np.array(1, np.float16)).dtype.name)
print(tf.maximum(tf.constant(1, tf.int8), 2.5).numpy())
# Lists of Python numbers are weak, NumPy arrays are not; strings are
# outside the lattice and left to the op.
print(tf.add(tf.constant(1, tf.int8), [1, 2]).dtype.name,
      (tf.constant(1, tf.float16) + [1.5, 2]).dtype.name,
      tf.add(tf.constant(1, tf.int8), np.array([1, 2])).dtype.name,
      tf.add(tf.constant("a"), tf.constant("b")).numpy())
# Python values made arrays take TF's weak dtypes; NumPy's keep theirs.
print(tnp.array(1).dtype.name, tnp.asarray([1.0, 2]).dtype.name,
      tnp.array(1j).dtype.name, tnp.array(np.array(1)).dtype.name)
# A variable keeps its dtype: a value that promotes to it is cast.
v = tf.Variable(10, dtype=tf.int32)
print(v.assign_add(tf.constant(5, tf.int16)).numpy())
try:
    v.assign_add(tf.constant(5, tf.int64))
except TypeError as e:
    print(str(e)[:59])
tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="safe")
try:
    tf.constant(1, tf.int8) + tf.constant(5, tf.uint32)
except TypeError as e:
    print("TypeError", str(e)[:60])
tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="legacy")
print((tf.constant(10) + tf.constant(5.0)).dtype.name)
try:
    tf.add(tf.constant(1, tf.int8), tf.constant(1))
except tf.errors.InvalidArgumentError:
    print("legacy tf.add does not promote")
'''


def test_operators_follow_the_mode():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", MODES_SCRIPT], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "The provided promotion mode most does not exist. Make sure the "
        "provided dtype conversion mode is one of the followings: 'off', "
        "'legacy', 'safe' or 'all'.",
        "float32", "float16", "float16", "int8", "float16", "2.5",
        "int8 float16 int64 b'ab'", "int32 float32 complex128 int64", "15",
        "Variable dtype is immutable. Calling assign_add of Variable",
        "TypeError In promotion mode PromoMode.SAFE, implicit dtype "
        "promotion b",
        "float64", "legacy tf.add does not promote"]
