/* String <-> number kernels: StringToNumber, AsString, DecodeRaw. */
#include "string_kernels.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

tfm_code
tfm_k_string_to_number(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    void *o = tfm_tensor_data(out[0]);
    for (int64_t i = 0; i < n; i++) {
        const char *p = tfm_str_data(x[i]), *end = p + tfm_str_len(x[i]);
        /* As TF's SafeStringToNumeric: surrounding whitespace is fine,
         * anything else left over is not. */
        while (p < end && is_space((unsigned char)*p))
            p++;
        while (end > p && is_space((unsigned char)end[-1]))
            end--;
        char *stop = NULL;
        int ok = p < end;
        errno = 0;
        switch (a->dtype) {
        case TFM_FLOAT32: ((float *)o)[i] = strtof(p, &stop); break;
        case TFM_FLOAT64: ((double *)o)[i] = strtod(p, &stop); break;
        default: {
            long long v = strtoll(p, &stop, 10);
            ok &= errno != ERANGE;
            if (a->dtype == TFM_INT32) {
                ok &= v >= INT32_MIN && v <= INT32_MAX;
                ((int32_t *)o)[i] = (int32_t)v;
            } else {
                ((int64_t *)o)[i] = v;
            }
        }
        }
        if (!ok || stop != end)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "StringToNumberOp "
                             "could not correctly convert string: %.*s",
                             (int)(tfm_str_len(x[i]) < 200 ? tfm_str_len(x[i])
                                                           : 200),
                             tfm_str_data(x[i]));
    }
    return TFM_OK;
}

tfm_code
tfm_k_as_string(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout,
                const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    tfm_dtype d = in[0]->dtype;
    int64_t n = tfm_tensor_numel(in[0]);
    tfm_str **o = tfm_tensor_strs(out[0]);
    if (d == TFM_STRING) {
        /* TF's AsString passes strings through: borrowed elements. */
        memcpy(o, tfm_tensor_strs(in[0]), sizeof(tfm_str *) * (size_t)n);
        return TFM_OK;
    }
    char fmt[32], buf[1200];
    int k = 0;
    fmt[k++] = '%';
    if (a->i[4]) {
        char f = (char)a->i[4];
        if (f != ' ' && f != '+' && f != '-' && f != '0' && f != '#')
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: fill argument "
                             "'%c' not supported", tfm_ops[op].name, f);
        fmt[k++] = f;
    }
    if (a->i[3] >= 0)
        k += snprintf(fmt + k, sizeof fmt - (size_t)k, "%d", (int)a->i[3]);
    int is_float = tfm_dtype_is_float(d);
    if (is_float && a->i[0] >= 0)
        k += snprintf(fmt + k, sizeof fmt - (size_t)k, ".%d", (int)a->i[0]);
    if (is_float)
        fmt[k++] = a->i[2] ? 'g' : a->i[1] ? 'e' : 'f';
    else
        fmt[k++] = 'l', fmt[k++] = 'l', fmt[k++] = d == TFM_UINT64 ? 'u' : 'd';
    fmt[k] = 0;
    for (int64_t i = 0; i < n; i++) {
        int len;
        if (d == TFM_BOOL)
            len = snprintf(buf, sizeof buf, "%s",
                           ((const uint8_t *)tfm_tensor_data(in[0]))[i]
                               ? "true" : "false");
        else if (is_float)
            len = snprintf(buf, sizeof buf, fmt,
                           tfm_tensor_get_f64(in[0], i));
        else if (d == TFM_UINT64)   /* past 2**63: not through int64 */
            len = snprintf(buf, sizeof buf, fmt, (unsigned long long)
                           ((const uint64_t *)tfm_tensor_data(in[0]))[i]);
        else
            len = snprintf(buf, sizeof buf, fmt,
                           d == TFM_INT64
                               ? (long long)((const int64_t *)
                                             tfm_tensor_data(in[0]))[i]
                               : (long long)tfm_tensor_get_f64(in[0], i));
        if (len < 0 || (size_t)len >= sizeof buf)
            len = (int)strlen(buf);
        if (!(o[i] = tfm_str_new(buf, len)))
            return tfm_error_code();
    }
    return TFM_OK;
}

tfm_code
tfm_k_decode_raw(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    size_t esz = tfm_dtype_size(out[0]->dtype);
    int64_t per = out[0]->shape.dims[out[0]->shape.ndim - 1];
    char *o = tfm_tensor_data(out[0]);
    for (int64_t i = 0; i < n; i++) {
        if (tfm_str_len(x[i]) != per * (int64_t)esz)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "DecodeRaw requires "
                             "input strings to all be the same size, but "
                             "element %lld has size %lld != %lld",
                             (long long)i, (long long)tfm_str_len(x[i]),
                             (long long)(per * (int64_t)esz));
        char *dst = o + (size_t)i * (size_t)per * esz;
        memcpy(dst, tfm_str_data(x[i]), (size_t)per * esz);
        if (!a->i[0] && esz > 1)        /* big-endian bytes: swap */
            for (int64_t k = 0; k < per; k++)
                for (size_t b = 0; b < esz / 2; b++) {
                    char t = dst[k * (int64_t)esz + (int64_t)b];
                    dst[k * (int64_t)esz + (int64_t)b] =
                        dst[k * (int64_t)esz + (int64_t)(esz - 1 - b)];
                    dst[k * (int64_t)esz + (int64_t)(esz - 1 - b)] = t;
                }
    }
    return TFM_OK;
}
