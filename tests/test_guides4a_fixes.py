"""Gaps that TF's guides (gpu, graph_optimization, the customization and
distribute tutorials, tfrecord) found in tfmini, checked directly. The
expected values are what TF 2.21 gives."""
import pytest

import tfmini as tf


@pytest.fixture
def two_cpus():
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    try:
        yield
    finally:
        tf.config.set_logical_device_configuration(cpu, None)


@pytest.mark.parametrize("devices", [None, []])
def test_mirrored_strategy_without_devices_takes_every_logical_cpu(
        two_cpus, devices):
    # The GPU guide passes list_logical_devices('GPU'), empty without a
    # GPU; TF then takes all local devices.
    strat = tf.distribute.MirroredStrategy(devices)
    assert strat.num_replicas_in_sync == 2
    assert strat.extended.worker_devices == (
        "/job:localhost/replica:0/task:0/device:CPU:0",
        "/job:localhost/replica:0/task:0/device:CPU:1")


def test_mirrored_strategy_takes_logical_device_objects(two_cpus):
    devs = tf.config.list_logical_devices("CPU")
    assert tf.distribute.MirroredStrategy(devs).num_replicas_in_sync == 2


@pytest.fixture
def debug_stripper():
    old = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"debug_stripper": True})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options(
            {"debug_stripper": old.get("debug_stripper", False)})


def _debug_ops(x):
    tf.print("printed", x)
    tf.debugging.assert_equal(x, 0., message="neq")
    tf.debugging.Assert(x < 0, [x])
    return tf.debugging.check_numerics(x, "bad") * 2


def test_debug_stripper_leaves_checks_and_prints_out_of_traces(
        debug_stripper, capfd):
    f = tf.function(_debug_ops)
    assert float(f(tf.constant(float("inf")))) == float("inf")
    assert "printed" not in capfd.readouterr().out
    # Eager ops are not graphs: they still check.
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
        tf.debugging.check_numerics(tf.constant(float("inf")), "bad")


def test_debug_ops_run_without_debug_stripper(capfd):
    assert not tf.config.optimizer.get_experimental_options().get(
        "debug_stripper")
    f = tf.function(lambda x: tf.debugging.check_numerics(x, "bad"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
        f(tf.constant(float("inf")))
    g = tf.function(lambda x: tf.print("printed", x, output_stream="stdout"))
    g(tf.constant(1.))
    assert "printed 1" in capfd.readouterr().out


def test_disable_meta_optimizer_turns_debug_stripper_off(debug_stripper):
    tf.config.optimizer.set_experimental_options(
        {"disable_meta_optimizer": True})
    try:
        f = tf.function(lambda x: tf.debugging.check_numerics(x, "bad"))
        with pytest.raises(tf.errors.InvalidArgumentError):
            f(tf.constant(float("nan")))
    finally:
        tf.config.optimizer.set_experimental_options(
            {"disable_meta_optimizer": False})


def test_functional_shapes_keep_unknown_non_batch_dims():
    # custom_layers tutorial: Sequential over input_shape=(None, None, 3)
    # summarises as (None, None, None, c), not as the probe's 1x1 image.
    x = tf.keras.Input(shape=(None, None, 3))
    assert tf.keras.layers.Conv2D(1, 1)(x).shape == (None, None, None, 1)
    assert tf.keras.layers.Conv2D(2, 3, padding="same", strides=2)(x) \
        .shape == (None, None, None, 2)
    assert tf.keras.layers.BatchNormalization()(x).shape == \
        (None, None, None, 3)
    assert tf.keras.layers.GlobalAveragePooling2D()(x).shape == (None, 3)

    class SumRows(tf.keras.layers.Layer):     # no compute_output_shape
        def call(self, t):
            return tf.reduce_sum(t, axis=1)
    assert SumRows()(x).shape == (None, None, 3)
    seq = tf.keras.Input(shape=(None,))
    assert tf.keras.layers.Embedding(10, 4)(seq).shape == (None, None, 4)
    assert tf.keras.layers.Dense(4)(tf.keras.Input(shape=(3,))).shape == \
        (None, 4)
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(2, 1, input_shape=(None, None, 3)),
        tf.keras.layers.BatchNormalization()])
    assert model.output_shape == (None, None, None, 2)
    assert model(tf.zeros([1, 2, 3, 3])).shape == (1, 2, 3, 2)


