/* String <-> number kernels: StringToNumber, AsString, DecodeRaw, and
 * the FarmHash fingerprint behind StringToHashBucketFast. */
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

/* FarmHash (farmhashna), reimplemented from its published algorithm. */
static const uint64_t k0 = 0xc3a5c85c97cb3127ULL;
static const uint64_t k1 = 0xb492b66fbe98f273ULL;
static const uint64_t k2 = 0x9ae16a3b2f90404fULL;

static uint64_t
fetch64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;       /* little-endian hosts only, as the build targets */
}

static uint32_t
fetch32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t
rot(uint64_t v, int s)
{
    return s == 0 ? v : (v >> s) | (v << (64 - s));
}

static uint64_t
shift_mix(uint64_t v)
{
    return v ^ (v >> 47);
}

static uint64_t
len16(uint64_t u, uint64_t v, uint64_t mul)
{
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t
len0to16(const char *s, size_t len)
{
    if (len >= 8) {
        uint64_t mul = k2 + len * 2;
        uint64_t a = fetch64(s) + k2;
        uint64_t b = fetch64(s + len - 8);
        uint64_t c = rot(b, 37) * mul + a;
        uint64_t d = (rot(a, 25) + b) * mul;
        return len16(c, d, mul);
    }
    if (len >= 4) {
        uint64_t mul = k2 + len * 2;
        uint64_t a = fetch32(s);
        return len16(len + (a << 3), fetch32(s + len - 4), mul);
    }
    if (len > 0) {
        uint8_t a = (uint8_t)s[0], b = (uint8_t)s[len >> 1],
                c = (uint8_t)s[len - 1];
        uint32_t y = (uint32_t)a + ((uint32_t)b << 8);
        uint32_t z = (uint32_t)len + ((uint32_t)c << 2);
        return shift_mix(y * k2 ^ z * k0) * k2;
    }
    return k2;
}

static uint64_t
len17to32(const char *s, size_t len)
{
    uint64_t mul = k2 + len * 2;
    uint64_t a = fetch64(s) * k1;
    uint64_t b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul;
    uint64_t d = fetch64(s + len - 16) * k2;
    return len16(rot(a + b, 43) + rot(c, 30) + d,
                 a + rot(b + k2, 18) + c, mul);
}

static uint64_t
len33to64(const char *s, size_t len)
{
    uint64_t mul = k2 + len * 2;
    uint64_t a = fetch64(s) * k2;
    uint64_t b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul;
    uint64_t d = fetch64(s + len - 16) * k2;
    uint64_t y = rot(a + b, 43) + rot(c, 30) + d;
    uint64_t z = len16(y, a + rot(b + k2, 18) + c, mul);
    uint64_t e = fetch64(s + 16) * mul;
    uint64_t f = fetch64(s + 24);
    uint64_t g = (y + fetch64(s + len - 32)) * mul;
    uint64_t h = (z + fetch64(s + len - 24)) * mul;
    return len16(rot(e + f, 43) + rot(g, 30) + h, e + rot(f + a, 18) + g,
                 mul);
}

typedef struct { uint64_t first, second; } pair64;

static pair64
weak32(const char *s, uint64_t a, uint64_t b)
{
    uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16),
             z = fetch64(s + 24);
    a += w;
    b = rot(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rot(a, 44);
    return (pair64){a + z, b + c};
}

uint64_t
tfm_fingerprint64(const char *s, size_t len)
{
    if (len <= 16)
        return len0to16(s, len);
    if (len <= 32)
        return len17to32(s, len);
    if (len <= 64)
        return len33to64(s, len);
    const uint64_t seed = 81;
    uint64_t x = seed, y = seed * k1 + 113, z = shift_mix(y * k2 + 113) * k2;
    pair64 v = {0, 0}, w = {0, 0};
    x = x * k2 + fetch64(s);
    const char *end = s + ((len - 1) / 64) * 64;
    const char *last64 = end + ((len - 1) & 63) - 63;
    do {
        x = rot(x + y + v.first + fetch64(s + 8), 37) * k1;
        y = rot(y + v.second + fetch64(s + 48), 42) * k1;
        x ^= w.second;
        y += v.first + fetch64(s + 40);
        z = rot(z + w.first, 33) * k1;
        v = weak32(s, v.second * k1, x + w.first);
        w = weak32(s + 32, z + w.second, y + fetch64(s + 16));
        uint64_t t = z;
        z = x;
        x = t;
        s += 64;
    } while (s != end);
    uint64_t mul = k1 + ((z & 0xff) << 1);
    s = last64;
    w.first += ((len - 1) & 63);
    v.first += w.first;
    w.first += v.first;
    x = rot(x + y + v.first + fetch64(s + 8), 37) * mul;
    y = rot(y + v.second + fetch64(s + 48), 42) * mul;
    x ^= w.second * 9;
    y += v.first * 9 + fetch64(s + 40);
    z = rot(z + w.first, 33) * mul;
    v = weak32(s, v.second * mul, x + w.first);
    w = weak32(s + 32, z + w.second, y + fetch64(s + 16));
    uint64_t t = z;
    z = x;
    x = t;
    return len16(len16(v.first, w.first, mul) + shift_mix(y) * k0 + z,
                 len16(v.second, w.second, mul) + x, mul);
}

tfm_code
tfm_k_string_hash(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,
                  const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    int64_t *o = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    for (int64_t i = 0; i < n; i++)
        o[i] = (int64_t)(tfm_fingerprint64(tfm_str_data(x[i]),
                                           (size_t)tfm_str_len(x[i])) %
                         (uint64_t)a->i[0]);
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
