"""python -m tfmini.demo: Keras on real data, eager and traced.

Trains a small MLP and a small CNN on scikit-learn's 8x8 handwritten
digits (1,797 images: 1,437 to train, 360 to test), each twice from the
same initial weights: first eagerly (model.compile(run_eagerly=True):
every op dispatched from Python), then traced (the default: fit's train
step runs as one tf.function graph). It prints Keras' progress bars, the
test accuracy of each run, and how much faster the traced train step is.

    python -m tfmini.demo               # about 30 s on 2 cores
    python -m tfmini.demo --epochs 5    # quicker
    python -m tfmini.demo --threads 1   # on a machine busy with other work
"""
import argparse
import sys
import time

import tfmini as tf
from tfmini import keras

L = keras.layers


def mlp():
    return keras.Sequential([
        keras.Input((8, 8)),
        L.Flatten(),
        L.Dense(64, activation="relu"),
        L.Dense(10),
    ], name="mlp")


def cnn():
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        L.Conv2D(16, 3, padding="same", activation="relu"),
        L.MaxPooling2D(),
        L.Conv2D(32, 3, padding="same", activation="relu"),
        L.MaxPooling2D(),
        L.Flatten(),
        L.Dense(64, activation="relu"),
        L.Dense(10),
    ], name="cnn")


class _EpochTimer(keras.callbacks.Callback):
    """Wall time of each epoch's training (validation excluded)."""

    def on_train_begin(self, logs=None):
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self._start)


def _train(make, data, epochs, run_eagerly, seed, lr, verbose):
    (x, y), (xt, yt) = data
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)     # same initial weights both runs
    model = make()
    model.compile(optimizer=keras.optimizers.Adam(lr),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True),
                  metrics=["accuracy"], run_eagerly=run_eagerly)
    timer = _EpochTimer()
    model.fit(x, y, batch_size=32, epochs=epochs, callbacks=[timer],
              verbose=verbose)
    _, acc = model.evaluate(xt, yt, batch_size=256, verbose=0)
    steps = -(-len(x) // 32)
    return model, acc, timer.times, steps


def _ms(seconds):
    return f"{seconds * 1e3:.2f} ms"


def run(name, make, data, epochs, lr, target, verbose=1, seed=0):
    print(f"\n=== {name} ===")
    make().summary()
    results = {}
    for mode, eager in (("eager", True), ("traced", False)):
        print(f"\n--- {name}, {mode} "
              f"({'run_eagerly=True' if eager else 'tf.function'}) ---")
        model, acc, times, steps = _train(make, data, epochs, eager, seed,
                                          lr, verbose)
        # The traced run's first epoch includes tracing the train step;
        # the per-step speed is taken from the later epochs.
        steady = times[1:] if len(times) > 1 else times
        per_step = min(steady) / steps
        results[mode] = (acc, per_step, times[0])
        print(f"{name} {mode}: test accuracy {acc:.2%}, "
              f"{_ms(per_step)} per train step")
    (acc_e, step_e, _), (acc_t, step_t, first_t) = \
        results["eager"], results["traced"]
    print(f"\n{name}: test accuracy {acc_e:.2%} eager, {acc_t:.2%} traced "
          f"(target {target:.0%}); traced train step {step_e / step_t:.1f}x "
          f"faster than eager ({_ms(step_t)} vs {_ms(step_e)}; the first "
          f"traced epoch, tracing included, took {first_t:.2f} s)")
    return acc_e, acc_t, step_e / step_t


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tfmini.demo",
                                description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=None,
                   help="epochs per run (default: 15 MLP, 10 CNN)")
    p.add_argument("--verbose", type=int, default=1, choices=(0, 1, 2),
                   help="fit's verbosity (1: progress bars)")
    p.add_argument("--threads", type=int, default=0,
                   help="threads per kernel (default 0: all cores; 1 is "
                        "faster on a machine busy with other work)")
    args = p.parse_args(argv)
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    start = time.perf_counter()
    try:
        data = keras.datasets.digits.load_data()
    except ImportError as e:
        print(f"The demo needs scikit-learn for its dataset: {e}",
              file=sys.stderr)
        return 2
    (x, y), (xt, yt) = data
    print(f"tfmini {tf.__version__} demo: Keras on scikit-learn's 8x8 "
          f"digits, {len(x):,} training and {len(xt):,} test images")
    summary = []
    acc = run("MLP", mlp, data, args.epochs or 15, 0.005, 0.95,
              args.verbose)
    summary.append(("MLP", 0.95) + acc)
    cnn_data = ((x[..., None], y), (xt[..., None], yt))
    acc = run("CNN", cnn, cnn_data, args.epochs or 10, 0.005, 0.97,
              args.verbose)
    summary.append(("CNN", 0.97) + acc)
    total = time.perf_counter() - start
    print("\n=== summary ===")
    ok = True
    for name, target, acc_e, acc_t, speedup in summary:
        met = min(acc_e, acc_t) >= target
        ok &= met
        print(f"{name}: test accuracy {acc_e:.2%} eager / {acc_t:.2%} "
              f"traced (target >= {target:.0%}: "
              f"{'met' if met else 'MISSED'}), traced {speedup:.1f}x "
              f"faster per step")
    print(f"total time {total:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
