/* Fused programs compiled to machine code. See Note [Native fused
 * programs] in fused.h. */
#include "fused.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu/mvec.h"
#include "../kernels/ew_formulas.h"
#include "native_cache.h"

/* ---- the C source of a program ---- */

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

/* NVRTC has CUDA's math functions built in (no headers to include), and
 * compiles with -default-device, so the helpers' static inline
 * definitions are device functions. */
static const char prelude_cuda[] =
    TFM_EW_STR(TFM_EW_HELPERS(static inline)) "\n";

/* Operand s of an instruction as a C expression. holder[r]: the
 * instruction whose value register r holds. */
static void
put_operand(sbuf *b, int s, const int *holder, const tfm_fused_src_in *ins)
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
              const tfm_fused_src_in *ins, int out_dtype)
{
    if (s >= 0)
        return p->code[holder[s]].dtype;
    if (s == TFM_FUSED_BASE)
        return out_dtype;
    return ins[TFM_FUSED_INPUT_INDEX(s)].dtype;
}

/* The declarations of the program's inputs and outputs: as the CPU
 * function's locals (from its in[] and out[] arrays), or as the CUDA
 * kernel's parameters, whose order fused_nvrtc.c's launch follows:
 * inputs, output 0, then outputs of instructions with out > 0 in
 * program order. */
static void
put_head(sbuf *b, const tfm_fused_prog *p, int out_dtype,
         const tfm_fused_src_in *ins, int target)
{
    if (target == TFM_FUSED_SRC_CUDA) {
        put(b, "%s\nextern \"C\" __global__ void\ntfm_fused(", prelude_cuda);
        for (int k = 0; k < p->nin; k++)
            put(b, "const %s *in%d, ", ctype(ins[k].dtype), k);
        put(b, "%s *o0", ctype(out_dtype));
        for (int i = 0; i < p->ninstr; i++)
            if (p->code[i].out > 0)
                put(b, ", %s *o%d", ctype(p->code[i].dtype), p->code[i].out);
        put(b, ", long long n)\n{\n");
        for (int k = 0; k < p->nin; k++)
            if (ins[k].kind == TFM_FUSED_IN_SCALAR)
                put(b, "    const %s s%d = *in%d;\n", ctype(ins[k].dtype), k,
                    k);
        return;
    }
    put(b, "%s\nvoid\ntfm_native(const void *const *in, void *const *out,"
        " int64_t start, int64_t len)\n{\n", prelude);
    for (int k = 0; k < p->nin; k++) {
        const char *t = ctype(ins[k].dtype);
        if (ins[k].kind == TFM_FUSED_IN_SCALAR)
            put(b, "    const %s s%d = *(const %s *)in[%d];\n", t, k, t, k);
        else
            put(b, "    const %s *in%d = in[%d];\n", t, k, k);
    }
    put(b, "    %s *o0 = out[0];\n", ctype(out_dtype));
    for (int i = 0; i < p->ninstr; i++)
        if (p->code[i].out > 0)
            put(b, "    %s *o%d = out[%d];\n", ctype(p->code[i].dtype),
                p->code[i].out, p->code[i].out);
}

static int
is_float(int dtype)
{
    return dtype == TFM_FLOAT32 || dtype == TFM_FLOAT64;
}

