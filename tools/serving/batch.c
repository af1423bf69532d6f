/* The batch scheduler (batch.h). One queue per server, in arrival
 * order; a batch is the oldest queued job and every later job that can
 * join it (same model and signature, same dtypes and per-row shapes),
 * up to max_batch_size rows. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"

struct batcher {
    batch_options opt;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    predict_job *head, *tail;
    int queued, stopping, nthreads;
    pthread_t *threads;
};

static int64_t
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void
set_intra_op_threads(int n)
{
    /* Found at run time: the runtime library brings OpenMP, and the
     * server need not link it (nor fail where the runtime was built
     * without it). */
    void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT,
                                            "omp_set_num_threads");
    if (set && n > 0)
        set(n);
}

void
job_run(predict_job *job)
{
    TFM_Status *st = tfmini_status_new();
    job->code = tfmini_model_run(job->model, job->fn, job->in, job->nin,
                                 job->out, job->nout, st);
    snprintf(job->msg, sizeof job->msg, "%s",
             job->code ? tfmini_status_message(st) : "");
    tfmini_status_free(st);
}

/* The leading dimension all of job's inputs share, or -1. */
static int64_t
job_rows(const predict_job *job)
{
    int64_t rows = -1;
    for (int i = 0; i < job->nin; i++) {
        int64_t dims[1];
        /* A declared fixed batch (say [1, 4]) could not take a merged
         * batch: only an unknown leading dimension is batched. */
        if (tfmini_tensor_rank(job->in[i]) < 1 ||
            tfmini_model_input_shape(job->model, job->fn, i, dims, 1) < 1 ||
            dims[0] != -1)
            return -1;
        int64_t r = tfmini_tensor_dim(job->in[i], 0);
        if (rows >= 0 && r != rows)
            return -1;
        rows = r;
    }
    return rows > 0 ? rows : -1;
}

/* Whether b can run in one batch with a. */
static int
joinable(const predict_job *a, const predict_job *b)
{
    if (a->model != b->model || a->fn != b->fn)
        return 0;
    for (int i = 0; i < a->nin; i++) {
        const TFM_Tensor *x = a->in[i], *y = b->in[i];
        int rank = tfmini_tensor_rank(x);
        if (tfmini_tensor_dtype(x) != tfmini_tensor_dtype(y) ||
            tfmini_tensor_rank(y) != rank)
            return 0;
        for (int d = 1; d < rank; d++)
            if (tfmini_tensor_dim(x, d) != tfmini_tensor_dim(y, d))
                return 0;
    }
    return 1;
}

int
batcher_submit(batcher *b, predict_job *job)
{
    job->rows = job_rows(job);
    if (job->rows < 0 || job->rows > b->opt.max_batch_size)
        return 1;
    pthread_mutex_lock(&b->lock);
    if (b->stopping || b->queued >= b->opt.max_enqueued) {
        if (b->stopping)
            snprintf(job->msg, sizeof job->msg, "the server is stopping");
        else
            snprintf(job->msg, sizeof job->msg, "the batch queue is full "
                     "(%d requests waiting)", b->opt.max_enqueued);
        pthread_mutex_unlock(&b->lock);
        return -1;
    }
    job->enqueued_us = now_us();
    job->next = NULL;
    if (b->tail)
        b->tail->next = job;
    else
        b->head = job;
    b->tail = job;
    b->queued++;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return 0;
}

/* Under the lock: the rows the head's batch would hold now. */
static int64_t
ready_rows(batcher *b)
{
    int64_t rows = 0;
    for (predict_job *j = b->head; j; j = j->next)
        if (joinable(b->head, j) && rows + j->rows <= b->opt.max_batch_size)
            rows += j->rows;
    return rows;
}

/* Under the lock: unlink the head's batch into out[]; its count. */
static int
take_batch(batcher *b, predict_job **out, int64_t *total)
{
    predict_job *first = b->head, *prev = NULL, *j = b->head;
    int n = 0;
    *total = 0;
    while (j) {
        predict_job *next = j->next;
        if (joinable(first, j) &&
            *total + j->rows <= b->opt.max_batch_size) {
            *total += j->rows;
            out[n++] = j;
            if (prev)
                prev->next = next;
            else
                b->head = next;
            if (b->tail == j)
                b->tail = prev;
            b->queued--;
        } else {
            prev = j;
        }
        j = next;
    }
    return n;
}

