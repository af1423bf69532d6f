/* Microbenchmark: the float32 filter gradient of a stride-1 NHWC conv,
 * oneDNN's backward-weights primitive against the shifted-window GEMM
 * formulation (csrc/kernels/cpu/conv_filter_grad_gemm.c: per image and
 * tap, one dnnl_sgemm of a row window of x against dy, minus the rows
 * whose tap fell in the padding).
 *
 *   gcc -O2 -fopenmp benchmarks/conv_filter_grad_bench.c \
 *       -I$PREFIX/include -L$PREFIX/lib -Wl,-rpath,$PREFIX/lib -ldnnl \
 *       -o /tmp/fgb
 *   OMP_NUM_THREADS=2 /tmp/fgb [n h w c o k reps]
 *
 * PREFIX: where the onednn wheels put include/dnnl.h and lib/libdnnl.so
 * (python3 -c "import sys; print(sys.prefix)"). Default shape: the
 * ResNet block of benchmarks/bench_models.py (mb32 ic64 oc64 32x32 k3 p1).
 * Prints the median ms of each method (and of the window kernel with
 * the bias gradient in its pass) and the largest difference. */
#include <dnnl.h>
#include "../csrc/kernels/cpu/conv_filter_grad_gemm.c"
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now(void)
{
    /* BENCH_CPU=1: process CPU time, steadier on a shared machine (one
     * thread only: a team's spinning threads would count too) */
    static int cpu = -1;
    if (cpu < 0)
        cpu = getenv("BENCH_CPU") && atoi(getenv("BENCH_CPU"));
    struct timespec t;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int
cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define CHECK(s)                                                         \
    do {                                                                 \
        if ((s) != dnnl_success) {                                       \
            fprintf(stderr, "%s:%d oneDNN failed\n", __FILE__, __LINE__); \
            exit(1);                                                     \
        }                                                                \
    } while (0)

static int64_t N, H, W, C, O, K, P;

/* Accumulates one image's nine taps into df[K*K][C][O] (hwio). */
static void
image_taps(const float *x, const float *dy, float *df)
{
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < K; j++) {
            int64_t di = i - P, dj = j - P;
            int64_t h0 = di < 0 ? -di : 0, h1 = di > 0 ? H - di : H;
            if (h1 <= h0)
                continue;
            int64_t a = dj < 0 ? -dj : 0, b = dj > 0 ? dj : 0;
            int64_t r0 = h0 * W + a, r1 = h1 * W - b;
            float *d = df + (i * K + j) * C * O;
            const float *xs = x + ((h0 + di) * W + a + dj) * C;
            dnnl_sgemm('T', 'N', C, O, r1 - r0, 1.0f, xs, C, dy + r0 * O, O, 1.0f, d, O);
            /* the rows whose tap fell off the row's edge */
            for (int64_t w = 0; w < W; w++) {
                if (w + dj >= 0 && w + dj < W)
                    continue;
                int64_t hs = h0, he = h1;
                if (dj < 0)
                    hs++; /* row h0's leading columns were not in r0.. */
                else
                    he--;
                if (he <= hs)
                    continue;
                dnnl_sgemm('T', 'N', C, O, he - hs, -1.0f,
                           x + ((hs + di) * W + w + dj) * C, W * C,
                           dy + (hs * W + w) * O, W * O, 1.0f, d, O);
            }
        }
}

static void
gemm_grad(const float *x, const float *dy, float *df, float *part, int nt)
{
    int64_t fsz = K * K * C * O;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num();
        float *mine = part + t * fsz;
        memset(mine, 0, fsz * sizeof(float));
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++)
            image_taps(x + n * H * W * C, dy + n * H * W * O, mine);
    }
    memcpy(df, part, fsz * sizeof(float));
    for (int t = 1; t < nt; t++)
        for (int64_t k = 0; k < fsz; k++)
            df[k] += part[t * fsz + k];
}