char *
tfm_fused_source(const tfm_fused_prog *p, int out_dtype,
                 const tfm_fused_src_in *ins, int64_t period, int target)
{
    sbuf b = {0};
    int holder[TFM_FUSED_MAX_INSTR];
    /* Only float programs have formulas (tfm_fused_can_fuse); a
     * program built another way is refused rather than miscompiled. */
    if (!is_float(out_dtype))
        return NULL;
    for (int k = 0; k < p->nin; k++)
        if (!is_float(ins[k].dtype) || ins[k].kind == TFM_FUSED_IN_OTHER ||
            (ins[k].kind == TFM_FUSED_IN_PERIODIC && ins[k].period != period))
            return NULL;
    for (int i = 0; i < p->ninstr; i++)
        if (!is_float(p->code[i].dtype))
            return NULL;
    put_head(&b, p, out_dtype, ins, target);
    if (target == TFM_FUSED_SRC_CUDA) {
        /* One grid-stride loop over the output; j indexes the periodic
         * inputs, as in the CPU loop. */
        put(&b, "    for (long long i = (long long)blockIdx.x * blockDim.x +"
            " threadIdx.x; i < n;\n"
            "         i += (long long)blockDim.x * gridDim.x) {\n"
            "        {\n");
        if (period)
            put(&b, "            const long long j = i %% %lldLL;\n",
                (long long)period);
        else
            put(&b, "            const long long j = 0;\n");
        put(&b, "            (void)j;\n");
    } else {
        /* Runs of the output that keep j (the index into periodic
         * inputs) contiguous: one run per period, or the whole range. */
        put(&b, "    const int64_t period = %lld;\n"
            "    for (int64_t i0 = start, end = start + len; i0 < end;) {\n"
            "        int64_t j0 = period ? i0 %% period : 0;\n"
            "        int64_t run = period ? period - j0 : end - i0;\n"
            "        if (run > end - i0)\n            run = end - i0;\n"
            "        #pragma omp simd\n"
            "        for (int64_t t = 0; t < run; t++) {\n"
            "            const int64_t i = i0 + t, j = j0 + t;\n"
            "            (void)j;\n", (long long)period);
    }
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
    put(&b, "            o0[i] = v%d;\n        }\n%s    }\n}\n",
        p->ninstr - 1, target == TFM_FUSED_SRC_CUDA ? "" : "        i0 += run;\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- the entry point ---- */

tfm_fused_native_fn
tfm_fused_native(const tfm_graph *g, const tfm_node *nd)
{
    const tfm_fused_prog *p = nd->prog;
    const tfm_shape *os = &nd->out[0].shape;
    if (!tfm_fused_native_wanted(nd) || !tfm_native_enabled())
        return NULL;
    tfm_fused_src_in ins[TFM_FUSED_MAX_IN];
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
    char *src = tfm_fused_source(p, nd->out[0].dtype, ins, period,
                                 TFM_FUSED_SRC_C);
    if (!src)
        return NULL;
    tfm_fused_native_fn fn = tfm_native_cache_get(src);
    free(src);
    return fn;
}

int
tfm_fused_native_wanted(const tfm_node *nd)
{
    const tfm_fused_prog *p = nd->prog;
    const tfm_shape *os = &nd->out[0].shape;
    return p && p->ninstr >= 1 && tfm_shape_is_known(os) &&
           tfm_shape_numel(os) >= TFM_NATIVE_MIN_ELEMENTS;
}

/* Steps of all plans compile one at a time: a program may be shared by
 * steps of several plans (the caches dedupe it), and compiling is rare. */
static pthread_mutex_t lazy_lock = PTHREAD_MUTEX_INITIALIZER;

tfm_fused_native_fn
tfm_native_lazy_get(tfm_native_lazy *l, const tfm_graph *g,
                    const tfm_node *nd)
{
    if (atomic_load_explicit(&l->state, memory_order_acquire) ==
        TFM_NATIVE_DONE)
        return l->fn;
    if (atomic_load_explicit(&l->state, memory_order_relaxed) ==
        TFM_NATIVE_NO)
        return NULL;
    pthread_mutex_lock(&lazy_lock);
    if (atomic_load_explicit(&l->state, memory_order_relaxed) ==
        TFM_NATIVE_WANTED) {
        l->fn = tfm_fused_native(g, nd);
        atomic_store_explicit(&l->state, TFM_NATIVE_DONE,
                              memory_order_release);
    }
    pthread_mutex_unlock(&lazy_lock);
    return l->fn;
}
