/* CPU kernels of the conv family (rows in ops/ops_conv.def), and the
 * window geometry that the shape rules (ops/conv.c) share with them. */
#ifndef TFM_KERNELS_CPU_CONV_H
#define TFM_KERNELS_CPU_CONV_H

#include "../../ops/op.h"

#include <stdlib.h>
#include <string.h>

/* Attribute slots of every conv-family op (see ops_conv.def). */
enum {
    TFM_CONV_STRIDE_H = 0, TFM_CONV_STRIDE_W = 1,
    TFM_CONV_WIN_H = 2, TFM_CONV_WIN_W = 3, /* dilations or pool window */
    TFM_CONV_SIZES = 4,                     /* ints[4..7] */
    TFM_CONV_PADS = 8,                      /* ints[8..11]: t, b, l, r */
};
enum { TFM_PAD_VALID = 0, TFM_PAD_SAME = 1, TFM_PAD_EXPLICIT = 2 };

/* Output size and leading pad of one spatial dim: input `in`, window
 * `k` dilated by `d`, stride `s`. TF's arithmetic: SAME gives
 * ceil(in / s) outputs and pads (out - 1) * s + (k - 1) * d + 1 - in in
 * total, the smaller half before; VALID gives (in - eff_k) / s + 1;
 * EXPLICIT is VALID over the padded input. An unknown input (-1) gives
 * an unknown output. Returns 0, or -1 when the dilated window does not
 * fit in the (padded) input. */
static inline int
tfm_conv_dim(int64_t in, int64_t k, int64_t s, int64_t d, int mode,
             int64_t pad_before, int64_t pad_after, int64_t *out,
             int64_t *pad)
{
    int64_t eff = (k - 1) * d + 1;
    *pad = 0;
    *out = -1;
    if (in < 0)
        return 0;
    if (mode == TFM_PAD_SAME) {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + eff - in;
        *pad = total > 0 ? total / 2 : 0;
        return 0;
    }
    if (mode != TFM_PAD_EXPLICIT)
        pad_before = pad_after = 0;
    int64_t span = in + pad_before + pad_after - eff;
    if (span < 0)
        return -1;
    *out = span / s + 1;
    *pad = pad_before;
    return 0;
}

/* One convolution or pooling window, all sizes known. x: [n, h, w, c];
 * window kh x kw (dilated by dh, dw); y: [n, oh, ow, o] (o = c for
 * pooling). groups > 1 (depthwise: groups = c) splits the channels into
 * groups convolved apart, the filter then [kh, kw, c / groups, o]
 * stored as [kh, kw, groups, o / groups] when c == groups (TF's
 * depthwise filter [kh, kw, in, multiplier]). */
typedef struct tfm_conv_geom {
    int64_t n, h, w, c;
    int64_t kh, kw, o;
    int64_t sh, sw, dh, dw;
    int64_t oh, ow;
    int64_t pt, pl;
    int64_t groups;
} tfm_conv_geom;

/* Geometry from the input shape, window and attrs (pool: o = c). */
void tfm_conv_geom_make(tfm_conv_geom *g, const tfm_shape *x, int64_t kh,
                        int64_t kw, int64_t o, int64_t dh, int64_t dw,
                        const tfm_attrs *a);

/* Row-major C[M,N] (+)= op(A) @ B[K,N], with op(A) = A[M,K] or, when
 * trans_a, A^T for an A stored as [K,M]; lda is A's row stride as
 * stored. One thread (callers split the work); accumulate = 0
 * overwrites C. */
void tfm_conv_gemm_f32(int trans_a, int64_t M, int64_t N, int64_t K,
                       const float *A, int64_t lda, const float *B,
                       int64_t ldb, float *C, int64_t ldc, int accumulate);
void tfm_conv_gemm_f64(int trans_a, int64_t M, int64_t N, int64_t K,
                       const double *A, int64_t lda, const double *B,
                       int64_t ldb, double *C, int64_t ldc, int accumulate);

/* float32 convolutions through oneDNN's primitives (conv_dnnl.c). kind
 * picks the operands: FWD a = x, b = f, out = y; BWD_DATA a = f, b = dy,
 * out = dx; BWD_WEIGHTS a = x, b = dy, out = df (all NHWC, filters
 * HWIO). Returns 1 when it ran, 0 when the caller must run im2col (no
 * oneDNN in the build, TFMINI_CONV=im2col, or a shape oneDNN serves only
 * with its reference code), -1 when out of memory. */
