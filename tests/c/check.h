/* A tiny test harness for the C core: TEST() functions, CHECK macros that
 * count failures and keep going, and main() via RUN_TESTS(). No Python:
 * these binaries link only the C library (core .. graph). */
#ifndef TFM_TESTS_CHECK_H
#define TFM_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_current_failed;

static inline void
check_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
    check_failures++;
    check_current_failed = 1;
}

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond))                                                         \
            check_fail(__FILE__, __LINE__, #cond);                           \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                   \
    do {                                                                     \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);      \
        if (check_a_ != check_b_) {                                          \
            char check_m_[512];                                              \
            snprintf(check_m_, sizeof check_m_, "%s == %s (%lld vs %lld)",   \
                     #a, #b, check_a_, check_b_);                            \
            check_fail(__FILE__, __LINE__, check_m_);                        \
        }                                                                    \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                   \
    do {                                                                     \
        const char *check_a_ = (a), *check_b_ = (b);                         \
        if (strcmp(check_a_, check_b_) != 0) {                               \
            char check_m_[1024];                                             \
            snprintf(check_m_, sizeof check_m_, "%s == %s (\"%s\" vs "       \
                     "\"%s\")", #a, #b, check_a_, check_b_);                 \
            check_fail(__FILE__, __LINE__, check_m_);                        \
        }                                                                    \
    } while (0)

/* haystack contains needle */
#define CHECK_HAS(hay, needle)                                               \
    do {                                                                     \
        const char *check_h_ = (hay), *check_n_ = (needle);                  \
        if (!strstr(check_h_, check_n_)) {                                   \
            char check_m_[1024];                                             \
            snprintf(check_m_, sizeof check_m_, "\"%s\" in %s (\"%s\")",     \
                     check_n_, #hay, check_h_);                              \
            check_fail(__FILE__, __LINE__, check_m_);                        \
        }                                                                    \
    } while (0)

#define TEST(name) static void name(void)

typedef struct {
    const char *name;
    void (*fn)(void);
} check_test;

#define T(name) {#name, name}

/* main(): run every test, print one line each and a closing tally. */
#define RUN_TESTS(...)                                                       \
    int                                                                      \
    main(void)                                                               \
    {                                                                        \
        static const check_test tests[] = {__VA_ARGS__};                     \
        int n = (int)(sizeof tests / sizeof tests[0]), failed = 0;           \
        for (int i = 0; i < n; i++) {                                        \
            check_current_failed = 0;                                        \
            tests[i].fn();                                                   \
            failed += check_current_failed;                                  \
            printf("%s %s\n", check_current_failed ? "FAIL" : "ok  ",        \
                   tests[i].name);                                           \
        }                                                                    \
        printf("%s: %d passed, %d failed\n", __FILE__, n - failed, failed);  \
        return failed ? 1 : 0;                                               \
    }

#endif