int
main(int argc, char **argv)
{
    int64_t v[7] = {32, 32, 32, 64, 64, 3, 30};
    for (int i = 1; i < argc && i <= 7; i++)
        v[i - 1] = atoll(argv[i]);
    N = v[0], H = v[1], W = v[2], C = v[3], O = v[4], K = v[5];
    int reps = (int)v[6];
    setenv("TFMINI_CONV", "window", 1); /* every shape, not the rule's */
    P = (K - 1) / 2;
    int nt = omp_get_max_threads();
    size_t nx = N * H * W * C, ny = N * H * W * O, nf = K * K * C * O;
    float *x = malloc(nx * 4), *dy = malloc(ny * 4), *f1 = malloc(nf * 4),
          *f2 = malloc(nf * 4), *part = malloc(nf * 4 * nt);
    srand(1);
    for (size_t i = 0; i < nx; i++)
        x[i] = rand() / (float)RAND_MAX - 0.5f;
    for (size_t i = 0; i < ny; i++)
        dy[i] = rand() / (float)RAND_MAX - 0.5f;

    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    dnnl_dims_t sd = {N, C, H, W}, dd = {N, O, H, W}, wd = {O, C, K, K};
    dnnl_dims_t s1 = {1, 1}, d0 = {0, 0}, pl = {P, P}, pr = {K - 1 - P,
                                                             K - 1 - P};
    dnnl_memory_desc_t smd, dmd, wany, wplain;
    CHECK(dnnl_memory_desc_create_with_tag(&smd, 4, sd, dnnl_f32, dnnl_nhwc));
    CHECK(dnnl_memory_desc_create_with_tag(&dmd, 4, dd, dnnl_f32, dnnl_nhwc));
    CHECK(dnnl_memory_desc_create_with_tag(&wany, 4, wd, dnnl_f32,
                                           dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_create_with_tag(&wplain, 4, wd, dnnl_f32,
                                           dnnl_hwio));
    dnnl_primitive_desc_t hint, pd, rpd;
    CHECK(dnnl_convolution_forward_primitive_desc_create(
        &hint, eng, dnnl_forward_training, dnnl_convolution_direct, smd, wany,
        NULL, dmd, s1, d0, pl, pr, NULL));
    CHECK(dnnl_convolution_backward_weights_primitive_desc_create(
        &pd, eng, dnnl_convolution_direct, smd, wany, NULL, dmd, s1, d0, pl,
        pr, hint, NULL));
    const char *impl;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    const_dnnl_memory_desc_t wprim = dnnl_primitive_desc_query_md(
        pd, dnnl_query_diff_weights_md, 0);
    CHECK(dnnl_reorder_primitive_desc_create(&rpd, wprim, eng, wplain, eng,
                                             NULL));
    dnnl_primitive_t prim, reo;
    CHECK(dnnl_primitive_create(&prim, pd));
    CHECK(dnnl_primitive_create(&reo, rpd));
    void *wbuf = malloc(dnnl_memory_desc_get_size(wprim));
    dnnl_memory_t mx, mdy, mw, mf;
    CHECK(dnnl_memory_create(&mx, smd, eng, x));
    CHECK(dnnl_memory_create(&mdy, dmd, eng, dy));
    CHECK(dnnl_memory_create(&mw, wprim, eng, wbuf));
    CHECK(dnnl_memory_create(&mf, wplain, eng, f1));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, mx}, {DNNL_ARG_DIFF_DST, mdy},
                               {DNNL_ARG_DIFF_WEIGHTS, mw}};
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, mw}, {DNNL_ARG_TO, mf}};

    double *ta = malloc(reps * sizeof(double)),
           *tb = malloc(reps * sizeof(double)),
           *tc = malloc(reps * sizeof(double)),
           *td = malloc(reps * sizeof(double));
    float *f3 = malloc(nf * 4), *f4 = malloc(nf * 4), *db = malloc(O * 4);
    tfm_conv_geom g = {N, H, W, C, K, K, O, 1, 1, 1, 1, H, W, P, P, 1};
    for (int r = -2; r < reps; r++) {
        double t0 = now();
        CHECK(dnnl_primitive_execute(prim, st, 3, args));
        CHECK(dnnl_primitive_execute(reo, st, 2, rargs));
        CHECK(dnnl_stream_wait(st));
        double t1 = now();
        gemm_grad(x, dy, f2, part, nt);
        double t2 = now();
        if (tfm_conv_filter_grad_window_f32(&g, x, dy, f3) != 1)
            exit(1);
        double t3 = now();
        /* the same pass with the bias gradient (_Conv2DBackpropFilterBias) */
        if (tfm_conv_filter_grad_bias_window_f32(&g, x, dy, f4, db) != 1)
            exit(1);
        double t4 = now();
        if (r >= 0)
            ta[r] = t1 - t0, tb[r] = t2 - t1, tc[r] = t3 - t2, td[r] = t4 - t3;
    }
    qsort(td, reps, sizeof(double), cmp);
    double dbd = 0;
    for (int64_t o = 0; o < O; o++) {
        double s = 0;
        for (int64_t p = 0; p < N * H * W; p++)
            s += dy[p * O + o];
        dbd = fmax(dbd, fabs(s - db[o]));
    }
    for (size_t i = 0; i < nf; i++)
        if (f3[i] != f4[i]) {
            fprintf(stderr, "the bias pass changed df\n");
            exit(1);
        }
    qsort(ta, reps, sizeof(double), cmp);
    qsort(tb, reps, sizeof(double), cmp);
    qsort(tc, reps, sizeof(double), cmp);
    double diff = 0, diff3 = 0, mag = 0;
    for (size_t i = 0; i < nf; i++) {
        diff = fmax(diff, fabs(f1[i] - f2[i]));
        diff3 = fmax(diff3, fabs(f1[i] - f3[i]));
        mag = fmax(mag, fabs(f1[i]));
    }
    double gf = 2.0 * N * H * W * C * O * K * K * 1e-9;
    printf("n%ld h%ld w%ld c%ld o%ld k%ld threads %d (%s)\n", (long)N,
           (long)H, (long)W, (long)C, (long)O, (long)K, nt, impl);
    printf("onednn bwd_w + reorder: %.2f ms (%.0f GFLOP/s)\n", ta[reps / 2],
           gf / ta[reps / 2] * 1e3);
    printf("shifted-window sgemm:   %.2f ms (%.0f GFLOP/s)\n", tb[reps / 2],
           gf / tb[reps / 2] * 1e3);
    printf("window kernel:          %.2f ms (%.0f GFLOP/s)\n", tc[reps / 2],
           gf / tc[reps / 2] * 1e3);
    printf("window kernel + bias:   %.2f ms (max |db - sum dy| %.3g)\n",
           td[reps / 2], dbd);
    printf("max |diff| sgemm %.3g window %.3g (max |df| %.3g)\n", diff,
           diff3, mag);
    return 0;
}
