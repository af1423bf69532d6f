"""API fuzz families of the eager surfaces (tests/api_fuzz.py runs them):
"weak", WeakTensor arithmetic in the "all" / "safe" promotion modes, and
"fastpath", the eager fast paths _C.call and _C.getitem (with
tensor.__getitem__, which takes _C.getitem first) fed odd index objects
and arguments.

A case returns (description, run); run() returns or raises, and checks
its own result: the dtype and weakness against promotion.py's table
(itself checked against TF 2.21 by tests/test_weak_tensor.py), values
against NumPy in the result dtype, an index against NumPy's indexing
where NumPy and TF agree. A wrong result is an AssertionError, which the
driver reports as a problem with the case's seed."""
import operator

import numpy as np

# ---- weak tensors ----------------------------------------------------------

WEAK_DTYPES = ["float16", "float32", "float64", "bfloat16", "int8", "uint8",
               "int16", "int32", "int64", "bool", "complex64"]
PY_VALUES = [0, 1, -3, 7, 2 ** 31 - 1, 2 ** 40, -2 ** 63, 2 ** 70, 0.5,
             -2.25, 1e30, float("nan"), float("inf"), -0.0, True, False,
             1.5j, [1, 2], [0.5, -1.0], [], [[1], [2]], [1, 2.5]]
SHAPES = [[], [0], [1], [3], [2, 1], [2, 0], [1, 3]]
BIN_OPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
           "tf.add", "tf.subtract", "tf.multiply", "tf.math.truediv",
           "tf.math.divide", "tf.maximum", "tf.matmul", "eq", "lt"]
# The ops whose result is weak where the promotion is (weak_tensor.py).
KEEPS_WEAK = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
              "tf.add", "tf.subtract", "tf.multiply", "tf.math.truediv",
              "tf.math.divide", "tf.matmul"}
UNARY_OPS = ["neg", "abs", "tf.abs", "tf.square", "tf.exp", "tf.sqrt",
             "tf.reduce_sum", "tf.reduce_max", "tf.reshape", "tf.identity",
             "tf.zeros_like", "tf.ones_like", "tf.cast", "tf.nn.relu",
             "tf.sign", "tf.reduce_mean", "tf.expand_dims",
             "tf.convert_to_tensor", "index0"]


def _values(np_dtype, shape, rng):
    n = int(np.prod(shape, dtype=np.int64))
    if np_dtype == np.bool_:
        return (np.arange(n) % 2 == 0).reshape(shape)
    pool = [0, 1, 2, -1, 3, 5, 100, -7]
    if np.dtype(np_dtype).kind == "f" or np.dtype(np_dtype).kind == "c":
        pool += [0.5, -2.5, float("nan"), float("inf"), 1e4]
    vals = [rng.choice(pool) for _ in range(n)]
    with np.errstate(all="ignore"):
        return np.array(vals, dtype=np.float64).astype(np_dtype) \
            .reshape(shape) if np.dtype(np_dtype).kind != "u" else \
            np.array([abs(int(v)) if v == v and abs(v) != float("inf")
                      else 0 for v in vals]).astype(np_dtype).reshape(shape)


def weak_operand(tf, np, rng):
    """(description, value): a Python value, a weak tensor (tf.constant
    of a Python value), a strong tensor, a NumPy value or a Variable."""
    kind = rng.random()
    if kind < 0.3:
        v = rng.choice(PY_VALUES)
        return f"py {v!r}", v
    if kind < 0.55:
        v = rng.choice([1, 2.5, -3, [1, 2], [0.5, 1.5], [[1.5]], [], 0.0,
                        float("nan"), 2 ** 40, True, [True, False]])
        return f"weak({v!r})", tf.constant(v)
    if kind < 0.9:
        dt = rng.choice(WEAK_DTYPES)
        shape = rng.choice(SHAPES)
        npdt = tf.as_dtype(dt).as_numpy_dtype
        return f"T({dt}{shape})", tf.constant(_values(npdt, shape, rng),
                                              dtype=dt)
    if kind < 0.95:
        dt = rng.choice(["float16", "int8", "uint8", "float64", "int64"])
        return f"np.{dt}(3)", np.dtype(dt).type(3)
    dt = rng.choice(["float16", "float32", "int32"])
    return f"Variable({dt})", tf.Variable(tf.ones([2], dt))