enum { TFM_CONV_FWD = 0, TFM_CONV_BWD_DATA = 1, TFM_CONV_BWD_WEIGHTS = 2 };
int tfm_conv_dnnl_f32(int kind, const tfm_conv_geom *g, const float *a,
                      const float *b, float *out);
/* Activations a fused conv applies after its bias (_FusedConv2D's
 * i[1]; the conv epilogue pass, graph/pass_conv_epilogue.c). */
enum { TFM_CONV_ACT_NONE = 0, TFM_CONV_ACT_RELU = 1, TFM_CONV_ACT_RELU6 = 2,
       TFM_CONV_ACT_ELU = 3, TFM_CONV_ACT_COUNT = 4 };
/* Or'ed into the act of tfm_conv_dnnl_fused_f32: y already holds a
 * residual, added (oneDNN's sum post-op) before the activation. */
enum { TFM_CONV_ADD_DST = 0x10 };
/* y = act(conv2d(x, f) + bias [+ y]) as one oneDNN primitive (bias and an
 * eltwise post-op); returns as tfm_conv_dnnl_f32. */
int tfm_conv_dnnl_fused_f32(const tfm_conv_geom *g, const float *x,
                            const float *f, const float *bias, int act,
                            float *y);
/* The same in bfloat16 (operands and result bf16, float32 accumulation
 * inside oneDNN), with the same answers; 0 also where
 * tfm_conv_bf16_native() is false. */
int tfm_conv_dnnl_bf16(int kind, const tfm_conv_geom *g, const uint16_t *a,
                       const uint16_t *b, uint16_t *out);
/* Whether bfloat16 convolutions run natively here: oneDNN built in, not
 * TFMINI_CONV=im2col, and a CPU with AVX512_BF16 (oneDNN's effective
 * ISA). The dispatcher hands bfloat16 to the conv kernels only then
 * (tfm_kernel_takes) and computes in float32 otherwise. */
int tfm_conv_bf16_native(void);
/* Drops the cached primitives (tests; a process may also call it to give
 * their memory back). */
void tfm_conv_dnnl_clear(void);
/* "dnnl" or "im2col": what float32 convolutions use in this process
 * (TFMINI_CONV=im2col, read once, forces the fallback). */
const char *tfm_conv_backend(void);
/* How many convolutions oneDNN has run in this process (tests check
 * which path ran). */
long tfm_conv_dnnl_calls(void);
/* What TFMINI_CONV says about one of the kernels tried before oneDNN
 * (`kernel`: "window", "winograd"): 1 when it names that kernel (forced
 * wherever it can run: tests, benchmarks), -1 for "dnnl" or "im2col"
 * (each forces one backend for every conv), else 0 (the kernel's
 * measured rule). Callers read it once. */
static inline int
tfm_conv_env_choice(const char *kernel)
{
    const char *e = getenv("TFMINI_CONV");
    if (!e)
        return 0;
    if (strcmp(e, "dnnl") == 0 || strcmp(e, "im2col") == 0)
        return -1;
    return strcmp(e, kernel) == 0 ? 1 : 0;
}
/* The float32 filter gradient of a stride-1, undilated, ungrouped conv
 * by shifted-window GEMMs (conv_filter_grad_gemm.c), tried before
 * oneDNN: 1 when it ran, 0 when it does not take the shape (outside the
 * measured rule unless TFMINI_CONV=window; no AVX-512; TFMINI_CONV=dnnl
 * or im2col), -1 when out of memory. */
int tfm_conv_filter_grad_window_takes(const tfm_conv_geom *g);
int tfm_conv_filter_grad_window_f32(const tfm_conv_geom *g, const float *x,
                                    const float *dy, float *df);
/* The same, and db[o] = the sum of dy over n, h, w (the bias gradient)
 * from the same pass over dy. */
int tfm_conv_filter_grad_bias_window_f32(const tfm_conv_geom *g,
                                         const float *x, const float *dy,
                                         float *df, float *db);
/* How many filter gradients it has run in this process (tests). */
long tfm_conv_window_calls(void);
/* How many of them ran in bfloat16 (counted apart from the above). */
long tfm_conv_dnnl_bf16_calls(void);
/* A float32 3x3 stride-1 conv by Winograd F(4x4, 3x3)
 * (conv_winograd.c), tried before oneDNN for the forward (a = x, b = f)
 * and the input gradient (a = f, b = dy). act: -1 for a plain conv,
 * else TFM_CONV_ACT_* | TFM_CONV_ADD_DST as in tfm_conv_dnnl_fused_f32
 * (forward only; bias may be NULL). 1 when it ran, 0 when it does not
 * take the shape (outside the measured rule unless
 * TFMINI_CONV=winograd; no AVX-512; TFMINI_CONV=dnnl or im2col), -1
 * when out of memory. */
