"""Gradients of every differentiable op against central finite differences
in float64, driven by the OpSpec table (tests/specs: rows with grad=...),
plus second-order checks for the rows marked OpSpec.second_order.

The tape's gradient of sum_k <w_k, out_k> (random weights w_k, passed as
output_gradients) is compared with (L(x + h e) - L(x - h e)) / 2h for
every element of every input listed in the row's grad indices."""
import numpy as np
import pytest

import tfmini as tf
from specs import SPECS
from specs.opspec import OpSpec, away_from_zero, positive, uniform  # noqa

# Gradient-only rows for ops whose table row has no grad indices (or no
# float64 dtype); same fields as tests/specs.
EXTRA_SPECS = [
    OpSpec("negative", tf.negative if hasattr(tf, "negative")
           else (lambda x: -x), np.negative, [((2, 3),), ((),)],
           grad=(0,), ops=["Neg"], second_order=True),
    # float64 -> float64 keeps finite differences exact; float32 paths
    # are checked in test_tape.py.
    OpSpec("cast_f64", lambda x: tf.cast(x, tf.float64), lambda x: x,
           [((2, 3),)], grad=(0,), ops=["Cast"]),
]

# csrc/ops/op.h's TFM_OPF_NONDIFF and TFM_OPF_GRAPH_ONLY.
_NONDIFF, _GRAPH_ONLY = 1 << 2, 1 << 6
ALL_SPECS = list(SPECS) + EXTRA_SPECS
GRAD_SPECS = [s for s in ALL_SPECS if s.grad and "float64" in s.dtypes]
CASES = [(s, shapes) for s in GRAD_SPECS for shapes in s.shapes]
SECOND_CASES = [(s, shapes) for s, shapes in CASES if s.second_order]


def _case_id(case):
    spec, shapes = case
    return spec.name + "-" + "x".join(
        "(" + ",".join(map(str, s)) + ")" for s in shapes)


def _float_outputs(out):
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if o.dtype.is_floating]


def _weights(rng, outs):
    return [rng.uniform(0.5, 1.5, size=o.shape.as_list()) for o in outs]


def _loss(spec, xs, ws):
    outs = _float_outputs(spec.fn(*[tf.constant(x) for x in xs]))
    return sum(float(np.sum(w * o.numpy())) for w, o in zip(ws, outs))


def _tape_grads(spec, xs, ws):
    ts = [tf.constant(x) for x in xs]
    srcs = [ts[i] for i in spec.grad]
    with tf.GradientTape() as t:
        t.watch(srcs)
        outs = _float_outputs(spec.fn(*ts))
    return t.gradient(outs, srcs, output_gradients=[
        tf.constant(w) for w in ws])


def _numeric(f, xs, i, h):
    g = np.zeros_like(xs[i])
    for k in range(xs[i].size):
        xp = [x.copy() for x in xs]
        xm = [x.copy() for x in xs]
        xp[i].flat[k] += h
        xm[i].flat[k] -= h
        g.flat[k] = (f(xp) - f(xm)) / (2 * h)
    return g


def _inputs(spec, shapes, seed=0):
    rng = np.random.default_rng(seed)
    xs = [np.asarray(x, np.float64) if np.asarray(x).dtype.kind == "f"
          else np.asarray(x)
          for x in spec.make_inputs(rng, shapes, "float64")]
    return rng, xs


def _check(spec, got, want, what):
    if got is None:
        assert not np.any(want), f"{spec.name}: {what} is None but the " \
            f"finite differences are {want}"
        return
    g = got.numpy()
    assert g.shape == want.shape, (what, g.shape, want.shape)
    np.testing.assert_allclose(g, want, rtol=spec.grad_rtol,
                               atol=spec.grad_atol, err_msg=what)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_gradient_matches_finite_differences(case):
    spec, shapes = case
    rng, xs = _inputs(spec, shapes)
    outs = _float_outputs(spec.fn(*[tf.constant(x) for x in xs]))
    ws = _weights(rng, outs)
    grads = _tape_grads(spec, xs, ws)
    for i, g in zip(spec.grad, grads):
        want = _numeric(lambda v: _loss(spec, v, ws), xs, i, 1e-6)
        if g is not None:
            assert g.dtype == tf.float64
        _check(spec, g, want, f"d/d(input {i})")


