/* See device_fake.h. */
#include "device_fake.h"

#include <stdlib.h>
#include <string.h>

static tfm_kernel_fn kernels[TFM_OP_COUNT];
static tfm_fake_stats stats;

static void *
fake_alloc(const tfm_device *d, size_t nbytes)
{
    (void)d;
    /* Aligned as host buffers are (buffer.c): kernels may take another
     * path (another summation order) for less aligned data, and the
     * fake device must give the CPU's bits. */
    size_t size = (nbytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, size ? size : 64);
    if (p)
        stats.live_buffers++;
    return p;
}

static void
fake_free(const tfm_device *d, void *p, size_t nbytes)
{
    (void)d;
    (void)nbytes;
    stats.live_buffers--;
    free(p);
}

static tfm_code
to_host(const tfm_device *d, void *dst, const void *src, size_t n)
{
    (void)d;
    stats.to_host++;
    stats.bytes_to_host += (int64_t)n;
    memcpy(dst, src, n);
    return TFM_OK;
}

static tfm_code
from_host(const tfm_device *d, void *dst, const void *src, size_t n)
{
    (void)d;
    stats.from_host++;
    stats.bytes_from_host += (int64_t)n;
    memcpy(dst, src, n);
    return TFM_OK;
}

static tfm_code
on_device(const tfm_device *d, void *dst, const void *src, size_t n)
{
    (void)d;
    stats.device_to_device++;
    memmove(dst, src, n);
    return TFM_OK;
}

static tfm_code
sync(const tfm_device *d)
{
    (void)d;
    return TFM_OK;
}

static const tfm_device fake = {
    .index = TFM_FAKE_DEVICE, .kind = "FAKE", .kind_index = 0,
    .host_memory = 1, .alloc = fake_alloc, .free = fake_free,
    .copy_to_host = to_host, .copy_from_host = from_host,
    .copy_device_to_device = on_device, .synchronize = sync,
    .stream = NULL, .kernels = kernels,
};

tfm_code
tfm_fake_device_enable(int on)
{
    if (!on)
        return tfm_device_register(TFM_FAKE_DEVICE, NULL);
    for (int op = 0; op < TFM_OP_COUNT; op++)
        kernels[op] = tfm_ops[op].cpu;
    int64_t live = stats.live_buffers;
    memset(&stats, 0, sizeof stats);
    stats.live_buffers = live;
    return tfm_device_register(TFM_FAKE_DEVICE, &fake);
}

void
tfm_fake_device_stats(tfm_fake_stats *out, int reset)
{
    *out = stats;
    if (reset) {
        int64_t live = stats.live_buffers;
        memset(&stats, 0, sizeof stats);
        stats.live_buffers = live;
    }
}

void
tfm_fake_device_deny(tfm_op op)
{
    kernels[op] = NULL;
}
