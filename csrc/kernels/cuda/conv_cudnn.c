/* Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (and the
 * depthwise ones) on the GPU through cuDNN's convolution API (built
 * where setup.py finds cuDNN: TFMINI_WITH_CUDNN; without it these ops
 * keep no GPU entry and soft-place on the CPU).
 *
 * Note [cuDNN convolutions]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * - Layout. Activations stay NHWC (cuDNN's CUDNN_TENSOR_NHWC). TF's
 *   filters are HWIO, a layout cuDNN has no name for; its NHWC filter is
 *   OHWI (KRSC), so the filter is transposed into a scratch buffer before
 *   a forward or backward-data call, and a filter gradient is computed
 *   as OHWI and transposed back.
 * - Padding. cuDNN pads symmetrically; TF's SAME pads one more cell at
 *   the bottom/right when the total is odd, and EXPLICIT pads anyhow.
 *   The trailing pads that give TF's output size are computed; when they
 *   differ from the leading ones, x is copied into a zero-padded buffer
 *   and cuDNN runs unpadded (TF's GPU kernels do the same), and a
 *   backward-data result is cropped out of the padded one.
 * - Algorithms. cuDNN's heuristics (Get*Algorithm_v7) rank the
 *   algorithms once per geometry; the list is cached, and the first that
 *   runs is remembered. Workspaces come from the GPU's allocator
 *   (stream-ordered, so freeing right after the launch is safe).
 * - Precision. float32 uses TF32 tensor cores only when
 *   tf.config.experimental.enable_tensor_float_32_execution is on (TF's
 *   default, as for matmuls): CUDNN_DEFAULT_MATH then, else
 *   CUDNN_FMA_MATH, which keeps exact float32 arithmetic. float64 runs
 *   the CPU kernel on host copies (cuDNN's NHWC paths are float32 and
 *   half); float16/bfloat16 arrive as float32 (the dispatcher upcasts).
 * - Gaps. A geometry cuDNN has no algorithm for (NOT_SUPPORTED from the
 *   ranking or from every ranked algorithm) runs the CPU kernel on host
 *   copies: right, only slower. tfm_cuda_cudnn_fallbacks() counts them,
 *   and tests/gpu/test_gpu_conv.py asserts its grid never falls back.
 *   Every other cuDNN status is an error naming the op and geometry,
 *   except where cuDNN cannot start at all (cudnnCreate: a sub-library,
 *   driver or GPU it lacks; asked once per GPU): the machine is short,
 *   not the op, so every convolution there is a gap, as without cuDNN.
 * - Depthwise. DepthwiseConv2dNative and its gradients are the same
 *   calls with groups = c (cudnnSetConvolutionGroupCount): TF's filter
 *   [kh, kw, c, m] is HWIO with one input channel per group and o = c * m
 *   outputs, output channel c * m + k being group c's k-th, as cuDNN
 *   orders a grouped convolution's outputs.
 * - One cuDNN handle per GPU, on its stream, made at the first
 *   convolution. The handle and the cache are used under one lock, since
 *   a handle must not be used by two threads at once. */
#include "internal.h"

#include "../cpu/conv.h"
#include "launch.h"

#ifdef TFMINI_WITH_CUDNN

#include <cudnn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define MAX_ALGOS 8
#define CACHE_SIZE 128
#define KEY_LEN 20

typedef struct plan {
    int kind;               /* TFM_CONV_FWD / BWD_DATA / BWD_WEIGHTS */
    tfm_conv_geom g;
    int64_t pb, pr;         /* trailing pads giving TF's output size */
    int padded;             /* pads uneven: cuDNN sees a padded copy */
    int64_t hp, wp;         /* x's spatial size as cuDNN sees it */
    int tf32;
} plan;

typedef struct cached {
    int64_t key[KEY_LEN];
    int algos[MAX_ALGOS];
    int n_algos, good;      /* good: the index that ran last */
} cached;

