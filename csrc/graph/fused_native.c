/* Fused programs compiled to machine code. See Note [Native fused
 * programs] in fused.h. */
#include "fused.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kernels/cpu/mvec.h"
#include "../kernels/ew_formulas.h"

extern char **environ;

/* Flags of the generated code: those of the kernels (setup.py), with
 * contraction of a*b+c into an FMA off, as -std=c11 implies for the
 * kernels, so that exact ops round as they do unfused. */
static const char *const cc_flags[] = {
    "-O3", "-march=native", "-std=c11", "-ffp-contract=off",
    "-fno-math-errno", "-fopenmp-simd", "-fPIC", "-shared", "-w",
#if defined(__SANITIZE_ADDRESS__)
    /* A sanitized build (tests/sanitize.sh) checks the generated loops
     * too. */
    "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
#endif
};

/* ---- the C source of a program ---- */

/* A program input: its dtype and how it is read (fused.h's
 * TFM_FUSED_IN_FULL, ...). */
typedef struct tfm_native_in {
    int kind;
    tfm_dtype dtype;
    int64_t period;
} tfm_native_in;

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void
put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int k = b->oom ? 0 : vsnprintf(b->p ? b->p + b->len : NULL, room,
                                       fmt, ap);
        va_end(ap);
        if (b->oom || k < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)k < room) {
            b->len += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + (size_t)k + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

/* The element formula of an op, from the rows the CPU kernels expand
 * too (Note [Elementwise formulas] in kernels/ew_formulas.h), over x
 * (and y) of the input type, converted to the output type by the
 * caller; *param: the formula reads prm and iprm (a PARAM row). NULL:
 * no native form (the node stays with the block evaluator). */
static const char *
formula(int op, int f64, int *param)
{
#define PARAM_BINARY 0
#define PARAM_UNARY 0
#define PARAM_HEAVY 0
#define PARAM_PARAM 1
#define PARAM_OWN 0
#define EW(OP, LOOP, F32, F64)                                               \
    case TFM_OP_##OP:                                                        \
        *param = PARAM_##LOOP;                                               \
        return f64 ? TFM_EW_STR(F64) : TFM_EW_STR(F32);
#define EW_NONE(OP)
    switch (op) {
#include "../kernels/ew_formulas.def"
    default: return NULL;
    }
#undef EW
#undef EW_NONE
}

static const char *
ctype(int dtype)
{
    return dtype == TFM_FLOAT64 ? "double" : "float";
}

/* The libmvec declarations of mvec.h and the formulas' helpers, as
 * source text. */
#define ARGS_1_(T) #T
#define ARGS_2_(T) #T ", " #T
#define DECL_(T, F, N)                                                       \
    "__attribute__((simd(\"notinbranch\"))) " #T " " #F "(" ARGS_##N##_(T) \
    ");\n"
static const char prelude[] =
    "#include <math.h>\n#include <stdint.h>\n"
    "#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__clang__)\n"
    TFM_MVEC_FUNCS(DECL_)
    "#if __GLIBC_PREREQ(2, 35)\n"
    TFM_MVEC_FUNCS_2_35(DECL_)
    "#endif\n#endif\n"
    TFM_EW_STR(TFM_EW_HELPERS(static inline)) "\n";
#undef DECL_
#undef ARGS_1_
#undef ARGS_2_

/* Operand s of an instruction as a C expression. holder[r]: the
 * instruction whose value register r holds. */
static void
put_operand(sbuf *b, int s, const int *holder, const tfm_native_in *ins)
{
    if (s >= 0) {
        put(b, "v%d", holder[s]);
    } else if (s == TFM_FUSED_BASE) {
        put(b, "o0[i]");
    } else {
        int k = TFM_FUSED_INPUT_INDEX(s);
        put(b, ins[k].kind == TFM_FUSED_IN_SCALAR ? "s%d"
               : ins[k].kind == TFM_FUSED_IN_PERIODIC ? "in%d[j]" : "in%d[i]",
            k);
    }
}

static int
operand_dtype(const tfm_fused_prog *p, int s, const int *holder,
              const tfm_native_in *ins, int out_dtype)
{
    if (s >= 0)
        return p->code[holder[s]].dtype;
    if (s == TFM_FUSED_BASE)
        return out_dtype;
    return ins[TFM_FUSED_INPUT_INDEX(s)].dtype;
}

/* The source of tfm_native (fused.h's tfm_fused_native_fn) for program
 * p, or NULL (no error set) when an op has no native formula. */
static char *
source(const tfm_fused_prog *p, int out_dtype, const tfm_native_in *ins,
       int64_t period)
{
    sbuf b = {0};
    int holder[TFM_FUSED_MAX_INSTR];
    put(&b, "%s\nvoid\ntfm_native(const void *const *in, void *const *out,"
        " int64_t start, int64_t len)\n{\n", prelude);
    for (int k = 0; k < p->nin; k++) {
        const char *t = ctype(ins[k].dtype);
        if (ins[k].kind == TFM_FUSED_IN_SCALAR)
            put(&b, "    const %s s%d = *(const %s *)in[%d];\n", t, k, t, k);
        else
            put(&b, "    const %s *in%d = in[%d];\n", t, k, k);
    }
    put(&b, "    %s *o0 = out[0];\n", ctype(out_dtype));
    for (int i = 0; i < p->ninstr; i++)
        if (p->code[i].out > 0)
            put(&b, "    %s *o%d = out[%d];\n", ctype(p->code[i].dtype),
                p->code[i].out, p->code[i].out);
    /* Runs of the output that keep j (the index into periodic inputs)
     * contiguous: one run per period, or the whole range. */
    put(&b, "    const int64_t period = %lld;\n"
        "    for (int64_t i0 = start, end = start + len; i0 < end;) {\n"
        "        int64_t j0 = period ? i0 %% period : 0;\n"
        "        int64_t run = period ? period - j0 : end - i0;\n"
        "        if (run > end - i0)\n            run = end - i0;\n"
        "        #pragma omp simd\n"
        "        for (int64_t t = 0; t < run; t++) {\n"
        "            const int64_t i = i0 + t, j = j0 + t;\n"
        "            (void)j;\n", (long long)period);
    for (int i = 0; i < p->ninstr; i++) {
        const tfm_fused_instr *c = &p->code[i];
        int in_dt = operand_dtype(p, c->src[0], holder, ins, out_dtype);
        int param = 0;
        const char *f = formula(c->op, in_dt == TFM_FLOAT64, &param);
        if (!f) {
            free(b.p);
            return NULL;
        }
        const char *ti = ctype(in_dt), *to = ctype(c->dtype);
        put(&b, "            %s v%d;\n            {\n", to, i);
        put(&b, "                const %s x = ", ti);
        put_operand(&b, c->src[0], holder, ins);
        put(&b, ";\n");
        if (c->nin > 1) {
            put(&b, "                const %s y = ", ti);
            put_operand(&b, c->src[1], holder, ins);
            put(&b, ";\n");
        }
        if (param) {
            if (!isfinite(c->af)) {      /* %a would print nan or inf */
                free(b.p);
                return NULL;
            }
            put(&b, "                const %s prm = (%s)%a;\n"
                "                const int iprm = %d;\n"
                "                (void)prm; (void)iprm;\n", ti, ti, c->af,
                c->ai != 0);
        }
        put(&b, "                v%d = (%s)(%s);\n            }\n", i, to, f);
        holder[c->dst] = i;
    }
    /* Stores last: an output may be the memory of an input (in place,
     * or a variable: Note [Fused writes into variables] in exec.c), so
     * every read of element i comes before any write of it. */
    for (int i = 0; i < p->ninstr; i++)
        if (p->code[i].out > 0)
            put(&b, "            o%d[i] = v%d;\n", p->code[i].out, i);
    put(&b, "            o0[i] = v%d;\n        }\n        i0 += run;\n"
        "    }\n}\n", p->ninstr - 1);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- compiling and caching ---- */

/* Compiled programs of this process by key; never unloaded, so the
 * function pointers plans hold stay valid. fn NULL: compiling failed,
 * do not try again. */
typedef struct entry {
    uint64_t key;
    tfm_fused_native_fn fn;
    struct entry *next;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *cache;

static uint64_t
fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static const char *
compiler(void)
{
    const char *cc = getenv("TFMINI_CC");
    return cc && *cc ? cc : "cc";
}

/* mkdir -p, the last one with mode 0700. Code is loaded from it, so it
 * must be ours and writable by no one else. 0 on success. */
static int
make_dirs(char *path)
{
    for (char *s = path + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        int bad = mkdir(path, 0700) && errno != EEXIST;
        *s = '/';
        if (bad)
            return -1;
    }
    struct stat st;
    mkdir(path, 0700);
    if (stat(path, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH)))
        return -1;
    return 0;
}

/* The cache directory: $TFMINI_CACHE_DIR, else $XDG_CACHE_HOME/tfmini,
 * else ~/.cache/tfmini; then /native. 0 on success. */
static int
cache_dir(char *out, size_t cap)
{
    const char *d = getenv("TFMINI_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
               *h = getenv("HOME");
    int k = d && *d ? snprintf(out, cap, "%s/native", d)
          : x && *x ? snprintf(out, cap, "%s/tfmini/native", x)
          : h && *h ? snprintf(out, cap, "%s/.cache/tfmini/native", h)
          : -1;
    if (k < 0 || (size_t)k >= cap)
        return -1;
    return make_dirs(out);
}

static tfm_fused_native_fn
load(const char *so)
{
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return NULL;
    union { void *p; tfm_fused_native_fn fn; } u;
    u.p = dlsym(h, "tfm_native");
    if (!u.p)
        dlclose(h);
    return u.p ? u.fn : NULL;
}

static int
write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    return fclose(f) || bad ? -1 : 0;
}

/* cc <flags> -o so src -lm, its messages into log. 0 on success. */
static int
run_compiler(const char *src, const char *so, const char *log)
{
    enum { NFLAGS = sizeof cc_flags / sizeof cc_flags[0] };
    char *argv[NFLAGS + 7];
    int a = 0;
    argv[a++] = (char *)compiler();
    for (int i = 0; i < NFLAGS; i++)
        argv[a++] = (char *)cc_flags[i];
    argv[a++] = "-o";
    argv[a++] = (char *)so;
    argv[a++] = (char *)src;
    argv[a++] = "-lm";
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa))
        return -1;
    pid_t pid;
    int rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
                                              O_RDONLY, 0) ||
             posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY |
                                              O_CREAT | O_TRUNC, 0600) ||
             posix_spawn_file_actions_adddup2(&fa, 1, 2) ||
             posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        /* SIGCHLD ignored (or another thread reaped it): the child has
         * exited, status unknown; the caller's dlopen tells. */
        if (errno == ECHILD)
            return 0;
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* What the code was compiled for (-march=native): /proc/cpuinfo's first
 * model name and flags lines, so that a cache directory shared between
 * machines (an NFS home) never loads code for another CPU. "" elsewhere. */
