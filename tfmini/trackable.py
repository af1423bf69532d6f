"""Trackable: what tf.train.Checkpoint and tf.Module walk.

TF's objects with state (tf.Module, Keras layers, optimizers and metrics,
tf.data iterators, Checkpoint itself) share a base class,
tensorflow/python/trackable/base.py's Trackable, and AutoTrackable for
the ones whose attributes are their children. tfmini's is this one: the
walkers (train/checkpoint.py, module.py) ask each object through these
methods and need not know the classes, so neither imports Keras.

The protocol:
- _trackable_children(): [(path tuple, child)] of the variables and
  trackables saved under this object, the path of strings being the
  checkpoint key's pieces. The default is AutoTrackable's: every
  attribute in sorted order, its value walked like tf.nest (list items
  by index, dict items by key).
- _module_leaves: None, or (Keras layers) a method giving the weights
  tf.Module's walk takes as this object's leaves: tf.keras 2's layers
  were tf.Modules, and the modules guide relies on it.
- deferred restores: a checkpoint value whose variable does not exist
  yet waits in the object's _tfmini_restore_pending, by attribute; the
  object calls _restore_deferred(name, value) when that attribute is set
  (Module and Layer.__setattr__, Layer.add_weight, an optimizer's new
  slots). _defers_restore says whether the object makes such calls."""
from . import nest as _nest
from .variables import Variable

__all__ = []

PENDING = "_tfmini_restore_pending"


def escape(name):
    """A checkpoint key piece: '.' and '/' escaped as TF does."""
    return str(name).replace(".", "..").replace("/", ".S")


def short_name(var):
    """A variable's name without scopes and ':0' (the key Keras layers
    and metrics save their own weights under)."""
    name = var.name[:-2] if var.name.endswith(":0") else var.name
    return name.rsplit("/", 1)[-1]


def is_trackable(x):
    return isinstance(x, (Variable, Trackable))


def children_of_value(value, path):
    """[(path + escaped keys, leaf)] of the trackable leaves of value."""
    return [(path + tuple(escape(k) for k in sub), leaf)
            for sub, leaf in _nest._flatten_with_tuple_paths(value)
            if is_trackable(leaf)]


class Trackable:
    """Base class of the objects a tf.train.Checkpoint saves (see the
    module doc for the protocol)."""

    __slots__ = ()

    _defers_restore = False
    _module_leaves = None

    def _trackable_children(self):
        out = []
        attrs = vars(self)
        for key in sorted(attrs):
            if key.startswith("_tfmini_"):
                continue
            out.extend(children_of_value(attrs[key], (escape(key),)))
        return out

    def _restore_deferred(self, name, value):
        """Attribute `name` now holds value: assign what a checkpoint
        left pending for it."""
        pending = self.__dict__.get(PENDING)
        if pending and escape(name) in pending:
            from .train import checkpoint
            checkpoint.restore_deferred(self, name, value)


class AutoTrackable(Trackable):
    """A trackable whose attributes are its children (TF's name), and
    that restores values for attributes set after a restore."""

    __slots__ = ()

    _defers_restore = True

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if PENDING in self.__dict__:
            self._restore_deferred(name, value)
