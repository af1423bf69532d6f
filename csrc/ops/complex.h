/* Shape rules of the complex family (ops_complex.def), and which of the
 * other ops take complex inputs. */
#ifndef TFM_OPS_COMPLEX_H
#define TFM_OPS_COMPLEX_H

#include <stdbool.h>

#include "op.h"

tfm_code tfm_infer_complex(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout);
tfm_code tfm_infer_complex_part(tfm_op op, const tfm_meta *in, int nin,
                                const tfm_attrs *a, tfm_meta *out,
                                int *nout);

/* Whether op (of the elementwise family) has a complex kernel: the shape
 * rules refuse complex inputs to the others (TF has no Less, Maximum,
 * Relu, Floor... for complex). */
bool tfm_op_takes_complex(tfm_op op);

#endif
