/* The run-time ISA dispatch (Note [ISA dispatch] in
 * kernels/cpu/isa_dispatch.h): the Makefile compiles the dispatched loop
 * files for x86-64-v3 (a portable build's target) and links them here, so
 * both copies sit in this binary. Every float elementwise row and every
 * float reduction runs through both and must agree: bit for bit where
 * the formula calls no libm function (whose AVX2 and AVX-512 vector
 * variants may differ in the last bits), else within a few ulps. And the
 * choice itself: TFMINI_ISA in a child process. */
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "kernels/cpu/ew_float.h"
#include "kernels/cpu/isa_dispatch.h"
#include "kernels/cpu/reduce_impl.h"

extern char **environ;

#ifdef TFM_ISA_DISPATCH
#define COPIES_(ret, name, params) ret name##_base params; \
    ret name##_avx512 params;
COPIES_(tfm_ew_binary_fn, tfm_ew_float_binary, (tfm_op op, tfm_dtype d))
COPIES_(int, tfm_ew_float_unary, (tfm_op op, const tfm_tensor *in,
                                  tfm_tensor *out, const tfm_attrs *a))
COPIES_(bool, tfm_reducer_get, (tfm_red_kind k, tfm_dtype d, tfm_reducer *r))

static int
cpu_has_v4(void)
{
    return __builtin_cpu_supports("avx512f")
           && __builtin_cpu_supports("avx512bw")
           && __builtin_cpu_supports("avx512cd")
           && __builtin_cpu_supports("avx512dq")
           && __builtin_cpu_supports("avx512vl");
}
#endif

/* Rows whose formulas call libm (directly or through a helper). */
static int
calls_libm(tfm_op op)
{
    switch (op) {
    case TFM_OP_POW: case TFM_OP_ATAN2: case TFM_OP_EXP: case TFM_OP_EXPM1:
    case TFM_OP_LOG: case TFM_OP_LOG1P: case TFM_OP_SIN: case TFM_OP_COS:
    case TFM_OP_TAN: case TFM_OP_ASIN: case TFM_OP_ACOS: case TFM_OP_ATAN:
    case TFM_OP_SINH: case TFM_OP_COSH: case TFM_OP_TANH: case TFM_OP_ASINH:
    case TFM_OP_ACOSH: case TFM_OP_ATANH: case TFM_OP_ERF: case TFM_OP_ERFC:
    case TFM_OP_SIGMOID: case TFM_OP_ELU: case TFM_OP_SELU:
    case TFM_OP_SOFTPLUS: case TFM_OP_GELU:
        return 1;
    default:
        return 0;
    }
}

static tfm_tensor *
vec(tfm_dtype d, int64_t n, double lo, double hi, unsigned seed)
{
    tfm_shape s = tfm_shape_make(1, &n);
    tfm_tensor *t = tfm_tensor_new(d, &s, TFM_CPU);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        double u = (double)(seed >> 8) / (double)(1u << 24);
        tfm_tensor_set_f64(t, i, lo + (hi - lo) * u);
    }
    return t;
}

/* Distance in ulps between x and y (0 when both are NaN). */
static double
ulps(tfm_dtype d, double x, double y)
{
    if (isnan(x) || isnan(y))
        return isnan(x) && isnan(y) ? 0 : INFINITY;
    if (x == y)
        return 0;
    if (isinf(x) || isinf(y))
        return INFINITY;
    double m = fmax(fabs(x), fabs(y));
    double ulp = d == TFM_FLOAT32 ? ldexp(1.0, ilogb(m) - 23)
                                  : ldexp(1.0, ilogb(m) - 52);
    return fabs(x - y) / ulp;
}

/* Compares a and b elementwise: exact, or within 8 ulps when libm (seen: 4). */
static void
agree(const char *what, tfm_op op, const tfm_tensor *a, const tfm_tensor *b)
{
    double worst = 0;
    int64_t n = tfm_tensor_numel(a);
    for (int64_t i = 0; i < n; i++) {
        double x = tfm_tensor_get_f64(a, i), y = tfm_tensor_get_f64(b, i);
        if (memcmp(&x, &y, sizeof x) != 0 && !(isnan(x) && isnan(y)))
            worst = fmax(worst, ulps(a->dtype, x, y));
    }
    double limit = calls_libm(op) ? 8 : 0;
    if (worst > limit) {
        char m[200];
        snprintf(m, sizeof m, "%s %s %s: copies differ by %g ulps", what,
                 tfm_ops[op].name, tfm_dtype_name(a->dtype), worst);
        check_fail(__FILE__, __LINE__, m);
    }
}

