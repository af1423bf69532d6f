"""A small GPU benchmark for tools/gpu_check.sh: matmul 4096^2 float32
(exact and TF32) as % of the GPU's peak, an elementwise chain as % of its
memory bandwidth, and a cached tf.function's call overhead. PyTorch, when
installed, runs the same matmul and chain on the same GPU as a baseline.
Numbers only: nothing here fails on a timing."""
import subprocess
import time

import numpy as np

import tfmini as tf

# Dense peaks (NVIDIA's data sheets, SXM): float32 FMA, TF32 tensor
# cores, HBM bandwidth in bytes/s.
PEAKS = {"H100": (67e12, 495e12, 3.35e12), "H200": (67e12, 495e12, 4.8e12),
         "A100": (19.5e12, 156e12, 2.0e12)}


def gpu_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name",
                               "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.strip()
    except OSError:
        return "unknown"


def best(fn, reps, rounds=3):
    fn()                                 # warm (traces, pools, cuBLAS)
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            r = fn()
        sync(r)
        times.append((time.perf_counter() - t) / reps)
    return min(times)


def sync(r):
    tf.test.experimental.sync_devices()


def mlp_step(rng, batch=256):
    """The MLP train step (784-512-512-10, SGD), traced, on the GPU."""
    x = tf.identity(tf.constant(rng.standard_normal((batch, 784),
                                                    dtype=np.float32)))
    y = tf.identity(tf.constant(rng.integers(0, 10, batch).astype(np.int32)))
    model = tf.keras.Sequential([tf.keras.layers.Dense(512, "relu"),
                                 tf.keras.layers.Dense(512, "relu"),
                                 tf.keras.layers.Dense(10)])
    opt = tf.keras.optimizers.SGD(0.01)
    lossf = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = lossf(y, model(x))
        g = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(g, model.trainable_variables))
        return loss

    s = best(lambda: step(x, y), 50)
    print(f"MLP 784-512-512-10 b{batch} SGD step, traced: {s * 1e6:.0f} us")


def main():
    name = gpu_name()
    peak = next((v for k, v in PEAKS.items() if k in name), None)
    print(f"GPU: {name}")
    n = 4096
    rng = np.random.default_rng(0)
    with tf.device("/GPU:0"):
        a = tf.identity(tf.constant(rng.standard_normal((n, n),
                                                        dtype=np.float32)))
        b = tf.identity(tf.constant(rng.standard_normal((n, n),
                                                        dtype=np.float32)))
        flops = 2.0 * n ** 3
        for tf32 in (False, True):
            tf.config.experimental.enable_tensor_float_32_execution(tf32)
            s = best(lambda: tf.matmul(a, b), 10)
            pct = (f"{100 * flops / s / peak[1 if tf32 else 0]:.0f}% of "
                   "peak" if peak else "")
            print(f"matmul {n}^2 {'tf32' if tf32 else 'fp32'}: "
                  f"{s * 1e3:.3f} ms, {flops / s / 1e12:.1f} TFLOP/s {pct}")
        m = 1 << 26                      # 256 MiB of float32
        x = tf.identity(tf.constant(np.ones(m, np.float32)))

        def chain():
            return tf.nn.relu(x * 2.0 + 1.0) - 0.5

        s = best(chain, 5)
        moved = 4 * 2 * 4 * m            # 4 ops, each reads and writes
        pct = f"{100 * moved / s / peak[2]:.0f}% of HBM" if peak else ""
        print(f"elementwise chain (4 ops, {m} floats) eager: "
              f"{s * 1e3:.3f} ms, {moved / s / 1e9:.0f} GB/s {pct}")
        fchain = tf.function(chain)
        s = best(fchain, 5)
        print(f"elementwise chain traced: {s * 1e3:.3f} ms, "
              f"{moved / s / 1e9:.0f} GB/s")
        one = tf.identity(tf.constant(np.ones(4, np.float32)))
        tiny = tf.function(lambda v: v * 2.0 + 1.0)
        s = best(lambda: tiny(one), 2000)
        print(f"cached tf.function call (tiny, on GPU): {s * 1e6:.1f} us")
        mlp_step(rng)
    tf.config.experimental.enable_tensor_float_32_execution(True)
    try:
        import torch
    except ImportError:
        print("torch: not installed (no baseline)")
        return
    if not torch.cuda.is_available():
        print("torch: no CUDA")
        return
    ta = torch.randn(n, n, device="cuda")
    tb = torch.randn(n, n, device="cuda")
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.matmul(ta, tb)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(10):
            torch.matmul(ta, tb)
        torch.cuda.synchronize()
        s = (time.perf_counter() - t) / 10
        print(f"torch matmul {n}^2 {'tf32' if tf32 else 'fp32'}: "
              f"{s * 1e3:.3f} ms, {flops / s / 1e12:.1f} TFLOP/s")
    tx = torch.ones(1 << 26, device="cuda")
    torch.relu(tx * 2.0 + 1.0) - 0.5
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(5):
        torch.relu(tx * 2.0 + 1.0) - 0.5
    torch.cuda.synchronize()
    s = (time.perf_counter() - t) / 5
    print(f"torch elementwise chain eager: {s * 1e3:.3f} ms, "
          f"{moved / s / 1e9:.0f} GB/s")
    net = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                              torch.nn.Linear(512, 512), torch.nn.ReLU(),
                              torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    tx = torch.randn(256, 784, device="cuda")
    ty = torch.randint(0, 10, (256,), device="cuda")

    def tstep():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(tx), ty)
        loss.backward()
        opt.step()
    for _ in range(5):
        tstep()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(50):
        tstep()
    torch.cuda.synchronize()
    print(f"torch MLP 784-512-512-10 b256 SGD step, eager: "
          f"{(time.perf_counter() - t) / 50 * 1e6:.0f} us")


if __name__ == "__main__":
    main()
