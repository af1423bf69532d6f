"""tf.train.Checkpoint as TF 2.21 does it: objects named breadth
first and saved once, restored at every path; deferred restores into
lists; tf.data iterators and tf.random.Generator tracked; the object
graph, load_checkpoint, list_variables and CheckpointManager; and the
code of TF's "Training checkpoints" guide, with what TF 2.21 printed."""
import os

import numpy as np
import pytest

import tfmini as tf


def guide(tf, workdir):
    """The code of TF's "Training checkpoints" guide, nearly as written
    (prints collected in `out`)."""
    out = []
    print = out.append  # noqa: A001
    os.chdir(workdir)

    class Net(tf.keras.Model):
        """A simple linear model."""

        def __init__(self):
            super(Net, self).__init__()
            self.l1 = tf.keras.layers.Dense(5)

        def call(self, x):
            return self.l1(x)

    net = Net()

    def toy_dataset():
        inputs = tf.range(10.)[:, None]
        labels = inputs * 5. + tf.range(5.)[None, :]
        return tf.data.Dataset.from_tensor_slices(
            dict(x=inputs, y=labels)).repeat().batch(2)

    def train_step(net, example, optimizer):
        """Trains `net` on `example` using `optimizer`."""
        with tf.GradientTape() as tape:
            output = net(example['x'])
            loss = tf.reduce_mean(tf.abs(output - example['y']))
        variables = net.trainable_variables
        gradients = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(gradients, variables))
        return loss

    opt = tf.keras.optimizers.Adam(0.1)
    dataset = toy_dataset()
    iterator = iter(dataset)
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net,
                               iterator=iterator)
    manager = tf.train.CheckpointManager(ckpt, './tf_ckpts', max_to_keep=3)

    def train_and_checkpoint(net, manager):
        ckpt.restore(manager.latest_checkpoint)
        if manager.latest_checkpoint:
            print("Restored from {}".format(manager.latest_checkpoint))
        else:
            print("Initializing from scratch.")

        for _ in range(50):
            example = next(iterator)
            loss = train_step(net, example, opt)
            ckpt.step.assign_add(1)
            if int(ckpt.step) % 10 == 0:
                save_path = manager.save()
                print("Saved checkpoint for step {}: {}".format(
                    int(ckpt.step), save_path))

    train_and_checkpoint(net, manager)
    first_x = next(iter(dataset))["x"].numpy().tolist()
    opt = tf.keras.optimizers.Adam(0.1)
    net = Net()
    dataset = toy_dataset()
    iterator = iter(dataset)
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net,
                               iterator=iterator)
    manager = tf.train.CheckpointManager(ckpt, './tf_ckpts', max_to_keep=3)
    train_and_checkpoint(net, manager)
    print(manager.checkpoints)
    print(("next x", next(iterator)["x"].numpy().tolist(), first_x))

    reader = tf.train.load_checkpoint('./tf_ckpts/')
    shape_from_key = reader.get_variable_to_shape_map()
    dtype_from_key = reader.get_variable_to_dtype_map()
    print([k for k in sorted(shape_from_key.keys()) if "net/" in k or
           k.startswith("step") or k.startswith("save_counter")])
    # Keras 3 names the kernel differently from the guide's Keras 2 key.
    key = [k for k in shape_from_key if k.startswith("net/") and
           shape_from_key[k] == [1, 5]][0]
    print("Shape: {}".format(shape_from_key[key]))
    print("Dtype: {}".format(dtype_from_key[key].name))
    print(reader.get_tensor(key).shape)
    print(type(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")).__name__)

    save = tf.train.Checkpoint()
    save.listed = [tf.Variable(1.)]
    save.listed.append(tf.Variable(2.))
    save.mapped = {'one': save.listed[0]}
    save.mapped['two'] = save.listed[1]
    save_path = save.save('./tf_list_example')

    restore = tf.train.Checkpoint()
    v2 = tf.Variable(0.)
    assert 0. == v2.numpy()  # Not restored yet
    restore.mapped = {'two': v2}
    restore.restore(save_path)
    assert 2. == v2.numpy()

    restore.listed = []
    print(repr(restore.listed))  # ListWrapper([])
    v1 = tf.Variable(0.)
    restore.listed.append(v1)  # Restores v1, from restore() in the previous cell
    assert 1. == v1.numpy()
    print(sorted(k for k, _ in tf.train.list_variables(save_path)))
    return out



# What TF 2.21 printed running guide() (the keys of the Keras 3 model's
# own weights left out: Keras 3 names them its own way).
TF_GUIDE_OUTPUT = [
    "Initializing from scratch.",
    "Saved checkpoint for step 10: ./tf_ckpts/ckpt-1",
    "Saved checkpoint for step 20: ./tf_ckpts/ckpt-2",
    "Saved checkpoint for step 30: ./tf_ckpts/ckpt-3",
    "Saved checkpoint for step 40: ./tf_ckpts/ckpt-4",
    "Saved checkpoint for step 50: ./tf_ckpts/ckpt-5",
    "Restored from ./tf_ckpts/ckpt-5",
    "Saved checkpoint for step 60: ./tf_ckpts/ckpt-6",
    "Saved checkpoint for step 70: ./tf_ckpts/ckpt-7",
    "Saved checkpoint for step 80: ./tf_ckpts/ckpt-8",
    "Saved checkpoint for step 90: ./tf_ckpts/ckpt-9",
    "Saved checkpoint for step 100: ./tf_ckpts/ckpt-10",
    ["./tf_ckpts/ckpt-8", "./tf_ckpts/ckpt-9", "./tf_ckpts/ckpt-10"],
    ("next x", [[8.0], [9.0]], [[0.0], [1.0]]),
    None,   # the keys (checked below)
    "Shape: [1, 5]",
    "Dtype: float32",
    (1, 5),
    "bytes",
    "ListWrapper([])",
    ["_CHECKPOINTABLE_OBJECT_GRAPH", "listed/0/.ATTRIBUTES/VARIABLE_VALUE",
     "listed/1/.ATTRIBUTES/VARIABLE_VALUE",
     "save_counter/.ATTRIBUTES/VARIABLE_VALUE"],
]


def test_checkpoint_guide(tmp_path):
    cwd = os.getcwd()
    try:
        out = guide(tf, str(tmp_path))
    finally:
        os.chdir(cwd)
    assert len(out) == len(TF_GUIDE_OUTPUT)
    for got, want in zip(out, TF_GUIDE_OUTPUT):
        if want is not None:
            assert got == want
    keys = out[14]
    assert "save_counter/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "step/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert sum(k.startswith("net/l1/") for k in keys) == 2


def _module():
    m = tf.Module()
    m.v = tf.Variable(1.0)
    m.vs = [tf.Variable(2.0)]
    return m


def test_object_on_two_paths_saved_once_restored_to_both(tmp_path):
    m = _module()
    m.alias = m.v
    ck = tf.train.Checkpoint(m=m, also=m.v)
    path = ck.write(str(tmp_path / "a"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    # Breadth first, as TF: the shortest path names the shared variable.
    assert keys == ["_CHECKPOINTABLE_OBJECT_GRAPH",
                    "also/.ATTRIBUTES/VARIABLE_VALUE",
                    "m/vs/0/.ATTRIBUTES/VARIABLE_VALUE"]
    # Restored into objects where the two paths now hold two variables:
    # both get the one value.
    m2 = tf.Module()
    m2.v = tf.Variable(0.0)
    m2.alias = tf.Variable(0.0)
    m2.vs = [tf.Variable(0.0)]
    other = tf.Variable(0.0)
    status = tf.train.Checkpoint(m=m2, also=other).read(path)
    assert float(m2.v) == 1.0 and float(m2.alias) == 1.0
    assert float(other) == 1.0 and float(m2.vs[0]) == 2.0
    status.assert_consumed()


def test_list_items_appended_after_restore(tmp_path):
    m = _module()
    m.vs.append(tf.Variable(3.0))
    path = tf.train.Checkpoint(m=m).write(str(tmp_path / "b"))
    m2 = tf.Module()
    m2.v = tf.Variable(0.0)
    m2.vs = []
    status = tf.train.Checkpoint(m=m2).read(path)
    with pytest.raises(AssertionError):
        status.assert_consumed()
    first, second = tf.Variable(0.0), tf.Variable(0.0)
    m2.vs.append(first)
    assert float(first) == 2.0
    m2.vs.extend([second])
    assert float(second) == 3.0
    assert isinstance(m2.vs, list) and repr(m2.vs).startswith("ListWrapper")
    status.assert_consumed()


def test_iterator_position_saved_and_restored(tmp_path):
    ds = tf.data.Dataset.range(10)
    it = iter(ds)
    next(it), next(it), next(it)
    ck = tf.train.Checkpoint(it=it)
    path = ck.write(str(tmp_path / "c"))
    assert ("it/.ATTRIBUTES/ITERATOR_STATE", [1]) in \
        tf.train.list_variables(path)
    assert int(next(it)) == 3
    ck.read(path).assert_consumed()
    assert int(next(it)) == 3
    it2 = iter(ds)
    tf.train.Checkpoint(it=it2).read(path)
    assert [int(x) for x in it2] == list(range(3, 10))


def test_generator_state_saved_and_restored(tmp_path):
    g = tf.random.Generator.from_seed(7)
    g.normal([3])
    ck = tf.train.Checkpoint(gen=g)
    path = ck.write(str(tmp_path / "d"))
    assert ("gen/_state_var/.ATTRIBUTES/VARIABLE_VALUE", [3]) in \
        tf.train.list_variables(path)
    want = g.normal([4]).numpy()
    ck.read(path)
    np.testing.assert_array_equal(g.normal([4]).numpy(), want)
    g2 = tf.random.Generator.from_seed(0)
    tf.train.Checkpoint(gen=g2).read(path)
    np.testing.assert_array_equal(g2.normal([4]).numpy(), want)


def test_load_checkpoint_reader(tmp_path):
    m = _module()
    ck = tf.train.Checkpoint(m=m)
    path = ck.save(str(tmp_path / "e"))
    reader = tf.train.load_checkpoint(str(tmp_path))
    assert reader.get_tensor("m/v/.ATTRIBUTES/VARIABLE_VALUE") == 1.0
    shapes = reader.get_variable_to_shape_map()
    assert shapes["_CHECKPOINTABLE_OBJECT_GRAPH"] == []
    assert shapes["m/vs/0/.ATTRIBUTES/VARIABLE_VALUE"] == []
    assert reader.get_variable_to_dtype_map()[
        "m/v/.ATTRIBUTES/VARIABLE_VALUE"] == tf.float32
    graph = reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    assert isinstance(graph, bytes) and graph
    assert tf.train.load_variable(path, "m/v/.ATTRIBUTES/VARIABLE_VALUE") \
        == 1.0
    with pytest.raises(tf.errors.NotFoundError):
        reader.get_tensor("nope")


def test_object_graph_is_tf_proto(tmp_path):
    proto = pytest.importorskip(
        "tensorboard.compat.proto.trackable_object_graph_pb2")
    m = _module()
    m.alias = m.v
    path = tf.train.Checkpoint(m=m).write(str(tmp_path / "f"))
    g = proto.TrackableObjectGraph()
    g.ParseFromString(tf.train.load_variable(
        path, "_CHECKPOINTABLE_OBJECT_GRAPH"))
    root = g.nodes[0]
    assert [c.local_name for c in root.children] == ["m"]
    mod = g.nodes[root.children[0].node_id]
    names = {c.local_name: c.node_id for c in mod.children}
    # Two edges, one node: the variable is saved once.
    assert names["alias"] == names["v"]
    attr = g.nodes[names["v"]].attributes[0]
    assert attr.name == "VARIABLE_VALUE"
    assert attr.checkpoint_key == "m/alias/.ATTRIBUTES/VARIABLE_VALUE"


def test_checkpoint_manager_keeps_the_newest(tmp_path):
    v = tf.Variable(0.0)
    ck = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=2)
    assert manager.latest_checkpoint is None
    for i in range(4):
        v.assign(float(i))
        manager.save()
    assert [os.path.basename(p) for p in manager.checkpoints] == \
        ["ckpt-3", "ckpt-4"]
    assert not os.path.exists(str(tmp_path / "ckpt-1.index"))
    v.assign(-1.0)
    ck.restore(manager.latest_checkpoint)
    assert float(v) == 3.0
    again = tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=2)
    assert again.checkpoints == manager.checkpoints
    with pytest.raises(ValueError):
        tf.train.CheckpointManager(ck, str(tmp_path), max_to_keep=0)


def test_files_without_object_graph_still_restore(tmp_path):
    # Checkpoints written before the object graph was stored restore by
    # the paths their keys spell.
    from tfmini.keras.saving import weights_format
    m = _module()
    path = tf.train.Checkpoint(m=m).write(str(tmp_path / "old"))
    records = [r for r in weights_format.read(path + ".index")
               if r[0] != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    weights_format.write(path + ".index", records, overwrite=True)
    m2 = tf.Module()
    m2.v = tf.Variable(0.0)
    m2.vs = [tf.Variable(0.0)]
    tf.train.Checkpoint(m=m2).read(path).assert_consumed()
    assert float(m2.v) == 1.0 and float(m2.vs[0]) == 2.0
