/* float32 and bfloat16 Conv2D and its two backprops through oneDNN's
 * convolution primitives, when the build has oneDNN (TFMINI_WITH_DNNL).
 * The im2col kernels (conv_im2col.c) stay the fallback: for float64, for
 * a build without oneDNN, for TFMINI_CONV=im2col, and for any shape
 * oneDNN refuses or serves only with its reference (scalar)
 * implementation.
 *
 * bfloat16: src, weights and dst are all bf16 and the JIT kernels
 * accumulate in float32 (AVX512_BF16's vdpbf16ps), rounding once at the
 * end, as TF's oneDNN build does. Only offered where oneDNN dispatches
 * to avx512_core_bf16 or better (tfm_conv_bf16_native): elsewhere its
 * bf16 kernels emulate the instruction and lose to the float32 upcast.
 *
 * Layouts: activations stay NHWC (oneDNN's nhwc) as tfmini stores them;
 * the filter is TF's [kh, kw, in, out], oneDNN's `hwio` over the logical
 * (o, i, h, w) dims. The weights descriptor is left to the primitive
 * (format `any`): its JIT kernels want a blocked filter, and reordering
 * the filter (kh*kw*in*out values, small beside the activations) into
 * it each call is cheaper than the gemm-based kernel oneDNN falls back
 * to on a plain hwio filter (benchmarks/GEMM_CHOICE.md, Convolutions).
 *
 * Creating a primitive costs far more than a small conv (JIT code
 * generation), so primitives are kept per shape in a small LRU cache.
 * An entry is reference-counted while a call runs it: eviction by
 * another thread never frees a primitive under a running call. Each call
 * brings its own scratchpad (user scratchpad mode), so one primitive can
 * run in several threads at once.
 *
 * Builds against oneDNN 2.x (Debian) and 3.x (the onednn-cpu-gomp
 * wheel); where their C APIs differ, dnnl_compat.h and conv_pd() hold
 * the two forms. 3.x is faster here (benchmarks/RESULTS.md): brgemm
 * kernels for the input gradient. */
#include "conv.h"

#include <stdlib.h>
#include <string.h>

#ifdef TFMINI_WITH_DNNL
#include "dnnl_compat.h"
#include <pthread.h>
#include <stdatomic.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CACHE_SIZE 32
enum { NKEY = 19 };

typedef struct entry {
    int64_t key[NKEY];
    uint64_t stamp;    /* last use, for LRU */
    int refs;          /* calls running it, plus one while cached */
    int ok;            /* 0: oneDNN refused (the caller falls back) */
    dnnl_primitive_t prim;
    dnnl_primitive_t wreorder; /* plain <-> the primitive's filter, or NULL */
    tfm_md src, dst, wplain, wprim;
    tfm_md bias;       /* fused forward: the bias [o] */
    tfm_md spmd;       /* the scratchpad, when scratch > 0 */
    size_t wbytes;     /* the primitive's filter buffer when reordered */
    size_t scratch;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *cache[CACHE_SIZE];
static uint64_t clock_;
static dnnl_engine_t engine;
static atomic_long calls, bf16_calls;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void
engine_init(void)
{
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
        engine = NULL;
}

/* 0: not yet read, 1: oneDNN, 2: im2col (TFMINI_CONV=im2col). */
static atomic_int backend;

static int
use_dnnl(void)
{
    int b = atomic_load_explicit(&backend, memory_order_relaxed);
    if (b == 0) {
        const char *e = getenv("TFMINI_CONV");
        b = e && strcmp(e, "im2col") == 0 ? 2 : 1;
        atomic_store_explicit(&backend, b, memory_order_relaxed);
    }
    return b == 1;
}

const char *
tfm_conv_backend(void)
{
    return use_dnnl() ? "dnnl" : "im2col";
}

static void
entry_free(entry *e)
{
    if (!e)
        return;
    if (e->prim)
        dnnl_primitive_destroy(e->prim);
    if (e->wreorder)
        dnnl_primitive_destroy(e->wreorder);
    tfm_md_free(&e->src);
    tfm_md_free(&e->dst);
    tfm_md_free(&e->wplain);
    tfm_md_free(&e->wprim);
    tfm_md_free(&e->bias);
    tfm_md_free(&e->spmd);
    free(e);
}

static void
entry_release(entry *e)
{
    pthread_mutex_lock(&lock);
    int last = --e->refs == 0;
    pthread_mutex_unlock(&lock);
    if (last)
        entry_free(e);
}

/* Right padding that makes oneDNN's output size, floor((in - eff + l +
 * r) / s) + 1, equal TF's `out`; TF pads SAME inputs only as much as the
 * last window needs, so the smallest such r >= 0 is the one. */
static int64_t
pad_right(int64_t in, int64_t k, int64_t s, int64_t d, int64_t l,
          int64_t out)
{
    int64_t eff = (k - 1) * d + 1;
    int64_t r = (out - 1) * s + eff - in - l;
    return r > 0 ? r : 0;
}

static int
is_ref_impl(dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
            dnnl_success || !impl)
        return 1;
    return strncmp(impl, "ref", 3) == 0;
}