TEST(which_copy_runs)
{
    const char *name = tfm_isa_name();
#ifdef TFM_ISA_DISPATCH
    CHECK_EQ_INT(tfm_isa_dispatches(), 1);
    if (!getenv("TFMINI_ISA"))
        CHECK_EQ_INT(tfm_isa_avx512(), cpu_has_v4());
#endif
    CHECK(!strcmp(name, "avx512") || !strcmp(name, "avx2")
          || !strcmp(name, "x86-64"));
    CHECK_EQ_INT(!strcmp(name, "avx512"), tfm_isa_avx512());
}

#ifdef TFM_ISA_DISPATCH
static const int64_t sizes[] = {1003, 40001};   /* serial, OpenMP */
static const tfm_dtype floats[] = {TFM_FLOAT32, TFM_FLOAT64};

TEST(elementwise_copies_agree)
{
    if (!cpu_has_v4()) {
        printf("skip  elementwise_copies_agree: no AVX-512 here\n");
        return;
    }
    int64_t t0 = tfm_tensor_live_count();
    int binaries = 0, unaries = 0;
    for (size_t si = 0; si < 2; si++)
        for (size_t di = 0; di < 2; di++) {
            int64_t n = sizes[si];
            tfm_dtype d = floats[di];
            tfm_tensor *x = vec(d, n, -0.95, 0.95, 1);
            tfm_tensor *y = vec(d, n, 0.25, 3.0, 2);
            tfm_tensor *o1 = vec(d, n, 0, 0, 3), *o2 = vec(d, n, 0, 0, 3);
            tfm_bcast same = {.kind = TFM_BC_SAME, .ndim = 1, .n = n};
            tfm_bcast bscalar = {.kind = TFM_BC_B_SCALAR, .ndim = 1, .n = n};
            for (int op = 0; op < TFM_OP_COUNT; op++) {
                tfm_ew_binary_fn f1 = tfm_ew_float_binary_base(op, d);
                tfm_ew_binary_fn f2 = tfm_ew_float_binary_avx512(op, d);
                CHECK_EQ_INT(f1 == NULL, f2 == NULL);
                if (f1 && f2) {
                    const tfm_bcast *plans[2] = {&same, &bscalar};
                    for (int p = 0; p < 2; p++) {
                        f1(tfm_tensor_data(x), tfm_tensor_data(y),
                           tfm_tensor_data(o1), plans[p]);
                        f2(tfm_tensor_data(x), tfm_tensor_data(y),
                           tfm_tensor_data(o2), plans[p]);
                        agree("binary", op, o1, o2);
                    }
                    binaries++;
                }
                for (int iprm = 0; iprm < 2; iprm++) {
                    tfm_attrs a = {0};
                    a.f[0] = 0.2;
                    a.i[0] = iprm;
                    int r1 = tfm_ew_float_unary_base(op, x, o1, &a);
                    int r2 = tfm_ew_float_unary_avx512(op, x, o2, &a);
                    CHECK_EQ_INT(r1, r2);
                    if (r1 && r2) {
                        agree("unary", op, o1, o2);
                        unaries += iprm == 0;
                    }
                }
            }
            tfm_tensor_decref(x);
            tfm_tensor_decref(y);
            tfm_tensor_decref(o1);
            tfm_tensor_decref(o2);
        }
    /* Every BINARY row (15) and UNARY/HEAVY/PARAM row (37), per dtype and
     * size: a table that lost rows in one copy fails above or here. */
    CHECK(binaries >= 4 * 15);
    CHECK(unaries >= 4 * 37);
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
}

