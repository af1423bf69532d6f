/* The GPU's Slice, StridedSlice, StridedSliceGrad, ReverseV2, Tile,
 * Split, SplitV, Unpack, PadV2, MirrorPad, ArgMax, ArgMin, Cumsum,
 * Cumprod and OneHot: C glue over shape.cu's strided gather and slice.cu's kernels. Each
 * view (first element, per-dim steps, counts) is computed here on the
 * host by the CPU kernel's own code: StridedSlice's masks are resolved
 * by cpu/slice_plan.c alone, so the GPU cannot disagree with the CPU on
 * them. The data-movement ops take every dtype (whole elements of 1 to
 * 16 bytes); anything the launchers cannot take runs the CPU kernel on
 * host copies. */
#include "internal.h"

#include "../cpu/shape.h"
#include "../cpu/slice_plan.h"
#include "launch.h"
#include "launch_fused.h"
#include "launch_ops.h"

/* out = x viewed at element `base` with steps st over dims (ndim dims,
 * out's element count n). */
static tfm_code
gather_view(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx,
            int64_t base, int ndim, const int64_t *dims, const int64_t *st)
{
    int64_t n = tfm_tensor_numel(out[0]);
    if (n == 0)
        return TFM_OK;
    if (ndim > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    size_t es = tfm_dtype_size(in[0]->dtype);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_transpose((int)es,
                              (const char *)tfm_tensor_data(in[0]) +
                                  base * (int64_t)es,
                              tfm_tensor_data(out[0]), ndim, dims, st, n,
                              g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_strided_slice(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout,
                const tfm_kctx *ctx)
{
    tfm_slice_plan p;
    tfm_code rc = tfm_strided_slice_plan(tfm_ops[op].name, &in[0]->shape,
                                         a, &p);
    if (rc)
        return rc;
    int64_t st[TFM_MAX_DIMS];
    int64_t base = tfm_slice_plan_view(&p, &in[0]->shape, st);
    return gather_view(op, in, nin, a, out, nout, ctx, base, p.ndim, p.len,
                       st);
}

/* Zeros, then dy scattered onto the view StridedSlice read (the same
 * plan). The view's positions are distinct: no write races. */
static tfm_code
k_strided_slice_grad(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
{
    tfm_shape shape;
    tfm_attrs sa;
    tfm_slice_plan p;
    tfm_code rc = tfm_strided_slice_grad_attrs(a, &shape, &sa);
    if (rc || (rc = tfm_strided_slice_plan(tfm_ops[op].name, &shape, &sa,
                                            &p)))
        return rc;
    if (p.ndim > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    size_t es = tfm_dtype_size(out[0]->dtype);
    size_t nb = tfm_tensor_nbytes(out[0]);
    if (nb == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    /* All-zero bytes are zero in every numeric dtype. */
    rc = tfm_gpu_check(cudaMemsetAsync(tfm_tensor_data(out[0]), 0, nb,
                                       g->stream), tfm_ops[op].name);
    int64_t n = tfm_tensor_numel(in[0]);
    if (rc || n == 0)
        return rc;
    int64_t st[TFM_MAX_DIMS];
    int64_t base = tfm_slice_plan_view(&p, &shape, st);
    int lr = tfm_cu_strided_scatter((int)es, tfm_tensor_data(in[0]),
                                    (char *)tfm_tensor_data(out[0]) +
                                        base * (int64_t)es,
                                    p.ndim, p.len, st, n, g->stream);
    if (lr < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, lr);
}

/* Slice: ints = begin then size; the output's dims are the sizes. */
static tfm_code
k_slice(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    int64_t st[TFM_MAX_DIMS], base = 0;
    tfm_row_strides(x, st);
    for (int d = 0; d < x->ndim; d++)
        base += a->ints[d] * st[d];
    return gather_view(op, in, nin, a, out, nout, ctx, base, x->ndim,
                       out[0]->shape.dims, st);
}

/* ReverseV2: a reversed dim starts at its last element, step negated. */
static tfm_code
k_reverse(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    int64_t st[TFM_MAX_DIMS], base = 0;
    tfm_row_strides(x, st);
    for (int k = 0; k < a->n_ints; k++) {
        int d = (int)(a->ints[k] < 0 ? a->ints[k] + x->ndim : a->ints[k]);
        base += (x->dims[d] - 1) * st[d];
        st[d] = -st[d];
    }
    return gather_view(op, in, nin, a, out, nout, ctx, base, x->ndim,
                       x->dims, st);
}

/* Tile: the output as [m0, d0, m1, d1, ...] where the m dims repeat
 * (step 0), as the CPU kernel reads it; 2 * rank dims, so rank <= 4 on
 * the GPU. */
static tfm_code
k_tile(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
       tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    if (2 * x->ndim > TFM_CU_MAX_DIMS)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int64_t st[TFM_MAX_DIMS], dims[2 * TFM_MAX_DIMS], ss[2 * TFM_MAX_DIMS];
    tfm_row_strides(x, st);
    for (int d = 0; d < x->ndim; d++) {
        dims[2 * d] = a->ints[d];
        ss[2 * d] = 0;
        dims[2 * d + 1] = x->dims[d];
        ss[2 * d + 1] = st[d];
    }
    return gather_view(op, in, nin, a, out, nout, ctx, 0, 2 * x->ndim, dims,
                       ss);
}

/* cudaMemcpy2DAsync refuses a pitch past the device's
 * cudaDevAttrMaxPitch (2^31 - 1 bytes on the GPUs this targets); a
 * host test lowers it to reach the other path. */
#ifndef TFM_CU_MAX_PITCH
#define TFM_CU_MAX_PITCH ((size_t)INT32_MAX)
#endif

/* Split, SplitV and Unpack: x as [outer, row] (the dims before the axis,
 * the rest); each output takes the next chunk of every row, one 2-D
 * copy each (ConcatV2 in reverse). One row (a split on the first axis,
 * the usual case) is one plain copy; rows longer than a 2-D copy's
 * pitch may be (a split of a tensor past 2 GiB) go through the strided
 * gather instead of failing. */
static tfm_code
k_split(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
        tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    int ax = (int)(a->i[0] < 0 ? a->i[0] + x->ndim : a->i[0]);
    int64_t outer = tfm_dims_prod(x->dims, 0, ax);
    int64_t row = tfm_dims_prod(x->dims, ax, x->ndim);
    size_t es = tfm_dtype_size(in[0]->dtype);
    if (outer == 0 || row == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    const char *s = tfm_tensor_data(in[0]);
    int64_t off = 0;
    for (int k = 0; k < nout; k++) {
        int64_t chunk = tfm_tensor_numel(out[k]) / outer;
        void *dst = tfm_tensor_data(out[k]);
        const char *src = s + (size_t)off * es;
        int lr;
        if (chunk == 0)
            continue;
        if (outer == 1)
            lr = (int)cudaMemcpyAsync(dst, src, (size_t)chunk * es,
                                      cudaMemcpyDeviceToDevice, g->stream);
        else if ((size_t)row * es <= TFM_CU_MAX_PITCH)
            lr = (int)cudaMemcpy2DAsync(dst, (size_t)chunk * es, src,
                                        (size_t)row * es, (size_t)chunk * es,
                                        (size_t)outer,
                                        cudaMemcpyDeviceToDevice, g->stream);
        else {
            int64_t dims[2] = {outer, chunk}, st[2] = {row, 1};
            lr = tfm_cu_transpose((int)es, src, dst, 2, dims, st,
                                  outer * chunk, g->stream);
            if (lr < 0)
                return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
        }
        if (lr)
            return tfm_cu_launched(op, lr);
        off += chunk;
    }
    return TFM_OK;
}

/* PadV2: the constant everywhere, then the input into the interior. The
 * constant in the output's dtype is what the CPU kernel writes: it pads
 * an empty host tensor of the same rank to one element (its int64 and
 * float16 conversions included). */
static tfm_code
k_pad(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
      tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape, *os = &out[0]->shape;
    int r = x->ndim;
    size_t es = tfm_dtype_size(out[0]->dtype);
    int64_t n = tfm_shape_numel(os), nx = tfm_shape_numel(x);
    if (r > TFM_CU_MAX_DIMS || es > 16 || out[0]->dtype == TFM_STRING)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (n == 0)
        return TFM_OK;
    tfm_gpu *g = tfm_cu_gpu(ctx);
    if (n != nx) {
        char val[16] = {0};
        tfm_buffer vb = {.refcount = 1, .data = val, .nbytes = sizeof val};
        tfm_tensor ht = *out[0], hx = *in[0];
        ht.device = hx.device = 0;
        ht.buf = &vb;
        ht.offset = 0;
        hx.buf = &vb;           /* never read: it has no elements */
        hx.offset = 0;
        tfm_attrs pa = *a;
        for (int d = 0; d < r; d++) {
            hx.shape.dims[d] = 0;
            ht.shape.dims[d] = 1;
            pa.ints[2 * d] = 0;         /* after, so its interior */
            pa.ints[2 * d + 1] = 1;     /* (empty) starts at 0 */
        }
        tfm_tensor *hi = &hx, *ho = &ht;
        tfm_code rc = tfm_ops[op].cpu(op, &hi, 1, &pa, &ho, 1,
                                      &tfm_kctx_cpu);
        if (rc)
            return rc;
        int lr = tfm_cu_fill((int)es, NULL, val, tfm_tensor_data(out[0]), n,
                             g->stream);
        if (lr < 0)
            return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
        if (lr)
            return tfm_cu_launched(op, lr);
    }
    if (nx == 0)
        return TFM_OK;
    int64_t ost[TFM_MAX_DIMS], base = 0;
    tfm_row_strides(os, ost);
    for (int d = 0; d < r; d++)
        base += a->ints[2 * d] * ost[d];
    int lr = tfm_cu_strided_scatter((int)es, tfm_tensor_data(in[0]),
                                    (char *)tfm_tensor_data(out[0]) +
                                        base * (int64_t)es,
                                    r, x->dims, ost, nx, g->stream);
    if (lr < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, lr);
}

/* MirrorPad: every output element reads the input element it mirrors. */
static tfm_code
k_mirror_pad(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape, *os = &out[0]->shape;
    int r = x->ndim;
    int64_t n = tfm_shape_numel(os), lo[TFM_MAX_DIMS];
    if (n == 0)
        return TFM_OK;
    for (int d = 0; d < r; d++)
        lo[d] = a->ints[2 * d];
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_mirror_pad((int)tfm_dtype_size(in[0]->dtype),
                               a->i[0] == 1, tfm_tensor_data(in[0]),
                               tfm_tensor_data(out[0]), r, os->dims, x->dims,
                               lo, n, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_argreduce(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_tensor *x = in[0];
    int kind;
    switch (x->dtype) {
    case TFM_FLOAT32: kind = TFM_CU_OUT_F32; break;
    case TFM_FLOAT64: kind = TFM_CU_OUT_F64; break;
    case TFM_INT32: kind = TFM_CU_OUT_I32; break;
    case TFM_INT64: kind = TFM_CU_OUT_I64; break;
    default: return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    }
    int rank = x->shape.ndim;
    int axis = (int)(a->i[0] < 0 ? a->i[0] + rank : a->i[0]);
    int64_t A = tfm_dims_prod(x->shape.dims, 0, axis);
    int64_t R = x->shape.dims[axis];
    int64_t B = tfm_dims_prod(x->shape.dims, axis + 1, rank);
    if (A * B == 0)
        return TFM_OK;
    if (R < 1)      /* the CPU's error */
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_argreduce(op == TFM_OP_ARGMIN, kind,
                              out[0]->dtype == TFM_INT64,
                              tfm_tensor_data(x), tfm_tensor_data(out[0]), A,
                              R, B, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

static tfm_code
k_scan(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
       tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_tensor *x = in[0];
    int kind = tfm_cu_out_kind(x->dtype), rank = x->shape.ndim;
    if (kind < 0 || rank == 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    int axis = (int)(a->i[0] < 0 ? a->i[0] + rank : a->i[0]);
    int64_t A = tfm_dims_prod(x->shape.dims, 0, axis);
    int64_t R = x->shape.dims[axis];
    int64_t B = tfm_dims_prod(x->shape.dims, axis + 1, rank);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    int rc = tfm_cu_scan(op == TFM_OP_CUMPROD, kind, tfm_tensor_data(x),
                         tfm_tensor_data(out[0]), A, R, B, a->i[1] != 0,
                         a->i[2] != 0, g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

/* OneHot: off everywhere (read on the GPU: on and off are device
 * scalars), then on where an index falls in [0, depth). */
static tfm_code
k_one_hot(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
          tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *is = &in[0]->shape;
    tfm_dtype id = in[0]->dtype;
    size_t es = tfm_dtype_size(out[0]->dtype);
    int64_t n = tfm_tensor_numel(out[0]);
    if ((id != TFM_INT32 && id != TFM_INT64) || es > 16 ||
        out[0]->dtype == TFM_STRING)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    if (n == 0)
        return TFM_OK;
    int ax = a->i[1] < 0 ? is->ndim : (int)a->i[1];
    int64_t suffix = tfm_dims_prod(is->dims, ax, is->ndim);
    tfm_gpu *g = tfm_cu_gpu(ctx);
    /* fill.cu reads val's es bytes on the host even when src is given:
     * it must point somewhere (src's value is what is written). */
    static const char unused[16];
    int rc = tfm_cu_fill((int)es, tfm_tensor_data(in[2]), unused,
                         tfm_tensor_data(out[0]), n, g->stream);
    if (rc == 0)
        rc = tfm_cu_one_hot((int)es, id == TFM_INT64, tfm_tensor_data(in[0]),
                            tfm_tensor_data(in[1]), tfm_tensor_data(out[0]),
                            tfm_tensor_numel(in[0]), a->i[0], suffix,
                            g->stream);
    if (rc < 0)
        return tfm_cu_on_host(op, in, nin, a, out, nout, ctx);
    return tfm_cu_launched(op, rc);
}

void
tfm_cuda_kernels_slice_init(tfm_kernel_fn *table)
{
    table[TFM_OP_STRIDED_SLICE] = k_strided_slice;
    table[TFM_OP_STRIDED_SLICE_GRAD] = k_strided_slice_grad;
    table[TFM_OP_SLICE] = k_slice;
    table[TFM_OP_REVERSE] = k_reverse;
    table[TFM_OP_TILE] = k_tile;
    table[TFM_OP_SPLIT] = table[TFM_OP_SPLIT_V] = table[TFM_OP_UNPACK] =
        k_split;
    table[TFM_OP_PAD] = k_pad;
    table[TFM_OP_MIRROR_PAD] = k_mirror_pad;
    table[TFM_OP_ARGMAX] = table[TFM_OP_ARGMIN] = k_argreduce;
    table[TFM_OP_CUMSUM] = table[TFM_OP_CUMPROD] = k_scan;
    table[TFM_OP_ONE_HOT] = k_one_hot;
}
