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

tfm_code
tfm_trace_read_variable(struct tfm_variable *v, tfm_tensor **out)
{
    (void)v; (void)out;
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "tracing is not built yet");
}

tfm_code
tfm_trace_assign_variable(struct tfm_variable *v, tfm_tensor *value,
                          int mode)
{
    (void)v; (void)value; (void)mode;
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "tracing is not built yet");
}
