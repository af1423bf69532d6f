"""MultiWorkerMirroredStrategy over MPI: scripts run under
`mpirun -np 2` on loopback (tests skip when Open MPI is absent), compared
with the same script on one worker. Also BackupAndRestore, in process and
across a killed worker."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tfmini as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIRUN = shutil.which("mpirun")
try:
    from tfmini.distribute import _mpi  # noqa: F401
    HAVE_MPI = True
except ImportError:
    HAVE_MPI = False

needs_mpi = pytest.mark.skipif(
    MPIRUN is None or not HAVE_MPI,
    reason="needs Open MPI (apt-get install libopenmpi-dev openmpi-bin, "
           "then rebuild tfmini)")

HEADER = '''
import json, os, signal, sys, time
import numpy as np
import tfmini as tf

OUT, MODE = sys.argv[1], sys.argv[2]


def make_strategy(**kwargs):
    if MODE == "mwms":
        return tf.distribute.MultiWorkerMirroredStrategy(**kwargs)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    n = 2 if MODE == "mirrored" else 1
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(n)])


def task_id(s):
    r = getattr(s, "cluster_resolver", None)
    return r.task_id if r is not None else 0


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = (x @ rng.normal(size=(5, 1)) + 0.1).astype(np.float32)
    return x, y


def mlp():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(6, activation="tanh", input_shape=(5,)),
        tf.keras.layers.Dense(1)])


def save(s, **arrays):
    np.savez(os.path.join(OUT, f"task{task_id(s)}.npz"), **arrays)


# The metric scripts' data: (labels, two-class logits, x) in global
# batches of 8, and the three metrics they update from it.
def metric_dataset(s):
    x, _ = data(40)
    labels = (x[:, 0] > 0).astype(np.int64)
    logits = np.stack([-x[:, 0], x[:, 0] + 0.3 * x[:, 1]], axis=1)
    return s.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((labels, logits, x)).batch(8))


def make_metrics():
    return (tf.keras.metrics.SparseCategoricalAccuracy(),
            tf.keras.metrics.Mean(), tf.keras.metrics.AUC(num_thresholds=20))


def update_metrics(metrics, lb, lg, xb):
    acc, mean, auc = metrics
    acc.update_state(lb, lg)
    mean.update_state(xb[:, 2])
    auc.update_state(lb, tf.nn.softmax(lg)[:, 1])
'''

CUSTOM_LOOP = '''
import _custom_loop

s = make_strategy()
x, y = data(32)
out = {}
for traced in (False, True):
    with s.scope():
        # Workers start from different random weights: the strategy must
        # give every worker the chief's.
        tf.keras.utils.set_random_seed(1 + task_id(s))
        model = mlp()
        opt = tf.keras.optimizers.SGD(0.1, momentum=0.9)
    losses = _custom_loop.train(s, model, opt, x, y, traced)
    tag = "traced" if traced else "eager"
    out[tag + "_losses"] = losses
    out[tag + "_iterations"] = int(opt.iterations)
    for i, w in enumerate(model.weights):
        out[f"{tag}_w{i}"] = w.numpy()
save(s, **out)
'''

KERAS_FIT = '''
from tfmini.distribute import overlap
# BUCKET=<bytes>: buckets small enough that the overlapped all-reduce
# starts several during each backward pass.
s = make_strategy(communication_options=tf.distribute.experimental.
                  CommunicationOptions(
                      bytes_per_pack=int(os.environ.get("BUCKET", "0"))))
x, y = data(40)
out = {}
for eager in (False, True):
    with s.scope():
        tf.keras.utils.set_random_seed(1 + task_id(s))
        model = mlp()
        model.compile(tf.keras.optimizers.Adam(0.05), "mse",
                      metrics=["mae"], run_eagerly=eager)
    # 40 = 16 + 16 + 8: each worker takes half of every batch.
    overlap.stats.reset()
    h = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    out[("eager" if eager else "traced") + "_stats"] = [
        overlap.stats.backward_passes, overlap.stats.buckets,
        overlap.stats.buckets_started_in_backward, overlap.stats.reused]
    ev = model.evaluate(x, y, batch_size=16, verbose=0)
    tag = "eager" if eager else "traced"
    out[tag + "_pred"] = model.predict(x, batch_size=16, verbose=0)
    out[tag + "_loss"] = h.history["loss"]
    out[tag + "_mae"] = h.history["mae"]
    out[tag + "_eval"] = ev
    for i, w in enumerate(model.weights):
        out[f"{tag}_w{i}"] = w.numpy()
save(s, **out)
'''

# TF's guide "Custom training with tf.distribute.Strategy" (tests/
# _guide_loop.py, also run by test_distribute.py); only `strategy`
# differs between the runs.
GUIDE = '''
from _guide_loop import run_guide
tf.keras.utils.set_random_seed(3)
strategy = make_strategy()
losses, model, optimizer, _ = run_guide(strategy, OUT)
save(strategy, losses=losses, iterations=int(optimizer.iterations),
     **{f"w{i}": w.numpy() for i, w in enumerate(model.weights)})
'''

# A step that never finishes on one worker: at step 3 task 1 dies
# (FAULT=kill), stalls (stall) or raises (raise); the others must fail
# with a clear error.
FAULT = '''
from tfmini.distribute.experimental import CommunicationOptions
# BUCKET=16: the overlapped all-reduce's buckets (3 per step) are in
# flight, traced or eager, when the peer goes.
s = make_strategy(communication_options=CommunicationOptions(
    timeout_seconds=float(os.environ.get("TIMEOUT", "0")) or None,
    bytes_per_pack=int(os.environ.get("BUCKET", "0"))))
x, y = data(64)
with s.scope():
    model = mlp()
    opt = tf.keras.optimizers.SGD(0.1)


def step(xb, yb):
    def fn(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, model.weights),
                                model.weights))
        return loss
    return s.reduce("MEAN", s.run(fn, args=(xb, yb)), axis=None)


# EAGER=1: eager steps, else a tf.function.
if os.environ.get("EAGER") != "1":
    step = tf.function(step)
try:
    for i, (xb, yb) in enumerate(s.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices((x, y)).batch(8))):
        if i == 3 and task_id(s) == 1:
            if os.environ["FAULT"] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if os.environ["FAULT"] == "raise":
                raise KeyError("a bug on worker 1")
            time.sleep(60)
        step(xb, yb)
    print("FINISHED", task_id(s), flush=True)
except Exception as e:
    print(f"WORKER-ERROR task {task_id(s)}: {type(e).__name__}: {e}",
          flush=True)
    raise
'''

BACKUP = '''
s = make_strategy()
x, y = data(40)
with s.scope():
    tf.keras.utils.set_random_seed(1)
    model = mlp()
    model.compile(tf.keras.optimizers.SGD(0.05, momentum=0.9), "mse")
crash = int(os.environ.get("CRASH_AT_EPOCH", "-1"))
epochs = []


class Crash(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == crash and task_id(s) == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        epochs.append(epoch)


model.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0,
          callbacks=[tf.keras.callbacks.BackupAndRestore(
              os.path.join(os.environ["BACKUP_ROOT"], "backup")), Crash()])
save(s, epochs=epochs, **{f"w{i}": w.numpy()
                          for i, w in enumerate(model.weights)})
'''


def run_script(body, out, mode, np_=2, timeout=240, env=None):
    """The script under mpirun -np np_ (mode 'mwms') or as one process;
    returns (CompletedProcess, seconds)."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "script.py")
    with open(path, "w") as f:
        f.write(HEADER + textwrap.dedent(body))
    # tests/ too: the GUIDE script imports _guide_loop from there.
    full = dict(os.environ, OMP_NUM_THREADS="1",
                PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT,
                                                                "tests")]),
                OMPI_ALLOW_RUN_AS_ROOT="1",
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_rmaps_base_oversubscribe="1", **(env or {}))
    cmd = [sys.executable, path, out, mode]
    if mode == "mwms":
        cmd = [MPIRUN, "-np", str(np_), "--oversubscribe",
               "--mca", "btl", "self,tcp",
               "--mca", "btl_tcp_if_include", "lo",
               "--mca", "oob_tcp_if_include", "lo",
               # mpirun sends SIGKILL this long after SIGTERM (default 1
               # s): time for a loaded machine to print the error.
               "--mca", "odls_base_sigkill_timeout", "10"] + \
            [a for k in ("PYTHONPATH", "OMP_NUM_THREADS", *(env or {}))
             for a in ("-x", k)] + cmd
    t0 = time.time()
    r = subprocess.run(cmd, env=full, capture_output=True, text=True,
                       timeout=timeout, cwd=out)
    return r, time.time() - t0


