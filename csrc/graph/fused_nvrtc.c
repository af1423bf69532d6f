/* _FusedElementwise on a GPU: the node's program as one CUDA kernel,
 * compiled at run time with NVRTC. See Note [Fused programs on the GPU].
 *
 * Note [Fused programs on the GPU]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Without this kernel a fused node placed on a GPU runs its program op
 * by op (exec_device.c -> fused.c's run_ops), one launch and one
 * device-memory round trip per instruction. Here the program becomes one
 * grid-stride kernel over the output elements, every intermediate a
 * local variable: graph/fused_native.c writes it (tfm_fused_source,
 * TFM_FUSED_SRC_CUDA) with the same statement per instruction, from the
 * same formula rows (kernels/ew_formulas.def), as the CPU's native code.
 * Inputs are read whole, as a scalar or periodically (i % period), as
 * the CPU loop reads them; other broadcasts are refused.
 *
 * NVRTC compiles it for the running GPU (sm_XX from its compute
 * capability; where this NVRTC does not know that GPU, PTX for the
 * newest architecture it knows, which the driver compiles on load) with
 * FMA contraction off, no fast math, no flush-to-zero and IEEE division
 * and square root, so that +, -, *, / and sqrt round as the CPU's do;
 * transcendental functions come from CUDA's math library and differ
 * from glibc's in the last bits. The image is loaded with the runtime's
 * library API (cudaLibraryLoadData, cudaLibraryGetKernel: the driver's
 * cuLibrary* underneath, so no -lcuda and nothing needs a GPU to link)
 * and launched on the GPU's stream with cudaLaunchKernel.
 *
 * Compiled kernels are cached for the life of the process, keyed by a
 * hash of the source, the architecture and the options; a failed
 * compile is cached too (warned on stderr once, with NVRTC's log), so it
 * is not retried. Each call finds its kernel by the program itself
 * (kernel_of), so a cached call writes no source. There is no disk cache: a compile costs tens of
 * milliseconds once per program and process.
 *
 * The kernel declines (TFM_ERR_UNIMPLEMENTED, which the executor clears
 * before running the program op by op as before) a program that is not a
 * _FusedElementwise, has an op with no formula, a dtype other than
 * float32/float64, an input it cannot index, or that NVRTC could not
 * compile; and everything when TFMINI_NVRTC=0. */
#include "fused.h"

/* The graph layer's, not a kernel file: the kernel reads the node's
 * program (fused.h) and has fused_native.c write its source; the GPU
 * side it needs (kernels/cuda/internal.h) sits below. Built only with
 * CUDA; otherwise tfm_fused_gpu_kernel() is NULL. */
#ifdef TFMINI_WITH_CUDA
#include "../kernels/cuda/internal.h"

#include <nvrtc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Those of Note [Fused programs on the GPU], after the architecture. */
static const char *const options[] = {
    "-default-device", "--fmad=false", "--ftz=false", "--prec-div=true",
    "--prec-sqrt=true",
};
#define NOPT (sizeof options / sizeof options[0])

typedef struct entry {
    uint64_t key;
    cudaLibrary_t lib;      /* NULL: the compile or the load failed */
    cudaKernel_t fn;
    struct entry *next;
} entry;

/* lock: the compiled kernels (held while NVRTC runs) and the
 * architectures; prog_lock: the lookup every call makes. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t prog_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *cache;
static atomic_long n_compiled, n_hits, n_launched, n_declined;

static int
nvrtc_enabled(void)
{
    const char *v = getenv("TFMINI_NVRTC");
    return !v || !(strcmp(v, "0") == 0 || strcmp(v, "off") == 0 ||
                   strcmp(v, "false") == 0);
}

static uint64_t
fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull;     /* ends each string */
}

/* The image NVRTC made of src for arch ("sm_90": a cubin; "compute_90":
 * PTX), malloc'd, or NULL with *log (malloc'd, may be NULL) saying why. */
