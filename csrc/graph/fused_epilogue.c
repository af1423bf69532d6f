/* Which _FusedMatMul programs a GPU runs as one cublasLtMatmul.
 *
 * Note [Matmul epilogues on the GPU]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * pass_epilogue.c gives a Dense layer's matmul its bias add and
 * activation as a program applied to the product. A traced MLP makes
 * these (the notes list them): AddV2(matmul, b) alone (a layer
 * without activation, or one whose activation input the gradient reads
 * again, such as Gelu), AddV2(matmul, b) then Relu, Gelu, Sigmoid, Tanh
 * or Relu6, AddV2(b, matmul) when the user writes b + x @ w, Relu(matmul)
 * without a bias, and in a train step's backward Mul(matmul, lr) and
 * ReluGrad(matmul, relu). cuBLASLt's epilogues compute, in float32 on
 * the accumulator before rounding to the output, the product plus a bias
 * vector over the rows of its column-major D (our row-major output's
 * last dim, since kernels_matmul.c swaps the operands), then ReLU or
 * GELU. Its GELU is the tanh approximation (PyTorch's _addmm_activation
 * relies on this too), so only Gelu(approximate=True) maps; the exact
 * (erf) Gelu, and every other op, stays on the general path: the
 * matmul, then the program (fused_nvrtc.c or op by op).
 *
 * What maps, for float32, float16 and bfloat16 outputs (cuBLASLt's bias
 * is by default of the output's dtype, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
 * so the bias must be too; pass_epilogue.c makes float32 and float64
 * programs only today, and float64 has no cuBLASLt path here):
 *   AddV2(matmul, b) or AddV2(b, matmul)          BIAS
 *   Relu(matmul)                                  RELU
 *   Gelu(matmul, approximate)                     GELU
 *   AddV2(matmul, b), then Relu or Gelu(approx.)  RELU_BIAS, GELU_BIAS
 * with b of shape [n], or [1, ..., 1, n], n the output's last dim, and
 * no intermediate value read after the node. Float addition commutes
 * exactly, so AddV2's operand order does not matter. For float32 the
 * accumulator is the float32 product the CPU adds the bias to, so only
 * the matmul's summation order differs (as it does for a plain GPU
 * matmul); a half output is rounded once, after the activation, where
 * the CPU rounds after each op. Relu's NaN and -0.0 (the CPU passes both
 * through) may come out as cuBLASLt's max(x, 0) gives them. */
#include "fused_epilogue.h"

#include <string.h>

static int
is_product(int16_t s)
{
    return s == TFM_FUSED_BASE;
}

/* Program input k (or -1) when operand s is one. */
static int
input_of(const tfm_fused_prog *p, int16_t s)
{
    return s <= TFM_FUSED_INPUT(0) && TFM_FUSED_INPUT_INDEX(s) < p->nin
               ? TFM_FUSED_INPUT_INDEX(s) : -1;
}

/* A bias cuBLASLt adds: a row vector over out's last dim, of out's
 * dtype. */
static int
row_vector(const tfm_shape *out, tfm_dtype out_dtype, const tfm_shape *b,
           tfm_dtype b_dtype)
{
    if (b_dtype != out_dtype || b->ndim < 1 || b->ndim > out->ndim)
        return 0;
    for (int d = 0; d < b->ndim - 1; d++)
        if (b->dims[d] != 1)
            return 0;
    return b->dims[b->ndim - 1] == out->dims[out->ndim - 1];
}

/* The activation instruction c applied to operand `from`: RELU, GELU
 * or NONE. */
static int
activation(const tfm_fused_instr *c, int16_t from)
{
    if (c->nin != 1 || c->src[0] != from)
        return TFM_LT_EPI_NONE;
    if (c->op == TFM_OP_RELU)
        return TFM_LT_EPI_RELU;
    if (c->op == TFM_OP_GELU && c->ai != 0)
        return TFM_LT_EPI_GELU;
    return TFM_LT_EPI_NONE;
}

