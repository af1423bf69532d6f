/* The launchers of index.cu, and those shape.cu and scatter.cu gained
 * for GatherV2's batch dims and TensorScatterMin/Max, for their C glue
 * (kernels_index.c, kernels_shape.c, kernels_scatter.c). Plain C types
 * only; as in launch.h each returns 0, a cudaError_t (> 0), or -1 when
 * it has no kernel for the request, and mirrors the CPU kernel named
 * beside it. */
#ifndef TFM_KERNELS_CUDA_LAUNCH_INDEX_H
#define TFM_KERNELS_CUDA_LAUNCH_INDEX_H

#include <stdint.h>

#include "launch_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* IsNan (what 0), IsInf (1), IsFinite (2) of n elements of x, of
 * launch.h's element type ty, into bool (one byte) o: read from the
 * bits, so the 16-bit floats need no conversion (cpu/ew_math.c's
 * isnan_f32 and friends). */
int tfm_cu_float_pred(int what, int ty, const void *x, void *o, int64_t n,
                      void *stream);

/* Range and LinSpace (cpu/shape_fill.c's RANGE_LOOP): o[k] = start + k *
 * delta, computed in int64 (kind TFM_CU_SEQ_INT: the low es bytes kept,
 * as C's conversion to a narrower integer) or in double and rounded
 * once to the output (TFM_CU_SEQ_F32, TFM_CU_SEQ_F64), with no fused
 * multiply-add, as the CPU computes it. last: o[n - 1] is stop exactly
 * (LinSpace's end point). */
enum { TFM_CU_SEQ_INT, TFM_CU_SEQ_F32, TFM_CU_SEQ_F64 };
int tfm_cu_sequence(int kind, int es, int64_t istart, int64_t idelta,
                    double fstart, double fdelta, int last, double stop,
                    void *o, int64_t n, void *stream);

/* GatherNd (cpu/shape_gather.c's tfm_k_gather_nd): o row k (len es-byte
 * elements) is x's slice at index row k, indices already checked with
 * tfm_cu_scatter_check (while a CUDA graph is captured the check only
 * sets a flag, so a row out of range gives zeros here and the replay is
 * rerun the plain way for the CPU's error). */
int tfm_cu_gather_nd(int es, int idx64, const void *x, const void *idx,
                     void *o, int64_t rows, int64_t len, const tfm_cu_nd *p,
                     void *stream);

/* n (at most 64) bytes written to device memory o by a kernel that takes
 * them as its parameter: a value a CUDA graph can keep (a copy from host
 * memory would be replayed from a dead address). */
int tfm_cu_put_bytes(void *o, const void *bytes, size_t n, void *stream);

/* Where (cpu/shape_select.c's tfm_k_where) in two launches, elements
 * taken in chunks of TFM_CU_WHERE_CHUNK, one chunk a thread. An element
 * of es bytes (1, 2, 4, 8) is nonzero when any of its bits is set but
 * a float's sign (is_float): -0.0 is zero, NaN is not, as on the CPU.
 * tfm_cu_where_offsets: offs (nchunks + 1 int64 of device memory) gets
 * each chunk's first output row and, at offs[nchunks], the count; tmp
 * of *tmp_bytes bytes is scratch, and a NULL tmp only sets *tmp_bytes.
 * tfm_cu_where_coords: the rank coordinates of each nonzero element of
 * a dense x of shape dims, in row-major order, from those offsets. */
#define TFM_CU_WHERE_CHUNK 256
int tfm_cu_where_offsets(int es, int is_float, const void *x, int64_t n,
                         int64_t *offs, void *tmp, size_t *tmp_bytes,
                         void *stream);
int tfm_cu_where_coords(int es, int is_float, const void *x, int rank,
                        const int64_t *dims, int64_t n, const int64_t *offs,
                        int64_t *o, void *stream);

/* GatherV2 with batch dims (cpu/shape_gather.c's tfm_k_gather): x
 * viewed as [batch, outer, dim, inner], indices [batch, nidx], output
 * [batch, outer, nidx, inner]; an index outside [0, dim) gives zeros,
 * as tfm_cu_gather (shape.cu). */
int tfm_cu_gather_batched(int es, int idx64, const void *x, const void *idx,
                          void *o, int64_t batch, int64_t outer, int64_t dim,
                          int64_t inner, int64_t nidx, void *stream);

/* TensorScatterMin (is_max 0) / TensorScatterMax of updates u [rows,
 * len] into o (already a copy of the tensor), indices checked: each
 * element keeps the least / greatest of itself and the updates, a NaN
 * update never winning and a NaN already there staying (cpu/
 * shape_gather.c's SCATTER_MIN/MAX); kind TFM_CU_OUT_*. */
int tfm_cu_scatter_minmax(int is_max, int kind, int idx64, const void *idx,
                          const void *u, void *o, int64_t rows, int64_t len,
                          const tfm_cu_nd *p, void *stream);

#ifdef __cplusplus
}
#endif

#endif
