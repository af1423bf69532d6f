"""The conv epilogue's residual add (graph/pass_conv_epilogue.c): Conv2D
+ bias, then AddV2 with a tensor of the output's shape (a ResNet block's
skip connection), then an optional activation, becomes one
_FusedConv2D(x, f, bias, residual) node (oneDNN's sum post-op for
float32, the loop epilogue for float64). Fused must equal unfused in
values and gradients."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf


def _optimized_types(fn, *args):
    cf = fn.get_concrete_function(*args)
    return [op.type for op in cf.optimized_graph.get_operations()]


def _fused_conv_arity(fn, *args):
    """How many inputs each _FusedConv2D node of fn's optimized graph
    has: 3 (x, f, bias) or 4 (and a residual)."""
    cf = fn.get_concrete_function(*args)
    return [len(op.inputs) for op in cf.optimized_graph.get_operations()
            if op.type == "_FusedConv2D"]


def _unfused(step, *args):
    before = tf._C.graph_passes()
    tf.config.optimizer.set_experimental_options({"epilogue": False})
    try:
        plain = tf.function(step)
        out = [t.numpy() for t in plain(*args)]
        assert "_FusedConv2D" not in _optimized_types(plain, *args)
        return out
    finally:
        tf._C.set_graph_passes(before)


def _block_step(act, dtype, residual_first=True):
    """A traced train step through relu(conv + b) -> conv + b -> + x ->
    act: loss and the gradients of both filters, both biases and x."""
    rng = np.random.default_rng(21)
    w1 = tf.Variable(rng.standard_normal((3, 3, 4, 4)).astype(dtype) * 0.3)
    b1 = tf.Variable(rng.standard_normal((4,)).astype(dtype))
    w2 = tf.Variable(rng.standard_normal((3, 3, 4, 4)).astype(dtype) * 0.3)
    b2 = tf.Variable(rng.standard_normal((4,)).astype(dtype))

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            c = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w1, 1, "SAME"),
                                          b1))
            c = tf.nn.bias_add(tf.nn.conv2d(c, w2, 1, "SAME"), b2)
            y = x + c if residual_first else c + x
            if act is not None:
                y = act(y)
            loss = tf.reduce_sum(tf.sin(y))
        return (loss,) + tuple(tape.gradient(loss, [w1, b1, w2, b2, x]))
    x = tf.constant(rng.standard_normal((2, 7, 6, 4)).astype(dtype))
    return step, x


@pytest.mark.parametrize("act", [None, tf.nn.relu, tf.nn.relu6],
                         ids=["none", "relu", "relu6"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("first", [True, False], ids=["x+c", "c+x"])
def test_residual_fused_equals_unfused(act, dtype, first):
    step, x = _block_step(act, dtype, first)
    eager = [t.numpy() for t in step(x)]
    fused = tf.function(step)
    got = [t.numpy() for t in fused(x)]
    types = _optimized_types(fused, x)
    assert _fused_conv_arity(fused, x) == [3, 4] and "Conv2D" not in types
    # The skip connection's add (and the activation after it) went into
    # the second conv: no full-size AddV2 or Relu is left in the forward.
    assert "Relu" not in types and "Relu6" not in types
    want = _unfused(step, x)
    tol = 1e-4 if dtype == "float32" else 1e-11
    for g, w, e in zip(got, want, eager):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


def test_residual_with_a_second_reader_is_not_taken():
    rng = np.random.default_rng(22)
    w = tf.constant(rng.standard_normal((3, 3, 2, 2)).astype(np.float32))
    b = tf.constant(rng.standard_normal((2,)).astype(np.float32))
    x = tf.constant(rng.standard_normal((1, 5, 5, 2)).astype(np.float32))

    @tf.function
    def fn(x):
        cb = tf.nn.conv2d(x, w, 1, "SAME") + b
        return tf.nn.relu(cb + x), cb          # cb is read twice

    y, cb = fn(x)
    types = _optimized_types(fn, x)
    # Only conv + bias fuse; the residual add stays outside.
    assert _fused_conv_arity(fn, x) == [3] and "Conv2D" not in types
    np.testing.assert_allclose(y.numpy(),
                               np.maximum(cb.numpy() + x.numpy(), 0),
                               rtol=1e-6)


def test_broadcast_add_is_not_a_residual():
    rng = np.random.default_rng(23)
    w = tf.constant(rng.standard_normal((3, 3, 2, 3)).astype(np.float32))
    b = tf.constant(rng.standard_normal((3,)).astype(np.float32))
    s = tf.constant(rng.standard_normal((1, 1, 1, 3)).astype(np.float32))
    x = tf.constant(rng.standard_normal((2, 4, 4, 2)).astype(np.float32))
    fn = tf.function(lambda x: tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME")
                                          + b + s))
    got = fn(x).numpy()
    types = _optimized_types(fn, x)
    assert _fused_conv_arity(fn, x) == [3] and "Conv2D" not in types
    want = np.maximum(np.asarray(tf.nn.conv2d(x, w, 1, "SAME")) + b.numpy()
                      + s.numpy(), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_keras_resnet_block_step_is_fused():
    """The benchmark's block: both convs fused, the skip connection and
    its ReLU in the second, and the step matches the unfused one."""
    L = tf.keras.layers
    inp = tf.keras.Input((6, 6, 8))
    c = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
    c = L.Conv2D(8, 3, padding="same")(c)
    out = L.Dense(3)(L.GlobalAveragePooling2D()(L.ReLU()(L.Add()([inp,
                                                                  c]))))
    model = tf.keras.Model(inp, out)
    rng = np.random.default_rng(24)
    x = tf.constant(rng.standard_normal((4, 6, 6, 8)).astype(np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True) ** 2)
        return [loss] + tape.gradient(loss, model.trainable_variables)

    fused = tf.function(step)
    got = [t.numpy() for t in fused(x)]
    types = _optimized_types(fused, x)
    assert _fused_conv_arity(fused, x) == [3, 4] and "Relu" not in types
    want = _unfused(step, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_residual_loops_equal_onednn():
    """float32 through the loop epilogue (TFMINI_CONV=im2col) gives what
    oneDNN's sum post-op gives."""
    code = (
        "import numpy as np, tfmini as tf\n"
        "r = np.random.default_rng(25)\n"
        "w = tf.constant(r.standard_normal((3, 3, 4, 4)).astype('f4'))\n"
        "b = tf.constant(r.standard_normal((4,)).astype('f4'))\n"
        "x = tf.constant(r.standard_normal((2, 8, 8, 4)).astype('f4'))\n"
        "f = tf.function(lambda x: tf.nn.relu(x + (tf.nn.conv2d(x, w, 1,"
        " 'SAME') + b)))\n"
        "t = [o.type for o in f.get_concrete_function(x).optimized_graph"
        ".get_operations()]\n"
        "assert '_FusedConv2D' in t and 'Relu' not in t and 'AddV2' not"
        " in t, t\n"
        "np.save(__import__('sys').argv[1], f(x).numpy())\n")
    outs = []
    for mode, name in ((None, "a"), ("im2col", "b")):
        env = dict(os.environ)
        env.pop("TFMINI_CONV", None)
        if mode:
            env["TFMINI_CONV"] = mode
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                            f"tfm_res_{os.getpid()}_{name}.npy")
        subprocess.run([sys.executable, "-c", code, path], env=env,
                       check=True, timeout=120)
        outs.append(np.load(path))
        os.unlink(path)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)


