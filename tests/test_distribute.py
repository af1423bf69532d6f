"""tf.distribute in one process: MirroredStrategy over logical CPU
devices (replicas in threads, tfmini/distribute/replica.py). The core
check is replica equivalence: n replicas with batch B/n each end with
the weights of one replica with batch B."""
import os
import threading

import numpy as np
import pytest

import tfmini as tf

import _custom_loop
from _guide_loop import run_guide

CPU = tf.config.list_physical_devices("CPU")[0]


@pytest.fixture(autouse=True)
def four_cpus():
    tf.config.set_logical_device_configuration(
        CPU, [tf.config.LogicalDeviceConfiguration()] * 4)
    yield
    tf.config.set_logical_device_configuration(CPU, None)


def mirrored(n):
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(n)])


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = (x @ rng.normal(size=(5, 1)) + 0.1).astype(np.float32)
    return x, y


class BatchSizes(tf.keras.layers.Layer):
    """Identity that records the batch sizes (and threads) it sees."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = []

    def call(self, x):
        self.seen.append((x.shape[0], threading.current_thread().name))
        return x


def make_model(record=False):
    tf.keras.utils.set_random_seed(1)
    layers = [tf.keras.layers.Dense(6, activation="tanh", input_shape=(5,)),
              tf.keras.layers.Dense(1)]
    if record:
        layers.insert(1, BatchSizes())
    return tf.keras.Sequential(layers)


# ---- devices and strategies ---------------------------------------------

def test_logical_cpu_devices():
    devs = tf.config.list_logical_devices("CPU")
    assert [d.name for d in devs] == [f"/device:CPU:{i}" for i in range(4)]
    assert tf.config.get_logical_device_configuration(CPU) == \
        [tf.config.LogicalDeviceConfiguration()] * 4
    with tf.device("/CPU:3"):
        assert float(tf.constant(2.0) * 3.0) == 6.0
    with pytest.raises(ValueError, match="CPU:4"):
        with tf.device("/CPU:4"):
            pass
    with pytest.raises(ValueError, match="memory limit"):
        tf.config.set_logical_device_configuration(
            CPU, [tf.config.LogicalDeviceConfiguration(memory_limit=10)])


def test_strategies_and_contexts():
    s = mirrored(2)
    assert s.num_replicas_in_sync == 2
    assert s.extended.worker_devices[1] == \
        "/job:localhost/replica:0/task:0/device:CPU:1"
    # As TF 2.21: without devices and without GPUs, one replica on each
    # logical CPU (four here, from the fixture).
    assert tf.distribute.MirroredStrategy().num_replicas_in_sync == 4
    assert tf.distribute.OneDeviceStrategy("/cpu:0").num_replicas_in_sync \
        == 1
    with pytest.raises(ValueError, match="logical CPU"):
        tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:7"])
    assert not tf.distribute.has_strategy()
    assert tf.distribute.get_replica_context() is not None   # default
    assert not tf.distribute.in_cross_replica_context()
    with s.scope():
        assert tf.distribute.has_strategy()
        assert tf.distribute.get_strategy() is s
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None
        with pytest.raises(ValueError, match="Mixing"):
            with mirrored(2).scope():
                pass

    def fn():
        ctx = tf.distribute.get_replica_context()
        assert tf.distribute.get_strategy() is s
        assert not tf.distribute.in_cross_replica_context()
        return ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync,\
            threading.current_thread().name
    ids, nums, names = s.run(fn)
    assert [int(i) for i in s.experimental_local_results(ids)] == [0, 1]
    assert nums == 2                       # equal on all: not PerReplica
    assert len(set(s.experimental_local_results(names))) == 2


# ---- run, reduce, all_reduce, merge_call -----------------------------------

def test_reduce_all_reduce_merge_call():
    s = mirrored(4)
    per = s.run(lambda: tf.cast(
        tf.distribute.get_replica_context().replica_id_in_sync_group + 1,
        tf.float32) * tf.ones([2]))
    assert float(s.reduce("SUM", per, axis=None)[0]) == 10.0
    assert float(s.reduce(tf.distribute.ReduceOp.MEAN, per,
                          axis=None)[0]) == 2.5
    assert float(s.reduce("SUM", per, axis=0)) == 20.0
    assert float(s.reduce("MEAN", per, axis=0)) == 2.5
    np.testing.assert_array_equal(s.gather(per, axis=0).numpy(),
                                  [1, 1, 2, 2, 3, 3, 4, 4])
    with pytest.raises(ValueError, match="non-DistributedValues"):
        s.reduce("SUM", tf.constant(1.0), axis=None)
    assert float(s.reduce("MEAN", tf.constant(3.0), axis=None)) == 3.0

    calls = []

    def fn():
        ctx = tf.distribute.get_replica_context()
        i = int(ctx.replica_id_in_sync_group)
        total = ctx.all_reduce("sum", {"a": tf.constant(float(i))})
        mean = ctx.all_reduce(tf.distribute.ReduceOp.MEAN,
                              tf.constant([float(i), 2.0]))

        def merge(strategy, value):
            calls.append(threading.current_thread().name)
            assert tf.distribute.in_cross_replica_context()
            assert strategy is s
            return value                     # a PerReplica
        back = ctx.merge_call(merge, args=(tf.constant(i * 10),))
        return total["a"], mean, back
    total, mean, back = s.run(fn)
    assert float(total) == 6.0
    np.testing.assert_allclose(mean.numpy(), [1.5, 2.0])
    assert [int(b) for b in s.experimental_local_results(back)] == \
        [0, 10, 20, 30]
    assert len(calls) == 1


def test_replica_errors_do_not_hang():
    s = mirrored(2)
    with pytest.raises(ValueError, match="3 components"):
        s.run(lambda x: x, args=(tf.distribute.PerReplica([1, 2, 3]),))
    with pytest.raises(ValueError, match="list or tuple"):
        s.run(lambda x: x, args=tf.constant([1.0, 2.0]))

    def fails_on_one():
        ctx = tf.distribute.get_replica_context()
        if int(ctx.replica_id_in_sync_group) == 1:
            raise KeyError("replica one")
        return ctx.all_reduce("sum", tf.constant(1.0))
    with pytest.raises(KeyError, match="replica one"):
        s.run(fails_on_one)

    def skips_on_one():
        ctx = tf.distribute.get_replica_context()
        if int(ctx.replica_id_in_sync_group) == 0:
            ctx.all_reduce("sum", tf.constant(1.0))
        return 1
    with pytest.raises(RuntimeError, match="different collective"):
        s.run(skips_on_one)


def test_variable_aggregation_in_replica_context():
    s = mirrored(2)
    with s.scope():
        vm = tf.Variable(0.0, aggregation=tf.VariableAggregation.MEAN)
        vs = tf.Variable(0.0, aggregation=tf.VariableAggregation.SUM)
        vf = tf.Variable(0.0, aggregation=tf.VariableAggregation.
                         ONLY_FIRST_REPLICA)
        counter = tf.Variable(0.0)

    def fn():
        i = tf.cast(tf.distribute.get_replica_context().
                    replica_id_in_sync_group, tf.float32)
        vm.assign(i + 1.0)
        vs.assign(i + 1.0)
        vf.assign(i + 5.0)
        for _ in range(50):
            counter.assign_add(1.0)          # every replica's add counts
    s.run(fn)
    assert float(vm) == 1.5 and float(vs) == 3.0 and float(vf) == 5.0
    assert float(counter) == 100.0
    assert s.experimental_local_results(vm) == (vm, vm)


# ---- datasets ------------------------------------------------------------

def test_distribute_dataset_splits_batches():
    s = mirrored(2)
    ds = tf.data.Dataset.from_tensor_slices(np.arange(10, dtype=np.float32)
                                            ).batch(7)
    got = [[t.numpy().tolist() for t in s.experimental_local_results(x)]
           for x in s.experimental_distribute_dataset(ds)]
    assert got == [[[0, 1, 2, 3], [4, 5, 6]], [[7, 8], [9]]]

    seen = []

    def dataset_fn(ctx):
        seen.append((ctx.num_replicas_in_sync, ctx.input_pipeline_id,
                     ctx.get_per_replica_batch_size(8)))
        return tf.data.Dataset.from_tensor_slices(
            np.arange(16, dtype=np.float32)).batch(
                ctx.get_per_replica_batch_size(8))
    dist = s.distribute_datasets_from_function(dataset_fn)
    firsts = [[float(t[0]) for t in s.experimental_local_results(x)]
              for x in dist]
    assert seen == [(2, 0, 4)]
    assert firsts == [[0, 4], [8, 12]]
    with pytest.raises(ValueError, match="divisible"):
        tf.distribute.InputContext(1, 0, 3).get_per_replica_batch_size(8)


def test_compute_average_loss_and_regularization():
    s = mirrored(2)
    per = tf.constant([1.0, 2.0, 3.0, 6.0])
    assert float(tf.nn.compute_average_loss(per)) == 3.0
    assert float(tf.nn.compute_average_loss(
        per, sample_weight=[1, 0, 0, 1], global_batch_size=2)) == 3.5
    with pytest.raises(ValueError, match="rank 1"):
        tf.nn.compute_average_loss(tf.constant(1.0))
    # tf.add_n (the tutorial's regularization sum) came with this.
    assert float(tf.add_n([1.0, tf.constant(2.0), tf.Variable(3.0)])) == 6.0
    with pytest.raises(ValueError, match=r"AddN.*float32\[2\].*float32\[3\]"):
        tf.add_n([tf.ones([2]), tf.ones([3])])
    out = s.run(lambda: (tf.nn.compute_average_loss(per),
                         tf.nn.scale_regularization_loss([2.0, 4.0])))
    # 4 examples per replica, 2 replicas: a global batch of 8.
    assert float(s.experimental_local_results(out[0])[0]) == 1.5
    assert float(s.experimental_local_results(out[1])[1]) == 3.0


# ---- replica equivalence -------------------------------------------------

def custom_loop(n, traced, momentum=0.9):
    s = mirrored(n)
    x, y = data(32)
    with s.scope():
        model = make_model()
        opt = tf.keras.optimizers.SGD(0.1, momentum=momentum)
    losses = _custom_loop.train(s, model, opt, x, y, traced)
    return [w.numpy() for w in model.weights], losses, int(opt.iterations)


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("n", [2, 4])
def test_custom_loop_replica_equivalence(n, traced):
    w1, l1, it1 = custom_loop(1, traced)
    wn, ln, itn = custom_loop(n, traced)
    assert it1 == itn == 6                   # one step per global batch
    np.testing.assert_allclose(ln, l1, rtol=1e-5)
    for a, b in zip(w1, wn):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert not np.allclose(w1[0], make_model().weights[0].numpy())


def keras_fit(n, run_eagerly):
    s = mirrored(n)
    x, y = data(40)
    with s.scope():
        model = make_model(record=True)
        model.compile(tf.keras.optimizers.Adam(0.05), "mse",
                      metrics=["mae"], run_eagerly=run_eagerly)
    # 40 = 16 + 16 + 8: the last batch splits 2 per replica for n = 4.
    h = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    seen = model.layers[1].seen
    # The replicas' steps ran on their slices, in the replica threads.
    if n > 1:
        assert (16 // n, f"replica_{n - 1}") in seen
        assert (8 // n, f"replica_{n - 1}") in seen
        assert all(size < 16 for size, _ in seen)
    ev = model.evaluate(x, y, batch_size=16, verbose=0)
    pred = model.predict(x, batch_size=16, verbose=0)
    return [w.numpy() for w in model.weights], h.history, ev, pred


@pytest.mark.parametrize("run_eagerly", [False, True],
                         ids=["traced", "eager"])
@pytest.mark.parametrize("n", [2, 4])
def test_keras_fit_replica_equivalence(n, run_eagerly):
    w1, h1, e1, p1 = keras_fit(1, run_eagerly)
    wn, hn, en, pn = keras_fit(n, run_eagerly)
    for a, b in zip(w1, wn):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    for k in ("loss", "mae"):
        np.testing.assert_allclose(hn[k], h1[k], rtol=1e-5)
    np.testing.assert_allclose(en, e1, rtol=1e-5)
    assert pn.shape == (40, 1)
    np.testing.assert_allclose(pn, p1, rtol=1e-4, atol=1e-5)
    assert h1["loss"][-1] < h1["loss"][0]


# ---- the TF tutorial's loop (Custom training with tf.distribute.Strategy)

def test_tutorial_custom_training_loop(tmp_path):
    def on_epoch(train_accuracy, test_loss, test_accuracy):
        assert 0.0 <= float(train_accuracy.result()) <= 1.0
        # 16 test examples over 2 replicas: every one counted once.
        assert float(test_accuracy.count) == 16
        assert float(test_loss.count) == 16
    losses, model, optimizer, train_step = run_guide(
        mirrored(2), tmp_path, on_epoch)
    assert int(optimizer.iterations) == 3 * 3
    # Built inside the replicas' first trace, once: not once per replica.
    assert len(model.weights) == 6
    assert losses[-1] < losses[0]
    assert train_step.experimental_get_tracing_count() <= 2


# ---- checkpoints across strategies -----------------------------------------

def test_checkpoint_with_and_without_strategy(tmp_path):
    x, y = data(16)
    s = mirrored(2)
    with s.scope():
        model = make_model()
        model.compile(tf.keras.optimizers.Adam(0.05), "mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = tf.train.Checkpoint(model=model, optimizer=model.optimizer).save(
        os.path.join(str(tmp_path), "a"))

    plain = make_model()
    plain.compile(tf.keras.optimizers.Adam(0.05), "mse")
    plain.fit(x[:2], y[:2], batch_size=2, epochs=1, verbose=0)  # slots
    tf.train.Checkpoint(model=plain, optimizer=plain.optimizer).restore(
        path).assert_consumed()
    for a, b in zip(model.weights, plain.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(plain.optimizer.iterations) == 2

    # ... and the reverse: saved without a strategy, restored under one.
    for w in plain.weights:
        w.assign(w * 0.5)
    path2 = tf.train.Checkpoint(model=plain).save(
        os.path.join(str(tmp_path), "b"))
    with mirrored(4).scope():
        again = make_model()
        tf.train.Checkpoint(model=again).restore(path2)
    for a, b in zip(again.weights, plain.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_apply_gradients_with_gradients_already_aggregated():
    s = mirrored(2)
    with s.scope():
        v = tf.Variable([1.0, 2.0])
        opt = tf.keras.optimizers.SGD(0.5)

    def step():
        g = tf.constant([2.0, 2.0])      # summed by the caller already
        opt.apply_gradients([(g, v)], skip_gradients_aggregation=True)
    s.run(step)
    np.testing.assert_allclose(v.numpy(), [0.0, 1.0])
    assert int(opt.iterations) == 1


def test_replicas_share_out_the_openmp_threads():
    # omp_set_num_threads is per thread (libgomp): each replica thread
    # gets its share of the cores and the caller's setting is untouched.
    from tfmini import _C
    before = _C.get_num_threads()
    s = mirrored(2)
    per = s.run(_C.get_num_threads)
    assert per == max(1, tf.config.threading._default // 2)
    assert _C.get_num_threads() == before


class SlowBuild(tf.keras.layers.Dense):
    """A Dense whose build takes long enough for replicas running at once
    to all be inside it."""

    def build(self, input_shape):
        import time
        time.sleep(0.05)
        super().build(input_shape)


def test_eager_run_builds_a_lazy_model_once():
    s = mirrored(4)
    with s.scope():
        model = tf.keras.Sequential([SlowBuild(3), tf.keras.layers.Dense(1)])
        opt = tf.keras.optimizers.Adam(0.1)
    x = tf.ones([8, 2])

    def step(xb):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(model(xb), global_batch_size=8)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    per = s.experimental_distribute_values_from_function(
        lambda ctx: x[2 * ctx.replica_id_in_sync_group:
                      2 * ctx.replica_id_in_sync_group + 2])
    s.run(step, args=(per,))
    s.run(step, args=(per,))                   # now the replicas overlap
    assert len(model.weights) == 4
    assert len(opt.variables) == 2 + 2 * 4      # iterations, lr, m and v
    assert int(opt.iterations) == 2


def test_merge_call_reduce_to_and_update():
    # The pattern of TF's StrategyExtended docs.
    s = mirrored(2)
    with s.scope():
        v = tf.Variable(10.0)

    def fn():
        i = tf.cast(tf.distribute.get_replica_context().
                    replica_id_in_sync_group, tf.float32)

        def merge(strategy, update):
            total = strategy.extended.reduce_to(
                tf.VariableAggregation.SUM, update, v)
            return strategy.extended.update(
                v, lambda var, t: var.assign_sub(t), args=(total,))
        tf.distribute.get_replica_context().merge_call(
            merge, args=(i + 1.0,))
    s.run(fn)
    assert float(v) == 7.0


def test_collective_inside_a_per_replica_function_is_a_clear_error():
    s = mirrored(2)
    with s.scope():
        v = tf.Variable([1.0, 2.0])
        opt = tf.keras.optimizers.SGD(0.1)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * x)
        opt.apply_gradients([(tape.gradient(loss, v), v)])
        return loss
    out = {}

    def call():
        try:
            s.run(step, args=(tf.distribute.PerReplica(
                [tf.ones(2), tf.ones(2)]),))
        except Exception as e:      # noqa: BLE001 (checked below)
            out["error"] = e
    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "strategy.run hung"
    assert isinstance(out.get("error"), NotImplementedError)
    assert "around the code that calls strategy.run" in str(out["error"])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
