/* strtod for the server process: an exact fast path in front of glibc's.
 *
 * Why: cJSON (jparse.h) turns every number of a request body into a
 * double through strtod, and has no hook for it. glibc's strtod builds
 * multi-precision numbers for every call: on a one-row MLP body (64
 * numbers) it was ~10% of the server's CPU per request (perf, 8
 * connections). Defined in the executable, this strtod is the one the
 * shared libcjson binds to (the executable comes first in the dynamic
 * linker's search), and it hands everything it cannot do exactly to
 * glibc's (dlsym RTLD_NEXT). Nothing else changes: cJSON still parses
 * the JSON.
 *
 * The fast path (Clinger's): a decimal [-]digits[.digits][e[+-]digits]
 * with at most 19 significant digits is w * 10^e with w an integer.
 * When w < 2^53 and |e| <= 22 both w and 10^|e| are exact doubles, so
 * one IEEE multiply or divide rounds the exact value once: the
 * correctly rounded result, as strtod's. For 2^53 < w < 10^19 (the 17-
 * digit numbers Python's repr writes) and |e| <= 27, where long double
 * is x87's (64-bit significand): w and 10^|e| are exact there, the one
 * operation rounds to 64 bits, and rounding that to a double's 53 gives
 * the correct double unless the 64-bit result sits exactly halfway
 * between two doubles (its low 11 bits 0x400), the only place where
 * rounding twice can differ from rounding once. Anything else (hex,
 * inf/nan, white space, a leading '+', more digits, a larger exponent,
 * those halfway cases) goes to glibc, which also sets errno and the end
 * pointer for those. Assumes round-to-nearest, SSE2 doubles and x87's
 * default extended precision (x86-64 Linux); elsewhere only the first
 * path is taken. */
#include <dlfcn.h>
#include <float.h>
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static double (*libc_strtod)(const char *, char **);
/* 1: the locale's decimal point is '.' (the server never calls
 * setlocale; a program that did would get glibc's reading throughout). */
static int dot_locale = -1;

static double
slow(const char *s, char **end)
{
    if (!libc_strtod)
        libc_strtod = (double (*)(const char *, char **))dlsym(RTLD_NEXT,
                                                              "strtod");
    return libc_strtod(s, end);
}

static const double pow10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
    1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int
digit(char c)
{
    return c >= '0' && c <= '9';
}

/* w * 10^e, rounded once. */
static double
scale(double w, int e)
{
    return e >= 0 ? w * pow10[e] : w / pow10[-e];
}

double
strtod(const char *s, char **end)
{
    if (dot_locale < 0) {
        const char *dp = localeconv()->decimal_point;
        dot_locale = dp[0] == '.' && dp[1] == '\0';
    }
    if (!dot_locale)
        return slow(s, end);
    const char *p = s;
    int neg = *p == '-';
    p += neg;
    uint64_t w = 0;
    int sig = 0, e = 0, any = 0;
    for (; digit(*p); p++, any = 1) {
        if (w == 0 && *p == '0')
            continue;               /* leading zeros are not significant */
        if (++sig > 19)
            return slow(s, end);
        w = w * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        for (p++; digit(*p); p++, any = 1) {
            e--;
            if (w == 0 && *p == '0')
                continue;
            if (++sig > 19)
                return slow(s, end);
            w = w * 10 + (uint64_t)(*p - '0');
        }
    }
    if (!any)
        return slow(s, end);
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        int eneg = *q == '-';
        q += *q == '-' || *q == '+';
        if (!digit(*q))
            return slow(s, end);
        int x = 0;
        for (; digit(*q); q++) {
            if (x > 1000)
                return slow(s, end);
            x = x * 10 + (*q - '0');
        }
        e += eneg ? -x : x;
        p = q;
    }
    /* "0x1p3", "1.5f", "1.2.3": what follows decides what strtod reads
     * (hex, or a prefix): let it. */
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '.')
        return slow(s, end);
    double r;
    if (w == 0) {
        r = 0.0;
    } else if (w <= (uint64_t)1 << 53 && e >= -22 && e <= 22) {
        r = scale((double)w, e);
    } else {
#if LDBL_MANT_DIG == 64 && defined(__x86_64__)
        static const long double lpow10[28] = {
            1e0L, 1e1L, 1e2L, 1e3L, 1e4L, 1e5L, 1e6L, 1e7L, 1e8L, 1e9L,
            1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L,
            1e19L, 1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
        if (e < -27 || e > 27)
            return slow(s, end);
        long double q = e >= 0 ? (long double)w * lpow10[e]
                               : (long double)w / lpow10[-e];
        uint64_t mant;              /* x87: the significand comes first */
        memcpy(&mant, &q, sizeof mant);
        if ((mant & 0x7ff) == 0x400)
            return slow(s, end);
        r = (double)q;
#else
        return slow(s, end);
#endif
    }
    if (end)
        *end = (char *)p;
    return neg ? -r : r;
}