def test_batch_of_lines_and_records_is_a_string_tensor(tmp_path):
    # customization basics tutorial: TextLineDataset(...).batch(2).
    path = tmp_path / "lines.txt"
    path.write_bytes(b"Line 1\nLine 2\nLine 3\n  ")
    got = list(tf.data.TextLineDataset(str(path)).batch(2))
    assert [str(x) for x in got] == [
        "tf.Tensor([b'Line 1' b'Line 2'], shape=(2,), dtype=string)",
        "tf.Tensor([b'Line 3' b'  '], shape=(2,), dtype=string)"]
    rec = tmp_path / "r.tfrecord"
    with tf.io.TFRecordWriter(str(rec)) as w:
        for r in (b"a\x00", b"bc", b""):
            w.write(r)
    got = list(tf.data.TFRecordDataset(str(rec)).batch(3))
    assert got[0].dtype == tf.string
    assert got[0].numpy().tolist() == [b"a\x00", b"bc", b""]   # NUL kept
    # String tensors with a shape, beside a number.
    ds = tf.data.Dataset.from_tensor_slices(
        (tf.constant([[b"a"], [b"bcd"]]), [1, 2])).batch(2)
    s, n = next(iter(ds))
    assert s.shape == (2, 1) and s.numpy().tolist() == [[b"a"], [b"bcd"]]
    assert n.numpy().tolist() == [1, 2]


def test_default_and_one_device_reduce_give_the_value_back():
    # distributed_training guide: get_strategy().reduce("SUM", 1., None)
    # shows 1.0 (TF 2.21); one replica has nothing to combine.
    d = tf.distribute.get_strategy()
    assert d.reduce("SUM", 1., axis=None) == 1.0
    assert type(d.reduce("SUM", 1., axis=None)) is float
    assert d.reduce("MEAN", [1., 2.], axis=None) == [1., 2.]
    assert float(d.reduce("SUM", [1., 2.], axis=0)) == 3.0
    with pytest.raises(ValueError):
        d.reduce("BAD", 1., axis=None)
    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert one.reduce("SUM", 2., axis=None) == 2.0
    # A MirroredStrategy gives a tensor (TF's too).
    m = tf.distribute.MirroredStrategy()
    assert float(m.reduce("SUM", 1., axis=None)) == 1.0
    assert isinstance(m.reduce("SUM", 1., axis=None), tf.Tensor)


def test_cross_device_ops_reduce_as_the_strategy(two_cpus):
    for ops in (tf.distribute.HierarchicalCopyAllReduce(),
                tf.distribute.NcclAllReduce(num_packs=0),
                tf.distribute.ReductionToOneDevice(),
                tf.distribute.ReductionToOneDevice(
                    accumulation_fn=tf.math.add_n)):
        strat = tf.distribute.MirroredStrategy(cross_device_ops=ops)
        assert strat.extended._cross_device_ops is ops
        v = strat.run(lambda: tf.cast(
            tf.distribute.get_replica_context().replica_id_in_sync_group,
            tf.float32) + 1.)
        assert float(ops.reduce("SUM", v, "/cpu:0")) == 3.0
        assert float(ops.reduce(tf.distribute.ReduceOp.MEAN, v,
                                "/cpu:0")) == 1.5
        (got,) = ops.batch_reduce("SUM", [(v, "/cpu:0")])
        assert float(got) == 3.0
        with pytest.raises(ValueError, match="destinations"):
            ops.reduce("SUM", v, "")
    with pytest.raises(ValueError, match="num_packs"):
        tf.distribute.HierarchicalCopyAllReduce(num_packs=-1)
    with pytest.raises(ValueError, match="CrossDeviceOps"):
        tf.distribute.MirroredStrategy(cross_device_ops="nccl")


def test_central_storage_strategy_computes_on_the_cpu_with_one_variable():
    strat = tf.distribute.experimental.CentralStorageStrategy()
    cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert strat.num_replicas_in_sync == 1
    assert strat.extended.worker_devices == (cpu0,)
    assert strat.extended.parameter_devices == (cpu0,)
    with strat.scope():
        v = tf.Variable(1.)
    strat.run(lambda: v.assign_add(2.))
    assert float(v) == 3.0


def test_distributed_dataset_element_spec_as_input_signature(two_cpus):
    # distribute/input tutorial: tf.function(input_signature=
    # [dist_dataset.element_spec]) called with the PerReplica batches.
    strat = tf.distribute.MirroredStrategy()
    ds = tf.data.Dataset.from_tensors(([1.], [1.])).repeat(20).batch(8)
    dist = strat.experimental_distribute_dataset(ds)
    spec = "TensorSpec(shape=(None, 1), dtype=tf.float32, name=None)"
    assert repr(dist.element_spec) == \
        f"(PerReplicaSpec({spec}, {spec}), PerReplicaSpec({spec}, {spec}))"

    @tf.function(input_signature=[dist.element_spec])
    def step(inputs):
        return strat.run(lambda x: 2 * x[0] - x[1], args=(inputs,))
    got = [strat.experimental_local_results(step(x)) for x in dist]
    assert [[tuple(t.shape) for t in g] for g in got] == \
        [[(4, 1), (4, 1)], [(4, 1), (4, 1)], [(2, 1), (2, 1)]]
    assert all(float(t[0, 0]) == 1.0 for g in got for t in g)
    assert step.experimental_get_tracing_count() == 1


