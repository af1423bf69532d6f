/* Server-side batching (--enable_batching), as TF Serving's shared
 * batch scheduler does it: concurrent predict requests on the same
 * signature of the same loaded version, whose inputs all have a leading
 * batch dimension, are concatenated along it, run once, and the outputs
 * split back. A batch runs when it holds max_batch_size rows or when its
 * oldest request has waited batch_timeout_micros, whichever comes first,
 * on one of num_batch_threads threads; the requests' HTTP workers are
 * free meanwhile (the connection is suspended, see main.c). */
#ifndef TFMINI_SERVING_BATCH_H
#define TFMINI_SERVING_BATCH_H

#include <stdint.h>
#include <tfmini/tfmini.h>

#define MAX_IO 64

/* One run of a signature: the caller fills model..in, the runner fills
 * out, code and msg and then calls wake(ctx) (from a batch thread when
 * batched); after wake the runner no longer touches the job. */
typedef struct predict_job {
    TFM_Model *model;
    int fn, nin, nout;
    TFM_Tensor *in[MAX_IO];
    TFM_Tensor *out[MAX_IO];
    TFM_Code code;
    char msg[1024];
    void (*wake)(void *ctx);
    void *ctx;
    /* the batcher's */
    int64_t rows;
    int64_t enqueued_us;
    struct predict_job *next;
} predict_job;

typedef struct batch_options {
    int max_batch_size;             /* rows */
    int64_t batch_timeout_micros;
    int num_batch_threads;
    int max_enqueued;               /* requests waiting; more get 503 */
    int intra_op_threads;           /* per run; 0: OpenMP's default */
} batch_options;

typedef struct batcher batcher;

batcher *batcher_new(const batch_options *opt);
/* Runs what is queued, then joins the threads. */
void batcher_free(batcher *b);

/* Queue job: 0 if queued (wake will be called), 1 if it cannot be
 * batched (inputs without a shared leading dimension, or larger than
 * max_batch_size: the caller runs it with job_run), -1 if the queue is
 * full or stopping (msg says so). */
int batcher_submit(batcher *b, predict_job *job);

/* Let the runs of the calling thread use n OpenMP threads (n > 0;
 * OpenMP keeps this per thread). Requests already run side by side on
 * the worker threads: kernels that also split over every core then
 * oversubscribe them. */
void set_intra_op_threads(int n);

/* Run job alone, in the calling thread (fills out, code, msg; does not
 * call wake). */
void job_run(predict_job *job);

/* TF Serving's --batching_parameters_file (protobuf text format:
 * max_batch_size { value: N } batch_timeout_micros { value: N }
 * num_batch_threads { value: N } max_enqueued_batches { value: N });
 * fields it names override opt. 0, or -1 with a message in err. */
int batch_options_read(const char *path, batch_options *opt, char *err,
                       size_t errlen);

#endif
