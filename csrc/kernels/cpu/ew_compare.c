/* Comparison (bool out), logical (bool in and out) and bitwise (integers)
 * kernels. Bools are bytes holding 0 or 1; logical ops read any nonzero
 * byte as true so that they never produce other values. */
#include "elementwise.h"
#include "ew_complex.h"

#include "int_loops.h"
#include "string_kernels.h"

typedef void (*binary_fn)(const void *, const void *, void *,
                          const tfm_bcast *);
typedef void (*unary_fn)(const void *, void *, int64_t);

#define COMPARE_LOOPS(OPNAME, EXPR)                                          \
    TFM_BINARY_LOOP(OPNAME##_b, uint8_t, uint8_t, EXPR)                      \
    TFM_BINARY_LOOP(OPNAME##_i8, int8_t, uint8_t, EXPR)                      \
    TFM_BINARY_LOOP(OPNAME##_u8, uint8_t, uint8_t, EXPR)                     \
    TFM_BINARY_LOOP(OPNAME##_i16, int16_t, uint8_t, EXPR)                    \
    TFM_BINARY_LOOP(OPNAME##_i32, int32_t, uint8_t, EXPR)                    \
    TFM_BINARY_LOOP(OPNAME##_i64, int64_t, uint8_t, EXPR)                    \
    TFM_BINARY_LOOP(OPNAME##_f32, float, uint8_t, EXPR)                      \
    TFM_BINARY_LOOP(OPNAME##_f64, double, uint8_t, EXPR)                     \
    TFM_BINARY_LOOP(OPNAME##_u16, uint16_t, uint8_t, EXPR)                   \
    TFM_BINARY_LOOP(OPNAME##_u32, uint32_t, uint8_t, EXPR)                   \
    TFM_BINARY_LOOP(OPNAME##_u64, uint64_t, uint8_t, EXPR)

/* Bools compare as their truth values. */
#define COMPARE_TABLE(OPNAME)                                                \
    { [TFM_BOOL] = OPNAME##_b, [TFM_INT8] = OPNAME##_i8,                     \
      [TFM_UINT8] = OPNAME##_u8, [TFM_INT16] = OPNAME##_i16,                 \
      [TFM_INT32] = OPNAME##_i32, [TFM_INT64] = OPNAME##_i64,                \
      [TFM_FLOAT32] = OPNAME##_f32, [TFM_FLOAT64] = OPNAME##_f64,            \
      [TFM_UINT16] = OPNAME##_u16, [TFM_UINT32] = OPNAME##_u32,              \
      [TFM_UINT64] = OPNAME##_u64 }

COMPARE_LOOPS(eq, x == y)
COMPARE_LOOPS(ne, x != y)
COMPARE_LOOPS(lt, x < y)
COMPARE_LOOPS(le, x <= y)
COMPARE_LOOPS(gt, x > y)
COMPARE_LOOPS(ge, x >= y)

TFM_BINARY_LOOP(land, uint8_t, uint8_t, (x != 0) & (y != 0))
TFM_BINARY_LOOP(lor, uint8_t, uint8_t, (x != 0) | (y != 0))
TFM_BINARY_LOOP(lxor, uint8_t, uint8_t, (x != 0) ^ (y != 0))
TFM_UNARY_LOOP(lnot, uint8_t, uint8_t, x == 0)

TFM_INT_LOOPS(TFM_BINARY_LOOP, band, x & y)
TFM_INT_LOOPS(TFM_BINARY_LOOP, bor, x | y)
TFM_INT_LOOPS(TFM_BINARY_LOOP, bxor, x ^ y)
TFM_INT_LOOPS(TFM_UNARY_LOOP, inv, ~x)

static tfm_code
no_kernel(tfm_op op, tfm_dtype d)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                     "dtype %s", tfm_ops[op].name, tfm_dtype_name(d));
}

static tfm_code
run_binary(binary_fn f, tfm_tensor *const *in, tfm_tensor *const *out)
{
    tfm_bcast p;
    tfm_bcast_plan(&in[0]->shape, &in[1]->shape, &out[0]->shape, &p);
    if (p.n > 0)
        f(tfm_tensor_data(in[0]), tfm_tensor_data(in[1]),
          tfm_tensor_data(out[0]), &p);
    return TFM_OK;
}

tfm_code
tfm_k_compare(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    static const binary_fn eq[TFM_DTYPE_COUNT] = COMPARE_TABLE(eq);
    static const binary_fn ne[TFM_DTYPE_COUNT] = COMPARE_TABLE(ne);
    static const binary_fn lt[TFM_DTYPE_COUNT] = COMPARE_TABLE(lt);
    static const binary_fn le[TFM_DTYPE_COUNT] = COMPARE_TABLE(le);
    static const binary_fn gt[TFM_DTYPE_COUNT] = COMPARE_TABLE(gt);
    static const binary_fn ge[TFM_DTYPE_COUNT] = COMPARE_TABLE(ge);
    tfm_dtype d = in[0]->dtype;
    if (d == TFM_STRING)
        return tfm_k_string_compare(op, in, nin, a, out, nout, ctx);
    if (tfm_dtype_is_complex(in[0]->dtype))
        return tfm_k_complex_ew(op, in, nin, a, out, nout, ctx);
    binary_fn f = NULL;
    switch (op) {
    case TFM_OP_EQUAL: f = eq[d]; break;
    case TFM_OP_NOT_EQUAL: f = ne[d]; break;
    case TFM_OP_LESS: f = lt[d]; break;
    case TFM_OP_LESS_EQUAL: f = le[d]; break;
    case TFM_OP_GREATER: f = gt[d]; break;
    case TFM_OP_GREATER_EQUAL: f = ge[d]; break;
    default: break;
    }
    if (!f)
        return no_kernel(op, d);
    return run_binary(f, in, out);
}

tfm_code
tfm_k_logical(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)a; (void)nout;
    if (nin == 1) {
        if (op != TFM_OP_LOGICAL_NOT)
            return no_kernel(op, in[0]->dtype);
        lnot(tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
             tfm_tensor_numel(in[0]));
        return TFM_OK;
    }
    binary_fn f = op == TFM_OP_LOGICAL_AND ? land
                : op == TFM_OP_LOGICAL_OR ? lor
                : op == TFM_OP_LOGICAL_XOR ? lxor : NULL;
    if (!f)
        return no_kernel(op, in[0]->dtype);
    return run_binary(f, in, out);
}

tfm_code
tfm_k_bitwise(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)a; (void)nout;
    tfm_dtype d = in[0]->dtype;
    if (nin == 1) {
        static const unary_fn inv[TFM_DTYPE_COUNT] = TFM_INT_TABLE(inv);
        if (op != TFM_OP_INVERT || !inv[d])
            return no_kernel(op, d);
        inv[d](tfm_tensor_data(in[0]), tfm_tensor_data(out[0]),
               tfm_tensor_numel(in[0]));
        return TFM_OK;
    }
    static const binary_fn band[TFM_DTYPE_COUNT] = TFM_INT_TABLE(band);
    static const binary_fn bor[TFM_DTYPE_COUNT] = TFM_INT_TABLE(bor);
    static const binary_fn bxor[TFM_DTYPE_COUNT] = TFM_INT_TABLE(bxor);
    binary_fn f = op == TFM_OP_BITWISE_AND ? band[d]
                : op == TFM_OP_BITWISE_OR ? bor[d]
                : op == TFM_OP_BITWISE_XOR ? bxor[d] : NULL;
    if (!f)
        return no_kernel(op, d);
    return run_binary(f, in, out);
}