/* Builds the primitive for one shape; e->ok stays 0 where oneDNN has no
 * non-reference implementation. */
/* The post-op of an activation code (TFM_CONV_ACT_*): 0 when none. */
static int
post_op(int act, dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
    *alpha = *beta = 0.0f;
    switch (act) {
    case TFM_CONV_ACT_RELU:
        *alg = dnnl_eltwise_relu;
        return 1;
    case TFM_CONV_ACT_RELU6:
        *alg = dnnl_eltwise_clip;
        *beta = 6.0f;
        return 1;
    case TFM_CONV_ACT_ELU:
        *alg = dnnl_eltwise_elu;
        *alpha = 1.0f;
        return 1;
    default:
        return 0;
    }
}

/* The attributes of a primitive: user scratchpad, and for a fused
 * forward (act >= 0) the residual sum and the activation as post-ops.
 * NULL on
 * failure. */
static dnnl_primitive_attr_t
make_attr(int act)
{
    dnnl_primitive_attr_t attr = NULL;
    if (dnnl_primitive_attr_create(&attr) ||
        dnnl_primitive_attr_set_scratchpad_mode(attr,
                                                dnnl_scratchpad_mode_user))
        goto fail;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    int sum = act >= 0 && (act & TFM_CONV_ADD_DST);
    int elt = act >= 0 && post_op(act & ~TFM_CONV_ADD_DST, &alg, &alpha,
                                  &beta);
    if (sum || elt) {
        dnnl_post_ops_t po = NULL;
        if (dnnl_post_ops_create(&po))
            goto fail;
        /* The sum comes first so that the activation sees the residual
         * (relu(conv + bias + x), a ResNet block's end). */
        dnnl_status_t st = sum ? tfm_post_sum(po, 1.0f) : dnnl_success;
        if (!st && elt)
            st = tfm_post_eltwise(po, alg, alpha, beta);
        if (!st)
            st = dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
        if (st)
            goto fail;
    }
    return attr;
fail:
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return NULL;
}

/* The primitive descriptor of one direction. 2.x first describes the
 * operation (dnnl_*_desc_init) and makes the primitive descriptor from
 * that; 3.x makes it in one call. training: a forward made as the
 * backward directions' hint. */
