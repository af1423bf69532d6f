/* The GPU's random ops (random.cu): the C glue. RandomUniform,
 * RandomStandardNormal, TruncatedNormal and RandomUniformInt in every
 * dtype they take (float16 too), RandomShuffle and Multinomial. The key
 * and counter come from cpu/random.c's tfm_random_stream, so a traced
 * op's runs are counted in the same table whichever device runs them,
 * and the words from philox.h's block function: a seed gives the CPU's
 * stream (Note [Random streams]). Nothing here moves a generator's
 * state: eager draws carry their counter in the attrs and the Python
 * layer has already moved it; a traced tf.random.Generator's graph
 * moves its state variable with its own ops. Only the sampling ops take
 * a state input; RandomShuffle's and Multinomial's input is data, their
 * stream always the attrs'. */
#include "internal.h"

#include <stdlib.h>

#include "../../core/dtype.h"
#include "../cpu/random.h"
#include "launch_ops.h"

/* TF reserves 256 blocks per output (cpu/random.c's BLOCKS_PER_OUTPUT). */
#define BLOCKS_PER_OUTPUT 256

static int
dist_of(tfm_op op)
{
    switch (op) {
    case TFM_OP_RANDOM_UNIFORM: return TFM_CU_UNIFORM;
    case TFM_OP_RANDOM_STANDARD_NORMAL: return TFM_CU_NORMAL;
    case TFM_OP_TRUNCATED_NORMAL: return TFM_CU_TRUNCATED;
    default: return TFM_CU_UNIFORM_INT;
    }
}

/* float16 as cpu/random.c takes it: each step in float32, rounded to
 * half after each one. */
static float
h(float x)
{
    return tfm_half_to_float(tfm_float_to_half(x));
}

static tfm_code
k_random(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = out[0]->dtype;
    int dist = dist_of(op);
    int half = d == TFM_FLOAT16 && dist != TFM_CU_UNIFORM_INT;
    int kind = tfm_cu_out_kind(d);
    if (!half && (kind < 0 || (dist == TFM_CU_UNIFORM_INT) !=
                              (kind >= TFM_CU_OUT_I32)))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t n = tfm_tensor_numel(out[0]);
    /* A traced Generator's state [counter lo, counter hi, key] is an
     * input on this GPU: three words read back before the draw. */
    int64_t state[3];
    if (nin == 1) {
        tfm_code rc = ctx->device->copy_to_host(ctx->device, state,
                                                tfm_tensor_data(in[0]),
                                                sizeof state);
        if (rc)
            return rc;
    }
    uint64_t key, lo, hi;
    tfm_code rc = tfm_random_stream(a, nin == 1 ? state : NULL,
                                    (uint64_t)n * BLOCKS_PER_OUTPUT, &key,
                                    &lo, &hi);
    if (rc)
        return rc;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int e;
    if (half) {
        float p0 = h((float)a->f[0]), p1 = h((float)a->f[1]);
        if (dist == TFM_CU_UNIFORM)
            p1 = h(p1 - p0);
        e = tfm_cu_random_half(dist, key, lo, hi, p0, p1,
                               tfm_tensor_data(out[0]), n, g->stream);
    } else {
        /* The parameters rounded as the CPU kernel rounds them. */
        double p0 = a->f[0], p1 = a->f[1];
        if (dist == TFM_CU_UNIFORM)
            p1 = kind == TFM_CU_OUT_F32
                     ? (double)((float)a->f[1] - (float)a->f[0])
                     : a->f[1] - a->f[0];
        int full = a->f[0] != 0.0;
        uint64_t ilo = 0, ispan = 0;
        if (dist == TFM_CU_UNIFORM_INT && !full) {
            ilo = (uint64_t)a->i[4];
            ispan = (uint64_t)a->i[5] - (uint64_t)a->i[4];
        }
        e = tfm_cu_random(dist, kind, key, lo, hi, p0, p1, ilo, ispan,
                          tfm_tensor_data(out[0]), n, g->stream);
    }
    /* Not the CPU kernel on host copies here: the run is counted. */
    if (e < 0)
        return tfm_error(TFM_ERR_INTERNAL, "%s: no GPU kernel for %s",
                         tfm_ops[op].name, tfm_dtype_name(d));
    return tfm_cu_launched(op, e);
}

/* RandomShuffle: cpu/random.c's permutation (made on the host, see
 * random.cu's shuffle_perm), then its rows gathered on the GPU. Any
 * dtype of 1, 2, 4, 8 or 16 bytes; strings stay with the CPU kernel. */