TEST(reduction_copies_agree)
{
    if (!cpu_has_v4()) {
        printf("skip  reduction_copies_agree: no AVX-512 here\n");
        return;
    }
    int64_t t0 = tfm_tensor_live_count();
    for (size_t si = 0; si < 2; si++)
        for (size_t di = 0; di < 2; di++) {
            int64_t n = sizes[si];
            tfm_dtype d = floats[di];
            tfm_tensor *x = vec(d, n, -2.0, 3.0, 7);
            for (int k = 0; k < TFM_RED_KIND_COUNT; k++) {
                tfm_reducer r1, r2;
                bool g1 = tfm_reducer_get_base(k, d, &r1);
                bool g2 = tfm_reducer_get_avx512(k, d, &r2);
                CHECK_EQ_INT(g1, g2);
                if (!g1 || !g2)
                    continue;
                /* A whole row, then the same numbers as 7 columns. */
                tfm_acc aux = {.d = 0.5};
                tfm_acc a1 = r1.identity, a2 = r2.identity;
                r1.row(tfm_tensor_data(x), n, &aux, &a1);
                r2.row(tfm_tensor_data(x), n, &aux, &a2);
                double lim = k == TFM_RED_SUMEXP ? 16 : 0;
                CHECK(ulps(TFM_FLOAT64, a1.d, a2.d) <= lim);
                int64_t len = 7, rows = n / len;
                tfm_acc c1[7], c2[7], auxs[7];
                for (int j = 0; j < len; j++) {
                    c1[j] = r1.identity;
                    c2[j] = r2.identity;
                    auxs[j].d = 0.25 * j;
                }
                r1.col(tfm_tensor_data(x), rows, len, len, auxs, c1);
                r2.col(tfm_tensor_data(x), rows, len, len, auxs, c2);
                for (int j = 0; j < len; j++)
                    CHECK(ulps(TFM_FLOAT64, c1[j].d, c2[j].d) <= lim);
            }
            tfm_tensor_decref(x);
        }
    CHECK_EQ_INT(tfm_tensor_live_count(), t0);
}

/* tfm_isa_name() of a fresh process with TFMINI_ISA=value (NULL: unset),
 * into out; the child's stderr into err. */
static void
child_isa(const char *value, char *out, size_t nout, char *err, size_t nerr)
{
    int po[2], pe[2];
    out[0] = err[0] = '\0';
    if (pipe(po) || pipe(pe)) {
        check_fail(__FILE__, __LINE__, "pipe");
        return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    size_t count = 0;
    while (environ[count])
        count++;
    char **env = malloc((count + 3) * sizeof *env);
    char isa[64], child[] = "TFM_TEST_ISA_CHILD=1";
    int ne = 0;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "TFMINI_ISA=", 11))
            env[ne++] = *e;
    if (value) {
        snprintf(isa, sizeof isa, "TFMINI_ISA=%s", value);
        env[ne++] = isa;
    }
    env[ne++] = child;
    env[ne] = NULL;
    char self[] = "/proc/self/exe";
    char *argv[] = {self, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(po[1]);
    close(pe[1]);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0) {
        ssize_t k = read(po[0], out, nout - 1);
        out[k > 0 ? k : 0] = '\0';
        k = read(pe[0], err, nerr - 1);
        err[k > 0 ? k : 0] = '\0';
        int st;
        waitpid(pid, &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    close(po[0]);
    close(pe[0]);
}

/* The child's whole job: print the choice, before any test runs. */
__attribute__((constructor)) static void
child_mode(void)
{
    if (getenv("TFM_TEST_ISA_CHILD")) {
        printf("%s", tfm_isa_name());
        fflush(stdout);
        _exit(0);
    }
}

TEST(tfmini_isa_chooses)
{
    char out[64], err[512];
    int v4 = cpu_has_v4();
    const char *own = tfm_isa_name();
    (void)own;
    child_isa("avx2", out, sizeof out, err, sizeof err);
    CHECK(strcmp(out, "avx512") != 0 && out[0]);
    CHECK_EQ_STR(err, "");
    child_isa(NULL, out, sizeof out, err, sizeof err);
    CHECK_EQ_INT(!strcmp(out, "avx512"), v4);
    child_isa("avx512", out, sizeof out, err, sizeof err);
    CHECK_EQ_INT(!strcmp(out, "avx512"), v4);
    if (!v4)
        CHECK_HAS(err, "lacks AVX-512");
    child_isa("sse9", out, sizeof out, err, sizeof err);
    CHECK_EQ_INT(!strcmp(out, "avx512"), v4);
    CHECK_HAS(err, "TFMINI_ISA=sse9 is not one of avx2, avx512");
}
#endif

#ifdef TFM_ISA_DISPATCH
RUN_TESTS(T(which_copy_runs), T(elementwise_copies_agree),
          T(reduction_copies_agree), T(tfmini_isa_chooses))
#else
RUN_TESTS(T(which_copy_runs))
#endif
