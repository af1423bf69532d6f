/* float32 GEMM through oneDNN's dnnl_sgemm when the build found oneDNN.
 *
 * Why oneDNN (benchmarks/GEMM_CHOICE.md): measured side by side with
 * Eigen, OpenBLAS, NumPy and JAX, its JIT-generated kernels won the
 * small MLP/attention shapes and matched the best at the big squares,
 * and it threads with the OpenMP runtime tfmini already uses (a pthreads
 * BLAS would run its own pool beside ours, and two pools on the same
 * cores spin against each other). dnnl_sgemm rather than the matmul
 * primitive: it takes each call's shape directly, with no primitive to
 * create and cache per shape, and its cost per call is the same.
 *
 * Inside a parallel region (MatMul's per-batch loop) oneDNN runs on the
 * calling thread, so nesting needs no care here. */
#include "gemm_dnnl.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "linalg.h"

#ifdef TFMINI_WITH_DNNL
#include <dnnl.h>

/* Products below this many multiply-adds (about 10 us on one core) run
 * on the calling thread. oneDNN would split any product over every
 * OpenMP thread; in a loop body that is a fork and a join per step,
 * which on a quiet machine costs 1-2 us but on a busy one waits for a
 * descheduled thread's time slice (the RNN row's 32x128x128 step
 * product: 8 ms per iteration with the other core taken, 10 us
 * serial). Twice the Eigen shim's kParallelWork: only products whose
 * split saves several microseconds take that risk. */
#define SERIAL_WORK (128 * 128 * 64)

/* The OpenMP settings a oneDNN call runs under, and their restore.
 * oneDNN partitions a product for the team size it asks for and does
 * not support OMP_DYNAMIC=true: a team the runtime shrinks leaves parts
 * of the product unwritten (measured: NaNs in a 256x512x300 product).
 * So dynamic teams are off for the call, and serial calls ask for one
 * thread. Both settings belong to the calling thread: cheap to set. */
typedef struct team { int threads, dynamic; } team;

static void
team_begin(team *t, int serial)
{
#ifdef _OPENMP
    t->threads = serial ? omp_get_max_threads() : 0;
    t->dynamic = omp_get_dynamic();
    if (serial)
        omp_set_num_threads(1);
    if (t->dynamic)
        omp_set_dynamic(0);
#else
    (void)t; (void)serial;
#endif
}

static void
team_end(const team *t)
{
#ifdef _OPENMP
    if (t->threads)
        omp_set_num_threads(t->threads);
    if (t->dynamic)
        omp_set_dynamic(1);
#else
    (void)t;
#endif
}

/* 0: not yet read, 1: oneDNN, 2: Eigen (TFMINI_GEMM=eigen). */
static atomic_int backend;

static int
use_dnnl(void)
{
    int b = atomic_load_explicit(&backend, memory_order_relaxed);
    if (b == 0) {
        const char *e = getenv("TFMINI_GEMM");
        b = e && strcmp(e, "eigen") == 0 ? 2 : 1;
        atomic_store_explicit(&backend, b, memory_order_relaxed);
    }
    return b == 1;
}

void
tfm_gemm_f32_best(int64_t m, int64_t n, int64_t k, const float *a, int ta,
                  const float *b, int tb, float *c)
{
    /* k == 0 is a zero fill, which Eigen's path already does; oneDNN's
     * leading dimensions must also be >= 1. */
    if (k > 0 && use_dnnl()) {
        team t;
#ifdef _OPENMP
        team_begin(&t, m * n * k <= SERIAL_WORK && !omp_in_parallel());
#else
        team_begin(&t, 0);
#endif
        dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k,
                                     1.0f, a, ta ? m : k, b, tb ? k : n,
                                     0.0f, c, n);
        team_end(&t);
        if (s == dnnl_success)
            return;
        /* Sizes were checked by the caller; an unexpected refusal
         * still gets a correct product. */
    }
    tfm_gemm_f32(m, n, k, a, ta, b, tb, c);
}

int
tfm_gemm_f32_conv(int trans_a, int64_t M, int64_t N, int64_t K,
                  const float *A, int64_t lda, const float *B, int64_t ldb,
                  float *C, int64_t ldc, int accumulate)
{
    if (M <= 0 || N <= 0 || K <= 0 || !use_dnnl())
        return 0;
    /* The conv kernels split the work themselves: one thread here. */
    team t;
#ifdef _OPENMP
    team_begin(&t, !omp_in_parallel());
#else
    team_begin(&t, 0);
#endif
    dnnl_status_t s = dnnl_sgemm(trans_a ? 'T' : 'N', 'N', M, N, K, 1.0f, A,
                                 lda, B, ldb, accumulate ? 1.0f : 0.0f, C,
                                 ldc);
    team_end(&t);
    return s == dnnl_success;
}

const char *
tfm_gemm_backend(void)
{
    return use_dnnl() ? "dnnl" : "eigen";
}

#else

void
tfm_gemm_f32_best(int64_t m, int64_t n, int64_t k, const float *a, int ta,
                  const float *b, int tb, float *c)
{
    tfm_gemm_f32(m, n, k, a, ta, b, tb, c);
}

int
tfm_gemm_f32_conv(int trans_a, int64_t M, int64_t N, int64_t K,
                  const float *A, int64_t lda, const float *B, int64_t ldb,
                  float *C, int64_t ldc, int accumulate)
{
    return 0;
}

const char *
tfm_gemm_backend(void)
{
    return "eigen";
}

#endif