def ok(r):
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def load(out, task=0):
    with np.load(os.path.join(out, f"task{task}.npz")) as z:
        return dict(z)


def assert_same(a, b, keys, rtol=1e-5, atol=1e-6):
    for k in keys:
        np.testing.assert_allclose(b[k], a[k], rtol=rtol, atol=atol,
                                   err_msg=k)


# ---- replica equivalence: 2 workers with B/2 == 1 worker with B ----------

@needs_mpi
def test_custom_loop_two_workers_equal_one(tmp_path):
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    ok(run_script(CUSTOM_LOOP, one, "one")[0])
    ok(run_script(CUSTOM_LOOP, two, "mwms")[0])
    ref, w0, w1 = load(one), load(two, 0), load(two, 1)
    keys = [k for k in ref if "_w" in k or "_losses" in k]
    for got in (w0, w1):
        assert_same(ref, got, keys)
        assert got["eager_iterations"] == got["traced_iterations"] == 6
    assert ref["eager_losses"][-1] < ref["eager_losses"][0]


@needs_mpi
@pytest.mark.parametrize("bucket", ["0", "16"])
def test_keras_fit_two_workers_equal_one(tmp_path, bucket):
    """Default buckets (4 MiB: the small MLP's gradients fill one, started
    when the walk ends) and 16-byte ones (several start during each
    backward pass, traced or eager)."""
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    ok(run_script(KERAS_FIT, one, "one")[0])
    ok(run_script(KERAS_FIT, two, "mwms", env={"BUCKET": bucket})[0])
    ref, w0, w1 = load(one), load(two, 0), load(two, 1)
    weights = [k for k in ref if "_w" in k or "_pred" in k]
    assert w0["traced_pred"].shape == (40, 1)
    # Metrics count every worker's examples (summed over MPI).
    logged = [k for k in ref if k.endswith(("_loss", "_mae", "_eval"))]
    for got in (w0, w1):
        assert_same(ref, got, weights, rtol=1e-4, atol=1e-5)
        assert_same(ref, got, logged)
    assert ref["traced_loss"][-1] < ref["traced_loss"][0]
    # 9 train steps: every gradient (4 variables) summed by a bucket.
    for tag in ("traced", "eager"):
        passes, buckets, early, reused = w0[tag + "_stats"]
        assert reused == 9 * 4, (tag, w0[tag + "_stats"])
        if bucket == "16":
            assert passes == 9 and early >= 9 * 2, (tag, w0[tag + "_stats"])
        else:
            assert buckets == 9 and early == 0, (tag, w0[tag + "_stats"])


