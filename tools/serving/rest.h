/* TF Serving's REST endpoints over the served models (rest.c). */
#ifndef TFMINI_SERVING_REST_H
#define TFMINI_SERVING_REST_H

#include <jansson.h>

#include "models.h"

/* A reply: HTTP status and a JSON body (a new reference). */
typedef struct reply {
    unsigned status;
    json_t *body;
} reply;

/* Route method + url (+ body for POST) to an endpoint. */
reply rest_handle(served_model **models, int nmodels, const char *method,
                  const char *url, const char *body, size_t len);

#endif