static pthread_mutex_t dnn_lock = PTHREAD_MUTEX_INITIALIZER;
static cudnnHandle_t handles[TFM_MAX_DEVICES];
static cached cache[CACHE_SIZE];
static int cache_used, cache_next;
static long calls, fallbacks;
/* Set (under dnn_lock) when cuDNN has no algorithm for the last
 * convolution: a gap in what it supports, not an error, so the op runs
 * the CPU kernel on host copies instead (counted in fallbacks). */
static int unsupported;

/* cuDNN 9 reports a gap with a NOT_SUPPORTED_* subcode (3001 layout,
 * 3002 shape, ...: CUDNN_STATUS_CATEGORY gives 3000); earlier versions
 * with CUDNN_STATUS_NOT_SUPPORTED itself. Comparing with == alone made
 * a 9.x gap (grouped NHWC, say) an error instead of a CPU fallback. */
static int
is_gap(cudnnStatus_t s)
{
#ifdef CUDNN_STATUS_CATEGORY
    return CUDNN_STATUS_CATEGORY((int)s) == (int)CUDNN_STATUS_NOT_SUPPORTED;
#else
    return s == CUDNN_STATUS_NOT_SUPPORTED;
#endif
}

static const char *const kind_call[3] = {
    "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
    "cudnnConvolutionBackwardFilter"};

/* The error for a cuDNN failure, naming the op, the call and the
 * geometry (what a user needs to report it). */
static tfm_code
dnn_error(tfm_op op, const plan *p, const char *what, cudnnStatus_t s)
{
    const tfm_conv_geom *g = &p->g;
    return tfm_error(s == CUDNN_STATUS_ALLOC_FAILED
                         ? TFM_ERR_RESOURCE_EXHAUSTED : TFM_ERR_INTERNAL,
                     "%s: cuDNN %s failed: %s (input [%lld,%lld,%lld,%lld] "
                     "float32, filter [%lld,%lld,%lld,%lld], strides "
                     "[%lld,%lld], dilations [%lld,%lld], pads "
                     "[%lld,%lld,%lld,%lld])", tfm_ops[op].name, what,
                     cudnnGetErrorString(s), (long long)g->n,
                     (long long)g->h, (long long)g->w, (long long)g->c,
                     (long long)g->kh, (long long)g->kw,
                     (long long)(g->c / g->groups), (long long)g->o, (long long)g->sh, (long long)g->sw,
                     (long long)g->dh, (long long)g->dw, (long long)g->pt,
                     (long long)p->pb, (long long)g->pl, (long long)p->pr);
}

/* Whether a failed cudnnCreate means cuDNN cannot run on this machine
 * at all (a sub-library missing or of another version, a driver,
 * runtime or GPU it does not support) rather than a passing failure
 * (out of memory). */
static int
cannot_start(cudnnStatus_t s)
{
#ifdef CUDNN_STATUS_CATEGORY
    return CUDNN_STATUS_CATEGORY((int)s) == 1000 || is_gap(s);
#else
    return s == CUDNN_STATUS_NOT_INITIALIZED || s == CUDNN_STATUS_ARCH_MISMATCH
           || is_gap(s);
#endif
}

/* cudnnCreate's status on a GPU where cuDNN cannot start, remembered so
 * that it is asked once. */
static cudnnStatus_t dead[TFM_MAX_DEVICES];

/* The GPU's handle, made on first use and bound to its stream; NULL
 * with the error set. Where cuDNN cannot start, the convolutions are a
 * gap (host copies, said once on stderr), as in a build without cuDNN:
 * the machine lacks part of cuDNN, the op's inputs are fine. Called
 * under dnn_lock. */
static cudnnHandle_t
handle_of(tfm_op op, tfm_gpu *gpu)
{
    cudnnHandle_t h = handles[gpu->dev.index];
    if (h)
        return h;
    cudnnStatus_t s = dead[gpu->dev.index];
    if (s == CUDNN_STATUS_SUCCESS) {
        s = cudnnCreate(&h);
        if (s == CUDNN_STATUS_SUCCESS &&
            (s = cudnnSetStream(h, gpu->stream)) != CUDNN_STATUS_SUCCESS)
            cudnnDestroy(h);
        if (s != CUDNN_STATUS_SUCCESS && cannot_start(s))
            dead[gpu->dev.index] = s;
    }
    if (s != CUDNN_STATUS_SUCCESS) {
        unsupported = cannot_start(s);
        tfm_error(TFM_ERR_INTERNAL, "%s: cudnnCreate on GPU:%d failed: %s",
                  tfm_ops[op].name, gpu->ordinal, cudnnGetErrorString(s));
        return NULL;
    }
    handles[gpu->dev.index] = h;
    return h;
}

