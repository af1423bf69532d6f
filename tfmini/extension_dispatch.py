"""tf.experimental.dispatch_for_api and the elementwise dispatchers: let
TF's public ops take user types (extension types, mostly).

Note [API dispatch]: tfmini's ops are plain functions (many of them C
calls that refuse a non-tensor), so dispatch is added the way
composite_tensor.py's Note [Composite dispatch] adds ragged support: the
first registration for an op replaces it, in each tf namespace module
that holds it, by a wrapper that looks for an argument of a registered
type and else calls the op. A program that registers nothing keeps the
bare ops, and unregistering the last handler of an op puts its bare op
back (_uninstall_unused). A handler is chosen by its signature: the annotated
parameters (typing List / Union / Optional of classes) must all match,
and at least one of them must hold one of the registered types."""
import importlib
import inspect
import sys
import typing

from ._tensor import Tensor

__all__ = ["dispatch_for_api", "unregister_dispatch_for",
           "dispatch_for_unary_elementwise_apis",
           "dispatch_for_binary_elementwise_apis"]

# TF 2.21's elementwise APIs (util/dispatch.py's registers) that tfmini
# has; names under tf.
_UNARY = """abs acos acosh asin asinh atan atanh cast ceil clip_by_value cos
cosh exp floor logical_not negative ones_like round saturate_cast sigmoid
sign sin sinh sqrt square tan tanh zeros_like math.abs math.acos math.acosh
math.asin math.asinh math.atan math.atanh math.ceil math.conj math.cos
math.cosh math.digamma math.erf math.erfc math.erfinv math.exp math.expm1
math.floor math.imag math.is_finite math.is_inf math.is_nan math.lgamma
math.log math.log1p math.log_sigmoid math.logical_not math.ndtri
math.negative math.real math.reciprocal math.reciprocal_no_nan math.rint
math.round math.rsqrt math.sigmoid math.sign math.sin math.sinh
math.softplus math.softsign math.sqrt math.square math.tan math.tanh
math.angle math.bessel_i0 math.bessel_i0e math.bessel_i1 math.bessel_i1e
nn.elu nn.gelu nn.leaky_relu nn.relu nn.relu6 nn.selu nn.sigmoid nn.silu
nn.softplus nn.softsign nn.swish nn.tanh dtypes.cast dtypes.saturate_cast
bitwise.invert debugging.check_numerics strings.as_string strings.length
strings.lower strings.upper strings.strip strings.to_number
strings.regex_full_match strings.regex_replace strings.substr
strings.to_hash_bucket strings.to_hash_bucket_fast
strings.to_hash_bucket_strong image.adjust_brightness image.adjust_gamma
image.convert_image_dtype io.decode_base64 io.encode_base64""".split()
_BINARY = """add atan2 divide equal greater greater_equal less less_equal
logical_and logical_or maximum minimum multiply not_equal pow scalar_mul
subtract truediv realdiv truncatediv truncatemod complex math.add
math.atan2 math.divide math.divide_no_nan math.equal math.floordiv
math.floormod math.mod math.greater math.greater_equal math.less
math.less_equal math.logical_and math.logical_or math.logical_xor
math.maximum math.minimum math.multiply math.multiply_no_nan
math.not_equal math.pow math.scalar_mul math.squared_difference
math.subtract math.truediv math.xdivy math.xlog1py math.xlogy math.zeta
bitwise.bitwise_and bitwise.bitwise_or bitwise.bitwise_xor
bitwise.left_shift bitwise.right_shift dtypes.complex
nn.sigmoid_cross_entropy_with_logits""".split()

_BY_API = {}          # bare op -> [(handler, {param: annotation})]
_UNARY_HANDLERS = []  # (handler, x annotation)
_BINARY_HANDLERS = []  # (handler, x annotation, y annotation)
_TYPES = set()        # every class some handler dispatches on
_TYPES_T = [()]       # the same, as the tuple isinstance takes
_WRAPPED = {}         # bare op -> [(module, name, wrapper, what it hid)]
_KIND = {}            # bare op -> "unary" / "binary"


def _tf():
    return sys.modules["tfmini"]


def _bare(fn):
    """The op under any dispatch wrappers (ours, composite_tensor's)."""
    seen = 0
    while seen < 8:
        nxt = getattr(fn, "_tfm_dispatch_orig", None) or \
            getattr(fn, "_composite_orig", None)
        if nxt is None:
            return fn
        fn, seen = nxt, seen + 1
    return fn


def _namespaces():
    tf = _tf()
    mods = [tf]
    for n in ("math", "nn", "strings", "bitwise", "image", "dtypes",
              "debugging", "io", "linalg", "math.special"):
        try:
            mods.append(importlib.import_module("tfmini." + n))
        except ImportError:
            pass
    return mods


