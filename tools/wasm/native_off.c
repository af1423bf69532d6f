/* graph/native_cache.c's stand-in in the WebAssembly build: a browser
 * has no C compiler to run and no dlopen for what one would write, so
 * native fused programs are off and big fused nodes keep the block
 * evaluator (fused.c), which computes the same numbers. */
#include "graph/native_cache.h"

int
tfm_native_enabled(void)
{
    return 0;
}

tfm_fused_native_fn
tfm_native_cache_get(const char *src)
{
    (void)src;
    return NULL;
}