/* The fewest cells after the input that TF's last window needs: with
 * them cuDNN's floor((in + pads - eff) / s) + 1 is TF's output size. */
static int64_t
trailing_pad(int64_t in, int64_t k, int64_t s, int64_t d, int64_t out,
             int64_t lead)
{
    int64_t need = (out - 1) * s + (k - 1) * d + 1 - in - lead;
    return need > 0 ? need : 0;
}

/* depthwise: f is DepthwiseConv2dNative's [kh, kw, c, m], run as a
 * grouped convolution (groups = c, o = c * m). */
static void
plan_make(plan *p, int kind, const tfm_shape *x, const tfm_shape *f,
          const tfm_attrs *a, int depthwise)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    tfm_conv_geom_make(&p->g, x, f->dims[0], f->dims[1],
                       depthwise ? f->dims[2] * f->dims[3] : f->dims[3],
                       a->ints[TFM_CONV_WIN_H], a->ints[TFM_CONV_WIN_W], a);
    if (depthwise)
        p->g.groups = p->g.c;
    const tfm_conv_geom *g = &p->g;
    p->pb = trailing_pad(g->h, g->kh, g->sh, g->dh, g->oh, g->pt);
    p->pr = trailing_pad(g->w, g->kw, g->sw, g->dw, g->ow, g->pl);
    p->padded = p->pb != g->pt || p->pr != g->pl;
    p->hp = p->padded ? g->h + g->pt + p->pb : g->h;
    p->wp = p->padded ? g->w + g->pl + p->pr : g->w;
    p->tf32 = tfm_cuda_tf32();
}

typedef struct descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t f;
    cudnnConvolutionDescriptor_t conv;
} descs;

static void
descs_free(descs *d)
{
    if (d->x)
        cudnnDestroyTensorDescriptor(d->x);
    if (d->y)
        cudnnDestroyTensorDescriptor(d->y);
    if (d->f)
        cudnnDestroyFilterDescriptor(d->f);
    if (d->conv)
        cudnnDestroyConvolutionDescriptor(d->conv);
}