static char *
compile(const char *src, const char *arch, size_t *size, char **log)
{
    nvrtcProgram prog;
    char archopt[48];
    const char *opts[NOPT + 1];
    char *img = NULL;
    int cubin = strncmp(arch, "sm_", 3) == 0;
    *log = NULL;
    *size = 0;
    if (nvrtcCreateProgram(&prog, src, "tfm_fused.cu", 0, NULL, NULL) !=
        NVRTC_SUCCESS)
        return NULL;
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    opts[0] = archopt;
    for (size_t k = 0; k < NOPT; k++)
        opts[k + 1] = options[k];
    nvrtcResult r = nvrtcCompileProgram(prog, (int)NOPT + 1, opts);
    if (r == NVRTC_SUCCESS) {
        r = cubin ? nvrtcGetCUBINSize(prog, size) : nvrtcGetPTXSize(prog, size);
        if (r == NVRTC_SUCCESS && (img = malloc(*size + 1)) &&
            (r = cubin ? nvrtcGetCUBIN(prog, img) : nvrtcGetPTX(prog, img)) ==
                NVRTC_SUCCESS)
            img[*size] = 0;
        else {
            free(img);
            img = NULL;
        }
    }
    if (!img) {
        size_t n = 0;
        const char *why = nvrtcGetErrorString(r);
        if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS &&
            (*log = malloc(n + strlen(why) + 2))) {
            int k = sprintf(*log, "%s\n", why);
            if (nvrtcGetProgramLog(prog, *log + k) != NVRTC_SUCCESS)
                (*log)[k] = 0;
        }
    }
    nvrtcDestroyProgram(&prog);
    return img;
}

/* The architecture to compile for on GPU ordinal dev: sm_XX where this
 * NVRTC knows it, else compute_YY, YY its newest. Computed once, under
 * lock. */
