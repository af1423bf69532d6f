/* Runs of one loaded model from several threads at once give exactly
 * what the same runs give one at a time (tests/test_c_runtime.py).
 *
 *   threads EXPORT_DIR FUNCTION NTHREADS ITERS BATCH
 *
 * The function takes one float32 [?, D] input. Each thread feeds its own
 * input (values depend on the thread) ITERS times and compares every
 * output with the one computed before the threads started. Prints
 * "ok <runs>" and exits 0, or says what differed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfmini/tfmini.h>

#define MAX_THREADS 32

static TFM_Model *model;
static int fn, iters;
static TFM_Tensor *inputs[MAX_THREADS];
static TFM_Tensor *expect[MAX_THREADS];
static int failures[MAX_THREADS];

static void *
worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    TFM_Status *st = tfmini_status_new();
    for (int k = 0; k < iters; k++) {
        TFM_Tensor *out = NULL;
        if (tfmini_model_run(model, fn, &inputs[id], 1, &out, 1, st)) {
            fprintf(stderr, "thread %d run %d: %s\n", id, k,
                    tfmini_status_message(st));
            failures[id]++;
            continue;
        }
        if (tfmini_tensor_byte_size(out) != tfmini_tensor_byte_size(
                expect[id]) || memcmp(tfmini_tensor_data(out),
                tfmini_tensor_data(expect[id]),
                tfmini_tensor_byte_size(out)) != 0) {
            fprintf(stderr, "thread %d run %d: output differs\n", id, k);
            failures[id]++;
        }
        tfmini_tensor_free(out);
    }
    tfmini_status_free(st);
    return NULL;
}

int
main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: threads DIR FUNCTION NTHREADS ITERS BATCH\n");
        return 2;
    }
    int nthreads = atoi(argv[3]), batch = atoi(argv[5]);
    iters = atoi(argv[4]);
    if (nthreads < 1 || nthreads > MAX_THREADS || batch < 1)
        return 2;
    TFM_Status *st = tfmini_status_new();
    model = tfmini_model_load(argv[1], st);
    if (!model) {
        fprintf(stderr, "load: %s\n", tfmini_status_message(st));
        return 1;
    }
    fn = tfmini_model_find(model, argv[2]);
    int64_t dims[2];
    if (fn < 0 || tfmini_model_input_count(model, fn) != 1 ||
        tfmini_model_output_count(model, fn) != 1 ||
        tfmini_model_input_shape(model, fn, 0, dims, 2) != 2) {
        fprintf(stderr, "%s: not a function of one [?, D] input\n", argv[2]);
        return 1;
    }
    dims[0] = batch;
    size_t n = (size_t)(dims[0] * dims[1]);
    float *buf = malloc(n * sizeof *buf);
    for (int t = 0; t < nthreads; t++) {
        for (size_t i = 0; i < n; i++)
            buf[i] = (float)((i * 7 + (size_t)t * 13) % 17) / 8.0f - 1.0f;
        inputs[t] = tfmini_tensor_new(TFMINI_FLOAT32, dims, 2, buf,
                                      n * sizeof *buf, st);
        if (!inputs[t] ||
            tfmini_model_run(model, fn, &inputs[t], 1, &expect[t], 1, st)) {
            fprintf(stderr, "serial run: %s\n", tfmini_status_message(st));
            return 1;
        }
    }
    free(buf);
    pthread_t th[MAX_THREADS];
    for (int t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    int bad = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        bad += failures[t];
    }
    for (int t = 0; t < nthreads; t++) {
        tfmini_tensor_free(inputs[t]);
        tfmini_tensor_free(expect[t]);
    }
    tfmini_model_free(model);
    tfmini_status_free(st);
    if (bad) {
        fprintf(stderr, "%d of %d runs failed\n", bad, nthreads * iters);
        return 1;
    }
    printf("ok %d\n", nthreads * iters);
    return 0;
}
