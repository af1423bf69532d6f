"""Keras 3's weights file, model.weights.h5 (read from keras/src/saving/
saving_lib.py, Keras 3.15): an HDF5 file with one group per saveable
object, at the object's path in the model, holding a `vars` group whose
datasets "0", "1", ... are that object's own variables (trainable ones
first, then the rest, in creation order) and whose attribute `name` is
the object's name:

    vars                    (attrs name=<model name>: the model's own)
    layers/dense/vars/0     kernel of the first Dense of a Sequential
    layers/dense/vars/1     its bias
    layers/dense_1/vars/0   the next Dense
    optimizer/vars/0..      the optimizer's variables (iterations first)

Paths: a Sequential or Functional model lists `layers` first, each
layer named by its class in snake_case, made unique within its list
(dense, dense_1, ...; by class, never by the layer's own name, so two
instances of one architecture match). Other objects follow their
attributes in sorted order, private ones (`_x`) last; an object reached
twice is stored at its first path only.
"""
import warnings

import numpy as np

from .. import backend


def _name_key(name):
    return "~" + name if name.startswith("_") else name


def own_variables(layer):
    """The variables a layer owns itself (not through sub-layers), as
    Keras orders them: trainable first."""
    from ..layers.base import Layer
    own, seen = [], set()
    for w in list(layer._keras_weights) + [
            v for v in layer._keras_tracked.values()
            if backend.is_variable(v)]:
        if id(w) not in seen and not isinstance(w, Layer):
            seen.add(id(w))
            own.append(w)
    return ([w for w in own if w.trainable] +
            [w for w in own if not w.trainable])


def _children(obj):
    """(attribute, value) pairs in Keras's walk order."""
    from ..layers.base import Layer
    from ..models.functional import Functional
    from ..models.model import Model
    from ..models.sequential import Sequential
    out = []
    if isinstance(obj, (Sequential, Functional)):
        out.append(("layers", obj.layers))
        attrs = {}
    else:
        attrs = {k: v for k, v in obj._keras_tracked.items()
                 if k not in ("optimizer",) and not k.startswith("_keras")}
        attrs.update(_subclass_properties(obj))
        for private, public in _KERAS_PROPERTIES.get(
                type(obj).__name__, {}).items():
            if private in attrs and _is_builtin(obj):
                attrs.setdefault(public, attrs[private])
        if isinstance(obj, Model):
            attrs["layers"] = obj.layers
    if isinstance(obj, Model) and getattr(obj, "optimizer", None) is not None:
        attrs["optimizer"] = obj.optimizer
    for k in sorted(attrs, key=_name_key):
        v = attrs[k]
        if isinstance(v, (Layer, list, tuple, dict)) or k == "optimizer":
            out.append((k, v))
    return out


# Sub-layers Keras 3 exposes through a public property of another name
# than tfmini's attribute (Keras stores them under the public name).
_KERAS_PROPERTIES = {
    "MultiHeadAttention": {"_query_dense": "query_dense",
                           "_key_dense": "key_dense",
                           "_value_dense": "value_dense",
                           "_output_dense": "output_dense"},
}


def _is_builtin(obj):
    return type(obj).__module__.startswith("tfmini.")


def _subclass_properties(obj):
    """Public properties a layer class adds over the base classes
    (MultiHeadAttention's query_dense, ...): Keras walks dir(), so a
    sub-layer reachable by a public property is stored under that name
    rather than its private attribute's."""
    from ..layers.base import Layer
    from ..models.model import Model
    base = Model if isinstance(obj, Model) else Layer
    out = {}
    for klass in type(obj).__mro__:
        if klass is base or not issubclass(klass, base):
            break
        for name, member in vars(klass).items():
            if isinstance(member, property) and \
                    not name.startswith("_") and not hasattr(base, name):
                try:
                    value = getattr(obj, name)
                except Exception:        # Keras skips these too
                    continue
                if _is_saveable(value):
                    out.setdefault(name, value)
    return out


