/* The keyed and the legacy string hashes of tf.strings:
 * StringToHashBucketStrong (SipHash-2-4 under a 128-bit key, so that a
 * caller who keeps the key secret gets buckets an adversary cannot
 * aim at) and StringToHashBucket (TF's older 64-bit Murmur-style
 * hash). Both are reimplemented from the published algorithms; the
 * values equal TF's (tests/test_keras_preprocessing_text.py). */
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

/* SipHash-2-4 (Aumasson and Bernstein), key (k0, k1). */
static uint64_t
siphash24(uint64_t k0, uint64_t k1, const unsigned char *s, size_t len)
{
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;
    uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;
    uint64_t v3 = k1 ^ 0x7465646279746573ULL;
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

tfm_code
tfm_k_string_hash_strong(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    int64_t *o = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    /* TF's key attribute is int64; the hash reads its bits unsigned. */
    uint64_t k0 = (uint64_t)a->i[1], k1 = (uint64_t)a->i[2];
    for (int64_t i = 0; i < n; i++)
        o[i] = (int64_t)(siphash24(k0, k1,
                                   (const unsigned char *)tfm_str_data(x[i]),
                                   (size_t)tfm_str_len(x[i])) %
                         (uint64_t)a->i[0]);
    return TFM_OK;
}

tfm_code
tfm_k_string_hash_legacy(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    int64_t *o = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    for (int64_t i = 0; i < n; i++)
        o[i] = (int64_t)(murmur64a((const unsigned char *)tfm_str_data(x[i]),
                                   (size_t)tfm_str_len(x[i])) %
                         (uint64_t)a->i[0]);
    return TFM_OK;
}
