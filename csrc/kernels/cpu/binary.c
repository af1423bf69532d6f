/* Binary arithmetic kernels, one loop per (op, dtype) from loops.h. */
#include "elementwise.h"

#include "loops.h"

typedef void (*binary_fn)(const void *, const void *, void *,
                          const tfm_bcast *);

#define NUMERIC_LOOPS(OPNAME, EXPR)                                          \
    TFM_BINARY_LOOP(OPNAME##_i8, int8_t, int8_t, EXPR)                       \
    TFM_BINARY_LOOP(OPNAME##_u8, uint8_t, uint8_t, EXPR)                     \
    TFM_BINARY_LOOP(OPNAME##_i16, int16_t, int16_t, EXPR)                    \
    TFM_BINARY_LOOP(OPNAME##_i32, int32_t, int32_t, EXPR)                    \
    TFM_BINARY_LOOP(OPNAME##_i64, int64_t, int64_t, EXPR)                    \
    TFM_BINARY_LOOP(OPNAME##_f32, float, float, EXPR)                        \
    TFM_BINARY_LOOP(OPNAME##_f64, double, double, EXPR)

#define NUMERIC_TABLE(OPNAME)                                                \
    { [TFM_INT8] = OPNAME##_i8, [TFM_UINT8] = OPNAME##_u8,                   \
      [TFM_INT16] = OPNAME##_i16, [TFM_INT32] = OPNAME##_i32,                \
      [TFM_INT64] = OPNAME##_i64, [TFM_FLOAT32] = OPNAME##_f32,              \
      [TFM_FLOAT64] = OPNAME##_f64 }

NUMERIC_LOOPS(add, x + y)
NUMERIC_LOOPS(sub, x - y)
NUMERIC_LOOPS(mul, x * y)

static binary_fn
lookup(tfm_op op, tfm_dtype d)
{
    static const binary_fn add[TFM_DTYPE_COUNT] = NUMERIC_TABLE(add);
    static const binary_fn sub[TFM_DTYPE_COUNT] = NUMERIC_TABLE(sub);
    static const binary_fn mul[TFM_DTYPE_COUNT] = NUMERIC_TABLE(mul);
    switch (op) {
    case TFM_OP_ADD: return add[d];
    case TFM_OP_SUB: return sub[d];
    case TFM_OP_MUL: return mul[d];
    default: return NULL;
    }
}

tfm_code
tfm_k_binary(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout)
{
    (void)nin; (void)a; (void)nout;
    binary_fn f = lookup(op, in[0]->dtype);
    if (!f)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s has no kernel for dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(in[0]->dtype));
    tfm_bcast p;
    tfm_bcast_plan(&in[0]->shape, &in[1]->shape, &out[0]->shape, &p);
    if (p.n > 0)
        f(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
          tfm_tensor_data(out[0]), &p);
    return TFM_OK;
}
