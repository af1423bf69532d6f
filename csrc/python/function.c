/* _C function objects: filled by the tf.function work (issue 4). */
#include "binding.h"

int
tfm_py_function_init(PyObject *m)
{
    (void)m;
    return 0;
}
