/* CPU kernels of the random family (rows in ops/ops_random.def). */
#ifndef TFM_KERNELS_CPU_RANDOM_H
#define TFM_KERNELS_CPU_RANDOM_H

#include "../../ops/op.h"

/* The Philox key and counter a call draws from (Note [Random streams] in
 * random.c): from state ([counter lo, counter hi, key], host memory)
 * when not NULL, else from the attrs, a traced instance's run r starting
 * r * blocks_per_run blocks further (which counts the run). Also read by
 * the GPU's random kernels (cuda/kernels_random.c). */
tfm_code tfm_random_stream(const tfm_attrs *a, const int64_t *state,
                           uint64_t blocks_per_run, uint64_t *key,
                           uint64_t *ctr_lo, uint64_t *ctr_hi);

tfm_code tfm_k_random_normal(tfm_op op, tfm_tensor *const *in, int nin,
                             const tfm_attrs *a, tfm_tensor *const *out,
                             int nout, const tfm_kctx *ctx);
tfm_code tfm_k_random_uniform(tfm_op op, tfm_tensor *const *in, int nin,
                              const tfm_attrs *a, tfm_tensor *const *out,
                              int nout, const tfm_kctx *ctx);
tfm_code tfm_k_random_uniform_int(tfm_op op, tfm_tensor *const *in, int nin,
                                  const tfm_attrs *a,
                                  tfm_tensor *const *out, int nout,
                                  const tfm_kctx *ctx);
tfm_code tfm_k_truncated_normal(tfm_op op, tfm_tensor *const *in, int nin,
                                const tfm_attrs *a, tfm_tensor *const *out,
                                int nout, const tfm_kctx *ctx);
tfm_code tfm_k_random_shuffle(tfm_op op, tfm_tensor *const *in, int nin,
                              const tfm_attrs *a, tfm_tensor *const *out,
                              int nout, const tfm_kctx *ctx);
tfm_code tfm_k_multinomial(tfm_op op, tfm_tensor *const *in, int nin,
                           const tfm_attrs *a, tfm_tensor *const *out,
                           int nout, const tfm_kctx *ctx);

#endif
