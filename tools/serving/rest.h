/* TF Serving's REST endpoints over the served models (rest.c). */
#ifndef TFMINI_SERVING_REST_H
#define TFMINI_SERVING_REST_H

#include <jansson.h>

#include "batch.h"
#include "models.h"

/* A reply: HTTP status and a JSON body, either a tree (a new reference)
 * or, with body NULL, `len` bytes of JSON text at `text` (the calling
 * thread's reply buffer, jb_thread: good until its next reply). */
typedef struct reply {
    unsigned status;
    json_t *body;
    const char *text;
    size_t len;
} reply;

/* With server-side batching: where predicts are queued, and what to
 * call (from a batch thread) once a queued one has run. */
typedef struct rest_defer {
    batcher *batcher;
    void (*wake)(void *ctx);
    void *ctx;
} rest_defer;

/* A queued predict, for rest_finish. */
typedef struct rest_pending rest_pending;

/* Route method + url (+ body for POST) to an endpoint. With defer (may
 * be NULL) a predict that can be batched is queued instead: the reply's
 * status is then 0, *queued is set, and after defer->wake(ctx) the
 * caller gets the reply from rest_finish(*queued). */
reply rest_handle(served_model **models, int nmodels, const char *method,
                  const char *url, const char *body, size_t len,
                  const rest_defer *defer, rest_pending **queued);
/* The reply to a queued predict that has run; frees it. */
reply rest_finish(rest_pending *p);

#endif