static tfm_code
k_shuffle(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_tensor *x = in[0];
    size_t es = tfm_dtype_size(x->dtype), nbytes = tfm_tensor_nbytes(x);
    if (x->dtype == TFM_STRING ||
        (es != 1 && es != 2 && es != 4 && es != 8 && es != 16))
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    void *o = tfm_tensor_data(out[0]);
    /* As the CPU: a scalar or a single row passes through, drawing
     * nothing (a traced op's run is not counted). */
    if (x->shape.ndim == 0 || x->shape.dims[0] <= 1) {
        if (!nbytes)
            return TFM_OK;
        return tfm_gpu_check(cudaMemcpyAsync(o, tfm_tensor_data(x), nbytes,
                                             cudaMemcpyDeviceToDevice,
                                             g->stream),
                             tfm_ops[op].name);
    }
    int64_t rows = x->shape.dims[0];
    uint64_t key, lo, hi;
    /* As the CPU: rows - 1 words, reserved in whole blocks. */
    tfm_code rc = tfm_random_stream(a, NULL, ((uint64_t)rows + 2) / 4, &key,
                                    &lo, &hi);
    if (rc || !nbytes)
        return rc;
    size_t pb = (size_t)rows * sizeof(int64_t);
    int64_t *perm = malloc(pb);
    if (!perm)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: cannot allocate "
                         "a permutation of %lld rows", tfm_ops[op].name,
                         (long long)rows);
    tfm_cu_shuffle_perm(key, lo, hi, rows, perm);
    int64_t *dperm = ctx->scratch_alloc(ctx, pb);
    if (!dperm) {
        free(perm);
        return tfm_error_code();
    }
    rc = ctx->device->copy_from_host(ctx->device, dperm, perm, pb);
    free(perm);
    if (!rc)
        rc = tfm_cu_launched(op, tfm_cu_gather(
            (int)es, 1, tfm_tensor_data(x), dperm, o, 1, rows,
            tfm_tensor_numel(x) / rows, rows, g->stream));
    ctx->scratch_free(ctx, dperm, pb);
    return rc;
}

/* Multinomial (tf.random.categorical): cpu/random.c's stream, CDFs and
 * samples (random.cu's mn_* passes), float16/32/64 logits. */
static tfm_code
k_multinomial(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_tensor *x = in[0];
    int ty = x->dtype == TFM_FLOAT32 ? TFM_CU_F32 :
             x->dtype == TFM_FLOAT64 ? TFM_CU_F64 :
             x->dtype == TFM_FLOAT16 ? TFM_CU_F16 : -1;
    if (ty < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t batch = x->shape.dims[0], classes = x->shape.dims[1];
    int64_t n = a->i[4];
    /* As the CPU: nothing to draw, no run counted. */
    if (batch == 0 || n == 0)
        return TFM_OK;
    /* The CPU's reservation: 256 blocks for each of ceil4(n) * 2
     * doubles a row. */
    uint64_t reserve = (uint64_t)batch * (uint64_t)((n + 3) / 4 * 4) * 2 *
                       BLOCKS_PER_OUTPUT;
    uint64_t key, lo, hi;
    tfm_code rc = tfm_random_stream(a, NULL, reserve, &key, &lo, &hi);
    if (rc)
        return rc;
    size_t sb = (size_t)batch * (size_t)(classes + 2) * sizeof(double);
    double *scratch = ctx->scratch_alloc(ctx, sb);
    if (!scratch)
        return tfm_error_code();
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int e = tfm_cu_multinomial(ty, out[0]->dtype == TFM_INT64, key, lo, hi,
                               tfm_tensor_data(x), batch, classes, n,
                               scratch, tfm_tensor_data(out[0]), g->stream);
    ctx->scratch_free(ctx, scratch, sb);
    return tfm_cu_launched(op, e);
}

void
tfm_cuda_kernels_random_init(tfm_kernel_fn *table)
{
    table[TFM_OP_RANDOM_UNIFORM] = table[TFM_OP_RANDOM_STANDARD_NORMAL] =
        table[TFM_OP_TRUNCATED_NORMAL] = table[TFM_OP_RANDOM_UNIFORM_INT] =
            k_random;
    table[TFM_OP_RANDOM_SHUFFLE] = k_shuffle;
    table[TFM_OP_MULTINOMIAL] = k_multinomial;
}
