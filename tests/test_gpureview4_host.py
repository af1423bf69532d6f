"""The device run made to count (issue 21), checked without a GPU:
tools/gpu_check.sh's files and early exits, and CUDA glue built into
host programs with the CUDA calls faked (the pattern of
test_cuda_glue_host.py)."""
import os
import re
import subprocess

import pytest

from cuda_host_util import ROOT, cuda_include, nvcc

GPU_CHECK = os.path.join(ROOT, "tools", "gpu_check.sh")


def _read(path):
    with open(path) as f:
        return f.read()


def _fake_bin(tmp_path, **scripts):
    """A folder of executable shell scripts, named by the keywords."""
    d = tmp_path / "bin"
    d.mkdir()
    for name, body in scripts.items():
        (d / name).write_text("#!/bin/bash\n" + body)
        (d / name).chmod(0o755)
    return d


FAKE_SMI = "echo 'GPU 0: Fake GPU (UUID: GPU-0)'\n"


def _gpu_check(tmp_path, bindir, **env_changes):
    """gpu_check.sh run with bindir's fakes first on PATH and its logs in
    tmp_path/out; env_changes set variables (None unsets one)."""
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), EIGEN3_INCLUDE_DIR=str(tmp_path),
               PATH=f"{bindir}:{os.environ.get('PATH', '')}")
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    r = subprocess.run(["bash", GPU_CHECK], env=env, capture_output=True,
                       text=True, timeout=120)
    return r, out


def test_gpu_check_writes_at_most_eight_files():
    """A device run brings back 8 files of $OUT at most: more, and which
    ones come back (summary.txt among them?) is not ours to choose."""
    src = _read(GPU_CHECK)
    names = set(re.findall(r'\$OUT/([\w.-]+)', src))
    assert names and len(names) <= 8, sorted(names)
    assert "summary.txt" in src and "$SUMMARY" in src


def test_gpu_check_asks_the_cuda_runtime_before_building(tmp_path):
    """With a GPU listed by nvidia-smi but a CUDA runtime that finds none
    (here: no driver at all; on a device, a toolkit newer than its
    driver), the script stops before the build, naming CUDA's reason,
    instead of after minutes of compiling."""
    bindir = _fake_bin(tmp_path, **{"nvidia-smi": FAKE_SMI})
    r, out = _gpu_check(tmp_path, bindir)
    summary = (out / "summary.txt").read_text()
    assert not (out / "build.log").exists(), summary
    if nvcc() and cuda_include():
        assert r.returncode == 5, r.stdout + r.stderr
        assert "cudaGetDeviceCount" in summary, summary
        assert "sees no GPU" in r.stdout
    else:
        # No toolkit: setup.py's own refusal, before the build too.
        assert r.returncode == 3, r.stdout + r.stderr
        assert "setup.py stops" in summary, summary
    assert len(os.listdir(out)) <= 8


def test_gpu_check_reruns_each_file_after_a_crash(tmp_path):
    """A segfault (or a sticky CUDA error) in the one pytest process of
    tests/gpu would cost every file after it: the files then run again,
    each in a process of its own, and the run counts their results."""
    smi = FAKE_SMI
    # python3: the dir run dies of SIGSEGV; a file run passes; the
    # probes, the build and the benchmarks succeed at once.
    py = ('case " $* " in\n'
          '*" tests/gpu "*"not slow"*) echo "Fatal Python error: '
          'Segmentation fault"; exit 139;;\n'
          '*" -m pytest "*) echo "3 passed in 0.01s"; exit 0;;\n'
          'esac\nexit 0\n')
    bindir = _fake_bin(tmp_path, **{"nvidia-smi": smi, "python3": py})
    r, out = _gpu_check(tmp_path, bindir)
    summary = (out / "summary.txt").read_text()
    assert "each file again" in summary, summary
    files = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "gpu"))
                   if f.startswith("test_gpu_") and f.endswith(".py")
                   and f not in ("test_gpu_conv.py", "test_gpu_fused.py"))
    for f in files:
        assert f"tests/gpu/{f} rc=0: 3 passed" in summary, (f, summary)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(os.listdir(out)) <= 8, os.listdir(out)


