"""tf.nest: flatten, pack and map nested Python structures.

A structure nests through lists, tuples, namedtuples, other sequences
(range, bytearray), mappings (dicts, OrderedDicts, defaultdicts; their
values taken in sorted key order), dict views and attrs classes (their
fields in order). Everything else is a leaf: None, str and bytes, sets,
NumPy arrays, tensors and variables. Packing keeps each
container's own type and a mapping's own key order, so flatten and
pack_sequence_as are inverses.

Composite tensors (tf.RaggedTensor, tf.sparse.SparseTensor) and their
specs are leaves, unless expand_composites=True: then each stands for its
component tensors (TF's order: a ragged tensor's flat_values then its
row_splits; a sparse tensor's indices, values, dense_shape), and packing
rebuilds it from as many components (tfmini/composite_tensor.py).

This is the one nest of the package: tf.cond, tf.while_loop, the tape,
tf.data and Keras all walk structures with it. Two callers need other
leaves, and get them through the private `is_leaf` of _flatten, _pack
and _map (optree's and JAX's name for it; TF keeps the same switch as
the internal "modality" of its nest_util):
- tf.data reads a list as one value, not a structure (_DATA_LEAF, TF's
  Modality.DATA);
- Keras's fit reads a list of numbers as one array.
tf.function's argument walker is not here: it must agree with the C key
(csrc/python/function_key.c), which nests only exact lists, tuples and dicts
and namedtuples and keys every other object by identity."""
import collections as _collections
import collections.abc as _abc

__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure",
           "pack_sequence_as"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and isinstance(
        getattr(type(x), "_fields", None), tuple)


def _is_attrs(x):
    return hasattr(type(x), "__attrs_attrs__")


# What a type is to nest, cached: its instances are leaves, exact lists
# and tuples, exact dicts, or other containers (walked by _children). The
# abc checks of a new type are slow next to a dict lookup, and the tape
# and tf.cond flatten on every call. (A type registered with an abc
# after nest has seen it keeps its old kind.)
_LEAF, _SEQ, _DICT, _OTHER = range(4)
_KINDS = {list: _SEQ, tuple: _SEQ, dict: _DICT, int: _LEAF, float: _LEAF,
          bool: _LEAF, str: _LEAF, bytes: _LEAF, type(None): _LEAF}


def _kind(t):
    k = _KINDS.get(t)
    if k is None:
        nested = not issubclass(t, (str, bytes)) and (
            issubclass(t, (_abc.Sequence, _abc.Mapping, _abc.MappingView))
            or hasattr(t, "__attrs_attrs__"))
        k = _OTHER if nested else _LEAF
        if len(_KINDS) < 4096:       # types made per call stay bounded
            _KINDS[t] = k
    return k


def is_nested(seq):
    """True for the containers tf.nest walks into (see the module doc)."""
    return _kind(type(seq)) != _LEAF


def _children(x):
    """x's direct children in flattening order (mappings by sorted key;
    an unsortable key mix raises Python's TypeError, as in TF)."""
    if isinstance(x, _abc.Mapping):
        return [x[k] for k in sorted(x)]
    if _is_attrs(x):
        return [getattr(x, a.name) for a in type(x).__attrs_attrs__]
    return list(x)


def _flatten_into(x, out, is_leaf):
    if is_leaf is not None and is_leaf(x):
        out.append(x)
        return out
    k = _kind(type(x))
    if k == _LEAF:
        out.append(x)
    elif k == _SEQ:
        for c in x:
            _flatten_into(c, out, is_leaf)
    elif k == _DICT:
        for key in sorted(x):
            _flatten_into(x[key], out, is_leaf)
    else:
        for c in _children(x):
            _flatten_into(c, out, is_leaf)
    return out


def _flatten(structure, is_leaf=None):
    """flatten, with is_leaf(x) true for values to keep whole."""
    return _flatten_into(structure, [], is_leaf)


def _paths_into(x, path, out, depth):
    if depth > 100:
        raise ValueError(f"Structure at {'.'.join(map(str, path))} is "
                         f"nested more than 100 levels deep")
    k = _kind(type(x))
    if k == _LEAF:
        out.append((path, x))
    elif k == _SEQ:
        for i, c in enumerate(x):
            _paths_into(c, path + (i,), out, depth + 1)
    elif isinstance(x, _abc.Mapping):
        for key in sorted(x):
            _paths_into(x[key], path + (key,), out, depth + 1)
    elif _is_attrs(x):
        for a in type(x).__attrs_attrs__:
            _paths_into(getattr(x, a.name), path + (a.name,), out,
                        depth + 1)
    else:
        for i, c in enumerate(_children(x)):
            _paths_into(c, path + (i,), out, depth + 1)
    return out


