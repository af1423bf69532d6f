/* JSON values <-> tensors, as TF Serving's REST API writes them: nested
 * lists of numbers (or booleans), row-major. */
#ifndef TFMINI_SERVING_CONVERT_H
#define TFMINI_SERVING_CONVERT_H

#include <tfmini/tfmini.h>

#include "jparse.h"

/* A tensor of dtype from value (nested lists, or a scalar). With
 * `stack` > 0, value is a list of `stack` instances of equal shape
 * stacked on a new first axis (the row format); with `member` too, each
 * instance is an object and its member `member` is what is stacked
 * (every instance must have it). NULL with a message in err. */
TFM_Tensor *json_to_tensor(const jnode *value, TFM_DataType dtype,
                           int stack, const char *member, char *err,
                           size_t errlen);
/* TF Serving's name of a dtype: "DT_FLOAT", ... */
const char *dtype_tf_name(TFM_DataType d);
/* tfmini's dtype named name ("float32"), or -1. */
int dtype_from_name(const char *name);

#endif
