/* The GPU's kernel table: which ops run on a GPU and how (Note [Device
 * seam] in core/device.h). Elementwise ops run the rows of
 * ../ew_formulas.def compiled for the GPU (ew.cu), float comparisons a
 * kernel of their own there, reductions (the four float types, and
 * All / Any) reduce.cu,
 * BatchMatMulV2 kernels_matmul.c, the byte-copy shape ops a device
 * copy. Every
 * other op has no entry, so the dispatcher runs it on the CPU with
 * copies (TF's soft placement).
 *
 * An op that has a GPU kernel but not for the dtype it is given (integer
 * AddV2, a cast to int8, ...) runs its CPU kernel here on host copies of
 * its inputs, and its outputs are copied back: the kernel table is per
 * op, not per dtype, and the result is right, only slower. The staged
 * tensors are stack structs over malloc'd memory, since kernels may run
 * without the caller's lock and must not make tensors. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "../cpu/cpu_takes.h"
#include "../cpu/loops.h"
#include "../cpu/reduce.h"
#include "../cpu/shape.h"
#include "launch.h"

static tfm_kernel_fn table[TFM_OP_COUNT];
const void *const tfm_cuda_kernels = table;

tfm_gpu *
tfm_cu_gpu(const tfm_kctx *c)
{
    tfm_gpu *g = tfm_gpu_of(c->device);
    tfm_gpu_use(g);
    return g;
}

tfm_code
tfm_cu_launched(tfm_op op, int rc)
{
    if (rc == 0)
        return TFM_OK;
    cudaGetLastError();
    return tfm_error(rc == cudaErrorMemoryAllocation
                         ? TFM_ERR_RESOURCE_EXHAUSTED : TFM_ERR_INTERNAL,
                     "%s: CUDA error %s", tfm_ops[op].name,
                     cudaGetErrorString((cudaError_t)rc));
}

/* ---- the CPU kernel on host copies ---- */

tfm_code
tfm_cu_on_host(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_kernel_fn k = tfm_ops[op].cpu;
    const tfm_device *d = ctx->device;
    tfm_buffer bufs[TFM_MAX_INPUTS + TFM_MAX_OUTPUTS];
    tfm_tensor ts[TFM_MAX_INPUTS + TFM_MAX_OUTPUTS];
    tfm_tensor *hin[TFM_MAX_INPUTS], *hout[TFM_MAX_OUTPUTS];
    int n = nin + nout, made = 0;
    tfm_code rc = TFM_OK;
    if (!k)
        return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s has no CPU kernel",
                         tfm_ops[op].name);
    /* A 16-bit float reaches here only from a kernel that takes_half
     * marks, or from Cast (which the CPU takes in every dtype): the CPU
     * kernel would misread one it does not take. */
    for (int i = 0; i < n; i++) {
        tfm_dtype d = i < nin ? in[i]->dtype : out[i - nin]->dtype;
        if (!tfm_cpu_kernel_takes(op, d))
            return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: no GPU kernel for "
                             "%s here, and the CPU kernel does not take it",
                             tfm_ops[op].name, tfm_dtype_name(d));
    }
    for (made = 0; made < n; made++) {
        const tfm_tensor *t = made < nin ? in[made] : out[made - nin];
        size_t nb = tfm_tensor_nbytes(t);
        void *p = aligned_alloc(64, nb ? (nb + 63) / 64 * 64 : 64);
        if (!p) {
            rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM staging "
                           "%zu bytes on the host", tfm_ops[op].name, nb);
            goto done;
        }
        bufs[made] = (tfm_buffer){.refcount = 1, .data = p, .nbytes = nb};
        ts[made] = *t;
        ts[made].device = 0;
        ts[made].buf = &bufs[made];
        ts[made].offset = 0;
        if (made < nin) {
            hin[made] = &ts[made];
            if (nb && (rc = d->copy_to_host(d, p, tfm_tensor_data(t), nb)))
                goto done_one;
        } else {
            hout[made - nin] = &ts[made];
        }
    }
    rc = k(op, hin, nin, a, hout, nout, &tfm_kctx_cpu);
    for (int j = 0; !rc && j < nout; j++) {
        size_t nb = tfm_tensor_nbytes(out[j]);
        if (nb)
            rc = d->copy_from_host(d, tfm_tensor_data(out[j]),
                                   bufs[nin + j].data, nb);
    }
    /* from_host may return before the DMA leaves a pinned half, never
     * before it has read pageable memory: freeing now is safe. */
    goto done;