def _binary(tf, name):
    ops = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "truediv": operator.truediv, "floordiv": operator.floordiv,
           "mod": operator.mod, "pow": operator.pow, "eq": operator.eq,
           "lt": operator.lt}
    if name in ops:
        return ops[name]
    mod = tf
    for part in name.split(".")[1:-1]:
        mod = getattr(mod, part)
    return getattr(mod, name.split(".")[-1])


def _as_np(tf, v):
    if hasattr(v, "numpy"):
        return np.asarray(v.numpy())
    return np.asarray(v)


def _np_binary(name, a, b):
    with np.errstate(all="ignore"):
        if name in ("add", "tf.add"):
            return a + b
        if name in ("sub", "tf.subtract"):
            return a - b
        if name in ("mul", "tf.multiply"):
            return a * b
        if name == "tf.maximum":
            return np.maximum(a, b)
    return None


def _check_weak_result(tf, np, mode, name, x, y, out, P, W):
    """out of name(x, y) against the promotion table and NumPy."""
    try:
        want_dt, want_weak = P.result_pair(mode, x, y)
    except (TypeError, ValueError):
        return
    if name in ("eq", "lt"):
        want_dt, want_weak = tf.bool, False
    if not hasattr(out, "dtype"):
        raise AssertionError(f"{name}: {type(out).__name__}, not a tensor")
    if name in ("truediv", "tf.math.truediv", "tf.math.divide") and \
            want_dt.is_integer:
        # Integers divide into a float (int8/int16 -> float32, wider
        # ones float64), as tf.math.truediv does.
        assert out.dtype.is_floating, f"{name}: {out.dtype.name}"
    else:
        assert out.dtype == want_dt, (f"{name}: dtype {out.dtype.name}, "
                                      f"table says {want_dt.name}")
    weak = W.is_weak(out)
    if name in KEEPS_WEAK:
        assert weak == want_weak, (f"{name}: weak={weak}, table says "
                                   f"{want_weak}")
    elif name in ("eq", "lt", "tf.maximum"):
        assert not weak, f"{name}: a weak result"
    if name not in ("add", "tf.add", "sub", "tf.subtract", "mul",
                    "tf.multiply", "tf.maximum") or \
            want_dt.name in ("bfloat16", "bool"):
        return
    npdt = want_dt.as_numpy_dtype
    with np.errstate(all="ignore"):
        a = _as_np(tf, x).astype(npdt)
        b = _as_np(tf, y).astype(npdt)
    if (np.dtype(npdt).kind in "iu" and
            not (_exact_int(x, npdt) and _exact_int(y, npdt))):
        return          # Python ints outside the dtype: TF wraps or refuses
    want = _np_binary(name, a, b)
    got = out.numpy()
    assert got.shape == np.broadcast_shapes(a.shape, b.shape), \
        (got.shape, a.shape, b.shape)
    if np.dtype(npdt).kind in "fc":
        tol = {2: 1e-3, 4: 1e-6, 8: 1e-12, 16: 1e-12}[np.dtype(npdt).itemsize]
        np.testing.assert_allclose(got, want, rtol=tol, atol=0,
                                   equal_nan=True)
    else:
        assert np.array_equal(got, want), (got, want)


def _exact_int(v, npdt):
    """A value whose integers npdt holds (tensors always do)."""
    if hasattr(v, "dtype"):
        return True
    info = np.iinfo(npdt)
    flat = np.asarray(v, dtype=object).reshape(-1)
    return all(isinstance(e, (int, np.integer)) and
               info.min <= int(e) <= info.max for e in flat)


def _unary(tf, name, x):
    if name == "neg":
        return -x
    if name == "abs":
        return abs(x)
    if name == "tf.reshape":
        return tf.reshape(x, [-1])
    if name == "tf.cast":
        return tf.cast(x, tf.float16)
    if name == "tf.expand_dims":
        return tf.expand_dims(x, 0)
    if name == "index0":
        return x[0]
    return _binary(tf, name)(x)


def _tf_overflow(run):
    """run, where TF's own OverflowError (a Python int past the weak
    dtype: "Python int ... too large to convert to np.int32", word for
    word TF 2.21's) is an outcome like an error."""
    def wrapped():
        try:
            return run()
        except OverflowError as e:
            if "too large to convert" not in str(e):
                raise
            return None
    return wrapped


