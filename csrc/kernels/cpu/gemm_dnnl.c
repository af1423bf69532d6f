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

#include "../../core/bfloat16.h"
#include "linalg.h"

/* The bfloat16 product without bfloat16 instructions: widen both
 * operands, multiply in float32, round once. The scratch is 2 bytes
 * more per element than the operands; at the sizes where that matters
 * the GEMM dominates anyway. */
static int
gemm_bf16_convert(int64_t m, int64_t n, int64_t k, const uint16_t *a,
                  int ta, const uint16_t *b, int tb, uint16_t *c)
{
    size_t na = (size_t)(m * k), nb = (size_t)(k * n), nc = (size_t)(m * n);
    float *w = malloc((na + nb + nc) * sizeof *w);
    if (!w) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "BatchMatMulV2: out of "
                  "memory widening a %lldx%lldx%lld bfloat16 product",
                  (long long)m, (long long)n, (long long)k);
        return -1;
    }
    float *fa = w, *fb = w + na, *fc = w + na + nb;
    for (size_t i = 0; i < na; i++)
        fa[i] = tfm_bf16_to_float(a[i]);
    for (size_t i = 0; i < nb; i++)
        fb[i] = tfm_bf16_to_float(b[i]);
    tfm_gemm_f32_best(m, n, k, fa, ta, fb, tb, fc);
    for (size_t i = 0; i < nc; i++)
        c[i] = tfm_float_to_bf16(fc[i]);
    free(w);
    return 0;
}

#ifdef TFMINI_WITH_DNNL
#include "dnnl_compat.h"

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

/* Which product TFMINI_GEMM (read once) asks for: oneDNN choosing by
 * shape (the default), Eigen, or oneDNN's sgemm / matmul primitive for
 * every float32 product (Note [Big float32 products]). 0: not yet read. */
enum { BACKEND_DNNL = 1, BACKEND_EIGEN, BACKEND_SGEMM, BACKEND_MATMUL };
static atomic_int backend;

static int
use_dnnl(void)
{
    int b = atomic_load_explicit(&backend, memory_order_relaxed);
    if (b == 0) {
        const char *e = getenv("TFMINI_GEMM");
        b = !e ? BACKEND_DNNL
            : strcmp(e, "eigen") == 0 ? BACKEND_EIGEN
            : strcmp(e, "sgemm") == 0 ? BACKEND_SGEMM
            : strcmp(e, "matmul") == 0 ? BACKEND_MATMUL : BACKEND_DNNL;
        atomic_store_explicit(&backend, b, memory_order_relaxed);
    }
    return b != BACKEND_EIGEN;
}

static int f32_use_prim(int64_t m, int64_t n, int64_t k);
static int gemm_prim(dnnl_data_type_t dt, int64_t m, int64_t n, int64_t k,
                     const void *a, int ta, const void *b, int tb, void *c);
static atomic_llong f32_prim_calls;

