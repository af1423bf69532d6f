#include "buffer.h"

#include "device.h"
#include "tstring.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int64_t live_count, live_bytes, peak_bytes;

/* Host data is 64-byte aligned (one cache line, full AVX-512 vector).
 * Small buffers come with the header in one allocation: tiny eager ops
 * then cost one malloc for their data. */
#define TFM_ALIGN 64
#define TFM_INLINE_MAX 256

/* Big host buffers are aligned to 2 MiB and offered to the kernel as
 * transparent huge pages (as NumPy does): a fresh 64 MiB output then
 * costs 32 page faults instead of 16384, which is most of the time of a
 * large elementwise op. */
#define TFM_HUGE_MIN ((size_t)4 << 20)
#define TFM_HUGE_ALIGN ((size_t)2 << 20)

/* Note [Big block cache]: the kernel hands out fresh pages zeroed, and
 * zeroing a fresh 64 MiB output costs about as much as adding two 64 MiB
 * arrays. So, as TF's and PyTorch's allocators do, freed big blocks are
 * kept for the next allocation of the same rounded size, up to
 * CACHE_SLOTS blocks and CACHE_MAX_BYTES in all (oldest dropped first).
 * Buffers are made and freed under the caller's lock (buffer.h), so the
 * cache needs none. Under AddressSanitizer it is off: reused memory
 * would hide a use after free. */
#define CACHE_SLOTS 8
#define CACHE_MAX_BYTES ((size_t)512 << 20)
#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ON 0
#else
#define CACHE_ON 1
#endif

/* Oldest first, no holes. */
static struct {
    void *ptr[CACHE_SLOTS];
    size_t size[CACHE_SLOTS];   /* rounded sizes */
    int n;
    size_t bytes;
} cache;

static size_t
huge_rounded(size_t nbytes)
{
    return (nbytes + TFM_HUGE_ALIGN - 1) & ~(TFM_HUGE_ALIGN - 1);
}

/* Remove entry i (returns its block). */
static void *
cache_remove(int i)
{
    void *p = cache.ptr[i];
    cache.bytes -= cache.size[i];
    cache.n--;
    memmove(cache.ptr + i, cache.ptr + i + 1,
            sizeof(void *) * (size_t)(cache.n - i));
    memmove(cache.size + i, cache.size + i + 1,
            sizeof(size_t) * (size_t)(cache.n - i));
    return p;
}

static void *
cache_take(size_t rounded)
{
    for (int i = cache.n - 1; i >= 0; i--)   /* newest: warmest */
        if (cache.size[i] == rounded)
            return cache_remove(i);
    return NULL;
}

/* 1 if the cache took p (of rounded bytes), 0 if the caller frees it. */
static int
cache_put(void *p, size_t rounded)
{
    if (!CACHE_ON || rounded > CACHE_MAX_BYTES)
        return 0;
    while (cache.n == CACHE_SLOTS || cache.bytes + rounded > CACHE_MAX_BYTES)
        free(cache_remove(0));
    cache.ptr[cache.n] = p;
    cache.size[cache.n++] = rounded;
    cache.bytes += rounded;
    return 1;
}

static void small_trim(void);

void
tfm_buffer_cache_trim(void)
{
    while (cache.n)
        free(cache_remove(0));
    small_trim();
}

size_t
tfm_buffer_cache_bytes(void)
{
    return cache.bytes;
}

static void
host_free(void *p, size_t nbytes)
{
    if (nbytes < TFM_HUGE_MIN || !cache_put(p, huge_rounded(nbytes)))
        free(p);
}

static void *
host_alloc(size_t nbytes)
{
    if (nbytes >= TFM_HUGE_MIN) {
        size_t rounded = huge_rounded(nbytes);
        void *p = cache_take(rounded);
        if (p)
            return p;
        p = aligned_alloc(TFM_HUGE_ALIGN, rounded);
#ifdef MADV_HUGEPAGE
        if (p)
            madvise(p, rounded, MADV_HUGEPAGE);    /* advice: may fail */
#endif
        return p;
    }
    size_t rounded = (nbytes + TFM_ALIGN - 1) / TFM_ALIGN * TFM_ALIGN;
    return aligned_alloc(TFM_ALIGN, rounded ? rounded : TFM_ALIGN);
}

/* Note [Small block freelist]: a tiny eager op frees an inline block
 * (header and data, all one size) and allocates another on every call,
 * and glibc serves aligned_alloc from its general bins, not its
 * per-thread cache: aligned_alloc and free were 10-12% of a tiny
 * x[:, 1] in perf. Freed inline blocks are kept on a bounded stack and
 * handed out again. Unlike the big block cache it takes a lock of its
 * own, a spinlock around three stores, so that it stays safe if a
 * caller ever allocates outside the binding's lock. Off under
 * AddressSanitizer, like the big block cache. */
