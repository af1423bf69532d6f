"""tf.train.Checkpoint: save and restore the variables reachable from a
set of named objects.

Each variable is stored under its path of attribute names from the
checkpoint, in TF's key form: `model/dense_1/w/.ATTRIBUTES/VARIABLE_VALUE`
(list items by index, dict items by key). An object's children are what
its _trackable_children() gives (tfmini/trackable.py), so this module
knows no Keras class:
- tf.Module and Checkpoint: every attribute, in sorted order (lists,
  tuples and dicts walked like tf.nest), as TF's AutoTrackable does;
- Keras layers and models: the attributes they track (sub-layers,
  variables, containers of them), and add_weight weights by their short
  name when no attribute holds them;
- Keras optimizers: `_iterations`, `_learning_rate`, and `_variables/i`
  indexing optimizer.variables (Keras 3's keys);
- Keras metrics: their variables by short name.

The file is `<prefix>.index`, in the checksummed format of Keras weights
files (keras/saving/weights_format.py), not TF's TensorBundle: tfmini
reads its own checkpoints, not TensorFlow's (and TF's object-graph entry,
`_CHECKPOINTABLE_OBJECT_GRAPH`, is not written).

Restoring matches by path, so values whose variables do not exist yet (a
layer that makes its weights on its first call, an optimizer's slots
before its first step) wait on the object that will hold them, and are
assigned when that attribute is set or that slot made."""
import os

import numpy as np

from .. import errors
from .. import trackable as _trackable
from ..variables import Variable

_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_INDEX = ".index"
_escape = _trackable.escape
_is_trackable = _trackable.is_trackable


def _children(obj):
    """[(path tuple, child)] of obj's variables and trackable objects."""
    return obj._trackable_children()


def _collect(obj, prefix, records, seen):
    for path, child in _children(obj):
        if id(child) in seen:
            continue
        seen.add(id(child))
        full = prefix + path
        if isinstance(child, Variable):
            records.append(("/".join(full) + _SUFFIX, child.numpy()))
        else:
            _collect(child, full, records, seen)


def _assign(var, value, key):
    from ..trace_frames import init_scope
    if tuple(var.shape) != value.shape:
        raise ValueError(
            f"Received incompatible tensor with shape {value.shape} when "
            f"attempting to restore variable with shape "
            f"{tuple(var.shape)} and name {key}.")
    with init_scope():      # also when the variable is made in a trace
        var.assign(np.asarray(value, dtype=var.dtype.as_numpy_dtype))


def _restore(obj, tree, status):
    """Assign the values in tree ({path tuple: (key, array)}) to obj's
    variables; keep the rest pending on obj for attributes set later."""
    children = _children(obj)
    matched = set()
    for path, child in children:
        n = len(path)
        if isinstance(child, Variable):
            if path in tree:
                key, value = tree[path]
                _assign(child, value, key)
                status._consumed(key)
                matched.add(path)
            continue
        sub = {k[n:]: v for k, v in tree.items() if k[:n] == path}
        if sub:
            matched.update(path + k for k in sub)
            _restore(child, sub, status)
    rest = {k: v for k, v in tree.items() if k not in matched}
    if rest and obj._defers_restore:
        pending = obj.__dict__.get(_trackable.PENDING)
        if pending is None:
            pending = {}
            object.__setattr__(obj, _trackable.PENDING, pending)
        for k, v in rest.items():
            pending.setdefault(k[0], {})[k[1:]] = (v, status)
        return {}
    return rest


def restore_deferred(obj, name, value):
    """Called when attribute `name` of obj is set: restore what a
    checkpoint left pending for it."""
    pending = obj.__dict__[_trackable.PENDING]
    entries = pending.pop(_escape(name), None)
    if not entries:
        return
    by_status = {}
    for rest, (kv, status) in entries.items():
        by_status.setdefault(id(status), (status, {}))[1][rest] = kv
    for status, tree in by_status.values():
        holder = _Holder(value)
        rest = _restore(holder, {("v",) + k: v for k, v in tree.items()},
                        status)
        # What still has no variable (more optimizer slots to come)
        # keeps waiting.
        for k, kv in rest.items():
            pending.setdefault(_escape(name), {})[k[1:]] = (kv, status)


class _Holder(_trackable.Trackable):
    """A one-attribute object, to restore into a bare attribute value."""

    def __init__(self, v):
        self.v = v


def _read_records(save_path):
    from ..keras.saving import weights_format
    path = save_path + _INDEX
    if not os.path.isfile(path):
        raise errors.NotFoundError(
            None, None,
            f"Error when restoring from checkpoint at {save_path}: "
            f"Failed to find any matching files for {save_path}\n"
            f"Please double-check that the path is correct. You may be "
            f"missing the checkpoint suffix (e.g. the '-1' in "
            f"'path/to/ckpt-1').")
    return weights_format.read(path)


