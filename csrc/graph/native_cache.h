/* Compiling the C source of a native fused program and caching the
 * result in this process and on disk (native_cache.c). See Note [Native
 * code cache]. */
#ifndef TFM_GRAPH_NATIVE_CACHE_H
#define TFM_GRAPH_NATIVE_CACHE_H

#include "fused.h"

/* The function `tfm_native` of src, compiled now or found in a cache;
 * NULL when native code is off ($TFMINI_NATIVE=0), there is no working
 * compiler, or the cache directory is refused (with a warning on
 * stderr, once). Thread-safe. */
tfm_fused_native_fn tfm_native_cache_get(const char *src);

/* Whether $TFMINI_NATIVE allows native code ("0", "off" or "false" do
 * not). */
int tfm_native_enabled(void);

#endif
