#include "trace.h"

struct tfm_graph *
tfm_trace_graph(void)
{
    return NULL;
}

tfm_code
tfm_trace_add_op(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor **out, int *nout)
{
    (void)op; (void)in; (void)nin; (void)a; (void)out; (void)nout;
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "tracing is not built yet");
}
