/* The served models: per name, the newest numbered version folder under
 * its base path, loaded with the C runtime and swapped for a newer one
 * by a polling thread while requests go on (each request holds a
 * reference on the version it runs, so a swap never frees a version in
 * use). */
#ifndef TFMINI_SERVING_MODELS_H
#define TFMINI_SERVING_MODELS_H

#include <jansson.h>
#include <stdint.h>
#include <tfmini/tfmini.h>

typedef struct version {
    int64_t number;
    TFM_Model *model;
    json_t *signatures;     /* the meta's "signatures" object */
    int refs;               /* under the owning model's lock */
} version;

typedef struct served_model served_model;

/* Load the newest version under base_path (NULL with a message in err
 * when there is none or it fails to load). */
served_model *served_model_new(const char *name, const char *base_path,
                               char *err, size_t errlen);
const char *served_model_name(const served_model *s);
/* The current version with a reference taken, or NULL. */
version *served_model_acquire(served_model *s);
void served_model_release(served_model *s, version *v);
/* Load a newer version if one appeared; 1 if swapped. */
int served_model_poll(served_model *s);

#endif