@needs_mpi
def test_guide_custom_loop_in_process_and_under_mpi(tmp_path):
    inproc, mpi = str(tmp_path / "mirrored"), str(tmp_path / "mpi")
    ok(run_script(GUIDE, inproc, "mirrored")[0])
    ok(run_script(GUIDE, mpi, "mwms")[0])
    ref, got = load(inproc), load(mpi, 0)
    assert int(ref["iterations"]) == int(got["iterations"]) == 9
    assert ref["losses"][-1] < ref["losses"][0]
    # The same replicas, batches and reductions: the same training.
    assert_same(ref, got, [k for k in ref if k != "iterations"], rtol=1e-4,
                atol=1e-5)
    assert_same(got, load(mpi, 1), list(got))
    # The workers' last checkpoint (epoch 2, the last) restores into a
    # model made without any strategy.
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(4, 3, activation='relu'),
        tf.keras.layers.MaxPooling2D(), tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(8, activation='relu'),
        tf.keras.layers.Dense(3)])
    model(np.zeros((1, 8, 8, 1), np.float32))
    tf.train.Checkpoint(model=model).restore(
        tf.train.latest_checkpoint(mpi)).expect_partial()
    for i, w in enumerate(model.weights):
        np.testing.assert_allclose(w.numpy(), got[f"w{i}"], rtol=1e-6)


# ---- the gradient all-reduce overlapped with the backward pass ------------

# A custom loop, eager or (TRACED=1) a tf.function, over a deeper MLP
# with small buckets, so that several start during the backward pass.
OVERLAP = """
from tfmini.distribute import overlap
s = make_strategy(communication_options=tf.distribute.experimental.
                  CommunicationOptions(bytes_per_pack=2048))
s._overlap = os.environ.get("OVERLAP", "1") == "1"
x, y = data(32)
with s.scope():
    tf.keras.utils.set_random_seed(1 + task_id(s))
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(24, activation="tanh", input_shape=(5,))] +
        [tf.keras.layers.Dense(24, activation="tanh") for _ in range(4)] +
        [tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.SGD(0.05, momentum=0.9)


def step(xb, yb):
    with tf.GradientTape() as tape:
        per_example = tf.reduce_sum((model(xb, training=True) - yb) ** 2,
                                    axis=1)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=16)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


ds = s.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices((x, y)).batch(16))


def dist_step(b):
    return s.reduce("SUM", s.run(step, args=b), axis=None)


if os.environ.get("TRACED") == "1":
    dist_step = tf.function(dist_step)
overlap.stats.reset()
losses = [float(dist_step(b)) for _ in range(3) for b in ds]
st = overlap.stats
save(s, losses=losses, passes=st.backward_passes, buckets=st.buckets,
     early=st.buckets_started_in_backward, reused=st.reused,
     **{f"w{i}": w.numpy() for i, w in enumerate(model.weights)})
"""


