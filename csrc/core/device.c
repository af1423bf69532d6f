/* The device table (Note [Device seam] in device.h). */
#include "device.h"
#include "tstring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tensor.h"

static void *
host_scratch_alloc(const tfm_kctx *c, size_t nbytes)
{
    (void)c;
    /* Aligned as host buffers are (buffer.c). */
    return aligned_alloc(64, nbytes ? (nbytes + 63) / 64 * 64 : 64);
}

static void
host_scratch_free(const tfm_kctx *c, void *p, size_t nbytes)
{
    (void)c;
    (void)nbytes;
    free(p);
}

/* A device whose memory host code cannot touch gets its temporaries
 * from its own allocator. */
static void *
device_scratch_alloc(const tfm_kctx *c, size_t nbytes)
{
    return c->device->alloc(c->device, nbytes);
}

static void
device_scratch_free(const tfm_kctx *c, void *p, size_t nbytes)
{
    c->device->free(c->device, p, nbytes);
}

static tfm_code
host_copy(const tfm_device *d, void *dst, const void *src, size_t n)
{
    (void)d;
    memmove(dst, src, n);
    return TFM_OK;
}

static tfm_code
host_sync(const tfm_device *d)
{
    (void)d;
    return TFM_OK;
}

/* The CPU's buffers come from buffer.c's host allocator, which never
 * calls these; they are here so every entry is complete. */
static void *
cpu_alloc(const tfm_device *d, size_t nbytes)
{
    (void)d;
    return malloc(nbytes ? nbytes : 1);
}

static void
cpu_free(const tfm_device *d, void *p, size_t nbytes)
{
    (void)d;
    (void)nbytes;
    free(p);
}

static const tfm_device cpu_device = {
    .index = 0, .kind = "CPU", .kind_index = 0, .host_memory = 1,
    .alloc = cpu_alloc, .free = cpu_free, .copy_to_host = host_copy,
    .copy_from_host = host_copy, .copy_device_to_device = host_copy,
    .synchronize = host_sync,
};

const tfm_kctx tfm_kctx_cpu = {
    &cpu_device, NULL, host_scratch_alloc, host_scratch_free,
};

static const tfm_device *table[TFM_MAX_DEVICES] = {&cpu_device};
static tfm_kctx contexts[TFM_MAX_DEVICES];

const tfm_device *
tfm_device_get(int index)
{
    if (index < 0 || index >= TFM_MAX_DEVICES)
        return NULL;
    return table[index];
}

const tfm_kctx *
tfm_device_kctx(int index)
{
    if (index == 0)
        return &tfm_kctx_cpu;
    if (!tfm_device_get(index))
        return NULL;
    return &contexts[index];
}

tfm_code
tfm_device_register(int index, const tfm_device *d)
{
    if (index <= 0 || index >= TFM_MAX_DEVICES || (d && d->index != index))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "device index %d cannot "
                         "be registered", index);
    table[index] = d;
    int host = !d || d->host_memory;
    contexts[index] = (tfm_kctx){
        d, d ? d->stream : NULL,
        host ? host_scratch_alloc : device_scratch_alloc,
        host ? host_scratch_free : device_scratch_free};
    return TFM_OK;
}

int
tfm_device_find(const char *kind, int n)
{
    for (int i = 0; i < TFM_MAX_DEVICES; i++)
        if (table[i] && table[i]->kind_index == n &&
            strcasecmp(table[i]->kind, kind) == 0)
            return i;
    return -1;
}

const char *
tfm_device_name(int index, char *buf, size_t n)
{
    const tfm_device *d = tfm_device_get(index);
    if (d)
        snprintf(buf, n, "/job:localhost/replica:0/task:0/device:%s:%d",
                 d->kind, d->kind_index);
    else
        snprintf(buf, n, "/job:localhost/replica:0/task:0/device:"
                 "UNKNOWN:%d", index);
    return buf;
}

static tfm_code
no_device(int index)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "no device with index %d is "
                     "registered", index);
}

tfm_code
tfm_tensor_copy_into(tfm_tensor *dst, const tfm_tensor *src)
{
    size_t n = tfm_tensor_nbytes(src);
    void *to = tfm_tensor_data(dst);
    const void *from = tfm_tensor_data(src);
    if (to == from || n == 0)
        return TFM_OK;
    if (tfm_tensor_nbytes(dst) != n)
        return tfm_error(TFM_ERR_INTERNAL, "device copy of %zu bytes into "
                         "%zu", n, tfm_tensor_nbytes(dst));
    const tfm_device *sd = tfm_device_get(src->device);
    const tfm_device *dd = tfm_device_get(dst->device);
    if (!sd)
        return no_device(src->device);
    if (!dd)
        return no_device(dst->device);
    if (sd->index == 0 && dd->index == 0) {
        if (src->dtype == TFM_STRING) {
            /* Note [String elements]: dst's slots own references. */
            int64_t k = tfm_tensor_numel(src);
            tfm_str **d = tfm_tensor_strs(dst);
            tfm_str *const *s = tfm_tensor_strs(src);
            for (int64_t i = 0; i < k; i++)
                tfm_str_incref(s[i]);
            tfm_strs_release(d, k);
            memmove(to, from, n);
            return TFM_OK;
        }
        memmove(to, from, n);
        return TFM_OK;
    }
    if (src->dtype == TFM_STRING)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "string tensors live in "
                         "host memory only: no copy to or from device %d",
                         sd->index ? sd->index : dd->index);
    if (sd->index == 0)
        return dd->copy_from_host(dd, to, from, n);
    if (dd->index == 0)
        return sd->copy_to_host(sd, to, from, n);
    if (sd == dd)
        return dd->copy_device_to_device(dd, to, from, n);
    /* Between two devices: through the host, as TF does without peer
     * access. */
    void *tmp = malloc(n);
    if (!tmp)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM staging a copy of "
                         "%zu bytes between devices", n);
    tfm_code rc = sd->copy_to_host(sd, tmp, from, n);
    if (!rc)
        rc = dd->copy_from_host(dd, to, tmp, n);
    free(tmp);
    return rc;
}

tfm_tensor *
tfm_tensor_to_device(tfm_tensor *t, int device)
{
    if (t->device == device) {
        tfm_tensor_incref(t);
        return t;
    }
    tfm_tensor *o = tfm_tensor_new(t->dtype, &t->shape, device);
    if (!o)
        return NULL;
    if (tfm_tensor_copy_into(o, t)) {
        tfm_tensor_decref(o);
        return NULL;
    }
    return o;
}
