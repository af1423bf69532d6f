"""tf.debugging: the assert_* checks, over tf.Assert.

Eagerly a failed check raises InvalidArgumentError at once, with TF's
text ("Condition x > 0 did not hold element-wise: ..."). While a
tf.function is traced it adds an Assert node, so the check runs (and
raises) on every call of the graph. Shape checks (assert_rank) are
static: a ValueError at trace time, as in TF."""
import numpy as _np

from .errors import InvalidArgumentError as _InvalidArgumentError
from .ops.control_flow_ops import Assert, _staged as _staged
from .debugging_placement import (get_log_device_placement,  # noqa: F401
                                  set_log_device_placement)

__all__ = ["Assert", "assert_equal", "assert_none_equal", "assert_less",
           "assert_less_equal", "assert_greater", "assert_greater_equal",
           "assert_positive", "assert_negative", "assert_non_negative",
           "assert_non_positive", "assert_rank", "assert_rank_at_least",
           "assert_near", "assert_type", "assert_shapes", "check_numerics",
           "assert_all_finite", "set_log_device_placement"]


def _tensor(x, dtype=None):
    from .ops.constant_op import convert_to_tensor
    return convert_to_tensor(x, dtype=dtype)


def _holds(cond):
    import tfmini as tf
    return tf.reduce_all(cond)


def _unary(x, symbol, compare, message, summarize, name):
    import tfmini as tf
    x = _tensor(x)
    cond = _holds(compare(x, tf.zeros([], x.dtype)))
    text = f"Condition x {symbol} 0 did not hold element-wise:"
    label = f"x (shape={x.shape} dtype={x.dtype.name}) = "
    if _staged(cond):
        data = ([message] if message else []) + [text, label, x]
        return Assert(cond, data, summarize=summarize)
    if not bool(cond):
        flat = _np.asarray(x.numpy()).reshape(-1)
        n = _summarized(flat.size, summarize)
        values = [str(v) for v in flat[:n]] + (["..."] if n < flat.size
                                               else [])
        raise _InvalidArgumentError(
            None, None, f"{_head(message)}\n{text}\n{label}\n{values}")
    return None


def _binary(x, y, symbol, compare, message, summarize, name):
    x = _tensor(x)
    y = _tensor(y, dtype=x.dtype)
    elementwise = compare(x, y)
    cond = _holds(elementwise)
    text = f"Condition x {symbol} y did not hold."
    if _staged(cond):
        data = ([message] if message else []) + [
            text, "x = ", x, "y = ", y]
        return Assert(cond, data, summarize=summarize)
    if bool(cond):
        return None
    lines = [message] if message else []
    lines.append(text)
    raise _InvalidArgumentError(None, None, "\n".join(
        lines + failed_lines(x.numpy(), y.numpy(), elementwise.numpy(),
                             summarize)))


def _summarized(size, summarize):
    """How many elements an eager failure shows: TF's default is 3, a
    negative summarize shows them all."""
    s = 3 if summarize is None else int(summarize)
    return size if s < 0 else min(size, s)


def failed_lines(x, y, holds, summarize=None):
    """The lines after "Condition x == y did not hold." in TF's eager
    text: the first `summarize` differing indices and values (when x and
    y have one shape), then the first `summarize` elements of each."""
    xa, ya = _np.asarray(x), _np.asarray(y)
    lines = []
    if xa.shape == ya.shape and xa.ndim:
        bad = ~_np.asarray(holds, bool)
        idx = _np.argwhere(bad)
        n = _summarized(len(idx), summarize)
        lines += [f"Indices of first {n} different values:",
                  str(idx[:n]), "Corresponding x values:", str(xa[bad][:n]),
                  "Corresponding y values:", str(ya[bad][:n])]
    xf, yf = xa.reshape(-1), ya.reshape(-1)
    xf, yf = xf[:_summarized(xf.size, summarize)], \
        yf[:_summarized(yf.size, summarize)]
    return lines + [f"First {xf.size} elements of x:", str(xf),
                    f"First {yf.size} elements of y:", str(yf)]


def _op(name):
    import tfmini as tf
    return getattr(tf.math, name)


def assert_equal(x, y, message=None, summarize=None, name=None):
    return _binary(x, y, "==", _op("equal"), message, summarize, name)