@needs_mpi
@pytest.mark.parametrize("traced", ["0", "1"])
def test_overlapped_all_reduce_two_workers_equal_one(tmp_path, traced):
    one, on, off = (str(tmp_path / d) for d in ("one", "on", "off"))
    env = {"TRACED": traced}
    ok(run_script(OVERLAP, one, "one", env=env)[0])
    ok(run_script(OVERLAP, on, "mwms", env=env)[0])
    ok(run_script(OVERLAP, off, "mwms", env=dict(env, OVERLAP="0"))[0])
    ref = load(one)
    weights = [k for k in ref if k.startswith("w") or k == "losses"]
    for d in (on, off):
        for task in (0, 1):
            assert_same(ref, load(d, task), weights)
    got = load(on)
    n_vars = 12
    assert int(got["passes"]) == 6
    # Every gradient's sum came from an overlapped bucket, and most
    # buckets started before the backward pass ended.
    assert int(got["reused"]) == 6 * n_vars
    assert int(got["buckets"]) >= 6 * 3
    assert int(got["early"]) >= int(got["buckets"]) - 6
    assert int(load(off)["buckets"]) == 0 and int(ref["buckets"]) == 0


# A started all-reduce moves on while the caller makes no MPI call (Note
# [Progress thread] in csrc/python/mpi/mpi_ext.c): 8 MiB over loopback
# TCP takes many progress rounds, and each test() makes only one.
PROGRESS = """
s = make_strategy()
comm = s._comm
comm.barrier()
a = np.full(2 << 20, 1.0 + task_id(s), np.float32)
p = comm.mpi.iallreduce([a], "sum")
tests = 0
for _ in range(40):
    time.sleep(0.5)
    tests += 1
    if p.test():
        break
comm.mpi.wait([p], 60.0)
save(s, tests=tests, first=float(a[0]), last=float(a[-1]))
"""


@needs_mpi
def test_started_all_reduce_progresses_between_calls(tmp_path):
    ok(run_script(PROGRESS, str(tmp_path), "mwms")[0])
    for task in (0, 1):
        got = load(str(tmp_path), task)
        assert float(got["first"]) == float(got["last"]) == 3.0
        assert int(got["tests"]) <= 3, int(got["tests"])


# ---- metric.result() over every worker's examples ---------------------------

# Each worker updates the metrics with its own slice of every batch;
# result(), read outside strategy.run, must count all workers' examples.
METRICS = """
s = make_strategy()
out = {}
for traced in (False, True):
    with s.scope():
        metrics = make_metrics()
        acc = metrics[0]

    def step(lb, lg, xb):
        update_metrics(metrics, lb, lg, xb)
        # In the replica: this worker's own state.
        return acc.count

    def dist_step(batch):
        return s.run(step, args=batch)
    if traced:
        dist_step = tf.function(dist_step)
    ds = metric_dataset(s)
    tag = "traced" if traced else "eager"
    per_epoch = []
    for epoch in range(2):
        local_counts = [float(tf.reduce_sum(tf.convert_to_tensor(c)))
                        for c in tf.nest.flatten(
                            [s.experimental_local_results(dist_step(b))
                             for b in ds])]
        # Read twice: the second read must not count anything twice.
        per_epoch.append([float(m.result()) for m in metrics] +
                         [float(m.result()) for m in metrics])
        out[f"{tag}_local_count{epoch}"] = local_counts[-1]
    out[tag] = per_epoch
    acc.reset_state()
    out[tag + "_reset"] = float(acc.result())
save(s, **out)
"""


def in_process(script, tmp_path, keys):
    """The script on one process and under MirroredStrategy on 2 logical
    CPUs, which must agree on keys; returns the first's results."""
    one, mirrored = str(tmp_path / "one"), str(tmp_path / "mirrored")
    ok(run_script(script, one, "one")[0])
    ok(run_script(script, mirrored, "mirrored")[0])
    ref = load(one)
    assert_same(ref, load(mirrored), keys)
    return ref


