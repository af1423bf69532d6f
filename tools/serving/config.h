/* --model_config_file: TF Serving's model server config, in protobuf
 * text format; only what serving from disk needs is read. */
#ifndef TFMINI_SERVING_CONFIG_H
#define TFMINI_SERVING_CONFIG_H

#include <stddef.h>

#define MAX_MODELS 64

typedef struct model_entry {
    char name[256];
    char base_path[4096];
} model_entry;

/* The config { name: '...' base_path: '...' } entries of path's
 * model_config_list; the count, or -1 with a message in err. Other
 * fields (model_platform, version policies) are read past. */
int config_read(const char *path, model_entry *out, int max, char *err,
                size_t errlen);

#endif
