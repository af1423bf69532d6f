"""Prints TF 2.21's tape.gradient results where a source or the target
is a weak tensor, for tests/test_guidefix2.py's TF_WEAK_GRADIENTS
literal. Run with TF's interpreter:
/work/tfvenv/bin/python tests/data/make_weak_gradients_tf221.py

CASES is read by the test too (tfmini runs the same code); each case
leaves its result in `g`."""

# One GradientTape `t` over a weak float32 x = tf.constant(3.0) unless
# the case says otherwise.
CASES = {
    "weak source, weak target": """
x = tf.constant(3.0)
with tf.GradientTape() as t:
    t.watch(x)
    y = x * x
g = t.gradient(y, x)""",
    "weak source through a float16 product": """
x = tf.constant(3.0)
with tf.GradientTape() as t:
    t.watch(x)
    y = x * tf.constant(2.0, tf.float16)
g = t.gradient(y, x)""",
    "weak source, strong target (maximum is strong)": """
x = tf.constant(3.0)
with tf.GradientTape() as t:
    t.watch(x)
    y = tf.maximum(x, 1.0)
g = [t.gradient(y, x), y]""",
    "weak vector source": """
x = tf.constant([1.0, 2.0])
with tf.GradientTape() as t:
    t.watch(x)
    y = tf.exp(x)
g = t.gradient(y, x)""",
    "strong source": """
x = tf.constant(3.0, tf.float32)
with tf.GradientTape() as t:
    t.watch(x)
    y = x * 2.0
g = t.gradient(y, x)""",
    "variable source, weak operand": """
v = tf.Variable(2.0)
with tf.GradientTape() as t:
    y = v * 3.0
g = t.gradient(y, v)""",
    "weak and strong sources in a dict": """
x = tf.constant(3.0)
s = tf.constant(4.0, tf.float32)
with tf.GradientTape() as t:
    t.watch([x, s])
    y = x * s
g = t.gradient(y, {"a": x, "b": s, "c": [x]})""",
    "weak source, strong output gradient": """
x = tf.constant(3.0)
with tf.GradientTape() as t:
    t.watch(x)
    y = x * 2.0
g = t.gradient(y, x, output_gradients=tf.constant(5.0, tf.float32))""",
    "strong source, weak output gradient": """
x = tf.constant(3.0, tf.float32)
with tf.GradientTape() as t:
    t.watch(x)
    y = x * 2.0
g = t.gradient(y, x, output_gradients=tf.constant(5.0))""",
    "weak source is the target": """
x = tf.constant(3.0)
with tf.GradientTape() as t:
    t.watch(x)
g = t.gradient(x, x)""",
    "unconnected weak source, zero": """
x = tf.constant(3.0)
with tf.GradientTape() as t:
    t.watch(x)
    y = tf.constant(1.0, tf.float32) * 2.0
g = t.gradient(y, x, unconnected_gradients="zero")""",
    "unconnected weak source, none": """
x = tf.constant(3.0)
with tf.GradientTape() as t:
    t.watch(x)
    y = tf.constant(1.0, tf.float32) * 2.0
g = t.gradient(y, x)""",
    "weak int source": """
x = tf.constant(3)
with tf.GradientTape() as t:
    t.watch(x)
    y = x * 2
g = t.gradient(y, x)""",
    "weak float64 source": """
x = tf.constant(3, tf.int8) + 1.0
with tf.GradientTape() as t:
    t.watch(x)
    y = x * x
g = [x, t.gradient(y, x)]""",
    "second order": """
x = tf.constant(3.0)
with tf.GradientTape() as t2:
    t2.watch(x)
    with tf.GradientTape() as t1:
        t1.watch(x)
        y = x * x * x
    d1 = t1.gradient(y, x)
g = [d1, t2.gradient(d1, x)]""",
    "persistent tape, repeated source": """
x = tf.constant([1.0, 2.0])
with tf.GradientTape(persistent=True) as t:
    t.watch(x)
    y = tf.reduce_sum(x * x)
g = t.gradient(y, [x, x])""",
    "jacobian": """
x = tf.constant([1.0, 2.0])
with tf.GradientTape() as t:
    t.watch(x)
    y = x * x
g = t.jacobian(y, x)""",
    "batch_jacobian": """
x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
with tf.GradientTape() as t:
    t.watch(x)
    y = x * x
g = t.batch_jacobian(y, x)""",
    # What a tf.function returns is checked inside it: tfmini's
    # function outputs are not weak yet (TF's are).
    "inside tf.function": """
seen = []
@tf.function
def f(x):
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    dx = t.gradient(y, x)
    # (TF's is an EagerWeakTensor even here: its class, not its value)
    seen.append("weak" if "Weak" in type(dx).__name__ else "strong")
    return dx * tf.constant(1.0, tf.float16)
g = [f(tf.constant(3.0)), seen]""",
}


def describe(r):
    """What a case's result records: None, or dtype, weakness, value;
    lists and dicts of those."""
    if r is None or isinstance(r, str):
        return r
    if isinstance(r, (list, tuple)):
        return [describe(e) for e in r]
    if isinstance(r, dict):
        return {k: describe(v) for k, v in sorted(r.items())}
    weak = bool(getattr(r, "_weak", False))     # tfmini's
    # TF's WeakTensor is an extension type around a tensor. Its zeros
    # for an unconnected source wrap a weak zeros_like again (repr
    # "weak=True, weak=True", numpy() a ValueError): an accident of
    # TF's, recorded as one weak tensor.
    while type(r).__module__.startswith("tensorflow.") and \
            hasattr(r, "tensor"):
        r, weak = r.tensor, True
    return [r.dtype.name, weak, r.numpy().tolist()]


def run(tf, tnp):
    out = {}
    for mode in ("all", "safe"):
        tnp.experimental_enable_numpy_behavior(dtype_conversion_mode=mode)
        for name, code in CASES.items():
            env = {"tf": tf}
            try:
                exec(code, env)
                out[f"{mode}: {name}"] = describe(env["g"])
            except Exception as e:  # noqa: BLE001 (recorded)
                out[f"{mode}: {name}"] = type(e).__name__
    return out


def main():
    import pprint
    import tensorflow as tf
    import tensorflow.experimental.numpy as tnp
    pprint.pprint(run(tf, tnp), width=76, sort_dicts=False)


if __name__ == "__main__":
    main()
