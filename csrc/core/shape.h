/* Shapes and broadcasting. A dim of -1 is unknown (symbolic tensors
 * only); rank is always known. */
#ifndef TFM_SHAPE_H
#define TFM_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define TFM_MAX_DIMS 8
#define TFM_UNKNOWN_DIM (-1)

typedef struct tfm_shape {
    int ndim;
    int64_t dims[TFM_MAX_DIMS];
} tfm_shape;

/* Product of dims; -1 if any dim is unknown. A product beyond int64
 * saturates at INT64_MAX (no such tensor can be allocated: allocation
 * then fails with ResourceExhaustedError instead of wrapping around). */
int64_t tfm_shape_numel(const tfm_shape *s);
bool tfm_shape_equal(const tfm_shape *a, const tfm_shape *b);
bool tfm_shape_is_known(const tfm_shape *s);
tfm_shape tfm_shape_make(int ndim, const int64_t *dims);

/* "[2,3]" (unknown dims print as "?"); returns buf. */
char *tfm_shape_str(const tfm_shape *s, char *buf, size_t n);

/* NumPy broadcasting of a and b. On mismatch: InvalidArgumentError
 * "Incompatible shapes for <op>: [2,3] vs [4]". */
tfm_code tfm_shape_broadcast(const char *op, const tfm_shape *a,
                             const tfm_shape *b, tfm_shape *out);

/* Normalize axis (may be negative) against rank; error names op. */
tfm_code tfm_shape_axis(const char *op, int64_t axis, int rank, int *out);

/* Row-major element strides of s, with 0 for dims broadcast from `from`
 * (right-aligned) to `to`. */
void tfm_shape_broadcast_strides(const tfm_shape *from, const tfm_shape *to,
                                 int64_t *strides);

#endif