_SHARED = {}


def _traced_like_eager(tf, W, mode, name, fn, args):
    """fn(*args) through one tf.function per (mode, op) that every case
    shares, so its cache sees weak, strong and Python arguments in turn
    (function_key.c keys weakness apart): the result must be the eager
    one, dtype, weakness and values."""
    key = (mode, name)
    if key not in _SHARED:
        _SHARED[key] = tf.function(fn, autograph=False)
    try:
        want = fn(*args)
    except Exception:           # noqa: BLE001 (the traced call decides)
        want = None
    got = _SHARED[key](*args)
    if want is None or not hasattr(want, "dtype"):
        return got
    assert got.dtype == want.dtype, (got.dtype.name, want.dtype.name)
    assert W.is_weak(got) == W.is_weak(want), \
        f"traced weak={W.is_weak(got)}, eager weak={W.is_weak(want)}"
    g, w = np.asarray(got.numpy()), np.asarray(want.numpy())
    assert g.shape == w.shape, (g.shape, w.shape)
    if w.dtype.kind in "iub":
        assert np.array_equal(g, w), (g, w)
    else:       # floats, complex, and bfloat16 (NumPy kind "V")
        wide = np.complex128 if w.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(g.astype(wide), w.astype(wide),
                                   rtol=1e-6, equal_nan=True)
    return got


def weak_case(tf, np, rng):
    from tfmini.experimental.numpy import promotion as P
    from tfmini.experimental.numpy import weak_tensor as W
    tnp = tf.experimental.numpy
    mode = rng.choice(["all", "all", "safe"])
    tnp.experimental_enable_numpy_behavior(dtype_conversion_mode=mode)
    traced = rng.random() < 0.3
    if rng.random() < 0.7:
        name = rng.choice(BIN_OPS)
        (dx, x), (dy, y) = weak_operand(tf, np, rng), weak_operand(tf, np,
                                                                   rng)
        if not name.startswith("tf.") and not isinstance(x, tf.Tensor) \
                and not isinstance(y, tf.Tensor):
            dx, x = "weak(2.5)", tf.constant(2.5)    # an operator needs one
        desc = f"[{mode}] {name}({dx}, {dy})"
        fn = _binary(tf, name)

        def run():
            tnp.experimental_enable_numpy_behavior(
                dtype_conversion_mode=mode)
            if traced:
                return _traced_like_eager(tf, W, mode, name, fn, (x, y))
            out = fn(x, y)
            if not isinstance(x, tf.Variable) and \
                    not isinstance(y, tf.Variable):
                _check_weak_result(tf, np, mode, name, x, y, out, P, W)
            return out
    else:
        name = rng.choice(UNARY_OPS)
        dx, x = weak_operand(tf, np, rng)
        desc = f"[{mode}] {name}({dx})"

        def run():
            tnp.experimental_enable_numpy_behavior(
                dtype_conversion_mode=mode)
            if traced:
                return _traced_like_eager(
                    tf, W, mode, name, lambda v: _unary(tf, name, v), (x,))
            out = _unary(tf, name, x)
            # Strong in TF 2.21 too: casts, relu (not in TF's list of
            # weak ops) and indexing (x[0] of a weak tensor).
            if name in ("tf.cast", "tf.convert_to_tensor", "tf.nn.relu",
                        "index0"):
                assert not W.is_weak(out), f"{name}: a weak result"
            elif not traced and W.is_weak(x) and \
                    name not in ("tf.sign",):
                assert W.is_weak(out), f"{name} of a weak tensor is strong"
                assert out.dtype == x.dtype, (out.dtype, x.dtype)
            if name in ("neg", "tf.identity", "tf.reshape") and \
                    hasattr(x, "numpy") and x.dtype.name not in (
                        "bool", "uint8", "bfloat16") and not traced:
                want = _as_np(tf, x)
                want = -want if name == "neg" else want
                if name == "tf.reshape":
                    want = want.reshape(-1)
                with np.errstate(all="ignore"):
                    np.testing.assert_array_equal(out.numpy(), want)
            return out
    if traced:
        desc += " in tf.function"
    return desc, _tf_overflow(run)


# ---- the fast paths: _C.getitem, tensor[key], _C.call ----------------------

