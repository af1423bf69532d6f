/* Gradient tapes (see DESIGN.md, "Tape"). The dispatcher calls
 * tfm_tape_record after every op while any tape is active. */
#ifndef TFM_TAPE_H
#define TFM_TAPE_H

#include "../ops/op.h"

/* Number of tapes currently recording; the dispatcher's fast check. */
extern int tfm_tape_active_count;

/* Record op on each active tape that watches one of its inputs. */
tfm_code tfm_tape_record(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout);

struct tfm_variable;
/* A variable was read: tapes that watch accessed variables watch it. */
void tfm_tape_variable_accessed(struct tfm_variable *v);

#endif
