/* Buffers: refcounts, live counts, alignment, wrapped memory, and absurd
 * sizes that must fail cleanly. */
#include <stdlib.h>

#include "check.h"
#include "core/buffer.h"

TEST(new_and_refcount)
{
    int64_t count0 = tfm_buffer_live_count();
    int64_t bytes0 = tfm_buffer_live_bytes();
    tfm_buffer *small = tfm_buffer_new(24, TFM_CPU);
    tfm_buffer *big = tfm_buffer_new(1 << 20, TFM_CPU);
    CHECK(small && big);
    CHECK_EQ_INT(small->refcount, 1);
    CHECK_EQ_INT(small->nbytes, 24);
    CHECK_EQ_INT(tfm_buffer_live_count(), count0 + 2);
    CHECK_EQ_INT(tfm_buffer_live_bytes(), bytes0 + 24 + (1 << 20));
    /* data is usable and 64-byte aligned */
    CHECK(((uintptr_t)small->data & 63) == 0);
    CHECK(((uintptr_t)big->data & 63) == 0);
    memset(small->data, 1, 24);
    memset(big->data, 2, 1 << 20);
    tfm_buffer_incref(small);
    CHECK_EQ_INT(small->refcount, 2);
    tfm_buffer_decref(small);
    CHECK_EQ_INT(small->refcount, 1);
    CHECK_EQ_INT(tfm_buffer_live_count(), count0 + 2);
    tfm_buffer_decref(small);
    tfm_buffer_decref(big);
    CHECK_EQ_INT(tfm_buffer_live_count(), count0);
    CHECK_EQ_INT(tfm_buffer_live_bytes(), bytes0);
}

TEST(zero_bytes)
{
    int64_t count0 = tfm_buffer_live_count();
    tfm_buffer *b = tfm_buffer_new(0, TFM_CPU);
    CHECK(b != NULL);
    CHECK_EQ_INT(tfm_buffer_live_count(), count0 + 1);
    tfm_buffer_decref(b);
    CHECK_EQ_INT(tfm_buffer_live_count(), count0);
}

static int released;
static void
release(void *ctx)
{
    released++;
    free(ctx);
}

TEST(wrap_releases_once_on_last_decref)
{
    int64_t count0 = tfm_buffer_live_count();
    void *mem = malloc(100);
    released = 0;
    tfm_buffer *b = tfm_buffer_wrap(mem, 100, TFM_CPU, release, mem);
    CHECK(b && b->data == mem);
    CHECK_EQ_INT(tfm_buffer_live_count(), count0 + 1);
    tfm_buffer_incref(b);
    tfm_buffer_decref(b);
    CHECK_EQ_INT(released, 0);
    tfm_buffer_decref(b);
    CHECK_EQ_INT(released, 1);
    CHECK_EQ_INT(tfm_buffer_live_count(), count0);
}

TEST(absurd_sizes_fail_cleanly)
{
    int64_t count0 = tfm_buffer_live_count();
    size_t sizes[] = {SIZE_MAX, SIZE_MAX - 63, SIZE_MAX / 2,
                      (size_t)1 << 62, (size_t)1 << 50};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        tfm_error_clear();
        tfm_buffer *b = tfm_buffer_new(sizes[i], TFM_CPU);
        CHECK(b == NULL);
        CHECK_EQ_INT(tfm_error_code(), TFM_ERR_RESOURCE_EXHAUSTED);
        CHECK_HAS(tfm_error_message(), "OOM");
    }
    CHECK_EQ_INT(tfm_buffer_live_count(), count0);
    tfm_error_clear();
}

TEST(gpu_without_allocator_is_an_error)
{
    int64_t count0 = tfm_buffer_live_count();
    tfm_error_clear();
    tfm_buffer *b = tfm_buffer_new(1024, 1);
    CHECK(b == NULL);
    CHECK(tfm_error_code() != TFM_OK);
    CHECK_HAS(tfm_error_message(), "CUDA");
    CHECK_EQ_INT(tfm_buffer_live_count(), count0);
    tfm_error_clear();
}

/* Note [Big block cache]: a freed big block serves the next allocation
 * of its rounded size, stays out of the live counts, and the cache is
 * bounded and can be emptied. Off under AddressSanitizer. */
TEST(big_blocks_are_reused)
{
#if !defined(__SANITIZE_ADDRESS__)
    size_t mb = (size_t)1 << 20;
    tfm_buffer_cache_trim();
    CHECK_EQ_INT(tfm_buffer_cache_bytes(), 0);
    int64_t bytes0 = tfm_buffer_live_bytes();
    tfm_buffer *a = tfm_buffer_new(9 * mb + 5, 0);
    CHECK(a != NULL);
    void *first = a->data;
    tfm_buffer_decref(a);
    CHECK_EQ_INT(tfm_buffer_live_bytes(), bytes0);
    CHECK_EQ_INT(tfm_buffer_cache_bytes(), 10 * mb);   /* 2 MiB pages */
    tfm_buffer *b = tfm_buffer_new(10 * mb, 0);         /* same rounding */
    CHECK(b && b->data == first);
    CHECK_EQ_INT(tfm_buffer_cache_bytes(), 0);
    tfm_buffer *c = tfm_buffer_new(20 * mb, 0);         /* another size */
    CHECK(c && c->data != first);
    tfm_buffer_decref(b);
    tfm_buffer_decref(c);
    /* Bounded: many distinct sizes keep at most 512 MiB and 8 blocks. */
    for (int k = 1; k <= 12; k++) {
        tfm_buffer *d = tfm_buffer_new((size_t)(60 + 2 * k) * mb, 0);
        CHECK(d != NULL);
        tfm_buffer_decref(d);
        CHECK(tfm_buffer_cache_bytes() <= (size_t)512 * mb);
    }
    tfm_buffer_cache_trim();
    CHECK_EQ_INT(tfm_buffer_cache_bytes(), 0);
#endif
}

RUN_TESTS(T(new_and_refcount), T(zero_bytes), T(big_blocks_are_reused),
          T(wrap_releases_once_on_last_decref), T(absurd_sizes_fail_cleanly),
          T(gpu_without_allocator_is_an_error))
