"""serialize_keras_object / deserialize_keras_object in Keras 3's JSON
shape: {"module", "class_name", "config", "registered_name",
"build_config", "compile_config"} (read from keras/src/saving/
serialization_lib.py, Keras 3.15). Built-in tfmini classes are written
under Keras's module names ("keras.layers", ...), so Keras reads tfmini's
configs and tfmini reads Keras's.

Keras writes keys that some tfmini classes do not take (e.g. Dense's
`quantization_config: null`, InputLayer's `sparse: false`): such a key is
dropped when its value is a default (None, False, empty) and is a clear
error otherwise, so no model loads silently different."""
import inspect
import re

from . import object_registration as _reg

_BUILTIN_MODULES = ("keras.layers", "keras.models", "keras.optimizers",
                    "keras.initializers", "keras.regularizers",
                    "keras.constraints", "keras.losses", "keras.metrics")
# Keras 3 keys that tfmini's layers lack, with the value that means "off".
_KERAS_DEFAULTS = {"groups": 1, "lora_rank": None, "lora_alpha": None,
                   "quantization_config": None, "optional": False,
                   "sparse": False, "ragged": False,
                   "renorm_momentum": 0.99, "renorm_clipping": None,
                   "synchronized": False, "rms_scaling": False,
                   "data_format": "channels_last", "seed": None,
                   "activation": "tanh", "recurrent_activation": "sigmoid",
                   "reset_after": True, "unit_forget_bias": True,
                   "dropout": 0.0, "recurrent_dropout": 0.0}


def _kmod(name):
    import importlib
    return importlib.import_module("tfmini.keras." + name)


def _is_builtin(cls):
    return getattr(cls, "__module__", "").startswith("tfmini.")


def _keras_module(cls):
    """The module name Keras writes for a class: Keras's public module for
    tfmini built-ins, the defining module for user classes."""
    mod = cls.__module__
    if not mod.startswith("tfmini.keras."):
        return mod
    part = mod.split(".")[2]
    if cls.__name__ == "Functional":
        return "keras.src.models.functional"
    if part == "models":
        return "keras"
    return "keras." + part


def _builtin_lookup(class_name, module=None):
    """A tfmini built-in class named class_name (module, when given, says
    where Keras put it)."""
    order = ["layers", "models", "optimizers", "initializers",
             "regularizers", "constraints", "losses", "metrics"]
    if module:
        part = module.split(".")[-1]
        if part in order:
            order.remove(part)
            order.insert(0, part)
        elif module in ("keras", "keras.src.models.functional"):
            order.remove("models")
            order.insert(0, "models")
    for part in order:
        obj = getattr(_kmod(part), class_name, None)
        if isinstance(obj, type):
            return obj
    return None


def _lookup(class_name, registered_name, module, custom_objects):
    for key in (registered_name, class_name):
        if key:
            obj = _reg.get_registered_object(key, custom_objects)
            if obj is not None:
                return obj
    obj = _builtin_lookup(class_name, module)
    if obj is None:
        raise TypeError(
            f"Could not locate class {class_name!r} (module {module!r}, "
            f"registered name {registered_name!r}). Make sure custom classes"
            f" are decorated with "
            f"`@keras.saving.register_keras_serializable()` or passed in "
            f"`custom_objects`.")
    return obj