def assert_none_equal(x, y, message=None, summarize=None, name=None):
    return _binary(x, y, "!=", _op("not_equal"), message, summarize, name)


def assert_less(x, y, message=None, summarize=None, name=None):
    return _binary(x, y, "<", _op("less"), message, summarize, name)


def assert_less_equal(x, y, message=None, summarize=None, name=None):
    return _binary(x, y, "<=", _op("less_equal"), message, summarize, name)


def assert_greater(x, y, message=None, summarize=None, name=None):
    return _binary(x, y, ">", _op("greater"), message, summarize, name)


def assert_greater_equal(x, y, message=None, summarize=None, name=None):
    return _binary(x, y, ">=", _op("greater_equal"), message, summarize,
                   name)


def assert_positive(x, message=None, summarize=None, name=None):
    return _unary(x, ">", _op("greater"), message, summarize, name)


def assert_negative(x, message=None, summarize=None, name=None):
    return _unary(x, "<", _op("less"), message, summarize, name)


def assert_non_negative(x, message=None, summarize=None, name=None):
    return _unary(x, ">=", _op("greater_equal"), message, summarize, name)


def assert_non_positive(x, message=None, summarize=None, name=None):
    return _unary(x, "<=", _op("less_equal"), message, summarize, name)


def _name(x):
    """How TF's static checks name a tensor: its graph name while traced,
    nothing eagerly."""
    return x.name if x._symbolic else ""


def _head(message):
    return f"{message}.  " if message else ""


def assert_rank(x, rank, message=None, name=None):
    """Static in tfmini: every traced tensor has a known rank."""
    x = _tensor(x)
    have = len(x.shape)
    if have != int(rank):
        raise ValueError(f"{_head(message)}Tensor {_name(x)} must have rank "
                         f"{int(rank)}.  Received rank {have}, shape "
                         f"{x.shape}")
    return None


def assert_rank_at_least(x, rank, message=None, name=None):
    x = _tensor(x)
    have = len(x.shape)
    if have < int(rank):
        raise ValueError(f"{_head(message)}Tensor {_name(x)} must have rank "
                         f"at least {int(rank)}.  Received rank {have}, "
                         f"shape {x.shape}")
    return None


def assert_type(tensor, tf_type, message=None, name=None):
    from .dtypes import as_dtype
    x = _tensor(tensor)
    want = as_dtype(tf_type)
    if x.dtype != want:
        what = x.name if x._symbolic else "tensor"
        raise TypeError(f"{_head(message)}{what} must be of type {want!r}; "
                        f"got {x.dtype!r}")
    return None


def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None,
                name=None):
    """|x - y| <= atol + rtol * |y| element-wise; both tolerances default
    to ten times the dtype's machine epsilon (as in TF)."""
    import tfmini as tf
    x = _tensor(x)
    y = _tensor(y, dtype=x.dtype)
    eps = _np.finfo(x.dtype.as_numpy_dtype).eps   # ints: NumPy's ValueError
    np_dtype = x.dtype.as_numpy_dtype
    rtol = np_dtype(10 * eps if rtol is None else rtol)
    atol = np_dtype(10 * eps if atol is None else atol)
    tol = tf.constant(atol, x.dtype) + tf.constant(rtol, x.dtype) * tf.abs(y)
    cond = _holds(tf.less_equal(tf.abs(x - y), tol))

    def scalar(v):
        # str(): format() would print a NumPy float32 as a Python float.
        return f"tf.Tensor({str(v)}, shape=(), dtype={x.dtype.name})"

    data = [_head(message),
            f"x and y not equal to tolerance rtol = {scalar(rtol)}, "
            f"atol = {scalar(atol)}",
            f"x (shape={x.shape} dtype={x.dtype.name}) = ", x,
            f"y (shape={y.shape} dtype={y.dtype.name}) = ", y]
    return Assert(cond, data, summarize=summarize)


def _describe(x):
    """assert_shapes names a tensor by graph name, or eagerly by shape
    and dtype."""
    return x.name if x._symbolic else (f"shape={x.shape} "
                                       f"dtype={x.dtype.name}")


def _explicit_size(entry):
    if isinstance(entry, bool):
        return None
    if isinstance(entry, int):
        return entry
    if isinstance(entry, str):
        try:
            return int(entry)
        except ValueError:
            return None
    return None


