#include "tstring.h"

#include <stdlib.h>
#include <string.h>

tfm_str *
tfm_str_new(const char *p, int64_t len)
{
    if (len < 0 || (uint64_t)len > SIZE_MAX - sizeof(tfm_str) - 1) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM: a string of %lld bytes",
                  (long long)len);
        return NULL;
    }
    tfm_str *s = malloc(sizeof(tfm_str) + (size_t)len + 1);
    if (!s) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM when allocating a string "
                  "of %lld bytes", (long long)len);
        return NULL;
    }
    s->refcount = 0;
    s->len = len;
    if (p && len)
        memcpy(s->data, p, (size_t)len);
    else if (len)
        memset(s->data, 0, (size_t)len);
    s->data[len] = 0;
    return s;
}

void
tfm_str_incref(tfm_str *s)
{
    if (s)
        __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

void
tfm_str_decref(tfm_str *s)
{
    /* <= 1: a refcount-0 string (see the Note) goes too. */
    if (s && __atomic_fetch_sub(&s->refcount, 1, __ATOMIC_ACQ_REL) <= 1)
        free(s);
}

void
tfm_strs_release(tfm_str **v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        tfm_str_decref(v[i]);
}

static void
adopt(tfm_tensor *t)
{
    tfm_str **v = (tfm_str **)tfm_tensor_data(t);
    int64_t n = tfm_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        tfm_str_incref(v[i]);
}

void
tfm_tensor_adopt_strings(tfm_tensor *t)
{
    if (t->dtype == TFM_STRING && t->buf)
        adopt(t);
}

void
tfm_strings_settle(tfm_tensor *const *out, int nout, tfm_code rc)
{
    for (int k = 0; k < nout; k++) {
        tfm_tensor *t = out[k];
        if (!t || t->dtype != TFM_STRING || !t->buf)
            continue;
        if (!rc) {
            adopt(t);
            continue;
        }
        tfm_str **v = (tfm_str **)tfm_tensor_data(t);
        int64_t n = tfm_tensor_numel(t);
        for (int64_t i = 0; i < n; i++) {
            if (v[i] && __atomic_load_n(&v[i]->refcount,
                                        __ATOMIC_ACQUIRE) == 0)
                free(v[i]);
            v[i] = NULL;
        }
    }
}
