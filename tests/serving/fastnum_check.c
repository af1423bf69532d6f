/* tools/serving/fastnum.c's strtod against glibc's: the same double,
 * bit for bit, and the same end pointer, over edge cases and a few
 * million generated numbers. Built and run by test_model_server_fastnum.py
 * (linked with fastnum.c, whose strtod then is this program's). Prints
 * how many inputs took the fast path; exits 1 on the first mismatch. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double (*ref)(const char *, char **);
static long checked, failed;

static void
check(const char *s)
{
    char *e1, *e2;
    double a = strtod(s, &e1), b = ref(s, &e2);
    checked++;
    if (memcmp(&a, &b, sizeof a) != 0 || e1 != e2) {
        if (failed++ < 10)
            fprintf(stderr, "mismatch on \"%s\": %.17g (end +%td) vs "
                    "glibc %.17g (end +%td)\n", s, a, e1 - s, b, e2 - s);
    }
}

static uint64_t rng = 88172645463325252ULL;

static uint64_t
next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int
main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    ref = (double (*)(const char *, char **))dlsym(RTLD_NEXT, "strtod");
    if (!ref || ref == strtod) {
        fprintf(stderr, "no glibc strtod behind fastnum's\n");
        return 2;
    }
    static const char *const edge[] = {
        "0", "-0", "0.0", "-0.0", "00", "007", ".5", "5.", "-.5", ".",
        "-", "+1", " 1", "1e", "1e+", "1e-", "1e5", "1E-5", "1e+22",
        "1e23", "1e-22", "1e-23", "9007199254740992", "9007199254740993",
        "9007199254740995", "18446744073709551615", "9999999999999999999",
        "99999999999999999999", "0.1", "0.2", "0.3", "1.7976931348623157e308",
        "2.2250738585072014e-308", "4.9e-324", "1e400", "1e-400", "inf",
        "-Infinity", "nan", "0x1p3", "0x10", "1.5f", "1.2.3", "1,5",
        "123456789012345678", "0.000000000000000000000000001",
        "1000000000000000000000", "3.4028234663852886e38",
        "1.1754943508222875e-38", "0.30000000000000004",
        "0.1000000000000000055511151231257827", "2.5e-1", "7e22", "7e-22",
        "1e0000000000000000000001", "0e99999", ""};
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
        check(edge[i]);
    char buf[64];
    for (long i = 0; i < n; i++) {
        uint64_t r = next();
        switch (i % 6) {
        case 0: {           /* float32 as Python's repr of its double */
            uint32_t bits = (uint32_t)r;
            float f;
            memcpy(&f, &bits, sizeof f);
            if (!isfinite(f))
                continue;
            snprintf(buf, sizeof buf, "%.17g", (double)f);
            break;
        }
        case 1: {           /* a double near 1, the shortest of 15-17 */
            double d = (double)(r >> 11) / 9007199254740992.0 *
                       ((r & 1) ? -1 : 1) * pow(10, (int)(r >> 3 & 7) - 4);
            for (int p = 15; p <= 17; p++) {
                snprintf(buf, sizeof buf, "%.*g", p, d);
                if (ref(buf, NULL) == d)
                    break;
            }
            break;
        }
        case 2:             /* float32 at 9 digits, as the server writes */
            snprintf(buf, sizeof buf, "%.9g",
                     (double)(float)((double)(int64_t)r / 1e15));
            break;
        case 3: {           /* random digits, point and exponent */
            int nd = 1 + (int)(r % 21), at = 0, point = (int)(r >> 8) % 24;
            if (r >> 20 & 1)
                buf[at++] = '-';
            for (int k = 0; k < nd; k++) {
                if (k == point)
                    buf[at++] = '.';
                buf[at++] = (char)('0' + next() % 10);
            }
            if (r >> 21 & 1)
                at += snprintf(buf + at, sizeof buf - at, "e%d",
                               (int)(r >> 24 & 63) - 32);
            buf[at] = '\0';
            break;
        }
        case 4:             /* integers and a half, 17+ digits */
            snprintf(buf, sizeof buf, "%.20g", (double)(r >> 11) + 0.5);
            break;
        default: {          /* 17-19 digits next to a double's midpoint,
                             * where rounding twice can go wrong */
            double d = (double)(r >> 11) / 9007199254740992.0 *
                       pow(10, (int)(r >> 3 & 15) - 8);
            long double mid = (long double)d +
                              ((long double)nextafter(d, 2 * d + 1) - d) / 2;
            snprintf(buf, sizeof buf, "%.*Lg", 17 + (int)(r >> 9 & 3) % 3,
                     mid);
            break;
        }
        }
        check(buf);
    }
    printf("checked %ld, mismatches %ld\n", checked, failed);
    return failed != 0;
}
