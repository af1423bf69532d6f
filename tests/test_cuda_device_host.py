"""device.c's allocator on the host (issue 21), without a GPU: device.c
built into a host program whose CUDA runtime calls are fakes that count
what they are asked, and every other symbol left unresolved (never
called), as tests/test_cuda_glue_host.py builds the kernel glue.

The out-of-memory retry synchronizes the stream and trims the pool
before a second try; while the stream is captured into a CUDA graph
(exec_cugraph.c) a synchronize is illegal and invalidates the capture,
so there the first failure must be the ResourceExhaustedError at once.
Also while capturing, cudaFreeAsync takes only the graph's own
allocations: other buffers freed then wait for the capture's end."""
import os
import shutil
import subprocess
import sys

import pytest
from cuda_host_util import cuda_include

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HARNESS = r"""
#include "kernels/cuda/device.c"

/* argv: capturing (0/1), how many cudaMallocAsync calls fail first,
 * whether cudaStreamIsCapturing itself fails. Prints the calls made and
 * the outcome: "malloc N sync N trim N meminfo N ok|oom CODE MESSAGE". */
static int capturing_now, fail_first, query_fails;
static int mallocs, syncs, trims, meminfos;
static char last_msg[512];
static tfm_code last_code;
static char block[64];

cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
    (void)n; (void)s;
    if (mallocs++ < fail_first)
        return cudaErrorMemoryAllocation;
    *p = block;
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t s,
                                  enum cudaStreamCaptureStatus *st)
{
    (void)s;
    if (query_fails)
        return cudaErrorInvalidResourceHandle;
    *st = capturing_now ? cudaStreamCaptureStatusActive
                        : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    syncs++;
    return capturing_now ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t p, size_t k)
{
    (void)p; (void)k;
    trims++;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
    meminfos++;
    *f = 5;
    *t = 80;
    return cudaSuccess;
}
/* While capturing, only the graph's own allocations (here: block) may
 * be freed, as cudaFreeAsync documents. */
static void *freed[8];
static int nfreed;
cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    (void)s;
    if (capturing_now && p != block)
        return cudaErrorInvalidValue;
    if (nfreed < 8)
        freed[nfreed++] = p;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { (void)d; return cudaSuccess; }
tfm_code tfm_error(tfm_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
}

/* "late": two buffers made before a capture and freed during it, then
 * an allocation after it. Prints what reached cudaFreeAsync when. */
static int
late_frees(void)
{
    tfm_gpu *g = &gpus[1];
    pthread_mutex_init(&g->lock, NULL);
    char a[1], b[1];
    g->current = 2;
    capturing_now = 1;
    gpu_free(&g->dev, a, 1);
    gpu_free(&g->dev, b, 1);
    printf("during %d", nfreed);
    capturing_now = 0;
    void *p = gpu_alloc(&g->dev, 100);
    printf(" after %d %s %s %s current %lld\n", nfreed,
           nfreed > 0 && freed[0] == a ? "a" : "-",
           nfreed > 1 && freed[1] == b ? "b" : "-", p ? "ok" : "oom",
           (long long)g->current);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "late"))
        return late_frees();
    if (argc != 4)
        return 2;
    capturing_now = atoi(argv[1]);
    fail_first = atoi(argv[2]);
    query_fails = atoi(argv[3]);
    tfm_gpu *g = &gpus[1];
    pthread_mutex_init(&g->lock, NULL);
    void *p = gpu_alloc(&g->dev, 100);
    printf("malloc %d sync %d trim %d meminfo %d ", mallocs, syncs, trims,
           meminfos);
    if (p)
        printf("ok %lld\n", (long long)g->current);
    else
        printf("oom %d %s\n", (int)last_code, last_msg);
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    inc = cuda_include()
    if not inc or not shutil.which("gcc") or not sys.platform.startswith(
            "linux"):
        pytest.skip("needs the CUDA toolkit's headers and gcc/GNU ld")
    d = tmp_path_factory.mktemp("device_c")
    (d / "h.c").write_text("#include <stdarg.h>\n" + HARNESS)
    # No PIE: the unresolved symbols (never called) must not need
    # dynamic relocations.
    r = subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-no-pie",
                        "-fno-pic", "-I", os.path.join(ROOT, "csrc"), "-I",
                        inc, str(d / "h.c"), "-o", str(d / "h"), "-lm",
                        "-lpthread", "-Wl,--unresolved-symbols=ignore-all"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(d / "h")


def _alloc(harness, capturing, fail_first, query_fails=0):
    r = subprocess.run([harness, str(capturing), str(fail_first),
                        str(query_fails)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r.stdout.strip()


def test_first_try_allocates(harness):
    assert _alloc(harness, 0, 0) == "malloc 1 sync 0 trim 0 meminfo 0 ok 100"


def test_failure_retries_after_sync_and_trim(harness):
    assert _alloc(harness, 0, 1) == "malloc 2 sync 1 trim 1 meminfo 0 ok 100"


def test_second_failure_is_resource_exhausted(harness):
    out = _alloc(harness, 0, 2)
    assert out.startswith("malloc 2 sync 1 trim 1 meminfo 1 oom "), out
    assert "OOM when allocating 100 bytes on GPU:0 (5 of 80 bytes free)" \
        in out, out


def test_frees_refused_while_capturing_go_on_the_stream_after(harness):
    """cudaFreeAsync during a capture takes only graph allocations: a
    buffer made before the capture and dropped during it must be freed
    once the capture is over, not leaked."""
    r = subprocess.run([harness, "late"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert r.stdout.strip() == "during 0 after 2 a b ok current 100", \
        r.stdout


@pytest.mark.parametrize("query_fails", [0, 1])
def test_no_sync_while_capturing(harness, query_fails):
    """Capturing (or not knowing): no synchronize, no trim, no second
    try, no memory query; the error says why."""
    out = _alloc(harness, 1, 1, query_fails)
    assert out.startswith("malloc 1 sync 0 trim 0 meminfo 0 oom "), out
    assert "while capturing a CUDA graph" in out, out