def under_mpirun(script, tmp_path, ref, keys):
    """The script on 2 workers under mpirun, each of which must agree
    with ref on keys; returns their results. Skips where there is no
    Open MPI (after the in-process half has run)."""
    if MPIRUN is None or not HAVE_MPI:
        pytest.skip("the mpirun half needs Open MPI (apt-get install "
                    "libopenmpi-dev openmpi-bin, then rebuild tfmini)")
    mpi = str(tmp_path / "mpi")
    ok(run_script(script, mpi, "mwms")[0])
    got = [load(mpi, task) for task in (0, 1)]
    for g in got:
        assert_same(ref, g, keys)
    return got


def test_metric_result_in_a_custom_loop_over_workers(tmp_path):
    """MirroredStrategy (2 logical CPUs) in process, and 2 workers under
    mpirun when Open MPI is there: every replica's examples counted, as
    one process on all the data counts them."""
    keys = ["eager", "traced", "eager_reset", "traced_reset"]
    ref = in_process(METRICS, tmp_path, keys)
    r = np.array(ref["eager"])
    np.testing.assert_allclose(r[:, :3], r[:, 3:])     # reads are pure
    assert 0.5 < r[0, 0] < 1.0 and float(ref["eager_reset"]) == 0.0
    assert float(ref["eager_local_count1"]) == 80.0
    for got in under_mpirun(METRICS, tmp_path, ref, keys):
        # Inside strategy.run each worker saw only its own examples:
        # epoch 1's count is its half of 80.
        assert float(got["eager_local_count1"]) == 40.0


# metric.result() read inside a tf.function: after each step, in the same
# function as strategy.run, and at the epoch's end in a function of its
# own; twice, so that a second read counts nothing twice. Under a
# multi-worker strategy the graph all-reduces the state.
METRICS_TRACED = """
s = make_strategy()
with s.scope():
    metrics = make_metrics()
    acc = metrics[0]


def step(lb, lg, xb):
    update_metrics(metrics, lb, lg, xb)


@tf.function
def dist_step(batch):
    s.run(step, args=batch)
    return [m.result() for m in metrics]


@tf.function
def results():
    return [m.result() for m in metrics] + \\
        [m.result() for m in metrics]


ds = metric_dataset(s)
steps, epochs = [], []
for epoch in range(2):
    steps += [[float(r) for r in dist_step(b)] for b in ds]
    epochs.append([float(r) for r in results()])
# Each worker's own state is untouched by the reads: its half of 80.
local_count = float(acc.count.numpy())
acc.reset_state()
save(s, steps=steps, epochs=epochs, local_count=local_count,
     reset=[float(r) for r in results()][0])
"""


def test_metric_result_in_a_tf_function_over_workers(tmp_path):
    """MirroredStrategy (2 logical CPUs) in process, and 2 workers under
    mpirun when Open MPI is there: the value one process on all the data
    gives, on every worker."""
    keys = ["steps", "epochs", "reset"]
    ref = in_process(METRICS_TRACED, tmp_path, keys)
    e = np.array(ref["epochs"])
    np.testing.assert_allclose(e[:, :3], e[:, 3:])     # reads are pure
    assert 0.5 < e[0, 0] < 1.0 and float(ref["reset"]) == 0.0
    assert float(ref["local_count"]) == 80.0
    for got in under_mpirun(METRICS_TRACED, tmp_path, ref, keys):
        assert float(got["local_count"]) == 40.0


# ---- faults ----------------------------------------------------------------

@needs_mpi
@pytest.mark.parametrize("eager", ["0", "1"])
def test_killed_worker_fails_the_others_quickly(tmp_path, eager):
    r, secs = run_script(FAULT, str(tmp_path), "mwms", timeout=120,
                         env={"FAULT": "kill", "EAGER": eager,
                              "BUCKET": "16"})
    assert r.returncode != 0
    assert secs < 60, secs
    out = r.stdout + r.stderr
    assert "WORKER-ERROR task 0" in out, out[-3000:]
    assert "stopped by mpirun" in out or "timed out" in out or \
        "failed on worker" in out, out[-3000:]


