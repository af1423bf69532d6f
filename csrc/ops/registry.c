/* The op table, expanded from ops.def. */
#include "op.h"

#include <string.h>

#include "../kernels/cpu/kernels.h"
#include "families.h"

const tfm_op_def tfm_ops[TFM_OP_COUNT] = {
#define X(ENUM, NAME, NIN, NOUT, INFER, KERNEL, FLAGS) \
    [TFM_OP_##ENUM] = { NAME, NIN, NOUT, INFER, KERNEL, FLAGS },
#include "ops.def"
#undef X
};

int
tfm_op_lookup(const char *name)
{
    for (int i = 0; i < TFM_OP_COUNT; i++)
        if (strcmp(tfm_ops[i].name, name) == 0)
            return i;
    return -1;
}
