"""tf.experimental.ExtensionType: user-defined composite tensors.

A subclass declares typed fields as class annotations; the class gets
an __init__ taking one argument per field (converted and checked by
extension_type_field.py), __repr__, __eq__ (a bool tensor, as TF), a
`__validate__` hook, immutability outside a custom __init__, and a
nested `Spec` class (its TypeSpec: tensor fields as TensorSpecs, other
fields as they are). The value is a CompositeTensor: its components are
its tensors, depth first in field order (mappings by sorted key), and
its spec rebuilds it from them, so tf.nest (expand_composites),
tf.function, tf.cond / tf.while_loop and tf.data carry it without
knowing the class.

Note [Extension types in tf.function]: an argument's key components are
a _StaticKey (everything in the spec but the tensors' shapes and dtypes:
the class, Python fields, mapping keys, nesting) and then the tensors.
The C key walker keys the _StaticKey by its TraceType protocol (equal
static parts share a trace) and the tensors by dtype and shape, so a
changed mapping key or Python field retraces and new tensor values do
not (the guide's Player example)."""
import inspect

from . import extension_type_field as _field
from ._tensor import Tensor
from .composite_tensor import CompositeTensor, TypeSpec
from .tensor_shape import TensorShape
from .tensor_spec import TensorSpec
from .extension_type_field import ImmutableDict, SPEC, VALUE

__all__ = ["ExtensionType", "ExtensionTypeSpec", "BatchableExtensionType",
           "BatchableExtensionTypeSpec", "type_spec_from_value"]

_BUILDING = "_tfm_building"      # instance flag: inside a constructor


# ---- structure walks ---------------------------------------------------
# A field value is a Tensor / TensorSpec, a composite / its TypeSpec, a
# tuple or ImmutableDict of such, or a plain Python value; the walks below
# go by the value, not the annotation (a Union field may hold either).

def _tensors(x, out):
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, CompositeTensor):
        for t in x._to_components():
            _tensors(t, out)
    elif isinstance(x, tuple):
        for v in x:
            _tensors(v, out)
    elif isinstance(x, ImmutableDict):
        for k in _sorted(x):
            _tensors(x[k], out)
    return out


def _specs(x, out):
    if isinstance(x, TensorSpec):
        out.append(x)
    elif isinstance(x, TypeSpec):
        for s in x._component_specs:
            _specs(s, out)
    elif isinstance(x, tuple):
        for v in x:
            _specs(v, out)
    elif isinstance(x, ImmutableDict):
        for k in _sorted(x):
            _specs(x[k], out)
    return out


def _spec_of(x):
    if isinstance(x, Tensor):
        return TensorSpec(x.shape, x.dtype)
    if isinstance(x, CompositeTensor):
        return x._type_spec
    if isinstance(x, tuple):
        return tuple(_spec_of(v) for v in x)
    if isinstance(x, ImmutableDict):
        return ImmutableDict((k, _spec_of(v)) for k, v in x.items())
    return x


def _n_components(s):
    return len(_specs(s, []))


def _rebuild(s, nxt):
    """The value of spec-field s, its tensors taken from nxt()."""
    if isinstance(s, TensorSpec):
        return nxt()
    if isinstance(s, TypeSpec):
        return s._from_components([nxt() for _ in range(_n_components(s))])
    if isinstance(s, tuple):
        return tuple(_rebuild(v, nxt) for v in s)
    if isinstance(s, ImmutableDict):
        vals = {k: _rebuild(s[k], nxt) for k in _sorted(s)}
        return ImmutableDict((k, vals[k]) for k in s)
    return s