static const char *
cpu_id(void)
{
    static char id[4096];
    static int done;
    if (done)
        return id;
    done = 1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return id;
    char line[4096];
    size_t len = 0;
    int model = 0, flags = 0;
    while ((!model || !flags) && fgets(line, sizeof line, f)) {
        int *seen = !strncmp(line, "model name", 10) ? &model
                  : !strncmp(line, "flags", 5) ? &flags : NULL;
        if (!seen || *seen)
            continue;
        *seen = 1;
        size_t n = strlen(line);
        if (len + n >= sizeof id)
            n = sizeof id - 1 - len;
        memcpy(id + len, line, n);
        len += n;
        id[len] = 0;
    }
    fclose(f);
    return id;
}

/* The function for src: from this process's cache, from the disk cache
 * (<dir>/<key>.so, with its source beside it as <key>.c), or compiled
 * now. NULL when there is no compiler or it fails (its messages are in
 * <dir>/<key>.<pid>.log). */
static tfm_fused_native_fn
get(const char *src)
{
    pthread_mutex_lock(&lock);
    uint64_t key = fnv1a(0xcbf29ce484222325ull, compiler());
    key = fnv1a(key, cpu_id());
    for (size_t i = 0; i < sizeof cc_flags / sizeof cc_flags[0]; i++)
        key = fnv1a(key, cc_flags[i]);
    key = fnv1a(key, src);
    for (entry *e = cache; e; e = e->next)
        if (e->key == key) {
            pthread_mutex_unlock(&lock);
            return e->fn;
        }
    tfm_fused_native_fn fn = NULL;
    char dir[2048], so[2200], tmp_so[2300], tmp_c[2300], c[2200], log[2200];
    if (!cache_dir(dir, sizeof dir)) {
        unsigned long long k = (unsigned long long)key;
        snprintf(so, sizeof so, "%s/%016llx.so", dir, k);
        snprintf(c, sizeof c, "%s/%016llx.c", dir, k);
        snprintf(log, sizeof log, "%s/%016llx.%ld.log", dir, k,
                 (long)getpid());
        fn = load(so);
        /* Private names until the result is whole: other processes may
         * compile the same program at the same time. */
        snprintf(tmp_so, sizeof tmp_so, "%s/%016llx.%ld.so", dir, k,
                 (long)getpid());
        snprintf(tmp_c, sizeof tmp_c, "%s/%016llx.%ld.c", dir, k,
                 (long)getpid());
        /* Loaded before it is published: a compiler that died half way
         * (its status unknown when SIGCHLD is ignored) leaves nothing
         * in the cache. */
        if (!fn && !write_file(tmp_c, src) &&
            !run_compiler(tmp_c, tmp_so, log) && (fn = load(tmp_so)) &&
            !rename(tmp_so, so)) {
            rename(tmp_c, c);
            unlink(log);
        }
        unlink(tmp_c);
        unlink(tmp_so);
    }
    entry *e = malloc(sizeof *e);
    if (e) {
        e->key = key;
        e->fn = fn;
        e->next = cache;
        cache = e;
    }
    pthread_mutex_unlock(&lock);
    return fn;
}

