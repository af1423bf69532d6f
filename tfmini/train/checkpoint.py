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

Objects are named as TF names them: breadth first from the checkpoint,
so an object reachable by several paths is saved once, under its
shortest (the first found). Objects with other state than variables
give it through TF's protocol, `_serialize_to_tensors()` ->
{attribute: array} and `_restore_from_tensors({attribute: array})`,
saved as `<path>/.ATTRIBUTES/<attribute>` (a tf.data iterator's
ITERATOR_STATE).

The file is `<prefix>.index`, in the checksummed format of Keras weights
files (keras/saving/weights_format.py), not TF's TensorBundle: tfmini
reads its own checkpoints, not TensorFlow's. Beside the values it holds
TF's object graph, `_CHECKPOINTABLE_OBJECT_GRAPH` (a serialized
TrackableObjectGraph when tensorboard's copy of TF's protos is
installed, else the same graph as JSON): every path to every object, so
restore() assigns a value to each object at any of its paths (two paths
that now hold two objects both get it).

Restoring matches by path, so values whose variables do not exist yet (a
layer that makes its weights on its first call, an optimizer's slots
before its first step, items appended later to a list) wait on the
object that will hold them, and are assigned when that attribute is set,
that slot made or that list item appended."""
import collections
import json
import os
import weakref

import numpy as np

from .. import errors
from .. import trackable as _trackable
from ..variables import Variable

_ATTRS = ".ATTRIBUTES"
_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_INDEX = ".index"
GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_JSON_MARK = b"tfmini-object-graph-json\n"
_escape = _trackable.escape
_is_trackable = _trackable.is_trackable


def _children(obj):
    """[(path tuple, child)] of obj's variables and trackable objects."""
    return obj._trackable_children()


def _grouped(pairs):
    """[(path, child)] as {first piece: [(rest, child)]}, in order."""
    groups = collections.OrderedDict()
    for path, child in pairs:
        groups.setdefault(path[0], []).append((path[1:], child))
    return groups


def _walk(root, extra=()):
    """Names every object reachable from root breadth first, as TF's
    ObjectGraphView does. Returns (records, nodes): records [(key,
    array)], nodes TF's TrackableObjectGraph as dicts {"children":
    [(name, node id)], "attributes": [(name, full name, key)]}, node 0
    the root. Lists and dicts on a path are nodes of their own (TF's
    ListWrapper and _DictWrapper), so they count in the depth."""
    records, nodes = [], [{"children": [], "attributes": []}]
    node_of = {id(root): 0}
    keep = [root]           # ids stay unique while the walk runs
    queue = collections.deque([(0, (), root, None)])

    def new_node():
        nodes.append({"children": [], "attributes": []})
        return len(nodes) - 1

    while queue:
        idx, prefix, obj, pairs = queue.popleft()
        if pairs is None:       # a trackable object, not a container
            if isinstance(obj, Variable):
                key = "/".join(prefix) + _SUFFIX
                records.append((key, obj.numpy()))
                nodes[idx]["attributes"].append(
                    ("VARIABLE_VALUE", _full_name(obj), key))
                continue
            serialize = getattr(obj, "_serialize_to_tensors", None)
            if serialize is not None:
                for attr, value in serialize().items():
                    key = "/".join(prefix + (_ATTRS, attr))
                    records.append((key, np.asarray(value)))
                    nodes[idx]["attributes"].append((attr, "", key))
            pairs = list(_children(obj))
            if obj is root:
                pairs += list(extra)
        for piece, group in _grouped(pairs).items():
            full = prefix + (piece,)
            direct = [c for rest, c in group if not rest]
            if direct:
                child = direct[0]
                if id(child) in node_of:
                    nodes[idx]["children"].append((piece, node_of[id(child)]))
                    continue
                cidx = new_node()
                node_of[id(child)] = cidx
                keep.append(child)
                nodes[idx]["children"].append((piece, cidx))
                queue.append((cidx, full, child, None))
            else:
                cidx = new_node()
                nodes[idx]["children"].append((piece, cidx))
                queue.append((cidx, full, None, group))
    return records, nodes


def _full_name(var):
    name = var.name
    return name[:-2] if name.endswith(":0") else name