/* A new tensor holding rows [start, start + rows) of t. */
static TFM_Tensor *
slice_rows(const TFM_Tensor *t, int64_t start, int64_t rows,
           int64_t total, TFM_Status *st)
{
    int rank = tfmini_tensor_rank(t);
    int64_t dims[TFMINI_MAX_DIMS];
    for (int d = 0; d < rank; d++)
        dims[d] = tfmini_tensor_dim(t, d);
    dims[0] = rows;
    size_t row_bytes = tfmini_tensor_byte_size(t) / (size_t)total;
    return tfmini_tensor_new(tfmini_tensor_dtype(t), dims, rank,
                             (const char *)tfmini_tensor_data(t) +
                             (size_t)start * row_bytes,
                             (size_t)rows * row_bytes, st);
}

/* Run jobs[0..n) as one batch of total rows. When the merged run fails
 * or an output has no row per input row, each job runs alone instead:
 * its error message then names its own shapes, and a model whose
 * outputs are not per-row still answers correctly. */
static void
run_batch(predict_job **jobs, int n, int64_t total)
{
    if (n == 1) {
        job_run(jobs[0]);
        return;
    }
    predict_job *a = jobs[0];
    TFM_Tensor *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
    TFM_Status *st = tfmini_status_new();
    int ok = 1;
    for (int i = 0; i < a->nin && ok; i++) {
        const TFM_Tensor *x = a->in[i];
        size_t row_bytes = tfmini_tensor_byte_size(x) / (size_t)a->rows;
        char *buf = malloc(row_bytes * (size_t)total + 1);
        ok = buf != NULL;
        size_t at = 0;
        for (int k = 0; k < n && ok; k++) {
            size_t nb = tfmini_tensor_byte_size(jobs[k]->in[i]);
            memcpy(buf + at, tfmini_tensor_data(jobs[k]->in[i]), nb);
            at += nb;
        }
        if (ok) {
            int rank = tfmini_tensor_rank(x);
            int64_t dims[TFMINI_MAX_DIMS];
            for (int d = 0; d < rank; d++)
                dims[d] = tfmini_tensor_dim(x, d);
            dims[0] = total;
            in[i] = tfmini_tensor_new(tfmini_tensor_dtype(x), dims, rank,
                                      buf, at, st);
            ok = in[i] != NULL;
        }
        free(buf);
    }
    ok = ok && tfmini_model_run(a->model, a->fn, in, a->nin, out, a->nout,
                                st) == TFMINI_OK;
    for (int j = 0; j < a->nout && ok; j++)
        ok = tfmini_tensor_rank(out[j]) >= 1 &&
             tfmini_tensor_dim(out[j], 0) == total;
    int64_t start = 0;
    for (int k = 0; k < n && ok; k++) {
        for (int j = 0; j < a->nout && ok; j++)
            ok = (jobs[k]->out[j] = slice_rows(out[j], start, jobs[k]->rows,
                                               total, st)) != NULL;
        start += jobs[k]->rows;
    }
    for (int i = 0; i < MAX_IO; i++) {
        tfmini_tensor_free(in[i]);
        tfmini_tensor_free(out[i]);
    }
    tfmini_status_free(st);
    for (int k = 0; k < n; k++) {
        if (ok) {
            jobs[k]->code = TFMINI_OK;
            jobs[k]->msg[0] = '\0';
            continue;
        }
        for (int j = 0; j < MAX_IO; j++) {
            tfmini_tensor_free(jobs[k]->out[j]);
            jobs[k]->out[j] = NULL;
        }
        job_run(jobs[k]);
    }
}