def test_gpu_check_counts_a_failure_seen_only_in_the_rerun(tmp_path):
    """The per-file rerun's failures are the run's result."""
    py = ('case " $* " in\n'
          '*" tests/gpu "*"not slow"*) echo "an illegal memory access '
          'was encountered"; exit 1;;\n'
          '*"test_gpu_index.py"*) echo "1 failed in 0.01s"; exit 1;;\n'
          '*" -m pytest "*) echo "3 passed in 0.01s"; exit 0;;\n'
          'esac\nexit 0\n')
    bindir = _fake_bin(tmp_path, **{"nvidia-smi": FAKE_SMI, "python3": py})
    r, out = _gpu_check(tmp_path, bindir)
    summary = (out / "summary.txt").read_text()
    assert "tests/gpu/test_gpu_index.py rc=1: 1 failed" in summary, summary
    assert r.returncode == 1, r.stdout + r.stderr


CUDNN_START_HARNESS = r"""
/* conv_cudnn.c's handle on the host, cudnnCreate faked: argv[1] is the
 * status it returns. Prints, for two convolutions in turn, whether a
 * handle came back, whether the call is a gap (host copies), and how
 * many times cudnnCreate ran. */
#define TFMINI_WITH_CUDNN 1
#include "kernels/cuda/conv_cudnn.c"
#include <stdio.h>
#include <stdlib.h>

const tfm_op_def tfm_ops[TFM_OP_COUNT];
static int creates, status;
tfm_code tfm_error(tfm_code c, const char *fmt, ...) { (void)fmt; return c; }
cudnnStatus_t cudnnCreate(cudnnHandle_t *h)
{ creates++; *h = status ? NULL : (cudnnHandle_t)&creates;
  return (cudnnStatus_t)status; }
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s)
{ (void)h; (void)s; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) { (void)h; return 0; }
const char *cudnnGetErrorString(cudnnStatus_t s) { (void)s; return "fake"; }

int main(int argc, char **argv)
{
    (void)argc;
    status = atoi(argv[1]);
    tfm_gpu gpu;
    memset(&gpu, 0, sizeof gpu);
    gpu.dev.index = 1;
    for (int i = 0; i < 2; i++) {
        unsupported = 0;
        cudnnHandle_t h = handle_of(TFM_OP_CONV2D, &gpu);
        printf("%d %d %d\n", h != NULL, unsupported, creates);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def cudnn_start(tmp_path_factory):
    from cuda_host_util import gcc_cuda_program
    inc = cuda_include()
    if not inc or not any(os.path.exists(os.path.join(d, "cudnn.h"))
                          for d in (inc, "/usr/include",
                                    "/usr/local/include")):
        pytest.skip("needs cudnn.h")
    return gcc_cuda_program(tmp_path_factory, "cudnn_start",
                            CUDNN_START_HARNESS)


@pytest.mark.parametrize("status, rows", [
    # Works: one handle, made once.
    (0, [(1, 0, 1), (1, 0, 1)]),
    # cuDNN 9's "cannot start here" statuses: a sub-library that fails to
    # load or is of another version, not initialized, a driver too old:
    # a gap (the op runs on host copies), and cudnnCreate is not asked
    # again.
    (1008, [(0, 1, 1), (0, 1, 1)]),
    (1002, [(0, 1, 1), (0, 1, 1)]),
    (1001, [(0, 1, 1), (0, 1, 1)]),
    (3005, [(0, 1, 1), (0, 1, 1)]),
    # Out of device memory: an error, and the next call tries again.
    (4004, [(0, 0, 1), (0, 0, 2)]),
])
def test_cudnn_that_cannot_start_is_a_gap_asked_once(cudnn_start, status,
                                                     rows):
    r = subprocess.run([cudnn_start, str(status)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = [tuple(map(int, ln.split())) for ln in r.stdout.splitlines()]
    assert got == rows


REDUCE_GLUE_HARNESS = r"""
/* kernels.c's k_reduce on the host, reduce.cu's two launchers faked:
 * the partial results of a split reduction come from ctx->scratch_alloc
 * (the GPU's allocator), reach the launcher, and go back after it; when
 * the allocator refuses, the op fails with its ResourceExhausted and
 * launches nothing. argv: the scratch bytes the fake query answers, and
 * 1 to make the allocator refuse. */