def _respec(s, nxt):
    """s with each TensorSpec replaced by nxt() (another TensorSpec)."""
    if isinstance(s, TensorSpec):
        return nxt()
    if isinstance(s, ExtensionTypeSpec):
        return s._tfm_replace({k: _respec(v, nxt)
                               for k, v in s._tfm_items()})
    if isinstance(s, TypeSpec):
        comps = [nxt() for _ in range(_n_components(s))]
        vt = s.value_type
        if hasattr(vt, "_spec_from_components"):
            return vt._spec_from_components(comps)
        return s
    if isinstance(s, tuple):
        return tuple(_respec(v, nxt) for v in s)
    if isinstance(s, ImmutableDict):
        vals = {k: _respec(s[k], nxt) for k in _sorted(s)}
        return ImmutableDict((k, vals[k]) for k in s)
    return s


def _static(s):
    """The hashable part of spec-field s that is not a tensor's shape or
    dtype (Note [Extension types in tf.function])."""
    if isinstance(s, TensorSpec):
        return "<tensor>"
    if isinstance(s, ExtensionTypeSpec):
        return (type(s), tuple((k, _static(v)) for k, v in s._tfm_items()))
    if isinstance(s, TypeSpec):
        return s
    if isinstance(s, tuple):
        return ("tuple",) + tuple(_static(v) for v in s)
    if isinstance(s, ImmutableDict):
        return ("dict",) + tuple((k, _static(s[k])) for k in _sorted(s))
    if isinstance(s, TensorShape):
        return ("shape", s._dims)
    return (type(s), s)


def _sorted(d):
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def _key(s):
    """A hashable key of spec-field s (for Spec __eq__ / __hash__)."""
    if isinstance(s, TensorSpec):
        return ("T", s._dims, s.dtype)
    if isinstance(s, tuple):
        return ("tuple",) + tuple(_key(v) for v in s)
    if isinstance(s, ImmutableDict):
        return ("dict",) + tuple((k, _key(s[k])) for k in _sorted(s))
    if isinstance(s, TensorShape):
        return ("shape", s._dims)
    return (type(s), s)


def _compatible(a, b):
    if isinstance(a, TensorSpec) and isinstance(b, TensorSpec):
        return a.dtype == b.dtype and a.shape.is_compatible_with(b.shape)
    if isinstance(a, TypeSpec):
        return type(a) is type(b) and a.is_compatible_with(b)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(
            _compatible(x, y) for x, y in zip(a, b))
    if isinstance(a, ImmutableDict):
        return isinstance(b, ImmutableDict) and set(a) == set(b) and all(
            _compatible(a[k], b[k]) for k in a)
    if isinstance(a, TensorShape):
        return isinstance(b, TensorShape) and a.is_compatible_with(b)
    return type(a) is type(b) and a == b


def _common(a, b):
    """The most specific spec-field that both a and b fit, or None."""
    if isinstance(a, TensorSpec) and isinstance(b, TensorSpec):
        if a.dtype != b.dtype or a.shape.rank != b.shape.rank:
            return TensorSpec(None, a.dtype) if a.dtype == b.dtype \
                else None
        if a.shape.rank is None:
            return a
        return TensorSpec([x if x == y else None for x, y in
                           zip(a.shape.as_list(), b.shape.as_list())],
                          a.dtype)
    if isinstance(a, ExtensionTypeSpec):
        return a.most_specific_common_supertype([b])
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            return None
        out = tuple(_common(x, y) for x, y in zip(a, b))
        return None if any(v is None for v in out) else out
    if isinstance(a, ImmutableDict):
        if not isinstance(b, ImmutableDict) or set(a) != set(b):
            return None
        out = {k: _common(a[k], b[k]) for k in a}
        return None if any(v is None for v in out.values()) else \
            ImmutableDict(out)
    if isinstance(a, TensorShape) and isinstance(b, TensorShape):
        if a.rank != b.rank or a.rank is None:
            return TensorShape(None)
        return TensorShape([x if x == y else None for x, y in
                            zip(a.as_list(), b.as_list())])
    return a if _key(a) == _key(b) else None


# A skeleton is a spec whose TensorSpecs are all _TENSOR: the structure
# that rebuilds a value from its tensors, without their shapes and dtypes
# (which the key has from the tensors themselves). Keys hold skeletons,
# never tensors: tf.function keeps keys for good.
_TENSOR = TensorSpec(None)


