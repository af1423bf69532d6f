"""How tf.function sees its arguments and results.

Arguments: the Python twin of the C key walker (csrc/python/function_key.c,
Note [The call path]), which nests through exact lists, tuples and dicts
(by sorted key) and namedtuples, takes tensors, NumPy values and
TensorSpecs as graph inputs and keys other objects by identity; and the
summaries the retracing warnings compare. Results: a trace's outputs as
a structure of _LEAF slots and a flat list of tensors, and their packing
on each call (Note [Output order])."""
import numpy as np

from ._tensor import Tensor
from .composite_tensor import CompositeTensor, TypeSpec
from .tensor_spec import TensorSpec


# ---- composite tensors ---------------------------------------------------
# Note [Composite arguments]: a composite argument (tf.RaggedTensor,
# tf.sparse.SparseTensor) or a composite spec in an input_signature is
# replaced, as soon as the arguments are bound, by a _Components tuple of
# its component tensors (or TensorSpecs). Everything downstream (the C
# key, placeholders, signature checks) then sees plain tensors in a
# namedtuple-like container, whose type (one per composite class) keeps
# a ragged argument's key apart from a sparse one's. The Python function
# receives the composite rebuilt from its placeholders; a composite
# result is returned as its components and rebuilt when the outputs are
# packed. The C fast path keys a composite by identity and so misses,
# and the slow path finds the trace by the components' key.

class _Components(tuple):
    """A composite's components, of a subclass per composite type."""
    __slots__ = ()
    _fields = ()             # what makes the C key walk it as a namedtuple
    value_type = None

    def __new__(cls, *items):
        return tuple.__new__(cls, items)

    def rebuild(self):
        vt = self.value_type
        if any(isinstance(x, TensorSpec) for x in self):
            return vt._spec_from_components(list(self))
        return vt._from_components(list(self))

    def __repr__(self):
        return f"{type(self).__name__}{tuple(self)!r}"


_COMPONENT_TYPES = {}


def _components_of(x, key=True):
    """x (a composite value or spec) as its _Components. For a key, a
    composite may give Python values among them (a SparseTensor its
    dense shape), which then stay static in the trace."""
    if key and hasattr(x, "_key_components"):
        items = x._key_components()
    elif isinstance(x, TypeSpec):
        items = x._component_specs
    else:
        items = x._to_components()
    vt = x.value_type if isinstance(x, TypeSpec) else type(x)
    return _components_type(vt)(*items)


def _components_type(vt):
    """The _Components subclass of composite class vt (one per class)."""
    t = _COMPONENT_TYPES.get(vt)
    if t is None:
        t = _COMPONENT_TYPES[vt] = type(f"{vt.__name__}Components",
                                        (_Components,),
                                        {"__slots__": (), "value_type": vt})
    return t


def _expand_composites(x):
    """x with each composite replaced by its _Components."""
    if isinstance(x, (CompositeTensor, TypeSpec)):
        return _components_of(x)
    t = type(x)
    if t is list:
        return [_expand_composites(v) for v in x]
    if t is tuple:
        return tuple(_expand_composites(v) for v in x)
    if t is dict:
        return {k: _expand_composites(v) for k, v in x.items()}
    if _is_namedtuple(x) and not isinstance(x, _Components):
        return t(*[_expand_composites(v) for v in x])
    return x


def _rebuild_composites(x):
    """_expand_composites' inverse."""
    if isinstance(x, _Components):
        return x.rebuild()
    t = type(x)
    if t is list:
        return [_rebuild_composites(v) for v in x]
    if t is tuple:
        return tuple(_rebuild_composites(v) for v in x)
    if t is dict:
        return {k: _rebuild_composites(v) for k, v in x.items()}
    if _is_namedtuple(x):
        return t(*[_rebuild_composites(v) for v in x])
    return x


# ---- structures ----------------------------------------------------------
# These walk values exactly as the C key does (csrc/python/function_key.c):
# exact lists/tuples/dicts (dict keys sorted) and namedtuples are
# structures; tensors, NumPy values and TensorSpecs are leaves.

def _is_leaf(x):
    return isinstance(x, (Tensor, TensorSpec, np.ndarray, np.generic))


