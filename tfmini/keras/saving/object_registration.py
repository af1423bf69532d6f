"""Custom objects for (de)serialization, in Keras 3's names:
register_keras_serializable, get_registered_object, get_registered_name,
CustomObjectScope / custom_object_scope.

A registered class is stored under "package>ClassName" (Keras 3's
`registered_name`), so a config written by Keras for a class registered
there under the same name resolves here too."""
import threading

_GLOBAL_CUSTOM_OBJECTS = {}     # "package>Name" -> class or function
_GLOBAL_CUSTOM_NAMES = {}       # the object -> "package>Name"


class _Scopes(threading.local):
    def __init__(self):
        self.stack = []


_scopes = _Scopes()


def register_keras_serializable(package="Custom", name=None):
    """Decorator: register a class or function under 'package>name' (name
    defaults to the object's __name__) for load_model and
    deserialize_keras_object."""
    def decorator(arg):
        class_name = name if name is not None else arg.__name__
        key = f"{package}>{class_name}"
        if isinstance(arg, type) and not hasattr(arg, "get_config"):
            raise ValueError(f"Cannot register {arg.__name__}: a class "
                             f"must define get_config() to be "
                             f"serializable")
        if key in _GLOBAL_CUSTOM_OBJECTS and \
                _GLOBAL_CUSTOM_OBJECTS[key] is not arg:
            # Re-running a notebook cell redefines the class: the newest
            # definition wins, as in Keras.
            _GLOBAL_CUSTOM_NAMES.pop(_GLOBAL_CUSTOM_OBJECTS[key], None)
        _GLOBAL_CUSTOM_OBJECTS[key] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = key
        return arg
    return decorator


def get_registered_name(obj):
    """'package>Name' for a registered object, else its __name__."""
    try:
        if obj in _GLOBAL_CUSTOM_NAMES:
            return _GLOBAL_CUSTOM_NAMES[obj]
    except TypeError:       # unhashable
        pass
    return getattr(obj, "__name__", type(obj).__name__)


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object called `name`: from the innermost custom_object_scope,
    then custom_objects, then the registry, then module_objects."""
    for scope in reversed(_scopes.stack):
        if name in scope:
            return scope[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


def get_custom_objects():
    """The global registry dict (Keras returns it mutable, too)."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """with CustomObjectScope({'MyLayer': MyLayer}): names usable by
    load_model and deserialization inside the block (this thread)."""

    def __init__(self, custom_objects=None, *more):
        self.custom_objects = dict(custom_objects or {})
        for extra in more:
            self.custom_objects.update(extra)

    def __enter__(self):
        _scopes.stack.append(self.custom_objects)
        return self

    def __exit__(self, *exc):
        _scopes.stack.pop()
        return False


custom_object_scope = CustomObjectScope


def scope_objects():
    """Every name visible from the active scopes (innermost wins)."""
    out = {}
    for scope in _scopes.stack:
        out.update(scope)
    return out
