"""tf.Module: a named container that collects the variables and modules
assigned to its attributes.

Collection follows TF's walk (tensorflow/python/module/module.py): the
module's attributes in sorted name order, each value flattened like
tf.nest (lists and tuples in order, dicts by sorted key), every object
once; the leaves of this module first, then each submodule found, in
that order, recursively. So `variables` of a model with attributes
`dense_1`, `dense_2` lists dense_1's before dense_2's, and within a
module 'b' comes before 'w'.

A Keras layer met on the walk counts as a submodule that holds its
`weights`, as with tf.keras 2, whose layers were tf.Modules (the modules
guide relies on it). TF 2.21's Keras 3 layers are not, and a Module
there finds no variables in them: a model built that way silently does
not train, which is not worth copying. The walk knows such objects by
the trackable protocol (trackable.py's _module_leaves), not by class."""
import functools
import re

from . import name_scopes as _name_scope
from . import nest as _nest
from .trackable import AutoTrackable, Trackable
from .variables import Variable

__all__ = ["Module"]

_VALID_IDENTIFIER = re.compile(r"^[a-zA-Z_]([a-zA-Z0-9_])*$")
_CAMEL_TO_SNAKE = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")


def camel_to_snake(value):
    return _CAMEL_TO_SNAKE.sub(r"_\1", value).lower()


def _flatten_module(module, recursive, predicate, traversal_key, with_path,
                    prefix, seen, stack):
    if _is_layer(module):        # its weights, as its own leaves
        for k, v in enumerate(module._module_leaves()):
            if not with_path:
                if id(v) in seen:
                    continue
                seen.add(id(v))
            if predicate(v):
                yield (prefix + ("weights", k), v) if with_path else v
        return
    submodules = []
    if id(module) in stack:      # a cycle: list this module's leaves only
        recursive = False
    attrs = vars(module)
    for key in sorted(attrs, key=traversal_key):
        if key.startswith("_tfmini_"):
            continue
        for leaf_path, leaf in _nest._flatten_with_tuple_paths(attrs[key]):
            leaf_path = (key,) + leaf_path
            if not with_path:
                if id(leaf) in seen:
                    continue
                seen.add(id(leaf))
            if predicate(leaf):
                yield (prefix + leaf_path, leaf) if with_path else leaf
            if recursive and _is_module(leaf):
                submodules.append((prefix + leaf_path, leaf))
    stack.append(id(module))
    for sub_path, sub in submodules:
        yield from _flatten_module(sub, recursive, predicate, traversal_key,
                                   with_path, sub_path, seen, stack)
    stack.pop()


def _is_variable(x):
    return isinstance(x, Variable)


def _is_trainable_variable(x):
    return isinstance(x, Variable) and x.trainable


def _is_non_trainable_variable(x):
    return isinstance(x, Variable) and not x.trainable


def _is_layer(x):
    return isinstance(x, Trackable) and type(x)._module_leaves is not None


def _is_module(x):
    return isinstance(x, Module) or _is_layer(x)


class Module(AutoTrackable):
    """Base class for models and layers built by hand (tf.Module)."""

    def __init__(self, name=None):
        if name is None:
            name = camel_to_snake(type(self).__name__)
        elif not _VALID_IDENTIFIER.match(name):
            raise ValueError(
                f"{name!r} is not a valid module name. Module names must "
                f"be valid Python identifiers (e.g. a valid class name).")
        self._name = name
        with _name_scope.name_scope(name) as scope_name:
            self._name_scope = _name_scope.name_scope(scope_name)

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        """The tf.name_scope this module's methods (with_name_scope) and
        `with module.name_scope:` blocks run in."""
        return self._name_scope

    @property
    def variables(self):
        """Every tf.Variable of this module and its submodules, each
        once, as a tuple."""
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self):
        return tuple(self._flatten(predicate=_is_trainable_variable))

    @property
    def non_trainable_variables(self):
        return tuple(self._flatten(predicate=_is_non_trainable_variable))

    @property
    def submodules(self):
        """Every tf.Module below this one (not itself), as a tuple."""
        return tuple(self._flatten(predicate=_is_module))

    def _flatten(self, recursive=True, predicate=None,
                 attribute_traversal_key=None, with_path=False,
                 expand_composites=False):
        """A generator over the objects reachable from this module's
        attributes that satisfy predicate (all of them when None); with
        with_path, (path tuple, object) pairs."""
        if predicate is None:
            def predicate(_):
                return True
        return _flatten_module(self, recursive, predicate,
                               attribute_traversal_key, with_path, (),
                               {id(self)}, [])

    @classmethod
    def with_name_scope(cls, method):
        """Decorator: run method inside the module's name scope."""
        @functools.wraps(method)
        def method_with_name_scope(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return method_with_name_scope