def _is_namedtuple(x):
    return isinstance(x, tuple) and type(x) is not tuple and \
        hasattr(type(x), "_fields")


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def _map_leaves(fn, x):
    if _is_leaf(x):
        return fn(x)
    t = type(x)
    if t is list:
        return [_map_leaves(fn, v) for v in x]
    if t is tuple:
        return tuple(_map_leaves(fn, v) for v in x)
    if t is dict:
        return {k: _map_leaves(fn, x[k]) for k in _sorted_keys(x)}
    if _is_namedtuple(x):
        return t(*[_map_leaves(fn, v) for v in x])
    return x


def _flatten_leaves(x, out):
    if _is_leaf(x):
        out.append(x)
        return out
    t = type(x)
    if t is list or t is tuple or _is_namedtuple(x):
        for v in x:
            _flatten_leaves(v, out)
    elif t is dict:
        for k in _sorted_keys(x):
            _flatten_leaves(x[k], out)
    return out


def _leaf_names(name, x, out):
    """One name per leaf of x (a parameter's value)."""
    n = len(_flatten_leaves(x, []))
    out.extend([name] * n)


def _leaf_spec(x):
    if isinstance(x, TensorSpec):
        return x
    if isinstance(x, Tensor):
        return TensorSpec(x._shape_tuple, x.dtype)
    a = np.asarray(x)
    return TensorSpec(a.shape, a.dtype)


class _ObjectArg:
    """An identity-keyed argument as a signature shows it, without
    keeping the object alive (see Function._watch)."""

    __slots__ = ("text",)

    def __init__(self, obj):
        if hasattr(type(obj), "__tf_tracing_type__"):
            # Keyed by its TraceType (csrc/python/function_key.c), which
            # TF shows.
            self.text = repr(obj.__tf_tracing_type__(None))
            return
        # TF 2.21's text for such an argument, unbalanced ')' included.
        self.text = (f"Weakref[<weakref at {id(self):#x}; to "
                     f"'{type(obj).__name__}' at {id(obj):#x}>])")

    def __repr__(self):
        return self.text


def _forget_objects(x):
    if x is None or isinstance(x, (bool, int, float, str, TensorSpec)):
        return x
    if getattr(type(x), "_tfm_static_key", False):
        return x        # an extension type's static key: only specs
    t = type(x)
    if t is list:
        return [_forget_objects(v) for v in x]
    if t is tuple:
        return tuple(_forget_objects(v) for v in x)
    if t is dict:
        return {k: _forget_objects(v) for k, v in x.items()}
    if _is_namedtuple(x):
        return t(*[_forget_objects(v) for v in x])
    return _ObjectArg(x)


class _Leaf:
    """Where an output tensor goes in the output structure."""
    __slots__ = ()

    def __repr__(self):
        return "<leaf>"


_LEAF = _Leaf()

OUT_NONE, OUT_SINGLE, OUT_TUPLE, OUT_LIST, OUT_GENERIC = range(5)


# Note [Output order]: as tf.nest does, the flat outputs of a trace take a
# dict's values by sorted key, and packing gives the dict back in the
# order the function built it. The C call path packs through
# _pack_outputs (on every call for nested outputs); saved_model walks
# ConcreteFunction._out_structure, whose dicts are in flat order.

class _OutDict(dict):
    """A dict among a trace's outputs, its entries in flat order; `order`
    gives the function's key order as (key, index in flat order) pairs,
    or None when that is the flat order. Spares the call path a sort per
    dict."""
    __slots__ = ("order",)


class _Packer:
    """An output structure compiled to one Python expression over the
    flat outputs, e.g. `lambda f: {c0: f[2], c1: (f[0], f[1])}`: the
    cached call of a function with nested outputs packs them with it,
    at a fraction of the cost of walking the structure."""
    __slots__ = ("fn",)

    _MAX_DEPTH = 32          # the parser's nesting limit is 200
    _MAX_LEAVES = 4096

    def __init__(self, fn):
        self.fn = fn

    @classmethod
    def compile(cls, structure):
        """A _Packer for structure, or structure itself when it is too
        big or deep to compile."""
        consts = {"__builtins__": {}}
        count = [0]

        def const(v):
            name = f"c{len(consts)}"
            consts[name] = v
            return name

        def expr(s, depth):
            if depth > cls._MAX_DEPTH or count[0] > cls._MAX_LEAVES:
                raise RecursionError
            if s is _LEAF:
                count[0] += 1
                return f"f[{count[0] - 1}]"
            t = type(s)
            if t is list or t is tuple:
                items = "".join(expr(v, depth + 1) + ", " for v in s)
                return f"[{items}]" if t is list else f"({items})"
            if t is _OutDict:
                vals = [expr(v, depth + 1) for v in s.values()]
                order = s.order or [(k, i) for i, k in enumerate(s)]
                return "{" + "".join(f"{const(k)}: {vals[i]}, "
                                     for k, i in order) + "}"
            if isinstance(s, _Components):
                items = "".join(expr(v, depth + 1) + ", " for v in s)
                return f"{const(t)}({items}).rebuild()"
            if _is_namedtuple(s):
                items = "".join(expr(v, depth + 1) + ", " for v in s)
                return f"{const(t)}({items})"
            return const(s)

        try:
            body = expr(structure, 0)
        except RecursionError:
            return structure
        return cls(eval("lambda f: " + body, consts))   # noqa: S307


