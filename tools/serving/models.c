/* Version folders, loading and swapping (models.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"

struct served_model {
    char *name, *base_path;
    pthread_mutex_t lock;
    version *current;
    int64_t failed;         /* the newest number that failed to load */
};

/* The largest all-digits folder name under base, or -1. */
static int64_t
newest_version(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return -1;
    int64_t best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *p = e->d_name;
        if (!*p || strlen(p) > 18)
            continue;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p)
            continue;
        int64_t n = strtoll(e->d_name, NULL, 10);
        if (n > best)
            best = n;
    }
    closedir(d);
    return best;
}

static version *
load_version(const char *base, int64_t n, char *err, size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%lld", base, (long long)n);
    TFM_Status *st = tfmini_status_new();
    TFM_Model *m = tfmini_model_load(path, st);
    if (!m) {
        snprintf(err, errlen, "%s: %s", path, tfmini_status_message(st));
        tfmini_status_free(st);
        return NULL;
    }
    tfmini_status_free(st);
    size_t len = 0;
    const char *meta = tfmini_model_meta(m, &len);
    json_t *root = meta ? json_loadb(meta, len, 0, NULL) : NULL;
    json_t *sigs = root ? json_object_get(root, "signatures") : NULL;
    if (!json_is_object(sigs)) {
        snprintf(err, errlen, "%s: the model has no signatures (save it "
                 "with tf.saved_model.save or model.export)", path);
        json_decref(root);
        tfmini_model_free(m);
        return NULL;
    }
    version *v = calloc(1, sizeof *v);
    v->number = n;
    v->model = m;
    v->signatures = json_incref(sigs);
    v->refs = 1;            /* the served model's */
    json_decref(root);
    return v;
}

static void
free_version(version *v)
{
    json_decref(v->signatures);
    tfmini_model_free(v->model);
    free(v);
}

served_model *
served_model_new(const char *name, const char *base_path, char *err,
                 size_t errlen)
{
    int64_t n = newest_version(base_path);
    if (n < 0) {
        snprintf(err, errlen, "no numbered version folder under %s",
                 base_path);
        return NULL;
    }
    version *v = load_version(base_path, n, err, errlen);
    if (!v)
        return NULL;
    served_model *s = calloc(1, sizeof *s);
    s->name = strdup(name);
    s->base_path = strdup(base_path);
    pthread_mutex_init(&s->lock, NULL);
    s->current = v;
    s->failed = -1;
    return s;
}

const char *
served_model_name(const served_model *s)
{
    return s->name;
}

version *
served_model_acquire(served_model *s)
{
    pthread_mutex_lock(&s->lock);
    version *v = s->current;
    if (v)
        v->refs++;
    pthread_mutex_unlock(&s->lock);
    return v;
}

void
served_model_release(served_model *s, version *v)
{
    pthread_mutex_lock(&s->lock);
    int last = --v->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (last)
        free_version(v);
}

int
served_model_poll(served_model *s)
{
    int64_t n = newest_version(s->base_path);
    pthread_mutex_lock(&s->lock);
    int64_t have = s->current ? s->current->number : -1;
    int64_t failed = s->failed;
    pthread_mutex_unlock(&s->lock);
    if (n <= have)
        return 0;
    char err[512];
    version *v = load_version(s->base_path, n, err, sizeof err);
    if (!v) {
        /* A folder still being written: tried again at the next poll
         * (said once); the old version goes on serving. */
        if (n != failed)
            fprintf(stderr, "tfmini_model_server: %s\n", err);
        pthread_mutex_lock(&s->lock);
        s->failed = n;
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    pthread_mutex_lock(&s->lock);
    version *old = s->current;
    s->current = v;
    pthread_mutex_unlock(&s->lock);
    if (old)
        served_model_release(s, old);
    fprintf(stderr, "tfmini_model_server: %s: serving version %lld\n",
            s->name, (long long)n);
    return 1;
}