def index_item(tf, np, rng, dim):
    """(description, item, numpy item or None where NumPy and TF differ)."""
    k = rng.random()
    ints = [0, 1, -1, dim, -dim, dim - 1, -dim - 1, 2 ** 31, -2 ** 31,
            2 ** 62, 2 ** 63 - 1, -2 ** 63, 2 ** 63, -2 ** 63 - 1, 2 ** 70]
    if k < 0.3:
        v = rng.choice(ints)
        ok = -dim <= v < dim
        return repr(v), v, v if ok else "error"
    if k < 0.4:
        v = rng.choice([0, 1, -1, 5])
        t = rng.choice(["int64", "int32", "int16", "uint8", "intp"])
        item = getattr(np, t)(v) if v >= 0 or t != "uint8" else np.int8(v)
        ok = -dim <= v < dim
        return f"np.{t}({v})", item, int(v) if ok else "error"
    if k < 0.5:
        v = rng.choice([0, 1, -1, 4])
        dt = rng.choice(["int32", "int64"])
        ok = -dim <= v < dim
        return f"T({dt} {v})", tf.constant(v, dt), v if ok else "error"
    if k < 0.75:
        vals = [None, 0, 1, -1, 2, -2, dim, dim + 5, -dim - 5, 2 ** 62,
                -2 ** 62, 2 ** 63 - 1, -2 ** 63, np.int64(1)]
        start, stop = rng.choice(vals), rng.choice(vals)
        step = rng.choice([None, 1, 1, 2, -1, -2, 3, 0, 2 ** 62, -2 ** 63])
        s = slice(start, stop, step)
        if step == 0:
            return repr(s), s, "error"
        return repr(s), s, s
    if k < 0.82:
        return "None", None, None
    if k < 0.88:
        return "...", Ellipsis, Ellipsis
    if k < 0.92:
        return "slice(T)", slice(tf.constant(1), None), slice(1, None)
    if k < 0.94:
        # Not compared: a list item, NumPy's fancy index, is a nested
        # index tuple in TF; a bool array NumPy's mask.
        odd = rng.choice([[0, 1], np.array([0]), np.array(True),
                          tf.constant([True, False])])
        return f"odd {odd!r}"[:40], odd, "unknown"
    # Never an index in TF: these must raise. A Python bool is no 1 or 0
    # (x[[True, False]] meant a mask).
    bad = rng.choice([1.5, "a", True, False, np.True_, tf.constant(1.0),
                      tf.constant([0, 1]), slice(1.5), slice(True, None),
                      slice(None, None, tf.constant(0)), object(),
                      slice(None, None, 0)])
    return f"bad {bad!r}"[:40], bad, "bad"


def _numpy_getitem(a, items):
    """NumPy's result for the key, or "error"."""
    if any(isinstance(i, str) and i == "error" for i in items):
        return "error"
    key = tuple(items)
    try:
        with np.errstate(all="ignore"):
            return a[key]
    except (IndexError, ValueError, TypeError, OverflowError):
        return "error"


def getitem_case(tf, np, rng):
    dtype = rng.choice(["float32", "int32", "bool", "float16", "int64",
                        "uint8"])
    shape = [rng.choice([0, 1, 2, 3, 4]) for _ in range(rng.randint(0, 4))]
    a = (np.arange(int(np.prod(shape, dtype=np.int64))) % 7) \
        .reshape(shape).astype(dtype)
    x = tf.constant(a)
    holder = rng.choice(["tensor", "tensor", "tensor", "variable"])
    if holder == "variable":
        x = tf.Variable(x)         # Variable.__getitem__, _C.getitem's
    n = rng.choice([0, 1, 1, 2, 2, 3, 4, 25])
    descs, items, np_items = [], [], []
    dims = list(shape)
    for j in range(n):
        d, item, npi = index_item(tf, np, rng,
                                  dims[j] if j < len(dims) else 1)
        descs.append(d)
        items.append(item)
        np_items.append(npi)
    n_ell = sum(1 for i in items if i is Ellipsis)
    single = n == 1 and rng.random() < 0.5
    key = items[0] if single else tuple(items)
    # Where NumPy and TF index alike: no new axes or ellipses moving the
    # ints' dims (their dims are counted against the real ones alike).
    comparable = n_ell == 0 and None not in items and n <= len(shape)
    how = rng.choice(["tensor", "tensor", "fast"])
    desc = (f"{how}: {'Variable' if isinstance(x, tf.Variable) else 'T'}"
            f"({dtype}{shape})[" + ", ".join(descs) +
            ("" if not single else " (bare)") + "]")

    must_fail = any(isinstance(i, str) and i == "bad" for i in np_items)
    comparable = comparable and not any(
        isinstance(i, str) and i == "unknown" for i in np_items)

    def run():
        if how == "fast":
            out = tf._C.getitem(x, key)
            if out is NotImplemented:
                return out
        else:
            out = x[key]
        if must_fail:
            raise AssertionError(f"gave {out.shape} for a key that is no "
                                 f"index")
        if comparable:
            want = _numpy_getitem(a, np_items)
            if isinstance(want, str):
                raise AssertionError(f"gave {out.shape} where NumPy "
                                     f"raises")
            got = out.numpy()
            assert got.dtype == want.dtype and got.shape == want.shape \
                and np.array_equal(got, want), (got, want)
        return out
    return desc, run