def _skeleton(v):
    """The skeleton of field value (or spec-field) v."""
    if isinstance(v, (Tensor, TensorSpec)):
        return _TENSOR
    if isinstance(v, (ExtensionType, ExtensionTypeSpec)):
        spec_cls = type(v) if isinstance(v, TypeSpec) else v.Spec
        return spec_cls._tfm_from_fields({k: _skeleton(x)
                                          for k, x in v._tfm_items()})
    if isinstance(v, CompositeTensor):
        return v._type_spec
    if isinstance(v, tuple):
        return tuple(_skeleton(x) for x in v)
    if isinstance(v, ImmutableDict):
        return ImmutableDict((k, _skeleton(x)) for k, x in v.items())
    return v


def _key_of(obj):
    """obj's _StaticKey; one per class when every field is a tf.Tensor
    (its skeleton cannot vary)."""
    cls = type(obj)
    key = cls.__dict__.get("_tfm_const_key")
    if key is not None:
        return key
    key = _StaticKey(_skeleton(obj))
    value_cls = cls._tfm_value_type if isinstance(obj, TypeSpec) else cls
    if all(f.value_type is Tensor for f in value_cls._tfm_field_list):
        type.__setattr__(cls, "_tfm_const_key", key)
    return key


class _StaticKey:
    """An argument's static part in tf.function's key (Note [Extension
    types in tf.function]); carries a skeleton to rebuild the argument."""

    __slots__ = ("spec", "_k", "_h")
    _tfm_static_key = True      # kept in signatures (function_structures)

    def __init__(self, spec):
        self.spec = spec
        self._k = _static(spec)
        self._h = hash(self._k)

    def __tf_tracing_type__(self, context):
        return self

    def __eq__(self, other):
        return type(other) is _StaticKey and self._k == other._k

    def __hash__(self):
        return self._h

    def __repr__(self):
        return repr(self.spec).replace(repr(_TENSOR), "<tensor>")


def static_mismatch(given, traced):
    """A message if the arguments `given` hold an extension type whose
    static part differs from the one `traced` (both canonical argument
    structures of tf.function), else None. A concrete function runs its
    one trace: a different Python field would silently be ignored."""
    if isinstance(traced, _StaticKey):
        if isinstance(given, _StaticKey) and given != traced:
            return f"expected {traced!r}, got {given!r}"
        return None
    if isinstance(traced, (list, tuple)) and isinstance(given, (list,
                                                                tuple)):
        for g, t in zip(given, traced):
            r = static_mismatch(g, t)
            if r is not None:
                return r
    elif isinstance(traced, dict) and isinstance(given, dict):
        for k in traced:
            if k in given:
                r = static_mismatch(given[k], traced[k])
                if r is not None:
                    return r
    return None


# ---- saved models --------------------------------------------------------
# Note [Extension types in saved models]: a saved function whose arguments
# or results hold an extension type stores its static key as plain JSON
# (field names, Python values, TensorSpecs, nesting) and its class by
# name: the class's `__name__` class attribute (TF's convention for
# saving) or module.qualname. Loading looks the name up among the
# ExtensionType classes defined in the loading process (the latest
# definition of a name wins, as a notebook redefines classes) and rebuilds
# specs without running any constructor: nothing in the file names code
# to import or run. The JSON side is extension_type_saved.py.

_REGISTRY = {}


def registered_name(cls):
    name = cls.__dict__.get("__name__")
    return name if isinstance(name, str) else \
        f"{cls.__module__}.{cls.__qualname__}"


# ---- construction --------------------------------------------------------

def _mutation_error(obj, name):
    base = "ExtensionTypeSpec" if isinstance(obj, TypeSpec) else \
        "ExtensionType"
    return AttributeError(f"Cannot mutate attribute `{name}` outside the "
                          f"custom constructor of {base}.")