#include "kernels/cuda/kernels.c"
#include "kernels/cpu/reduce.c"
#include "kernels/cpu/shape_copy.c"
#include "core/shape.c"
#include "core/status.c"
#include <stdio.h>
#include <stdlib.h>

const tfm_op_def tfm_ops[TFM_OP_COUNT];
static int64_t answer;
static int refuse, launches, allocs, frees;
static void *given, *freed;
static size_t freed_n;
void tfm_gpu_use(const tfm_gpu *g) { (void)g; }
int64_t tfm_cu_reduce_scratch(int kind, int ty, int nkeep,
                              const int64_t *kdims, int nred,
                              const int64_t *rdims)
{ (void)kind; (void)ty; (void)nkeep; (void)kdims; (void)nred; (void)rdims;
  return answer; }
int tfm_cu_reduce(int kind, int ty, const void *x, void *o, int nkeep,
                  const int64_t *kdims, const int64_t *kstr, int nred,
                  const int64_t *rdims, const int64_t *rstr, void *scratch,
                  void *stream)
{ (void)kind; (void)ty; (void)x; (void)o; (void)nkeep; (void)kdims;
  (void)kstr; (void)nred; (void)rdims; (void)rstr; (void)stream;
  launches++; given = scratch; return 0; }
static void *alloc(const tfm_kctx *c, size_t n)
{ (void)c; allocs++;
  if (refuse) {
      tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes "
                "on GPU:0", n);
      return NULL;
  }
  return malloc(n); }
static void release(const tfm_kctx *c, void *p, size_t n)
{ (void)c; frees++; freed = p; freed_n = n; }

