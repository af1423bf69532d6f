"""OpSpecs for the nn family (csrc/ops/ops_nn.def) and tf.nn composites."""
import numpy as np

import tfmini as tf

from .opspec import FLOATS, OpSpec, uniform

NUM_CLASSES = 5


def np_log_softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    if x.size == 0:
        return x
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_softmax(x, axis=-1):
    return np.exp(np_log_softmax(x, axis))


def _like(ref, arg=0):
    """ref's result in the dtype of input `arg` (NumPy works in float64)."""
    def f(*xs):
        out = ref(*xs)
        if isinstance(out, tuple):
            return tuple(np.asarray(o).astype(xs[arg].dtype) for o in out)
        return np.asarray(out).astype(xs[arg].dtype)
    return f


def labels(rng, shape, dtype):
    """Integer class ids in [0, NUM_CLASSES), whatever the spec dtype."""
    return rng.integers(0, NUM_CLASSES, size=shape).astype(np.int32)


def distributions(rng, shape, dtype):
    """Rows (last axis) of probabilities that sum to 1."""
    return np_softmax(rng.uniform(-2, 2, size=shape)).astype(dtype)


def np_sparse_xent(logits, lab):
    lsm = np_log_softmax(logits)
    return -np.take_along_axis(lsm, lab[..., None].astype(np.int64),
                               axis=-1)[..., 0]


def np_xent(lab, logits, axis=-1):
    return -(lab * np_log_softmax(logits, axis)).sum(axis=axis)


def np_l2_normalize(x, axis):
    sq = (x * x).sum(axis=axis, keepdims=axis is not None)
    return x / np.sqrt(np.maximum(sq, 1e-12))


def _have(*names):
    return all(hasattr(tf, n) or hasattr(tf.math, n) for n in names)


# Composites that call other families' ops join the table once those ops
# are in the package (they are all in main when every family has landed).
HAVE_RESHAPE = _have("reshape")
HAVE_L2 = _have("reduce_sum", "rsqrt")
HAVE_MOMENTS = _have("reduce_mean", "squeeze", "stop_gradient",
                     "squared_difference")


# The fused normalization ops (tfmini's own): references from the
# composed math.
def _layer_norm(x, g, b, eps=1e-3):
    from tfmini import _C
    from tfmini._opids import ID
    return _C.call(ID["_LayerNorm"], (x, g, b), f=(eps,))


def _layer_norm_grad(dy, x, g, eps=1e-3):
    from tfmini import _C
    from tfmini._opids import ID
    return _C.call(ID["_LayerNormGrad"], (dy, x, g), f=(eps,))


def _softmax_grad(y, dy, axis=-1):
    from tfmini import _C
    from tfmini._opids import ID
    return _C.call(ID["_SoftmaxGrad"], (y, dy), i=(axis,))