class _Immutable:
    """Fields are set only while a constructor runs."""

    __slots__ = ()

    def __setattr__(self, name, value):
        if not self.__dict__.get(_BUILDING):
            raise _mutation_error(self, name)
        self.__dict__[name] = value

    def __delattr__(self, name):
        if not self.__dict__.get(_BUILDING):
            raise _mutation_error(self, name)
        del self.__dict__[name]

    @classmethod
    def _tfm_from_fields(cls, values):
        """An instance with these (converted) field values, made without
        running a constructor (as TF rebuilds values and specs)."""
        obj = object.__new__(cls)
        obj.__dict__.update(values)
        return obj

    def _tfm_items(self):
        return [(f.name, self.__dict__[f.name]) for f in self._tfm_fields()]

    def _tfm_replace(self, values):
        return type(self)._tfm_from_fields(values)

    def _tfm_finish(self, context):
        """Converts the fields a custom constructor set; checks that it
        set them all."""
        d = self.__dict__
        fields = self._tfm_fields()
        missing = [f.name for f in fields if f.name not in d and
                   not f.has_default]
        if missing:
            raise ValueError(f"Missing required fields: {set(missing)}")
        for f in fields:
            v = d[f.name] if f.name in d else f.default
            d[f.name] = _field.convert(v, f.value_type, (f.name,), context)


def _generated_init(fields, context, for_spec):
    """The __init__ of a class without its own: one parameter per field
    (in a Spec, only Python-valued fields keep their defaults)."""
    P = inspect.Parameter
    params = []
    for f in reversed(fields):      # defaults only after the last required
        keep = f.has_default and not (for_spec and _holds_tensors(f)) and \
            all(p.default is not P.empty for p in params)
        params.insert(0, P(f.name, P.POSITIONAL_OR_KEYWORD,
                           default=f.default if keep else P.empty,
                           annotation=P.empty if for_spec else f.value_type))
    params.insert(0, P("self", P.POSITIONAL_OR_KEYWORD))
    sig = inspect.Signature(params)

    def __init__(self, *args, **kwargs):
        bound = sig.bind(self, *args, **kwargs)   # Python's TypeErrors
        d = self.__dict__
        for f in fields:
            if f.name in bound.arguments:
                v = bound.arguments[f.name]
            elif f.has_default:
                v = f.default
            else:               # a Spec's tensor field left out
                raise TypeError(f"missing a required argument: "
                                f"{f.name!r}")
            d[f.name] = _field.convert(v, f.value_type, (f.name,), context)
        if not for_spec:
            self.__validate__()

    __init__.__signature__ = sig
    __init__._tfm_generated = True
    return __init__


def _holds_tensors(f):
    return f.value_type is Tensor or (
        isinstance(f.value_type, type) and
        issubclass(f.value_type, CompositeTensor))


def _wrapped_init(user_init, context, for_spec):
    """A user's __init__: fields may be set while it runs; then they are
    converted and checked, and __validate__ runs."""
    def __init__(self, *args, **kwargs):
        d = self.__dict__
        outer = d.get(_BUILDING, 0)
        d[_BUILDING] = outer + 1
        try:
            user_init(self, *args, **kwargs)
        finally:
            if outer:
                d[_BUILDING] = outer
            else:
                d.pop(_BUILDING, None)
        if not outer:
            self._tfm_finish(context)
            if not for_spec:
                self.__validate__()

    __init__.__wrapped__ = user_init
    __init__.__doc__ = user_init.__doc__
    __init__._tfm_wrapped = True
    return __init__


def _setup_init(cls, fields, context, for_spec):
    own = cls.__dict__.get("__init__")
    if own is None:
        inherited = getattr(cls, "__init__", None)
        if getattr(inherited, "_tfm_wrapped", False):
            return              # a base's custom constructor
        cls.__init__ = _generated_init(fields, context, for_spec)
    elif not getattr(own, "_tfm_generated", False) and \
            not getattr(own, "_tfm_wrapped", False):
        cls.__init__ = _wrapped_init(own, context, for_spec)


