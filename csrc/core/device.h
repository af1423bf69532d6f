/* Devices: the table every buffer's memory and every kernel call goes
 * through. Plain C like the rest of core: it knows no op.
 *
 * Note [Device seam]
 * ~~~~~~~~~~~~~~~~~~
 * A device is an entry in one table, indexed by the int that buffers,
 * tensors and graph nodes carry (tfm_buffer.device, tfm_tensor.device,
 * tfm_node.device). Index 0 is the CPU and always present; other
 * entries are registered by a backend (CUDA when built with nvcc; the
 * test-only fake device of runtime/device_fake.c). An entry gives:
 *
 *   kind, kind_index   its TF name: /device:<kind>:<kind_index>
 *   alloc, free        the memory of its buffers (tfm_buffer_new)
 *   copy_to_host, copy_from_host, copy_device_to_device
 *                      the only ways bytes cross to or from it
 *   synchronize        wait for queued work (a no-op without streams)
 *   host_memory        its memory is host memory that host code may
 *                      touch (the CPU; the fake device): the executor's
 *                      fused programs and compiled code may run on it
 *   kernels            the runtime's per-op kernel table for it (a
 *                      const tfm_kernel_fn *, opaque here: core knows
 *                      no ops); NULL entries are ops it cannot run
 *
 * A kernel gets a tfm_kctx: the device it runs on, that device's
 * stream (NULL on the CPU), and a scratch allocator for temporaries of
 * the device's memory. Kernels receive it by pointer, so the CPU path
 * pays one argument. Nothing outside a kernel and this table may read
 * or write a non-host buffer's bytes: code that wants values (printing,
 * NumPy, a predicate's truth) asks tfm_tensor_to_host for a host copy;
 * code that moves values (variable assignment, the Copy op) uses
 * tfm_tensor_copy_into.
 *
 * The dispatcher (runtime/dispatch.c) picks the device of an op (the
 * tf.device scope, else its inputs'), copies inputs that live
 * elsewhere, and runs the op on the CPU when the device has no kernel
 * for it (TF's soft placement); graphs do the same ahead of time
 * (graph/pass_place.c). */
#ifndef TFM_DEVICE_H
#define TFM_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct tfm_tensor;

#define TFM_MAX_DEVICES 16

typedef struct tfm_device {
    int index;              /* its slot in the table */
    const char *kind;       /* "CPU", "GPU", "FAKE" */
    int kind_index;         /* n in /device:KIND:n */
    int host_memory;        /* host code may read its memory */
    void *(*alloc)(const struct tfm_device *d, size_t nbytes);
    void (*free)(const struct tfm_device *d, void *p, size_t nbytes);
    tfm_code (*copy_to_host)(const struct tfm_device *d, void *dst,
                             const void *src, size_t n);
    tfm_code (*copy_from_host)(const struct tfm_device *d, void *dst,
                               const void *src, size_t n);
    tfm_code (*copy_device_to_device)(const struct tfm_device *d, void *dst,
                                      const void *src, size_t n);
    tfm_code (*synchronize)(const struct tfm_device *d);
    void *stream;           /* the stream kernels are queued on */
    const void *kernels;    /* runtime's const tfm_kernel_fn[TFM_OP_COUNT] */
} tfm_device;

/* What a kernel is told about where it runs. */
typedef struct tfm_kctx {
    const tfm_device *device;
    void *stream;           /* NULL on the CPU */
    /* Temporaries in the device's memory; scratch_free takes the size
     * scratch_alloc was given. */
    void *(*scratch_alloc)(const struct tfm_kctx *c, size_t nbytes);
    void (*scratch_free)(const struct tfm_kctx *c, void *p, size_t nbytes);
} tfm_kctx;

/* The CPU's context, for callers that run CPU kernels directly. */
extern const tfm_kctx tfm_kctx_cpu;

/* Device index -> entry; NULL when none is registered there. The CPU is
 * index 0. Lookups take no lock: entries are registered at start-up (or
 * by a test before use) and never removed while in use. */
const tfm_device *tfm_device_get(int index);
/* Register d at d->index (0 < index < TFM_MAX_DEVICES; NULL removes).
 * Also sets the context kernels on it get. */
tfm_code tfm_device_register(int index, const tfm_device *d);
/* The index of /device:kind:n, or -1. kind is matched without case. */
int tfm_device_find(const char *kind, int n);
/* TF's full name: /job:localhost/replica:0/task:0/device:CPU:0. */
const char *tfm_device_name(int index, char *buf, size_t n);
/* The kernel context of a registered device. */
const tfm_kctx *tfm_device_kctx(int index);

/* A copy of t on device (new reference; t itself, increfed, when it is
 * there already). NULL with the error set on failure. */
struct tfm_tensor *tfm_tensor_to_device(struct tfm_tensor *t, int device);
static inline struct tfm_tensor *
tfm_tensor_to_host(struct tfm_tensor *t)
{
    return tfm_tensor_to_device(t, 0);
}
/* Bytes of src into dst (same byte size, any devices), through the
 * devices' copy functions. dst == src is a no-op. */
tfm_code tfm_tensor_copy_into(struct tfm_tensor *dst,
                              const struct tfm_tensor *src);

#endif