def _encode_graph(nodes):
    """TF's TrackableObjectGraph bytes, or JSON when TF's protos (from
    tensorboard) are not installed."""
    try:
        from tensorboard.compat.proto import trackable_object_graph_pb2
    except ImportError:
        return _JSON_MARK + json.dumps(nodes).encode("utf-8")
    g = trackable_object_graph_pb2.TrackableObjectGraph()
    for n in nodes:
        pn = g.nodes.add()
        for name, node_id in n["children"]:
            ref = pn.children.add()
            ref.node_id = node_id
            ref.local_name = name
        for name, full, key in n["attributes"]:
            a = pn.attributes.add()
            a.name, a.full_name, a.checkpoint_key = name, full, key
    return g.SerializeToString()


def _decode_graph(data):
    """The nodes _encode_graph wrote (None when the bytes are neither)."""
    if data.startswith(_JSON_MARK):
        try:
            return json.loads(data[len(_JSON_MARK):].decode("utf-8"))
        except ValueError:
            return None
    try:
        from tensorboard.compat.proto import trackable_object_graph_pb2
        g = trackable_object_graph_pb2.TrackableObjectGraph()
        g.ParseFromString(data)
    except Exception:  # noqa: BLE001 (no protobuf, or not a graph)
        return None
    return [{"children": [(c.local_name, c.node_id) for c in n.children],
             "attributes": [(a.name, a.full_name, a.checkpoint_key)
                            for a in n.attributes]} for n in g.nodes]


