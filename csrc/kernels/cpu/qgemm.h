/* Int8 GEMM and the CPU kernels of the quantized ops (rows in
 * ops/ops_quant.def). See Note [Quantized arithmetic] in ops/quant.h. */
#ifndef TFM_KERNELS_CPU_QGEMM_H
#define TFM_KERNELS_CPU_QGEMM_H

#include <stdint.h>

#include "../../ops/op.h"

/* Fused activations of the quantized ops (attribute i[3]). */
enum { TFM_QACT_NONE = 0, TFM_QACT_RELU = 1, TFM_QACT_RELU6 = 2 };
/* The deepest dot product the int32 accumulator holds exactly:
 * K * 255 * 128 plus a bias stays below 2^31. */
#define TFM_QGEMM_MAX_K 65000

/* C[m, n] = sum_k A[m, k] * B[k, n], exactly, in int32: A is uint8
 * [M, K] (row stride lda), B int8 [K, N] row-major, C int32 [M, N].
 * Exact for K <= TFM_QGEMM_MAX_K; callers check. */
void tfm_qgemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *A,
                    int64_t lda, const int8_t *B, int32_t *C);

/* The same, and cs[n] = sum_k B[k, n] (when cs is not NULL). With
 * VNNI, B's packed form and column sums are kept between calls for as
 * long as B's bytes stay the same (Note [Packed weights] in qgemm.c):
 * the callers pass constant weights as B. */
void tfm_qgemm_u8s8_sums(int64_t M, int64_t N, int64_t K, const uint8_t *A,
                         int64_t lda, const int8_t *B, int32_t *C,
                         int32_t *cs);

/* Note [Packed int8 weights]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The form the converter (tfmini/lite) stores a layer's int8 weights in,
 * and the form vpdpbusd reads: B [K, N] becomes int8 [ceil(K/4) * 4 * N]
 * (K padded with zero rows, which add nothing), in panels of 16 columns
 * (the last one N - 16 (P - 1) wide, w_p): panel p starts at byte
 * p * ceil(K/4) * 64 and holds [ceil(K/4)][w_p][4], the four k values
 * of each column together: byte (kb * w_p + c) * 4 + k % 4 is
 * B[4 kb + k % 4, 16 p + c]. Nothing pads N, so a narrow last layer
 * (10 classes) costs no more than its weights. A kernel reading this
 * form needs no packing and no cache (Note [Packed weights] in qgemm.c
 * keeps one for weights given as [K, N]); the portable loops read it
 * too, so a file runs the same on any CPU and in the wasm build. */
#define TFM_QPACK_BYTES(K, N) (((K) + 3) / 4 * 4 * (N))

/* What a packed GEMM does with each int32 sum acc[m, n] (Note
 * [Quantized arithmetic] in ops/quant.h): */
enum {
    TFM_QOUT_INT32 = 0,  /* int32 y = acc */
    TFM_QOUT_INT8 = 1,   /* int8 y = requantized acc + cb */
    TFM_QOUT_FLOAT = 2,  /* that int8, dequantized: (q - zout) s_out */
    TFM_QOUT_HYBRID = 3, /* float y = act((acc - rz[m] cs) rs[m] mult
                          * + fbias) */
};
typedef struct {
    int kind;
    void *y;                    /* [M, N] of kind's dtype */
    const int32_t *cs;          /* HYBRID: column sums of B [N] */
    const int64_t *cb;          /* INT8/FLOAT: bias - zin * cs [N] */
    const float *mult;          /* INT8/FLOAT: s_in ws / s_out; HYBRID: ws */
    const float *rs;            /* HYBRID: per-row scale and zero point */
    const int32_t *rz;
    const float *fbias;         /* HYBRID: float bias [N] or NULL */
    int act;                    /* HYBRID: TFM_QACT_* */
    int32_t zout;
    float flo, fhi;             /* clamp, relative to zout */
    float s_out;
} tfm_qout;

/* acc = A * B with B in the packed form, each sum finished as out says.
 * A is uint8 [M, ceil(K/4) * 4], rows zero-padded past K. Exact for
 * K <= TFM_QGEMM_MAX_K. Allocates nothing and cannot fail. */
void tfm_qgemm_packed(int64_t M, int64_t N, int64_t K, const uint8_t *A,
                     const int8_t *bp, const tfm_qout *out);

/* How many times the [K, N] path looked weights up in its cache of
 * packings (each lookup compares the weights with memcmp): tests check
 * that converted models, whose weights are stored packed, never do. */
long long tfm_qgemm_cache_lookups(void);

/* Which path tfm_qgemm_u8s8 takes: 1 AVX512-VNNI, 0 the portable loops.
 * VNNI needs the compiler to know it and the CPU to have it; the
 * environment variable TFMINI_QGEMM_REF=1 (read once) forces the
 * portable loops, so tests can check both on one machine. */
int tfm_qgemm_uses_vnni(void);

#define TFM_QK(name)                                                      \
    tfm_code name(tfm_op op, tfm_tensor *const *in, int nin,              \
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,   \
                  const tfm_kctx *ctx)
TFM_QK(tfm_k_quantize);
TFM_QK(tfm_k_dequantize);
TFM_QK(tfm_k_qmatmul_accum);
TFM_QK(tfm_k_hybrid_fc);
TFM_QK(tfm_k_quantized_fc);
TFM_QK(tfm_k_quantized_conv2d);
TFM_QK(tfm_k_quantized_fc_packed);
TFM_QK(tfm_k_hybrid_fc_packed);
TFM_QK(tfm_k_quantized_conv2d_packed);
TFM_QK(tfm_k_hybrid_conv2d_packed);
TFM_QK(tfm_k_quantized_max_pool);
TFM_QK(tfm_k_quantized_avg_pool);
TFM_QK(tfm_k_quantized_softmax);

#endif
