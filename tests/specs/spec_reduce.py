"""OpSpecs for the reduce family (csrc/ops/ops_reduce.def): reductions
with each axis/keepdims form, arg-reductions, scans, sort and top_k.

The NumPy references compute in float64 / int64 and cast back, so that
they are the exact answer rounded once (tfmini accumulates float32 in
double; NumPy's own float32 sums are less exact)."""
import warnings

import numpy as np

import tfmini as tf

from .opspec import FLOATS, NUMERIC, OpSpec, uniform

SMALL_INTS = ("int8", "uint8", "int16")
ALL_NUMERIC = NUMERIC + SMALL_INTS
# uint16/32/64 where their NumPy references need no signed keys.
WITH_U = ALL_NUMERIC + ("uint16", "uint32", "uint64")

# Shapes by what an axis form needs; each case is a tuple of one shape.
ANY_RANK = [((),), ((7,),), ((3, 4),), ((2, 3, 4),), ((0,),), ((2, 0, 3),),
            ((4, 1, 5),)]
RANK1 = [((7,),), ((3, 4),), ((2, 3, 4),), ((0,),), ((2, 0, 3),),
         ((3, 0),)]
RANK3 = [((2, 3, 4),), ((2, 0, 3),), ((3, 1, 5),), ((1, 4, 1),)]
RANK4 = [((2, 3, 4, 5),), ((3, 1, 2, 4),), ((2, 0, 2, 3),)]
# Big enough for the parallel paths: blocked rows, column chunks, tiles.
BIG = [((70001,),), ((3, 40000),), ((40000, 3),), ((300, 2100),),
       ((5, 9000, 3),)]


def _np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _wide(x):
    # Unsigned: uint64, which wraps as the dtype does and keeps uint64's
    # order (int64 would not).
    return x.astype({"f": np.float64, "u": np.uint64}.get(x.dtype.kind,
                                                         np.int64))


def _signed(x):
    """A key whose negation reverses x's order (x not uint64)."""
    return x.astype(np.float64 if x.dtype.kind == "f" else np.int64)


def _np_sum(x, axis, keepdims):
    return np.sum(_wide(x), axis=axis, keepdims=keepdims)


def _np_prod(x, axis, keepdims):
    return np.prod(_wide(x), axis=axis, keepdims=keepdims)