#define SMALL_KEEP 64
#define SMALL_BLOCK (TFM_ALIGN + TFM_INLINE_MAX)

static struct {
    atomic_flag lock;
    int n;
    void *blk[SMALL_KEEP];
} small = {ATOMIC_FLAG_INIT, 0, {0}};

static void
small_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&small.lock,
                                             memory_order_acquire))
        sched_yield();
}

static void
small_unlock(void)
{
    atomic_flag_clear_explicit(&small.lock, memory_order_release);
}

static void *
small_alloc(void)
{
    void *p = NULL;
    if (CACHE_ON) {
        small_lock();
        if (small.n > 0)
            p = small.blk[--small.n];
        small_unlock();
    }
    return p ? p : aligned_alloc(TFM_ALIGN, SMALL_BLOCK);
}

static void
small_free(void *p)
{
    if (CACHE_ON) {
        small_lock();
        if (small.n < SMALL_KEEP) {
            small.blk[small.n++] = p;
            p = NULL;
        }
        small_unlock();
    }
    free(p);
}

static void
small_trim(void)
{
    for (;;) {
        void *p = NULL;
        small_lock();
        if (small.n > 0)
            p = small.blk[--small.n];
        small_unlock();
        if (!p)
            return;
        free(p);
    }
}

static size_t
physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return (size_t)1 << 40;
    return (size_t)pages * (size_t)page;
}

tfm_buffer *
tfm_buffer_new(size_t nbytes, int device)
{
    static size_t limit;
    if (!limit)
        limit = physical_memory();
    if (nbytes > limit) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED,
                  "OOM when allocating %zu bytes (more than the %zu bytes "
                  "of memory this machine has)", nbytes, limit);
        return NULL;
    }
    tfm_buffer *b;
    if (device == TFM_CPU && nbytes <= TFM_INLINE_MAX) {
        b = small_alloc();
        if (!b)
            goto oom;
        b->data = (char *)b + TFM_ALIGN;
        b->inline_data = 1;
    } else {
        b = malloc(sizeof *b);
        if (!b)
            goto oom;
        b->inline_data = 0;
        if (device == TFM_CPU) {
            b->data = host_alloc(nbytes);
        } else if (tfm_device_get(device)) {
            const tfm_device *d = tfm_device_get(device);
            b->data = d->alloc(d, nbytes);
        } else {
            free(b);
            tfm_error(TFM_ERR_INVALID_ARGUMENT,
                      "no device %d: tfmini was built without CUDA or "
                      "no GPU is present", device);
            return NULL;
        }
        if (!b->data) {
            free(b);
            goto oom;
        }
    }
    b->refcount = 1;
    b->nbytes = nbytes;
    b->device = device;
    b->strings = 0;
    b->release = NULL;
    b->release_ctx = NULL;
    live_count++;
    live_bytes += (int64_t)nbytes;
    if (live_bytes > peak_bytes)
        peak_bytes = live_bytes;
    return b;
oom:
    tfm_error(TFM_ERR_RESOURCE_EXHAUSTED,
              "OOM when allocating %zu bytes (out of memory)", nbytes);
    return NULL;
}

tfm_buffer *
tfm_buffer_wrap(void *data, size_t nbytes, int device,
                void (*release)(void *), void *ctx)
{
    tfm_buffer *b = malloc(sizeof *b);
    if (!b) {
        tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM wrapping a buffer");
        return NULL;
    }
    b->refcount = 1;
    b->inline_data = 0;
    b->strings = 0;
    b->data = data;
    b->nbytes = nbytes;
    b->device = device;
    b->release = release;
    b->release_ctx = ctx;
    live_count++;
    live_bytes += (int64_t)nbytes;
    if (live_bytes > peak_bytes)
        peak_bytes = live_bytes;
    return b;
}

void
tfm_buffer_decref(tfm_buffer *b)
{
    if (--b->refcount > 0)
        return;
    live_count--;
    live_bytes -= (int64_t)b->nbytes;
    if (b->strings)
        tfm_strs_release((tfm_str **)b->data,
                         (int64_t)(b->nbytes / sizeof(tfm_str *)));
    if (b->release) {
        b->release(b->release_ctx);
    } else if (!b->inline_data) {
        if (b->device == TFM_CPU)
            host_free(b->data, b->nbytes);
        else if (tfm_device_get(b->device))
            tfm_device_get(b->device)->free(tfm_device_get(b->device),
                                            b->data, b->nbytes);
    }
    if (b->inline_data)
        small_free(b);
    else
        free(b);
}

int64_t
tfm_buffer_live_count(void)
{
    return live_count;
}

int64_t
tfm_buffer_live_bytes(void)
{
    return live_bytes;
}

int64_t
tfm_buffer_peak_bytes(void)
{
    return peak_bytes;
}

void
tfm_buffer_reset_peak(void)
{
    peak_bytes = live_bytes;
}
