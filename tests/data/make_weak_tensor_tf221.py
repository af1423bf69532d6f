"""Writes weak_tensor_tf221.json: TF 2.21's WeakTensor behaviour, for
tests/test_weak_tensor.py. Run with TF's interpreter:
/work/tfvenv/bin/python tests/data/make_weak_tensor_tf221.py"""
import json
import os

import numpy as np  # noqa: F401 (EXPRS use it)
import tensorflow as tf
import tensorflow.experimental.numpy as tnp
from tensorflow.python.framework import weak_tensor

STRONG = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
          "int32", "int64", "bfloat16", "float16", "float32", "float64",
          "complex64", "complex128"]
WEAK = ["int32", "int64", "float32", "float64", "complex128"]
NODES = STRONG + [w + "w" for w in WEAK]

# Expressions run by both TF and tfmini (tf, tnp, np in scope); each
# gives a tensor whose dtype, weakness and repr are recorded.
EXPRS = [
    "tf.constant(5)", "tf.constant(1.2)", "tf.constant(1j)",
    "tf.constant(True)", "tf.constant([5.0, 10.0, 3])", "tf.constant([1, 2])",
    "tf.constant(5, tf.int32)", "tf.constant(5.0, tf.float16)",
    "tf.constant(np.float32(1))", "tf.constant(np.array([1., 2.]))",
    "tf.constant(tf.constant(1.5))", "tf.constant(tf.constant(2), tf.float32)",
    "tf.convert_to_tensor(3.0)", "tf.convert_to_tensor(tf.constant(3.0))",
    "tf.constant(1.2) + tf.constant(3.1, tf.float16)",
    "tf.constant(5) + 1", "tf.constant(5) * 2.0", "tf.constant(5) / 2",
    "tf.constant(5) // 2", "tf.constant(5.0) ** 2", "tf.constant(7) % 4",
    "2 - tf.constant(5.0)", "tf.constant(5) + tf.constant(1.5)",
    "tf.constant(5.0) + tf.constant(1, tf.int8)",
    "tf.constant(5, tf.int8) + 1", "tf.constant(5, tf.int8) + 1.5",
    "tf.constant(5.0) + np.float16(1)", "tf.constant(5.0) + np.array([1.])",
    "tf.constant(5.0) < 6", "tf.constant(5) == tf.constant(5)",
    "tf.constant(5.0) > tf.constant(1, tf.int8)",
    "-tf.constant(5)", "abs(tf.constant(-5.0))", "~tf.constant(5)",
    "tf.math.abs([100.0, 4.0])", "tf.abs(tf.constant(-2))",
    "tf.negative(tf.constant(2.0))", "tf.sqrt(tf.constant(4.0))",
    "tf.exp(2.0)", "tf.math.log(tf.constant(2.0))", "tf.sin(1.0)",
    "tf.square(3)", "tf.sign(tf.constant(-3.0))",
    "tf.sqrt(tf.constant(4.0, tf.float16))",
    "tf.reduce_sum(tf.constant([1., 2.]))", "tf.reduce_max([1, 2])",
    "tf.reduce_mean(tf.constant([1., 2.]))",
    "tf.reshape(tf.constant([1., 2.]), [2, 1])",
    "tf.identity(tf.constant(5.0))", "tf.transpose(tf.constant([[1, 2]]))",
    "tf.expand_dims(tf.constant(1.0), 0)", "tf.squeeze(tf.constant([2.0]))",
    "tf.zeros_like(tf.constant(2.0))", "tf.ones_like(tf.constant([2]))",
    "tf.cast(tf.constant(5), tf.float32)", "tf.cast(tf.constant(5), tf.int32)",
    "tf.add(tf.constant(1.0), 2.0)", "tf.add(tf.constant(1.0), 2)",
    "tf.add(1, 2)", "tf.add(tf.constant(1, tf.int16), 2)",
    "tf.multiply(tf.constant(2.0), tf.constant(3, tf.int32))",
    "tf.subtract(5.0, tf.constant(1))", "tf.maximum(tf.constant(1), 2.5)",
    "tf.minimum(tf.constant(1.0), tf.constant(3, tf.uint8))",
    "tf.math.floordiv(tf.constant(7.0), 2)", "tf.pow(2, tf.constant(3))",
    "tf.math.equal(tf.constant(1.0), 1.0)",
    "tf.math.less(tf.constant(1.0), 2)",
    "tnp.array(1)", "tnp.array(1.0)", "tnp.array([1, 2])",
    "tnp.asarray(2.5)", "tnp.array(np.array(1))", "tnp.array(1, tnp.int64)",
    "tnp.array(tf.constant(2.0))", "tnp.add(1, 2.5)",
    "tnp.add(tf.constant(1, tf.int8), 1)", "tnp.multiply(2.0, 3.0)",
    "tnp.sqrt(4.0)", "tnp.abs(tf.constant(-1))",
    "tnp.sum(tf.constant([1.0, 2.0]))", "tnp.reshape(tnp.array([1, 2]), [2])",
    "tnp.maximum(tf.constant(1.0), 2)", "tnp.less(tf.constant(1.0), 2)",
    "tnp.zeros(3)", "tnp.ones(2)", "tnp.linspace(0, 1, 3)", "tnp.eye(2)",
    "tnp.arange(3)", "tnp.arange(3.0)", "tnp.arange(0, 3, 1)",
    "tnp.arange(3, dtype=tnp.int64)", "tnp.full([2], 1)", "tnp.zeros(3, int)",
    "tnp.mean(tf.constant([1, 2]))", "tnp.sqrt(2)", "tnp.exp(1)",
    "tnp.add(tf.constant(1), tf.constant(2.5))", "tnp.add(1, 2)",
    "tnp.where(True, 1, 2.5)", "tnp.ones_like(tf.constant(1))",
    "tnp.matmul(tf.constant([[1.0]]), tf.constant([[2.0]]))",
    "tnp.ravel(tf.constant([[1.0]]))", "tnp.copy(tf.constant(1.0))",
    "tf.constant([5.0]).astype(tf.float32)", "tf.constant([[5.0]]).T",
    "tf.math.real(tf.constant(1j))", "tf.math.truediv(tf.constant(1), 2)",
    "tf.clip_by_value(tf.constant(1.5), 0., 1.)",
    "tf.nn.relu(tf.constant(-1.0))", "tf.maximum(tf.constant(1.0), 2.0)",
    "tf.math.divide_no_nan(tf.constant(1.0), 2.0)",
    "tf.constant('a')", "tf.constant(['a', 'b'])", "tf.sqrt(None)",
    "tf.constant(1.0) + None", "tf.reshape([1.0, 2.0], [2, 1])",
    "tf.constant(1.5, shape=[2])", "tf.constant([1, 2], shape=[2, 1])",
    "tf.constant(1.0) + tf.constant(1, tf.uint64)",
    "tf.reduce_sum([1, 2], axis=0)", "tf.square([[1, 2]])",
    "tf.constant(float('nan'))", "tf.constant(1.0) / 0",
    "tf.constant(1) // 0", "tf.matmul([[1.0]], [[2.0]])",
    "tf.math.scalar_mul(2, tf.constant(1.5))",
    "tf.constant(1.0) @ tf.constant([[1.0]])",
    "tf.constant([[1.0]]) @ tf.constant([[2.0]])",
    "tf.matmul(tf.constant([[1.0]]), tf.constant([[2.0]], tf.float16))",
    "tf.constant([1.0, 2.0])[0]",
    "tf.Variable(1.0) + 1.0", "tf.Variable(1.0) + tf.constant(2.0)",
    "tf.constant(2.0) * tf.Variable(1, dtype=tf.float16)",
]

