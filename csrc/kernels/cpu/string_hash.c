/* The string hashes of tf.strings and the three StringToHashBucket ops
 * over them: Fast (FarmHash's Fingerprint64), Strong (SipHash-2-4 under
 * a 128-bit key, so that a caller who keeps the key secret gets buckets
 * an adversary cannot aim at) and the legacy StringToHashBucket (TF's
 * older 64-bit Murmur-style hash). All are reimplemented from the
 * published algorithms; the values equal TF's
 * (tests/test_keras_preprocessing_text.py). */
#include "string_kernels.h"

#include <string.h>

static uint64_t
load64_le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)        /* byte order fixed, host aside */
        v = (v << 8) | p[b];
    return v;
}

static uint64_t
rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIP_ROUND(v0, v1, v2, v3)                                           \
    do {                                                                    \
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);           \
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                              \
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                              \
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);           \
    } while (0)

/* SipHash-2-4 (Aumasson and Bernstein), key (key0, key1). */
static uint64_t
siphash24(uint64_t key0, uint64_t key1, const unsigned char *s, size_t len)
{
    uint64_t v0 = key0 ^ 0x736f6d6570736575ULL;
    uint64_t v1 = key1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = key0 ^ 0x6c7967656e657261ULL;
    uint64_t v3 = key1 ^ 0x7465646279746573ULL;
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = load64_le(s + i);
        v3 ^= m;
        SIP_ROUND(v0, v1, v2, v3);
        SIP_ROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    /* The last word: the tail bytes, and the length's low byte on top. */
    uint64_t m = (uint64_t)(len & 0xff) << 56;
    for (size_t i = full; i < len; i++)
        m |= (uint64_t)s[i] << (8 * (i - full));
    v3 ^= m;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= m;
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* MurmurHash64A (Appleby) with TF's fixed seed: what TF's Hash64, and
 * so StringToHashBucket, computes. */
static uint64_t
murmur64a(const unsigned char *s, size_t len)
{
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    uint64_t h = 0xDECAFCAFFEULL ^ ((uint64_t)len * m);
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t k = load64_le(s + i);
        k *= m;
        k ^= k >> 47;
        k *= m;
        h ^= k;
        h *= m;
    }
    if (len > full) {
        for (size_t i = full; i < len; i++)
            h ^= (uint64_t)s[i] << (8 * (i - full));
        h *= m;
    }
    h ^= h >> 47;
    h *= m;
    h ^= h >> 47;
    return h;
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

typedef struct { uint64_t x, y, z; pair64 v, w; } farm_state;

/* One 64-byte round of the long-string loop; the last round, over the
 * final 64 bytes, multiplies by `mul` instead of k1 and weighs w.second
 * and v.first by 9 (f = 1 in the loop). */
static inline void
round64(farm_state *st, const char *s, uint64_t mul, uint64_t f)
{
    uint64_t x = st->x, y = st->y, z = st->z;
    pair64 v = st->v, w = st->w;
    x = rot(x + y + v.first + fetch64(s + 8), 37) * mul;
    y = rot(y + v.second + fetch64(s + 48), 42) * mul;
    x ^= w.second * f;
    y += v.first * f + fetch64(s + 40);
    z = rot(z + w.first, 33) * mul;
    v = weak32(s, v.second * mul, x + w.first);
    w = weak32(s + 32, z + w.second, y + fetch64(s + 16));
    *st = (farm_state){z, y, x, v, w};   /* x and z trade places */
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
    const uint64_t y = seed * k1 + 113;
    farm_state st = {seed * k2 + fetch64(s), y,
                     shift_mix(y * k2 + 113) * k2, {0, 0}, {0, 0}};
    const char *end = s + ((len - 1) / 64) * 64;
    const char *last64 = end + ((len - 1) & 63) - 63;
    do {
        round64(&st, s, k1, 1);
        s += 64;
    } while (s != end);
    uint64_t mul = k1 + ((st.z & 0xff) << 1);
    st.w.first += ((len - 1) & 63);
    st.v.first += st.w.first;
    st.w.first += st.v.first;
    round64(&st, last64, mul, 9);
    return len16(len16(st.v.first, st.w.first, mul) + shift_mix(st.y) * k0 +
                     st.z,
                 len16(st.v.second, st.w.second, mul) + st.x, mul);
}

/* The three hashes under one signature: `key` is SipHash's pair, and
 * the unkeyed ones ignore it. */
typedef uint64_t (*hash_fn)(const uint64_t key[2], const unsigned char *s,
                            size_t len);

static uint64_t
sip_keyed(const uint64_t key[2], const unsigned char *s, size_t len)
{
    return siphash24(key[0], key[1], s, len);
}

static uint64_t
farm_unkeyed(const uint64_t key[2], const unsigned char *s, size_t len)
{
    (void)key;
    return tfm_fingerprint64((const char *)s, len);
}

static uint64_t
murmur_unkeyed(const uint64_t key[2], const unsigned char *s, size_t len)
{
    (void)key;
    return murmur64a(s, len);
}

/* out[i] = hash(x[i]) % buckets, as int64. */
static tfm_code
to_buckets(hash_fn hash, const uint64_t key[2], const tfm_tensor *x,
           uint64_t buckets, tfm_tensor *out)
{
    tfm_str *const *s = tfm_tensor_strs(x);
    int64_t *o = tfm_tensor_data(out);
    int64_t n = tfm_tensor_numel(x);
    for (int64_t i = 0; i < n; i++)
        o[i] = (int64_t)(hash(key, (const unsigned char *)tfm_str_data(s[i]),
                              (size_t)tfm_str_len(s[i])) %
                         buckets);
    return TFM_OK;
}

tfm_code
tfm_k_string_hash(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,
                  const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    return to_buckets(farm_unkeyed, NULL, in[0], (uint64_t)a->i[0], out[0]);
}

tfm_code
tfm_k_string_hash_strong(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    /* TF's key attribute is int64; the hash reads its bits unsigned. */
    const uint64_t key[2] = {(uint64_t)a->i[1], (uint64_t)a->i[2]};
    return to_buckets(sip_keyed, key, in[0], (uint64_t)a->i[0], out[0]);
}

tfm_code
tfm_k_string_hash_legacy(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    return to_buckets(murmur_unkeyed, NULL, in[0], (uint64_t)a->i[0],
                      out[0]);
}
