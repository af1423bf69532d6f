/* Shape rules of the random family (rows in ops_random.def). */
#ifndef TFM_OPS_RANDOM_H
#define TFM_OPS_RANDOM_H

#include "op.h"

/* Float sampling ops: shape from ints, float dtype from a->dtype. */
tfm_code tfm_infer_multinomial(tfm_op op, const tfm_meta *in, int nin,
                               const tfm_attrs *a, tfm_meta *out,
                               int *nout);
tfm_code tfm_infer_random(tfm_op op, const tfm_meta *in, int nin,
                          const tfm_attrs *a, tfm_meta *out, int *nout);
/* RandomUniformInt: int32/int64, i[4] < i[5]. */
tfm_code tfm_infer_random_int(tfm_op op, const tfm_meta *in, int nin,
                              const tfm_attrs *a, tfm_meta *out, int *nout);
/* RandomShuffle: same dtype and shape as the input. */
tfm_code tfm_infer_shuffle(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout);

#endif
