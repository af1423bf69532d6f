/* String elements: what a TFM_STRING tensor holds.
 *
 * Note [String elements]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * Each element of a string tensor is a pointer to an immutable,
 * refcounted byte string (tfm_str); NULL is the empty string. A string
 * buffer (tfm_buffer.strings) holds one reference to every non-NULL
 * element and drops them when it is freed, so a tensor owns its bytes
 * and frees them with its buffer.
 *
 * Why pointers: the copy kernels (reshape, transpose, concat, gather,
 * slice, tile, ...) move elements by size with memcpy, and serve every
 * dtype. With pointer elements they serve strings unchanged: they copy
 * borrowed pointers. The rule that makes that sound is applied in one
 * place, after every kernel (tfm_strings_settle, called by the
 * dispatcher): a kernel writes borrowed pointers (copied from inputs) or
 * new strings whose refcount is 0, and the output buffer then takes one
 * reference to each element. After a failed kernel, strings still at 0
 * (made by it, owned by nobody) are freed and every slot is cleared, so
 * the buffer's free drops nothing it does not own.
 *
 * String buffers are host memory only, never arena views (the memory
 * plan leaves them out), and are zeroed when made (every slot is a valid
 * element: b""). Refcounts are atomic because kernels may run without
 * the interpreter lock. */
#ifndef TFM_TSTRING_H
#define TFM_TSTRING_H

#include <stdint.h>

#include "tensor.h"

typedef struct tfm_str {
    int64_t refcount;          /* atomic: see the Note */
    int64_t len;
    char data[];               /* len bytes, then a NUL (for strtod & co) */
} tfm_str;

/* A new string of len bytes copied from p (p may be NULL: zeroed), with
 * refcount 0; NULL with the error set when out of memory. len 0 also
 * gives a real (empty) string. */
tfm_str *tfm_str_new(const char *p, int64_t len);
void tfm_str_incref(tfm_str *s);
void tfm_str_decref(tfm_str *s);

static inline const char *
tfm_str_data(const tfm_str *s)
{
    return s ? s->data : "";
}

static inline int64_t
tfm_str_len(const tfm_str *s)
{
    return s ? s->len : 0;
}

/* Drop the references n slots hold (a string buffer's free). */
void tfm_strs_release(tfm_str **v, int64_t n);

/* Note [String elements]: after a kernel wrote outs (rc its result):
 * on success each string output takes a reference to its elements; on
 * failure the kernel's own strings are freed and the slots cleared. */
void tfm_strings_settle(tfm_tensor *const *out, int nout,
                        tfm_code rc);

/* Make a string tensor's elements its own after filling them with new
 * (refcount 0) or borrowed strings outside a kernel (conversion from
 * Python, file readers). */
void tfm_tensor_adopt_strings(tfm_tensor *t);

/* A string tensor's elements (writable in a kernel's outputs). */
static inline tfm_str **
tfm_tensor_strs(const tfm_tensor *t)
{
    return (tfm_str **)tfm_tensor_data(t);
}

#endif
