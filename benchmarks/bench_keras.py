"""Keras fit throughput: one epoch of model.fit, in samples per second,
for the 784-128-10 MLP at batch 32 and the demo's CNN (8x8x1 digits),
tfmini eager (run_eagerly=True) and traced (the default), and the same
models in TensorFlow's Keras and PyTorch when those are installed; and
the MLP under the float32 and mixed_float16 dtype policies (tfmini,
traced).

    python3 -m pytest benchmarks/bench_keras.py --benchmark-enable
    python3 benchmarks/bench_keras.py        # a samples/s table
    python3 benchmarks/bench_keras.py --threads 1

Never a pass/fail on speed: these only measure."""
import importlib
import sys
import time

import numpy as np
import pytest

from _common import _importable, keras_models

MLP_SAMPLES = 2048
CNN_SAMPLES = 1024
BATCH = 32


def mnist_like(n, seed=0):
    r = np.random.default_rng(seed)
    x = r.random((n, 784), dtype=np.float32)
    y = r.integers(0, 10, n).astype(np.int32)
    return x, y


def digits_like(n, seed=0):
    r = np.random.default_rng(seed)
    x = r.random((n, 8, 8, 1), dtype=np.float32)
    y = r.integers(0, 10, n).astype(np.int32)
    return x, y


# ---- one epoch of fit, per framework ----------------------------------------

def keras_epoch(module, kind, run_eagerly):
    """A function running one epoch of fit (tfmini.keras or tf.keras)."""
    keras = module.keras
    model = keras_models(keras)[kind]()
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True), run_eagerly=run_eagerly)
    x, y = (mnist_like(MLP_SAMPLES) if kind == "mlp"
            else digits_like(CNN_SAMPLES))
    return lambda: model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
                             shuffle=False)


def torch_epoch(kind):
    import torch
    from torch import nn
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(),
                              nn.Linear(128, 10))
        x, y = mnist_like(MLP_SAMPLES)
    else:
        model = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(),
            nn.Linear(64, 10))
        x, y = digits_like(CNN_SAMPLES)
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def epoch():
        for i in range(0, len(xt), BATCH):
            opt.zero_grad()
            loss = loss_fn(model(xt[i:i + BATCH]), yt[i:i + BATCH])
            loss.backward()
            opt.step()
    return epoch


CASES = [("tfmini", False), ("tfmini", True), ("tensorflow", False),
         ("tensorflow", True), ("torch", None)]


def make_epoch(impl, kind, eager):
    if impl == "torch":
        return torch_epoch(kind)
    return keras_epoch(importlib.import_module(impl), kind, eager)


def _label(impl, eager):
    if impl == "torch":
        return "torch"
    return f"{impl} {'eager' if eager else 'traced'}"


# ---- pytest-benchmark -------------------------------------------------------

def _params():
    out = []
    for impl, eager in CASES:
        marks = []
        if impl != "tfmini" and not _importable(impl):
            marks.append(pytest.mark.skip(reason=f"{impl} is not installed"))
        out.append(pytest.param(impl, eager, id=_label(impl, eager)
                                .replace(" ", "-"), marks=marks))
    return out


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("impl,eager", _params())
def test_fit_epoch(benchmark, impl, eager, kind):
    epoch = make_epoch(impl, kind, eager)
    n = MLP_SAMPLES if kind == "mlp" else CNN_SAMPLES
    name = ("fit MLP 784-128-10 b32" if kind == "mlp"
            else "fit CNN 8x8x1 b32")
    benchmark.group = f"{name} ({'eager' if eager else 'traced'})" \
        if impl != "torch" else f"{name} (traced)"
    benchmark.extra_info["samples"] = n
    benchmark.pedantic(epoch, rounds=3, warmup_rounds=1)


def mixed_epoch(policy):
    """One traced epoch of fit for the MLP built under a dtype policy
    ('mixed_float16': float16 compute, float32 weights, loss scaling)."""
    import tfmini
    keras = tfmini.keras
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = keras_models(keras)["mlp"]()
    finally:
        keras.mixed_precision.set_global_policy(None)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    x, y = mnist_like(MLP_SAMPLES)
    return lambda: model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
                             shuffle=False)


@pytest.mark.parametrize("impl", ["tfmini-float32", "tfmini-mixed_float16"])
def test_fit_epoch_mixed_precision(benchmark, impl):
    epoch = mixed_epoch(impl.split("-", 1)[1])
    benchmark.group = "fit MLP 784-128-10 b32 (traced, dtype policy)"
    benchmark.extra_info["samples"] = MLP_SAMPLES
    benchmark.pedantic(epoch, rounds=3, warmup_rounds=1)


# ---- script: a samples/s table ----------------------------------------------

def measure(epoch, n, repeats=5):
    epoch()                                   # warm-up (tracing, slots)
    best = min(_timed(epoch) for _ in range(repeats))
    return n / best


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    if "--threads" in sys.argv:
        n = int(sys.argv[sys.argv.index("--threads") + 1])
        import tfmini
        tfmini.config.threading.set_intra_op_parallelism_threads(n)
        if _importable("tensorflow"):
            import tensorflow as tf
            tf.config.threading.set_intra_op_parallelism_threads(n)
            tf.config.threading.set_inter_op_parallelism_threads(n)
        if _importable("torch"):
            import torch
            torch.set_num_threads(n)
    rows = []
    for kind, n in (("mlp", MLP_SAMPLES), ("cnn", CNN_SAMPLES)):
        for impl, eager in CASES:
            if impl != "tfmini" and not _importable(impl):
                continue
            rate = measure(make_epoch(impl, kind, eager), n)
            rows.append((kind, _label(impl, eager), rate))
            print(f"{kind} {_label(impl, eager)}: {rate:,.0f} samples/s",
                  file=sys.stderr, flush=True)
    print("| model | implementation | samples/s |")
    print("|---|---|---|")
    for kind, label, rate in rows:
        name = "MLP 784-128-10, batch 32" if kind == "mlp" \
            else "CNN 8x8x1 (demo), batch 32"
        print(f"| {name} | {label} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
