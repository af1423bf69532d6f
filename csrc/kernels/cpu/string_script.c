/* UnicodeScript: each code point's ICU script code (UScriptCode), as
 * TF's kernel gets it from uscript_getScript; -1 where ICU fails (a
 * value that is no code point). ICU is optional: built with it only
 * when setup.py finds it (TFM_HAVE_ICU). */
#include "string_kernels.h"

#ifndef TFM_HAVE_ICU

tfm_code
tfm_k_unicode_script(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
{
    (void)in; (void)nin; (void)a; (void)out; (void)nout; (void)ctx;
    return tfm_error(TFM_ERR_UNIMPLEMENTED, "%s: tfmini was built without "
                     "ICU; install it (Debian: apt-get install libicu-dev) "
                     "and rebuild", tfm_ops[op].name);
}

#else

#include <unicode/uscript.h>

tfm_code
tfm_k_unicode_script(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)a; (void)nout; (void)ctx;
    const int32_t *x = tfm_tensor_data(in[0]);
    int32_t *o = tfm_tensor_data(out[0]);
    for (int64_t i = 0, n = tfm_tensor_numel(in[0]); i < n; i++) {
        UErrorCode status = U_ZERO_ERROR;
        UScriptCode code = uscript_getScript((UChar32)x[i], &status);
        o[i] = U_SUCCESS(status) ? (int32_t)code : -1;
    }
    return TFM_OK;
}

#endif