int tfm_conv_winograd_takes(int kind, const tfm_conv_geom *g);
int tfm_conv_winograd_f32(int kind, const tfm_conv_geom *g, const float *a,
                          const float *b, const float *bias, int act,
                          float *out);
/* How many convs it has run in this process (tests). */
long tfm_conv_winograd_calls(void);

tfm_code tfm_k_conv2d(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a, tfm_tensor *const *out, int nout,
                      const tfm_kctx *ctx);
tfm_code tfm_k_conv2d_backprop_input(tfm_op op, tfm_tensor *const *in,
                                     int nin, const tfm_attrs *a,
                                     tfm_tensor *const *out, int nout,
                                     const tfm_kctx *ctx);
tfm_code tfm_k_conv2d_backprop_filter(tfm_op op, tfm_tensor *const *in,
                                      int nin, const tfm_attrs *a,
                                      tfm_tensor *const *out, int nout,
                                      const tfm_kctx *ctx);
/* The filter gradient and the bias gradient (Sum of dy over n, h, w) in
 * one pass over dy where the window kernel runs
 * (conv_filter_grad_bias.c). */
tfm_code tfm_k_conv2d_backprop_filter_bias(tfm_op op, tfm_tensor *const *in,
                                           int nin, const tfm_attrs *a,
                                           tfm_tensor *const *out, int nout,
                                           const tfm_kctx *ctx);
tfm_code tfm_k_depthwise_conv2d(tfm_op op, tfm_tensor *const *in, int nin,
                                const tfm_attrs *a, tfm_tensor *const *out,
                                int nout, const tfm_kctx *ctx);
tfm_code tfm_k_depthwise_backprop_input(tfm_op op, tfm_tensor *const *in,
                                        int nin, const tfm_attrs *a,
                                        tfm_tensor *const *out, int nout,
                                        const tfm_kctx *ctx);
tfm_code tfm_k_depthwise_backprop_filter(tfm_op op, tfm_tensor *const *in,
                                         int nin, const tfm_attrs *a,
                                         tfm_tensor *const *out, int nout,
                                         const tfm_kctx *ctx);
tfm_code tfm_k_fused_conv2d(tfm_op op, tfm_tensor *const *in, int nin,
                            const tfm_attrs *a, tfm_tensor *const *out,
                            int nout, const tfm_kctx *ctx);
tfm_code tfm_k_max_pool(tfm_op op, tfm_tensor *const *in, int nin,
                        const tfm_attrs *a, tfm_tensor *const *out,
                        int nout, const tfm_kctx *ctx);
tfm_code tfm_k_max_pool_grad(tfm_op op, tfm_tensor *const *in, int nin,
                             const tfm_attrs *a, tfm_tensor *const *out,
                             int nout, const tfm_kctx *ctx);
/* _FusedMaxPoolGrad(x, y, dy) -> (dx, db) (conv_pool_grad.c). */
tfm_code tfm_k_fused_max_pool_grad(tfm_op op, tfm_tensor *const *in,
                                   int nin, const tfm_attrs *a,
                                   tfm_tensor *const *out, int nout,
                                   const tfm_kctx *ctx);
/* Whether no two pooling windows share an input cell. */
int tfm_pool_windows_disjoint(const tfm_conv_geom *g);
/* MaxPoolGrad into dx when the windows are disjoint, with ReluGrad
 * against x when relu, and the per-channel sums of dx into db (float32
 * or float64 like x) unless db is NULL. 0 done, 1 out of memory, -1 not
 * this path (overlapping windows, a window over 64 cells, another
 * dtype): nothing written. */
int tfm_max_pool_grad_tiled(const tfm_conv_geom *g, tfm_dtype dt,
                            const void *x, const void *dy, void *dx,
                            int relu, void *db);
tfm_code tfm_k_max_pool_grad_grad(tfm_op op, tfm_tensor *const *in, int nin,
                                  const tfm_attrs *a,
                                  tfm_tensor *const *out, int nout,
                                  const tfm_kctx *ctx);
tfm_code tfm_k_avg_pool(tfm_op op, tfm_tensor *const *in, int nin,
                        const tfm_attrs *a, tfm_tensor *const *out,
                        int nout, const tfm_kctx *ctx);
tfm_code tfm_k_avg_pool_grad(tfm_op op, tfm_tensor *const *in, int nin,
                             const tfm_attrs *a, tfm_tensor *const *out,
                             int nout, const tfm_kctx *ctx);

#endif