class CheckpointLoadStatus:
    """What restore() matched; assert_* methods check it (as in TF)."""

    def __init__(self, keys):
        self._unmatched = set(keys)

    def _consumed(self, key):
        self._unmatched.discard(key)

    def assert_consumed(self):
        """Raise AssertionError unless every stored value was assigned
        to a variable (deferred ones count once their variable exists)."""
        if self._unmatched:
            raise AssertionError(
                f"Unresolved object in checkpoint: "
                f"{sorted(self._unmatched)}")
        return self

    def assert_existing_objects_matched(self):
        return self

    def assert_nontrivial_match(self):
        return self

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        return None

    def initialize_or_restore(self, session=None):
        return None


class Checkpoint(_trackable.Trackable):
    """Groups objects (modules, layers, models, optimizers, variables)
    to write and read their variables together."""

    def __init__(self, root=None, **kwargs):
        object.__setattr__(self, "_tfmini_save_counter", None)
        if root is not None:
            kwargs = dict(kwargs, root=root)
        for name, value in sorted(kwargs.items()):
            if not _is_trackable(value):
                raise ValueError(
                    f"`Checkpoint` was expecting {name} to be a trackable "
                    f"object (an object derived from `Trackable`), got "
                    f"{value!r}. If you believe this object should be "
                    f"trackable (i.e. it is part of the TensorFlow Python "
                    f"API and manages state), please open an issue.")
            setattr(self, name, value)

    @property
    def save_counter(self):
        """How many times save() has run (an int64 variable made on
        first use)."""
        from ..trace_frames import init_scope
        from .. import dtypes
        if self._tfmini_save_counter is None:
            with init_scope():
                object.__setattr__(self, "_tfmini_save_counter", Variable(
                    0, dtype=dtypes.int64, trainable=False,
                    name="save_counter"))
        return self._tfmini_save_counter

    def _records(self):
        records = []
        _collect(self, (), records, set())
        if self._tfmini_save_counter is not None:
            records.append(("save_counter" + _SUFFIX,
                            self._tfmini_save_counter.numpy()))
        return sorted(records, key=lambda r: r[0])

    def write(self, file_prefix, options=None):
        """Write the variables to `<file_prefix>.index`; returns
        file_prefix."""
        from ..keras.saving import weights_format
        file_prefix = os.fspath(file_prefix)
        folder = os.path.dirname(file_prefix)
        if folder:
            os.makedirs(folder, exist_ok=True)
        weights_format.write(file_prefix + _INDEX, self._records(),
                             overwrite=True)
        return file_prefix

    def save(self, file_prefix, options=None):
        """Write `<file_prefix>-<n>` (n counts saves) and record it as
        the latest checkpoint of its folder; returns that path."""
        counter = self.save_counter
        counter.assign_add(1)
        path = self.write(f"{os.fspath(file_prefix)}-{int(counter.numpy())}")
        folder = os.path.dirname(path) or "."
        base = os.path.basename(path)
        state = (f'model_checkpoint_path: "{base}"\n'
                 f'all_model_checkpoint_paths: "{base}"\n')
        from .. import _C
        _C.write_file_atomic(os.path.join(folder, "checkpoint"),
                             state.encode("utf-8"), "tf.train.Checkpoint")
        return path

    def read(self, save_path, options=None):
        """Assign the values stored at save_path; returns a
        CheckpointLoadStatus."""
        records = _read_records(os.fspath(save_path))
        status = CheckpointLoadStatus(k for k, _ in records)
        tree = {}
        for key, value in records:
            if not key.endswith(_SUFFIX):
                continue
            path = tuple(key[:-len(_SUFFIX)].split("/"))
            if path == ("save_counter",):
                _assign(self.save_counter, value, key)
                status._consumed(key)
                continue
            tree[path] = (key, value)
        _restore(self, tree, status)
        return status

    def restore(self, save_path, options=None):
        """read(save_path); None (nothing saved yet) restores nothing."""
        if save_path is None:
            return CheckpointLoadStatus(())
        return self.read(save_path, options)


def _resolve(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or "
                             f"checkpoints in given directory {path}")
        return latest
    return path


def list_variables(ckpt_dir_or_file):
    """[(key, shape as a list)] of the values in a checkpoint, sorted."""
    records = _read_records(_resolve(ckpt_dir_or_file))
    return sorted((k, list(np.shape(v))) for k, v in records)


def load_variable(ckpt_dir_or_file, name):
    """The stored value of key `name`, as a NumPy array."""
    records = _read_records(_resolve(ckpt_dir_or_file))
    if name.endswith(":0"):
        name = name[:-2]
    for key, value in records:
        if key == name:
            return value
    raise errors.NotFoundError(None, None,
                               f"Key {name} not found in checkpoint")


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint that save() recorded in
    checkpoint_dir, or None."""
    state = os.path.join(os.fspath(checkpoint_dir),
                         latest_filename or "checkpoint")
    try:
        with open(state) as f:
            text = f.read()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("model_checkpoint_path:"):
            value = line.split(":", 1)[1].strip().strip('"')
            if not os.path.isabs(value):
                value = os.path.join(os.fspath(checkpoint_dir), value)
            return value if os.path.isfile(value + _INDEX) else None
    return None
