"""Python structures (a function's arguments and results) as JSON, for
the meta blob of a saved model. JSON, not pickle: loading must never run
code from the file, and only plain data comes back: TensorSpecs, output
slots, None/bool/int/float/str, lists, tuples, dicts, namedtuples
(rebuilt as new namedtuple classes of the same name and fields) and the
components of tf.RaggedTensor / tf.sparse.SparseTensor arguments and
results (Note [Composite arguments] in tfmini/function_structures.py),
named by a fixed list of composite types, never by an import path."""
import collections
import math

from .. import dtypes as _dtypes
from .. import extension_type as _ext
from .. import extension_type_saved as _ext_saved
from ..function import _LEAF, TensorSpec, _is_namedtuple
from ..function_structures import _Components, _components_type


def _composite_types():
    from ..ragged import RaggedTensor
    from ..sparse import SparseTensor
    return {"RaggedTensor": RaggedTensor, "SparseTensor": SparseTensor}


class StructureError(ValueError):
    """A value that has no saved form, or a malformed saved form."""


def encode(x, what="a value", depth=0):
    if depth > 64:
        raise StructureError(f"{what} is nested too deeply to save")
    if x is _LEAF:
        return {"leaf": 1}
    if isinstance(x, TensorSpec):
        dims = None if x._dims is None else list(x._dims)
        return {"spec": [x.dtype.name, dims, x.name]}
    if x is None or isinstance(x, (bool, str)):
        return {"v": x}
    if isinstance(x, int):
        return {"v": int(x)}
    if isinstance(x, float):
        return {"f": repr(float(x))}
    t = type(x)
    if t is list or t is tuple:
        return {t.__name__: [encode(v, what, depth + 1) for v in x]}
    if t is dict:
        return {"dict": [[encode(k, what, depth + 1),
                          encode(v, what, depth + 1)] for k, v in x.items()]}
    if getattr(type(x), "_tfm_static_key", False):
        try:                # Note [Extension types in saved models]
            return {"ext_static": _ext_saved.static_to_json(x)}
        except ValueError as e:
            raise StructureError(f"{what}: {e}") from None
    if isinstance(x, _Components) and hasattr(x.value_type, "_tfm_fields"):
        return {"extension": [_ext.registered_name(x.value_type),
                              [encode(v, what, depth + 1) for v in x]]}
    if isinstance(x, _Components):
        name = x.value_type.__name__
        if _composite_types().get(name) is not x.value_type:
            raise StructureError(f"{what} is a {name}, which a saved model "
                                 f"cannot hold")
        return {"composite": [name, [encode(v, what, depth + 1)
                                     for v in x]]}
    if _is_namedtuple(x):
        return {"namedtuple": [t.__name__, list(t._fields),
                               [encode(v, what, depth + 1) for v in x]]}
    raise StructureError(f"{what} holds a {t.__name__} ({x!r}), which a "
                         f"saved model cannot hold: only tensors, "
                         f"TensorSpecs, None, bool, int, float, str and "
                         f"lists, tuples, dicts and namedtuples of them")


def _check(cond, what):
    if not cond:
        raise StructureError(f"malformed saved structure: {what}")


def decode(d, depth=0):
    _check(depth <= 64 and isinstance(d, dict) and len(d) == 1,
           "expected a one-key object")
    (tag, v), = d.items()
    if tag == "leaf":
        return _LEAF
    if tag == "spec":
        _check(isinstance(v, list) and len(v) == 3, "spec")
        dtype, dims, name = v
        _check(isinstance(dtype, str) and (name is None or
                                           isinstance(name, str)), "spec")
        _check(dims is None or (isinstance(dims, list) and all(
            k is None or (type(k) is int and k >= 0) for k in dims)),
            "spec dims")
        try:
            dt = _dtypes.as_dtype(dtype)
        except TypeError:
            raise StructureError(f"unknown dtype {dtype!r}") from None
        return TensorSpec(dims, dt, name)
    if tag == "v":
        _check(v is None or isinstance(v, (bool, int, str)), "value")
        return v
    if tag == "f":
        _check(isinstance(v, str), "float")
        try:
            return float(v)
        except ValueError:
            raise StructureError(f"bad float {v!r}") from None
    if tag in ("list", "tuple"):
        _check(isinstance(v, list), tag)
        items = [decode(x, depth + 1) for x in v]
        return items if tag == "list" else tuple(items)
    if tag == "dict":
        _check(isinstance(v, list) and all(
            isinstance(p, list) and len(p) == 2 for p in v), "dict")
        out = {}
        for k, x in v:
            key = decode(k, depth + 1)
            _check(key is None or isinstance(key, (bool, int, float, str,
                                                   tuple)), "dict key")
            out[key] = decode(x, depth + 1)
        return out
    if tag == "composite":
        _check(isinstance(v, list) and len(v) == 2 and
               isinstance(v[1], list), "composite")
        vt = _composite_types().get(v[0]) if isinstance(v[0], str) else None
        _check(vt is not None, "unknown composite type")
        return _components_type(vt)(*[decode(x, depth + 1) for x in v[1]])
    if tag in ("ext_static", "extension"):
        try:                # Note [Extension types in saved models]
            if tag == "ext_static":
                return _ext_saved.static_from_json(v)
            _check(isinstance(v, list) and len(v) == 2 and
                   isinstance(v[1], list), "extension")
            vt = _ext_saved.registered_class(v[0])
        except ValueError as e:
            raise StructureError(str(e)) from None
        return _components_type(vt)(*[decode(x, depth + 1) for x in v[1]])
    if tag == "namedtuple":
        _check(isinstance(v, list) and len(v) == 3, "namedtuple")
        name, fields, items = v
        _check(isinstance(name, str) and name.isidentifier() and
               isinstance(fields, list) and isinstance(items, list) and
               len(fields) == len(items) and
               all(isinstance(f, str) and f.isidentifier() for f in fields),
               "namedtuple")
        try:
            cls = collections.namedtuple(name, fields)
        except ValueError as e:
            raise StructureError(f"namedtuple: {e}") from None
        return cls(*[decode(x, depth + 1) for x in items])
    raise StructureError(f"malformed saved structure: unknown tag {tag!r}")


def same_value(a, b):
    """Whether a Python argument equals a saved one (types must agree:
    True is not 1, as for the tf.function cache)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b