# ---- the value -----------------------------------------------------------

class ExtensionType(_Immutable, CompositeTensor):
    """Base of user-defined composite tensors; see the module doc."""

    _tfm_field_list = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_tfm_abstract"):
            return              # BatchableExtensionType itself
        annotations = cls.__dict__.get("__annotations__", {})
        base_fields = next((b.__dict__["_tfm_field_list"]
                            for b in cls.__mro__[1:]
                            if "_tfm_field_list" in b.__dict__), ())
        fields = _field.fields_of(cls, annotations, base_fields)
        cls._tfm_field_list = tuple(fields)
        for f in fields:        # defaults live in the fields, not the class
            if f.name in cls.__dict__ and not isinstance(
                    cls.__dict__[f.name], (property, staticmethod,
                                           classmethod)):
                delattr(cls, f.name)
        _setup_init(cls, fields, VALUE, False)
        _make_spec_class(cls)
        _REGISTRY[registered_name(cls)] = cls

    @classmethod
    def _tfm_fields(cls):
        return cls._tfm_field_list

    def __validate__(self):
        pass

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in self._tfm_items())
        return f"{type(self).__qualname__}({items})"

    __hash__ = None

    def __eq__(self, other):
        if type(self) is not type(other):
            return False
        if self._type_spec != other._type_spec:
            return False
        from .ops import math_ops, reduce_ops
        from .ops.constant_op import constant
        mine, theirs = _tensors(self, []), _tensors(other, [])
        result = constant(True)
        for a, b in zip(mine, theirs):
            result = math_ops.logical_and(
                result, reduce_ops.reduce_all(math_ops.equal(a, b)))
        return result

    def __ne__(self, other):
        eq = self.__eq__(other)
        if isinstance(eq, Tensor):
            from .ops import math_ops
            return math_ops.logical_not(eq)
        return not eq

    # ---- composite ---------------------------------------------------
    @property
    def _type_spec(self):
        return self.Spec._tfm_from_fields(
            {k: _spec_of(v) for k, v in self._tfm_items()})

    def _to_components(self):
        out = []
        for _, v in self._tfm_items():
            _tensors(v, out)
        return out

    def _key_components(self):
        return [_key_of(self)] + self._to_components()

    @classmethod
    def _from_components(cls, components):
        """From tf.function's key components (a _StaticKey first)."""
        return components[0].spec._from_components(list(components[1:]))

    @staticmethod
    def _spec_from_components(specs):
        nxt = iter(specs[1:]).__next__
        return _respec(specs[0].spec, nxt)

    def _is_symbolic(self):
        return any(t._symbolic for t in self._to_components())

    # tf.data and tf.map_fn slice and batch only BatchableExtensionTypes.
    def _batch_size(self):
        raise TypeError(f"{type(self).__name__} is not a "
                        f"BatchableExtensionType: tf.data and tf.map_fn "
                        f"cannot slice or batch it")

    _batch_item = _batch_slice = _batch_size


