"""`for x in dataset` in a tf.function: trace and call times of a
custom training epoch, and the cost per element of the graph loop's
pull (Note [Dataset loops in a graph] in tfmini/data/traced_next.py).

    PYTHONPATH=. python3 benchmarks/dataset_loop_bench.py [batches]

Prints seconds; run it on the same machine before and after a change."""
import sys
import time

import numpy as np

import tfmini as tf


def _epoch_fn(w, b, opt):
    def train_epoch(ds):
        total = tf.constant(0.0)
        for xb, yb in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((xb @ w + b - yb) ** 2)
            opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
            total += loss
        return total
    return train_epoch


def train_epoch_times(batches):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batches * 32, 10)).astype(np.float32)
    y = rng.normal(size=(batches * 32, 1)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    w = tf.Variable(tf.zeros([10, 1]))
    b = tf.Variable(tf.zeros([1]))
    eager = _epoch_fn(w, b, tf.keras.optimizers.SGD(0.01))
    fn = tf.function(eager)
    t0 = time.perf_counter()
    fn(ds)
    first = time.perf_counter() - t0
    calls = []
    before = w.numpy().copy()
    for _ in range(3):
        t0 = time.perf_counter()
        fn(ds)
        calls.append(time.perf_counter() - t0)
    assert not np.array_equal(before, w.numpy()), "no training step ran"
    t0 = time.perf_counter()
    eager(ds)
    eager_s = time.perf_counter() - t0
    return first, min(calls), eager_s


def pull_cost(n):
    @tf.function
    def count(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s
    ds = tf.data.Dataset.range(n)
    count(ds)
    t0 = time.perf_counter()
    count(ds)
    graph = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in ds:
        pass
    python = time.perf_counter() - t0
    return graph / n, python / n


def main():
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    first, call, eager = train_epoch_times(batches)
    print(f"train_epoch over {batches} batches: first call (trace + "
          f"run) {first:.4f} s, later call {call:.4f} s; eager {eager:.4f} s")
    try:
        graph, python = pull_cost(5000)
        print(f"per element: graph loop {graph * 1e6:.1f} us, the "
              f"dataset's Python iteration alone {python * 1e6:.1f} us")
    except Exception as e:           # the unrolled loop of older trees
        print(f"per element: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
