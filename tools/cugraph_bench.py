"""A cached tf.function call's time on the GPU with and without CUDA
graphs (Note [CUDA graphs for cached calls] in csrc/graph/exec_cugraph.c):
a tiny step (eight matmul + tanh + add layers on 64x64 float32), whose
kernels take a few microseconds each, so the call is bound by the host's
work per step, which a graph replay skips. Prints microseconds per call
(median of rounds, the stream synchronized once per round) and the
replay counters. Numbers only: nothing here fails on a timing.

    python3 tools/cugraph_bench.py [--calls 300] [--rounds 7] [--device /GPU:0]
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np

import tfmini as tf
from tfmini import _C


def counters():
    c = (ctypes.c_int64 * 6)()
    ctypes.CDLL(_C.__file__).tfm_cugraph_counters(c)
    return dict(zip(["captures", "replays", "fallbacks", "failures"], c))


def run(device, graphs, calls, rounds):
    os.environ["TFMINI_CUDA_GRAPHS"] = "1" if graphs else "0"
    rng = np.random.default_rng(0)
    with tf.device(device):
        w = tf.constant(rng.standard_normal((64, 64)).astype(np.float32)
                        * 0.1)
        x = tf.constant(rng.standard_normal((64, 64)).astype(np.float32))

    @tf.function
    def step(a, b):
        with tf.device(device):
            for _ in range(8):
                a = tf.tanh(tf.matmul(a, b)) + a
            return a

    for _ in range(3):                  # trace, warm, capture
        step(x, w).numpy()
    before = counters()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            y = step(x, w)
        y.numpy()                       # waits for the stream
        times.append((time.perf_counter() - t) / calls)
    after = counters()
    return (statistics.median(times) * 1e6, y.numpy(),
            {k: after[k] - before[k] for k in after})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--device", default="/GPU:0")
    a = ap.parse_args()
    if "GPU" in a.device.upper() and not tf.config._gpu_count():
        print(f"cugraph_bench: no CUDA GPU ({tf.config._why_no_gpu}); "
              "nothing measured")
        return 0
    plain, yp, _ = run(a.device, False, a.calls, a.rounds)
    graph, yg, d = run(a.device, True, a.calls, a.rounds)
    same = np.array_equal(yp, yg)
    print(f"cached tf.function call, 8 x (matmul 64x64 + tanh + add) on "
          f"{a.device}: step by step {plain:.1f} us, CUDA graph "
          f"{graph:.1f} us ({plain / graph:.2f}x); replays {d['replays']}, "
          f"captures {d['captures']}, fall-backs {d['fallbacks']}, "
          f"failures {d['failures']}; same values: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