# ---- serialize --------------------------------------------------------
def serialize_keras_object(obj):
    """A JSON-ready structure for obj (Keras 3's layout)."""
    from ..layers.base import Layer
    from ..optimizers import Optimizer
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(x) for x in obj]
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    if hasattr(obj, "as_list") and hasattr(obj, "rank"):      # TensorShape
        return obj.as_list() if obj.rank is not None else None
    if hasattr(obj, "dtype") and hasattr(obj, "tolist") and \
            not isinstance(obj, Layer):                      # NumPy values
        return obj.tolist()
    if hasattr(obj, "as_numpy_dtype"):                        # tf.DType
        return obj.name
    if isinstance(obj, type):
        return {"module": _keras_module(obj), "class_name": "type",
                "config": obj.__name__,
                "registered_name": _reg.get_registered_name(obj)}
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        from .. import activations
        name = activations.serialize(obj)
        if isinstance(name, str):
            return name
        return {"module": obj.__module__, "class_name": "function",
                "config": _reg.get_registered_name(obj),
                "registered_name": _reg.get_registered_name(obj)}
    cls = _user_class(type(obj))
    if isinstance(obj, Layer):
        config = layer_config(obj)
    elif hasattr(obj, "get_config"):
        config = obj.get_config()
    else:
        raise TypeError(f"Cannot serialize {obj!r} of type {cls.__name__}: "
                        f"it has no get_config()")
    if isinstance(obj, Optimizer) and \
            not isinstance(config.get("learning_rate"), (float, int)):
        config = dict(config)
        lr = config.get("learning_rate")
        config["learning_rate"] = serialize_keras_object(lr)
    out = {"module": _keras_module(cls), "class_name": cls.__name__,
           "config": serialize_keras_object(config),
           "registered_name": (None if _is_builtin(cls) and
                               cls.__name__ != "Functional"
                               else _reg.get_registered_name(cls))}
    if isinstance(obj, Layer) and obj.built and \
            type(obj).__name__ != "InputLayer":
        out["build_config"] = _build_config(obj)
    return out


def _build_config(layer):
    """What Keras records for build: the first call's input shape (a
    list of shapes for a list input), or, when the call took several
    tensor arguments (MultiHeadAttention's query and value),
    {"shapes_dict": {"<arg>_shape": shape}}; for a layer never called on
    keras.Input tensors, the batch input shape it was given."""
    from ..layers.input_layer import KerasTensor

    def shape_of(x):
        if isinstance(x, KerasTensor):
            return list(x.shape)
        if isinstance(x, (list, tuple)):
            return [shape_of(v) for v in x]
        return None
    for node in layer._keras_inbound:
        if not node.args:
            continue
        try:
            bound = inspect.signature(layer.call).bind_partial(
                *node.args, **node.kwargs).arguments
        except TypeError:
            bound = {"inputs": node.args[0]}
        shapes = {f"{k}_shape": shape_of(v) for k, v in bound.items()
                  if shape_of(v) is not None}
        if len(shapes) > 1:
            return {"shapes_dict": shapes}
        return {"input_shape": shape_of(node.args[0])}
    shape = getattr(layer, "_keras_batch_input_shape", None)
    return {"input_shape": list(shape) if shape is not None else None}


def _user_class(cls):
    """CustomModel(inputs, outputs) makes an instance of a hidden
    (CustomModel, Functional) class: the file names CustomModel."""
    from ..models import model as model_mod
    for user, hidden in model_mod._functional_subclasses.items():
        if hidden is cls:
            return user
    return cls


def layer_config(layer):
    """A layer's config as Keras 3 writes it."""
    from ..layers.input_layer import InputLayer
    from ..models.functional import Functional
    from ..models.sequential import Sequential
    if isinstance(layer, InputLayer):
        return {"batch_shape": list(layer._keras_batch_input_shape),
                "dtype": layer.dtype, "sparse": False, "ragged": False,
                "name": layer.name}
    if isinstance(layer, Sequential) and \
            type(layer).get_config is Sequential.get_config:
        layers = []
        if layer._keras_seq_input is not None:
            layers.append(serialize_keras_object(
                layer._keras_seq_input._keras_node.layer))
        layers += [serialize_keras_object(l) for l in layer.layers]
        config = {"name": layer.name, "trainable": layer.trainable,
                  "dtype": layer.dtype, "layers": layers}
        if layer._keras_batch_input_shape is not None:
            config["build_input_shape"] = list(
                layer._keras_batch_input_shape)
        return config
    if isinstance(layer, Functional) and \
            type(layer).get_config is Functional.get_config:
        return functional_config(layer)
    config = dict(layer.get_config())
    # Keras 3 layers take no batch_input_shape (the InputLayer holds it).
    config.pop("batch_input_shape", None)
    return _with_modules(config)