static void *
batch_thread(void *arg)
{
    batcher *b = arg;
    set_intra_op_threads(b->opt.intra_op_threads);
    predict_job **jobs = malloc(sizeof *jobs *
                                (size_t)b->opt.max_batch_size);
    pthread_mutex_lock(&b->lock);
    for (;;) {
        if (!b->head) {
            if (b->stopping)
                break;
            pthread_cond_wait(&b->cond, &b->lock);
            continue;
        }
        int64_t due = b->head->enqueued_us + b->opt.batch_timeout_micros;
        int64_t now = now_us();
        if (!b->stopping && now < due &&
            ready_rows(b) < b->opt.max_batch_size) {
            struct timespec ts = {due / 1000000,
                                  (long)(due % 1000000) * 1000};
            pthread_cond_timedwait(&b->cond, &b->lock, &ts);
            continue;
        }
        int64_t total;
        int n = take_batch(b, jobs, &total);
        pthread_mutex_unlock(&b->lock);
        run_batch(jobs, n, total);
        for (int k = 0; k < n; k++)
            jobs[k]->wake(jobs[k]->ctx);
        pthread_mutex_lock(&b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    free(jobs);
    return NULL;
}

batcher *
batcher_new(const batch_options *opt)
{
    batcher *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->opt = *opt;
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->cond, &ca);
    pthread_condattr_destroy(&ca);
    b->threads = calloc((size_t)opt->num_batch_threads, sizeof *b->threads);
    for (int i = 0; b->threads && i < opt->num_batch_threads; i++) {
        if (pthread_create(&b->threads[i], NULL, batch_thread, b))
            break;
        b->nthreads++;
    }
    if (b->nthreads == 0) {
        batcher_free(b);
        return NULL;
    }
    return b;
}

void
batcher_free(batcher *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->stopping = 1;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    for (int i = 0; i < b->nthreads; i++)
        pthread_join(b->threads[i], NULL);
    free(b->threads);
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

int
batch_options_read(const char *path, batch_options *opt, char *err,
                   size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read --batching_parameters_file %s",
                 path);
        return -1;
    }
    char text[8192];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    static const char *const names[] = {
        "max_batch_size", "batch_timeout_micros", "num_batch_threads",
        "max_enqueued_batches"};
    long long value[4] = {-1, -1, -1, -1};
    for (char *p = text; *p;) {
        if (*p == '#') {
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (!isalpha((unsigned char)*p) && *p != '_') {
            p++;
            continue;
        }
        char *w = p;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        size_t wl = (size_t)(p - w);
        int k = -1;
        for (int i = 0; i < 4; i++)
            if (strlen(names[i]) == wl && strncmp(w, names[i], wl) == 0)
                k = i;
        if (k < 0)
            continue;   /* allowed_batch_sizes, pad_variable_length_inputs,
                         * ...: tuning this scheduler does not need */
        /* name { value: N } */
        char *q = p;
        while (isspace((unsigned char)*q))
            q++;
        int ok = *q == '{';
        if (ok) {
            q++;
            while (isspace((unsigned char)*q))
                q++;
            ok = strncmp(q, "value", 5) == 0;
            q += ok ? 5 : 0;
            while (ok && isspace((unsigned char)*q))
                q++;
            ok = ok && *q == ':';
        }
        char *end = NULL;
        if (ok) {
            errno = 0;
            value[k] = strtoll(q + 1, &end, 10);
            ok = end != q + 1 && errno == 0 && value[k] >= 0;
            while (ok && isspace((unsigned char)*end))
                end++;
            ok = ok && *end == '}';
        }
        if (!ok) {
            snprintf(err, errlen, "%s: %s must read %s { value: N } with "
                     "N >= 0", path, names[k], names[k]);
            return -1;
        }
        p = end + 1;
    }
    if (value[0] >= 0)
        opt->max_batch_size = value[0] > 1 << 20 ? 1 << 20 : (int)value[0];
    if (value[1] >= 0)
        opt->batch_timeout_micros = value[1];
    if (value[2] >= 0)
        opt->num_batch_threads = value[2] > 256 ? 256 : (int)value[2];
    if (value[3] >= 0) {
        long long q = value[3] * (opt->max_batch_size > 0 ?
                                  opt->max_batch_size : 1);
        opt->max_enqueued = q > 1 << 20 ? 1 << 20 : (int)q;
    }
    if (opt->max_batch_size < 1 || opt->num_batch_threads < 1 ||
        opt->max_enqueued < 1) {
        snprintf(err, errlen, "%s: max_batch_size, num_batch_threads and "
                 "max_enqueued_batches must be at least 1", path);
        return -1;
    }
    return 0;
}