@needs_mpi
def test_a_worker_that_raises_stops_the_others(tmp_path):
    """An uncaught exception on one worker: it skips MPI_Finalize (which
    would wait for the others), so mpirun stops the job."""
    r, secs = run_script(FAULT, str(tmp_path), "mwms", timeout=120,
                         env={"FAULT": "raise"})
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "WORKER-ERROR task 1: KeyError: 'a bug on worker 1'" in out
    assert "WORKER-ERROR task 0" in out and "stopped by mpirun" in out, \
        out[-3000:]
    assert secs < 60, secs


@needs_mpi
@pytest.mark.parametrize("eager", ["0", "1"])
def test_stalled_worker_times_out_the_collective(tmp_path, eager):
    r, secs = run_script(FAULT, str(tmp_path), "mwms", timeout=120,
                         env={"FAULT": "stall", "TIMEOUT": "3",
                              "EAGER": eager, "BUCKET": "16"})
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "WORKER-ERROR task 0" in out, out[-3000:]
    assert "all-reduce timed out after 3 s on worker 0 of 2" in out, \
        out[-3000:]
    assert secs < 45, secs


@needs_mpi
def test_backup_and_restore_resumes_after_a_killed_worker(tmp_path):
    root = str(tmp_path)
    env = {"BACKUP_ROOT": root, "CRASH_AT_EPOCH": "2"}
    r, _ = run_script(BACKUP, os.path.join(root, "crash"), "mwms",
                      env=env)
    assert r.returncode != 0
    with open(os.path.join(root, "backup", "training_state.json")) as f:
        assert json.load(f) == {"epoch": 1}
    env["CRASH_AT_EPOCH"] = "-1"
    ok(run_script(BACKUP, os.path.join(root, "resume"), "mwms",
                  env=env)[0])
    resumed = load(os.path.join(root, "resume"))
    assert resumed["epochs"].tolist() == [2, 3]
    assert not os.path.exists(os.path.join(root, "backup"))
    full_env = {"BACKUP_ROOT": os.path.join(root, "fresh")}
    ok(run_script(BACKUP, os.path.join(root, "full"), "mwms",
                  env=full_env)[0])
    full = load(os.path.join(root, "full"))
    assert full["epochs"].tolist() == [0, 1, 2, 3]
    assert_same(full, resumed, [k for k in full if k.startswith("w")])


# ---- in process: no mpirun needed -----------------------------------------

def test_backup_and_restore_in_process(tmp_path):
    x = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    backup = str(tmp_path / "b")

    def model():
        tf.keras.utils.set_random_seed(2)
        m = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
        m.compile(tf.keras.optimizers.Adam(0.1), "mse")
        return m

    class Stop(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 2:
                raise RuntimeError("preempted")
    m = model()
    with pytest.raises(RuntimeError, match="preempted"):
        m.fit(x, y, batch_size=8, epochs=4, verbose=0, shuffle=False,
              callbacks=[tf.keras.callbacks.BackupAndRestore(backup), Stop()])
    m = model()
    h = m.fit(x, y, batch_size=8, epochs=4, verbose=0, shuffle=False,
              callbacks=[tf.keras.callbacks.BackupAndRestore(backup)])
    assert len(h.history["loss"]) == 2          # epochs 2 and 3 only
    assert not os.path.exists(backup)           # deleted at the end
    ref = model()
    ref.fit(x, y, batch_size=8, epochs=4, verbose=0, shuffle=False)
    for a, b in zip(ref.weights, m.weights):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6)
    for bad in (0, -3, "batch", True):
        with pytest.raises(ValueError, match="save_freq"):
            tf.keras.callbacks.BackupAndRestore(backup, save_freq=bad)
    with pytest.raises(ValueError, match="backup_dir"):
        tf.keras.callbacks.BackupAndRestore("")