static tfm_code
descs_make(tfm_op op, const plan *p, descs *d)
{
    const tfm_conv_geom *g = &p->g;
    /* cuDNN's descriptors hold int sizes and strides, so a tensor of 2^31
     * elements or more (x, y or the filter; each stride is at most the
     * count) is a gap, run on host copies as one cuDNN has no algorithm
     * for, not an error. */
    int64_t dims[] = {g->n, g->c, p->hp, p->wp, g->o, g->oh, g->ow, g->kh,
                      g->kw, g->sh, g->sw, g->dh, g->dw, g->pt, g->pl,
                      g->n * g->c * p->hp * p->wp,
                      g->n * g->o * g->oh * g->ow,
                      g->o * (g->c / g->groups) * g->kh * g->kw};
    memset(d, 0, sizeof *d);
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++)
        if (dims[k] > INT_MAX) {
            unsupported = 1;
            return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: a size (%lld) past "
                             "cuDNN's int sizes", tfm_ops[op].name,
                             (long long)dims[k]);
        }
    int pad_h = p->padded ? 0 : (int)g->pt, pad_w = p->padded ? 0
                                                               : (int)g->pl;
    cudnnStatus_t s;
    const char *what = "descriptor set-up";
    if ((s = cudnnCreateTensorDescriptor(&d->x)) ||
        (s = cudnnCreateTensorDescriptor(&d->y)) ||
        (s = cudnnCreateFilterDescriptor(&d->f)) ||
        (s = cudnnCreateConvolutionDescriptor(&d->conv)) ||
        (s = cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NHWC,
                                        CUDNN_DATA_FLOAT, (int)g->n,
                                        (int)g->c, (int)p->hp,
                                        (int)p->wp)) ||
        (s = cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NHWC,
                                        CUDNN_DATA_FLOAT, (int)g->n,
                                        (int)g->o, (int)g->oh,
                                        (int)g->ow)) ||
        (s = cudnnSetFilter4dDescriptor(d->f, CUDNN_DATA_FLOAT,
                                        CUDNN_TENSOR_NHWC, (int)g->o,
                                        (int)(g->c / g->groups),
                                        (int)g->kh, (int)g->kw)) ||
        (s = cudnnSetConvolution2dDescriptor(
             d->conv, pad_h, pad_w, (int)g->sh, (int)g->sw, (int)g->dh,
             (int)g->dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)) ||
        (s = cudnnSetConvolutionGroupCount(d->conv, (int)g->groups)) ||
        (s = cudnnSetConvolutionMathType(d->conv, p->tf32
                                                      ? CUDNN_DEFAULT_MATH
                                                      : CUDNN_FMA_MATH))) {
        descs_free(d);
        return dnn_error(op, p, what, s);
    }
    /* The geometry cuDNN derives must be TF's, or the output buffer is
     * the wrong size: a bug here, caught before any memory is written. */
    int n, c, h, w;
    s = cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->f, &n, &c,
                                              &h, &w);
    if (s || n != g->n || c != g->o || h != g->oh || w != g->ow) {
        descs_free(d);
        if (s)
            return dnn_error(op, p, "cudnnGetConvolution2dForwardOutputDim",
                             s);
        return tfm_error(TFM_ERR_INTERNAL, "%s: cuDNN's output [%d,%d,%d,%d]"
                         " is not TF's [%lld,%lld,%lld,%lld]",
                         tfm_ops[op].name, n, h, w, c, (long long)g->n,
                         (long long)g->oh, (long long)g->ow,
                         (long long)g->o);
    }
    return TFM_OK;
}

/* Whether a ranked result was rated under the math the descriptor asks
 * for: never a float16 down-conversion, tensor cores only with TF32 on.
 * The descriptor's math type is what runs either way, so results rated
 * otherwise still come after these as fallbacks. */
static int
math_ok(const plan *p, cudnnMathType_t m)
{
    if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        return 0;
    return p->tf32 || m != CUDNN_TENSOR_OP_MATH;
}

#define TAKE_RANKED(PERF, COUNT, CALL)                                       \
    do {                                                                     \
        PERF r[COUNT];                                                       \
        int got = 0;                                                         \
        s = CALL;                                                            \
        for (int pass = 0; pass < 2; pass++)                                 \
            for (int i = 0; !s && i < got && e->n_algos < MAX_ALGOS; i++)    \
                if (r[i].status == CUDNN_STATUS_SUCCESS &&                   \
                    math_ok(p, r[i].mathType) == !pass)                      \
                    e->algos[e->n_algos++] = (int)r[i].algo;                 \
    } while (0)

/* The cache entry of p on this GPU, ranking the algorithms the first
 * time; NULL with the error set. Called under dnn_lock. */