/* ---- the entry point ---- */

tfm_fused_native_fn
tfm_fused_native(const tfm_graph *g, const tfm_node *nd)
{
    const tfm_fused_prog *p = nd->prog;
    const tfm_shape *os = &nd->out[0].shape;
    if (!p || p->ninstr < 1 || !tfm_shape_is_known(os) ||
        tfm_shape_numel(os) < TFM_NATIVE_MIN_ELEMENTS)
        return NULL;
    tfm_native_in ins[TFM_FUSED_MAX_IN];
    int64_t period = 0;
    for (int k = 0; k < p->nin; k++) {
        tfm_ref r = nd->in[p->first_input + k];
        const tfm_meta *m = &tfm_graph_node(g, r.node)->out[r.out];
        ins[k].dtype = m->dtype;
        ins[k].kind = tfm_fused_input_kind(os, &m->shape, &ins[k].period);
        /* One period for all periodic inputs (j is one index). */
        if (ins[k].kind == TFM_FUSED_IN_PERIODIC) {
            if (period && period != ins[k].period)
                return NULL;
            period = ins[k].period;
        } else if (ins[k].kind == TFM_FUSED_IN_OTHER) {
            return NULL;
        }
    }
    char *src = source(p, nd->out[0].dtype, ins, period);
    if (!src)
        return NULL;
    tfm_fused_native_fn fn = get(src);
    free(src);
    return fn;
}
