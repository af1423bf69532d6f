"""Helpers shared by the graph optimizer tests (test_graph_*.py)."""
import contextlib

import numpy as np
from hypothesis import strategies as st

import tfmini as tf


@contextlib.contextmanager
def passes(**opts):
    """Graph passes set for the functions traced inside; restored after."""
    old = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options(opts)
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options(
            {k: old[k] for k in opts})


def bits_equal(a, b):
    """a and b (tensors or arrays) have the same dtype, shape and bits."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.reshape(-1).view(np.uint8),
                          b.reshape(-1).view(np.uint8)), \
        np.max(np.abs(a.astype(np.float64) - b))



# ---- random elementwise programs (the fusion and native property
# tests): a list of (op, operand indices) over the inputs, then the
# values of earlier ops ----

def draw_ops(draw, nvals, unary, binary, max_ops):
    """Between 1 and max_ops random ops over nvals values (a hypothesis
    `draw`)."""
    ops = []
    for _ in range(draw(st.integers(1, max_ops))):
        if draw(st.booleans()):
            ops.append((draw(st.sampled_from(unary)),
                        [draw(st.integers(0, nvals - 1))]))
        else:
            ops.append((draw(st.sampled_from(binary)),
                        [draw(st.integers(0, nvals - 1)),
                         draw(st.integers(0, nvals - 1))]))
        nvals += 1
    return ops


def program_values(ops, inputs):
    """The inputs, then the value of each op in turn."""
    vals = list(inputs)
    for op, args in ops:
        vals.append(op(*[vals[i] for i in args]))
    return vals


def run_program(ops, nout):
    """A function of the inputs returning the last nout values, each
    broadcast to the first input's (full) shape."""
    def f(*inputs):
        outs = program_values(ops, inputs)[-nout:]
        return [o + tf.zeros_like(inputs[0]) for o in outs]
    return f


def value_scale(ops, inputs):
    """The largest finite magnitude among the inputs and every value the
    program computes, run eagerly: the scale of a rounding difference
    that a later op (a subtraction, a sine) may carry to the output."""
    scale = 1.0
    with np.errstate(all="ignore"):
        for v in program_values(ops, inputs):
            a = np.abs(np.asarray(v, np.float64))
            a = a[np.isfinite(a)]
            if a.size:
                scale = max(scale, float(a.max()))
    return scale