static cached *
algos_for(tfm_op op, cudnnHandle_t h, int dev, const plan *p,
          const descs *d)
{
    const tfm_conv_geom *g = &p->g;
    int64_t key[KEY_LEN] = {p->kind, dev, p->tf32, g->n, g->h, g->w, g->c,
                            g->kh, g->kw, g->o, g->sh, g->sw, g->dh, g->dw,
                            g->pt, g->pl, p->pb, p->pr, g->groups};
    for (int i = 0; i < cache_used; i++)
        if (!memcmp(cache[i].key, key, sizeof key))
            return &cache[i];
    cached *e = &cache[cache_next];
    cache_next = (cache_next + 1) % CACHE_SIZE;
    if (cache_used < CACHE_SIZE)
        cache_used++;
    memset(e, 0, sizeof *e);
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    switch (p->kind) {
    case TFM_CONV_FWD:
        TAKE_RANKED(cudnnConvolutionFwdAlgoPerf_t,
                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                    cudnnGetConvolutionForwardAlgorithm_v7(
                        h, d->x, d->f, d->conv, d->y,
                        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, r));
        break;
    case TFM_CONV_BWD_DATA:
        TAKE_RANKED(cudnnConvolutionBwdDataAlgoPerf_t,
                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                    cudnnGetConvolutionBackwardDataAlgorithm_v7(
                        h, d->f, d->y, d->conv, d->x,
                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, r));
        break;
    default:
        TAKE_RANKED(cudnnConvolutionBwdFilterAlgoPerf_t,
                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                    cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                        h, d->x, d->y, d->conv, d->f,
                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, r));
        break;
    }
    if (s || e->n_algos == 0) {
        /* Not cached: the next call asks again. */
        e->key[0] = -1;
        unsupported = s == CUDNN_STATUS_SUCCESS || is_gap(s);
        if (s)
            dnn_error(op, p, "algorithm ranking", s);
        else
            dnn_error(op, p, "algorithm ranking (no algorithm supports "
                      "this convolution)", CUDNN_STATUS_NOT_SUPPORTED);
        return NULL;
    }
    memcpy(e->key, key, sizeof key);
    return e;
}

static cudnnStatus_t
workspace_size(cudnnHandle_t h, const plan *p, const descs *d, int algo,
               size_t *ws)
{
    switch (p->kind) {
    case TFM_CONV_FWD:
        return cudnnGetConvolutionForwardWorkspaceSize(
            h, d->x, d->f, d->conv, d->y, (cudnnConvolutionFwdAlgo_t)algo,
            ws);
    case TFM_CONV_BWD_DATA:
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, d->f, d->y, d->conv, d->x,
            (cudnnConvolutionBwdDataAlgo_t)algo, ws);
    default:
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, d->x, d->y, d->conv, d->f,
            (cudnnConvolutionBwdFilterAlgo_t)algo, ws);
    }
}

/* One cuDNN call: FWD a = x, b = f (OHWI), out = y; BWD_DATA a = f
 * (OHWI), b = dy, out = dx; BWD_WEIGHTS a = x, b = dy, out = df (OHWI). */
static cudnnStatus_t
launch(cudnnHandle_t h, const plan *p, const descs *d, int algo,
       const void *a, const void *b, void *out, void *ws, size_t wsz)
{
    const float one = 1.0f, zero = 0.0f;
    switch (p->kind) {
    case TFM_CONV_FWD:
        return cudnnConvolutionForward(
            h, &one, d->x, a, d->f, b, d->conv,
            (cudnnConvolutionFwdAlgo_t)algo, ws, wsz, &zero, d->y, out);
    case TFM_CONV_BWD_DATA:
        return cudnnConvolutionBackwardData(
            h, &one, d->f, a, d->y, b, d->conv,
            (cudnnConvolutionBwdDataAlgo_t)algo, ws, wsz, &zero, d->x, out);
    default:
        return cudnnConvolutionBackwardFilter(
            h, &one, d->x, a, d->y, b, d->conv,
            (cudnnConvolutionBwdFilterAlgo_t)algo, ws, wsz, &zero, d->f,
            out);
    }
}

/* The ranked algorithms in turn, from the one that last ran, until one
 * runs. Called under dnn_lock. */