def test_backup_and_restore_mid_epoch(tmp_path):
    """save_freq=3 batches: a fit stopped in epoch 1 before its batch 5
    resumes at batch 3 (after the last backup, at batch 2) and ends with
    an uninterrupted run's weights and optimizer state."""
    x = np.random.default_rng(1).normal(size=(32, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    backup = str(tmp_path / "b")

    def model():
        tf.keras.utils.set_random_seed(4)
        m = tf.keras.Sequential([
            tf.keras.layers.Dense(4, activation="tanh", input_shape=(3,)),
            tf.keras.layers.Dense(1)])
        m.compile(tf.keras.optimizers.Adam(0.05), "mse")
        return m

    class Seen(tf.keras.callbacks.Callback):
        def __init__(self, stop_at=None):
            super().__init__()
            self.stop_at, self.batches = stop_at, []

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_begin(self, batch, logs=None):
            if (self.epoch, batch) == self.stop_at:
                raise RuntimeError("preempted")
            self.batches.append((self.epoch, batch))

    def fit(m, *cbs):
        return m.fit(x, y, batch_size=4, epochs=3, verbose=0, shuffle=False,
                     callbacks=list(cbs))
    m = model()
    with pytest.raises(RuntimeError, match="preempted"):
        fit(m, tf.keras.callbacks.BackupAndRestore(backup, save_freq=3),
            Seen(stop_at=(1, 5)))
    with open(os.path.join(backup, "training_state.json")) as f:
        assert json.load(f) == {"epoch": 1, "batch": 2}
    m, seen = model(), Seen()
    h = fit(m, tf.keras.callbacks.BackupAndRestore(
        backup, save_freq=3, delete_checkpoint=False), seen)
    assert seen.batches == [(1, b) for b in range(3, 8)] + \
        [(2, b) for b in range(8)]
    assert len(h.history["loss"]) == 2
    with open(os.path.join(backup, "training_state.json")) as f:
        assert json.load(f) == {"epoch": 2}       # kept, the last epoch
    ref = model()
    fit(ref)
    assert int(m.optimizer.iterations) == int(ref.optimizer.iterations) == 24
    for a, b in zip(ref.weights + ref.optimizer.variables,
                    m.weights + m.optimizer.variables):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6,
                                   atol=1e-7)
    # A backup taken after an epoch's last batch resumes at the next one.
    shutil.rmtree(backup)
    m = model()
    with pytest.raises(RuntimeError, match="preempted"):
        fit(m, tf.keras.callbacks.BackupAndRestore(backup, save_freq=8),
            Seen(stop_at=(2, 0)))
    with open(os.path.join(backup, "training_state.json")) as f:
        assert json.load(f) == {"epoch": 1}
    m, seen = model(), Seen()
    fit(m, tf.keras.callbacks.BackupAndRestore(backup, save_freq=8), seen)
    assert seen.batches == [(2, b) for b in range(8)]
    assert not os.path.exists(backup)
    for a, b in zip(ref.weights, m.weights):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6,
                                   atol=1e-7)


def test_without_mpi_the_error_names_the_package(monkeypatch):
    from tfmini.distribute import collective
    monkeypatch.setattr(collective, "_comm", None)
    monkeypatch.setitem(sys.modules, "tfmini.distribute._mpi", None)
    monkeypatch.delattr(tf.distribute, "_mpi", raising=False)
    with pytest.raises(ImportError, match="libopenmpi-dev"):
        tf.distribute.MultiWorkerMirroredStrategy()


@needs_mpi
def test_one_worker_without_mpirun_and_tf_config(monkeypatch):
    from tfmini.distribute import collective
    monkeypatch.setattr(collective, "_comm", None)
    for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"worker": ["a:1", "b:2"]},
         "task": {"type": "worker", "index": 1}}))
    with pytest.raises(RuntimeError, match="mpirun -np 2"):
        tf.distribute.MultiWorkerMirroredStrategy()
    monkeypatch.setattr(collective, "_comm", None)
    monkeypatch.delenv("TF_CONFIG")
    s = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.
        CommunicationOptions(bytes_per_pack=1 << 20))
    assert s.num_replicas_in_sync == 1
    assert s.cluster_resolver.task_id == 0
    assert s.extended.should_checkpoint
    assert float(s.reduce("SUM", s.run(lambda: tf.constant(2.0)),
                          axis=None)) == 2.0
    other = tf.distribute.cluster_resolver.TFConfigClusterResolver(
        task_type="worker", task_id=3)
    with pytest.raises(ValueError, match="worker:3.*worker:0"):
        tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=other)
    monkeypatch.setattr(collective, "_comm", None)


def test_tf_config_cluster_resolver(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"chief": ["a:1"], "worker": ["b:2", "c:3"]},
         "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}))
    r = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    assert (r.task_type, r.task_id) == ("worker", 1)
    spec = r.cluster_spec()
    assert spec.as_dict() == {"chief": ["a:1"], "worker": ["b:2", "c:3"]}
    assert spec.num_tasks("worker") == 2 and spec.jobs == ["chief", "worker"]
    assert r.master() == "grpc://c:3"
    with pytest.raises(ValueError, match="No task 5"):
        spec.task_address("worker", 5)
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        tf.distribute.cluster_resolver.TFConfigClusterResolver()