def _flatten_with_tuple_paths(structure):
    """[(path, leaf)] in flatten's order, a path being the tuple of keys
    and indices that lead to the leaf (TF's internal function of this
    name; tf.Module and tf.train.Checkpoint name variables by it)."""
    return _paths_into(structure, (), [], 0)


def _DATA_LEAF(x):
    """tf.data's rule: a list is a value (made a tensor), not a
    structure."""
    return isinstance(x, list)


def _expanded(leaves):
    """leaves with each composite replaced by its components."""
    from .composite_tensor import CompositeTensor, TypeSpec
    out = []
    for x in leaves:
        if isinstance(x, CompositeTensor):
            out.extend(_expanded(x._to_components()))
        elif isinstance(x, TypeSpec):
            out.extend(_expanded(x._component_specs))
        else:
            out.append(x)
    return out


def _composites_packed(structure, flat):
    """flat (expanded components) regrouped as structure's leaves: one
    composite rebuilt per composite leaf of structure."""
    from .composite_tensor import is_composite, spec_of
    out, i = [], 0
    for leaf in _flatten(structure):
        if is_composite(leaf):
            spec = spec_of(leaf)
            n = len(_expanded([spec]))
            out.append(spec._from_components(list(flat[i:i + n])))
            i += n
        else:
            out.append(flat[i] if i < len(flat) else None)
            i += 1
    if i != len(flat):
        raise ValueError(
            f"Could not pack sequence. Structure had {i} atoms, but "
            f"flat_sequence had {len(flat)} items.  Structure: "
            f"{structure}, flat_sequence: {flat}.")
    return out


def flatten(structure, expand_composites=False):
    """The leaves of structure, depth first; a leaf gives [leaf]."""
    flat = _flatten_into(structure, [], None)
    return _expanded(flat) if expand_composites else flat


def _rebuild(like, children):
    """A container of like's type holding children (in _children order)."""
    t = type(like)
    if t is list:
        return children
    if t is tuple:
        return tuple(children)
    if isinstance(like, _abc.Mapping):
        by_key = dict(zip(sorted(like), children))
        items = [(k, by_key[k]) for k in like]
        if isinstance(like, _collections.defaultdict):
            return type(like)(like.default_factory, items)
        return type(like)(items)
    if _is_namedtuple(like) or _is_attrs(like):
        return type(like)(*children)
    if isinstance(like, (list, tuple)):
        return type(like)(children)
    return list(children)   # a range or a dict view packs as a list


def _pack_from(structure, it, is_leaf):
    """structure rebuilt with the next values of the iterator it."""
    if is_leaf is not None and is_leaf(structure):
        return next(it)
    k = _kind(type(structure))
    if k == _LEAF:
        return next(it)
    if k == _SEQ:
        out = [_pack_from(c, it, is_leaf) for c in structure]
        return out if type(structure) is list else tuple(out)
    return _rebuild(structure, [_pack_from(c, it, is_leaf)
                                for c in _children(structure)])


def _pack(structure, flat, is_leaf=None):
    """pack_sequence_as, with is_leaf as in _flatten and no checks."""
    return _pack_from(structure, iter(flat), is_leaf)


def _map(func, structure, is_leaf=None):
    """map_structure over one structure, with is_leaf as in _flatten."""
    return _pack(structure, [func(x) for x in _flatten(structure, is_leaf)],
                 is_leaf)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """flat_sequence's items in structure's nesting (flatten's inverse)."""
    if expand_composites and is_nested(flat_sequence):
        flat_sequence = _composites_packed(structure, list(flat_sequence))
    if not is_nested(flat_sequence):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence}\n"
                        f"into a structure, but found incompatible type "
                        f"`{type(flat_sequence)}` instead.")
    if not is_nested(structure):
        if len(flat_sequence) != 1:
            raise ValueError(
                f"The target structure is of type `{type(structure)}`\n"
                f"  {structure}\nHowever the input is a sequence "
                f"({type(flat_sequence)}) of length {len(flat_sequence)}.\n"
                f"  {flat_sequence}\nnest cannot guarantee that it is safe "
                f"to map one to the other.")
        return flat_sequence[0]
    it = iter(flat_sequence)
    try:
        out = _pack_from(structure, it, None)
        extra = next(it, it) is not it
    except StopIteration:
        extra = True
    if extra:
        n = len(flatten(structure))
        raise ValueError(
            f"Could not pack sequence. Structure had {n} atoms, but "
            f"flat_sequence had {len(flat_sequence)} items.  Structure: "
            f"{structure}, flat_sequence: {flat_sequence}.")
    return out