def test_input_signature_may_hold_namedtuples():
    import collections
    Pair = collections.namedtuple("Pair", "a b")

    @tf.function(input_signature=[Pair(tf.TensorSpec([None]),
                                       tf.TensorSpec([]))])
    def f(p):
        return p.a * p.b
    assert f(Pair(tf.constant([1., 2.]), tf.constant(3.))).numpy() \
        .tolist() == [3., 6.]
    assert f.experimental_get_tracing_count() == 1


def test_data_options_are_checked_merged_and_read_back():
    # distribute/input tutorial: auto_shard_policy through with_options.
    policy = tf.data.experimental.AutoShardPolicy
    assert [int(p) for p in policy] == [-1, 0, 1, 2, 3]
    o = tf.data.Options()
    assert o.experimental_distribute.auto_shard_policy == policy.AUTO
    assert o.deterministic is None
    with pytest.raises(AttributeError, match="Cannot set the property foo"):
        o.foo = 1
    with pytest.raises(TypeError, match="auto_shard_policy"):
        o.experimental_distribute.auto_shard_policy = "DATA"
    with pytest.raises(TypeError, match="deterministic"):
        o.deterministic = 3
    o.experimental_distribute.auto_shard_policy = policy.DATA
    assert o != tf.data.Options() and tf.data.Options() == tf.data.Options()
    ds = tf.data.Dataset.range(3).with_options(o)
    assert repr(ds).startswith("<_OptionsDataset element_spec=")
    assert [int(x) for x in ds] == [0, 1, 2]
    assert ds.map(lambda x: x).batch(2).options() \
        .experimental_distribute.auto_shard_policy == policy.DATA
    o2 = tf.data.Options()
    o2.experimental_deterministic = False     # TF's older name
    both = ds.with_options(o2).options()
    assert both.deterministic is False
    assert both.experimental_distribute.auto_shard_policy == policy.DATA
    assert tf.data.Dataset.range(2).options() == tf.data.Options()
    with pytest.raises(TypeError):
        ds.with_options({"deterministic": True})


def test_record_datasets_and_parsed_maps_have_tfs_static_specs(tmp_path):
    # tfrecord tutorial: the specs show before (or without) any record.
    missing = str(tmp_path / "images.tfrecords")
    raw = tf.data.TFRecordDataset(missing)
    assert repr(raw) == ("<TFRecordDatasetV2 element_spec=TensorSpec("
                         "shape=(), dtype=tf.string, name=None)>")
    assert tf.data.TextLineDataset(missing).element_spec == \
        tf.TensorSpec((), tf.string)
    features = {"width": tf.io.FixedLenFeature([], tf.int64),
                "image_raw": tf.io.FixedLenFeature([], tf.string),
                "depth": tf.io.FixedLenFeature([2], tf.float32)}
    parsed = raw.map(lambda r: tf.io.parse_single_example(r, features))
    spec = parsed.element_spec
    assert list(spec) == ["depth", "image_raw", "width"]    # TF's order
    assert spec["depth"] == tf.TensorSpec((2,), tf.float32)
    assert spec["image_raw"] == tf.TensorSpec((), tf.string)
    # Reading it is still TF's NotFoundError: nothing was parsed.
    with pytest.raises(tf.errors.NotFoundError):
        list(parsed)
    # In a tf.function tfmini cannot parse, and says so.
    with pytest.raises(NotImplementedError, match="parse_single_example"):
        tf.function(lambda s: tf.io.parse_single_example(s, features),
                    autograph=False)(tf.constant(b""))


def test_parsed_keys_come_in_tfs_order():
    ex = tf.train.Example(features=tf.train.Features(feature={
        "b": tf.train.Feature(int64_list=tf.train.Int64List(value=[1])),
        "a": tf.train.Feature(int64_list=tf.train.Int64List(value=[2]))}))
    s = ex.SerializeToString()
    feats = {"b": tf.io.FixedLenFeature([], tf.int64),
             "a": tf.io.FixedLenFeature([], tf.int64),
             "c": tf.io.VarLenFeature(tf.int64)}
    one = tf.io.parse_single_example(s, feats)
    assert list(one) == ["c", "a", "b"]       # sparse keys, then dense
    assert int(one["a"]) == 2 and int(one["b"]) == 1
    assert list(tf.io.parse_example([s], feats)) == ["c", "a", "b"]