def _resolve(name):
    obj = _tf()
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


# ---- matching arguments ------------------------------------------------

def _classes(t, out):
    """The classes in annotation t that make a call dispatch."""
    if isinstance(t, type):
        if t is not Tensor and t not in (int, float, bool, str, type(None)):
            out.add(t)
    else:
        for a in typing.get_args(t):
            _classes(a, out)
    return out


def _matches(v, t):
    if t is typing.Any:
        return True
    if t is None or t is type(None):
        return v is None
    if isinstance(t, type):
        if t is Tensor:
            return isinstance(v, Tensor)
        return isinstance(v, t)
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin is typing.Union:
        return any(_matches(v, a) for a in args)
    if origin in (list, typing.List, tuple, typing.Tuple):
        if not isinstance(v, (list, tuple)):
            return False
        if origin in (tuple, typing.Tuple) and not (
                len(args) == 2 and args[1] is Ellipsis):
            return len(v) == len(args) and all(
                _matches(x, a) for x, a in zip(v, args))
        return all(_matches(x, args[0]) for x in v) if args else True
    return False


def _dispatchable(v, classes):
    if isinstance(v, (list, tuple)):
        return any(_dispatchable(x, classes) for x in v)
    return isinstance(v, tuple(classes))


def _has_registered(args, kwargs, types):
    for vals in (args, kwargs.values()):
        for a in vals:
            if isinstance(a, types):
                return True
            if isinstance(a, (list, tuple)) and any(isinstance(x, types)
                                                    for x in a):
                return True
    return False


def _bind(op, args, kwargs):
    try:
        return inspect.signature(op).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return None


# ---- the wrapper -------------------------------------------------------

def _call(bare, current, args, kwargs):
    types = _TYPES_T[0]
    if types and _has_registered(args, kwargs, types):
        bound = None
        for handler, sig in _BY_API.get(bare, ()):
            if bound is None:
                bound = _bind(bare, args, kwargs)
                if bound is None:
                    break
            if all(_matches(bound.get(p), t) for p, t in sig.items()) and \
                    any(_dispatchable(bound.get(p), _classes(t, set()))
                        for p, t in sig.items()):
                return handler(*args, **kwargs)
        kind = _KIND.get(bare)
        if kind is not None:
            r = _elementwise(kind, current, args, kwargs)
            if r is not NotImplemented:
                return r
    return current(*args, **kwargs)


def _elementwise(kind, op, args, kwargs):
    names = list(inspect.signature(_bare(op)).parameters)
    n = 1 if kind == "unary" else 2
    args, kwargs = list(args), dict(kwargs)
    xs = []
    for i in range(n):
        if args:
            xs.append(args.pop(0))
        elif i < len(names) and names[i] in kwargs:
            xs.append(kwargs.pop(names[i]))
        else:
            return NotImplemented

    def api_func(*vals):
        return op(*vals, *args, **kwargs)

    if kind == "unary":
        for handler, xt in _UNARY_HANDLERS:
            if _matches(xs[0], xt) and _dispatchable(xs[0],
                                                     _classes(xt, set())):
                return handler(api_func, xs[0])
    else:
        for handler, xt, yt in _BINARY_HANDLERS:
            if _matches(xs[0], xt) and _matches(xs[1], yt) and (
                    _dispatchable(xs[0], _classes(xt, set())) or
                    _dispatchable(xs[1], _classes(yt, set()))):
                return handler(api_func, xs[0], xs[1])
    return NotImplemented


def _install(bare):
    """Wrap bare in every namespace module that holds it (once)."""
    if bare in _WRAPPED:
        return
    _WRAPPED[bare] = put = []
    done = {}
    for mod in _namespaces():
        for name, obj in list(vars(mod).items()):
            if not callable(obj) or _bare(obj) is not bare:
                continue
            if getattr(obj, "_tfm_dispatch_orig", None) is not None:
                continue
            key = id(obj)
            if key not in done:
                done[key] = _wrapper(bare, obj)
            setattr(mod, name, done[key])
            put.append((mod, name, done[key], obj))


