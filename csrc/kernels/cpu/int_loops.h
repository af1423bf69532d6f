/* One loop per integer dtype (int8, uint8, int16, int32, int64) and the
 * dtype-indexed table of them, for the kernels whose float dtypes run
 * the loops of ew_float.c: the integer dtypes a kernel covers are listed
 * here once. */
#ifndef TFM_KERNELS_CPU_INT_LOOPS_H
#define TFM_KERNELS_CPU_INT_LOOPS_H

#include "loops.h"

/* LOOP is TFM_UNARY_LOOP or TFM_BINARY_LOOP: defines OPNAME_i8 ...
 * OPNAME_i64 computing EXPR in the element type. */
#define TFM_INT_LOOPS(LOOP, OPNAME, EXPR)                                    \
    LOOP(OPNAME##_i8, int8_t, int8_t, EXPR)                                  \
    LOOP(OPNAME##_u8, uint8_t, uint8_t, EXPR)                                \
    LOOP(OPNAME##_i16, int16_t, int16_t, EXPR)                               \
    LOOP(OPNAME##_i32, int32_t, int32_t, EXPR)                               \
    LOOP(OPNAME##_i64, int64_t, int64_t, EXPR)

/* The initializer of a [TFM_DTYPE_COUNT] table of TFM_INT_LOOPS' loops
 * (NULL for the other dtypes). */
#define TFM_INT_TABLE(OPNAME)                                                \
    { [TFM_INT8] = OPNAME##_i8, [TFM_UINT8] = OPNAME##_u8,                   \
      [TFM_INT16] = OPNAME##_i16, [TFM_INT32] = OPNAME##_i32,                \
      [TFM_INT64] = OPNAME##_i64 }

#endif
