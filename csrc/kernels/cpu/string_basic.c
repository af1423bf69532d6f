/* String kernels that measure, join, cut and compare. */
#include "string_kernels.h"

#include <stdlib.h>
#include <string.h>

/* The flat index into an input (strides from tfm_shape_broadcast_strides)
 * of output element i. */
static int64_t
bidx(int64_t i, const tfm_shape *o, const int64_t *st)
{
    int64_t off = 0;
    for (int d = o->ndim - 1; d >= 0; d--) {
        int64_t n = o->dims[d];
        off += (i % n) * st[d];
        i /= n;
    }
    return off;
}

/* Characters of UTF-8 s (each invalid byte counts as one, as TF's
 * UTF8_CHAR unit counts every byte that is not a continuation byte). */
static int64_t
utf8_chars(const char *s, int64_t n)
{
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* Byte offset of character k of s (n bytes), or n past the end. */
static int64_t
utf8_offset(const char *s, int64_t n, int64_t k)
{
    int64_t i = 0;
    while (i < n && k > 0) {
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
        k--;
    }
    return i;
}

tfm_code
tfm_k_string_length(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    int32_t *o = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    for (int64_t i = 0; i < n; i++) {
        int64_t len = tfm_str_len(x[i]);
        o[i] = (int32_t)(a->i[0] ? utf8_chars(tfm_str_data(x[i]), len)
                                 : len);
    }
    return TFM_OK;
}

tfm_code
tfm_k_string_join(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,
                  const tfm_kctx *ctx)
{
    (void)op; (void)a; (void)nout; (void)ctx;
    const tfm_str *sep = tfm_tensor_strs(in[0])[0];
    int64_t n = tfm_tensor_numel(out[0]), seplen = tfm_str_len(sep);
    tfm_str **o = tfm_tensor_strs(out[0]);
    for (int64_t i = 0; i < n; i++) {
        int64_t len = 0;
        for (int k = 1; k < nin; k++) {
            int64_t j = in[k]->shape.ndim ? i : 0;
            len += tfm_str_len(tfm_tensor_strs(in[k])[j]) + (k > 1) * seplen;
        }
        if (!(o[i] = tfm_str_new(NULL, len)))
            return tfm_error_code();
        char *p = o[i]->data;
        for (int k = 1; k < nin; k++) {
            const tfm_str *s = tfm_tensor_strs(in[k])[in[k]->shape.ndim ? i
                                                                          : 0];
            if (k > 1 && seplen) {
                memcpy(p, tfm_str_data(sep), (size_t)seplen);
                p += seplen;
            }
            memcpy(p, tfm_str_data(s), (size_t)tfm_str_len(s));
            p += tfm_str_len(s);
        }
    }
    return TFM_OK;
}

static int64_t
int_at(const tfm_tensor *t, int64_t i)
{
    return t->dtype == TFM_INT32 ? ((const int32_t *)tfm_tensor_data(t))[i]
                                 : ((const int64_t *)tfm_tensor_data(t))[i];
}

tfm_code
tfm_k_substr(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    const tfm_shape *os = &out[0]->shape;
    int64_t st[3][TFM_MAX_DIMS];
    for (int k = 0; k < 3; k++)
        tfm_shape_broadcast_strides(&in[k]->shape, os, st[k]);
    int64_t n = tfm_tensor_numel(out[0]);
    tfm_str **o = tfm_tensor_strs(out[0]);
    for (int64_t i = 0; i < n; i++) {
        const tfm_str *s = tfm_tensor_strs(in[0])[bidx(i, os, st[0])];
        int64_t pos = int_at(in[1], bidx(i, os, st[1]));
        int64_t len = int_at(in[2], bidx(i, os, st[2]));
        const char *p = tfm_str_data(s);
        int64_t bytes = tfm_str_len(s);
        int64_t size = a->i[0] ? utf8_chars(p, bytes) : bytes;
        /* TF: pos in [-size, size]; negative counts from the end. */
        if (pos > size || pos < -size)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: pos %lld out of "
                             "range for string b'%.*s' at index %lld",
                             tfm_ops[op].name, (long long)pos,
                             (int)(bytes < 64 ? bytes : 64), p,
                             (long long)i);
        if (pos < 0)
            pos += size;
        /* A negative or too long len takes the rest, as TF. */
        if (len < 0 || len > size - pos)
            len = size - pos;
        int64_t b0 = pos, b1 = pos + len;
        if (a->i[0]) {
            b0 = utf8_offset(p, bytes, pos);
            b1 = b0 + utf8_offset(p + b0, bytes - b0, len);
        }
        if (!(o[i] = tfm_str_new(p + b0, b1 - b0)))
            return tfm_error_code();
    }
    return TFM_OK;
}

static int
is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

tfm_code
tfm_k_string_map(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)nin; (void)a; (void)nout; (void)ctx;
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    tfm_str **o = tfm_tensor_strs(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    for (int64_t i = 0; i < n; i++) {
        const char *p = tfm_str_data(x[i]);
        int64_t len = tfm_str_len(x[i]);
        if (op == TFM_OP_STRING_STRIP) {
            while (len && is_space((unsigned char)p[0]))
                p++, len--;
            while (len && is_space((unsigned char)p[len - 1]))
                len--;
        }
        if (!(o[i] = tfm_str_new(p, len)))
            return tfm_error_code();
        char *q = o[i]->data;
        if (op == TFM_OP_STRING_UPPER)
            for (int64_t k = 0; k < len; k++)
                q[k] = q[k] >= 'a' && q[k] <= 'z' ? (char)(q[k] - 32) : q[k];
        else if (op == TFM_OP_STRING_LOWER)
            for (int64_t k = 0; k < len; k++)
                q[k] = q[k] >= 'A' && q[k] <= 'Z' ? (char)(q[k] + 32) : q[k];
    }
    return TFM_OK;
}