def _raw_fused(*inputs, act=0):
    from tfmini import _C
    from tfmini._opids import ID
    from tfmini.ops import conv_ops as co
    return _C.call(ID["_FusedConv2D"], inputs,
                   ints=(1, 1, 1, 1) + tuple(co._NO_SIZES)
                   + tuple(co._NO_PADS), i=(co._SAME, act))


def test_raw_fused_conv_with_residual_matches_numpy_sum():
    rng = np.random.default_rng(26)
    x = tf.constant(rng.standard_normal((1, 4, 4, 2)).astype(np.float32))
    f = tf.constant(rng.standard_normal((3, 3, 2, 3)).astype(np.float32))
    b = tf.constant(rng.standard_normal(3).astype(np.float32))
    r = tf.constant(rng.standard_normal((1, 4, 4, 3)).astype(np.float32))
    got = _raw_fused(x, f, b, r, act=1).numpy()
    want = np.maximum(np.asarray(tf.nn.conv2d(x, f, 1, "SAME"))
                      + b.numpy() + r.numpy(), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bad_residual_names_op_shapes_and_dtypes():
    rng = np.random.default_rng(27)
    x = tf.constant(rng.standard_normal((1, 4, 4, 2)).astype(np.float32))
    f = tf.constant(rng.standard_normal((3, 3, 2, 3)).astype(np.float32))
    b = tf.constant(np.zeros(3, np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_FusedConv2D: residual must have the "
                             r"output's shape \[1,4,4,3\], got \[1,4,4,2\]"):
        _raw_fused(x, f, b, tf.zeros((1, 4, 4, 2)))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_FusedConv2D.*float32.*float64|"
                             r"_FusedConv2D.*float64.*float32"):
        _raw_fused(x, f, b, tf.zeros((1, 4, 4, 3), tf.float64))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"_FusedConv2D takes 2 to 4 inputs"):
        _raw_fused(x)
