"""Helpers shared by the graph optimizer tests (test_graph_*.py)."""
import contextlib

import numpy as np

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


def value_scale(ops, inputs):
    """The largest finite magnitude among the inputs and every value the
    program ops ((op, operand indices) over inputs then earlier values)
    computes, run eagerly: the scale of a rounding difference that a
    later op (a subtraction, a sine) may carry to the output."""
    vals = list(inputs)
    for op, args in ops:
        vals.append(op(*[vals[i] for i in args]))
    scale = 1.0
    with np.errstate(all="ignore"):
        for v in vals:
            a = np.abs(np.asarray(v, np.float64))
            a = a[np.isfinite(a)]
            if a.size:
                scale = max(scale, float(a.max()))
    return scale
