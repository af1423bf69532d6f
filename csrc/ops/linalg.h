/* Shape rules of the linalg family (rows in ops_linalg.def). */
#ifndef TFM_OPS_LINALG_H
#define TFM_OPS_LINALG_H

#include "op.h"

/* BatchMatMulV2: rank >= 2, inner dims agree, batch dims broadcast. */
tfm_code tfm_infer_matmul(tfm_op op, const tfm_meta *in, int nin,
                          const tfm_attrs *a, tfm_meta *out, int *nout);

#endif