tfm_code
tfm_k_reduce_join(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,
                  const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    const tfm_shape *xs = &in[0]->shape;
    int r = xs->ndim, keep[TFM_MAX_DIMS];
    for (int d = 0; d < r; d++)
        keep[d] = !a->i[1];
    for (int k = 0; k < a->n_ints; k++)
        keep[a->ints[k]] = 0;
    /* Output stride of each input dim (0 for reduced dims). */
    int64_t ost[TFM_MAX_DIMS], acc = 1;
    for (int d = r - 1; d >= 0; d--) {
        ost[d] = keep[d] ? acc : 0;
        if (keep[d])
            acc *= xs->dims[d];
    }
    int64_t n = tfm_tensor_numel(in[0]), m = tfm_tensor_numel(out[0]);
    const tfm_str *sep = tfm_tensor_strs(in[1])[0];
    int64_t seplen = tfm_str_len(sep);
    int64_t *len = calloc((size_t)m + 1, sizeof(int64_t));
    int64_t *cnt = calloc((size_t)m + 1, sizeof(int64_t));
    int64_t *oi = malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!len || !cnt || !oi) {
        free(len), free(cnt), free(oi);
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "ReduceJoin: OOM");
    }
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, off = 0;
        for (int d = r - 1; d >= 0; d--) {
            off += (rem % xs->dims[d]) * ost[d];
            rem /= xs->dims[d];
        }
        oi[i] = off;
        len[off] += tfm_str_len(x[i]) + (cnt[off]++ ? seplen : 0);
    }
    tfm_str **o = tfm_tensor_strs(out[0]);
    tfm_code rc = TFM_OK;
    for (int64_t j = 0; j < m && !rc; j++) {
        if (!(o[j] = tfm_str_new(NULL, len[j])))
            rc = tfm_error_code();
        len[j] = cnt[j] = 0;    /* now: bytes and pieces written */
    }
    for (int64_t i = 0; i < n && !rc; i++) {
        int64_t j = oi[i];
        if (cnt[j]++ && seplen) {
            memcpy(o[j]->data + len[j], tfm_str_data(sep), (size_t)seplen);
            len[j] += seplen;
        }
        memcpy(o[j]->data + len[j], tfm_str_data(x[i]),
               (size_t)tfm_str_len(x[i]));
        len[j] += tfm_str_len(x[i]);
    }
    free(len), free(cnt), free(oi);
    return rc;
}

tfm_code
tfm_k_string_compare(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
{
    (void)nin; (void)a; (void)nout; (void)ctx;
    const tfm_shape *os = &out[0]->shape;
    int64_t sa[TFM_MAX_DIMS], sb[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&in[0]->shape, os, sa);
    tfm_shape_broadcast_strides(&in[1]->shape, os, sb);
    int64_t n = tfm_tensor_numel(out[0]);
    uint8_t *o = tfm_tensor_data(out[0]);
    uint8_t want = op == TFM_OP_EQUAL;
    for (int64_t i = 0; i < n; i++) {
        const tfm_str *x = tfm_tensor_strs(in[0])[bidx(i, os, sa)];
        const tfm_str *y = tfm_tensor_strs(in[1])[bidx(i, os, sb)];
        int64_t lx = tfm_str_len(x);
        int eq = lx == tfm_str_len(y) &&
                 memcmp(tfm_str_data(x), tfm_str_data(y), (size_t)lx) == 0;
        o[i] = (uint8_t)(eq == want);
    }
    return TFM_OK;
}

/* AddV2 on strings: TF's Add has a string kernel that concatenates
 * elementwise with broadcasting (tf.constant("a") + "b"). */
tfm_code
tfm_k_string_add(tfm_op op, tfm_tensor *const *in, int nin,
                 const tfm_attrs *a, tfm_tensor *const *out, int nout,
                 const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)a; (void)nout; (void)ctx;
    const tfm_shape *os = &out[0]->shape;
    int64_t sa[TFM_MAX_DIMS], sb[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&in[0]->shape, os, sa);
    tfm_shape_broadcast_strides(&in[1]->shape, os, sb);
    int64_t n = tfm_tensor_numel(out[0]);
    tfm_str **o = tfm_tensor_strs(out[0]);
    for (int64_t i = 0; i < n; i++) {
        tfm_str *x = tfm_tensor_strs(in[0])[bidx(i, os, sa)];
        tfm_str *y = tfm_tensor_strs(in[1])[bidx(i, os, sb)];
        int64_t lx = tfm_str_len(x), ly = tfm_str_len(y);
        /* An empty side: borrow the other (Note [String elements]). */
        if (!ly || !lx) {
            o[i] = ly ? y : x;
            continue;
        }
        tfm_str *s = tfm_str_new(NULL, lx + ly);
        if (!s)
            return tfm_error_code();
        memcpy(s->data, x->data, (size_t)lx);
        memcpy(s->data + lx, y->data, (size_t)ly);
        o[i] = s;
    }
    return TFM_OK;
}
