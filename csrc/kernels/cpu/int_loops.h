/* One loop per integer dtype and the dtype-indexed tables of them, for
 * the kernels whose float dtypes run the loops of ew_float.c: the integer
 * dtypes a kernel covers are listed here once.
 *
 * Two sets: every int (int8..int64, uint8..uint64), and the narrow set
 * without uint16/32/64, for the ops TF has no kernels for on those
 * (Neg, Abs, Sign, SquaredDifference, ...; uint8 is kept there as it
 * was). */
#ifndef TFM_KERNELS_CPU_INT_LOOPS_H
#define TFM_KERNELS_CPU_INT_LOOPS_H

#include "loops.h"

/* LOOP is TFM_UNARY_LOOP or TFM_BINARY_LOOP: defines OPNAME_i8 ...
 * OPNAME_i64 (and OPNAME_u8) computing EXPR in the element type. */
#define TFM_INT8_64_LOOPS(LOOP, OPNAME, EXPR)                                \
    LOOP(OPNAME##_i8, int8_t, int8_t, EXPR)                                  \
    LOOP(OPNAME##_u8, uint8_t, uint8_t, EXPR)                                \
    LOOP(OPNAME##_i16, int16_t, int16_t, EXPR)                               \
    LOOP(OPNAME##_i32, int32_t, int32_t, EXPR)                               \
    LOOP(OPNAME##_i64, int64_t, int64_t, EXPR)

/* ... and OPNAME_u16, OPNAME_u32, OPNAME_u64 too. */
#define TFM_INT_LOOPS(LOOP, OPNAME, EXPR)                                    \
    TFM_INT8_64_LOOPS(LOOP, OPNAME, EXPR)                                    \
    LOOP(OPNAME##_u16, uint16_t, uint16_t, EXPR)                             \
    LOOP(OPNAME##_u32, uint32_t, uint32_t, EXPR)                             \
    LOOP(OPNAME##_u64, uint64_t, uint64_t, EXPR)

/* The initializers of [TFM_DTYPE_COUNT] tables of those loops (NULL for
 * the other dtypes). */
#define TFM_INT8_64_TABLE(OPNAME)                                            \
    { [TFM_INT8] = OPNAME##_i8, [TFM_UINT8] = OPNAME##_u8,                   \
      [TFM_INT16] = OPNAME##_i16, [TFM_INT32] = OPNAME##_i32,                \
      [TFM_INT64] = OPNAME##_i64 }

#define TFM_INT_TABLE(OPNAME)                                                \
    { [TFM_INT8] = OPNAME##_i8, [TFM_UINT8] = OPNAME##_u8,                   \
      [TFM_INT16] = OPNAME##_i16, [TFM_INT32] = OPNAME##_i32,                \
      [TFM_INT64] = OPNAME##_i64, [TFM_UINT16] = OPNAME##_u16,               \
      [TFM_UINT32] = OPNAME##_u32, [TFM_UINT64] = OPNAME##_u64 }

#endif