int
tfm_fused_epilogue(const tfm_fused_prog *p, tfm_dtype out_dtype,
                   const tfm_shape *out, const tfm_shape *in_shapes,
                   const tfm_dtype *in_dtypes, int *bias)
{
    *bias = -1;
    if (!p || p->first_input != 2 || p->nout != 1 || p->ninstr < 1 ||
        p->ninstr > 2 || out->ndim < 2 || !tfm_shape_is_known(out) ||
        (out_dtype != TFM_FLOAT32 && out_dtype != TFM_FLOAT16 &&
         out_dtype != TFM_BFLOAT16))
        return TFM_LT_EPI_NONE;
    for (int i = 0; i < p->ninstr; i++)
        if (p->code[i].dtype != (int8_t)out_dtype || p->code[i].out > 0)
            return TFM_LT_EPI_NONE;
    const tfm_fused_instr *c = &p->code[0];
    if (c->op == TFM_OP_ADD && c->nin == 2) {
        int k = is_product(c->src[0]) ? input_of(p, c->src[1])
              : is_product(c->src[1]) ? input_of(p, c->src[0]) : -1;
        if (k < 0 || !row_vector(out, out_dtype, &in_shapes[k],
                                 in_dtypes[k]))
            return TFM_LT_EPI_NONE;
        int act = p->ninstr == 2 ? activation(&p->code[1], c->dst)
                                 : TFM_LT_EPI_NONE;
        if (p->ninstr == 2 && act == TFM_LT_EPI_NONE)
            return TFM_LT_EPI_NONE;
        *bias = k;
        return act == TFM_LT_EPI_RELU ? TFM_LT_EPI_RELU_BIAS
             : act == TFM_LT_EPI_GELU ? TFM_LT_EPI_GELU_BIAS
                                      : TFM_LT_EPI_BIAS;
    }
    return p->ninstr == 1 ? activation(c, TFM_FUSED_BASE) : TFM_LT_EPI_NONE;
}

int
tfm_fused_epilogue_check(int ninstr, const int64_t *rows, int out_dtype,
                         int out_ndim, const int64_t *out_dims, int nin,
                         const int32_t *in_ndim, const int64_t *in_dims,
                         const int32_t *in_dtypes, int *bias)
{
    tfm_fused_prog p;
    tfm_shape out, ins[TFM_FUSED_MAX_IN];
    tfm_dtype dts[TFM_FUSED_MAX_IN];
    if (ninstr < 1 || ninstr > TFM_FUSED_MAX_INSTR || nin < 0 ||
        nin > TFM_FUSED_MAX_IN || out_ndim < 0 || out_ndim > TFM_MAX_DIMS)
        return -1;
    out.ndim = out_ndim;
    memcpy(out.dims, out_dims, sizeof(int64_t) * (size_t)out_ndim);
    for (int k = 0; k < nin; k++) {
        if (in_ndim[k] < 0 || in_ndim[k] > TFM_MAX_DIMS)
            return -1;
        ins[k].ndim = in_ndim[k];
        memcpy(ins[k].dims, in_dims + k * TFM_MAX_DIMS,
               sizeof(int64_t) * (size_t)in_ndim[k]);
        dts[k] = (tfm_dtype)in_dtypes[k];
    }
    tfm_fused_init(&p, 2);
    for (int i = 0; i < ninstr; i++) {
        const int64_t *r = rows + 5 * i;
        tfm_meta m;
        tfm_attrs a;
        tfm_node nd;
        int16_t src[2] = {(int16_t)r[2], (int16_t)r[3]};
        if (r[1] < 1 || r[1] > 2 || r[0] < 0 || r[0] >= TFM_OP_COUNT)
            return -1;
        for (int k = 0; k < r[1]; k++)
            if (src[k] >= i || (src[k] < TFM_FUSED_BASE &&
                                TFM_FUSED_INPUT_INDEX(src[k]) >= nin))
                return -1;
        memset(&m, 0, sizeof m);
        memset(&nd, 0, sizeof nd);
        tfm_attrs_init(&a);
        m.dtype = (tfm_dtype)out_dtype;
        m.shape = out;
        a.i[0] = r[4];
        nd.op = (tfm_op)r[0];
        nd.nin = (int)r[1];
        nd.out = &m;
        nd.attrs = &a;
        if (tfm_fused_emit(&p, &nd, src) < 0)
            return -1;
    }
    tfm_fused_finish(&p);
    return tfm_fused_epilogue(&p, (tfm_dtype)out_dtype, &out, ins, dts,
                              bias);
}
