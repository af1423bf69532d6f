/* Shared by the files of the C runtime (include/tfmini/tfmini.h): the
 * handles' layouts and the process-wide lock over the core. */
#ifndef TFM_RT_IMPL_H
#define TFM_RT_IMPL_H

#include "../../include/tfmini/tfmini.h"
#include "../core/status.h"
#include "../core/tensor.h"

struct TFM_Status {
    TFM_Code code;
    char *message;          /* malloc'ed; NULL means "" */
};

struct TFM_Tensor {
    tfm_tensor *t;          /* concrete, CPU, row-major contiguous */
};

/* Note [Runtime lock]: the core refcounts tensors and buffers with plain
 * integers and keeps process-wide caches (buffer.h, exec.c's arena
 * list), all under "the caller's lock", which the Python binding gets
 * from the interpreter lock. The runtime's stand-in is one mutex taken
 * around every call into the core. As the binding does with the
 * interpreter lock, the runtime hands the core hooks that release it
 * around big kernels (runtime/dispatch.h), so that concurrent runs
 * overlap where the time goes; exec.c then gives a second run of a busy
 * plan an arena of its own. */
void tfm_rt_lock(void);
void tfm_rt_unlock(void);

/* Record code and the core's thread-local message (or msg) in s. */
TFM_Code tfm_rt_fail(TFM_Status *s, TFM_Code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Copy the core's error (tfm_error_code/message) into s. */
TFM_Code tfm_rt_core_error(TFM_Status *s);
void tfm_rt_ok(TFM_Status *s);

#endif