class ExtensionTypeSpec(_Immutable, TypeSpec):
    """Base of the generated `Spec` classes: the TypeSpec of an
    ExtensionType value."""

    _tfm_value_type = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        vt = cls.__dict__.get("_tfm_value_type")
        if vt is not None:
            _setup_init(cls, vt._tfm_field_list, SPEC, True)

    @classmethod
    def _tfm_fields(cls):
        return cls._tfm_value_type._tfm_field_list

    @property
    def value_type(self):
        return self._tfm_value_type

    @classmethod
    def from_value(cls, value):
        return value._type_spec

    @property
    def _component_specs(self):
        out = []
        for _, v in self._tfm_items():
            _specs(v, out)
        return out

    def _from_components(self, components):
        nxt = iter(components).__next__
        return self.value_type._tfm_from_fields(
            {k: _rebuild(v, nxt) for k, v in self._tfm_items()})

    def _to_components(self, value):
        return value._to_components()

    def _key_components(self):
        return [_key_of(self)] + self._component_specs

    def is_compatible_with(self, other):
        if isinstance(other, CompositeTensor):
            other = other._type_spec
        if type(other) is not type(self):
            return False
        return all(_compatible(a, b) for (_, a), (_, b) in
                   zip(self._tfm_items(), other._tfm_items()))

    def is_subtype_of(self, other):
        return type(other) is type(self) and \
            other.most_specific_common_supertype([self]) == other

    def most_specific_common_supertype(self, others):
        out = self
        for o in others:
            if type(o) is not type(self):
                return None
            vals = {}
            for (k, a), (_, b) in zip(out._tfm_items(), o._tfm_items()):
                c = _common(a, b)
                if c is None:
                    return None
                vals[k] = c
            out = out._tfm_replace(vals)
        return out

    def _tfm_key(self):
        return (type(self),) + tuple((k, _key(v))
                                     for k, v in self._tfm_items())

    def __eq__(self, other):
        return type(other) is type(self) and \
            self._tfm_key() == other._tfm_key()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._tfm_key())

    def __repr__(self):
        def show(v):
            return repr(dict(v)) if isinstance(v, ImmutableDict) \
                else repr(v)
        items = ", ".join(f"{k}={show(v)}" for k, v in self._tfm_items())
        return f"{type(self).__qualname__}({items})"

    # tf.data and tf.map_fn: the spec of one item of a batch of these.
    def _unbatch(self):
        from .extension_type_batch import unbatch_spec
        return unbatch_spec(self)

    def _batch(self, batch_size):
        from .extension_type_batch import batch_spec
        return batch_spec(self, batch_size)


class BatchableExtensionTypeSpec(ExtensionTypeSpec):
    """The Spec of a BatchableExtensionType."""


class BatchableExtensionType(ExtensionType):
    """An ExtensionType that tf.data, tf.map_fn and Keras can batch and
    unbatch: every tensor, TensorShape and batchable nested field gains
    (or loses) an outer batch dimension (TF's default batch encoder)."""

    _tfm_abstract = True

    def _batch_size(self):
        from .extension_type_batch import batch_size
        return batch_size(self)

    def _batch_item(self, i):
        from .extension_type_batch import item
        return item(self, i)

    def _batch_slice(self, start, stop):
        from .extension_type_batch import slice_rows
        return slice_rows(self, start, stop)

    @classmethod
    def _stack_rows(cls, items):
        from .extension_type_batch import stack
        return stack(items)


def _make_spec_class(cls):
    """cls.Spec: a subclass of the base Spec holding the methods of a
    `class Spec:` the user nested in cls."""
    base = BatchableExtensionTypeSpec if issubclass(
        cls, BatchableExtensionType) else ExtensionTypeSpec
    ns = {}
    user = cls.__dict__.get("Spec")
    if isinstance(user, type) and not issubclass(user, ExtensionTypeSpec):
        ns.update({k: v for k, v in user.__dict__.items()
                   if k not in ("__dict__", "__weakref__")})
    ns["__module__"] = cls.__module__
    ns["__qualname__"] = f"{cls.__qualname__}.Spec"
    ns["_tfm_value_type"] = cls
    cls.Spec = type("Spec", (base,), ns)


def type_spec_from_value(value):
    """tf.type_spec_from_value: a tensor's TensorSpec, a composite's
    TypeSpec."""
    if isinstance(value, Tensor):
        return TensorSpec(value.shape, value.dtype)
    if isinstance(value, CompositeTensor):
        return value._type_spec
    if hasattr(value, "_as_tensor"):
        return TensorSpec.from_tensor(value)
    from .ops.constant_op import convert_to_tensor
    try:
        t = convert_to_tensor(value)
    except (TypeError, ValueError):
        raise TypeError(f"Could not build a TypeSpec for {value!r} of "
                        f"unsupported type {type(value)}.") from None
    return TensorSpec(t.shape, t.dtype)