static tfm_code
run_ranked(tfm_op op, const tfm_kctx *ctx, tfm_gpu *gpu, const plan *p,
           const void *a, const void *b, void *out)
{
    cudnnHandle_t h = handle_of(op, gpu);
    if (!h)
        return tfm_error_code();
    descs d;
    tfm_code rc = descs_make(op, p, &d);
    if (rc)
        return rc;
    cached *e = algos_for(op, h, gpu->dev.index, p, &d);
    if (!e) {
        descs_free(&d);
        return tfm_error_code();
    }
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    int out_of_memory = 0;
    for (int t = 0; t < e->n_algos; t++) {
        int at = (e->good + t) % e->n_algos, algo = e->algos[at];
        size_t wsz = 0;
        void *ws = NULL;
        cudnnStatus_t s = workspace_size(h, p, &d, algo, &wsz);
        if (s) {
            last = s;
            continue;
        }
        if (wsz && !(ws = ctx->scratch_alloc(ctx, wsz))) {
            /* Another algorithm may need less. */
            out_of_memory = 1;
            continue;
        }
        s = launch(h, p, &d, algo, a, b, out, ws, wsz);
        if (ws)
            ctx->scratch_free(ctx, ws, wsz);
        if (s == CUDNN_STATUS_SUCCESS) {
            e->good = at;
            calls++;
            descs_free(&d);
            return TFM_OK;
        }
        last = s;
    }
    descs_free(&d);
    if (out_of_memory) {
        /* The allocator's message, copied: tfm_error rewrites it. */
        char why[256];
        snprintf(why, sizeof why, "%s", tfm_error_message());
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of GPU memory "
                         "for every cuDNN algorithm's workspace (%s)",
                         tfm_ops[op].name, why);
    }
    unsupported = is_gap(last);
    return dnn_error(op, p, kind_call[p->kind], last);
}

/* HWIO <-> OHWI, the filter layouts of TF and of cuDNN's NHWC. */
static int
filter_to_ohwi(const tfm_conv_geom *g, const void *hwio, void *ohwi,
               void *stream)
{
    int64_t kh = g->kh, kw = g->kw, c = g->c / g->groups, o = g->o;
    int64_t dims[4] = {o, kh, kw, c};
    int64_t src[4] = {1, kw * c * o, c * o, o};
    return tfm_cu_transpose(4, hwio, ohwi, 4, dims, src, o * kh * kw * c,
                            stream);
}

static int
filter_to_hwio(const tfm_conv_geom *g, const void *ohwi, void *hwio,
               void *stream)
{
    int64_t kh = g->kh, kw = g->kw, c = g->c / g->groups, o = g->o;
    int64_t dims[4] = {kh, kw, c, o};
    int64_t src[4] = {kw * c, c, 1, kh * kw * c};
    return tfm_cu_transpose(4, ohwi, hwio, 4, dims, src, o * kh * kw * c,
                            stream);
}

/* Scratch buffers of one call, freed together. */
typedef struct scratch {
    const tfm_kctx *ctx;
    void *p[2];
    size_t n[2];
    int used;
} scratch;

static void *
scratch_get(scratch *s, size_t n)
{
    void *p = s->ctx->scratch_alloc(s->ctx, n ? n : 4);
    if (p) {
        s->p[s->used] = p;
        s->n[s->used++] = n ? n : 4;
    }
    return p;
}

static void
scratch_drop(scratch *s)
{
    while (s->used-- > 0)
        s->ctx->scratch_free(s->ctx, s->p[s->used], s->n[s->used]);
}

/* A launcher's failure as the op's error. */
#define LAUNCHED(call)                                                       \
    do {                                                                     \
        int lrc_ = (call);                                                   \
        if (lrc_)                                                            \
            return tfm_cu_launched(op, lrc_);                                \
    } while (0)

/* One convolution of kind p->kind with operands as run_ranked takes
 * them, but the filter (f or df) in TF's HWIO and x at TF's size; the
 * layout and padding copies around the cuDNN call. Called under
 * dnn_lock. */
