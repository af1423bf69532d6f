/* CPU kernels of the string family (ops/ops_string.def). Elements are
 * tfm_str pointers; a kernel writes new strings (refcount 0) or borrowed
 * ones into its outputs and the dispatcher settles the references
 * (Note [String elements] in core/tstring.h). */
#ifndef TFM_KERNELS_CPU_STRING_KERNELS_H
#define TFM_KERNELS_CPU_STRING_KERNELS_H

#include "../../core/tstring.h"
#include "../../ops/op.h"

#define TFM_STRING_KERNEL(NAME)                                             \
    tfm_code NAME(tfm_op op, tfm_tensor *const *in, int nin,                \
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,     \
                  const tfm_kctx *ctx)

/* string_basic.c */
TFM_STRING_KERNEL(tfm_k_string_length);
TFM_STRING_KERNEL(tfm_k_string_join);
TFM_STRING_KERNEL(tfm_k_substr);
TFM_STRING_KERNEL(tfm_k_string_map);       /* upper, lower, strip */
TFM_STRING_KERNEL(tfm_k_reduce_join);
TFM_STRING_KERNEL(tfm_k_string_compare);   /* Equal, NotEqual */
TFM_STRING_KERNEL(tfm_k_string_add);       /* AddV2: concatenation */
/* string_convert.c */
TFM_STRING_KERNEL(tfm_k_string_to_number);
TFM_STRING_KERNEL(tfm_k_as_string);
TFM_STRING_KERNEL(tfm_k_decode_raw);
/* string_hash.c */
TFM_STRING_KERNEL(tfm_k_string_hash);
TFM_STRING_KERNEL(tfm_k_string_hash_strong);
TFM_STRING_KERNEL(tfm_k_string_hash_legacy);
/* string_regex.c */
TFM_STRING_KERNEL(tfm_k_regex);
/* string_split.c */
TFM_STRING_KERNEL(tfm_k_string_split);
TFM_STRING_KERNEL(tfm_k_string_char_split);
TFM_STRING_KERNEL(tfm_k_unicode_decode);
TFM_STRING_KERNEL(tfm_k_unicode_encode);
/* string_script.c (ICU) */
TFM_STRING_KERNEL(tfm_k_unicode_script);

/* FarmHash's Fingerprint64 (farmhashna::Hash64), TF's string hash. */
uint64_t tfm_fingerprint64(const char *s, size_t len);

/* For ops whose output size depends on the data (i[5] = -1 in their
 * rows): *sized = a with i[5] counted from the concrete inputs. Returns
 * 1 when it did, 0 when op needs no count, -1 with the error set. */
int tfm_string_presize(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_attrs *sized);

/* UTF-8: the code point at s[0..n) and its byte length (>= 1); -1 for
 * an invalid or truncated sequence (whose length is then 1). */
int32_t tfm_utf8_decode(const unsigned char *s, int64_t n, int *len);
/* Bytes of c in UTF-8 (1..4) written to buf; 0 if c is no code point. */
int tfm_utf8_encode(int32_t c, char *buf);

#endif