int main(int argc, char **argv)
{
    (void)argc;
    answer = atoll(argv[1]);
    refuse = atoi(argv[2]);
    static float xs[4 * 100000], os[4];
    tfm_buffer xb = {.refcount = 1, .data = xs};
    tfm_buffer ob = {.refcount = 1, .data = os};
    tfm_tensor x = {.dtype = TFM_FLOAT32, .buf = &xb};
    tfm_tensor o = {.dtype = TFM_FLOAT32, .buf = &ob};
    x.shape.ndim = 2;
    x.shape.dims[0] = 4;
    x.shape.dims[1] = 100000;
    o.shape.ndim = 1;
    o.shape.dims[0] = 4;
    tfm_attrs a;
    memset(&a, 0, sizeof a);
    a.n_ints = 1;
    a.ints[0] = 1;
    tfm_gpu gpu;
    memset(&gpu, 0, sizeof gpu);
    tfm_kctx ctx = {.device = &gpu.dev, .scratch_alloc = alloc,
                    .scratch_free = release};
    tfm_tensor *in[1] = {&x}, *out[1] = {&o};
    tfm_code rc = k_reduce(TFM_OP_SUM, in, 1, &a, out, 1, &ctx);
    printf("%d %d %d %d %d %d %d\n",
           rc == TFM_OK ? 0 : rc == TFM_ERR_RESOURCE_EXHAUSTED ? 1 : 2,
           launches, allocs, frees, given != NULL,
           given == freed && given != NULL, (int)freed_n);
    if (rc)
        printf("%s\n", tfm_error_message());
    return 0;
}
"""


@pytest.fixture(scope="module")
def reduce_glue(tmp_path_factory):
    from cuda_host_util import gcc_cuda_program
    return gcc_cuda_program(tmp_path_factory, "reduce_glue",
                            REDUCE_GLUE_HARNESS)


def _run(prog, *args):
    r = subprocess.run([prog] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_reduce_partials_come_from_the_gpu_allocator(reduce_glue):
    # Split: the bytes asked are allocated, handed to the launcher, and
    # freed with the same size after it is queued.
    assert _run(reduce_glue, 4096, 0) == ["0 1 1 1 1 1 4096"]
    # Not split: no allocation at all.
    assert _run(reduce_glue, 0, 0) == ["0 1 0 0 0 0 0"]


def test_reduce_out_of_gpu_memory_is_resource_exhausted(reduce_glue):
    # The allocator's error (ResourceExhausted naming the bytes; the
    # dispatcher prefixes the op), and nothing launched.
    lines = _run(reduce_glue, 4096, 1)
    assert lines[0] == "1 0 1 0 0 0 0", lines
    assert "OOM when allocating 4096 bytes on GPU:0" in lines[1], lines


def test_only_the_allocator_takes_device_memory():
    """reduce.cu took its partials with cudaMallocAsync: no OOM retry, no
    counters, and outside device.c's rules for a CUDA graph capture.
    Every .cu and glue file now goes through the allocator (device.c)."""
    cuda_dir = os.path.join(ROOT, "csrc", "kernels", "cuda")
    bad = []
    for name in sorted(os.listdir(cuda_dir)):
        if name == "device.c" or not name.endswith((".cu", ".c", ".cuh")):
            continue
        src = re.sub(r"/\*.*?\*/|//[^\n]*", "", _read(
            os.path.join(cuda_dir, name)), flags=re.S)
        if re.search(r"\bcuda(Malloc|MallocAsync|Free|FreeAsync)\s*\(",
                     src):
            bad.append(name)
    assert not bad, bad


REDUCE_SCRATCH_HARNESS = r"""
/* reduce.cu's scratch query against its own launch plan: bytes exactly
 * when the plan splits each output over several blocks (nout * chunks
 * partials of the accumulator's type), and a split launch given no
 * scratch refuses (-1) before launching anything. */
#include "kernels/cuda/reduce.cu"
#include <stdio.h>

int main(void)
{
    const int64_t nouts[] = {1, 3, 100, 511, 512, 4096, 200000};
    const int64_t counts[] = {0, 10, 64, 65535, 65536, 1000000};
    const int tys[] = {TFM_CU_F32, TFM_CU_F64, TFM_CU_F16, TFM_CU_BF16};
    const int sizes[] = {4, 8, 4, 4};
    int bad = 0, split = 0;
    for (int kind = 0; kind <= K_ANY; kind++)
        for (int t = 0; t < 4; t++)
            for (int a = 0; a < 7; a++)
                for (int b = 0; b < 6; b++) {
                    int64_t kd[1] = {nouts[a]}, rd[1] = {counts[b]};
                    int64_t ks[1] = {counts[b]}, rs[1] = {1};
                    red_plan p;
                    plan_of(kind, 1, kd, ks, 1, rd, rs, &p);
                    int64_t chunks = 1, per = 0;
                    int blocks = launch_shape(p, &chunks, &per);
                    int64_t acc = kind >= K_ALL ? 4 : sizes[t];
                    int64_t want = blocks && chunks > 1
                                   ? nouts[a] * chunks * acc : 0;
                    int64_t got = tfm_cu_reduce_scratch(kind, tys[t], 1, kd,
                                                        1, rd);
                    if (got != want) {
                        printf("kind %d ty %d nout %lld count %lld: %lld "
                               "bytes, want %lld\n", kind, tys[t],
                               (long long)nouts[a], (long long)counts[b],
                               (long long)got, (long long)want);
                        bad++;
                    }
                    if (want) {
                        split++;
                        int rc = tfm_cu_reduce(kind, tys[t], NULL, NULL, 1,
                                               kd, ks, 1, rd, rs, NULL,
                                               NULL);
                        if (rc != -1) {
                            printf("kind %d: split launch without scratch "
                                   "gave %d\n", kind, rc);
                            bad++;
                        }
                    }
                }
    printf("%d bad, %d split\n", bad, split);
    return bad != 0;
}
"""


def test_reduce_scratch_query_matches_the_launch_plan(tmp_path_factory):
    from cuda_host_util import nvcc_program
    prog, _ = nvcc_program(tmp_path_factory, "reduce_scratch",
                           REDUCE_SCRATCH_HARNESS, gencode="compute_80")
    r = subprocess.run([prog], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    # Some shapes split (a full reduction of many elements), most not.
    assert r.stdout.startswith("0 bad,") and " 0 split" not in r.stdout, \
        r.stdout


MN_SHIFT_HARNESS = r"""
/* random.cu's Multinomial passes on the host, in the launcher's order:
 * a row wider than MN_CHUNK takes its shift from chunk maxima
 * (mn_shift_part over [batch, chunks], kept in cdf, then mn_shift_join),
 * a narrow one from mn_shift, the serial body whose draws are the CPU's
 * (tests/test_random_cuda_host.py). Both ways are run on the same
 * logits: the shifts must be the same doubles and the samples the same.
 * stdin: ty batch classes n, then the logits as doubles; stdout: the
 * two ways' shift bits and samples, one way a line. */