static tfm_code
conv_locked(tfm_op op, const plan *p, const tfm_kctx *ctx, tfm_gpu *gpu,
            scratch *sc, const void *a, const void *b, void *out)
{
    const tfm_conv_geom *g = &p->g;
    void *stream = gpu->stream;
    /* Before any copy: where cuDNN cannot start they would be wasted. */
    if (!handle_of(op, gpu))
        return tfm_error_code();
    void *fbuf = scratch_get(sc, (size_t)(g->kh * g->kw * (g->c / g->groups)
                                          * g->o) * 4);
    if (!fbuf)
        return tfm_error_code();
    size_t xpad_bytes = (size_t)(g->n * p->hp * p->wp * g->c) * 4;
    /* x, padded when cuDNN must see it padded. */
    const void *x = a;
    if (p->kind != TFM_CONV_BWD_DATA && p->padded) {
        void *xp = scratch_get(sc, xpad_bytes);
        if (!xp)
            return tfm_error_code();
        LAUNCHED(tfm_cu_pad_nhwc(4, a, xp, g->n, g->h, g->w, g->c, p->hp,
                                 p->wp, g->pt, g->pl, stream));
        x = xp;
    }
    tfm_code rc;
    switch (p->kind) {
    case TFM_CONV_FWD:
        LAUNCHED(filter_to_ohwi(g, b, fbuf, stream));
        return run_ranked(op, ctx, gpu, p, x, fbuf, out);
    case TFM_CONV_BWD_DATA: {
        void *dx = out;
        if (p->padded && !(dx = scratch_get(sc, xpad_bytes)))
            return tfm_error_code();
        LAUNCHED(filter_to_ohwi(g, a, fbuf, stream));
        if ((rc = run_ranked(op, ctx, gpu, p, fbuf, b, dx)))
            return rc;
        /* The padded dx's interior is TF's dx. */
        if (p->padded)
            LAUNCHED(tfm_cu_pad_nhwc(4, dx, out, g->n, p->hp, p->wp, g->c,
                                     g->h, g->w, -g->pt, -g->pl, stream));
        return TFM_OK;
    }
    default:
        if ((rc = run_ranked(op, ctx, gpu, p, x, b, fbuf)))
            return rc;
        LAUNCHED(filter_to_hwio(g, fbuf, out, stream));
        return TFM_OK;
    }
}

/* a, b: FWD x, f; BWD_DATA f, dy; BWD_WEIGHTS x, dy. *on_host is set
 * (and nothing run) when cuDNN cannot take the convolution: the caller
 * runs its op's CPU kernel on host copies instead. */
static tfm_code
conv_gpu(tfm_op op, int kind, int depthwise, const tfm_tensor *a,
         const tfm_tensor *b, const tfm_attrs *at, tfm_tensor *y,
         const tfm_kctx *ctx, int *on_host)
{
    *on_host = y->dtype != TFM_FLOAT32 || a->dtype != TFM_FLOAT32 ||
               b->dtype != TFM_FLOAT32;
    if (*on_host)
        return TFM_OK;
    int64_t no = tfm_tensor_numel(y);
    if (no == 0)
        return TFM_OK;
    tfm_gpu *gpu = tfm_cu_gpu(ctx);
    /* Empty sums (no input channels, batch or output channels): zeros,
     * and cuDNN rejects zero-sized descriptors. */
    if (tfm_tensor_numel(a) == 0 || tfm_tensor_numel(b) == 0)
        return tfm_gpu_check(cudaMemsetAsync(tfm_tensor_data(y), 0,
                                             (size_t)no * 4, gpu->stream),
                             tfm_ops[op].name);
    const tfm_shape *xs = kind == TFM_CONV_BWD_DATA ? &y->shape
                                                    : &a->shape;
    const tfm_shape *fs = kind == TFM_CONV_FWD ? &b->shape
                        : kind == TFM_CONV_BWD_DATA ? &a->shape
                                                    : &y->shape;
    plan p;
    plan_make(&p, kind, xs, fs, at, depthwise);
    scratch sc = {.ctx = ctx};
    pthread_mutex_lock(&dnn_lock);
    unsupported = 0;
    tfm_code rc = conv_locked(op, &p, ctx, gpu, &sc, tfm_tensor_data(a),
                              tfm_tensor_data(b), tfm_tensor_data(y));
    *on_host = rc && unsupported;
    fallbacks += *on_host;
    /* The first gap is said once: the fallback is silent otherwise, and
     * a device run must show which geometry and status caused it. */
    if (*on_host && fallbacks == 1)
        fprintf(stderr, "tfmini: cuDNN cannot run this convolution; it "
                "runs on host copies (counted in "
                "tfm_cuda_cudnn_fallbacks): %s\n", tfm_error_message());
    pthread_mutex_unlock(&dnn_lock);
    scratch_drop(&sc);
    return *on_host ? TFM_OK : rc;
}

