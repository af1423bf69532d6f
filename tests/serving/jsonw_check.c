/* Driver for tests/test_model_server_json.py: tools/serving/jsonw.c's
 * float writer against TF Serving's rule done with printf and strtof
 * (jsonw.c's `slow`, reached by including the file).
 *   jsonw_check rand N SEED   N random float bit patterns and the edge
 *                             cases: prints "mismatches M", then up to 10
 *   jsonw_check list          hex float bits on stdin, one a line: the
 *                             text of each */
#include "../../tools/serving/jsonw.c"

#include <float.h>
#include <inttypes.h>

static uint64_t state;

static uint32_t
next(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state >> 16);
}

static int shown, bad;

static void
check(float v)
{
    char fast[40], ref[40];
    json_format_float(v, fast);
    if (isfinite(v))
        slow(v, 1, ref);
    else
        special(v, ref);
    if (strcmp(fast, ref) != 0) {
        bad++;
        if (shown++ < 10) {
            uint32_t b;
            memcpy(&b, &v, 4);
            printf("%08" PRIx32 " fast %s ref %s\n", b, fast, ref);
        }
    }
}

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        char line[64];
        while (fgets(line, sizeof line, stdin)) {
            uint32_t b = (uint32_t)strtoul(line, NULL, 16);
            float v;
            memcpy(&v, &b, 4);
            char s[40];
            json_format_float(v, s);
            printf("%s\n", s);
        }
        return 0;
    }
    if (argc != 4 || strcmp(argv[1], "rand") != 0)
        return 2;
    long n = atol(argv[2]);
    state = (uint64_t)atoll(argv[3]) * 2654435761u + 1;
    /* Powers of two and ten, whole numbers, their neighbours. */
    for (int e = -149; e <= 127; e++) {
        float p = ldexpf(1.0f, e);
        check(p);
        check(nextafterf(p, 0));
        check(nextafterf(p, INFINITY));
    }
    for (int e = -45; e <= 38; e++) {
        float p = (float)pow(10, e);
        check(p);
        check(nextafterf(p, 0));
        check(nextafterf(p, INFINITY));
    }
    for (int i = 0; i < 2000000; i += 7)
        check((float)i), check(-(float)i / 1024.0f);
    check(FLT_MAX), check(FLT_MIN), check(FLT_TRUE_MIN), check(-0.0f);
    for (long i = 0; i < n; i++) {
        uint32_t b = next();
        float v;
        memcpy(&v, &b, 4);
        check(v);
        /* And values in the range a model's outputs have. */
        check((float)((int32_t)next()) / 2147483648.0f * 10.0f);
    }
    printf("mismatches %d\n", bad);
    return bad != 0;
}
