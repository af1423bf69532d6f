/* JSON values <-> tensors, as TF Serving's REST API writes them: nested
 * lists of numbers (or booleans), row-major. */
#ifndef TFMINI_SERVING_CONVERT_H
#define TFMINI_SERVING_CONVERT_H

#include <jansson.h>
#include <tfmini/tfmini.h>

/* A tensor of dtype from value (nested lists, or a scalar). With
 * `stack` > 0, value is a list of `stack` instances of equal shape
 * stacked on a new first axis (the row format). NULL with a message in
 * err. */
TFM_Tensor *json_to_tensor(json_t *value, TFM_DataType dtype, int stack,
                           char *err, size_t errlen);
/* Nested lists of t's elements; with `row` >= 0, only row `row` of the
 * first axis. */
json_t *tensor_to_json(const TFM_Tensor *t, int64_t row);
/* TF Serving's name of a dtype: "DT_FLOAT", ... */
const char *dtype_tf_name(TFM_DataType d);
/* tfmini's dtype named name ("float32"), or -1. */
int dtype_from_name(const char *name);

#endif