static const char *
gpu_arch(int dev)
{
    static char arch[TFM_MAX_DEVICES][16];
    if (dev < 0 || dev >= TFM_MAX_DEVICES)
        return NULL;
    if (arch[dev][0])
        return arch[dev];
    struct cudaDeviceProp pr;
    if (cudaGetDeviceProperties(&pr, dev) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    int cc = pr.major * 10 + pr.minor, num = 0, best = 0, known = 0;
    int list[64];
    if (nvrtcGetNumSupportedArchs(&num) == NVRTC_SUCCESS && num > 0 &&
        num <= 64 && nvrtcGetSupportedArchs(list) == NVRTC_SUCCESS)
        for (int k = 0; k < num; k++) {
            known |= list[k] == cc;
            if (list[k] <= cc && list[k] > best)
                best = list[k];
        }
    if (!best)
        return NULL;
    snprintf(arch[dev], sizeof arch[dev], known ? "sm_%d" : "compute_%d",
             known ? cc : best);
    return arch[dev];
}

static uint64_t
key_of(const char *src, const char *arch)
{
    int major = 0, minor = 0;
    char ver[32];
    nvrtcVersion(&major, &minor);
    snprintf(ver, sizeof ver, "nvrtc %d.%d", major, minor);
    uint64_t k = fnv1a(0xcbf29ce484222325ull, ver);
    k = fnv1a(k, arch);
    for (size_t i = 0; i < NOPT; i++)
        k = fnv1a(k, options[i]);
    return fnv1a(k, src);
}

/* src's kernel for arch, compiled and loaded now or cached; NULL when
 * that failed (now or before). */
static cudaKernel_t
kernel_for(const char *src, const char *arch)
{
    uint64_t key = key_of(src, arch);
    pthread_mutex_lock(&lock);
    for (entry *e = cache; e; e = e->next)
        if (e->key == key) {
            pthread_mutex_unlock(&lock);
            return e->fn;
        }
    entry *e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    e->key = key;
    size_t size;
    char *log;
    char *img = compile(src, arch, &size, &log);
    const char *why = NULL;
    cudaError_t ce = cudaSuccess;
    if (!img) {
        why = "NVRTC could not compile it";
    } else if ((ce = cudaLibraryLoadData(&e->lib, img, NULL, NULL, 0, NULL,
                                         NULL, 0)) != cudaSuccess ||
               (ce = cudaLibraryGetKernel(&e->fn, e->lib, "tfm_fused")) !=
                   cudaSuccess) {
        cudaGetLastError();
        why = cudaGetErrorString(ce);
        if (e->lib)
            cudaLibraryUnload(e->lib);
        e->lib = NULL;
        e->fn = NULL;
    } else {
        atomic_fetch_add(&n_compiled, 1);
    }
    if (why)
        fprintf(stderr, "tfmini: a fused elementwise program for %s runs op "
                "by op on the GPU: %s%s%s\n", arch, why, log ? ":\n" : "",
                log ? log : "");
    free(img);
    free(log);
    e->next = cache;
    cache = e;
    pthread_mutex_unlock(&lock);
    return e->fn;
}

/* The inputs' read kinds against the output shape, and their common
 * period; 0 when the generator can index them all. */
static int
classify(const tfm_fused_prog *p, tfm_tensor *const *in, int nin,
         const tfm_shape *os, tfm_fused_src_in *ins, int64_t *period)
{
    *period = 0;
    if (p->nin > nin || p->nin > TFM_FUSED_MAX_IN)
        return -1;
    for (int k = 0; k < p->nin; k++) {
        const tfm_tensor *t = in[p->first_input + k];
        ins[k].dtype = t->dtype;
        ins[k].kind = tfm_fused_input_kind(os, &t->shape, &ins[k].period);
        if (ins[k].kind == TFM_FUSED_IN_OTHER)
            return -1;
        if (ins[k].kind == TFM_FUSED_IN_PERIODIC) {
            if (*period && *period != ins[k].period)
                return -1;
            *period = ins[k].period;
        }
    }
    return 0;
}

/* What k_fused looks up on every call, so that a cached call writes no
 * source: writing it took 30 us for 6 instructions and 110 us for 40
 * (measured here, one CPU), against a few us for a launch. The key is
 * the program's instructions (fixed-size records with no padding), its
 * inputs' kinds and dtypes, the output dtype and the GPU; the value
 * the kernel, or NULL for a program that was refused or failed. */
_Static_assert(sizeof(tfm_fused_instr) == 32 &&
               sizeof(tfm_fused_src_in) == 16,
               "program keys compare these records byte for byte");
#define KEY_MAX (16 + 32 * TFM_FUSED_MAX_INSTR + 16 * TFM_FUSED_MAX_IN)
#define NBUCKET 256

typedef struct prog_entry {
    uint64_t hash;
    size_t len;
    cudaKernel_t fn;
    struct prog_entry *next;
    unsigned char key[];
} prog_entry;

static prog_entry *by_prog[NBUCKET];

static size_t
prog_key(unsigned char *k, const tfm_fused_prog *p,
         const tfm_fused_src_in *ins, int out_dtype, int ordinal)
{
    int32_t head[4] = {p->ninstr, p->nin, out_dtype, ordinal};
    size_t n = 0;
    memcpy(k, head, sizeof head);
    n += sizeof head;
    memcpy(k + n, p->code, sizeof p->code[0] * (size_t)p->ninstr);
    n += sizeof p->code[0] * (size_t)p->ninstr;
    for (int i = 0; i < p->nin; i++) {
        tfm_fused_src_in c;
        memset(&c, 0, sizeof c);
        c.kind = ins[i].kind;
        c.dtype = ins[i].dtype;
        c.period = ins[i].period;
        memcpy(k + n, &c, sizeof c);
        n += sizeof c;
    }
    return n;
}

static uint64_t
hash_bytes(const unsigned char *b, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* 1 and *fn when key is known. */
static int
prog_find(const unsigned char *key, size_t len, uint64_t h, cudaKernel_t *fn)
{
    int found = 0;
    pthread_mutex_lock(&prog_lock);
    for (prog_entry *e = by_prog[h % NBUCKET]; e; e = e->next)
        if (e->hash == h && e->len == len && !memcmp(e->key, key, len)) {
            *fn = e->fn;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&prog_lock);
    return found;
}

static void
prog_add(const unsigned char *key, size_t len, uint64_t h, cudaKernel_t fn)
{
    prog_entry *e = malloc(sizeof *e + len);
    if (!e)
        return;         /* not cached: the next call writes it again */
    e->hash = h;
    e->len = len;
    e->fn = fn;
    memcpy(e->key, key, len);
    pthread_mutex_lock(&prog_lock);
    e->next = by_prog[h % NBUCKET];
    by_prog[h % NBUCKET] = e;
    pthread_mutex_unlock(&prog_lock);
}

/* Program p's kernel on GPU g (NULL: it runs op by op); *why says why
 * not. */
static cudaKernel_t
kernel_of(const tfm_fused_prog *p, const tfm_fused_src_in *ins,
          int64_t period, int out_dtype, const tfm_gpu *g, const char **why)
{
    unsigned char key[KEY_MAX];
    size_t len = prog_key(key, p, ins, out_dtype, g->ordinal);
    uint64_t h = hash_bytes(key, len);
    cudaKernel_t fn = NULL;
    *why = "refused or failed before";
    if (prog_find(key, len, h, &fn)) {
        if (fn)
            atomic_fetch_add(&n_hits, 1);
        return fn;
    }
    pthread_mutex_lock(&lock);
    const char *arch = gpu_arch(g->ordinal);
    pthread_mutex_unlock(&lock);
    char *src = NULL;
    if (!arch)
        *why = "no NVRTC architecture for this GPU";
    else if (!(src = tfm_fused_source(p, out_dtype, ins, period,
                                      TFM_FUSED_SRC_CUDA)))
        *why = "an op or dtype with no CUDA formula";
    else if (!(fn = kernel_for(src, arch)))
        *why = "NVRTC failed";
    free(src);
    /* A GPU whose architecture could not be read may answer later. */
    if (arch)
        prog_add(key, len, h, fn);
    return fn;
}

static tfm_code
decline(const char *why)
{
    atomic_fetch_add(&n_declined, 1);
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "_FusedElementwise on the GPU: "
                     "%s", why);
}

/* The kernel of a _FusedElementwise node on a GPU (exec_device.c
 * calls it through tfm_fused_gpu_kernel); a is a tfm_fused_attrs. */
static tfm_code
k_fused(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_fused_prog *p = a ? ((const tfm_fused_attrs *)a)->prog : NULL;
    tfm_fused_src_in ins[TFM_FUSED_MAX_IN];
    int64_t period;
    if (!nvrtc_enabled())
        return decline("TFMINI_NVRTC=0");
    if (op != TFM_OP_FUSED_ELEMENTWISE || !p || p->first_input ||
        p->ninstr < 1 || nout != p->nout || nout > TFM_FUSED_MAX_OUT)
        return decline("not an elementwise program");
    const tfm_shape *os = &out[0]->shape;
    if (classify(p, in, nin, os, ins, &period))
        return decline("an input broadcasts other than by period");
    int64_t n = tfm_shape_numel(os);
    for (int k = 1; k < nout; k++)
        if (tfm_shape_numel(&out[k]->shape) != n)
            return decline("outputs of different sizes");
    tfm_gpu *g = tfm_cu_gpu(ctx);
    const char *why;
    cudaKernel_t fn = kernel_of(p, ins, period, out[0]->dtype, g, &why);
    if (!fn)
        return decline(why);
    if (n == 0)
        return TFM_OK;
    /* Parameters as put_head (fused_native.c) declares them. */
    void *ptr[TFM_FUSED_MAX_IN + TFM_FUSED_MAX_OUT];
    void *args[TFM_FUSED_MAX_IN + TFM_FUSED_MAX_OUT + 1];
    long long nn = (long long)n;
    int na = 0;
    for (int k = 0; k < p->nin; k++)
        ptr[na++] = tfm_tensor_data(in[p->first_input + k]);
    ptr[na++] = tfm_tensor_data(out[0]);
    for (int i = 0; i < p->ninstr; i++)
        if (p->code[i].out > 0)
            ptr[na++] = tfm_tensor_data(out[p->code[i].out]);
    for (int k = 0; k < na; k++)
        args[k] = &ptr[k];
    args[na] = &nn;
    /* Enough blocks to fill any GPU; the loop strides over the rest. */
    int64_t blocks = (n + 255) / 256;
    dim3 grid = {(unsigned)(blocks < 65536 ? blocks : 65536), 1, 1};
    dim3 block = {256, 1, 1};
    int rc = (int)cudaLaunchKernel((const void *)fn, grid, block, args, 0,
                                   g->stream);
    if (!rc)
        atomic_fetch_add(&n_launched, 1);
    return tfm_cu_launched(op, rc);
}

tfm_kernel_fn
tfm_fused_gpu_kernel(void)
{
    return k_fused;
}

void
tfm_cuda_fused_counts(long *compiled, long *hits, long *launched,
                      long *declined)
{
    *compiled = atomic_load(&n_compiled);
    *hits = atomic_load(&n_hits);
    *launched = atomic_load(&n_launched);
    *declined = atomic_load(&n_declined);
}

/* ---- the test hook ---- */

/* For tests/test_fused_nvrtc.py (through ctypes): program code[] (7
 * per instruction: op, nin, dtype, src0, src1, out, ai; af[] the
 * float attributes; registers are instruction indices) over inputs[]
 * (3 per input: kind, dtype, period). arch NULL: text gets the CUDA
 * source, "c": the CPU's, "compute_XX": NVRTC's PTX, "sm_XX": the
 * cubin's first bytes (its ELF magic). 1 on success; 0 when the
 * generator refuses the program; -1 when NVRTC fails (text: its log). */
int
tfm_cuda_fused_compile_check(int ninstr, const int64_t *code,
                             const double *af, int nin,
                             const int64_t *inputs, int out_dtype,
                             const char *arch, char *text, size_t cap)
{
    tfm_fused_prog p;
    tfm_fused_src_in ins[TFM_FUSED_MAX_IN];
    int64_t period = 0;
    if (ninstr < 1 || ninstr > TFM_FUSED_MAX_INSTR || nin < 0 ||
        nin > TFM_FUSED_MAX_IN)
        return -2;
    memset(&p, 0, sizeof p);
    p.ninstr = p.nreg = ninstr;
    p.nin = nin;
    p.nout = 1;
    for (int i = 0; i < ninstr; i++) {
        const int64_t *c = code + 7 * i;
        tfm_fused_instr *d = &p.code[i];
        d->op = (int16_t)c[0];
        d->nin = (int8_t)c[1];
        d->dtype = (int8_t)c[2];
        d->src[0] = (int16_t)c[3];
        d->src[1] = (int16_t)c[4];
        d->dst = (int16_t)i;
        d->out = (int16_t)c[5];
        d->adtype = (int32_t)c[2];
        d->ai = c[6];
        d->af = af[i];
        p.nout += d->out > 0;
    }
    for (int k = 0; k < nin; k++) {
        ins[k].kind = (int)inputs[3 * k];
        ins[k].dtype = (tfm_dtype)inputs[3 * k + 1];
        ins[k].period = inputs[3 * k + 2];
        if (ins[k].kind == TFM_FUSED_IN_PERIODIC)
            period = ins[k].period;
    }
    int cpu = arch && strcmp(arch, "c") == 0;
    char *src = tfm_fused_source(&p, out_dtype, ins, period,
                                 cpu ? TFM_FUSED_SRC_C : TFM_FUSED_SRC_CUDA);
    if (!src)
        return 0;
    if (!arch || cpu) {
        snprintf(text, cap, "%s", src);
        free(src);
        return 1;
    }
    size_t size;
    char *log;
    char *img = compile(src, arch, &size, &log);
    free(src);
    int ok = img != NULL;
    snprintf(text, cap, "%s", ok ? img : log ? log : "no log");
    free(img);
    free(log);
    return ok ? 1 : -1;
}

#else

tfm_kernel_fn
tfm_fused_gpu_kernel(void)
{
    return NULL;
}

#endif