def _paths_to_nodes(nodes, limit=100000):
    """{node id: [path tuples from the root]}: every path, not only the
    one each object was named by."""
    out = collections.defaultdict(list)
    stack = [(0, (), frozenset([0]))]
    count = 0
    while stack:
        idx, path, on_path = stack.pop()
        out[idx].append(path)
        count += 1
        if count > limit:
            raise ValueError("checkpoint object graph has too many paths")
        if not 0 <= idx < len(nodes):
            raise ValueError(f"checkpoint object graph: bad node {idx}")
        for name, child in nodes[idx]["children"]:
            if child not in on_path:
                stack.append((child, path + (name,), on_path | {child}))
    return out


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
    variables and to the attributes of its _restore_from_tensors; keep
    the rest pending on obj for attributes set later."""
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
    own = {k: v for k, v in tree.items()
           if len(k) == 2 and k[0] == _ATTRS}
    restore = getattr(obj, "_restore_from_tensors", None)
    if own and restore is not None:
        restore({k[1]: v[1] for k, v in own.items()})
        for k, (key, _) in own.items():
            status._consumed(key)
            matched.add(k)
    rest = {k: v for k, v in tree.items() if k not in matched}
    if rest and obj._defers_restore:
        pending = obj.__dict__.get(_trackable.PENDING)
        if pending is None:
            pending = {}
            object.__setattr__(obj, _trackable.PENDING, pending)
        for k, v in rest.items():
            pending.setdefault(k[0], {})[k[1:]] = (v, status)
            _track_list(obj, k[0])
        return {}
    return rest


class _TrackedList(list):
    """A list attribute with values waiting for items it does not hold
    yet (TF's ListWrapper): each change restores what now has a place."""

    def __repr__(self):
        return f"ListWrapper({list.__repr__(self)})"

    def __init__(self, items=(), owner=None, name=None):
        super().__init__(items)
        self._owner = None if owner is None else weakref.ref(owner)
        self._name = name

    def _changed(self):
        owner = self._owner() if self._owner is not None else None
        if owner is not None and owner.__dict__.get(_trackable.PENDING):
            owner._restore_deferred(self._name, self)

    def append(self, x):
        super().append(x)
        self._changed()

    def extend(self, xs):
        super().extend(xs)
        self._changed()

    def insert(self, i, x):
        super().insert(i, x)
        self._changed()

    def __setitem__(self, i, x):
        super().__setitem__(i, x)
        self._changed()

    def __iadd__(self, xs):
        super().__iadd__(xs)
        self._changed()
        return self


def _track_list(obj, piece):
    """Wraps the plain list attribute named by key piece in a
    _TrackedList, so that items appended later are restored."""
    attrs = getattr(obj, "__dict__", {})
    for name, value in attrs.items():
        if _escape(name) == piece and type(value) is list:
            object.__setattr__(obj, name, _TrackedList(value, obj, name))
            return


def restore_deferred(obj, name, value):
    """Called when attribute `name` of obj is set: restore what a
    checkpoint left pending for it."""
    pending = obj.__dict__[_trackable.PENDING]
    entries = pending.pop(_escape(name), None)
    if not entries:
        return
    if type(value) is list:
        # Items appended later restore then (TF's ListWrapper).
        value = _TrackedList(value, obj, name)
        object.__setattr__(obj, name, value)
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


class Checkpoint(_trackable.AutoTrackable):
    """Groups objects (modules, layers, models, optimizers, variables)
    to write and read their variables together."""

    def __init__(self, root=None, **kwargs):
        object.__setattr__(self, "_tfmini_save_counter", None)
        if root is not None:
            kwargs = dict(kwargs, root=root)
        for name, value in sorted(kwargs.items()):
            # TF wraps a list, dict or tuple in a trackable data
            # structure (ListWrapper...), so any of them is accepted;
            # their trackable items are saved by index or key.
            if type(value) is list:
                value = _TrackedList(value, self, name)
            elif not (_is_trackable(value)
                      or isinstance(value, (list, dict, tuple))):
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
        extra = []
        if self._tfmini_save_counter is not None:
            extra.append((("save_counter",), self._tfmini_save_counter))
        records, nodes = _walk(self, extra)
        graph = np.frombuffer(_encode_graph(nodes), np.uint8)
        records.append((GRAPH_KEY, graph))
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
        status = CheckpointLoadStatus(k for k, _ in records
                                      if k != GRAPH_KEY)
        values = dict(records)
        tree = {}
        for path, key in _value_paths(records):
            if path == ("save_counter",):
                _assign(self.save_counter, values[key], key)
                status._consumed(key)
                continue
            tree[path] = (key, values[key])
        _restore(self, tree, status)
        return status

    def restore(self, save_path, options=None):
        """read(save_path); None (nothing saved yet) restores nothing."""
        if save_path is None:
            return CheckpointLoadStatus(())
        return self.read(save_path, options)


def _key_path(key):
    """A checkpoint key's object path: the variable's, or for another
    attribute the object's path + ('.ATTRIBUTES', name)."""
    if key.endswith(_SUFFIX):
        return tuple(key[:-len(_SUFFIX)].split("/"))
    pieces = tuple(key.split("/"))
    if len(pieces) >= 2 and pieces[-2] == _ATTRS:
        return pieces
    return None


def _value_paths(records):
    """[(path, key)] for every value, at every path to its object when
    the file has an object graph, else at the path its key spells."""
    graph = dict(records).get(GRAPH_KEY)
    nodes = None if graph is None else _decode_graph(
        np.asarray(graph, np.uint8).tobytes())
    if nodes is None:
        return [(p, k) for k, _ in records
                if k != GRAPH_KEY and (p := _key_path(k)) is not None]
    keys = {k for k, _ in records}
    out = []
    for idx, paths in _paths_to_nodes(nodes).items():
        for name, _, key in nodes[idx]["attributes"]:
            if key not in keys:
                continue
            for path in paths:
                out.append((path if name == "VARIABLE_VALUE"
                            else path + (_ATTRS, name), key))
    return out


def _resolve(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or "
                             f"checkpoints in given directory {path}")
        return latest
    return path


class CheckpointReader:
    """tf.train.load_checkpoint's reader: the values of one checkpoint
    by key. The object graph reads as TF's: one bytes scalar."""

    def __init__(self, path):
        self._path = path
        self._values = dict(_read_records(path))

    @staticmethod
    def _value(key, value):
        if key == GRAPH_KEY:
            return np.asarray(value, np.uint8).tobytes()
        return value

    def get_tensor(self, tensor_str):
        name = tensor_str[:-2] if tensor_str.endswith(":0") else tensor_str
        if name not in self._values:
            raise errors.NotFoundError(
                None, None, f"Key {name} not found in checkpoint")
        return self._value(name, self._values[name])

    def has_tensor(self, tensor_str):
        return tensor_str in self._values

    def get_variable_to_shape_map(self):
        return {k: [] if k == GRAPH_KEY else list(np.shape(v))
                for k, v in self._values.items()}

    def get_variable_to_dtype_map(self):
        from .. import dtypes
        return {k: dtypes.string if k == GRAPH_KEY and
                hasattr(dtypes, "string") else dtypes.as_dtype(v.dtype)
                for k, v in self._values.items()}


def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader for a checkpoint file, or a folder's latest."""
    return CheckpointReader(_resolve(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """[(key, shape as a list)] of the values in a checkpoint, sorted
    (the object graph is a scalar, as in TF)."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return sorted(shapes.items())


def load_variable(ckpt_dir_or_file, name):
    """The stored value of key `name`, as a NumPy array (bytes for the
    object graph)."""
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


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