def _pack_outputs(structure, flat):
    if type(structure) is _Packer:
        return structure.fn(flat)
    nxt = iter(flat).__next__

    # List comprehensions, not generators: this runs on every call.
    def pack(s):
        if s is _LEAF:
            return nxt()
        t = type(s)
        if t is list:
            return [pack(v) for v in s]
        if t is tuple:
            return tuple([pack(v) for v in s])
        if t is _OutDict:
            if s.order is None:
                return {k: pack(v) for k, v in s.items()}
            vals = [pack(v) for v in s.values()]
            return {k: vals[i] for k, i in s.order}
        if t is dict:
            vals = {k: pack(s[k]) for k in _sorted_keys(s)}
            return {k: vals[k] for k in s}
        if isinstance(s, _Components):
            return t(*[pack(v) for v in s]).rebuild()
        if _is_namedtuple(s):
            return t(*[pack(v) for v in s])
        return s

    return pack(structure)


def _weak_outputs(packing, kind, weak):
    """A _Packer that marks the flat outputs at indices `weak` weak (Note
    [One weak flag]: only a mode that makes weak tensors traces weak
    outputs, so plain calls never come here) and packs them as kind and
    packing (a structure or _Packer) say."""
    from .experimental.numpy.weak_tensor import mark

    def fn(flat):
        for i in weak:
            mark(flat[i])
        if kind == OUT_SINGLE:
            return flat[0]
        if kind == OUT_TUPLE:
            return tuple(flat)
        if kind == OUT_LIST:
            return flat
        return _pack_outputs(packing, flat)
    return _Packer(fn)


def _in_flat_order(s):
    """s with its dicts' entries in the order of the flat outputs."""
    t = type(s)
    if t is list or t is tuple:
        return t(_in_flat_order(v) for v in s)
    if t is _OutDict:
        return {k: _in_flat_order(v) for k, v in s.items()}
    if t is dict:
        return {k: _in_flat_order(s[k]) for k in _sorted_keys(s)}
    if _is_namedtuple(s):
        return t(*[_in_flat_order(v) for v in s])
    return s


def _prepare_outputs(value, fname):
    """The traced function's return value -> (structure with _LEAF for each
    tensor, flat tensors, output kind). Runs inside the trace: Python
    numbers become constants, variables are read."""
    from .ops.constant_op import convert_to_tensor
    flat = []

    def conv(x, path):
        if x is None:
            return None
        if isinstance(x, Tensor):
            flat.append(x)
            return _LEAF
        if isinstance(x, CompositeTensor):
            # An extension type keeps its static key among its outputs
            # (Note [Extension types in tf.function], extension_type.py).
            parts = _components_of(x, key=hasattr(x, "_tfm_fields"))
            return type(parts)(*[conv(v, path) for v in parts])
        t = type(x)
        if t is list:
            return [conv(v, f"{path}[{i}]") for i, v in enumerate(x)]
        if t is tuple:
            return tuple(conv(v, f"{path}[{i}]") for i, v in enumerate(x))
        if t is dict:
            keys = _sorted_keys(x)
            d = _OutDict((k, conv(x[k], f"{path}[{k!r}]")) for k in keys)
            where = {k: i for i, k in enumerate(keys)}
            order = tuple((k, where[k]) for k in x)
            d.order = None if list(x) == keys else order
            return d
        if _is_namedtuple(x):
            return t(*[conv(v, f"{path}.{f}") for f, v in
                       zip(t._fields, x)])
        if isinstance(x, (bool, int, float, np.ndarray, np.generic)) or \
                hasattr(x, "_as_tensor"):
            t = convert_to_tensor(x)
            if t is not x and isinstance(x, (int, float)):
                # A Python number returned is weak where the mode makes
                # it so, as TF's returned constants are.
                from .experimental.numpy import weak_tensor
                if weak_tensor.weak_alone(x):
                    weak_tensor.mark(t)
            flat.append(t)
            return _LEAF
        if hasattr(type(x), "__tf_tracing_type__"):
            return x        # a static key: a constant of the structure
        raise TypeError(
            f"To be compatible with tf.function, Python functions must "
            f"return zero or more Tensors or None values; in compilation of "
            f"{fname}, found return value{path} of type {type(x).__name__}, "
            f"which is not a Tensor.")

    structure = conv(value, "")
    if structure is None:
        kind = OUT_NONE
    elif structure is _LEAF:
        kind = OUT_SINGLE
    elif type(structure) is tuple and all(s is _LEAF for s in structure):
        kind = OUT_TUPLE
    elif type(structure) is list and all(s is _LEAF for s in structure):
        kind = OUT_LIST
    else:
        kind = OUT_GENERIC
    return structure, flat, kind


