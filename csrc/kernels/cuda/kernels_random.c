/* The GPU's RandomUniform, RandomStandardNormal, TruncatedNormal and
 * RandomUniformInt (random.cu): the C glue. The key and counter come
 * from cpu/random.c's tfm_random_stream, so a traced op's runs are
 * counted in the same table whichever device runs them, and the words
 * from philox.h's block function: a seed gives the CPU's stream (Note
 * [Random streams]). Nothing here moves a generator's state: eager
 * draws carry their counter in the attrs and the Python layer has
 * already moved it; a traced tf.random.Generator's graph moves its
 * state variable with its own ops. float16 runs the CPU kernel on host
 * copies. */
#include "internal.h"

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

static tfm_code
k_random(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = out[0]->dtype;
    int dist = dist_of(op);
    int kind = tfm_cu_out_kind(d);
    if (kind < 0 || (dist == TFM_CU_UNIFORM_INT) != (kind >= TFM_CU_OUT_I32))
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
    /* The parameters rounded as the CPU kernel rounds them. */
    double p0 = a->f[0], p1 = a->f[1];
    if (dist == TFM_CU_UNIFORM)
        p1 = kind == TFM_CU_OUT_F32 ? (double)((float)a->f[1] - (float)a->f[0])
                                : a->f[1] - a->f[0];
    int full = a->f[0] != 0.0;
    uint64_t ilo = 0, ispan = 0;
    if (dist == TFM_CU_UNIFORM_INT && !full) {
        ilo = (uint64_t)a->i[4];
        ispan = (uint64_t)a->i[5] - (uint64_t)a->i[4];
    }
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int e = tfm_cu_random(dist, kind, key, lo, hi, p0, p1, ilo, ispan,
                          tfm_tensor_data(out[0]), n, g->stream);
    /* Not the CPU kernel on host copies here: the run is counted. */
    if (e < 0)
        return tfm_error(TFM_ERR_INTERNAL, "%s: no GPU kernel for %s",
                         tfm_ops[op].name, tfm_dtype_name(d));
    return tfm_cu_launched(op, e);
}

void
tfm_cuda_kernels_random_init(tfm_kernel_fn *table)
{
    table[TFM_OP_RANDOM_UNIFORM] = table[TFM_OP_RANDOM_STANDARD_NORMAL] =
        table[TFM_OP_TRUNCATED_NORMAL] = table[TFM_OP_RANDOM_UNIFORM_INT] =
            k_random;
}