def _uninstall_unused():
    """Put back the ops that no handler dispatches any more, and forget
    the classes no handler names: once the last handler is gone, a call
    costs what it did before the first registration."""
    _TYPES.clear()
    for lst in _BY_API.values():
        for _, sig in lst:
            for t in sig.values():
                _classes(t, _TYPES)
    for _, xt in _UNARY_HANDLERS:
        _classes(xt, _TYPES)
    for _, xt, yt in _BINARY_HANDLERS:
        _classes(xt, _TYPES)
        _classes(yt, _TYPES)
    _TYPES_T[0] = tuple(_TYPES)
    kinds = {"unary": bool(_UNARY_HANDLERS),
             "binary": bool(_BINARY_HANDLERS)}
    for bare in list(_WRAPPED):
        if _BY_API.get(bare) or kinds.get(_KIND.get(bare), False):
            continue
        for mod, name, wrapper, replaced in _WRAPPED.pop(bare):
            # Another layer (composite_tensor's) may have wrapped ours
            # since: that one stays, and ours under it.
            if vars(mod).get(name) is wrapper:
                setattr(mod, name, replaced)


def _wrapper(bare, current):
    def op(*args, **kwargs):
        return _call(bare, current, args, kwargs)

    op.__name__ = op.__qualname__ = getattr(current, "__name__", "op")
    op.__doc__ = getattr(current, "__doc__", None)
    op.__wrapped__ = current
    op._tfm_dispatch_orig = current
    return op


# ---- registration ------------------------------------------------------

def _signature_of(handler, api):
    """{param: annotation} of handler, whose parameters must be the API's
    (a missing trailing `name` is added, as TF does)."""
    api_sig = inspect.signature(api)
    sig = inspect.signature(handler)
    params = list(sig.parameters.values())
    if "name" in api_sig.parameters and "name" not in sig.parameters:
        params.append(api_sig.parameters["name"])
        sig = sig.replace(parameters=params)
    if [p.name for p in params] != list(api_sig.parameters):
        raise ValueError(f"Dispatch function's signature {sig} does not "
                         f"match API's signature {api_sig}.")
    return {p.name: p.annotation for p in params
            if p.annotation is not inspect.Parameter.empty}


def dispatch_for_api(api, *signatures):
    """Decorator: calls of `api` whose arguments match the handler's
    annotations (or one of `signatures`, dicts of parameter -> type) go
    to the handler."""
    bare = _bare(api)

    def decorator(handler):
        sigs = list(signatures) or [_signature_of(handler, bare)]
        if not any(sigs):
            raise ValueError("The dispatch_for_api decorator must be called "
                             "with at least one signature, or applied to a "
                             "function that has type annotations on its "
                             "parameters.")
        for sig in sigs:
            for t in sig.values():
                _TYPES.update(_classes(t, set()))
            _BY_API.setdefault(bare, []).append((handler, dict(sig)))
        _TYPES_T[0] = tuple(_TYPES)
        _install(bare)
        handler._tfm_dispatch_api = bare
        return handler
    return decorator


def _elementwise_ops(names, kind):
    out = []
    for n in names:
        op = _resolve(n)
        if op is None or not callable(op):
            continue
        bare = _bare(op)
        _KIND[bare] = kind
        out.append(bare)
    return out


def dispatch_for_unary_elementwise_apis(x_type):
    """Decorator: handler(api_func, x) runs every unary elementwise API
    (tf.abs, tf.math.exp, tf.ones_like, ...) called on an x_type."""
    def decorator(handler):
        _TYPES.update(_classes(x_type, set()))
        _UNARY_HANDLERS.append((handler, x_type))
        _TYPES_T[0] = tuple(_TYPES)
        for bare in _elementwise_ops(_UNARY, "unary"):
            _install(bare)
        return handler
    return decorator


def dispatch_for_binary_elementwise_apis(x_type, y_type):
    """Decorator: handler(api_func, x, y) runs every binary elementwise
    API (tf.math.add, tf.maximum, ...) called on an x_type and a y_type."""
    def decorator(handler):
        _TYPES.update(_classes(x_type, set()) | _classes(y_type, set()))
        _BINARY_HANDLERS.append((handler, x_type, y_type))
        _TYPES_T[0] = tuple(_TYPES)
        for bare in _elementwise_ops(_BINARY, "binary"):
            _install(bare)
        return handler
    return decorator


def unregister_dispatch_for(dispatch_target):
    """Removes dispatch_target from every API it was registered for."""
    found = False
    for lst in _BY_API.values():
        keep = [e for e in lst if e[0] is not dispatch_target]
        found = found or len(keep) != len(lst)
        lst[:] = keep
    for lst in (_UNARY_HANDLERS, _BINARY_HANDLERS):
        keep = [e for e in lst if e[0] is not dispatch_target]
        found = found or len(keep) != len(lst)
        lst[:] = keep
    if not found:
        raise ValueError(f"Function {dispatch_target} was not registered "
                         f"using a `@dispatch_for_*` decorator.")
    _uninstall_unused()
