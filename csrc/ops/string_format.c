/* StringFormat's kernel: the template with each placeholder replaced by
 * the next input, formatted as tf.print formats it (state.c). */
#include "string_ops.h"

#include <stdlib.h>
#include <string.h>

#include "../core/tstring.h"
#include "state.h"

tfm_code
tfm_k_string_format(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
{
    (void)nout; (void)ctx;
    const tfm_str *tmpl = tfm_tensor_strs(in[0])[0];
    const tfm_str *ph = tfm_tensor_strs(in[1])[0];
    const char *t = tfm_str_data(tmpl);
    int64_t tn = tfm_str_len(tmpl), pn = tfm_str_len(ph);
    if (pn == 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the placeholder "
                         "must not be empty", tfm_ops[op].name);
    /* Count first: TF's error when they disagree. */
    int64_t count = 0;
    for (int64_t i = 0; i + pn <= tn;)
        if (memcmp(t + i, tfm_str_data(ph), (size_t)pn) == 0)
            count++, i += pn;
        else
            i++;
    if (count != nin - 2)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: %lld placeholders "
                         "in the template, but %d tensors to format",
                         tfm_ops[op].name, (long long)count, nin - 2);
    char **parts = calloc((size_t)nin, sizeof(char *));
    if (!parts)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM",
                         tfm_ops[op].name);
    tfm_code rc = TFM_OK;
    int64_t total = tn - count * pn;
    for (int k = 2; k < nin && !rc; k++) {
        if (!(parts[k] = tfm_format_tensor(in[k], (int)a->i[0])))
            rc = tfm_error_code();
        else
            total += (int64_t)strlen(parts[k]);
    }
    tfm_str *s = rc ? NULL : tfm_str_new(NULL, total);
    if (!rc && !s)
        rc = tfm_error_code();
    if (s) {
        char *o = s->data;
        int k = 2;
        for (int64_t i = 0; i < tn;) {
            if (i + pn <= tn &&
                memcmp(t + i, tfm_str_data(ph), (size_t)pn) == 0) {
                size_t l = strlen(parts[k]);
                memcpy(o, parts[k++], l);
                o += l;
                i += pn;
            } else {
                *o++ = t[i++];
            }
        }
        tfm_tensor_strs(out[0])[0] = s;
    }
    for (int k = 0; k < nin; k++)
        free(parts[k]);
    return rc;
}