#include "kernels/cuda/random.cu"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
run(int wide_rows, int ty, const void *x, int64_t batch, int64_t classes,
    int64_t n, double *scratch, int64_t *o)
{
    stream_at s;
    s.key = 0x0123456789abcdefULL;
    s.ctr.lo = 42;
    s.ctr.hi = 7;
    double *cdf = scratch, *shift = scratch + batch * classes,
           *total = shift + batch;
    if (wide_rows) {
        int64_t chunks = (classes + MN_CHUNK - 1) / MN_CHUNK;
        for (int64_t e = 0; e < batch * chunks; e++)
            mn_shift_part(x, ty, e, classes, chunks, cdf);
        for (int64_t b = 0; b < batch; b++)
            mn_shift_join(cdf, b, chunks, shift);
    } else {
        for (int64_t b = 0; b < batch; b++)
            mn_shift(x, ty, b, classes, shift);
    }
    for (int64_t e = 0; e < batch * classes; e++)
        mn_weight(x, ty, e, classes, shift, cdf);
    for (int64_t b = 0; b < batch; b++)
        mn_scan(cdf, b, classes, total);
    int64_t m_end = batch * n;
    for (int64_t t = 0; t < (m_end + 1) / 2; t++)
        mn_samples(s, t, cdf, total, classes, n, m_end, 1, o);
}

