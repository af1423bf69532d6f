"""A small GPU benchmark for tools/gpu_check.sh: matmul 4096^2 at float32,
TF32, bfloat16 and float16 as % of the GPU's dense peak, an elementwise
chain as % of its memory bandwidth, a cached tf.function's call
overhead, and the benchmarks' CNN and MLP train steps; PyTorch (eager)
and JAX (jax.jit) run the same work on the same GPU where installed, and
skip with the reason printed where not. Ends with a markdown table for
RESULTS.md, the device named. Numbers only: nothing here fails on a
timing. Without a GPU it says so and exits 2.

Kept short (gpu_check.sh gives it GPU_CHECK_BENCH_S, ~35 s): few
repetitions, and GPU_BENCH_BUDGET_S (default 80% of GPU_CHECK_BENCH_S)
after which the remaining sections are skipped; a SIGTERM (timeout's)
still prints the table of what ran."""
import os
import signal
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# JAX takes 75% of the GPU's memory when it starts unless told not to,
# and here it shares the GPU with tfmini's pool and PyTorch's cache.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# Dense peaks from NVIDIA's data sheets (H100/H200: "NVIDIA H100 Tensor
# Core GPU" and "NVIDIA H200 Tensor Core GPU" data sheets, SXM5 columns,
# the tensor-core figures halved: the sheets quote them with 2:4
# sparsity; A100: "NVIDIA A100 Tensor Core GPU" data sheet, SXM):
# float32 FMA, TF32, bfloat16, float16 (FLOP/s) and HBM bandwidth (B/s).
# The PCIe H100 is slower; its row is matched first.
PEAKS = [("H100 PCIe", (51e12, 378e12, 756e12, 756e12, 2.0e12)),
         ("H200", (67e12, 494.7e12, 989.4e12, 989.4e12, 4.8e12)),
         ("H100", (67e12, 494.7e12, 989.4e12, 989.4e12, 3.35e12)),
         ("A100", (19.5e12, 156e12, 312e12, 312e12, 2.039e12))]
PEAK_COL = {"fp32": 0, "tf32": 1, "bf16": 2, "fp16": 3}

N = 4096
FLOPS = 2.0 * N ** 3
# Seconds after which no new section starts: 80% of what gpu_check.sh
# gives the whole script, so the table is printed inside its timeout.
BUDGET = float(os.environ.get("GPU_BENCH_BUDGET_S") or
               0.8 * float(os.environ.get("GPU_CHECK_BENCH_S") or 38))
START = time.perf_counter()
ROWS = []       # (workload, framework, seconds, note)
# Where the peers run: the GPU (a dry run of this script's code on a
# machine without one may point them at "cpu").
TORCH_DEV, JAX_PLATFORM = "cuda", "gpu"


class OutOfTime(Exception):
    pass


def _on_term(signum, frame):
    raise OutOfTime("SIGTERM")


def left():
    return BUDGET - (time.perf_counter() - START)


def say(*a):
    print(*a, flush=True)


def record(workload, framework, s, note=""):
    ROWS.append((workload, framework, s, note))
    say(f"{workload} [{framework}]: {fmt(s)} {note}".rstrip())


def fmt(s):
    return f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


def gpu_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name",
                               "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.strip() \
            or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def peaks_of(name):
    return next((v for k, v in PEAKS if k in name), None)


def timed(fn, sync, reps, rounds=3):
    """Best mean over rounds of reps calls, after one warm-up call (which
    traces, compiles, sizes pools and picks cuBLAS algorithms)."""
    sync(fn())
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            r = fn()
        sync(r)
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def matmul_note(kind, s, peak):
    tflops = FLOPS / s / 1e12
    pct = (f", {100 * FLOPS / s / peak[PEAK_COL[kind]]:.0f}% of peak"
           if peak else "")
    return f"{tflops:.1f} TFLOP/s{pct}"


# ---- tfmini ----------------------------------------------------------------

def tfm_sync(_):
    import tfmini as tf
    tf.test.experimental.sync_devices()


def tfm_matmuls(tf, peak):
    rng = np.random.default_rng(0)
    with tf.device("/GPU:0"):
        a = tf.identity(tf.constant(rng.standard_normal((N, N),
                                                        dtype=np.float32)))
        b = tf.identity(tf.constant(rng.standard_normal((N, N),
                                                        dtype=np.float32)))
        for kind in ("fp32", "tf32", "bf16", "fp16"):
            tf.config.experimental.enable_tensor_float_32_execution(
                kind == "tf32")
            if kind in ("bf16", "fp16"):
                dt = tf.bfloat16 if kind == "bf16" else tf.float16
                x, y = tf.cast(a, dt), tf.cast(b, dt)
            else:
                x, y = a, b
            s = timed(lambda: tf.matmul(x, y), tfm_sync, 10)
            record(f"matmul {N}^2 {kind}", "tfmini", s,
                   matmul_note(kind, s, peak))
    tf.config.experimental.enable_tensor_float_32_execution(True)