void
tfm_gemm_f32_best(int64_t m, int64_t n, int64_t k, const float *a, int ta,
                  const float *b, int tb, float *c)
{
    /* k == 0 is a zero fill, which Eigen's path already does; oneDNN's
     * leading dimensions must also be >= 1. */
    if (k > 0 && use_dnnl()) {
        if (m > 0 && n > 0 && f32_use_prim(m, n, k) &&
            gemm_prim(dnnl_f32, m, n, k, a, ta, b, tb, c)) {
            atomic_fetch_add_explicit(&f32_prim_calls, 1,
                                      memory_order_relaxed);
            return;
        }
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

/* ---- oneDNN's matmul primitive: bfloat16, and big float32 products ----
 * oneDNN 2.x has no BLAS-style bfloat16 call, so each bfloat16 product
 * builds a primitive from its shape; oneDNN's own primitive cache makes a
 * repeated shape cost a lookup. Its bf16 kernels accumulate in float32
 * and round the result once, which is what TF's CPU MatMul gives.
 *
 * Big float32 products with a team of threads take the same route (Note
 * [Big float32 products]). */
#include <pthread.h>

static dnnl_engine_t engine;
static int engine_ok;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void
engine_init(void)
{
    engine_ok = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success;
}

/* Memory descriptor of a row-major [rows, cols] operand stored
 * transposed when t is set. */
static dnnl_status_t
prim_md(tfm_md *md, dnnl_data_type_t dt, int64_t rows, int64_t cols, int t)
{
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {t ? 1 : cols, t ? rows : 1};
    return tfm_md_strides(md, 2, dims, dt, strides);
}

/* 2.x describes the matmul first; 3.x makes the primitive descriptor in
 * one call (dnnl_compat.h). */
static dnnl_status_t
matmul_pd(dnnl_primitive_desc_t *pd, tfm_cmd a, tfm_cmd b, tfm_cmd c)
{
#if TFM_DNNL3
    return dnnl_matmul_primitive_desc_create(pd, engine, a, b, NULL, c,
                                             NULL);
#else
    dnnl_matmul_desc_t desc;
    dnnl_status_t s = dnnl_matmul_desc_init(&desc, a, b, NULL, c);
    return s ? s : dnnl_primitive_desc_create(pd, &desc, NULL, engine,
                                              NULL);
#endif
}

/* c = op(a) @ op(b) over dt through the matmul primitive: 1 when oneDNN
 * computed c, 0 when it declined (the caller has another way). */
static int
gemm_prim(dnnl_data_type_t dt, int64_t m, int64_t n, int64_t k,
          const void *a, int ta, const void *b, int tb, void *c)
{
    pthread_once(&engine_once, engine_init);
    if (!engine_ok)
        return 0;
    tfm_md amd = {0}, bmd = {0}, cmd = {0};
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t am = NULL, bm = NULL, cm = NULL;
    int ok = 0;
    if (prim_md(&amd, dt, m, k, ta) || prim_md(&bmd, dt, k, n, tb) ||
        prim_md(&cmd, dt, m, n, 0) ||
        matmul_pd(&pd, TFM_MD(amd), TFM_MD(bmd), TFM_MD(cmd)) ||
        dnnl_primitive_create(&prim, pd) ||
        dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) ||
        dnnl_memory_create(&am, TFM_MD(amd), engine, (void *)a) ||
        dnnl_memory_create(&bm, TFM_MD(bmd), engine, (void *)b) ||
        dnnl_memory_create(&cm, TFM_MD(cmd), engine, c))
        goto done;
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
    team t;
#ifdef _OPENMP
    team_begin(&t, m * n * k <= SERIAL_WORK && !omp_in_parallel());
#else
    team_begin(&t, 0);
#endif
    ok = dnnl_primitive_execute(prim, stream, 3, args) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
    team_end(&t);
done:
    if (am) dnnl_memory_destroy(am);
    if (bm) dnnl_memory_destroy(bm);
    if (cm) dnnl_memory_destroy(cm);
    if (stream) dnnl_stream_destroy(stream);
    if (prim) dnnl_primitive_destroy(prim);
    if (pd) dnnl_primitive_desc_destroy(pd);
    tfm_md_free(&amd);
    tfm_md_free(&bmd);
    tfm_md_free(&cmd);
    return ok;
}

/* Note [Big float32 products]: dnnl_sgemm mallocs its packing buffers
 * (1.6 MB, 2 x 600 KB and 400 KB at 1024^3, some on each OpenMP thread)
 * on every call, and glibc's heaps keep growing for the first ~8 calls
 * of a new size before they hold the pattern: 300-900 first-touch page
 * faults a call at 1024^3, 0.4-1 ms of a 10 ms product (2 threads). A
 * short benchmark, or a program that multiplies a few big matrices,
 * sees only such calls. The matmul primitive draws its buffers from one
 * scratchpad that glibc hands back whole each call: measured (C, oneDNN
 * 3.2, the first 8 calls) 5,500 faults against 50 at 1024^3, and in
 * tfmini 0 a call after the first. Its kernels are not faster: in steady
 * state (2 threads, OMP_WAIT_POLICY=passive so that CPU time is work)
 * the primitive spent 0-4% more CPU than sgemm at 1024^3 and 5-8% more
 * at 2048^3, where sgemm's faults are under 1% of a call. So the
 * primitive takes products of PRIM_WORK to PRIM_WORK_MAX multiply-adds
 * run by a team; one thread (4% more CPU at 1024^3), bigger products and
 * the MLP and attention shapes below PRIM_WORK (small buffers, equal or
 * better speed, and a primitive descriptor costs microseconds) keep
 * sgemm. TFMINI_GEMM=sgemm never takes the primitive for float32,
 * TFMINI_GEMM=matmul always does (outside parallel regions): for tests
 * and comparisons. */
#define PRIM_WORK ((int64_t)1 << 28)
#define PRIM_WORK_MAX ((int64_t)1 << 31)

static int
f32_use_prim(int64_t m, int64_t n, int64_t k)
{
#ifdef _OPENMP
    if (omp_in_parallel())
        return 0;
    int b = atomic_load_explicit(&backend, memory_order_relaxed);
    if (b == BACKEND_MATMUL)
        return 1;
    int64_t work = m * n * k;
    return b == BACKEND_DNNL && omp_get_max_threads() > 1 &&
           work >= PRIM_WORK && work <= PRIM_WORK_MAX;
#else
    (void)m; (void)n; (void)k;
    return 0;
#endif
}

long long
tfm_gemm_f32_prim_calls(void)
{
    return atomic_load_explicit(&f32_prim_calls, memory_order_relaxed);
}

int
tfm_gemm_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int ta,
              const uint16_t *b, int tb, uint16_t *c)
{
    if (k > 0 && use_dnnl() &&
        gemm_prim(dnnl_bf16, m, n, k, a, ta, b, tb, c))
        return 0;
    return gemm_bf16_convert(m, n, k, a, ta, b, tb, c);
}

const char *
tfm_gemm_bf16_backend(void)
{
    if (!use_dnnl())
        return "convert";
    pthread_once(&engine_once, engine_init);
    return engine_ok ? "dnnl" : "convert";
}

const char *
tfm_gemm_backend(void)
{
    return use_dnnl() ? "dnnl" : "eigen";
}

#else

int
tfm_gemm_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int ta,
              const uint16_t *b, int tb, uint16_t *c)
{
    return gemm_bf16_convert(m, n, k, a, ta, b, tb, c);
}

const char *
tfm_gemm_bf16_backend(void)
{
    return "convert";
}

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

long long
tfm_gemm_f32_prim_calls(void)
{
    return 0;
}

#endif