def _is_saveable(v):
    from ..layers.base import Layer
    from ..optimizers import Optimizer
    return isinstance(v, (Layer, Optimizer))


def walk(model):
    """[(path, object)] for every saveable object under model, each once,
    in Keras's order (path '' is the model)."""
    out, visited = [], set()

    def visit(obj, path):
        if id(obj) in visited:
            return
        visited.add(id(obj))
        out.append((path, obj))
        if not hasattr(obj, "_keras_tracked"):
            return
        for attr, child in _children(obj):
            sub = f"{path}/{attr}" if path else attr
            if _is_saveable(child):
                visit(child, sub)
            else:
                container(child, sub, set())

    def container(items, path, seen):
        if id(items) in seen:
            return
        seen.add(id(items))
        if isinstance(items, dict):
            items = list(items.values())
        used = {}
        for item in items:
            if _is_saveable(item):
                base = backend.to_snake_case(type(item).__name__)
                visit(item, f"{path}/{_unique(base, used)}")
            elif isinstance(item, (list, tuple, dict)):
                container(item, f"{path}/{_unique('container', used)}",
                          seen)
    visit(model, "")
    return out


def _unique(name, used):
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


def _variables_of(obj):
    from ..optimizers import Optimizer
    if isinstance(obj, Optimizer):
        return list(obj.variables) if getattr(obj, "_iterations", None) \
            is not None else []
    return own_variables(obj)


def write(model, h5file):
    """Write model's variables into the open h5py.File, Keras 3's
    layout."""
    for path, obj in walk(model):
        group = h5file.create_group(f"{path}/vars" if path else "vars")
        group.attrs["name"] = obj.name
        for i, v in enumerate(_variables_of(obj)):
            group.create_dataset(str(i), data=np.asarray(v.numpy()))


def _stored(h5file, path):
    """The datasets under path/vars, in index order ([] if none)."""
    key = f"{path}/vars" if path else "vars"
    if key not in h5file:
        return None
    group = h5file[key]
    names = sorted(group.keys(), key=lambda k: (len(k), k))
    return [np.asarray(group[n]) for n in names]


def read(model, h5file, filepath, skip_mismatch=False):
    """Assign the values stored in h5file to model's variables, matched
    by path. A layer whose stored count or shapes differ is an error
    naming it (skipped with skip_mismatch); the optimizer's state loads
    only when it matches and is otherwise left alone with a warning."""
    from ..optimizers import Optimizer
    if not model.weights:
        raise ValueError(
            f"Cannot load weights into {model.name!r}: it has not created "
            f"its weights yet. Call the model on a batch of data (or "
            f"build() it) first, then load the weights.")
    assigns = []
    for path, obj in walk(model):
        own = _variables_of(obj)
        stored = _stored(h5file, path)
        where = f"{obj.name!r} (path {path or '/'!r} in {filepath!r})"
        is_opt = isinstance(obj, Optimizer)
        if stored is None:
            if own and not is_opt and not skip_mismatch:
                raise ValueError(f"{filepath!r} holds no weights for layer "
                                 f"{where}")
            continue
        bad = None
        if len(stored) != len(own):
            bad = (f"expected {len(own)} variables, the file holds "
                   f"{len(stored)}")
        else:
            for v, value in zip(own, stored):
                if tuple(v.shape) != value.shape:
                    bad = (f"variable {getattr(v, 'path', v.name)!r} has "
                           f"shape {tuple(v.shape)}, the file's "
                           f"{value.shape}")
                    break
        if bad:
            if is_opt:
                # A file from an optimizer that never stepped holds only
                # iterations and learning rate: nothing worth a warning.
                if own and len(stored) > 2:
                    warnings.warn(f"Optimizer state not loaded from "
                                  f"{filepath!r}: {bad}")
                continue
            if skip_mismatch:
                continue
            raise ValueError(f"Cannot load weights for layer {where}: "
                             f"{bad}")
        assigns.extend(zip(own, stored))
    for v, value in assigns:
        v.assign(np.asarray(value, dtype=v.dtype.as_numpy_dtype),
                 read_value=False)
