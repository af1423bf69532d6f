/* The float32/float64 loops of every elementwise formula (Note
 * [Elementwise formulas] in ../ew_formulas.h), for the kernels of
 * binary.c, unary.c, ew_math.c and ew_activation.c. */
#ifndef TFM_KERNELS_CPU_EW_FLOAT_H
#define TFM_KERNELS_CPU_EW_FLOAT_H

#include "../../ops/op.h"
#include "loops.h"

typedef void (*tfm_ew_binary_fn)(const void *, const void *, void *,
                                 const tfm_bcast *);

/* The loop of a BINARY row for dtype d, or NULL (no row, or d not a
 * float). */
tfm_ew_binary_fn tfm_ew_float_binary(tfm_op op, tfm_dtype d);

/* Runs a UNARY, HEAVY or PARAM row of op over in into out when d is
 * float32 or float64 and the row exists: 1; else 0 (nothing done). */
int tfm_ew_float_unary(tfm_op op, const tfm_tensor *in, tfm_tensor *out,
                       const tfm_attrs *a);

#endif