def test_records_and_lines_are_scalar_string_tensors(tmp_path):
    # tfrecord tutorial: `for raw_record in raw_dataset.take(10):
    # print(repr(raw_record))` shows TF's tensors.
    rec = str(tmp_path / "r.tfrecord")
    with tf.io.TFRecordWriter(rec) as w:
        w.write(b"\n\x00x")
    (r,) = list(tf.data.TFRecordDataset([rec]).take(10))
    assert repr(r) == ("<tf.Tensor: shape=(), dtype=string, "
                       "numpy=b'\\n\\x00x'>")
    lines = tmp_path / "t.txt"
    lines.write_bytes(b"a\nb")
    assert [str(x) for x in tf.data.TextLineDataset(str(lines))] == [
        "tf.Tensor(b'a', shape=(), dtype=string)",
        "tf.Tensor(b'b', shape=(), dtype=string)"]


def test_get_next_as_optional_on_dataset_and_distributed_iterators(
        two_cpus):
    it = iter(tf.data.Dataset.range(1))
    got = it.get_next_as_optional()
    assert bool(got.has_value()) and int(got.get_value()) == 0
    end = it.get_next_as_optional()
    assert not bool(end.has_value())
    assert end.element_spec == tf.TensorSpec((), tf.int64)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="does not have a value"):
        end.get_value()
    # distribute/input tutorial's loop, eagerly (TF 2.21's batches).
    strat = tf.distribute.MirroredStrategy()
    dist = iter(strat.experimental_distribute_dataset(
        tf.data.Dataset.range(9).batch(4)))
    seen = []
    while True:
        opt = dist.get_next_as_optional()
        if not opt.has_value():
            break
        seen.append([t.numpy().tolist() for t in
                     strat.experimental_local_results(opt.get_value())])
    assert seen == [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8], []]]
    # Pulled inside a tf.function: test_guidefix.py's iterator tests.


def test_functional_layers_over_unknown_dims_build_from_the_shape():
    # A VALID 3x3 conv and a 2x2 pool over a 1x1 probe would fail: the
    # probe retries with bigger sizes, and the dims stay None.
    x = tf.keras.Input(shape=(None, None, 3))
    y = tf.keras.layers.MaxPooling2D()(tf.keras.layers.Conv2D(8, 3)(x))
    assert y.shape == (None, None, None, 8)
    model = tf.keras.Model(x, tf.keras.layers.GlobalMaxPooling2D()(y))
    assert model(tf.zeros([2, 10, 12, 3])).shape == (2, 8)
    # Built from the shape with its Nones (Keras 3): a Dense over an
    # unknown last dim is TF's ValueError, not a 1-row kernel.
    with pytest.raises(ValueError, match="last dimension"):
        tf.keras.layers.Dense(3)(tf.keras.Input(shape=(None,)))
    # A real size error is still the first probe's.
    with pytest.raises(tf.errors.InvalidArgumentError, match="Conv2D"):
        tf.keras.layers.Conv2D(8, 3)(tf.keras.Input(shape=(2, 2, 3)))


def test_mirrored_strategy_over_gpu_names_without_a_gpu():
    # distributed_training guide: MirroredStrategy(["/gpu:0", "/gpu:1"])
    # on a machine without GPUs (TF 2.21: two replicas, soft-placed).
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("a GPU is visible")
    strat = tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1"])
    gpu = "/job:localhost/replica:0/task:0/device:GPU:"
    assert strat.extended.worker_devices == (gpu + "0", gpu + "1")
    got = strat.run(lambda: tf.constant(1.) + 1)
    assert [float(v) for v in got] == [2.0, 2.0]
    assert float(strat.reduce("SUM", got, axis=None)) == 4.0
    with pytest.raises(ValueError, match="Unknown device"):
        tf.distribute.MirroredStrategy(devices=["/gpu:x"])


def test_slices_of_python_bytes_keep_every_byte():
    ds = tf.data.Dataset.from_tensor_slices([b"a\x00", b"b"])
    assert [x.numpy() for x in ds] == [b"a\x00", b"b"]
    assert ds.element_spec == tf.TensorSpec((), tf.string)
    (got,) = list(tf.data.Dataset.from_tensor_slices(
        ([[b"\x00"], [b"b\x00"]], [1, 2])).batch(2))
    assert got[0].numpy().tolist() == [[b"\x00"], [b"b\x00"]]
    assert [x.numpy() for x in tf.data.Dataset.from_tensor_slices(
        ["é"])] == ["é".encode()]
