"""Which float32 GEMM should tfmini's MatMul call? Side by side, in one
process, on the shapes that matter: squares 256..2048 and the MLP /
attention shapes. Writes the table to stdout (benchmarks/GEMM_CHOICE.md
keeps a recorded run).

    python3 benchmarks/gemm_choice.py [--threads N] [--reps R]

Candidates (each skipped with its reason when absent):
  tfmini      tf.matmul as built: oneDNN's sgemm when the build found
              it (TFMINI_GEMM=eigen in the environment keeps Eigen)
  eigen       tfmini's Eigen GEMM (tfm_gemm_f32, the path before oneDNN
              and the fallback without it), called directly
  dnnl_sgemm  oneDNN's BLAS-like entry (libdnnl, Debian libdnnl-dev)
  dnnl_matmul oneDNN's matmul primitive, created once per shape
  openblas    cblas_sgemm of Debian's libopenblas (pthreads build)
  numpy       np.matmul (NumPy's own OpenBLAS, scipy-openblas)
  jax         jax.jit(jnp.matmul), block_until_ready

Timings are the best of R calls (after warm-up) and the candidates are
interleaved shape by shape, so that a busy machine slows all of them
alike; the best, not the median, because on a shared machine the
median mostly measures the neighbours."""
import argparse
import ctypes
import ctypes.util
import os
import subprocess
import sys
import time

import numpy as np

SHAPES = [  # (batch, m, k, n)
    (1, 256, 256, 256), (1, 512, 512, 512), (1, 1024, 1024, 1024),
    (1, 2048, 2048, 2048), (1, 32, 784, 128), (1, 256, 512, 512),
    (8, 64, 64, 64),
]


def peak_gflops(threads):
    """FMA units x vector width x 2 (multiply and add) x clock x cores.
    The unit count and width are per microarchitecture, not in cpuinfo:
    AMD Zen 2..4 have 2 FMA pipes of 256 bits (Zen 4 runs AVX-512 as two
    halves, Zen 5 has 512-bit pipes); Intel server cores with AVX-512
    2 of 512 bits; other AVX2 cores 2 of 256 bits."""
    info = open("/proc/cpuinfo").read()
    flags = set()
    mhz, family, vendor, model = 0.0, 0, "", ""
    for line in info.splitlines():
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k == "flags" and not flags:
            flags = set(v.split())
        elif k == "cpu MHz" and not mhz:
            mhz = float(v)
        elif k == "cpu family" and not family:
            family = int(v)
        elif k == "vendor_id" and not vendor:
            vendor = v
        elif k == "model name" and not model:
            model = v
    try:  # the rated maximum clock, when the VM exposes it
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("CPU max MHz"):
                mhz = max(mhz, float(line.split(":")[1]))
    except OSError:
        pass
    if vendor == "AuthenticAMD":
        units, bits = 2, (512 if family >= 26 else 256)
    elif "avx512f" in flags:
        units, bits = 2, 512
    elif "fma" in flags:
        units, bits = 2, 256
    else:
        units, bits = 1, 128
    lanes = bits // 32
    per_core = units * lanes * 2 * mhz / 1e3
    # A VM's cpuinfo shows the nominal clock; boost runs above it, so a
    # rate over 100% of this peak means the core clocked higher.
    why = (f"{model}: {units} FMA units x {lanes} float32 lanes x 2 flop x "
           f"{mhz:.0f} MHz (reported clock) = {per_core:.0f} GFLOP/s per "
           "core")
    return per_core * threads, why


def best_of(fn, reps):
    fn()
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


# ---- candidates: each make(a, b, c) -> a zero-argument callable -------

def tfmini_candidate(threads):
    import tfmini as tf

    def make(a, b, c):
        ta, tb = tf.constant(a), tf.constant(b)
        return lambda: tf.matmul(ta, tb)
    return make


def _per_matrix(call):
    """make(a, b, c) for a C GEMM taking raw pointers: call(m, n, k, pa,
    pb, pc) once per matrix of the batch (row-major float32)."""
    def make(a, b, c):
        nb, m, k = a.shape
        n = b.shape[2]
        pa, pb, pc = (x.ctypes.data for x in (a, b, c))
        sa, sb, sc = m * k * 4, k * n * 4, m * n * 4

        def run():
            for i in range(nb):
                call(m, n, k, pa + i * sa, pb + i * sb, pc + i * sc)
        return run
    return make


def eigen_candidate(threads):
    import tfmini
    f = ctypes.CDLL(tfmini._C.__file__).tfm_gemm_f32
    i64, p = ctypes.c_int64, ctypes.c_void_p
    f.argtypes = [i64, i64, i64, p, ctypes.c_int, p, ctypes.c_int, p]
    f.restype = None
    return _per_matrix(lambda m, n, k, pa, pb, pc:
                       f(m, n, k, pa, 0, pb, 0, pc))


def _load(*names):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            continue
    raise OSError("none of " + ", ".join(names) + " loads")


def dnnl_sgemm_candidate(threads):
    lib = _load("libdnnl.so.2", "libdnnl.so.3", "libdnnl.so")
    f = lib.dnnl_sgemm
    i64, fl, p = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
    f.argtypes = [ctypes.c_char, ctypes.c_char, i64, i64, i64, fl, p, i64,
                  p, i64, fl, p, i64]
    f.restype = ctypes.c_int
    return _per_matrix(lambda m, n, k, pa, pb, pc:
                       f(b"N", b"N", m, n, k, 1.0, pa, k, pb, n, 0.0, pc, n))