def np_layer_norm(x, g, b, eps=1e-3):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def np_layer_norm_grad(dy, x, g, eps=1e-3):
    m = x.mean(-1, keepdims=True)
    r = 1 / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)
    xh = (x - m) * r
    v = g * dy
    dx = r * (v - v.mean(-1, keepdims=True)
              - xh * (v * xh).mean(-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return (dx, (dy * xh).sum(rows), dy.sum(rows))


def np_softmax_grad(y, dy, axis=-1):
    return y * (dy - (dy * y).sum(axis, keepdims=True))


def _grad_of_ln(dy, x, g):
    # _LayerNormGrad's three outputs folded into one value, so that one
    # finite-difference check covers the second-order rule of each.
    dx, dg, db = _layer_norm_grad(dy, x, g)
    return dx * 0.7 + tf.reduce_sum(dg * 1.3 + db * 0.4)


def np_grad_of_ln(dy, x, g):
    dx, dg, db = np_layer_norm_grad(dy, x, g)
    return dx * 0.7 + (dg * 1.3 + db * 0.4).sum()


SOFTMAX_SHAPES = [((3, 5),), ((7,),), ((2, 3, 4),), ((4, 0),), ((0, 3),),
                  ((1, 1),)]
WIDE = uniform(-30.0, 30.0)   # exp would overflow without the max shift

SPECS = [
    OpSpec("softmax", tf.nn.softmax, _like(np_softmax), SOFTMAX_SHAPES,
           FLOATS, grad=(0,), ops=["Softmax"], second_order=True),
    OpSpec("layer_norm_fused", _layer_norm, np_layer_norm,
           [((4, 6), (6,), (6,)), ((2, 3, 5), (5,), (5,)),
            ((7,), (7,), (7,)), ((0, 4), (4,), (4,))],
           FLOATS, grad=(0, 1, 2), ops=["_LayerNorm"], second_order=True,
           rtol=1e-5, atol=1e-5),
    OpSpec("layer_norm_grad_fused",
           lambda dy, x, g: _layer_norm_grad(dy, x, g)[0],
           lambda dy, x, g: np_layer_norm_grad(dy, x, g)[0],
           [((3, 5), (3, 5), (5,)), ((2, 2, 4), (2, 2, 4), (4,))],
           FLOATS, rtol=1e-5, atol=1e-5),
    OpSpec("layer_norm_grad_outputs", _grad_of_ln, np_grad_of_ln,
           [((3, 5), (3, 5), (5,)), ((2, 2, 4), (2, 2, 4), (4,)),
            ((6,), (6,), (6,))],
           FLOATS, grad=(0, 1, 2), ops=["_LayerNormGrad"],
           rtol=1e-5, atol=1e-5),
    OpSpec("softmax_grad_fused", _softmax_grad, np_softmax_grad,
           [((3, 5), (3, 5)), ((2, 3, 4), (2, 3, 4)), ((0, 3), (0, 3))],
           FLOATS, inputs=[lambda rng, s, d: np_softmax(
               rng.uniform(-2, 2, s)).astype(d), uniform()],
           grad=(0, 1), ops=["_SoftmaxGrad"], second_order=True),
    OpSpec("softmax_grad_axis1", lambda y, dy: _softmax_grad(y, dy, 1),
           lambda y, dy: np_softmax_grad(y, dy, 1),
           [((2, 3, 4), (2, 3, 4))], FLOATS, grad=(0, 1),
           ops=["_SoftmaxGrad"]),
    OpSpec("softmax_wide", tf.nn.softmax, _like(np_softmax), [((4, 6),)],
           FLOATS, inputs=[WIDE], ops=["Softmax"]),
    OpSpec("softmax_axis0", lambda x: tf.nn.softmax(x, axis=0),
           _like(lambda x: np_softmax(x, 0)), [((3, 5),), ((2, 3, 4),)],
           FLOATS, grad=(0,), ops=["Softmax"]),
    OpSpec("softmax_axis1_of3", lambda x: tf.nn.softmax(x, axis=1),
           _like(lambda x: np_softmax(x, 1)), [((2, 3, 4),)], FLOATS,
           grad=(0,), ops=["Softmax"]),
    OpSpec("math_softmax", tf.math.softmax, _like(np_softmax), [((3, 5),)],
           FLOATS, ops=["Softmax"]),
    OpSpec("log_softmax", tf.nn.log_softmax, _like(np_log_softmax),
           SOFTMAX_SHAPES, FLOATS, grad=(0,), ops=["LogSoftmax"],
           second_order=True),
    OpSpec("log_softmax_wide", tf.nn.log_softmax, _like(np_log_softmax),
           [((4, 6),)], FLOATS, inputs=[WIDE], rtol=1e-5, atol=1e-5,
           ops=["LogSoftmax"]),
    OpSpec("log_softmax_axis0", lambda x: tf.nn.log_softmax(x, axis=0),
           _like(lambda x: np_log_softmax(x, 0)), [((3, 5),)], FLOATS,
           grad=(0,), ops=["LogSoftmax"]),
    OpSpec("sparse_softmax_cross_entropy_with_logits",
           lambda logits, lab: tf.nn.sparse_softmax_cross_entropy_with_logits(
               labels=lab, logits=logits),
           _like(np_sparse_xent),
           [((4, NUM_CLASSES), (4,)), ((2, 3, NUM_CLASSES), (2, 3)),
            ((0, NUM_CLASSES), (0,))],
           FLOATS, inputs=[uniform(), labels], grad=(0,),
           ops=["SparseSoftmaxCrossEntropyWithLogits"], second_order=True),
    OpSpec("sparse_softmax_cross_entropy_wide",
           lambda logits, lab: tf.nn.sparse_softmax_cross_entropy_with_logits(
               labels=lab, logits=logits),
           _like(np_sparse_xent), [((6, NUM_CLASSES), (6,))], FLOATS,
           inputs=[WIDE, labels], rtol=1e-5, atol=1e-4,
           ops=["SparseSoftmaxCrossEntropyWithLogits"]),
    OpSpec("softmax_cross_entropy_with_logits",
           lambda lab, logits: tf.nn.softmax_cross_entropy_with_logits(
               labels=lab, logits=logits),
           _like(np_xent, 1),
           [((4, 5), (4, 5)), ((2, 3, 4), (2, 3, 4)), ((3, 1), (3, 1))],
           FLOATS, inputs=[distributions, uniform()], grad=(0, 1),
           ops=["SoftmaxCrossEntropyWithLogits"], second_order=True),
    OpSpec("softmax_cross_entropy_axis0",
           lambda lab, logits: tf.nn.softmax_cross_entropy_with_logits(
               labels=lab, logits=logits, axis=0),
           _like(lambda lab, lg: np_xent(lab, lg, 0), 1),
           [((5, 3), (5, 3))], FLOATS,
           inputs=[lambda r, s, d: np_softmax(r.uniform(-2, 2, s), 0)
                   .astype(d), uniform()],
           grad=(0, 1), ops=["SoftmaxCrossEntropyWithLogits"]),
    OpSpec("sigmoid_cross_entropy_with_logits",
           lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z,
                                                                logits=x),
           lambda z, x: (np.logaddexp(0, x) - x * z).astype(x.dtype),
           [((4, 3), (4, 3)), ((5,), (5,))], FLOATS,
           inputs=[uniform(0.0, 1.0), uniform(-30.0, 30.0)], grad=(0, 1)),
    OpSpec("bias_add", tf.nn.bias_add, np.add,
           [((2, 3), (3,)), ((2, 4, 3), (3,)), ((0, 3), (3,))],
           FLOATS + ("int32",), grad=(0, 1)),
]

if HAVE_RESHAPE:
    SPECS += [
        OpSpec("bias_add_nchw",
               lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
               lambda x, b: x + b.reshape(-1, 1, 1), [((2, 3, 4, 5), (3,))],
               FLOATS, grad=(0, 1)),
    ]
if HAVE_L2:
    SPECS += [
        OpSpec("l2_normalize", lambda x: tf.nn.l2_normalize(x, axis=-1),
               lambda x: np_l2_normalize(x, -1), [((3, 4),), ((5,),)],
               FLOATS, grad=(0,)),
        OpSpec("l2_normalize_all", tf.nn.l2_normalize,
               lambda x: np_l2_normalize(x, None), [((3, 4),)], FLOATS,
               grad=(0,)),
    ]
if HAVE_MOMENTS:
    SPECS += [
        OpSpec("moments", lambda x: tf.nn.moments(x, axes=[0]),
               lambda x: (x.mean(0), x.var(0)), [((6, 3),), ((4, 2, 3),)],
               FLOATS, grad=(0,)),
        OpSpec("moments_keepdims",
               lambda x: tf.nn.moments(x, axes=[0, 2], keepdims=True),
               lambda x: (x.mean((0, 2), keepdims=True),
                          x.var((0, 2), keepdims=True)), [((4, 2, 3),)],
               FLOATS, grad=(0,)),
    ]
