"""python3 -m tfmini.demo: eager ops, and their speed against NumPy.

An interim demo (the Keras one replaces it): a few ops as a TF user
writes them, then timings of the same work in tfmini and in NumPy on this
machine. Ops not in this build are left out."""
import sys
import timeit

import numpy as np

import tfmini as tf


def _time(fn, budget=0.25):
    """Seconds per call: best of 5 runs of a loop sized to the budget."""
    timer = timeit.Timer(fn)
    n, t = timer.autorange()
    n = max(1, int(n * budget / max(t, 1e-9) / 5))
    return min(timer.repeat(repeat=5, number=n)) / n


def _fmt(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale or unit == "us":
            return f"{seconds / scale:7.2f} {unit:2}"


def show_ops():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tf.constant([[5.0, 6.0], [7.0, 8.0]])
    print("a =", repr(a))
    print("a + b =", a + b)
    print("a * 2.0 - 1.0 =", a * 2.0 - 1.0)
    print("tf.cast(a, tf.int32) =", tf.cast(a, tf.int32))
    if hasattr(tf, "matmul"):
        print("a @ b =", a @ b)
    if hasattr(tf, "reduce_sum"):
        print("tf.reduce_sum(a, axis=0) =", tf.reduce_sum(a, axis=0))
    try:
        a + tf.constant([1, 2])
    except tf.errors.InvalidArgumentError as e:
        print(f"a + int32 tensor -> InvalidArgumentError: {e}")
    try:
        a + tf.constant([1.0, 2.0, 3.0])
    except tf.errors.InvalidArgumentError as e:
        print(f"shape mismatch   -> InvalidArgumentError: {e}")


def cases():
    rng = np.random.default_rng(0)
    x2 = rng.standard_normal(2).astype(np.float32)
    big = rng.standard_normal(1 << 24).astype(np.float32)
    t2, tbig = tf.constant(x2), tf.constant(big)
    yield ("tiny a + b (2 floats)", lambda: t2 + t2, lambda: x2 + x2, None)
    yield ("a + b, 16M floats", lambda: tbig + tbig, lambda: big + big,
           ("GB/s", 3 * big.nbytes))
    if hasattr(tf, "reduce_sum"):
        yield ("reduce_sum, 16M floats", lambda: tf.reduce_sum(tbig),
               lambda: big.sum(), ("GB/s", big.nbytes))
    if hasattr(tf, "matmul"):
        for n in (64, 1024):
            m = rng.standard_normal((n, n)).astype(np.float32)
            tm = tf.constant(m)
            yield (f"matmul {n}x{n}", lambda tm=tm: tf.matmul(tm, tm),
                   lambda m=m: m @ m, ("GFLOP/s", 2 * n ** 3))


def show_speed():
    print(f"\nspeed against NumPy {np.__version__} (best of 5, "
          f"{tf.config.threading.get_intra_op_parallelism_threads() or 'all'}"
          " threads; ratio > 1: tfmini is faster)")
    for name, ours, theirs, rate in cases():
        t_ours, t_np = _time(ours), _time(theirs)
        extra = ""
        if rate:
            unit, work = rate
            scale = 1e9
            extra = (f"   {work / t_ours / scale:7.1f} vs "
                     f"{work / t_np / scale:7.1f} {unit}")
        print(f"  {name:24} tfmini {_fmt(t_ours)}  numpy {_fmt(t_np)}  "
              f"x{t_np / t_ours:5.2f}{extra}")


def main():
    print(f"tfmini {tf.__version__}: TensorFlow's front end on a C core "
          f"({tf._C.OP_COUNT} ops in the table)\n")
    show_ops()
    show_speed()
    return 0


if __name__ == "__main__":
    sys.exit(main())
