/* Errors: code and message in a thread-local slot. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "core/status.h"

TEST(set_and_clear)
{
    tfm_error_clear();
    CHECK_EQ_INT(tfm_error_code(), TFM_OK);
    CHECK_EQ_STR(tfm_error_message(), "");
    CHECK_EQ_INT(tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: bad %d", "Op", 7),
                 TFM_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tfm_error_code(), TFM_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(tfm_error_message(), "Op: bad 7");
    /* the latest error wins */
    tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "OOM");
    CHECK_EQ_INT(tfm_error_code(), TFM_ERR_RESOURCE_EXHAUSTED);
    CHECK_EQ_STR(tfm_error_message(), "OOM");
    tfm_error_clear();
    CHECK_EQ_INT(tfm_error_code(), TFM_OK);
    CHECK_EQ_STR(tfm_error_message(), "");
}

TEST(long_messages_are_truncated_safely)
{
    size_t n = 10000;
    char *big = malloc(n + 1);
    memset(big, 'a', n);
    big[n] = '\0';
    tfm_error(TFM_ERR_INTERNAL, "%s", big);
    size_t len = strlen(tfm_error_message());
    CHECK(len > 100 && len < n);
    free(big);
    tfm_error_clear();
}

static void *
other_thread(void *arg)
{
    (void)arg;
    tfm_error(TFM_ERR_TYPE, "from another thread");
    return NULL;
}

TEST(thread_local)
{
    tfm_error(TFM_ERR_VALUE, "mine");
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, other_thread, NULL), 0);
    pthread_join(th, NULL);
    CHECK_EQ_INT(tfm_error_code(), TFM_ERR_VALUE);
    CHECK_EQ_STR(tfm_error_message(), "mine");
    tfm_error_clear();
}

RUN_TESTS(T(set_and_clear), T(long_messages_are_truncated_safely),
          T(thread_local))
