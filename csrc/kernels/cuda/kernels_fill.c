/* The GPU's Fill, ZerosLike and OnesLike (fill.cu), every dtype but
 * strings (which never reach a GPU kernel: placement keeps ops on
 * strings on the CPU). What every gradient's seed and Keras's zero
 * initial states run: without them each soft-placed on the CPU and its
 * result was copied across. */
#include "internal.h"

#include "launch_fused.h"

static tfm_code
k_fill(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
       tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_tensor *o = out[0];
    int64_t n = tfm_tensor_numel(o);
    size_t es = tfm_dtype_size(o->dtype);
    if (o->dtype == TFM_STRING || es > 16)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (n == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    if (op == TFM_OP_ZEROS_LIKE)
        return tfm_gpu_check(cudaMemsetAsync(tfm_tensor_data(o), 0,
                                             (size_t)n * es, g->stream),
                             tfm_ops[op].name);
    char one[16] = {0};
    if (op == TFM_OP_ONES_LIKE) {
        /* 1 in o's dtype, converted as the CPU kernel converts it: into
         * a host tensor of o's dtype over `one`. */
        tfm_buffer b = {.refcount = 1, .data = one, .nbytes = es};
        tfm_tensor t = *o;
        t.device = 0;
        t.buf = &b;
        t.offset = 0;
        tfm_tensor_set_f64(&t, 0, 1.0);
    }
    int rc = tfm_cu_fill((int)es, op == TFM_OP_FILL ? tfm_tensor_data(in[0])
                                                    : NULL,
                         one, tfm_tensor_data(o), n, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

void
tfm_cuda_kernels_fill_init(tfm_kernel_fn *table)
{
    table[TFM_OP_FILL] = table[TFM_OP_ZEROS_LIKE] = k_fill;
    table[TFM_OP_ONES_LIKE] = k_fill;
}
