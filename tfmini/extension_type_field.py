"""The fields of a tf.experimental.ExtensionType: what each annotation
accepts and what a value becomes (TF's extension_type_field rules).

A field's annotation is a tf.Tensor, a composite class (an ExtensionType
subclass, tf.RaggedTensor, ...), tf.TensorShape, tf.DType, a Python
scalar type (int, float, bool, str, bytes, None), or a typing
Tuple / Mapping / Union / Optional of those. A value is converted to
the annotation (lists to tensors, shapes to TensorShapes, mappings to
an ImmutableDict, ...) or refused with a TypeError that names the
field's path. In a Spec a tf.Tensor field holds a TensorSpec and a
composite field that composite's TypeSpec."""
import collections.abc as _abc
import typing

from . import dtypes as _dtypes
from ._tensor import Tensor
from .composite_tensor import CompositeTensor, TypeSpec
from .tensor_shape import TensorShape
from .tensor_spec import TensorSpec

__all__ = ["Field", "ImmutableDict", "convert", "fields_of"]

VALUE, SPEC, DEFAULT = "value", "spec", "default"
_NoneType = type(None)
_MISSING = object()


class ImmutableDict(_abc.Mapping):
    """A read-only dict: a Mapping field's value (TF's ImmutableDict,
    same repr)."""

    __slots__ = ("_d",)

    def __init__(self, *args, **kwargs):
        self._d = dict(*args, **kwargs)

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __contains__(self, key):
        return key in self._d

    def __repr__(self):
        return f"ImmutableDict({self._d!r})"

    def __eq__(self, other):
        if isinstance(other, ImmutableDict):
            other = other._d
        return self._d == other

    __hash__ = None


class Field:
    """One field: its name, annotation and default (_MISSING if none)."""

    __slots__ = ("name", "value_type", "default")

    def __init__(self, name, value_type, default=_MISSING):
        self.name = name
        self.value_type = value_type
        self.default = default

    @property
    def has_default(self):
        return self.default is not _MISSING

    def __repr__(self):
        return f"Field({self.name!r}, {self.value_type!r})"


def _origin(t):
    return typing.get_origin(t)


def _is_tuple(t):
    return _origin(t) is tuple


def _is_mapping(t):
    return _origin(t) in (_abc.Mapping, dict, _abc.MutableMapping)


def _is_union(t):
    import types
    return _origin(t) is typing.Union or (
        hasattr(types, "UnionType") and isinstance(t, types.UnionType))


def _is_composite_class(t):
    return isinstance(t, type) and issubclass(t, CompositeTensor)


def _name(path):
    return "".join(path)


def convert(value, t, path, context=VALUE):
    """value as annotation t wants it, or TypeError naming path."""
    if t is None:
        t = _NoneType
    if t is Tensor:
        return _convert_tensor(value, path, context)
    if _is_composite_class(t):
        if context == SPEC:
            if not (isinstance(value, TypeSpec) and isinstance(
                    value.value_type, type) and
                    issubclass(value.value_type, t)):
                raise TypeError(f"{_name(path)}: expected a TypeSpec for "
                                f"{t.__name__!r}, got "
                                f"{type(value).__name__!r}")
            return value
        if not isinstance(value, t):
            raise TypeError(f"{_name(path)}: expected {t.__name__!r}, got "
                            f"{type(value).__name__!r}")
        return value
    if t is TensorShape:
        try:
            return value if isinstance(value, TensorShape) else \
                TensorShape(value)
        except (TypeError, ValueError):
            raise TypeError(f"{_name(path)}: expected 'tf.TensorShape', got "
                            f"{type(value).__name__!r}") from None
    if t is _dtypes.DType:
        try:
            return _dtypes.as_dtype(value)
        except (TypeError, ValueError, KeyError):
            raise TypeError(f"{_name(path)}: expected 'tf.DType', got "
                            f"{type(value).__name__!r}") from None
    if t in (int, float, bool, str, bytes, _NoneType):
        if not isinstance(value, t):
            raise TypeError(f"{_name(path)}: expected {t.__name__!r}, got "
                            f"{type(value).__name__!r}")
        return value
    if _is_tuple(t):
        return _convert_tuple(value, t, path, context)
    if _is_mapping(t):
        return _convert_mapping(value, t, path, context)
    if _is_union(t):
        for option in typing.get_args(t):
            try:
                return convert(value, option, path, context)
            except TypeError:
                pass
        raise TypeError(f"{_name(path)}: expected {t!r}, got "
                        f"{type(value).__name__!r}")
    raise TypeError(f"{_name(path)}: Unsupported type annotation {t!r}")


def _convert_tensor(value, path, context):
    if context == SPEC:
        if not isinstance(value, TensorSpec):
            raise TypeError(f"{_name(path)}: expected a TensorSpec, got "
                            f"{type(value).__name__!r}")
        return value
    if isinstance(value, Tensor):
        return value
    if context == DEFAULT:       # converted when an instance takes it
        return value
    from .ops.constant_op import convert_to_tensor
    if isinstance(value, range):    # TF converts a range; tfmini's C not yet
        value = list(value)
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError):
        raise TypeError(f"{_name(path)}: expected a Tensor, got "
                        f"{type(value).__name__!r}") from None


def _convert_tuple(value, t, path, context):
    if not isinstance(value, _abc.Sequence) or isinstance(value,
                                                          (str, bytes)):
        raise TypeError(f"{_name(path)}: expected tuple, got "
                        f"{type(value).__name__!r}")
    args = typing.get_args(t)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(convert(v, args[0], path + (f"[{i}]",), context)
                     for i, v in enumerate(value))
    if len(value) != len(args):
        # TF's text, unbalanced ')' included.
        raise TypeError(f"{_name(path)}: expected tuple with length "
                        f"{len(args)}, got {type(value).__name__!r})")
    return tuple(convert(v, a, path + (f"[{i}]",), context)
                 for i, (v, a) in enumerate(zip(value, args)))


def _convert_mapping(value, t, path, context):
    if not isinstance(value, _abc.Mapping):
        raise TypeError(f"{_name(path)}: expected mapping, got "
                        f"{type(value).__name__!r}")
    args = typing.get_args(t) or (typing.Any, typing.Any)
    kt, vt = args
    return ImmutableDict(
        (convert(k, kt, path + ("[<key>]",), context),
         convert(v, vt, path + (f"[{k!r}]",), context))
        for k, v in value.items())


def fields_of(cls, namespace_annotations, bases_fields):
    """The fields of a class: its bases' fields, then its own
    annotations (a redeclared name keeps its place), each with the
    class attribute of that name as its default."""
    fields = dict((f.name, f) for f in bases_fields)
    for name, t in namespace_annotations.items():
        if name.startswith("__") or _origin(t) is typing.ClassVar:
            continue
        default = cls.__dict__.get(name, _MISSING)
        if default is not _MISSING and not isinstance(
                default, (property, staticmethod, classmethod)):
            default = convert(default, t, (name,), DEFAULT)
        else:
            default = _MISSING
        fields[name] = Field(name, t, default)
    return list(fields.values())
