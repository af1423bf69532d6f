"""Every elementwise formula (csrc/kernels/ew_formulas.def, Note
[Elementwise formulas]) run through the native fused path and through its
CPU kernel, on edge values: bit for bit where the formula calls only
exactly rounded functions, else within libmvec's documented 4 ulp (the
kernel and the compiled loop may split the range into vector and scalar
calls differently). The table itself says which elementwise ops have no
native form; this test only reads it."""
import re
from pathlib import Path

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import TABLE

ROOT = Path(__file__).resolve().parents[1]
BIG = (64, 1031)        # 65,984 elements: over the native threshold
ULP = 4                 # libmvec's bound (kernels/cpu/mvec.h)
ELEMENTWISE = 1         # TFM_OPF_ELEMENTWISE


def _strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def _calls(text):
    """(macro, [args]) for each top-level NAME(...) in text."""
    out = []
    for m in re.finditer(r"^(\w+)\(", text, re.M):
        depth, i, args, start = 1, m.end(), [], m.end()
        while depth:
            c = text[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "," and depth == 1:
                args.append(text[start:i].strip())
                start = i + 1
            i += 1
        args.append(text[start:i - 1].strip())
        out.append((m.group(1), args))
    return out


def _formula_rows():
    text = _strip_comments((ROOT / "csrc/kernels/ew_formulas.def")
                           .read_text())
    return [(m, a) for m, a in _calls(text) if m in ("EW", "EW_NONE")]


def _op_names():
    """enum token -> TF name, from the op table's .def rows."""
    names = {}
    for p in (ROOT / "csrc/ops").glob("ops_*.def"):
        for m, a in _calls(_strip_comments(p.read_text())):
            if m == "X":
                names[a[0]] = a[1].strip('"')
    return names


def _mvec_functions():
    text = (ROOT / "csrc/kernels/cpu/mvec.h").read_text()
    return set(re.findall(r"X\((?:float|double), (\w+), \d\)", text))


ROWS = _formula_rows()
NAMES = _op_names()
NATIVE = {NAMES[a[0]]: a for m, a in ROWS if m == "EW"}
NO_NATIVE = {NAMES[a[0]] for m, a in ROWS if m == "EW_NONE"}
MVEC = _mvec_functions()
INFO = {row[0]: row for row in TABLE}


def test_every_elementwise_op_has_exactly_one_row():
    listed = [NAMES[a[0]] for _, a in ROWS]
    assert len(listed) == len(set(listed))
    elementwise = {name for name, _, _, flags, _ in TABLE
                   if flags & ELEMENTWISE}
    assert set(listed) == elementwise


def _edges(dtype):
    fi = np.finfo(dtype)
    e = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0,
         -2.0, 3.0, -3.0, 6.0, 7.5, 0.999, -0.999, 1.001, 1e-3, -1e-3,
         float(fi.tiny), -float(fi.tiny), float(fi.smallest_subnormal),
         -float(fi.smallest_subnormal), float(fi.max), -float(fi.max), 20.0,
         -20.0, 88.5, -88.5, 710.0, -710.0, 1e10, -1e10, np.pi, -np.pi]
    return np.array(e, dtype)


def _inputs(dtype, nin, seed=0):
    """nin arrays of shape BIG: every pair of edge values, then random
    values over many magnitudes and random integers."""
    e = _edges(dtype)
    if nin == 1:
        heads = [e]
    else:
        heads = [np.repeat(e, len(e)), np.tile(e, len(e))]
    rng = np.random.default_rng(seed)
    n = int(np.prod(BIG))
    out = []
    for h in heads:
        k = n - len(h)
        mag = 10.0 ** rng.uniform(-4, 4, k // 2)
        r = np.concatenate([rng.choice([-1, 1], k // 2) * mag,
                            rng.integers(-9, 10, k - k // 2)])
        out.append(np.concatenate([h, r.astype(dtype)]).reshape(BIG))
    return out


def _variants(name):
    """(label, call(inputs) -> tensor) for each attribute setting."""
    op_id, nin = TABLE.index(INFO[name]), INFO[name][1]
    if name == "Cast":
        return [("", None)]
    attrs = {"LeakyRelu": [dict(f=(0.2,))],
             "Gelu": [dict(i=(0,)), dict(i=(1,))]}.get(name, [{}])
    return [(str(a), lambda ins, a=a: _C.call(op_id, tuple(ins[:nin]), **a))
            for a in attrs]


def _exact(row):
    text = " ".join(row[2:])
    return not any(re.search(r"\b%s\s*\(" % f, text) for f in MVEC)


def _ordered(a):
    """Float bits as integers that order like the floats."""
    i = a.view(np.int32 if a.dtype == np.float32 else np.int64)
    i = i.astype(object).reshape(-1)
    top = 1 << (8 * a.dtype.itemsize - 1)
    return [v if v >= 0 else -top - v for v in i]


def _compare(got, want, exact, what):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    g, w = got.reshape(-1), want.reshape(-1)
    differ = g.view(np.uint8).reshape(len(g), -1) != \
        w.view(np.uint8).reshape(len(w), -1)
    differ = differ.any(axis=1) & ~(np.isnan(g) & np.isnan(w))
    if not differ.any():
        return
    idx = np.flatnonzero(differ)
    assert not exact, (what, idx[:5], g[idx[:5]], w[idx[:5]])
    og, ow = _ordered(g[idx]), _ordered(w[idx])
    worst = max(abs(a - b) for a, b in zip(og, ow))
    assert worst <= ULP, (what, worst, g[idx[:5]], w[idx[:5]])


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TFMINI_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(NATIVE))
def test_native_matches_kernel(name, dtype):
    row = NATIVE[name]
    nin = INFO[name][1]
    ins = [tf.constant(a) for a in _inputs(dtype, nin)]
    exact = _exact(row)
    if name == "Cast":
        other = tf.float64 if dtype == np.float32 else tf.float32
        variants = [("", lambda ins: tf.cast(ins[0], other))]
    else:
        variants = _variants(name)
    for label, op in variants:
        def f(s, *ins):
            # The Mul by a scalar input (exact, and not simplified away)
            # gives fusion a second op to join.
            return op(ins) * s
        fn = tf.function(f)
        s = tf.constant(np.ones((), op(ins).dtype.as_numpy_dtype))
        with np.errstate(all="ignore"):
            got = fn(s, *ins).numpy()
            assert fn.get_concrete_function(s, *ins)._native_steps == 1, \
                (name, label)
            want = (op(ins) * s).numpy()            # eager: the kernels
        _compare(got, want, exact, (name, label, dtype.__name__))


def _no_native_inputs(name):
    nin = INFO[name][1]
    for dtype in (np.float32, np.bool_, np.int32, np.complex64):
        ins = [tf.constant(np.ones(BIG, dtype)) for _ in range(nin)]
        try:
            _C.call(TABLE.index(INFO[name]), tuple(ins))
        except Exception:
            continue
        return ins
    raise AssertionError(name)


@pytest.mark.parametrize("name", sorted(NO_NATIVE))
def test_ops_the_table_lists_without_formula_are_not_compiled(name):
    op_id = TABLE.index(INFO[name])
    ins = _no_native_inputs(name)
    fn = tf.function(lambda *ins: _C.call(op_id, ins))
    want = _C.call(op_id, tuple(ins)).numpy()
    np.testing.assert_array_equal(fn(*ins).numpy(), want)
    assert fn.get_concrete_function(*ins)._native_steps == 0
