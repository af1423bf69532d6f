"""MultiWorkerMirroredStrategy over MPI: step time and scaling of 1 vs 2
processes of one thread each, for the MLP (784-128-10) and the CNN (8x8x1
digits) of bench_keras.py; the share of a step spent in the gradient
all-reduce; MPI all-reduce bandwidth on this machine's loopback; and a
paper model of scaling to 8 and 64 workers from those measurements.

    python3 benchmarks/distribute_bench.py              # print the tables
    python3 benchmarks/distribute_bench.py --results benchmarks/RESULTS.md

--results replaces the "## Distributed" section of that file (or appends
it). Needs Open MPI (mpirun) and tfmini built with it. Never a pass/fail:
these only measure, and on a shared machine the 2-process figures carry
the other load's noise."""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from _common import keras_models

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
MPI_ARGS = ["--oversubscribe", "--mca", "btl", "self,tcp",
            "--mca", "btl_tcp_if_include", "lo",
            "--mca", "oob_tcp_if_include", "lo"]
PER_WORKER_BATCH = {"mlp": 32, "cnn": 32}
# Networks for the paper model: (name, bytes/s, per-message latency s).
NETWORKS = [("10 Gb/s Ethernet", 1.25e9, 25e-6),
            ("100 Gb/s InfiniBand", 12.5e9, 3e-6)]


# ---- worker side (under mpirun, or alone) -----------------------------------

def worker_train(kind, batch, steps):
    """Time `steps` traced training steps (after warm-up) on this worker's
    `batch` examples; the chief prints one JSON line."""
    import tfmini as tf
    from tfmini.distribute import collective
    tf.config.threading.set_intra_op_parallelism_threads(1)
    s = tf.distribute.MultiWorkerMirroredStrategy()
    rng = np.random.default_rng(s.cluster_resolver.task_id)
    shape = (batch, 784) if kind == "mlp" else (batch, 8, 8, 1)
    x = tf.constant(rng.random(shape, dtype=np.float32))
    y = tf.constant(rng.integers(0, 10, batch).astype(np.int32))
    global_batch = batch * s.num_replicas_in_sync
    with s.scope():
        model = keras_models(tf.keras)[kind]()
        opt = tf.keras.optimizers.Adam(1e-3)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="none")

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(
                loss_fn(yb, model(xb, training=True)),
                global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def train(xb, yb):
        return s.run(step, args=(xb, yb))

    for _ in range(5):
        train(x, y)
    s._comm.barrier()
    collective.stats.reset()
    times, comms = [], []
    for _ in range(steps):
        c0 = collective.stats.seconds
        t0 = time.perf_counter()
        float(train(x, y))
        times.append(time.perf_counter() - t0)
        comms.append(collective.stats.seconds - c0)
    # Medians: the shared machine's other load makes some steps slow.
    comm = float(np.median(comms))
    params = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    if s.cluster_resolver.task_id == 0:
        print(json.dumps({"kind": kind, "workers": s.num_replicas_in_sync,
                          "batch": batch, "step_s": float(np.median(times)),
                          "comm_s": comm, "grad_bytes": 4 * params}),
              flush=True)


def worker_allreduce(reps):
    """MPI all-reduce time of float32 buffers of several sizes."""
    from tfmini.distribute import collective
    comm = collective.get()
    out = []
    for nbytes in (8, 4 << 10, 64 << 10, 1 << 20, 16 << 20):
        a = np.ones(nbytes // 4, np.float32)
        comm.allreduce([a], "sum")
        comm.barrier()
        t0 = time.perf_counter()
        for _ in range(reps):
            comm.allreduce([a], "sum")
        out.append((nbytes, (time.perf_counter() - t0) / reps))
    if comm.task_id == 0:
        print(json.dumps({"allreduce": out, "workers": comm.size}),
              flush=True)


# ---- driver ---------------------------------------------------------------

def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
                OMPI_ALLOW_RUN_AS_ROOT="1",
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def _run(args, nproc):
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve())] + args
    if nproc > 1:
        cmd = [shutil.which("mpirun"), "-np", str(nproc)] + MPI_ARGS + \
            ["-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS"] + cmd
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}"
                 f"{r.stderr[-2000:]}")
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


def _fmt_s(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} us"