static dnnl_status_t
conv_pd(dnnl_primitive_desc_t *pd, int kind, int training, tfm_cmd src,
        tfm_cmd wei, tfm_cmd bias, tfm_cmd dst, const dnnl_dims_t strides,
        const dnnl_dims_t dil, const dnnl_dims_t pl, const dnnl_dims_t pr,
        const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint)
{
    dnnl_prop_kind_t prop = training ? dnnl_forward_training
                                     : dnnl_forward_inference;
    dnnl_alg_kind_t alg = dnnl_convolution_direct;
#if TFM_DNNL3
    switch (kind) {
    case TFM_CONV_BWD_DATA:
        return dnnl_convolution_backward_data_primitive_desc_create(
            pd, engine, alg, src, wei, dst, strides, dil, pl, pr, hint,
            attr);
    case TFM_CONV_BWD_WEIGHTS:
        return dnnl_convolution_backward_weights_primitive_desc_create(
            pd, engine, alg, src, wei, NULL, dst, strides, dil, pl, pr,
            hint, attr);
    default:
        return dnnl_convolution_forward_primitive_desc_create(
            pd, engine, prop, alg, src, wei, bias, dst, strides, dil, pl,
            pr, attr);
    }
#else
    dnnl_convolution_desc_t cd;
    dnnl_status_t s;
    switch (kind) {
    case TFM_CONV_BWD_DATA:
        s = dnnl_dilated_convolution_backward_data_desc_init(
            &cd, alg, src, wei, dst, strides, dil, pl, pr);
        break;
    case TFM_CONV_BWD_WEIGHTS:
        s = dnnl_dilated_convolution_backward_weights_desc_init(
            &cd, alg, src, wei, NULL, dst, strides, dil, pl, pr);
        break;
    default:
        s = dnnl_dilated_convolution_forward_desc_init(
            &cd, prop, alg, src, wei, bias, dst, strides, dil, pl, pr);
        break;
    }
    return s ? s : dnnl_primitive_desc_create(pd, &cd, attr, engine, hint);
#endif
}

/* act: -1 for a plain conv; else (forward only) a conv with a bias [o]
 * and that activation (TFM_CONV_ACT_*) fused. */
static void
entry_build(entry *e, int kind, const tfm_conv_geom *g, dnnl_data_type_t dt,
            int act)
{
    dnnl_dims_t src = {g->n, g->c, g->h, g->w};
    dnnl_dims_t dst = {g->n, g->o, g->oh, g->ow};
    /* Grouped (depthwise) filters are 5-D (groups, o, i, h, w) per group;
     * TF's [kh, kw, in, multiplier] is then oneDNN's hwigo with i = 1. */
    int64_t G = g->groups > 1 ? g->groups : 1;
    dnnl_dims_t wei = {g->o, g->c, g->kh, g->kw};
    dnnl_dims_t gwei = {G, g->o / G, g->c / G, g->kh, g->kw};
    int wnd = G > 1 ? 5 : 4;
    dnnl_format_tag_t wtag = G > 1 ? dnnl_hwigo : dnnl_hwio;
    dnnl_dims_t strides = {g->sh, g->sw};
    dnnl_dims_t dil = {g->dh - 1, g->dw - 1}; /* oneDNN counts from 0 */
    dnnl_dims_t pl = {g->pt, g->pl};
    dnnl_dims_t pr = {pad_right(g->h, g->kh, g->sh, g->dh, g->pt, g->oh),
                      pad_right(g->w, g->kw, g->sw, g->dw, g->pl, g->ow)};
    dnnl_dims_t bdim = {g->o};
    tfm_md md_any = {0};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    if (tfm_md_tag(&e->bias, 1, bdim, dt, dnnl_a) ||
        tfm_md_tag(&e->src, 4, src, dt, dnnl_nhwc) ||
        tfm_md_tag(&e->dst, 4, dst, dt, dnnl_nhwc) ||
        tfm_md_tag(&e->wplain, wnd, G > 1 ? gwei : wei, dt, wtag) ||
        tfm_md_tag(&md_any, wnd, G > 1 ? gwei : wei, dt,
                   dnnl_format_tag_any))
        goto done;
    if (!(attr = make_attr(act)))
        goto done;
    if (kind != TFM_CONV_FWD &&
        conv_pd(&hint, TFM_CONV_FWD, 1, TFM_MD(e->src), TFM_MD(md_any),
                NULL, TFM_MD(e->dst), strides, dil, pl, pr, NULL, NULL))
        goto done;
    if (conv_pd(&pd, kind, 0, TFM_MD(e->src), TFM_MD(md_any),
                act >= 0 ? TFM_MD(e->bias) : NULL, TFM_MD(e->dst), strides,
                dil, pl, pr, attr, hint))
        goto done;
    if (is_ref_impl(pd))
        goto done;
    tfm_cmd w = dnnl_primitive_desc_query_md(
        pd, kind == TFM_CONV_BWD_WEIGHTS ? dnnl_query_diff_weights_md
                                         : dnnl_query_weights_md, 0);
    tfm_cmd sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md,
                                              0);
    if (!w || tfm_md_copy(&e->wprim, w))
        goto done;
    e->scratch = sp ? dnnl_memory_desc_get_size(sp) : 0;
    if (e->scratch && tfm_md_copy(&e->spmd, sp))
        goto done;
    if (!dnnl_memory_desc_equal(TFM_MD(e->wprim), TFM_MD(e->wplain))) {
        dnnl_primitive_desc_t rpd = NULL;
        int to_prim = kind != TFM_CONV_BWD_WEIGHTS;
        tfm_cmd plain = TFM_MD(e->wplain), prim = TFM_MD(e->wprim);
        if (dnnl_reorder_primitive_desc_create(
                &rpd, to_prim ? plain : prim, engine,
                to_prim ? prim : plain, engine, NULL))
            goto done;
        dnnl_status_t s = dnnl_primitive_create(&e->wreorder, rpd);
        dnnl_primitive_desc_destroy(rpd);
        if (s) {
            e->wreorder = NULL;
            goto done;
        }
        e->wbytes = dnnl_memory_desc_get_size(TFM_MD(e->wprim));
    }
    if (dnnl_primitive_create(&e->prim, pd)) {
        e->prim = NULL;
        goto done;
    }
    e->ok = 1;
done:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (hint)
        dnnl_primitive_desc_destroy(hint);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    tfm_md_free(&md_any);
}

static void
make_key(int64_t *k, int kind, const tfm_conv_geom *g, dnnl_data_type_t dt,
         int act)
{
    int64_t v[NKEY] = {kind, act, dt, g->n, g->h, g->w, g->c, g->kh, g->kw,
                       g->o, g->sh, g->sw, g->dh, g->dw, g->pt, g->pl, g->oh,
                       g->ow, g->groups};
    memcpy(k, v, sizeof v);
}

/* The cached entry for this shape, built on a miss; the caller releases
 * it. NULL only when out of memory. */
static entry *
entry_get(int kind, const tfm_conv_geom *g, dnnl_data_type_t dt, int act)
{
    int64_t key[NKEY];
    make_key(key, kind, g, dt, act);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < CACHE_SIZE; i++) {
        entry *e = cache[i];
        if (e && memcmp(e->key, key, sizeof key) == 0) {
            e->stamp = ++clock_;
            e->refs++;
            pthread_mutex_unlock(&lock);
            return e;
        }
    }
    pthread_mutex_unlock(&lock);
    /* Built outside the lock: JIT generation takes milliseconds. Two
     * threads missing together build twice; the later one is cached. */
    entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    memcpy(e->key, key, sizeof key);
    entry_build(e, kind, g, dt, act);
    e->refs = 2; /* the cache's and the caller's */
    entry *old = NULL;
    pthread_mutex_lock(&lock);
    int slot = 0;
    for (int i = 0; i < CACHE_SIZE; i++) {
        if (!cache[i]) {
            slot = i;
            break;
        }
        if (cache[i]->stamp < cache[slot]->stamp)
            slot = i;
    }
    old = cache[slot];
    if (old && --old->refs > 0)
        old = NULL; /* still running: its last caller frees it */
    cache[slot] = e;
    e->stamp = ++clock_;
    pthread_mutex_unlock(&lock);
    entry_free(old);
    return e;
}

/* The filter reorder runs on the calling thread: it moves a few
 * thousand values, and splitting that over a team is a fork and a join
 * that, on a busy machine, waits for a descheduled thread's time slice
 * (measured: 25 ms for a 3x3x64x64 filter with the other core taken,
 * against microseconds serially). oneDNN sizes its team from
 * omp_get_max_threads() at execution. */
static dnnl_status_t
reorder(const entry *e, dnnl_stream_t stream, dnnl_memory_t from,
        dnnl_memory_t to)
{
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
#ifdef _OPENMP
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    dnnl_status_t s = dnnl_primitive_execute(e->wreorder, stream, 2, ra);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    return s;
}

static dnnl_memory_t
mem(tfm_cmd md, void *p)
{
    dnnl_memory_t m = NULL;
    if (dnnl_memory_create(&m, md, engine, p) != dnnl_success)
        return NULL;
    return m;
}