# ---- argument descriptions (retracing warnings, signatures) -------------

def _describe(x, depth=0):
    """A hashable, printable summary of an argument: what the cache key
    saw, without holding the value."""
    if depth > 8:
        return ("...",)
    if isinstance(x, TensorSpec):
        return ("tensor", x.dtype.name, x._dims)
    if isinstance(x, Tensor):
        return ("tensor", x.dtype.name, x._shape_tuple)
    if isinstance(x, (np.ndarray, np.generic)):
        a = np.asarray(x)
        return ("tensor", a.dtype.name, a.shape)
    if x is None or isinstance(x, (bool, int, float, str)):
        return ("value", type(x).__name__, repr(x))
    t = type(x)
    if t is list or t is tuple or _is_namedtuple(x):
        return (t.__name__, tuple(_describe(v, depth + 1) for v in x))
    if t is dict:
        return ("dict", tuple((repr(k), _describe(x[k], depth + 1))
                              for k in _sorted_keys(x)))
    return ("object", t.__name__, id(x))


def _desc_text(d):
    kind = d[0]
    if kind == "tensor":
        return f"{d[1]} tensor of shape {tuple(d[2])}"
    if kind == "value":
        return d[2]
    if kind == "object":
        return f"a {d[1]} object (id {d[2]:#x})"
    if kind == "dict":
        return "{" + ", ".join(f"{k}: {_desc_text(v)}" for k, v in d[1]) \
            + "}"
    if kind == "...":
        return "..."
    inner = ", ".join(_desc_text(v) for v in d[1])
    return f"[{inner}]" if kind == "list" else f"({inner})"


def _diff(path, old, new, out):
    if old == new or len(out) >= 3:
        return
    if old[0] == new[0] == "tensor":
        changes = []
        if old[1] != new[1]:
            changes.append(f"dtype {old[1]} -> {new[1]}")
        if tuple(old[2]) != tuple(new[2]):
            changes.append(f"shape {tuple(old[2])} -> {tuple(new[2])}")
        out.append(f"argument {path}: " + ", ".join(changes))
        return
    if old[0] == new[0] and old[0] in ("list", "tuple") and \
            len(old[1]) == len(new[1]):
        for i, (a, b) in enumerate(zip(old[1], new[1])):
            _diff(f"{path}[{i}]", a, b, out)
        return
    if old[0] == new[0] == "dict" and [k for k, _ in old[1]] == \
            [k for k, _ in new[1]]:
        for (k, a), (_, b) in zip(old[1], new[1]):
            _diff(f"{path}[{k}]", a, b, out)
        return
    if old[0] == new[0] == "value" and old[1] == new[1]:
        out.append(f"argument {path}: Python value {old[2]} -> {new[2]} "
                   f"(Python values are part of the signature: pass a "
                   f"tensor to avoid retracing)")
        return
    if old[0] == new[0] == "object" and old[1] == new[1]:
        out.append(f"argument {path}: a different {old[1]} object "
                   f"({old[2]:#x} -> {new[2]:#x}; objects are keyed by "
                   f"identity)")
        return
    out.append(f"argument {path}: {_desc_text(old)} -> {_desc_text(new)}")
