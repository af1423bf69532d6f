/* Shape rules of the quantized ops (rows in ops_quant.def).
 *
 * Note [Quantized arithmetic]
 * A quantized tensor holds int8 q standing for (q - zero_point) * scale.
 * Activations are quantized per tensor, asymmetric (zero_point anywhere
 * in [-128, 127], so a ReLU output uses the whole range); weights per
 * output channel (last axis), symmetric (zero_point 0, q in [-127, 127]),
 * as TF Lite does. Products are summed exactly in int32 by the int8 GEMM
 * (kernels/cpu/qgemm.c), which takes uint8 activations: int8 q + 128 is
 * the same value with zero_point + 128, so the two kinds share it. An
 * output is requantized with a float multiplier in_scale * w_scale[c] /
 * out_scale, rounded half away from zero (TF Lite uses a fixed-point
 * multiplier; the float one differs from it by at most one step).
 * Biases are int32 with scale in_scale * w_scale[c], zero_point 0.
 * With the input's zero point z fixed, sum (u - z - 128) w + bias =
 * sum u w + (bias - (z + 128) sum w): the packed forms store that
 * offset, so the zero point costs nothing at run time.
 *
 * Attributes of every quantized op:
 *   f[0] input scale, f[1] output scale,
 *   i[1] input zero_point, i[2] output zero_point,
 *   i[3] fused activation: 0 none, 1 Relu, 2 Relu6;
 *   QuantizedConv2D also has Conv2D's (ints, i[0]: ops_conv.def).
 * The packed forms (weights as Note [Packed int8 weights] in qgemm.h,
 * what the converter writes) also take a float32 input, quantized on
 * the way in with f[0] and i[1], and with dtype float32 give their int8
 * output dequantized, in the same pass: the converter puts them at a
 * model's float edges instead of Quantize and Dequantize nodes.
 * Int8 pooling keeps its input's scale and zero point (a max or a mean
 * of q is the q of the max or mean); int8 Softmax, as TF Lite's, gives
 * scale 1/256 and zero point -128. */
#ifndef TFM_OPS_QUANT_H
#define TFM_OPS_QUANT_H

#include "../kernels/cpu/qgemm.h"
#include "op.h"

#define TFM_QI(name)                                                      \
    tfm_code name(tfm_op op, const tfm_meta *in, int nin,                 \
                  const tfm_attrs *a, tfm_meta *out, int *nout)
TFM_QI(tfm_infer_quantize);
TFM_QI(tfm_infer_dequantize);
TFM_QI(tfm_infer_qmatmul_accum);
TFM_QI(tfm_infer_hybrid_fc);
TFM_QI(tfm_infer_quantized_fc);
TFM_QI(tfm_infer_quantized_conv2d);
TFM_QI(tfm_infer_quantized_fc_packed);
TFM_QI(tfm_infer_hybrid_fc_packed);
TFM_QI(tfm_infer_quantized_conv2d_packed);
TFM_QI(tfm_infer_hybrid_conv2d_packed);
TFM_QI(tfm_infer_quantized_pool);
TFM_QI(tfm_infer_quantized_softmax);

#endif