/* Runs one conv: returns 1 when done, 0 when the caller must use
 * im2col, -1 when out of memory. */
static int
run(entry *e, int kind, const void *a, const void *b, const void *bias,
    void *out)
{
    /* a, b, out by kind: fwd x, f, y; bwd data f, dy, dx; bwd weights
     * x, dy, df. */
    const void *act = kind == TFM_CONV_BWD_DATA ? b : a;
    const void *wsrc = kind == TFM_CONV_FWD ? b : a;
    void *wbuf = NULL, *scratch = NULL;
    if (e->wbytes && !(wbuf = malloc(e->wbytes)))
        return -1;
    if (e->scratch && !(scratch = malloc(e->scratch))) {
        free(wbuf);
        return -1;
    }
    int rc = 0;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t m_in = NULL, m_out = NULL, m_wplain = NULL,
                  m_wprim = NULL, m_sp = NULL, m_bias = NULL;
    if (dnnl_stream_create(&stream, engine, dnnl_stream_default_flags))
        goto out;
    void *wplain = kind == TFM_CONV_BWD_WEIGHTS ? out : (void *)wsrc;
    /* The activations' descriptors by direction: backward data reads
     * dy (the forward's dst) and writes dx (its src). */
    tfm_cmd in = kind == TFM_CONV_BWD_DATA ? TFM_MD(e->dst) : TFM_MD(e->src);
    tfm_cmd outmd = kind == TFM_CONV_BWD_DATA ? TFM_MD(e->src)
                                              : TFM_MD(e->dst);
    m_in = mem(in, (void *)act);
    m_out = mem(outmd, kind == TFM_CONV_BWD_WEIGHTS ? (void *)b : out);
    m_wplain = mem(TFM_MD(e->wplain), wplain);
    m_wprim = wbuf ? mem(TFM_MD(e->wprim), wbuf) : m_wplain;
    if (scratch && !(m_sp = mem(TFM_MD(e->spmd), scratch)))
        goto out;
    if (bias && !(m_bias = mem(TFM_MD(e->bias), (void *)bias)))
        goto out;
    if (!m_in || !m_out || !m_wplain || !m_wprim)
        goto out;
    /* oneDNN splits the work for the team size it asks OpenMP for and
     * does not support dynamic teams (gemm_dnnl.c): off for the call. */
#ifdef _OPENMP
    int dynamic = omp_get_dynamic();
    if (dynamic)
        omp_set_dynamic(0);
#endif
    dnnl_status_t s = dnnl_success;
    if (e->wreorder && kind != TFM_CONV_BWD_WEIGHTS)
        s = reorder(e, stream, m_wplain, m_wprim);
    dnnl_exec_arg_t args[5];
    int na = 0;
    switch (kind) {
    case TFM_CONV_FWD:
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m_in};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m_wprim};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST, m_out};
        if (m_bias)
            args[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, m_bias};
        break;
    case TFM_CONV_BWD_DATA:
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m_in};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m_wprim};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, m_out};
        break;
    default:
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m_in};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m_out};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, m_wprim};
        break;
    }
    if (m_sp)
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m_sp};
    if (s == dnnl_success)
        s = dnnl_primitive_execute(e->prim, stream, na, args);
    if (s == dnnl_success && e->wreorder && kind == TFM_CONV_BWD_WEIGHTS)
        s = reorder(e, stream, m_wprim, m_wplain);
    if (s == dnnl_success)
        s = dnnl_stream_wait(stream);
#ifdef _OPENMP
    if (dynamic)
        omp_set_dynamic(1);
#endif
    rc = s == dnnl_success;
out:
    if (m_wprim && m_wprim != m_wplain)
        dnnl_memory_destroy(m_wprim);
    if (m_wplain)
        dnnl_memory_destroy(m_wplain);
    if (m_in)
        dnnl_memory_destroy(m_in);
    if (m_out)
        dnnl_memory_destroy(m_out);
    if (m_sp)
        dnnl_memory_destroy(m_sp);
    if (m_bias)
        dnnl_memory_destroy(m_bias);
    if (stream)
        dnnl_stream_destroy(stream);
    free(wbuf);
    free(scratch);
    return rc;
}

