/* RegexReplace and RegexFullMatch over PCRE2 (built in when setup.py
 * finds libpcre2-8; TF uses RE2, whose syntax PCRE2 accepts for the
 * patterns TF's guides use). Without PCRE2 both ops raise an error
 * naming the package. */
#include "string_kernels.h"

#include <stdlib.h>
#include <string.h>

#ifndef TFM_HAVE_PCRE2

tfm_code
tfm_k_regex(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)in; (void)nin; (void)a; (void)out; (void)nout; (void)ctx;
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: tfmini was built without "
                     "a regex library; install PCRE2 (Debian: apt-get "
                     "install libpcre2-dev) and rebuild",
                     tfm_ops[op].name);
}

#else

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

static pcre2_code *
compile(tfm_op op, const tfm_str *pat)
{
    int err;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)tfm_str_data(pat),
                                   (PCRE2_SIZE)tfm_str_len(pat),
                                   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                                   &err, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Invalid pattern: %.*s, "
                  "error: %s (at offset %zu)", tfm_ops[op].name,
                  (int)(tfm_str_len(pat) < 200 ? tfm_str_len(pat) : 200),
                  tfm_str_data(pat), (const char *)msg, (size_t)at);
    }
    return re;
}

/* TF's rewrite (RE2: \0..\9 for groups, \\ for a backslash) as PCRE2's
 * replacement ($n, $$ for a dollar). NULL on a bad escape (error set). */
static char *
rewrite_to_pcre2(tfm_op op, const tfm_str *rw, size_t *outlen)
{
    const char *s = tfm_str_data(rw);
    int64_t n = tfm_str_len(rw);
    char *o = malloc((size_t)n * 4 + 1);
    size_t k = 0;
    if (!o) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM", tfm_ops[op].name);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        if (s[i] == '$') {
            o[k++] = '$', o[k++] = '$';
        } else if (s[i] != '\\') {
            o[k++] = s[i];
        } else if (i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9') {
            o[k++] = '$', o[k++] = '{', o[k++] = s[++i], o[k++] = '}';
        } else if (i + 1 < n && s[i + 1] == '\\') {
            o[k++] = '\\';
            i++;
        } else {
            free(o);
            tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: invalid rewrite "
                      "pattern: %.*s (use \\0..\\9 for groups and \\\\ for "
                      "a backslash)", tfm_ops[op].name, (int)(n < 200 ? n
                                                                    : 200),
                      s);
            return NULL;
        }
    }
    *outlen = k;
    return o;
}

static tfm_code
full_match(tfm_op op, pcre2_code *re, tfm_tensor *const *in,
           tfm_tensor *const *out)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM",
                         tfm_ops[op].name);
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    uint8_t *o = tfm_tensor_data(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    tfm_code rc = TFM_OK;
    for (int64_t i = 0; i < n && !rc; i++) {
        int r = pcre2_match(re, (PCRE2_SPTR)tfm_str_data(x[i]),
                            (PCRE2_SIZE)tfm_str_len(x[i]), 0,
                            PCRE2_ANCHORED | PCRE2_ENDANCHORED, md, NULL);
        if (r < 0 && r != PCRE2_ERROR_NOMATCH) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(r, msg, sizeof msg);
            rc = tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: matching element "
                           "%lld failed: %s", tfm_ops[op].name,
                           (long long)i, (const char *)msg);
        }
        o[i] = r >= 0;
    }
    pcre2_match_data_free(md);
    return rc;
}

static tfm_code
replace(tfm_op op, pcre2_code *re, tfm_tensor *const *in, const tfm_attrs *a,
        tfm_tensor *const *out)
{
    size_t rlen;
    char *rw = rewrite_to_pcre2(op, tfm_tensor_strs(in[2])[0], &rlen);
    if (!rw)
        return tfm_error_code();
    uint32_t opts = PCRE2_SUBSTITUTE_OVERFLOW_LENGTH |
                    (a->i[0] ? PCRE2_SUBSTITUTE_GLOBAL : 0);
    tfm_str *const *x = tfm_tensor_strs(in[0]);
    tfm_str **o = tfm_tensor_strs(out[0]);
    int64_t n = tfm_tensor_numel(in[0]);
    size_t cap = 256;
    char *buf = malloc(cap);
    tfm_code rc = buf ? TFM_OK
                      : tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM",
                                  tfm_ops[op].name);
    for (int64_t i = 0; i < n && !rc; i++) {
        PCRE2_SIZE len = cap;
        int r = pcre2_substitute(re, (PCRE2_SPTR)tfm_str_data(x[i]),
                                 (PCRE2_SIZE)tfm_str_len(x[i]), 0, opts,
                                 NULL, NULL, (PCRE2_SPTR)rw, rlen,
                                 (PCRE2_UCHAR *)buf, &len);
        if (r == PCRE2_ERROR_NOMEMORY) {
            free(buf);
            cap = len + 1;
            if (!(buf = malloc(cap))) {
                rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: OOM",
                               tfm_ops[op].name);
                break;
            }
            len = cap;
            r = pcre2_substitute(re, (PCRE2_SPTR)tfm_str_data(x[i]),
                                 (PCRE2_SIZE)tfm_str_len(x[i]), 0, opts,
                                 NULL, NULL, (PCRE2_SPTR)rw, rlen,
                                 (PCRE2_UCHAR *)buf, &len);
        }
        if (r < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(r, msg, sizeof msg);
            rc = tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: replacing in "
                           "element %lld failed: %s", tfm_ops[op].name,
                           (long long)i, (const char *)msg);
        } else if (!(o[i] = tfm_str_new(buf, (int64_t)len))) {
            rc = tfm_error_code();
        }
    }
    free(buf);
    free(rw);
    return rc;
}

tfm_code
tfm_k_regex(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout; (void)ctx;
    pcre2_code *re = compile(op, tfm_tensor_strs(in[1])[0]);
    if (!re)
        return tfm_error_code();
    tfm_code rc = op == TFM_OP_REGEX_FULL_MATCH ? full_match(op, re, in, out)
                                                : replace(op, re, in, a, out);
    pcre2_code_free(re);
    return rc;
}

#endif