int main(void)
{
    int ty;
    long long batch, classes, n;
    if (scanf("%d %lld %lld %lld", &ty, &batch, &classes, &n) != 4)
        return 2;
    int64_t cnt = batch * classes;
    size_t es = ty == TFM_CU_F64 ? 8 : ty == TFM_CU_F32 ? 4 : 2;
    unsigned char *x = (unsigned char *)malloc(cnt * es + 1);
    for (int64_t i = 0; i < cnt; i++) {
        double v;
        if (scanf("%lf", &v) != 1)
            return 3;
        if (ty == TFM_CU_F64)
            memcpy(x + i * 8, &v, 8);
        else if (ty == TFM_CU_F32) {
            float f = (float)v;
            memcpy(x + i * 4, &f, 4);
        } else {
            __half h = __double2half(v);
            memcpy(x + i * 2, &h, 2);
        }
    }
    for (int way = 0; way < 2; way++) {
        double *scratch = (double *)malloc((cnt + 2 * batch) * 8);
        int64_t *o = (int64_t *)malloc((batch * n + 1) * 8);
        run(way, ty, x, batch, classes, n, scratch, o);
        for (int64_t b = 0; b < batch; b++) {
            unsigned long long bits;
            memcpy(&bits, scratch + cnt + b, 8);
            printf("%llx ", bits);
        }
        printf("|");
        for (int64_t m = 0; m < batch * n; m++)
            printf(" %lld", (long long)o[m]);
        printf("\n");
        free(scratch);
        free(o);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def mn_shift(tmp_path_factory):
    from cuda_host_util import nvcc_program
    prog, _ = nvcc_program(tmp_path_factory, "mn_shift", MN_SHIFT_HARNESS,
                           gencode="compute_80")
    return prog


def _logits(rng, kind, batch, classes):
    x = rng.standard_normal((batch, classes)) * 4
    if kind == "ties":
        # The largest value several times, in several chunks, and +-0
        # as the largest of a row.
        x[:, ::97] = 9.5
        x[0] = -np.abs(x[0]) - 1
        x[0, 5] = -0.0
        x[0, 300 % classes] = 0.0
    elif kind == "specials":
        x[:, ::3] = np.inf
        x[:, 1::5] = np.nan
        x[:, 2::7] = -np.inf
        x[-1] = np.nan          # a row without a finite logit
    elif kind == "huge":
        x = x * 1e300
    return x


import numpy as np  # noqa: E402


@pytest.mark.parametrize("classes", [257, 511, 512, 513, 1000, 4099])
@pytest.mark.parametrize("kind", ["plain", "ties", "specials", "huge"])
@pytest.mark.parametrize("ty", [0, 1, 2])      # launch.h's F32, F64, F16
def test_multinomial_wide_rows_shift_in_parallel_as_the_cpu(
        mn_shift, classes, kind, ty):
    rng = np.random.default_rng(classes * 7 + ty)
    batch, n = 3, 9
    x = _logits(rng, kind, batch, classes)
    text = f"{ty} {batch} {classes} {n}\n" + " ".join(
        repr(float(v)) for v in x.ravel()) + "\n"
    r = subprocess.run([mn_shift], input=text, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    serial, chunked = r.stdout.splitlines()
    assert chunked == serial


@pytest.mark.parametrize("workers, want", [(None, "-n 4"), ("0", None)])
def test_gpu_check_spreads_the_long_steps_over_xdist_workers(
        tmp_path, workers, want):
    """Where pytest-xdist is importable (the GPU image has it), the two
    long pytest steps run on GPU_CHECK_WORKERS workers, each with its
    share of the OpenMP threads; GPU_CHECK_WORKERS=0 keeps one process.
    The short conv and fused steps stay in one process."""
    log = tmp_path / "calls"
    py = (f'echo "OMP=${{OMP_NUM_THREADS:-}} $*" >> {log}\n'
          'case " $* " in *" -m pytest "*) echo "1 passed";; esac\nexit 0\n')
    bindir = _fake_bin(tmp_path, **{"nvidia-smi": FAKE_SMI, "python3": py,
                                    "nproc": "echo 16\n"})
    changes = {"OMP_NUM_THREADS": None}
    if workers is not None:
        changes["GPU_CHECK_WORKERS"] = workers
    r, out = _gpu_check(tmp_path, bindir, **changes)
    assert r.returncode == 0, r.stdout + r.stderr
    calls = [c for c in log.read_text().splitlines() if "-m pytest" in c]
    long_ = [c for c in calls if " tests/gpu " in c + " "]
    short = [c for c in calls if "test_gpu_conv.py" in c.split("--")[0]
             or "test_gpu_fused.py" in c.split("--")[0]]
    assert len(long_) == 2 and short, calls
    for c in long_:
        if want:
            assert want in c and c.startswith("OMP=4 "), c
        else:
            assert " -n " not in c and c.startswith("OMP=16 "), c
    assert all(" -n " not in c for c in short), short
