"""Extension types in saved models (Note [Extension types in saved
models] in extension_type.py): a tf.function's static key as plain JSON
data and back, the class found by its registered name among the classes
defined in this process."""
from . import dtypes as _dtypes
from .extension_type import (ExtensionTypeSpec, _REGISTRY, _StaticKey,
                             registered_name)
from .extension_type_field import ImmutableDict
from .tensor_shape import TensorShape
from .tensor_spec import TensorSpec

__all__ = ["registered_class", "static_to_json", "static_from_json"]


def registered_class(name):
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"the saved model holds the extension type "
                         f"{name!r}, which is not defined in this process: "
                         f"define (or import) that class before loading")
    return cls


def _to_json(v, depth=0):
    if depth > 32:
        raise ValueError("an extension type nested too deeply to save")
    if isinstance(v, TensorSpec):
        dims = None if v.shape.rank is None else list(v.shape.as_list())
        return {"tensor": [v.dtype.name, dims]}
    if isinstance(v, ExtensionTypeSpec):
        return {"ext": [registered_name(v.value_type),
                        [[k, _to_json(x, depth + 1)]
                         for k, x in v._tfm_items()]]}
    if isinstance(v, ImmutableDict):
        return {"map": [[_to_json(k, depth + 1), _to_json(x, depth + 1)]
                        for k, x in v.items()]}
    if isinstance(v, tuple):
        return {"tuple": [_to_json(x, depth + 1) for x in v]}
    if isinstance(v, TensorShape):
        return {"shape": None if v.rank is None else v.as_list()}
    if isinstance(v, _dtypes.DType):
        return {"dtype": v.name}
    if v is None or isinstance(v, (bool, int, str)):
        return {"v": v}
    if isinstance(v, float):
        return {"f": repr(v)}
    raise ValueError(f"an extension type field holding a "
                     f"{type(v).__name__} cannot be saved")


def _bad(what):
    raise ValueError(f"malformed saved extension type: {what}")


def _dims(d):
    if d is not None and not (isinstance(d, list) and all(
            k is None or (type(k) is int and k >= 0) for k in d)):
        _bad("dims")
    return d


def _from_json(d, depth=0):
    if depth > 32 or not isinstance(d, dict) or len(d) != 1:
        _bad("expected a one-key object")
    (tag, v), = d.items()
    if tag == "tensor":
        if not (isinstance(v, list) and len(v) == 2 and
                isinstance(v[0], str)):
            _bad("tensor spec")
        try:
            return TensorSpec(_dims(v[1]), _dtypes.as_dtype(v[0]))
        except (TypeError, ValueError, KeyError):
            _bad(f"dtype {v[0]!r}")
    if tag == "ext":
        if not (isinstance(v, list) and len(v) == 2 and
                isinstance(v[1], list) and all(
                    isinstance(r, list) and len(r) == 2 and
                    isinstance(r[0], str) for r in v[1])):
            _bad("spec")
        cls = registered_class(v[0])
        names = [f.name for f in cls._tfm_field_list]
        if [r[0] for r in v[1]] != names:
            raise ValueError(f"the saved {v[0]} has the fields "
                             f"{[r[0] for r in v[1]]}; the class defined "
                             f"here has {names}")
        return cls.Spec._tfm_from_fields(
            {k: _from_json(x, depth + 1) for k, x in v[1]})
    if tag == "map":
        if not (isinstance(v, list) and all(
                isinstance(r, list) and len(r) == 2 for r in v)):
            _bad("mapping")
        items = [(_from_json(k, depth + 1), _from_json(x, depth + 1))
                 for k, x in v]
        try:
            return ImmutableDict(items)
        except TypeError:
            _bad("mapping key")
    if tag == "tuple":
        if not isinstance(v, list):
            _bad("tuple")
        return tuple(_from_json(x, depth + 1) for x in v)
    if tag == "shape":
        return TensorShape(_dims(v))
    if tag == "dtype":
        try:
            return _dtypes.as_dtype(v)
        except (TypeError, ValueError, KeyError):
            _bad(f"dtype {v!r}")
    if tag == "v":
        if not (v is None or isinstance(v, (bool, int, str))):
            _bad("value")
        return v
    if tag == "f":
        try:
            return float(v)
        except (TypeError, ValueError):
            _bad("float")
    _bad(f"unknown tag {tag!r}")


def static_to_json(key):
    """A _StaticKey as JSON data (Note [Extension types in saved
    models])."""
    return _to_json(key.spec)


def static_from_json(d):
    spec = _from_json(d)
    if not isinstance(spec, ExtensionTypeSpec):
        _bad("not an extension type's spec")
    return _StaticKey(spec)