def dnnl_matmul_candidate(threads):
    """The matmul primitive through oneDNN 2.x's C API: descriptors are
    opaque blobs here (ample buffers), the batch is the primitive's."""
    lib = _load("libdnnl.so.2", "libdnnl.so")
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    eng, strm = vp(), vp()
    if lib.dnnl_engine_create(ctypes.byref(eng), 1, ctypes.c_size_t(0)):
        raise OSError("dnnl_engine_create failed")
    if lib.dnnl_stream_create(ctypes.byref(strm), eng, 1):
        raise OSError("dnnl_stream_create failed")

    class Arg(ctypes.Structure):
        _fields_ = [("arg", ctypes.c_int), ("memory", vp)]

    Dims = i64 * 12

    def md(dims):
        buf = ctypes.create_string_buffer(4096)
        st, acc = [0] * len(dims), 1
        for d in range(len(dims) - 1, -1, -1):
            st[d] = acc
            acc *= dims[d]
        r = lib.dnnl_memory_desc_init_by_strides(
            buf, len(dims), Dims(*dims), 3, Dims(*st))
        if r:
            raise OSError(f"dnnl_memory_desc_init_by_strides: {r}")
        return buf

    def make(a, b, c):
        mds = [md(list(x.shape)) for x in (a, b, c)]
        desc = ctypes.create_string_buffer(16384)
        if lib.dnnl_matmul_desc_init(desc, mds[0], mds[1], None, mds[2]):
            raise OSError("dnnl_matmul_desc_init failed")
        pd, prim = vp(), vp()
        if lib.dnnl_primitive_desc_create(ctypes.byref(pd), desc, None, eng,
                                          None):
            raise OSError("dnnl_primitive_desc_create failed")
        lib.dnnl_primitive_create(ctypes.byref(prim), pd)
        mems = []
        for d, x in zip(mds, (a, b, c)):
            mem = vp()
            lib.dnnl_memory_create(ctypes.byref(mem), d, eng,
                                   vp(x.ctypes.data))
            mems.append(mem)
        args = (Arg * 3)(Arg(1, mems[0]), Arg(33, mems[1]), Arg(17, mems[2]))
        ex, wait = lib.dnnl_primitive_execute, lib.dnnl_stream_wait

        def run():
            ex(prim, strm, 3, args)
            wait(strm)
        return run
    return make


def openblas_candidate(threads):
    lib = _load("libopenblas.so.0", "libopenblas.so")
    lib.openblas_set_num_threads(threads)
    f = lib.cblas_sgemm
    i, fl, p = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    f.argtypes = [i, i, i, i, i, i, fl, p, i, p, i, fl, p, i]
    f.restype = None

    # 101 row-major, 111 no transpose
    return _per_matrix(lambda m, n, k, pa, pb, pc:
                       f(101, 111, 111, m, n, k, 1.0, pa, k, pb, n, 0.0, pc,
                         n))


def numpy_candidate(threads):
    def make(a, b, c):
        x, y = (a[0], b[0]) if a.shape[0] == 1 else (a, b)
        return lambda: np.matmul(x, y)
    return make


def jax_candidate(threads):
    import jax
    import jax.numpy as jnp
    f = jax.jit(jnp.matmul)

    def make(a, b, c):
        x, y = (a[0], b[0]) if a.shape[0] == 1 else (a, b)
        x, y = jax.device_put(x), jax.device_put(y)
        return lambda: f(x, y).block_until_ready()
    return make


CANDIDATES = [("tfmini", tfmini_candidate), ("eigen", eigen_candidate),
              ("dnnl_sgemm", dnnl_sgemm_candidate),
              ("dnnl_matmul", dnnl_matmul_candidate),
              ("openblas", openblas_candidate),
              ("numpy", numpy_candidate), ("jax", jax_candidate)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    peak, why = peak_gflops(args.threads)
    print(f"peak: {why}; x {args.threads} threads = {peak:.0f} GFLOP/s")
    try:
        import tfmini
        lib = ctypes.CDLL(tfmini._C.__file__)
        lib.tfm_gemm_backend.restype = ctypes.c_char_p
        print("tfmini's tf.matmul uses:",
              lib.tfm_gemm_backend().decode())
    except (ImportError, OSError, AttributeError) as e:
        print(f"tfmini: {e}")
    makers = {}
    for name, cand in CANDIDATES:
        try:
            makers[name] = cand(args.threads)
        except Exception as e:  # absent library: say so, compare the rest
            print(f"{name}: skipped ({type(e).__name__}: {e})")
    names = list(makers)
    print()
    print("| shape (b x m x k x n) | " + " | ".join(names)
          + " | best |")
    print("|---|" + "---|" * (len(names) + 1))
    rng = np.random.default_rng(0)
    for nb, m, k, n in SHAPES:
        a = rng.standard_normal((nb, m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        b = np.ascontiguousarray(np.broadcast_to(b, (nb, k, n)))
        want = a @ b
        flop = 2.0 * nb * m * n * k
        reps = max(3, min(args.reps * 20, int(args.reps * 2e9 / flop)))
        cells, rates = [], {}
        for name in names:
            c = np.zeros_like(want)
            run = makers[name](a, b, c)
            t = best_of(run, reps)
            got = run() if name in ("tfmini", "numpy", "jax") else None
            got = c if got is None else np.asarray(got).reshape(want.shape)
            ok = np.allclose(got, want, rtol=1e-3, atol=1e-3 * k ** 0.5)
            rates[name] = flop / t / 1e9
            cells.append(f"{t * 1e6:,.0f} us {rates[name]:.0f} GF/s"
                         + ("" if ok else " WRONG"))
        best = max(rates, key=rates.get)
        print(f"| {nb}x{m}x{k}x{n} | " + " | ".join(cells)
              + f" | {best} ({rates[best] / peak:.0%} of peak) |",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