def tfm_chain(tf, peak):
    m = 1 << 26                      # 256 MiB of float32
    moved = 4 * 2 * 4 * m            # 4 ops, each reads and writes
    with tf.device("/GPU:0"):
        x = tf.identity(tf.constant(np.ones(m, np.float32)))

        def chain():
            return tf.nn.relu(x * 2.0 + 1.0) - 0.5

        for label, fn in (("eager", chain), ("traced", tf.function(chain))):
            s = timed(fn, tfm_sync, 5)
            pct = (f", {100 * moved / s / peak[4]:.0f}% of HBM"
                   if peak else "")
            record(f"elementwise chain 4 ops x 2^26 f32, {label}", "tfmini",
                   s, f"{moved / s / 1e9:.0f} GB/s{pct}")
        one = tf.identity(tf.constant(np.ones(4, np.float32)))
        tiny = tf.function(lambda v: v * 2.0 + 1.0)
        s = timed(lambda: tiny(one), tfm_sync, 2000)
        record("cached tf.function call (tiny)", "tfmini", s)
    return moved


def tfm_mlp(tf):
    rng = np.random.default_rng(0)
    with tf.device("/GPU:0"):
        x = tf.identity(tf.constant(rng.standard_normal((256, 784),
                                                        dtype=np.float32)))
        y = tf.identity(tf.constant(rng.integers(0, 10, 256).astype(
            np.int32)))
        model = tf.keras.Sequential([tf.keras.layers.Dense(512, "relu"),
                                     tf.keras.layers.Dense(512, "relu"),
                                     tf.keras.layers.Dense(10)])
        opt = tf.keras.optimizers.SGD(0.01)
        lossf = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True)

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = lossf(y, model(x))
            g = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(g, model.trainable_variables))
            return loss

        s = timed(lambda: step(x, y), tfm_sync, 30)
    record("MLP 784-512-512-10 b256 SGD step", "tfmini traced", s)


def bench_models():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_models as bm
    return bm


def tfm_cnn(tf):
    """The benchmarks' CNN train step (benchmarks/bench_models.py), traced,
    its loss fetched each step as the CPU benchmark does."""
    bm = bench_models()
    with tf.device("/GPU:0"):
        model = bm._tf_models(tf, "cnn")
        lossf = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True)
        opt = tf.keras.optimizers.SGD(bm.LR)
        x, y = (tf.identity(tf.constant(v)) for v in bm.data("cnn"))

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = lossf(y, model(x, training=True))
            g = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(g, model.trainable_variables))
            return loss

        s = timed(lambda: step(x, y).numpy(), lambda _: None, 20)
    record("CNN train step 64x32x32x3", "tfmini traced", s)


# ---- PyTorch (eager) --------------------------------------------------------

def torch_matmuls(peak):
    try:
        import torch
    except ImportError as e:
        say(f"torch: skipped ({e})")
        return
    dev = TORCH_DEV
    if dev == "cuda" and not torch.cuda.is_available():
        say("torch: skipped (torch.cuda.is_available() is False)")
        return

    def sync(_):
        if dev == "cuda":
            torch.cuda.synchronize()

    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(N, N, device=dev, generator=g)
    b = torch.randn(N, N, device=dev, generator=g)
    for kind in ("fp32", "tf32", "bf16", "fp16"):
        torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(kind)
        x, y = (a.to(dt), b.to(dt)) if dt else (a, b)
        s = timed(lambda: torch.matmul(x, y), sync, 10)
        record(f"matmul {N}^2 {kind}", "torch", s, matmul_note(kind, s, peak))
    torch.backends.cuda.matmul.allow_tf32 = False