done_one:
    made++;
done:
    while (made-- > 0)
        free(bufs[made].data);
    return rc;
}

/* ---- elementwise ---- */

enum { EWK_NONE, EWK_BINARY, EWK_UNARY, EWK_HEAVY, EWK_PARAM, EWK_OWN };

static const unsigned char ew_kind[TFM_OP_COUNT] = {
#define EW(OP, LOOP, F32, F64) [TFM_OP_##OP] = EWK_##LOOP,
#define EW_NONE(OP)
#include "../ew_formulas.def"
#undef EW
#undef EW_NONE
};

/* Row + 1 (0: none). */
static const short ew_row[TFM_OP_COUNT] = {
#define EW(OP, LOOP, F32, F64) [TFM_OP_##OP] = TFM_CU_EW_##OP + 1,
#define EW_NONE(OP)
#include "../ew_formulas.def"
#undef EW
#undef EW_NONE
};

/* The launchers' element type (launch.h), or -1. */
static int
ew_type(tfm_dtype d)
{
    switch (d) {
    case TFM_FLOAT32: return TFM_CU_F32;
    case TFM_FLOAT64: return TFM_CU_F64;
    case TFM_FLOAT16: return TFM_CU_F16;
    case TFM_BFLOAT16: return TFM_CU_BF16;
    default: return -1;
    }
}

/* Ops whose GPU kernel takes float16 and bfloat16 itself (computing in
 * float32 inside): tfm_cuda_takes_half tells the dispatcher, which
 * otherwise casts around the kernel (tfm_kernel_takes in
 * runtime/dispatch.c). Every kernel marked here must handle both types
 * on the GPU: tfm_cu_on_host refuses a 16-bit float the CPU kernel does
 * not take. */
static unsigned char takes_half[TFM_OP_COUNT];

/* The broadcast plan of in[0] op in[1] -> out[0] for the launchers. */
static int64_t
plan(tfm_tensor *const *in, tfm_tensor *const *out, tfm_cu_bcast *c)
{
    tfm_bcast p;
    tfm_bcast_plan(&in[0]->shape, &in[1]->shape, &out[0]->shape, &p);
    /* tfm_bcast_plan fills ndim and the strides only when general. */
    *c = (tfm_cu_bcast){.kind = (int)p.kind, .n = p.n};
    if (p.kind != TFM_BC_GENERAL)
        return p.n;
    c->ndim = p.ndim;
    for (int k = 0; k < p.ndim; k++) {
        c->dims[k] = p.dims[k];
        c->sa[k] = p.sa[k];
        c->sb[k] = p.sb[k];
    }
    return p.n;
}