def ring_allreduce_s(nbytes, n, bandwidth, latency):
    """A ring all-reduce of nbytes over n workers: 2(n-1) steps, each
    moving nbytes/n and paying one latency."""
    if n == 1:
        return 0.0
    return 2 * (n - 1) / n * nbytes / bandwidth + 2 * (n - 1) * latency


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--worker", choices=["mlp", "cnn"])
    p.add_argument("--allreduce", action="store_true")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--results", help="RESULTS.md to put the section in")
    a = p.parse_args()
    if a.worker:
        return worker_train(a.worker, a.batch, a.steps)
    if a.allreduce:
        return worker_allreduce(a.reps)
    if not shutil.which("mpirun"):
        sys.exit("distribute_bench needs Open MPI's mpirun (apt-get install "
                 "openmpi-bin libopenmpi-dev, then rebuild tfmini)")

    rows, model_rows = [], []
    measured = {}
    for kind in ("mlp", "cnn"):
        b = PER_WORKER_BATCH[kind]
        one = _run(["--worker", kind, "--batch", str(b),
                    "--steps", str(a.steps)], 1)
        one_big = _run(["--worker", kind, "--batch", str(2 * b),
                        "--steps", str(a.steps)], 1)
        two = _run(["--worker", kind, "--batch", str(b),
                    "--steps", str(a.steps)], 2)
        measured[kind] = (one, two)
        weak = one["step_s"] / two["step_s"]
        strong = one_big["step_s"] / two["step_s"] / 2
        name = "MLP 784-128-10" if kind == "mlp" else "CNN 8x8x1"
        rows.append(
            f"| {name} | {b} | {_fmt_s(one['step_s'])} | "
            f"{_fmt_s(one_big['step_s'])} | {_fmt_s(two['step_s'])} | "
            f"{weak:.2f} | {strong:.2f} | "
            f"{100 * two['comm_s'] / two['step_s']:.0f}% "
            f"({_fmt_s(two['comm_s'])}) | "
            f"{two['grad_bytes'] / 1024:.0f} KiB |")
    ar = _run(["--allreduce", "--reps", str(a.reps)], 2)["allreduce"]
    ar_rows = []
    for nbytes, secs in ar:
        bus = 2 * (2 - 1) / 2 * nbytes / secs
        ar_rows.append(f"| {nbytes:,} B | {_fmt_s(secs)} | "
                       f"{bus / 1e9:.2f} GB/s |")
    lat = ar[0][1] / 2                # 2(n-1) = 2 latencies for n = 2
    big_bytes, big_s = ar[-1]
    loop_bw = big_bytes / big_s
    nets = [("this machine's loopback (measured)", loop_bw, lat)] + NETWORKS
    for kind in ("mlp", "cnn"):
        one, _ = measured[kind]
        compute, grad = one["step_s"], one["grad_bytes"]
        for net, bw, lt in nets:
            eff = []
            for n in (2, 8, 64):
                t = compute + ring_allreduce_s(grad, n, bw, lt)
                eff.append(f"{100 * compute / t:.0f}%")
            name = "MLP" if kind == "mlp" else "CNN"
            model_rows.append(f"| {name} | {net} | {bw / 1e9:.2f} GB/s, "
                              f"{lt * 1e6:.0f} us | " + " | ".join(eff) + " |")

    text = SECTION.format(
        cmd="python3 benchmarks/distribute_bench.py --results "
            "benchmarks/RESULTS.md",
        date=time.strftime("%Y-%m-%d"), steps=a.steps,
        load=", ".join(f"{x:.1f}" for x in os.getloadavg()),
        cores=os.cpu_count(),
        rows="\n".join(rows), ar_rows="\n".join(ar_rows),
        model_rows="\n".join(model_rows))
    print(text)
    if a.results:
        path = pathlib.Path(a.results)
        old = path.read_text() if path.exists() else ""
        if "\n## Distributed" in old:
            old = re.sub(r"\n## Distributed\n.*?(?=\n## |\Z)", "\n" + text,
                         old, flags=re.S)
        else:
            old = old.rstrip("\n") + "\n\n" + text
        path.write_text(old)


SECTION = """## Distributed

MultiWorkerMirroredStrategy over Open MPI (loopback TCP), one thread per
process; {date}, {cores} logical cores, load average {load} when the
run ended (other jobs shared the machine: the 2-process figures carry
their noise); command: `{cmd}`.

Step: a traced custom-loop step (forward, backward, bucketed gradient
all-reduce, Adam) on the per-worker batch; median of {steps} steps after
warm-up. Weak scaling = 1-process step / 2-process step (same
per-worker batch; 1.00 is perfect); strong scaling = 1-process step at
twice the batch / (2 x 2-process step). All-reduce share: median time
per step inside MPI's all-reduce in the 2-process run (it includes
waiting for the slower worker) / the median step.

| model | batch per worker | 1 process | 1 process, 2x batch | 2 processes | weak scaling | strong scaling | all-reduce share of a step | gradients |
|---|---|---|---|---|---|---|---|---|
{rows}

MPI all-reduce of float32 buffers, 2 processes on loopback (bus bandwidth
= bytes / time for 2 workers):

| buffer | time | bus bandwidth |
|---|---|---|
{ar_rows}

Paper model of weak-scaling efficiency at n workers: compute time (the
1-process step) / (compute + ring all-reduce of the gradients, 2(n-1)/n x
bytes / bandwidth + 2(n-1) x latency). tfmini does not overlap the
all-reduce with the backward pass (the tape returns all gradients at
once), so the two add. The network rows are assumptions, not
measurements.

| model | network | bandwidth, latency | 2 workers | 8 workers | 64 workers |
|---|---|---|---|---|---|
{model_rows}
"""

if __name__ == "__main__":
    main()