def _call_args(tf, np, rng, ops, names):
    name = rng.choice(names)
    op = ops[name]
    n_in = rng.choice([0, 1, 1, 2, 2, 3])
    inputs = []
    for _ in range(n_in):
        k = rng.random()
        if k < 0.6:
            dt = rng.choice(["float32", "int32", "float64", "bool", "int64",
                             "float16", "uint8"])
            shape = [rng.choice([0, 1, 2, 3]) for _ in
                     range(rng.randint(0, 3))]
            inputs.append(tf.constant(np.ones(shape, dt)))
        elif k < 0.8:
            inputs.append(rng.choice([1, 2.5, [1, 2], [[1.0]], True]))
        else:
            inputs.append(rng.choice([None, "s", object(), [1, [2]],
                                      np.zeros((2, 0)), 2 ** 70]))
    # Ints past int64 are an OverflowError of the binding (_C.call is
    # no user API: the wrappers check their arguments): left out.
    ints = rng.choice([None, [], [0], [-1], [1, 0], [2 ** 62], [2 ** 45],
                       [-2 ** 63], list(range(70)), [0.5], "x", [None]])
    iv = rng.choice([None, [0], [1, 1], [-1], [0] * 7, [2 ** 63 - 1],
                     [True]])
    fv = rng.choice([None, [0.5], [float("nan")], [1.0] * 5, ["x"],
                     [1e308 * 10]])
    dtype = rng.choice([None, 1, 3, 9, -1, 10 ** 6, 2 ** 40, "float32"])
    return name, op, inputs, ints, iv, fv, dtype


def call_case(tf, np, rng):
    from tfmini._opids import ID
    # Ops a user reaches through the fast call; graph-only ops and ops
    # that open files, print or sleep are left out.
    names = [n for n in ("AddV2", "Mul", "Sum", "Max", "Reshape",
                         "Transpose", "ConcatV2", "Cast", "StridedSlice",
                         "Pack", "Fill", "Range", "GatherV2", "Tile",
                         "ExpandDims", "Squeeze", "Slice", "Relu",
                         "Softmax", "ArgMax", "Cumsum", "OneHot",
                         "SelectV2", "BatchMatMulV2", "Where", "ZerosLike",
                         "Identity", "ReverseV2", "PadV2", "Split", "Unpack")
             if n in ID]
    name, op, inputs, ints, iv, fv, dtype = _call_args(tf, np, rng, ID,
                                                       names)
    kw = rng.random() < 0.3
    extra = rng.random() < 0.05
    desc = (f"_C.call({name}, {[type(i).__name__ for i in inputs]}, "
            f"ints={str(ints)[:30]}, i={iv}, f={fv}, dtype={dtype!r}"
            f"{', by keyword' if kw else ''}{', 7 args' if extra else ''})")

    def run():
        if extra:
            return tf._C.call(op, inputs, ints, iv, fv, dtype, 0)
        if kw:
            return tf._C.call(op=op, inputs=inputs, ints=ints, i=iv, f=fv,
                              dtype=dtype)
        return tf._C.call(op, inputs, ints, iv, fv, dtype)
    return desc, run


def fastpath_case(tf, np, rng):
    return (call_case if rng.random() < 0.3 else getitem_case)(tf, np, rng)
