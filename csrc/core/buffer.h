/* A refcounted block of device memory. Tensors share buffers (reshape,
 * variable reads); a Variable writes in place only while it holds the
 * sole reference (copy-on-write), which keeps tensors immutable.
 *
 * Refcounts are plain integers: every incref/decref happens on a thread
 * holding the caller's lock (the GIL in the binding); kernels that run
 * in worker threads never touch them. */
#ifndef TFM_BUFFER_H
#define TFM_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Device 0 is the CPU; others are entries of device.h's table. */
enum { TFM_CPU = 0 };

typedef struct tfm_buffer {
    int64_t refcount;
    void *data;
    size_t nbytes;
    int device;            /* index in the device table; 0 = CPU */
    int inline_data;       /* data follows the header in one block */
    /* Holds string elements: one reference to each, dropped on free
     * (Note [String elements] in tstring.h). */
    int strings;
    /* External memory (e.g. a NumPy array we borrow): release() drops it. */
    void (*release)(void *ctx);
    void *release_ctx;
} tfm_buffer;

/* New uninitialized buffer. Sizes beyond the machine's memory are a
 * ResourceExhaustedError, never a crash. */
tfm_buffer *tfm_buffer_new(size_t nbytes, int device);
/* Wrap memory owned by someone else; release(ctx) runs on last decref. */
tfm_buffer *tfm_buffer_wrap(void *data, size_t nbytes, int device,
                            void (*release)(void *), void *ctx);

static inline void
tfm_buffer_incref(tfm_buffer *b)
{
    b->refcount++;
}
void tfm_buffer_decref(tfm_buffer *b);

/* Live buffer count and bytes, for leak tests. */
int64_t tfm_buffer_live_count(void);
int64_t tfm_buffer_live_bytes(void);
/* The most bytes live at once since the last reset (which sets it to
 * the bytes live now): peak memory for tests and benchmarks. Wrapped
 * memory (NumPy arrays we borrow) counts too, as in live_bytes. */
int64_t tfm_buffer_peak_bytes(void);
void tfm_buffer_reset_peak(void);

/* Freed big host blocks kept for reuse (Note [Big block cache] in
 * buffer.c): how many bytes, and letting them all go. */
size_t tfm_buffer_cache_bytes(void);
void tfm_buffer_cache_trim(void);

/* Memory of other devices comes from their entry in the device table
 * (device.h). */

#endif
