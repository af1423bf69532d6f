/* Private to the reduce kernels (reduce*.c): the accumulator, the
 * per-dtype loops, and the [A, R, B] plan that every reduction is brought
 * to. See Note [Reduction plan] in reduce.c. */
#ifndef TFM_KERNELS_CPU_REDUCE_IMPL_H
#define TFM_KERNELS_CPU_REDUCE_IMPL_H

#include <stdbool.h>

#include "../../core/tensor.h"

/* One accumulator slot: double for floats (float32 sums are exact enough
 * in double to match NumPy's pairwise float32 sums and better), uint64
 * for integer sums and products (wrapping, as TF's integer arithmetic),
 * int64 for integer max/min and for bools. */
typedef union tfm_acc {
    double d;
    int64_t i;
    uint64_t u;
} tfm_acc;

typedef enum tfm_red_kind {
    TFM_RED_SUM,
    TFM_RED_PROD,
    TFM_RED_MAX,
    TFM_RED_MIN,
    TFM_RED_ALL,
    TFM_RED_ANY,
    TFM_RED_SUMEXP,   /* sum of exp(x - aux): the second logsumexp pass */
    TFM_RED_KIND_COUNT
} tfm_red_kind;

/* acc = op(acc, x[0..n)). aux: this row's shift (SUMEXP), else unused. */
typedef void (*tfm_red_row_fn)(const void *x, int64_t n, const tfm_acc *aux,
                               tfm_acc *acc);
/* acc[j] = op(acc[j], x[r * stride + j]) for r < rows, j < len. */
typedef void (*tfm_red_col_fn)(const void *x, int64_t rows, int64_t len,
                               int64_t stride, const tfm_acc *aux,
                               tfm_acc *acc);
/* dst[j] = op(dst[j], src[j]). */
typedef void (*tfm_red_comb_fn)(tfm_acc *dst, const tfm_acc *src,
                                int64_t n);

typedef struct tfm_reducer {
    tfm_red_row_fn row;
    tfm_red_col_fn col;
    tfm_red_comb_fn comb;
    tfm_acc identity;
} tfm_reducer;

/* The loops of kind k over dtype d; false if there is none. */
bool tfm_reducer_get(tfm_red_kind k, tfm_dtype d, tfm_reducer *r);

/* Note [Reduction plan]: dims of size 1 are dropped and neighbours with
 * the same role are merged, so a reduction becomes [A, R, B] (keep A,
 * reduce R, keep B): full (1, N, 1), innermost (A, R, 1), outermost
 * (1, R, B) or middle. Anything else (reduced dims in two or more
 * separate runs) is first gathered into [kept..., reduced...] order. */
typedef struct tfm_red_plan {
    int64_t a, r, b;
    int gather;                     /* 1: copy through dims/strides first */
    int ndim;
    int64_t dims[TFM_MAX_DIMS];     /* in gathered (kept-first) order */
    int64_t strides[TFM_MAX_DIMS];  /* source element strides */
} tfm_red_plan;

void tfm_red_plan_make(const tfm_shape *s, const bool *reduced,
                       tfm_red_plan *p);

/* Runs rd over x (element size es) per plan p into acc[a * b], which it
 * initializes. aux (or NULL): one value per output, handed to the loops
 * with the matching acc slots. */
tfm_code tfm_red_run(const tfm_reducer *rd, const tfm_red_plan *p,
                     const void *x, size_t es, const tfm_acc *aux,
                     tfm_acc *acc);

/* Sum (or its mean over count) and Prod of complex x into y per plan p:
 * a complex accumulator is two doubles, wider than tfm_acc, so these run
 * a loop of their own. */
tfm_code tfm_red_complex(tfm_red_kind k, bool mean, const tfm_red_plan *p,
                         const tfm_tensor *x, tfm_tensor *y, int64_t count);

/* Copies the strided view (dims, strides in elements) of src into dst,
 * contiguous in dims order. */
void tfm_gather_strided(const void *src, void *dst, size_t es, int ndim,
                        const int64_t *dims, const int64_t *strides);

/* Fixed block sizes: results never depend on the thread count. */
#define TFM_RED_BLOCK 16384  /* elements per partial of a long row */
#define TFM_RED_TILE 4096    /* columns per accumulator tile */

#endif