def _same_container_type(a, b):
    """check_types' rule: namedtuples match by name and fields; any two
    lists match (list subclasses included) and any two mappings do."""
    if _is_namedtuple(a) and _is_namedtuple(b):
        return (type(a).__name__ == type(b).__name__
                and type(a)._fields == type(b)._fields)
    if type(a) is type(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return True
    return isinstance(a, _abc.Mapping) and isinstance(b, _abc.Mapping)


def _show(x):
    # str(), not format(): a tensor's __format__ shows only its values.
    return f"type={type(x).__name__} str={str(x)}"


def _mismatch(a, b, check_types):
    """None if a and b nest alike, else (exception class, detail)."""
    na, nb = is_nested(a), is_nested(b)
    if na != nb:
        seq, other = (a, b) if na else (b, a)
        return ValueError, (f"Substructure \"{_show(seq)}\" is a sequence, "
                            f"while substructure \"{_show(other)}\" is not")
    if not na:
        return None
    if check_types and not _same_container_type(a, b):
        return TypeError, (
            f"The two namedtuples don't have the same sequence type. First "
            f"structure {_show(a)} has type {type(a).__name__}, while "
            f"second structure {_show(b)} has type {type(b).__name__}")
    if (isinstance(a, _abc.Mapping) and isinstance(b, _abc.Mapping)
            and set(a) != set(b)):
        return ValueError, (
            f"The two dictionaries don't have the same set of keys. First "
            f"structure has keys {_show(list(a))}, while second structure "
            f"has keys {_show(list(b))}")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        return ValueError, (
            f"The two structures don't have the same number of elements. "
            f"First structure: {_show(a)}. Second structure: {_show(b)}")
    for x, y in zip(ca, cb):
        r = _mismatch(x, y, check_types)
        if r is not None:
            return r
    return None


def _composite_mismatch(a, b):
    """None if the composites among a's and b's leaves are alike (same
    type and ragged_rank), else (exception class, detail)."""
    from .composite_tensor import is_composite, spec_of
    for x, y in zip(_flatten(a), _flatten(b)):
        if is_composite(x) or is_composite(y):
            sx = spec_of(x) if is_composite(x) else None
            sy = spec_of(y) if is_composite(y) else None
            if sx is None or sy is None or type(sx) is not type(sy) or \
                    len(_expanded([sx])) != len(_expanded([sy])):
                return TypeError, (f"{_show(x)} and {_show(y)} are not "
                                   f"compatible composite values")
    return None


class _Dot:
    """A leaf placeholder: the error's outline of a structure shows each
    leaf as a bare dot."""

    def __repr__(self):
        return "."


def _outline(structure):
    return repr(map_structure(lambda _: _Dot(), structure))


def assert_same_structure(nest1, nest2, check_types=True,
                          expand_composites=False):
    """ValueError if nest1 and nest2 nest differently (different lengths,
    dict keys, or a container where the other has a leaf); TypeError if,
    with check_types, two containers differ in type."""
    r = _mismatch(nest1, nest2, check_types)
    if r is None and expand_composites:
        r = _composite_mismatch(nest1, nest2)
    if r is None:
        return
    cls, detail = r
    raise cls(f"The two structures don't have the same nested structure."
              f"\n\nFirst structure: {_show(nest1)}\n\nSecond structure: "
              f"{_show(nest2)}\n\nMore specifically: {detail}\n"
              f"Entire first structure:\n{_outline(nest1)}\n"
              f"Entire second structure:\n{_outline(nest2)}")


def map_structure(func, *structure, **kwargs):
    """func applied leaf by leaf across structures that nest alike; the
    result nests like the first."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    expand = kwargs.pop("expand_composites", False)
    if kwargs:
        bad = ", ".join(kwargs)
        raise ValueError(f"Only valid keyword arguments are `check_types` "
                         f"and `expand_composites`, not: `{bad}`")
    if expand:
        for other in structure[1:]:
            assert_same_structure(structure[0], other, check_types,
                                  expand_composites=True)
        flats = [flatten(s, expand_composites=True) for s in structure]
        return pack_sequence_as(structure[0],
                                [func(*leaves) for leaves in zip(*flats)],
                                expand_composites=True)
    if len(structure) == 1:
        return _map(func, structure[0])
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flats = [flatten(s) for s in structure]
    return _pack(structure[0], [func(*leaves) for leaves in zip(*flats)])