static tfm_code
k_binary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int ty = ew_type(d);
    if (ty < 0 || in[1]->dtype != d || out[0]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    tfm_cu_bcast c;
    if (plan(in, out, &c) == 0)
        return TFM_OK;
    int rc = tfm_cu_binary(ew_row[op] - 1, ty, tfm_tensor_data(in[0]),
                           tfm_tensor_data(in[1]), tfm_tensor_data(out[0]),
                           &c, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_compare(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int cmp = op == TFM_OP_EQUAL ? 0 : op == TFM_OP_NOT_EQUAL ? 1
            : op == TFM_OP_LESS ? 2 : op == TFM_OP_LESS_EQUAL ? 3
            : op == TFM_OP_GREATER ? 4 : 5;
    int ty = ew_type(d);
    if (ty < 0 || in[1]->dtype != d || out[0]->dtype != TFM_BOOL)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    tfm_cu_bcast c;
    if (plan(in, out, &c) == 0)
        return TFM_OK;
    int rc = tfm_cu_compare(cmp, ty, tfm_tensor_data(in[0]),
                            tfm_tensor_data(in[1]), tfm_tensor_data(out[0]),
                            &c, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_unary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_dtype d = in[0]->dtype;
    int ty = ew_type(d);
    if (ty < 0 || out[0]->dtype != d)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_unary(ew_row[op] - 1, ty, tfm_tensor_data(in[0]),
                          tfm_tensor_data(out[0]), tfm_tensor_numel(out[0]),
                          a ? a->f[0] : 0.0, a ? (int)a->i[0] : 0,
                          g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static int
cast_code(tfm_dtype d)
{
    switch (d) {
    case TFM_FLOAT32: return 0;
    case TFM_FLOAT64: return 1;
    case TFM_INT32: return 2;
    case TFM_INT64: return 3;
    case TFM_BOOL: return 4;
    case TFM_FLOAT16: return 5;
    case TFM_BFLOAT16: return 6;
    default: return -1;
    }
}

static tfm_code
k_cast(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
       tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    int from = cast_code(in[0]->dtype), to = cast_code(out[0]->dtype);
    /* Float to integer gives the CPU's INT_MIN for NaN, infinities and
     * values out of range (ew.cu's float_to_i32/i64), as TF does; the
     * other dtypes run on host copies (the CPU's Cast takes them all). */
    if (from < 0 || to < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    if (from == to)
        return tfm_gpu_check(cudaMemcpyAsync(
            tfm_tensor_data(out[0]), tfm_tensor_data(in[0]),
            tfm_tensor_nbytes(in[0]), cudaMemcpyDeviceToDevice, g->stream),
            "Cast");
    int rc = tfm_cu_cast(from, to, tfm_tensor_data(in[0]),
                         tfm_tensor_data(out[0]), tfm_tensor_numel(out[0]),
                         g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_select(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *os = &out[0]->shape;
    if (in[0]->dtype != TFM_BOOL || os->ndim > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int64_t sc[TFM_MAX_DIMS], sx[TFM_MAX_DIMS], sy[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&in[0]->shape, os, sc);
    tfm_shape_broadcast_strides(&in[1]->shape, os, sx);
    tfm_shape_broadcast_strides(&in[2]->shape, os, sy);
    int rc = tfm_cu_select((int)tfm_dtype_size(out[0]->dtype),
                           tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
                           tfm_tensor_data(in[2]), tfm_tensor_data(out[0]),
                           os->ndim, os->dims, sc, sx, sy,
                           tfm_tensor_numel(out[0]), g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* ---- reductions ---- */

/* Sum, Mean, Max, Min, Prod of the four float types (the 16-bit ones
 * accumulating in float32, reduce.cu) and All / Any of bools; integer
 * reductions run on host copies. */
static tfm_code
k_reduce(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
         tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_tensor *x = in[0];
    int kind = op == TFM_OP_SUM ? 0 : op == TFM_OP_MEAN ? 1
             : op == TFM_OP_MAX ? 2 : op == TFM_OP_MIN ? 3
             : op == TFM_OP_PROD ? 4 : op == TFM_OP_ALL ? 5 : 6;
    int ty = ew_type(x->dtype);
    if (kind >= 5 ? x->dtype != TFM_BOOL : ty < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    bool red[TFM_MAX_DIMS];
    int bad;
    tfm_reduce_mask(x->shape.ndim, a, red, &bad);   /* checked by infer */
    int64_t st[TFM_MAX_DIMS], kd[TFM_MAX_DIMS], ks[TFM_MAX_DIMS];
    int64_t rd[TFM_MAX_DIMS], rs[TFM_MAX_DIMS];
    int nk = 0, nr = 0;
    tfm_row_strides(&x->shape, st);
    for (int d = 0; d < x->shape.ndim; d++) {
        if (x->shape.dims[d] == 1)
            continue;
        if (red[d]) {
            rd[nr] = x->shape.dims[d];
            rs[nr++] = st[d];
        } else {
            kd[nk] = x->shape.dims[d];
            ks[nk++] = st[d];
        }
    }
    if (tfm_tensor_numel(out[0]) == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    /* The partial results of a split reduction come from the GPU's
     * allocator: its retry, its counters, its ResourceExhausted naming
     * the bytes, and what it does during a CUDA graph capture. */
    int64_t sb = tfm_cu_reduce_scratch(kind, ty, nk, kd, nr, rd);
    void *scratch = NULL;
    if (sb > 0 && !(scratch = ctx->scratch_alloc(ctx, (size_t)sb)))
        return tfm_error_code();
    int rc = tfm_cu_reduce(kind, ty, tfm_tensor_data(x),
                           tfm_tensor_data(out[0]), nk, kd, ks, nr, rd, rs,
                           scratch, g->stream);
    /* Stream-ordered: the kernels queued before the free still see it. */
    if (scratch)
        ctx->scratch_free(ctx, scratch, (size_t)sb);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* ---- shape ops that move bytes unchanged ---- */

static tfm_code
k_copy(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
       tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    tfm_gpu *g = tfm_cu_gpu(ctx);
    size_t n = tfm_tensor_nbytes(out[0]);
    if (!n || tfm_tensor_data(out[0]) == tfm_tensor_data(in[0]))
        return TFM_OK;
    return tfm_gpu_check(cudaMemcpyAsync(tfm_tensor_data(out[0]),
                                         tfm_tensor_data(in[0]), n,
                                         cudaMemcpyDeviceToDevice,
                                         g->stream), tfm_ops[op].name);
}

void
tfm_cuda_kernels_init(void)
{
    for (int op = 0; op < TFM_OP_COUNT; op++) {
        switch (ew_kind[op]) {
        case EWK_BINARY: table[op] = k_binary; break;
        case EWK_UNARY:
        case EWK_HEAVY:
        case EWK_PARAM: table[op] = k_unary; break;
        default: break;
        }
    }
    table[TFM_OP_EQUAL] = table[TFM_OP_NOT_EQUAL] = table[TFM_OP_LESS] =
        table[TFM_OP_LESS_EQUAL] = table[TFM_OP_GREATER] =
        table[TFM_OP_GREATER_EQUAL] = k_compare;
    table[TFM_OP_CAST] = k_cast;
    table[TFM_OP_SELECT] = k_select;
    table[TFM_OP_SUM] = table[TFM_OP_MEAN] = table[TFM_OP_MAX] =
        table[TFM_OP_MIN] = table[TFM_OP_PROD] = table[TFM_OP_ALL] =
        table[TFM_OP_ANY] = k_reduce;
    tfm_cuda_kernels_matmul_init(table);
    table[TFM_OP_RESHAPE] = table[TFM_OP_EXPAND_DIMS] =
        table[TFM_OP_SQUEEZE] = table[TFM_OP_IDENTITY] = k_copy;
    tfm_cuda_kernels_nn_init(table);
    tfm_cuda_kernels_shape_init(table);
    tfm_cuda_kernels_random_init(table);
    tfm_cuda_kernels_scatter_init(table);
    tfm_cuda_kernels_slice_init(table);
    tfm_cuda_kernels_index_init(table);
    for (int op = 0; op < TFM_OP_COUNT; op++)
        takes_half[op] = table[op] == k_binary || table[op] == k_unary ||
                         table[op] == k_compare || table[op] == k_reduce;
    takes_half[TFM_OP_MATMUL] = 1;       /* cuBLASLt, kernels_matmul.c */
    /* float32 inside: nn.cu (kernels_nn.c), norm.cu (kernels_norm.c) */
    takes_half[TFM_OP_SOFTMAX] = takes_half[TFM_OP_LOG_SOFTMAX] =
        takes_half[TFM_OP_SOFTMAX_XENT] =
        takes_half[TFM_OP_SPARSE_SOFTMAX_XENT] =
        takes_half[TFM_OP_LAYER_NORM] = takes_half[TFM_OP_LAYER_NORM_GRAD] =
        takes_half[TFM_OP_SOFTMAX_GRAD] = 1;
    /* index.cu reads the 16-bit floats' bits: no cast to float32 first. */
    takes_half[TFM_OP_IS_NAN] = takes_half[TFM_OP_IS_INF] =
        takes_half[TFM_OP_IS_FINITE] = 1;
}

int
tfm_cuda_takes_half(const void *kernels, int op, int dtype)
{
    return kernels == tfm_cuda_kernels && op >= 0 && op < TFM_OP_COUNT &&
           (dtype == TFM_FLOAT16 || dtype == TFM_BFLOAT16) &&
           takes_half[op];
}

/* tfm_cuda_takes_half by TF's op name, for tests through ctypes (the
 * table filled if no GPU has): 1 takes both 16-bit floats, 0 not, -1
 * no such op. */
int tfm_cuda_half_kernel(const char *name);

int
tfm_cuda_half_kernel(const char *name)
{
    int op = tfm_op_lookup(name);
    if (op < 0)
        return -1;
    if (!table[TFM_OP_MATMUL])
        tfm_cuda_kernels_init();
    return tfm_cuda_takes_half(tfm_cuda_kernels, op, TFM_FLOAT16) &&
           tfm_cuda_takes_half(tfm_cuda_kernels, op, TFM_BFLOAT16);
}