# Strings (str of the tensor) and tf.function weakness.
STR_EXPRS = ["tf.constant(5)", "tf.constant([1.5, 2.0])",
             "tf.constant(5, tf.int32)"]


def operand(node):
    if node.endswith("w"):
        return weak_tensor.WeakTensor.from_tensor(
            tf.zeros((), node[:-1]))
    return tf.zeros((), node)


def describe(t):
    w = isinstance(t, weak_tensor.WeakTensor)
    return f"{t.dtype.name},w" if w else t.dtype.name


def table(mode):
    tnp.experimental_enable_numpy_behavior(dtype_conversion_mode=mode)
    out = {}
    for a in NODES:
        for b in NODES + ["pi", "pf", "pc"]:
            if a == b == "bool":
                continue
            y = {"pi": 1, "pf": 1.0, "pc": 1j}.get(b) if b[0] == "p" \
                and len(b) == 2 else operand(b)
            try:
                out[f"{a},{b}"] = describe(operand(a) + y)
            except TypeError:
                out[f"{a},{b}"] = "TypeError"
    return out


def exprs():
    tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="all")
    out = {}
    for e in EXPRS:
        try:
            t = eval(e)
            out[e] = {"dtype": describe(t), "repr": repr(t)}
        except Exception as ex:  # noqa: BLE001 (recorded for the test)
            out[e] = {"error": type(ex).__name__}
    strs = {e: str(eval(e)) for e in STR_EXPRS}
    return out, strs


def traced():
    """Retracing: TF keys weakness in the trace type."""
    tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="all")
    seen = []

    @tf.function
    def f(x):
        seen.append(1)
        return x + tf.constant(1.0, tf.float16)

    r = [describe(f(tf.constant(1.0))), describe(f(tf.constant(1.0))),
         describe(f(tf.constant(1.0, tf.float32))),
         describe(f(tf.constant(2.0)))]

    @tf.function
    def g(x):
        return x * 2

    shown = []

    @tf.function
    def h(x):
        w = tf.sqrt(tf.identity(tf.constant([1.0, 2.0])))
        shown.extend([repr(w), str(w), type(w).__name__])
        return w
    h(tf.constant(1.0, tf.float32))
    return {"results": r, "traces": len(seen), "graph": shown,
            "passthrough": [describe(g(tf.constant(1.0))),
                            describe(g(tf.constant(1.0, tf.float32)))]}


def main():
    data = {"all": table("all"), "safe": table("safe")}
    data["exprs"], data["str"] = exprs()
    data["function"] = traced()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "weak_tensor_tf221.json"), "w") as f:
        json.dump(data, f, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