static tfm_code
conv(tfm_op op, int kind, const tfm_tensor *a, const tfm_tensor *b,
     tfm_tensor *const *in, int nin, const tfm_attrs *at,
     tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    int on_host;
    int dw = op == TFM_OP_DEPTHWISE_CONV2D ||
             op == TFM_OP_DEPTHWISE_CONV2D_BACKPROP_INPUT ||
             op == TFM_OP_DEPTHWISE_CONV2D_BACKPROP_FILTER;
    tfm_code rc = conv_gpu(op, kind, dw, a, b, at, out[0], ctx, &on_host);
    if (on_host)
        return tfm_cu_on_host(op, in, nin, at, out, nout, ctx);
    return rc;
}

tfm_code
tfm_cu_conv2d_forward(tfm_op op, const tfm_tensor *x, const tfm_tensor *f,
                      const tfm_attrs *a, tfm_tensor *y, const tfm_kctx *ctx,
                      int *on_host)
{
    return conv_gpu(op, TFM_CONV_FWD, 0, x, f, a, y, ctx, on_host);
}

static tfm_code
k_conv2d(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    return conv(op, TFM_CONV_FWD, in[0], in[1], in, nin, a, out, nout, ctx);
}

/* (input, filter, dy) or (filter, dy): the last two. */
static tfm_code
k_conv2d_backprop_input(tfm_op op, tfm_tensor *const *in, int nin,
                        const tfm_attrs *a, tfm_tensor *const *out, int nout,
                        const tfm_kctx *ctx)
{
    return conv(op, TFM_CONV_BWD_DATA, in[nin - 2], in[nin - 1], in, nin, a,
                out, nout, ctx);
}

/* (input, filter, dy) or (input, dy): the first and the last. */
static tfm_code
k_conv2d_backprop_filter(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    return conv(op, TFM_CONV_BWD_WEIGHTS, in[0], in[nin - 1], in, nin, a,
                out, nout, ctx);
}

void
tfm_cuda_kernels_conv_init(tfm_kernel_fn *table)
{
    table[TFM_OP_CONV2D] = k_conv2d;
    table[TFM_OP_CONV2D_BACKPROP_INPUT] = k_conv2d_backprop_input;
    table[TFM_OP_CONV2D_BACKPROP_FILTER] = k_conv2d_backprop_filter;
    /* DepthwiseConv2dNative's three ops take the conv ops' operands
     * (their backprops always the three-input form). */
    table[TFM_OP_DEPTHWISE_CONV2D] = k_conv2d;
    table[TFM_OP_DEPTHWISE_CONV2D_BACKPROP_INPUT] = k_conv2d_backprop_input;
    table[TFM_OP_DEPTHWISE_CONV2D_BACKPROP_FILTER] = k_conv2d_backprop_filter;
}

int
tfm_cuda_cudnn_version(void)
{
    return (int)cudnnGetVersion();
}

long
tfm_cuda_cudnn_calls(void)
{
    pthread_mutex_lock(&dnn_lock);
    long n = calls;
    pthread_mutex_unlock(&dnn_lock);
    return n;
}

/* Convolutions cuDNN had no algorithm for, run on host copies instead
 * (read through ctypes, as the two above). */
long tfm_cuda_cudnn_fallbacks(void);

long
tfm_cuda_cudnn_fallbacks(void)
{
    pthread_mutex_lock(&dnn_lock);
    long n = fallbacks;
    pthread_mutex_unlock(&dnn_lock);
    return n;
}

#else   /* no cuDNN: the conv ops have no GPU entry (soft placement) */

void
tfm_cuda_kernels_conv_init(tfm_kernel_fn *table)
{
    (void)table;
}

int
tfm_cuda_cudnn_version(void)
{
    return 0;
}

long
tfm_cuda_cudnn_calls(void)
{
    return 0;
}

long tfm_cuda_cudnn_fallbacks(void);

long
tfm_cuda_cudnn_fallbacks(void)
{
    return 0;
}

#endif
