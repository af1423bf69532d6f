/* Microbenchmark: a float32 3x3 stride-1 NHWC conv, oneDNN's primitive
 * (brgconv, with the hwio -> blocked filter reorder each call, as
 * conv_dnnl.c runs it) against Winograd F(4x4, 3x3)
 * (csrc/kernels/cpu/conv_winograd.c), forward and input gradient.
 *
 *   gcc -O2 -fopenmp -Icsrc benchmarks/conv_winograd_bench.c \
 *       -I$PREFIX/include -L$PREFIX/lib -Wl,-rpath,$PREFIX/lib -ldnnl -lm \
 *       -o /tmp/wgb
 *   OMP_NUM_THREADS=2 /tmp/wgb [n h w c o reps]
 *
 * PREFIX: where the onednn wheels put include/dnnl.h and lib/libdnnl.so
 * (python3 -c "import sys; print(sys.prefix)"). Default shape: the
 * ResNet block of benchmarks/bench_models.py (mb32 ic64 oc64 32x32 k3
 * p1). BENCH_CPU=1 times process CPU time (one thread only). Prints the
 * median ms of each, and each one's largest absolute and relative error
 * against a float64 direct conv of the first two images. -DWINO_TB=n
 * tries another tile block. */
#include <dnnl.h>
#include "../csrc/kernels/cpu/conv_winograd.c"
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now(void)
{
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

static int64_t N, H, W, C, O;

/* float64 SAME 3x3 conv of images [0, nimg): out[n][h][w][co] from
 * in[n][h][w][ci], filter f(i, j, c, o) read through fi. */
static void
ref_conv(const float *in, int64_t ci, int64_t co, const float *f, int flip,
         int64_t nimg, double *out)
{
#pragma omp parallel for
    for (int64_t n = 0; n < nimg; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++)
                for (int64_t o = 0; o < co; o++) {
                    double s = 0;
                    for (int64_t i = 0; i < 3; i++)
                        for (int64_t j = 0; j < 3; j++) {
                            int64_t hh = h + i - 1, ww = w + j - 1;
                            if (hh < 0 || hh >= H || ww < 0 || ww >= W)
                                continue;
                            const float *p = in + ((n * H + hh) * W + ww) * ci;
                            for (int64_t c = 0; c < ci; c++)
                                s += (double)p[c] *
                                     (flip ? f[((2 - i) * 3 + 2 - j) * ci * co +
                                               o * ci + c]
                                           : f[(i * 3 + j) * ci * co + c * co + o]);
                        }
                    out[((n * H + h) * W + w) * co + o] = s;
                }
}

static void
errors(const float *got, const double *ref, size_t n, double *abs_,
       double *rel)
{
    double mag = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        mag = fmax(mag, fabs(ref[i]));
        d = fmax(d, fabs(got[i] - ref[i]));
    }
    *abs_ = d;
    *rel = d / mag;
}

