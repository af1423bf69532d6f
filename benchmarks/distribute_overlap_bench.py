"""The gradient all-reduce overlapped with the backward pass, on vs off
(Note [Overlapped gradient all-reduce] in tfmini/distribute/overlap.py).

Run under mpirun with 2 workers, e.g.

    mpirun -np 2 --oversubscribe --mca btl self,tcp \\
        --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \\
        -x OMP_NUM_THREADS=1 -x PYTHONPATH python3 \\
        benchmarks/distribute_overlap_bench.py

A custom-loop step (forward, backward, all-reduce, SGD) of an MLP with
several MB of gradients, eager or (--traced) a tf.function (Note
[Overlapped all-reduce in a trace] in tfmini/distribute/
overlap_traced.py); worker 0 prints a markdown table: median
step, time blocked in the all-reduce per step, buckets per step and how
many of them started before the backward pass ended, and how long
before its end the first one started."""
import argparse
import statistics
import time

import numpy as np

import tfmini as tf
from tfmini.distribute import collective, overlap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bucket-mib", type=float, default=1.0)
    ap.add_argument("--traced", action="store_true",
                    help="the step as a tf.function (one per setting: a "
                    "trace keeps the overlap setting it was traced with)")
    a = ap.parse_args()
    s = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.
        CommunicationOptions(bytes_per_pack=int(a.bucket_mib * (1 << 20))))
    rng = np.random.default_rng(s.cluster_resolver.task_id)
    x = rng.normal(size=(a.batch, a.width)).astype(np.float32)
    y = rng.normal(size=(a.batch, 10)).astype(np.float32)
    with s.scope():
        tf.keras.utils.set_random_seed(0)
        model = tf.keras.Sequential(
            [tf.keras.layers.Dense(a.width, activation="relu",
                                   input_shape=(a.width,))
             for _ in range(a.depth)] + [tf.keras.layers.Dense(10)])
        opt = tf.keras.optimizers.SGD(1e-4)
    grad_bytes = sum(int(np.prod(v.shape)) * 4
                     for v in model.trainable_variables)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def eager_run():
        return s.run(step)
    runs = {on: tf.function(eager_run) if a.traced else eager_run
            for on in (False, True)}
    rows = {}
    for _ in range(a.rounds):
        for on in (False, True):
            s._overlap = on
            run = runs[on]
            for _ in range(3):
                run()
            overlap.stats.reset()
            collective.stats.reset()
            times = []
            for _ in range(a.steps):
                s._comm.barrier()
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
            st = overlap.stats
            blocked = st.wait_seconds if on else collective.stats.seconds
            r = rows.setdefault(on, [])
            r.append((statistics.median(times), blocked / a.steps,
                      st.buckets / a.steps,
                      st.buckets_started_in_backward / a.steps,
                      st.lead_seconds / a.steps))
    if s.cluster_resolver.task_id != 0:
        return
    print(f"{'Traced' if a.traced else 'Eager'} step; "
          f"MLP {a.depth} x Dense({a.width}) + Dense(10), batch "
          f"{a.batch} per worker, {grad_bytes / (1 << 20):.1f} MiB of "
          f"float32 gradients, buckets of {a.bucket_mib:g} MiB, "
          f"{s.num_replicas_in_sync} workers; medians of {a.steps} steps, "
          f"best of {a.rounds} rounds\n")
    print("| overlap | step | blocked in all-reduce per step | buckets per "
          "step | started before backward ended | first bucket started "
          "before backward ended |")
    print("|---|---|---|---|---|---|")
    for on in (False, True):
        best = min(rows[on])
        buckets = f"{best[2]:.1f} | {best[3]:.1f} | " \
            f"{best[4] * 1e3:.1f} ms" if on else "- | - | -"
        print(f"| {'on' if on else 'off'} | {best[0] * 1e3:.1f} ms | "
              f"{best[1] * 1e3:.1f} ms | {buckets} |")

if __name__ == "__main__":
    main()