def _np_mean(x, axis, keepdims):
    if x.dtype.kind == "f":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.mean(_wide(x), axis=axis, keepdims=keepdims)
    s = np.sum(_wide(x), axis=axis, keepdims=keepdims)
    n = max(x.size // max(np.asarray(s).size, 1), 1) if x.size else 0
    if n == 0:
        return np.zeros_like(s)
    return np.sign(s) * (np.abs(s) // n)       # TF truncates toward zero


def _initial(x, largest):
    if x.dtype.kind == "f":
        return np.inf if largest else -np.inf
    info = np.iinfo(x.dtype)
    return info.max if largest else info.min


def _np_max(x, axis, keepdims):
    return np.max(x, axis=axis, keepdims=keepdims,
                  initial=_initial(x, False))


def _np_min(x, axis, keepdims):
    return np.min(x, axis=axis, keepdims=keepdims,
                  initial=_initial(x, True))


def _np_all(x, axis, keepdims):
    return np.all(x, axis=axis, keepdims=keepdims)


def _np_any(x, axis, keepdims):
    return np.any(x, axis=axis, keepdims=keepdims)


def _np_logsumexp(x, axis, keepdims):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        s = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        s = np.squeeze(s, axis=axis) if axis is not None else s.reshape(())
    return s


def _reduction(name, tf_fn, np_fn, axis, keepdims, shapes, dtypes, **kw):
    def fn(x):
        return tf_fn(x, axis=axis, keepdims=keepdims)

    def ref(x):
        return np.asarray(np_fn(x, _np_axis(axis), keepdims)).astype(x.dtype)

    return OpSpec(f"{name}[axis={axis},keepdims={keepdims}]", fn, ref,
                  shapes, dtypes, **kw)


# (public name, tfmini fn, reference, dtypes, TF op, differentiable, opts)
REDUCTIONS = [
    ("reduce_sum", tf.reduce_sum, _np_sum, WITH_U, "Sum", True, {}),
    ("reduce_mean", tf.reduce_mean, _np_mean, ALL_NUMERIC, "Mean", True, {}),
    ("reduce_max", tf.reduce_max, _np_max, WITH_U, "Max", True, {}),
    ("reduce_min", tf.reduce_min, _np_min, WITH_U, "Min", True, {}),
    ("reduce_prod", tf.reduce_prod, _np_prod, NUMERIC, "Prod", True,
     {"inputs": [uniform(0.5, 1.5)]}),
    ("reduce_all", tf.reduce_all, _np_all, ("bool",), "All", False, {}),
    ("reduce_any", tf.reduce_any, _np_any, ("bool",), "Any", False, {}),
    ("reduce_logsumexp", tf.reduce_logsumexp, _np_logsumexp, FLOATS,
     "ReduceLogSumExp", True, {}),
]

# (axis, keepdims, shapes)
AXIS_FORMS = [
    (None, False, ANY_RANK),
    (None, True, ANY_RANK),
    (-1, False, RANK1),
    (0, True, RANK1),
    ([1], False, RANK3),            # a middle axis: [A, R, B]
    ([0, 2], False, RANK3),         # split runs: gathered first
    ([-1, 0], True, RANK3),
    ([2, 0], False, RANK4),         # R K R K
    ([1, 3], True, RANK4),          # K R K R
    ([], False, [((2, 3),), ((),)]),  # reduces nothing
]

SPECS = []
for _name, _tf, _np, _dtypes, _op, _diff, _opts in REDUCTIONS:
    for _axis, _keep, _shapes in AXIS_FORMS:
        SPECS.append(_reduction(_name, _tf, _np, _axis, _keep, _shapes,
                                _dtypes, ops=[_op],
                                grad=(0,) if _diff else (), **_opts))
    if _op not in ("Prod",):
        for _axis in (None, 0, -1):
            SPECS.append(_reduction(
                _name + "_big", _tf, _np, _axis, False,
                [s for s in BIG if _axis is None or len(s[0]) > 0],
                tuple(d for d in _dtypes if d in ("float32", "int32",
                                                  "bool")),
                ops=[_op], rtol=1e-5, atol=1e-4))

# float16 goes through float32 in the dispatcher.
SPECS += [
    _reduction("reduce_sum_f16", tf.reduce_sum, _np_sum, -1, False,
               [((3, 50),)], ("float16",), ops=["Sum"], rtol=1e-3,
               atol=1e-2),
    _reduction("reduce_max_f16", tf.reduce_max, _np_max, None, False,
               [((3, 50),)], ("float16",), ops=["Max"]),
    # Integer products wrap like TF's integer arithmetic.
    _reduction("reduce_prod_wrap", tf.reduce_prod, _np_prod, 0, False,
               [((60, 3),)], ("int8", "int32", "int64"), ops=["Prod"],
               inputs=[uniform(-9, 9)]),
    _reduction("reduce_sum_wrap", tf.reduce_sum, _np_sum, None, False,
               [((500,),)], ("int8", "uint8"), ops=["Sum"],
               inputs=[uniform(-120, 120)]),
]


def _np_variance(x, axis, keepdims):
    return np.var(x.astype(np.float64), axis=axis, keepdims=keepdims)


for _axis, _keep, _shapes in [(None, False, [((7,),), ((3, 4),)]),
                              (0, True, [((3, 4),), ((2, 3, 4),)])]:
    SPECS.append(_reduction("reduce_variance", tf.math.reduce_variance,
                            _np_variance, _axis, _keep, _shapes, FLOATS,
                            ops=["Mean"], grad=(0,)))


# ---- ArgMax / ArgMin --------------------------------------------------------

def _arg(name, tf_fn, np_fn, axis, output_type, shapes, dtypes, **kw):
    def fn(x):
        return tf_fn(x, axis=axis, output_type=output_type)

    def ref(x):
        return np_fn(x, axis=0 if axis is None else axis).astype(
            output_type.as_numpy_dtype)

    return OpSpec(f"{name}[axis={axis},{output_type.name}]", fn, ref,
                  shapes, dtypes, **kw)


ARG_SHAPES = [((7,),), ((3, 4),), ((2, 3, 4),), ((3, 0),)]
# Small integers: many ties, which must give the first index.
TIES = [uniform(-2, 2)]
for _name, _tf, _np, _op in [("argmax", tf.argmax, np.argmax, "ArgMax"),
                             ("argmin", tf.argmin, np.argmin, "ArgMin")]:
    SPECS += [
        _arg(_name, _tf, _np, None, tf.int64, ARG_SHAPES, WITH_U,
             ops=[_op], inputs=TIES),
        _arg(_name, _tf, _np, -1, tf.int32, [s for s in ARG_SHAPES
                                             if s[0][-1]], NUMERIC,
             ops=[_op], inputs=TIES),
        _arg(_name, _tf, _np, 1, tf.int64, [((2, 3, 4),), ((4, 5),),
                                            ((3, 2000, 3),)],
             NUMERIC, ops=[_op], inputs=TIES),
        _arg(_name + "_big", _tf, _np, 0, tf.int64,
             [((70001,),), ((40000, 3),)], ("float32", "int32"), ops=[_op]),
    ]


# ---- Cumsum / Cumprod -------------------------------------------------------

def _np_scan(x, axis, exclusive, reverse, prod):
    y = _wide(x)
    if reverse:
        y = np.flip(y, axis)
    c = np.cumprod(y, axis) if prod else np.cumsum(y, axis)
    if exclusive:
        shape = list(c.shape)
        shape[axis] = 1
        first = np.full(shape, 1 if prod else 0, c.dtype)
        c = np.concatenate([first, c], axis)
        c = np.take(c, np.arange(y.shape[axis]), axis)
    if reverse:
        c = np.flip(c, axis)
    return c.astype(x.dtype)


def _scan(name, tf_fn, prod, axis, exclusive, reverse, shapes, dtypes,
          **kw):
    def fn(x):
        return tf_fn(x, axis=axis, exclusive=exclusive, reverse=reverse)

    def ref(x):
        return _np_scan(x, axis, exclusive, reverse, prod)

    return OpSpec(f"{name}[axis={axis},exclusive={exclusive},"
                  f"reverse={reverse}]", fn, ref, shapes, dtypes, **kw)


SCAN_SHAPES = [((6,),), ((3, 4),), ((2, 3, 4),), ((0,),), ((2, 0, 3),)]
for _axis in (0, -1):
    for _excl in (False, True):
        for _rev in (False, True):
            SPECS.append(_scan("cumsum", tf.cumsum, False, _axis, _excl,
                               _rev, SCAN_SHAPES, NUMERIC, ops=["Cumsum"],
                               grad=(0,)))
            SPECS.append(_scan("cumprod", tf.math.cumprod, True, _axis,
                               _excl, _rev, SCAN_SHAPES, NUMERIC,
                               ops=["Cumprod"], grad=(0,),
                               inputs=[uniform(0.5, 1.5)]))
SPECS += [
    _scan("cumsum_big", tf.cumsum, False, 0, False, False,
          [((70001,),), ((40000, 3),), ((3, 3000, 5),)], ("float32",
                                                          "int64"),
          ops=["Cumsum"], rtol=1e-5, atol=1e-3),
    _scan("cumsum_small_ints", tf.cumsum, False, -1, True, True,
          [((3, 40),)], SMALL_INTS, ops=["Cumsum"],
          inputs=[uniform(0, 100)]),
    _scan("cumsum_unsigned", tf.cumsum, False, 0, False, False,
          [((3, 40),)], ("uint16", "uint32", "uint64"), ops=["Cumsum"],
          inputs=[uniform(-100, 100)]),
]


# ---- Sort / ArgSort / TopKV2 -----------------------------------------------

def _np_sort(x, axis, desc):
    s = np.sort(x, axis=axis, kind="stable")
    return np.flip(s, axis) if desc else s


def _np_argsort(x, axis, desc):
    # Stable in both directions: descending = ascending order of -x.
    key = -_signed(x) if desc else x
    return np.argsort(key, axis=axis, kind="stable").astype(np.int32)


def _sorting(name, tf_fn, np_fn, axis, direction, shapes, dtypes, **kw):
    desc = direction == "DESCENDING"

    def fn(x):
        return tf_fn(x, axis=axis, direction=direction)

    def ref(x):
        return np_fn(x, axis, desc)

    return OpSpec(f"{name}[axis={axis},{direction}]", fn, ref, shapes,
                  dtypes, **kw)


SORT_SHAPES = [((7,),), ((3, 4),), ((2, 3, 4),), ((0,),), ((2, 0, 3),),
               ((3, 300),)]
for _axis in (-1, 0, 1):
    _shapes = [s for s in SORT_SHAPES if len(s[0]) > _axis]
    for _dir in ("ASCENDING", "DESCENDING"):
        SPECS.append(_sorting("sort", tf.sort, _np_sort, _axis, _dir,
                              _shapes, WITH_U, ops=["Sort"],
                              grad=(0,)))
        SPECS.append(_sorting("argsort", tf.argsort, _np_argsort, _axis,
                              _dir, _shapes, ALL_NUMERIC, ops=["Sort"],
                              inputs=TIES))
SPECS.append(_sorting("sort_big", tf.sort, _np_sort, 0, "ASCENDING",
                      [((50000,),), ((2000, 30),)], ("float32", "int64"),
                      ops=["Sort"]))


def _np_top_k(x, k):
    idx = np.argsort(-_signed(x), axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


def _top_k(k, shapes, dtypes, values_only=False, **kw):
    def fn(x):
        r = tf.math.top_k(x, k=k)
        return r.values if values_only else (r.values, r.indices)

    def ref(x):
        v, i = _np_top_k(x, k)
        return v if values_only else (v, i)

    name = "top_k_values" if values_only else "top_k"
    return OpSpec(f"{name}[k={k}]", fn, ref, shapes, dtypes, **kw)


SPECS += [
    _top_k(1, [((7,),), ((3, 4),), ((2, 3, 4),), ((0, 5),)], ALL_NUMERIC,
           ops=["TopKV2"], inputs=TIES),
    _top_k(3, [((7,),), ((3, 4),), ((2, 3, 40),), ((200, 100),)], NUMERIC,
           ops=["TopKV2"], inputs=TIES),
    _top_k(4, [((4,),), ((2, 4),)], NUMERIC, ops=["TopKV2"], inputs=TIES),
    _top_k(0, [((5,),), ((2, 3),)], NUMERIC, ops=["TopKV2"]),
    _top_k(40, [((3, 50),), ((2, 1000),)], NUMERIC, ops=["TopKV2"],
           inputs=TIES),
    _top_k(2, [((7,),), ((3, 4),)], FLOATS, values_only=True,
           ops=["TopKV2"], grad=(0,)),
]
