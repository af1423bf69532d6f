"""Post-training quantization on the digits models: accuracy, file size
and speed of the float, dynamic-range and full-int8 forms.

    python3 benchmarks/quant_bench.py [--threads 1] [--write-results]
    python3 benchmarks/quant_bench.py --speed-only   (no training)

Trains the digits CNN of examples/web/make_model.py and an MLP
(8x8 -> 512 relu -> 10) on tf.keras.datasets.digits, saves them, converts
each with tf.lite.TFLiteConverter (Optimize.DEFAULT; then with a
representative dataset of 200 training rows and TFLITE_BUILTINS_INT8),
and reports test accuracy, saved_model.tfm bytes, and the median time of
one serving_default call at batch 1 and 64 (loaded with
tf.saved_model.load, --threads OpenMP threads). A last table times the
int8 GEMM alone (QuantizedMatMulAccum, VNNI and portable paths) against
the float32 matmul. --write-results puts the tables into
benchmarks/RESULTS.md's "Quantization" section."""
import argparse
import datetime
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "web"))

import tfmini as tf  # noqa: E402
from tfmini import _C  # noqa: E402


def _median_ms(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return 1e3 * float(np.median(ts))


def _models(tmp):
    import make_model
    (x, y), (xt, yt) = tf.keras.datasets.digits.load_data()
    x, xt = x[..., None].astype(np.float32), xt[..., None].astype(np.float32)
    cnn, _ = make_model.build(epochs=8, seed=0)
    tf.random.set_seed(1)
    mlp = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)), tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(512, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax")])
    mlp.compile(optimizer=tf.keras.optimizers.Adam(0.003),
                loss="sparse_categorical_crossentropy")
    mlp.fit(x, y, epochs=6, batch_size=32, verbose=0)
    out = {}
    for name, m in (("cnn", cnn), ("mlp", mlp)):
        p = os.path.join(tmp, name)
        tf.saved_model.save(m, p)
        out[name] = p
    return out, (x, xt, yt)


def _variants(path, x):
    c = tf.lite.TFLiteConverter.from_saved_model(path)
    yield "float32", pathlib.Path(path, "saved_model.tfm").read_bytes()
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    yield "dynamic range", c.convert()
    c.representative_dataset = lambda: ([x[i:i + 1]]
                                        for i in range(0, 1000, 5))
    c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    yield "full int8", c.convert()


def model_table(paths, data, tmp):
    x, xt, yt = data
    rows = ["| model | form | test accuracy | vs float | file bytes | "
            "size ratio | batch 1 | batch 64 |", "|---|---|---|---|---|---|"
            "---|---|"]
    for name, path in paths.items():
        base_acc = base_size = None
        for form, content in _variants(path, x):
            d = os.path.join(tmp, f"{name}_{form.replace(' ', '_')}")
            os.makedirs(d, exist_ok=True)
            pathlib.Path(d, "saved_model.tfm").write_bytes(content)
            fn = tf.saved_model.load(d).signatures["serving_default"]
            pred = np.asarray(fn(inputs=xt)["output_0"]).argmax(1)
            acc = float(np.mean(pred == yt))
            b1 = _median_ms(lambda: fn(inputs=xt[:1]), 300)
            b64 = _median_ms(lambda: fn(inputs=xt[:64]), 100)
            if base_acc is None:
                base_acc, base_size = acc, len(content)
            rows.append(
                f"| {name} | {form} | {100 * acc:.2f}% | "
                f"{100 * (acc - base_acc):+.2f} pt | {len(content):,} | "
                f"{base_size / len(content):.2f}x | {b1:.3f} ms | "
                f"{b64:.3f} ms |")
    return "\n".join(rows)


def _gemm_ms(m, k, n):
    ops = {r[0]: i for i, r in enumerate(_C.op_table())}
    rng = np.random.default_rng(0)
    a = tf.constant(rng.integers(-128, 128, (m, k)).astype(np.int8))
    b = tf.constant(rng.integers(-128, 128, (k, n)).astype(np.int8))
    return _median_ms(lambda: _C.call(ops["QuantizedMatMulAccum"], (a, b)),
                      30)


def gemm_table(shapes, threads):
    rows = ["| M x K x N | float32 matmul | int8 GEMM (VNNI if present) | "
            "int8 GEMM (portable, TFMINI_QGEMM_REF=1) |", "|---|---|---|---|"]
    code = ("import sys; sys.path.insert(0, %r); import quant_bench as q; "
            "q._C.set_num_threads(%d); print(q._gemm_ms(%d, %d, %d))")
    for m, k, n in shapes:
        rng = np.random.default_rng(0)
        fa = tf.constant(rng.standard_normal((m, k)).astype(np.float32))
        fb = tf.constant(rng.standard_normal((k, n)).astype(np.float32))
        f = _median_ms(lambda: tf.matmul(fa, fb), 30)
        q = _gemm_ms(m, k, n)
        r = subprocess.run([sys.executable, "-c",
                            code % (str(HERE), threads, m, k, n)],
                           capture_output=True, text=True,
                           env=dict(os.environ, TFMINI_QGEMM_REF="1"))
        ref = float(r.stdout.strip().splitlines()[-1])
        rows.append(f"| {m} x {k} x {n} | {f:.3f} ms | {q:.3f} ms | "
                    f"{ref:.3f} ms |")
    return "\n".join(rows)


def speed_table(tmp, rounds=1):
    """Float vs quantized forms, speed only (untrained weights: the time
    does not depend on their values): the digits MLP's shape and one
    1024x1024 Dense layer, at batch 1 and 64, median of 300/100 calls;
    with rounds > 1, the forms take turns and each cell is the median
    of its rounds (the machine's load drifts less between neighbours)."""
    rng = np.random.default_rng(0)
    shapes = {"mlp 64-512-10": [64, 512, 10], "dense 1024x1024": [1024, 1024]}
    rows = ["| model | form | batch 1 | vs float | batch 64 | vs float |",
            "|---|---|---|---|---|---|"]
    for name, sizes in shapes.items():
        tf.random.set_seed(0)
        layers = [tf.keras.layers.Input((sizes[0],))]
        layers += [tf.keras.layers.Dense(u, activation="relu")
                   for u in sizes[1:-1]]
        layers.append(tf.keras.layers.Dense(sizes[-1]))
        m = tf.keras.Sequential(layers)
        x = rng.standard_normal((1000, sizes[0])).astype(np.float32)
        path = os.path.join(tmp, name.split()[0])
        tf.saved_model.save(m, path)
        calls = []
        for form, content in _variants(path, x):
            d = os.path.join(tmp, f"{name.split()[0]}_{form[:3]}")
            os.makedirs(d, exist_ok=True)
            pathlib.Path(d, "saved_model.tfm").write_bytes(content)
            fn = tf.saved_model.load(d).signatures["serving_default"]
            key = next(iter(fn.structured_input_signature[1]))
            calls.append((form, fn, key))
        times = {form: ([], []) for form, _, _ in calls}
        for _ in range(rounds):
            for form, fn, key in calls:
                times[form][0].append(
                    _median_ms(lambda: fn(**{key: x[:1]}), 300))
                times[form][1].append(
                    _median_ms(lambda: fn(**{key: x[:64]}), 100))
        base = None
        for form, _, _ in calls:
            b1, b64 = (float(np.median(t)) for t in times[form])
            base = base or (b1, b64)
            rows.append(f"| {name} | {form} | {b1:.3f} ms | "
                        f"{base[0] / b1:.2f}x | {b64:.3f} ms | "
                        f"{base[1] / b64:.2f}x |")
    return "\n".join(rows)


def _cpu():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                vnni = "avx512_vnni" in open("/proc/cpuinfo").read()
                return f"{name} ({'AVX512-VNNI' if vnni else 'no VNNI'})"
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def write_results(text):
    path = HERE / "RESULTS.md"
    old = path.read_text()
    section = "## Quantization\n\n" + text.strip() + "\n"
    if "## Quantization\n" in old:
        new = re.sub(r"## Quantization\n.*?(?=\n## |\Z)", section, old,
                     flags=re.S)
    else:
        new = old.rstrip("\n") + "\n\n" + section
    path.write_text(new)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--write-results", action="store_true")
    p.add_argument("--rounds", type=int, default=1,
                   help="--speed-only: rounds per cell, median (default 1)")
    p.add_argument("--speed-only", action="store_true",
                   help="only the float-vs-quantized speed table (no "
                   "training; prints, never writes RESULTS.md)")
    a = p.parse_args(argv)
    _C.set_num_threads(a.threads)
    if a.speed_only:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"{_cpu()}, {a.threads} OpenMP thread(s)\n")
            print(speed_table(tmp, a.rounds))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        paths, data = _models(tmp)
        models = model_table(paths, data, tmp)
    gemm = gemm_table([(1, 512, 512), (64, 512, 512), (64, 1024, 1024)],
                      a.threads)
    text = (f"Run: {datetime.date.today()}, {_cpu()}, "
            f"{os.cpu_count()} logical cores, {a.threads} OpenMP "
            f"thread(s).\n\nCommand: `python3 benchmarks/quant_bench.py "
            f"--threads {a.threads}`\n\n{models}\n\nThe int8 GEMM alone "
            f"(int32 out; median of 30):\n\n{gemm}\n")
    print(text)
    if a.write_results:
        write_results(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
