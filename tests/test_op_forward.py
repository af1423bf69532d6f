"""Every OpSpec against NumPy, over its shapes and dtypes."""
import numpy as np
import pytest

import tfmini as tf
from specs import SPECS

CASES = [(spec, shapes, dtype)
         for spec in SPECS for shapes in spec.shapes for dtype in spec.dtypes]


def _id(case):
    spec, shapes, dtype = case
    return f"{spec.name}-{dtype}-" + "x".join(
        "(" + ",".join(map(str, s)) + ")" for s in shapes)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_forward_matches_numpy(case):
    spec, shapes, dtype = case
    rng = np.random.default_rng(0)
    xs = spec.make_inputs(rng, shapes, dtype)
    want = spec.ref(*xs)
    got = spec.fn(*[tf.constant(x) for x in xs])
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        pairs = list(zip(got, want))
    else:
        pairs = [(got, want)]
    for g, w in pairs:
        w = np.asarray(w)
        g_np = g.numpy()
        if isinstance(g_np, bytes):     # a string scalar: bytes, as TF
            g_np = np.asarray(g_np, dtype=object)
        assert g_np.shape == w.shape, (g_np.shape, w.shape)
        assert g.shape == w.shape
        assert g_np.dtype == w.dtype, (g_np.dtype, w.dtype)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g_np, w, rtol=spec.rtol,
                                       atol=spec.atol)
        else:
            np.testing.assert_array_equal(g_np, w)