static int
conv_dnnl(int kind, const tfm_conv_geom *g, dnnl_data_type_t dt,
          const void *a, const void *b, const void *bias, int act,
          void *out)
{
    if (!use_dnnl())
        return 0;
    pthread_once(&engine_once, engine_init);
    if (!engine)
        return 0;
    entry *e = entry_get(kind, g, dt, act);
    if (!e)
        return -1;
    int rc = e->ok ? run(e, kind, a, b, bias, out) : 0;
    entry_release(e);
    if (rc == 1)
        atomic_fetch_add_explicit(dt == dnnl_bf16 ? &bf16_calls : &calls, 1,
                                  memory_order_relaxed);
    return rc;
}

int
tfm_conv_dnnl_f32(int kind, const tfm_conv_geom *g, const float *a,
                  const float *b, float *out)
{
    return conv_dnnl(kind, g, dnnl_f32, a, b, NULL, -1, out);
}

int
tfm_conv_dnnl_fused_f32(const tfm_conv_geom *g, const float *x,
                        const float *f, const float *bias, int act,
                        float *y)
{
    return conv_dnnl(TFM_CONV_FWD, g, dnnl_f32, x, f, bias, act, y);
}

int
tfm_conv_dnnl_bf16(int kind, const tfm_conv_geom *g, const uint16_t *a,
                   const uint16_t *b, uint16_t *out)
{
    if (!tfm_conv_bf16_native())
        return 0;
    return conv_dnnl(kind, g, dnnl_bf16, a, b, NULL, -1, out);
}

/* 0: not yet read, 1: yes, 2: no. */
static atomic_int bf16_native;

int
tfm_conv_bf16_native(void)
{
    int v = atomic_load_explicit(&bf16_native, memory_order_relaxed);
    if (v == 0) {
        pthread_once(&engine_once, engine_init);
        /* The ISA values are nested bit sets: avx512_core_bf16's bits
         * are in every later ISA that has the instruction. */
        unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
        unsigned bf16 = (unsigned)dnnl_cpu_isa_avx512_core_bf16;
        v = use_dnnl() && engine && (isa & bf16) == bf16 ? 1 : 2;
        atomic_store_explicit(&bf16_native, v, memory_order_relaxed);
    }
    return v == 1;
}

long
tfm_conv_dnnl_calls(void)
{
    return atomic_load_explicit(&calls, memory_order_relaxed);
}

long
tfm_conv_dnnl_bf16_calls(void)
{
    return atomic_load_explicit(&bf16_calls, memory_order_relaxed);
}

void
tfm_conv_dnnl_clear(void)
{
    entry *old[CACHE_SIZE];
    pthread_mutex_lock(&lock);
    for (int i = 0; i < CACHE_SIZE; i++) {
        old[i] = cache[i] && --cache[i]->refs == 0 ? cache[i] : NULL;
        cache[i] = NULL;
    }
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < CACHE_SIZE; i++)
        entry_free(old[i]);
}

#else

int
tfm_conv_dnnl_f32(int kind, const tfm_conv_geom *g, const float *a,
                  const float *b, float *out)
{
    (void)kind; (void)g; (void)a; (void)b; (void)out;
    return 0;
}

int
tfm_conv_dnnl_bf16(int kind, const tfm_conv_geom *g, const uint16_t *a,
                   const uint16_t *b, uint16_t *out)
{
    (void)kind; (void)g; (void)a; (void)b; (void)out;
    return 0;
}

int
tfm_conv_dnnl_fused_f32(const tfm_conv_geom *g, const float *x,
                        const float *f, const float *bias, int act,
                        float *y)
{
    (void)g; (void)x; (void)f; (void)bias; (void)act; (void)y;
    return 0;
}

int
tfm_conv_bf16_native(void)
{
    return 0;
}

void
tfm_conv_dnnl_clear(void)
{
}

const char *
tfm_conv_backend(void)
{
    return "im2col";
}

long
tfm_conv_dnnl_calls(void)
{
    return 0;
}

long
tfm_conv_dnnl_bf16_calls(void)
{
    return 0;
}

#endif