def torch_models(peak, moved):
    """The CNN and MLP train steps and the chain, eager (no
    torch.compile)."""
    try:
        import torch
    except ImportError:
        return                       # said by torch_matmuls
    dev = TORCH_DEV
    if dev == "cuda" and not torch.cuda.is_available():
        return

    def sync(_):
        if dev == "cuda":
            torch.cuda.synchronize()

    nn = torch.nn
    F = nn.functional
    torch.manual_seed(0)
    cnn = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(8 * 8 * 64, 10)).to(dev)
    bm = bench_models()
    xv, yv = bm.data("cnn")
    cx = torch.from_numpy(np.ascontiguousarray(
        xv.transpose(0, 3, 1, 2))).to(dev)
    cy = torch.from_numpy(yv).long().to(dev)
    copt = torch.optim.SGD(cnn.parameters(), lr=bm.LR)

    def cnn_step():
        copt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(cnn(cx), cy)
        loss.backward()
        copt.step()
        return loss.item()

    s = timed(cnn_step, lambda _: None, 20)
    record("CNN train step 64x32x32x3", "torch eager", s)
    if left() < 0:
        return
    tx = torch.ones(1 << 26, device=dev)
    s = timed(lambda: torch.relu(tx * 2.0 + 1.0) - 0.5, sync, 5)
    pct = f", {100 * moved / s / peak[4]:.0f}% of HBM" if peak else ""
    record("elementwise chain 4 ops x 2^26 f32, eager", "torch", s,
           f"{moved / s / 1e9:.0f} GB/s{pct}")
    if left() < 0:
        return
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                        nn.ReLU(), nn.Linear(512, 10)).to(dev)
    mopt = torch.optim.SGD(mlp.parameters(), lr=0.01)
    mx = torch.randn(256, 784, device=dev)
    my = torch.randint(0, 10, (256,), device=dev)

    def mlp_step():
        mopt.zero_grad()
        loss = F.cross_entropy(mlp(mx), my)
        loss.backward()
        mopt.step()
        return loss

    s = timed(mlp_step, sync, 30)
    record("MLP 784-512-512-10 b256 SGD step", "torch eager", s)


# ---- JAX (jax.jit) ----------------------------------------------------------

def jax_matmuls(peak):
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax
    except ImportError as e:
        say(f"jax: skipped ({e})")
        return
    try:
        gpu = jax.devices(JAX_PLATFORM)[0]
    except RuntimeError as e:
        say(f"jax: skipped (no GPU backend: {e})")
        return

    def sync(r):
        jax.block_until_ready(r)

    rng = np.random.default_rng(0)
    a = jax.device_put(rng.standard_normal((N, N), dtype=np.float32), gpu)
    b = jax.device_put(rng.standard_normal((N, N), dtype=np.float32), gpu)
    # fp32: HIGHEST precision (no TF32); tf32: JAX's DEFAULT precision,
    # which lets XLA use TF32 on Ampere and later.
    prec = {"fp32": lax.Precision.HIGHEST, "tf32": lax.Precision.DEFAULT,
            "bf16": lax.Precision.DEFAULT, "fp16": lax.Precision.DEFAULT}
    for kind in ("fp32", "tf32", "bf16", "fp16"):
        dt = {"bf16": jnp.bfloat16, "fp16": jnp.float16}.get(kind)
        x, y = (a.astype(dt), b.astype(dt)) if dt else (a, b)
        f = jax.jit(lambda p, q, _p=prec[kind]: jnp.matmul(p, q,
                                                           precision=_p))
        s = timed(lambda: f(x, y), sync, 10)
        record(f"matmul {N}^2 {kind}", "jax.jit", s,
               matmul_note(kind, s, peak))


def jax_cnn():
    try:
        import jax
        gpu = jax.devices(JAX_PLATFORM)[0]
    except (ImportError, RuntimeError):
        return                       # said by jax_matmuls
    bm = bench_models()
    with jax.default_device(gpu):
        run = bm.jax_step("cnn")
        s = timed(run, lambda _: None, 20)
    record("CNN train step 64x32x32x3", "jax.jit", s)


def table(device):
    say("")
    say(f"GPU benchmark on {device} (tools/gpu_bench.py; best of 3 rounds)")
    say("")
    say("| workload | framework | time | note |")
    say("|---|---|---|---|")
    for w, f, s, note in ROWS:
        say(f"| {w} | {f} | {fmt(s)} | {note} |")


def main():
    sys.path.insert(0, ROOT)
    import tfmini as tf
    if not tf.config._gpu_count():
        print(f"gpu_bench: no CUDA GPU: {tf.config._why_no_gpu}",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _on_term)
    name = gpu_name()
    peak = peaks_of(name)
    say(f"GPU: {name}" + ("" if peak else " (no peak figures known)"))
    moved = 4 * 2 * 4 * (1 << 26)
    # Most wanted first: what the budget cuts is at the end.
    sections = [lambda: tfm_matmuls(tf, peak), lambda: torch_matmuls(peak),
                lambda: jax_matmuls(peak), lambda: tfm_cnn(tf), jax_cnn,
                lambda: torch_models(peak, moved),
                lambda: tfm_chain(tf, peak), lambda: tfm_mlp(tf)]
    try:
        for i, run in enumerate(sections):
            if left() < 0:
                say(f"out of budget ({BUDGET:.0f} s): {len(sections) - i} "
                    "sections skipped")
                break
            try:
                run()
            except OutOfTime:
                raise
            except Exception as e:   # one framework's failure ends only it
                say(f"section {i} failed: {type(e).__name__}: {e}")
    except OutOfTime:
        say("stopped by SIGTERM")
    table(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