def _with_modules(value):
    """Nested {"class_name", "config"} entries that a layer's get_config
    wrote itself (Bidirectional's layers, ...) get the "module" Keras
    needs to find the class."""
    if isinstance(value, list):
        return [_with_modules(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _with_modules(v) for k, v in value.items()}
    if "class_name" in out and "config" in out and "module" not in out:
        cls = _builtin_lookup(out["class_name"])
        if cls is not None:
            out = {"module": _keras_module(cls), **out}
            out.setdefault("registered_name", None)
    return out


def functional_config(model):
    """Keras 3's functional config: layers with their inbound nodes, each
    argument tensor named by keras_history [layer, node, tensor]."""
    from ... import nest
    from ..layers.input_layer import KerasTensor
    model_nodes = {id(n) for n in model._keras_nodes}
    for kt in nest.flatten(model._keras_inputs):
        model_nodes.add(id(kt._keras_node))

    def node_index(node):
        mine = [n for n in node.layer._keras_inbound
                if id(n) in model_nodes]
        return next(i for i, n in enumerate(mine) if n is node)

    def history(kt):
        node = kt._keras_node
        return [node.layer.name, node_index(node), kt._keras_index]

    def ser_arg(x):
        if isinstance(x, KerasTensor):
            return {"class_name": "__keras_tensor__",
                    "config": {"shape": list(x.shape), "dtype": x.dtype,
                               "keras_history": history(x)}}
        if isinstance(x, (list, tuple)):
            return [ser_arg(v) for v in x]
        if isinstance(x, dict):
            return {k: ser_arg(v) for k, v in x.items()}
        return serialize_keras_object(x)

    layers = []
    for layer in model.layers:
        entry = serialize_keras_object(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [
            {"args": ser_arg(list(n.args)), "kwargs": ser_arg(n.kwargs)}
            for n in layer._keras_inbound
            if id(n) in model_nodes and n.args]
        layers.append(entry)

    def io(struct):
        if isinstance(struct, KerasTensor):
            return history(struct)
        if isinstance(struct, dict):
            return {k: io(v) for k, v in struct.items()}
        return [io(v) for v in struct]
    return {"name": model.name, "trainable": model.trainable,
            "layers": layers, "input_layers": io(model._keras_inputs),
            "output_layers": io(model._keras_outputs)}


# ---- deserialize ------------------------------------------------------
def _init_params(cls):
    """The keyword names cls(...) accepts, or None for 'any'."""
    from ..layers.base import _LAYER_KWARGS, Layer
    names = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            return None
        var_kw = False
        for p in params:
            if p.kind == p.VAR_KEYWORD:
                var_kw = True
            elif p.name != "self":
                names.add(p.name)
        if not var_kw:
            return names
        if klass is Layer:
            return names | _LAYER_KWARGS
    return None


def _fit_config(cls, config):
    """config without the Keras-only keys cls does not take (see the
    module docstring); built-in classes only."""
    if not _is_builtin(cls):
        return config
    accepted = _init_params(cls)
    if accepted is None:
        return config
    out = {}
    for k, v in config.items():
        if k in accepted:
            out[k] = v
        elif _droppable(k, v):
            continue
        else:
            raise ValueError(
                f"Cannot load {cls.__name__}: its config sets {k}={v!r}, "
                f"which tfmini's {cls.__name__} does not support")
    return out


_UNKNOWN_KEY = re.compile(r"(?:unexpected keyword argument|Keyword "
                          r"argument not understood:) '(\w+)'")


def _droppable(key, value):
    return value in (None, False, [], {}) or \
        (key in _KERAS_DEFAULTS and value == _KERAS_DEFAULTS[key])


def _construct(cls, config):
    """cls.from_config(config); for a built-in class, keys it rejects are
    dropped when their value is Keras's default (see the module
    docstring) and refused otherwise. Layers pass some arguments on
    (RNN layers to their cell), so the rejected key is read off the
    TypeError rather than guessed from signatures."""
    config = dict(config)
    while True:
        try:
            return cls.from_config(config)
        except TypeError as e:
            m = _UNKNOWN_KEY.search(str(e))
            if not _is_builtin(cls) or not m or m.group(1) not in config:
                raise
            key = m.group(1)
            if not _droppable(key, config[key]):
                raise ValueError(
                    f"Cannot load {cls.__name__}: its config sets "
                    f"{key}={config[key]!r}, which tfmini's "
                    f"{cls.__name__} does not support") from None
            del config[key]


def _deserialize_nested(config, custom_objects):
    """Turn serialized objects inside a layer's config (initializers,
    regularizers, constraints, activations) into objects."""
    out = {}
    for k, v in config.items():
        if isinstance(v, dict) and "class_name" in v and "config" in v \
                and k != "dtype":
            v = deserialize_keras_object(v, custom_objects)
        out[k] = v
    return out


def deserialize_keras_object(config, custom_objects=None, **kwargs):
    """The object that serialize_keras_object (or Keras 3) described."""
    if config is None or isinstance(config, (bool, int, float)):
        return config
    if isinstance(config, str):
        obj = _reg.get_registered_object(config, custom_objects)
        return obj if obj is not None else config
    if isinstance(config, (list, tuple)):
        return [deserialize_keras_object(c, custom_objects) for c in config]
    if not isinstance(config, dict) or "class_name" not in config:
        if isinstance(config, dict):
            return {k: deserialize_keras_object(v, custom_objects)
                    for k, v in config.items()}
        raise TypeError(f"Cannot deserialize {config!r}")
    class_name = config["class_name"]
    inner = config.get("config")
    module = config.get("module")
    registered = config.get("registered_name")
    if class_name == "__tuple__":
        return tuple(deserialize_keras_object(v, custom_objects)
                     for v in inner["value"])
    if class_name == "__numpy__":
        import numpy as np
        return np.array(inner["value"], dtype=inner["dtype"])
    if class_name in ("function", "type"):
        name = inner if isinstance(inner, str) else registered
        obj = _reg.get_registered_object(registered or name, custom_objects)
        if obj is None:
            obj = _reg.get_registered_object(name, custom_objects)
        if obj is None and class_name == "function":
            from .. import activations
            try:
                obj = activations.get(name)
            except (ValueError, TypeError):
                obj = None
        if obj is None:
            raise TypeError(f"Could not locate {class_name} {name!r}: "
                            f"register it with "
                            f"`@keras.saving.register_keras_serializable()`"
                            f" or pass it in `custom_objects`.")
        return obj
    if class_name == "DTypePolicy":
        return inner.get("name")
    cls = _lookup(class_name, registered, module, custom_objects)
    from ..layers.base import Layer
    from ..optimizers import Optimizer
    if isinstance(cls, type) and issubclass(cls, Layer):
        return _deserialize_layer(cls, config, custom_objects)
    inner = dict(inner or {})
    if isinstance(cls, type) and issubclass(cls, Optimizer):
        lr = inner.get("learning_rate")
        if isinstance(lr, dict):
            inner["learning_rate"] = deserialize_keras_object(
                lr, custom_objects)
    if not isinstance(cls, type):
        return cls
    inner = _fit_config(cls, inner)
    if hasattr(cls, "from_config"):
        return cls.from_config(inner)
    return cls(**inner)


def _deserialize_layer(cls, config, custom_objects):
    from ..models.functional import Functional
    from ..models.sequential import Sequential
    inner = dict(config.get("config") or {})
    with _reg.CustomObjectScope(custom_objects or {}):
        if cls is Sequential or (issubclass(cls, Sequential) and
                                 cls.from_config.__func__ is
                                 Sequential.from_config.__func__):
            model = _sequential_from_config(cls, inner, custom_objects)
        elif _is_functional_config(cls, inner):
            model = functional_from_config(inner, custom_objects, cls)
        elif cls.__name__ == "InputLayer":
            model = cls(**_fit_config(cls, inner))
        else:
            if _is_builtin(cls):
                inner = _deserialize_nested(inner, custom_objects)
            try:
                model = _construct(cls, inner)
            except TypeError as e:
                raise TypeError(
                    f"Could not rebuild {cls.__name__} from its config "
                    f"{sorted(inner)}: {e}. A custom layer or model whose "
                    f"__init__ takes arguments must return them from "
                    f"get_config() (and override from_config() if they "
                    f"are not plain values).") from e
    build = config.get("build_config")
    if build and not model.built and build.get("shapes_dict"):
        try:
            model.build(**{k: tuple(v) for k, v in
                           build["shapes_dict"].items()})
        except Exception as e:
            raise ValueError(f"Could not build {cls.__name__} "
                             f"{model.name!r} for input shapes "
                             f"{build['shapes_dict']}: {e}") from e
    elif build and not model.built and \
            build.get("input_shape") is not None:
        shape = build["input_shape"]
        if shape and isinstance(shape[0], (list, tuple)):
            shape = [tuple(s) for s in shape]
        else:
            shape = tuple(shape)
        try:
            model.build(shape)
        except Exception as e:
            raise ValueError(f"Could not build {cls.__name__} "
                             f"{model.name!r} for input shape {shape}: "
                             f"{e}") from e
    return model


def _is_functional_config(cls, config):
    """A functional model's config: Functional itself, or a Model
    subclass built as CustomModel(inputs, outputs) that keeps the
    default from_config (Keras rebuilds those the same way)."""
    from ..layers.base import Layer
    from ..models.functional import Functional
    from ..models.model import Model
    if cls is Functional:
        return True
    default = getattr(cls.from_config, "__func__", None) is \
        Layer.from_config.__func__
    return issubclass(cls, Model) and default and \
        "layers" in config and "input_layers" in config


def _sequential_from_config(cls, config, custom_objects):
    from ..layers.input_layer import Input
    model = cls(name=config.get("name"),
                trainable=config.get("trainable", True))
    for entry in config.get("layers", []):
        if entry.get("class_name") == "InputLayer":
            c = entry["config"]
            shape = c.get("batch_shape") or c.get("batch_input_shape")
            model.add(Input(batch_shape=tuple(shape),
                            dtype=c.get("dtype"), name=c.get("name")))
        else:
            model.add(deserialize_keras_object(entry, custom_objects))
    shape = config.get("build_input_shape")
    if not model.built and shape is not None:
        model.build(tuple(shape))
    return model


def functional_from_config(config, custom_objects=None, cls=None):
    """Rebuild a functional model by replaying each layer's inbound
    nodes once the tensors they read exist."""
    from ... import nest
    from ..layers.input_layer import Input
    from ..models.functional import Functional
    cls = cls or Functional
    layers, pending, outputs = {}, [], {}
    for entry in config["layers"]:
        name = entry.get("name") or entry["config"]["name"]
        if entry.get("class_name") == "InputLayer":
            c = entry["config"]
            shape = c.get("batch_shape") or c.get("batch_input_shape")
            kt = Input(batch_shape=tuple(shape), dtype=c.get("dtype"),
                       name=c.get("name"))
            layers[name] = kt._keras_node.layer
            outputs[name] = [kt]
            continue
        bare = {k: v for k, v in entry.items()
                if k not in ("inbound_nodes", "name")}
        layers[name] = deserialize_keras_object(bare, custom_objects)
        outputs[name] = []
        pending.append((name, list(entry.get("inbound_nodes", []))))

    class _Missing(Exception):
        pass

    def tensor(hist):
        lname, nidx, tidx = hist
        done = outputs.get(lname)
        if done is None:
            raise ValueError(f"Functional config refers to unknown layer "
                             f"{lname!r}")
        if nidx >= len(done):
            raise _Missing
        return nest.flatten(done[nidx])[tidx]

    def arg(x):
        if isinstance(x, dict) and x.get("class_name") == \
                "__keras_tensor__":
            return tensor(x["config"]["keras_history"])
        if isinstance(x, list):
            return [arg(v) for v in x]
        if isinstance(x, dict) and "class_name" in x:
            return deserialize_keras_object(x, custom_objects)
        if isinstance(x, dict):
            return {k: arg(v) for k, v in x.items()}
        return x

    while any(nodes for _, nodes in pending):
        progress = False
        for name, nodes in pending:
            while nodes:
                node = nodes[0]
                try:
                    args = arg(node.get("args", []))
                    kwargs = arg(node.get("kwargs", {}))
                except _Missing:
                    break
                outputs[name].append(layers[name](*args, **kwargs))
                nodes.pop(0)
                progress = True
        if not progress:
            raise ValueError("Functional config cannot be replayed: some "
                             "layer inputs are never produced")

    def io(spec):
        if isinstance(spec, dict):
            return {k: io(v) for k, v in spec.items()}
        if spec and isinstance(spec[0], str):
            return tensor(spec)
        return [io(s) for s in spec]
    inputs = io(config["input_layers"])
    outs = io(config["output_layers"])
    return cls(inputs, outs, name=config.get("name"),
               trainable=config.get("trainable", True))
