/* _C tape objects: filled by the GradientTape work (issue 3). */
#include "binding.h"

int
tfm_py_tape_init(PyObject *m)
{
    (void)m;
    return 0;
}