def assert_shapes(shapes, data=None, summarize=None, message=None,
                  name=None):
    """Check each tensor's shape against its spec, a sequence of entries:
    an int (or a string holding one) is an exact size, None or '.' any
    size, anything else a symbol whose size must agree wherever it
    appears. A leading ... or '*' leaves outer dims free. A scalar and
    an empty spec both count as shape [1], as in TF."""
    import tfmini as tf
    head = _head(message)
    items = shapes.items() if isinstance(shapes, dict) else shapes
    bound = {}      # symbol -> (size: int or scalar tensor, its source)
    for tensor, spec in items:
        x = _tensor(tensor)
        spec = list(spec)
        outer = bool(spec) and (spec[0] is Ellipsis or spec[0] == "*")
        if outer:
            spec = spec[1:]
        spec = spec or [1]
        dims = list(x.shape) or [1]
        rank = len(x.shape)
        if outer and len(dims) < len(spec):
            raise ValueError(f"{head}Tensor {_name(x)} must have rank at "
                             f"least {len(spec)}.  Received rank {rank}, "
                             f"shape {x.shape}")
        if not outer and len(dims) != len(spec):
            want = "in (0, 1)" if len(spec) == 1 else str(len(spec))
            raise ValueError(f"{head}Tensor {_name(x)} must have rank "
                             f"{want}.  Received rank {rank}, shape "
                             f"{x.shape}")
        base = len(dims) - len(spec) if outer else 0
        for k, entry in enumerate(spec):
            index = k - len(spec) if outer else k
            have = dims[base + k]
            if have is None:        # unknown while traced: check at run
                have = tf.shape(x)[base + k] if rank else 1
            if entry is None or entry == ".":
                continue
            size = _explicit_size(entry)
            if size is not None:
                source = "Specified explicitly."
            elif entry in bound:
                size, source = bound[entry]
            else:
                bound[entry] = (have, f"Specified by tensor {_describe(x)} "
                                      f"dimension {index}.")
                continue
            text = (f"{head}{source}  Tensor {_describe(x)} dimension "
                    f"{index} must have size")
            if isinstance(size, int) and isinstance(have, int):
                if size != have:
                    raise ValueError(f"{text} {size}.  Received size "
                                     f"{have}, shape {x.shape}")
            else:
                Assert(tf.equal(have, size),
                       [text, size, "Received size", have],
                       summarize=summarize)
    return None


_NUMERIC_CHECKED = ("bfloat16", "float16", "float32", "float64")


def check_numerics(tensor, message, name=None):
    """tensor unchanged, or InvalidArgumentError "<message> : Tensor had
    NaN values" (Inf values, Inf and NaN values); in a tf.function the
    check runs on every call."""
    import tfmini as tf
    from . import _C
    x = _tensor(tensor)
    if x.dtype.name not in _NUMERIC_CHECKED:
        text = (f"Value for attr 'T' of {x.dtype.name} is not in the list "
                f"of allowed values: bfloat16, half, float, double")
        if _staged(x):
            raise TypeError(f"CheckNumerics: {text}")
        raise _InvalidArgumentError(None, None, f"{text} [Op:CheckNumerics]")
    if _staged(x):
        from .config import optimizer
        if optimizer._strips_debug_ops():
            return tf.identity(x)
        nan = tf.reduce_any(tf.math.is_nan(x))
        inf = tf.reduce_any(tf.math.is_inf(x))
        # Assert nodes run in the order they are made, so the first one
        # to fail names both kinds when both are there.
        for bad, what in ((tf.logical_and(inf, nan), "Inf and NaN"),
                          (inf, "Inf"), (nan, "NaN")):
            _C.graph_assert(tf.logical_not(bad),
                            [f"{message} : Tensor had {what} values"], [], 3)
        return tf.identity(x)
    a = _np.asarray(x.numpy())
    kinds = [w for w, bad in (("Inf", _np.isinf(a).any()),
                              ("NaN", _np.isnan(a).any())) if bad]
    if kinds:
        raise _InvalidArgumentError(
            None, None, f"{message} : Tensor had {' and '.join(kinds)} "
            f"values [Op:CheckNumerics]")
    return tf.identity(x)


def assert_all_finite(x, message, name=None):
    """TF's alias of check_numerics."""
    return check_numerics(x, message, name=name)