int
main(int argc, char **argv)
{
    int64_t v[6] = {32, 32, 32, 64, 64, 20};
    for (int i = 1; i < argc && i <= 6; i++)
        v[i - 1] = atoll(argv[i]);
    N = v[0], H = v[1], W = v[2], C = v[3], O = v[4];
    int reps = (int)v[5];
    setenv("TFMINI_CONV", "winograd", 1); /* every shape, not the rule's */
    int nt = omp_get_max_threads();
    size_t nx = N * H * W * C, ny = N * H * W * O, nf = 9 * C * O;
    float *x = malloc(nx * 4), *f = malloc(nf * 4), *y1 = malloc(ny * 4),
          *y2 = malloc(ny * 4), *dy = malloc(ny * 4), *dx1 = malloc(nx * 4),
          *dx2 = malloc(nx * 4);
    srand(1);
    for (size_t i = 0; i < nx; i++)
        x[i] = rand() / (float)RAND_MAX - 0.5f;
    for (size_t i = 0; i < ny; i++)
        dy[i] = rand() / (float)RAND_MAX - 0.5f;
    for (size_t i = 0; i < nf; i++)
        f[i] = (rand() / (float)RAND_MAX - 0.5f) * 0.2f;
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    dnnl_dims_t sd = {N, C, H, W}, dd = {N, O, H, W}, wd = {O, C, 3, 3};
    dnnl_dims_t s1 = {1, 1}, d0 = {0, 0}, p1 = {1, 1};
    dnnl_memory_desc_t smd, dmd, wany, wplain;
    CHECK(dnnl_memory_desc_create_with_tag(&smd, 4, sd, dnnl_f32, dnnl_nhwc));
    CHECK(dnnl_memory_desc_create_with_tag(&dmd, 4, dd, dnnl_f32, dnnl_nhwc));
    CHECK(dnnl_memory_desc_create_with_tag(&wany, 4, wd, dnnl_f32,
                                           dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_create_with_tag(&wplain, 4, wd, dnnl_f32,
                                           dnnl_hwio));
    dnnl_primitive_desc_t fpd, bpd, r1, r2;
    CHECK(dnnl_convolution_forward_primitive_desc_create(
        &fpd, eng, dnnl_forward_training, dnnl_convolution_direct, smd, wany,
        NULL, dmd, s1, d0, p1, p1, NULL));
    CHECK(dnnl_convolution_backward_data_primitive_desc_create(
        &bpd, eng, dnnl_convolution_direct, smd, wany, dmd, s1, d0, p1, p1,
        fpd, NULL));
    const char *fimpl, *bimpl;
    dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, &fimpl);
    dnnl_primitive_desc_query(bpd, dnnl_query_impl_info_str, 0, &bimpl);
    const_dnnl_memory_desc_t fw = dnnl_primitive_desc_query_md(
        fpd, dnnl_query_weights_md, 0);
    const_dnnl_memory_desc_t bw = dnnl_primitive_desc_query_md(
        bpd, dnnl_query_weights_md, 0);
    CHECK(dnnl_reorder_primitive_desc_create(&r1, wplain, eng, fw, eng, NULL));
    CHECK(dnnl_reorder_primitive_desc_create(&r2, wplain, eng, bw, eng, NULL));
    dnnl_primitive_t fprim, bprim, reo1, reo2;
    CHECK(dnnl_primitive_create(&fprim, fpd));
    CHECK(dnnl_primitive_create(&bprim, bpd));
    CHECK(dnnl_primitive_create(&reo1, r1));
    CHECK(dnnl_primitive_create(&reo2, r2));
    void *wb1 = malloc(dnnl_memory_desc_get_size(fw));
    void *wb2 = malloc(dnnl_memory_desc_get_size(bw));
    dnnl_memory_t mx, my, mdy, mdx, mf, mw1, mw2;
    CHECK(dnnl_memory_create(&mx, smd, eng, x));
    CHECK(dnnl_memory_create(&my, dmd, eng, y1));
    CHECK(dnnl_memory_create(&mdy, dmd, eng, dy));
    CHECK(dnnl_memory_create(&mdx, smd, eng, dx1));
    CHECK(dnnl_memory_create(&mf, wplain, eng, f));
    CHECK(dnnl_memory_create(&mw1, fw, eng, wb1));
    CHECK(dnnl_memory_create(&mw2, bw, eng, wb2));
    dnnl_exec_arg_t fa[3] = {{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw1},
                             {DNNL_ARG_DST, my}};
    dnnl_exec_arg_t ba[3] = {{DNNL_ARG_DIFF_DST, mdy},
                             {DNNL_ARG_WEIGHTS, mw2},
                             {DNNL_ARG_DIFF_SRC, mdx}};
    dnnl_exec_arg_t ra1[2] = {{DNNL_ARG_FROM, mf}, {DNNL_ARG_TO, mw1}};
    dnnl_exec_arg_t ra2[2] = {{DNNL_ARG_FROM, mf}, {DNNL_ARG_TO, mw2}};
    double *t[4];
    for (int k = 0; k < 4; k++)
        t[k] = malloc(reps * sizeof(double));
    tfm_conv_geom g = {N, H, W, C, 3, 3, O, 1, 1, 1, 1, H, W, 1, 1, 1};
    for (int r = -2; r < reps; r++) {
        double t0 = now();
        CHECK(dnnl_primitive_execute(reo1, st, 2, ra1));
        CHECK(dnnl_primitive_execute(fprim, st, 3, fa));
        CHECK(dnnl_stream_wait(st));
        double t1 = now();
        if (tfm_conv_winograd_f32(TFM_CONV_FWD, &g, x, f, NULL, -1, y2) != 1)
            exit(1);
        double t2 = now();
        CHECK(dnnl_primitive_execute(reo2, st, 2, ra2));
        CHECK(dnnl_primitive_execute(bprim, st, 3, ba));
        CHECK(dnnl_stream_wait(st));
        double t3 = now();
        if (tfm_conv_winograd_f32(TFM_CONV_BWD_DATA, &g, f, dy, NULL, -1,
                                  dx2) != 1)
            exit(1);
        double t4 = now();
        if (r >= 0)
            t[0][r] = t1 - t0, t[1][r] = t2 - t1, t[2][r] = t3 - t2,
            t[3][r] = t4 - t3;
    }
    for (int k = 0; k < 4; k++)
        qsort(t[k], reps, sizeof(double), cmp);
    int64_t ni = N < 2 ? N : 2;
    double *ry = malloc(ni * H * W * O * 8), *rx = malloc(ni * H * W * C * 8);
    ref_conv(x, C, O, f, 0, ni, ry);
    ref_conv(dy, O, C, f, 1, ni, rx);
    double e[4][2];
    errors(y1, ry, ni * H * W * O, &e[0][0], &e[0][1]);
    errors(y2, ry, ni * H * W * O, &e[1][0], &e[1][1]);
    errors(dx1, rx, ni * H * W * C, &e[2][0], &e[2][1]);
    errors(dx2, rx, ni * H * W * C, &e[3][0], &e[3][1]);
    double gf = 2.0 * N * H * W * C * O * 9 * 1e-9;
    printf("n%ld h%ld w%ld c%ld o%ld k3 p1, threads %d, TB %d\n", (long)N,
           (long)H, (long)W, (long)C, (long)O, nt, TB);
    const char *name[4] = {"fwd  oneDNN", "fwd  winograd", "bwdd oneDNN",
                           "bwdd winograd"};
    for (int k = 0; k < 4; k++)
        printf("%-14s %7.2f ms (%4.0f direct-GFLOP/s) max abs err %.2e "
               "rel %.2e\n", name[k], t[k][reps / 2],
               gf / t[k][reps / 2] * 1e3, e[k][0], e[k][1]);
    printf("oneDNN impls: fwd %s, bwd data %s\n", fimpl, bimpl);
    return 0;
}
