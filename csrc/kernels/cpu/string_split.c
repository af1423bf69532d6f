/* Kernels with ragged results (values, row_splits): split, char split,
 * Unicode decode, and Unicode encode back; the UTF-8 codec; and the
 * presize step that counts their outputs before the shape rule runs. */
#include "string_kernels.h"

#include <stdlib.h>
#include <string.h>

int32_t
tfm_utf8_decode(const unsigned char *s, int64_t n, int *len)
{
    unsigned c = s[0];
    int need;
    int32_t cp, min;
    *len = 1;
    if (c < 0x80)
        return (int32_t)c;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 2, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 3, cp = c & 0x07, min = 0x10000;
    else
        return -1;
    for (int k = 1; k <= need; k++) {
        if (k >= n || (s[k] & 0xC0) != 0x80)
            return -1;      /* the valid prefix is one bad piece */
        cp = (cp << 6) | (s[k] & 0x3F);
        *len = k + 1;
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *len = 1;
        return -1;
    }
    return cp;
}

int
tfm_utf8_encode(int32_t c, char *b)
{
    if (c < 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    if (c < 0x80) {
        b[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        b[0] = (char)(0xC0 | (c >> 6));
        b[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        b[0] = (char)(0xE0 | (c >> 12));
        b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    b[0] = (char)(0xF0 | (c >> 18));
    b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    b[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    b[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* One character in encoding enc (0 UTF-8, 1 UTF-16-BE, 2 UTF-32-BE):
 * its code point, or -1 for a bad or truncated one; *len its bytes. */
static int32_t
decode_char(const unsigned char *s, int64_t n, int enc, int *len)
{
    if (enc == 0)
        return tfm_utf8_decode(s, n, len);
    int unit = enc == 1 ? 2 : 4;
    if (n < unit) {
        *len = (int)n;
        return -1;
    }
    *len = unit;
    if (enc == 2) {
        uint32_t c = (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 |
                     (uint32_t)s[2] << 8 | s[3];
        return c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) ? -1
                                                            : (int32_t)c;
    }
    int32_t u = s[0] << 8 | s[1];
    if (u >= 0xDC00 && u <= 0xDFFF)
        return -1;                      /* a lone low surrogate */
    if (u < 0xD800 || u > 0xDBFF)
        return u;
    if (n < 4)
        return -1;
    int32_t lo = s[2] << 8 | s[3];
    if (lo < 0xDC00 || lo > 0xDFFF)
        return -1;
    *len = 4;
    return 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
}

/* c in encoding enc into b (at most 4 bytes): the byte count, 0 when c
 * is no code point. */
static int
encode_char(int32_t c, int enc, char *b)
{
    if (enc == 0)
        return tfm_utf8_encode(c, b);
    if (c < 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    if (enc == 2) {
        for (int k = 0; k < 4; k++)
            b[k] = (char)((uint32_t)c >> (24 - 8 * k));
        return 4;
    }
    if (c < 0x10000) {
        b[0] = (char)(c >> 8), b[1] = (char)c;
        return 2;
    }
    int32_t v = c - 0x10000;
    int32_t hi = 0xD800 + (v >> 10), lo = 0xDC00 + (v & 0x3FF);
    b[0] = (char)(hi >> 8), b[1] = (char)hi, b[2] = (char)(lo >> 8),
    b[3] = (char)lo;
    return 4;
}

static int
is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Python's str.split (TF's SplitV2 follows it): pieces of s as (offset,
 * length) into off/len when given; returns their count. */
static int64_t
split_one(const char *s, int64_t n, const char *sep, int64_t seplen,
          int64_t maxsplit, int64_t *off, int64_t *len)
{
    int64_t k = 0, i = 0;
    if (!seplen) {
        while (1) {
            while (i < n && is_space((unsigned char)s[i]))
                i++;
            if (i == n)
                return k;
            int64_t j = i;
            if (maxsplit >= 0 && k == maxsplit) {
                j = n;      /* the rest, trailing blanks kept */
            } else {
                while (j < n && !is_space((unsigned char)s[j]))
                    j++;
            }
            if (off)
                off[k] = i, len[k] = j - i;
            k++;
            i = j;
        }
    }
    while (1) {
        int64_t j = i;
        int found = 0;
        if (maxsplit < 0 || k < maxsplit)
            for (; j + seplen <= n; j++)
                if (memcmp(s + j, sep, (size_t)seplen) == 0) {
                    found = 1;
                    break;
                }
        if (!found)
            j = n;
        if (off)
            off[k] = i, len[k] = j - i;
        k++;
        if (!found)
            return k;
        i = j + seplen;
    }
}

/* The number of pieces of s: bytes or UTF-8 characters (a bad
 * sequence counts as one). */
static int64_t
char_count(const char *s, int64_t n, int utf8)
{
    if (!utf8)
        return n;
    int64_t k = 0;
    for (int64_t i = 0; i < n; k++) {
        int l;
        tfm_utf8_decode((const unsigned char *)s + i, n - i, &l);
        i += l;
    }
    return k;
}

/* Code points of s under errors mode e (0 replace, 1 ignore, 2 strict);
 * into out when given; -1 for a bad sequence under strict. */
static int64_t
decode_one(const char *s, int64_t n, const tfm_attrs *a, int32_t *out,
           int64_t *starts)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n;) {
        int l;
        int32_t c = decode_char((const unsigned char *)s + i, n - i,
                                (int)a->i[3], &l);
        int64_t at = i;
        i += l;
        if (c < 0) {
            if (a->i[0] == 2)
                return -1;
            if (a->i[0] == 1)
                continue;
            c = (int32_t)a->i[1];
        } else if (a->i[2] && c < 0x20) {
            c = (int32_t)a->i[1];
        }
        if (out)
            out[k] = c;
        if (starts)
            starts[k] = at;
        k++;
    }
    return k;
}

static tfm_code
strict_error(tfm_op op, int64_t i)
{
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: invalid formatting on "
                     "input string %lld (not UTF-8; errors='strict')",
                     tfm_ops[op].name, (long long)i);
}

int
tfm_string_presize(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_attrs *sized)
{
    if (op != TFM_OP_STRING_SPLIT && op != TFM_OP_STRING_CHAR_SPLIT &&
        op != TFM_OP_UNICODE_DECODE && op != TFM_OP_DECODE_RAW &&
        op != TFM_OP_UNICODE_DECODE_WITH_OFFSETS)
        return 0;
    if (a->i[5] >= 0 || nin < 1 || tfm_tensor_is_symbolic(in[0]) ||
        in[0]->dtype != TFM_STRING || in[0]->device != TFM_CPU)
        return 0;   /* the shape rule names any wrong input */
    for (int i = 1; i < nin; i++)
        if (tfm_tensor_is_symbolic(in[i]) || in[i]->dtype != TFM_STRING ||
            in[i]->shape.ndim != 0)
            return 0;
    *sized = *a;
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    int64_t n = tfm_tensor_numel(in[0]), total = 0;
    if (op == TFM_OP_DECODE_RAW) {
        size_t esz = tfm_dtype_size(a->dtype);
        int64_t first = n ? tfm_str_len(x[0]) : 0;
        if (a->dtype == TFM_STRING || (unsigned)a->dtype >= TFM_DTYPE_COUNT)
            return 0;
        if (first % (int64_t)esz) {
            tfm_error(TFM_ERR_INVALID_ARGUMENT, "DecodeRaw: input to "
                      "DecodeRaw has length %lld that is not a multiple "
                      "of %zu, the size of %s", (long long)first, esz,
                      tfm_dtype_name(a->dtype));
            return -1;
        }
        sized->i[5] = first / (int64_t)esz;
        return 1;
    }
    for (int64_t i = 0; i < n; i++) {
        const char *s = tfm_str_data(x[i]);
        int64_t len = tfm_str_len(x[i]), k;
        if (op == TFM_OP_STRING_SPLIT) {
            const tfm_str *sep = tfm_tensor_strs(in[1])[0];
            k = split_one(s, len, tfm_str_data(sep), tfm_str_len(sep),
                          a->i[0], NULL, NULL);
        } else if (op == TFM_OP_STRING_CHAR_SPLIT) {
            k = char_count(s, len, a->i[0] != 0);
        } else {
            k = decode_one(s, len, a, NULL, NULL);
            if (k < 0) {
                strict_error(op, i);
                return -1;
            }
        }
        total += k;
    }
    sized->i[5] = total;
    return 1;
}

/* The splits output; checks that values has room for total pieces. */
static tfm_code
check_total(tfm_op op, const tfm_tensor *values, int64_t total)
{
    if (values->shape.dims[0] != total)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the inputs hold "
                         "%lld pieces, not the %lld the call was sized for",
                         tfm_ops[op].name, (long long)total,
                         (long long)values->shape.dims[0]);
    return TFM_OK;
}

/* One input row's pieces, written from index `at` of the values; when
 * more than `room` would not fit, nothing is written and *k says how
 * many the row needs. */
typedef tfm_code (*row_fn)(tfm_op op, const char *s, int64_t len,
                           int64_t i, int64_t at, int64_t room,
                           const tfm_attrs *a, tfm_tensor *const *in,
                           tfm_tensor *const *out, int64_t *k);

/* The frame of the three splitting kernels: each row's pieces appended
 * to out[vi], row i's end in splits (out[1 - vi]) [i + 1]. */
static tfm_code
split_rows(tfm_op op, row_fn fn, int vi, const tfm_attrs *a,
           tfm_tensor *const *in, tfm_tensor *const *out)
{
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    int64_t n = tfm_tensor_numel(in[0]), cap = out[vi]->shape.dims[0];
    int64_t *splits = tfm_tensor_data(out[1 - vi]);
    int64_t total = 0;
    splits[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = 0;
        tfm_code rc = fn(op, tfm_str_data(x[i]), tfm_str_len(x[i]), i, total,
                         cap - total, a, in, out, &k);
        if (rc)
            return rc;
        if (total + k > cap)
            return check_total(op, out[vi], total + k);
        total += k;
        splits[i + 1] = total;
    }
    return check_total(op, out[vi], total);
}

static tfm_code
split_row(tfm_op op, const char *s, int64_t len, int64_t i, int64_t at,
          int64_t room, const tfm_attrs *a, tfm_tensor *const *in,
          tfm_tensor *const *out, int64_t *k)
{
    (void)i;
    const tfm_str *sep = tfm_tensor_strs(in[1])[0];
    tfm_str **v = tfm_tensor_strs(out[0]) + at;
    *k = split_one(s, len, tfm_str_data(sep), tfm_str_len(sep), a->i[0],
                   NULL, NULL);
    if (*k > room)
        return TFM_OK;
    int64_t *off = malloc(sizeof(int64_t) * 2 * ((size_t)*k + 1));
    if (!off)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM",
                         tfm_ops[op].name);
    split_one(s, len, tfm_str_data(sep), tfm_str_len(sep), a->i[0], off,
              off + *k + 1);
    for (int64_t j = 0; j < *k; j++)
        if (!(v[j] = tfm_str_new(s + off[j], off[*k + 1 + j]))) {
            free(off);
            return tfm_error_code();
        }
    free(off);
    return TFM_OK;
}

tfm_code
tfm_k_string_split(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_tensor *const *out, int nout,
                   const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    return split_rows(op, split_row, 0, a, in, out);
}

static tfm_code
char_split_row(tfm_op op, const char *s, int64_t len, int64_t i,
               int64_t at, int64_t room, const tfm_attrs *a,
               tfm_tensor *const *in, tfm_tensor *const *out, int64_t *k)
{
    (void)op; (void)i; (void)in;
    static const char fffd[] = "\xEF\xBF\xBD";
    tfm_str **v = tfm_tensor_strs(out[0]) + at;
    for (int64_t p = 0; p < len; (*k)++) {
        int l = 1;
        int32_t c = a->i[0] ? tfm_utf8_decode((const unsigned char *)s + p,
                                              len - p, &l)
                            : 0;
        if (*k >= room) {
            (*k)++;             /* over: the frame reports it */
            return TFM_OK;
        }
        v[*k] = c < 0 ? tfm_str_new(fffd, 3) : tfm_str_new(s + p, l);
        if (!v[*k])
            return tfm_error_code();
        p += l;
    }
    return TFM_OK;
}

tfm_code
tfm_k_string_char_split(tfm_op op, tfm_tensor *const *in, int nin,
                        const tfm_attrs *a, tfm_tensor *const *out, int nout,
                        const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    return split_rows(op, char_split_row, 0, a, in, out);
}

static tfm_code
decode_row(tfm_op op, const char *s, int64_t len, int64_t i, int64_t at,
           int64_t room, const tfm_attrs *a, tfm_tensor *const *in,
           tfm_tensor *const *out, int64_t *k)
{
    (void)in;
    int32_t *v = tfm_tensor_data(out[1]);
    int64_t *starts = out[2] ? tfm_tensor_data(out[2]) : NULL;
    *k = decode_one(s, len, a, NULL, NULL);
    if (*k < 0)
        return strict_error(op, i);
    if (*k <= room)
        decode_one(s, len, a, v + at, starts ? starts + at : NULL);
    return TFM_OK;
}

tfm_code
tfm_k_unicode_decode(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
{
    (void)nin; (void)ctx;
    /* decode_row sees out[2] only when the op has it. */
    tfm_tensor *outs[3] = {out[0], out[1], nout > 2 ? out[2] : NULL};
    return split_rows(op, decode_row, 1, a, in, outs);
}

tfm_code
tfm_k_unicode_encode(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    const int32_t *v = tfm_tensor_data(in[0]);
    const int64_t *sp = tfm_tensor_data(in[1]);
    int64_t nv = tfm_tensor_numel(in[0]), n = tfm_tensor_numel(out[0]);
    tfm_str **o = tfm_tensor_strs(out[0]);
    for (int64_t i = 0; i <= n; i++)
        if (sp[i] < (i ? sp[i - 1] : 0) || sp[i] > nv || (i == n &&
                                                          sp[i] != nv))
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input_splits "
                             "must start at 0, never decrease and end at "
                             "%lld, the number of values", tfm_ops[op].name,
                             (long long)nv);
    if (n >= 0 && sp[0] != 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: input_splits must "
                         "start at 0", tfm_ops[op].name);
    char rep[4];
    int enc = (int)a->i[3];
    int replen = encode_char((int32_t)a->i[1], enc, rep);
    for (int64_t i = 0; i < n; i++) {
        int64_t bytes = 0;
        char b[4];
        for (int64_t k = sp[i]; k < sp[i + 1]; k++) {
            int l = encode_char(v[k], enc, b);
            if (!l && a->i[0] == 2)
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: code point "
                                 "%d is not valid Unicode "
                                 "(errors='strict')", tfm_ops[op].name,
                                 (int)v[k]);
            bytes += l ? l : a->i[0] == 0 ? replen : 0;
        }
        if (!(o[i] = tfm_str_new(NULL, bytes)))
            return tfm_error_code();
        char *p = o[i]->data;
        for (int64_t k = sp[i]; k < sp[i + 1]; k++) {
            int l = encode_char(v[k], enc, p);
            if (!l && a->i[0] == 0) {
                memcpy(p, rep, (size_t)replen);
                l = replen;
            }
            p += l;
        }
    }
    return TFM_OK;
}