# Every rule again with every tensor it does not read kept shape-only on
# the tape (Note [Saved tensors] in csrc/ops/grads.h), so that a wrong
# entry in the saves table fails here. One shape case per spec.
STUB_CASES = [(s, s.shapes[0]) for s in GRAD_SPECS]


@pytest.fixture
def stub_everything():
    tf._C.set_tape_stub_min(0)
    yield
    tf._C.set_tape_stub_min(1024)


@pytest.mark.parametrize("case", STUB_CASES,
                         ids=[_case_id(c) for c in STUB_CASES])
def test_gradient_with_shape_only_saved_tensors(case, stub_everything):
    test_gradient_matches_finite_differences(case)


@pytest.mark.parametrize("case", SECOND_CASES,
                         ids=[_case_id(c) for c in SECOND_CASES])
def test_second_order_matches_finite_differences(case):
    spec, shapes = case
    rng, xs = _inputs(spec, shapes, seed=1)
    outs = _float_outputs(spec.fn(*[tf.constant(x) for x in xs]))
    ws = _weights(rng, outs)
    us = [rng.uniform(0.5, 1.5, size=xs[i].shape) for i in spec.grad]

    def first_order_dot(vals):
        # <u, analytic gradient>: checked against finite differences
        # of the (already checked) first-order gradients.
        gs = _tape_grads(spec, vals, ws)
        return sum(0.0 if g is None else float(np.sum(u * g.numpy()))
                   for u, g in zip(us, gs))

    ts = [tf.constant(x) for x in xs]
    srcs = [ts[i] for i in spec.grad]
    with tf.GradientTape() as outer:
        outer.watch(srcs)
        with tf.GradientTape() as inner:
            inner.watch(srcs)
            o = _float_outputs(spec.fn(*ts))
        gs = inner.gradient(o, srcs, output_gradients=[
            tf.constant(w) for w in ws])
        pairs = [(g, u) for g, u in zip(gs, us) if g is not None]
    if not pairs:
        return
    second = outer.gradient([g for g, _ in pairs], srcs,
                            output_gradients=[tf.constant(u)
                                              for _, u in pairs])
    for i, h in zip(spec.grad, second):
        want = _numeric(first_order_dot, xs, i, 1e-5)
        _check(spec, h, want, f"second order, d/d(input {i})")


def test_second_order_rows_are_checked():
    # A second_order row that GRAD_SPECS drops (no grad=..., no float64)
    # would be checked by nothing.
    unchecked = [s.name for s in ALL_SPECS if s.second_order
                 and not (s.grad and "float64" in s.dtypes)]
    assert not unchecked, f"second_order rows without a float64 " \
        f"gradient check: {unchecked}"


def test_every_differentiable_op_has_a_gradient():
    # The rule grad_table.c's compile-time checks enforce, by name: an op
    # has a rule (a G line in grads.def) exactly when its row is neither
    # NONDIFF nor GRAPH_ONLY (never on a tape).
    wrong = [name for name, _, _, flags, has_grad in tf._C.op_table()
             if has_grad == bool(flags & (_NONDIFF | _GRAPH_ONLY))]
    assert not wrong, f"ops whose gradient rule disagrees with their " \
        f"NONDIFF/GRAPH_ONLY flags: {wrong}"
    graph_only = {name for name, _, _, flags, _ in tf._C.op_table()
                  if flags & _GRAPH_ONLY}
    assert {"Placeholder", "Const", "If", "While",
            "_FusedElementwise"} <= graph_only


def test_every_gradient_rule_is_checked():
    covered = {op for s in GRAD_SPECS for op in s.ops}
    # Inference-only ops whose rule only raises (tests/test_lite.py,
    # tests/test_quant_hybrid.py).
    covered |= {"HybridFullyConnected", "HybridFullyConnectedPacked",
                "QuantizedFullyConnectedPacked", "QuantizedConv2DPacked",
                "HybridConv2DPacked"}
    unchecked = [name for name, _, _, _, has_grad in tf._C.op_table()
                 if has_grad and name not in covered]
    assert not unchecked, f"gradient rules without a finite-difference " \
        f"check (add grad=... to their OpSpec): {unchecked}"


def test_nondifferentiable_ops_give_none():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.cast(tf.cast(x, tf.int32), tf.float32)
    assert t.gradient(y, x) is None