TF_CONFIG_SCRIPT = '''
s = make_strategy(cluster_resolver=tf.distribute.cluster_resolver.
                  TFConfigClusterResolver())
with s.scope():
    v = tf.Variable(float(task_id(s)) + 10.0)
ids = s.run(lambda: tf.distribute.get_replica_context().
            replica_id_in_sync_group)
seen = []


def dataset_fn(ctx):
    seen.append((ctx.num_input_pipelines, ctx.input_pipeline_id,
                 ctx.get_per_replica_batch_size(8)))
    return tf.data.Dataset.range(16).shard(
        ctx.num_input_pipelines, ctx.input_pipeline_id).batch(
            ctx.get_per_replica_batch_size(8))


firsts = [int(b[0]) for b in s.distribute_datasets_from_function(dataset_fn)]
r = s.cluster_resolver
np.savez(os.path.join(OUT, f"rank{s._comm.rank}.npz"), v=v.numpy(),
         id=int(ids), seen=seen[0], firsts=firsts, type=r.task_type,
         index=r.task_id, chief=s.extended.should_checkpoint)
'''


@needs_mpi
def test_tf_config_task_index_under_mpirun(tmp_path):
    """TF_CONFIG's task, not MPI's rank, gives the replica id: here rank
    0 is worker 0 (replica 1), rank 1 the chief (replica 0), whose values
    win."""
    out = str(tmp_path)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "script.py")
    with open(path, "w") as f:
        f.write(HEADER + TF_CONFIG_SCRIPT)

    def cfg(kind):
        return json.dumps({"cluster": {"chief": ["h:1"], "worker": ["h:2"]},
                           "task": {"type": kind, "index": 0}})
    env = dict(os.environ, PYTHONPATH=ROOT, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    common = ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include",
              "lo", "--mca", "oob_tcp_if_include", "lo", "--oversubscribe"]
    cmd = [MPIRUN] + common + \
        ["-np", "1", "-x", "PYTHONPATH", "-x", f"TF_CONFIG={cfg('worker')}",
         sys.executable, path, out, "mwms", ":",
         "-np", "1", "-x", "PYTHONPATH", "-x", f"TF_CONFIG={cfg('chief')}",
         sys.executable, path, out, "mwms"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=120)
    ok(r)
    with np.load(os.path.join(out, "rank1.npz")) as z:
        chief = dict(z)
    with np.load(os.path.join(out, "rank0.npz")) as z:
        worker = dict(z)
    assert (str(chief["type"]), int(chief["index"]), int(chief["id"])) == \
        ("chief", 0, 0) and bool(chief["chief"])
    assert (str(worker["type"]), int(worker["index"]),
            int(worker["id"])) == ("worker", 0, 1)
    assert not bool(worker["chief"])
    assert float(chief["v"]) == float(worker["v"]) == 10.0
    # Each worker is one input pipeline, of 4 examples per step.
    assert chief["seen"].tolist() == [2, 0, 4] and \
        worker["seen"].tolist() == [2, 1, 4]
    assert chief["firsts"].tolist() == [0, 8] and \
        worker["firsts"].tolist() == [1, 9]


def test_nccl_refuses_host_memory():
    """The NCCL path's checks, which run without a GPU (its all-reduce is
    tested in tests/gpu/test_gpu_distribute.py). In a process of its own:
    loading libnccl here would pin the toolkit's NCCL for the rest of the
    suite, and a CUDA PyTorch imported later needs its own newer one."""
    script = textwrap.dedent("""
        import sys
        import pytest
        import tfmini as tf
        from tfmini.distribute import nccl
        if not nccl.available():
            print("SKIP"); sys.exit(0)
        from tfmini.distribute import _nccl
        assert nccl.version() >= 20000
        cap = tf.experimental.dlpack.to_dlpack(tf.ones([3]))
        out = tf.experimental.dlpack.to_dlpack(tf.zeros([3]))
        with pytest.raises(ValueError, match="input 0 is not in GPU memory"):
            _nccl.allreduce([cap], [out], "sum")
        with pytest.raises(ValueError, match="unknown op"):
            _nccl.allreduce([cap], [out], "prod")
        with pytest.raises(ValueError, match="GPU memory"):
            nccl.all_reduce([tf.ones([3])])
        with pytest.raises(ValueError, match="different dtypes or shapes"):
            nccl.all_reduce([tf.ones([3]), tf.ones([2])])
        print("OK")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    if r.stdout.strip().endswith("SKIP"):
        pytest.skip("tfmini was built without NCCL (CUDA backend, nccl.h "
                    "and libnccl)")
    assert r.stdout.strip().endswith("OK"), r.stdout + r.stderr
