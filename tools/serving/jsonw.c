/* Reply writer (jsonw.h). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

/* ---- the byte buffer ---- */

static int
grow(jbuf *b, size_t more)
{
    if (b->failed)
        return -1;
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void
jb_put(jbuf *b, const char *s, size_t n)
{
    if (grow(b, n) == 0) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

void
jb_str(jbuf *b, const char *s)
{
    jb_put(b, s, strlen(s));
}

void
jb_quoted(jbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    jb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            jb_put(b, e, 2);
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            jb_put(b, e, 6);
        } else {
            jb_put(b, (const char *)&c, 1);
        }
    }
    jb_put(b, "\"", 1);
}

/* ---- numbers as TF Serving writes them ---- */

/* Exact powers of ten in double: 10^0 .. 10^22. */
static const double p10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* |v| * 10^k in one correctly rounded double operation, or -1 when
 * 10^|k| is not exact in double. */
static double
scaled(double v, int k)
{
    if (k > 22 || k < -22)
        return -1;
    return k >= 0 ? v * p10[k] : v / p10[-k];
}

/* The P significant digits (P <= 9) of the float a > 0, rounded to
 * nearest with ties to even as printf rounds: q in [10^(P-1), 10^P) and
 * the decimal exponent e (a ~ q * 10^(e-P+1)). a * 10^k is formed in
 * one double operation, off by at most 2^-53 relative, about 1e-7 on a
 * 9-digit q: far from a tie the rounding is exact; within 1e-6 of one
 * (or outside 10^+-22) this returns 0 and the caller uses printf. */
static int
digits(double a, int P, uint64_t *q, int *e)
{
    /* From the binary exponent (log10 costs more than the rest); off by
     * at most one, which the loop corrects. */
    int be;
    frexp(a, &be);
    int E = (int)floor((be - 1) * 0.30102999566398120);
    double lo = p10[P - 1], hi = p10[P];
    for (int tries = 0; tries < 3; tries++) {
        double x = scaled(a, P - 1 - E);
        if (x < 0)
            return 0;
        if (x < lo) {
            E--;
            continue;
        }
        if (x >= hi) {
            E++;
            continue;
        }
        double f = floor(x), frac = x - f;
        if (fabs(frac - 0.5) < 1e-6)
            return 0;
        uint64_t d = (uint64_t)f + (frac > 0.5);
        if (d == (uint64_t)hi) {
            d = (uint64_t)lo;
            E++;
        }
        *q = d;
        *e = E;
        return 1;
    }
    return 0;
}

/* Does q * 10^(e-5) (six digits) read back as float as exactly a? The
 * decimal goes to double in one rounding, then to float; that second
 * rounding is only in doubt when the double sits on a float midpoint,
 * and then the caller asks strtof. -1: in doubt. */
static int
six_round_trips(float a, uint64_t q, int e)
{
    double y = scaled((double)q, e - 5);
    if (y < 0)
        return -1;
    uint64_t bits;
    memcpy(&bits, &y, 8);
    if ((bits & ((1ull << 29) - 1)) == (1ull << 28))
        return -1;
    return (float)y == a;
}

/* printf's %.{P}g text of q * 10^(e-P+1) (trailing zeros dropped),
 * then TF Serving's ".0" for a whole number without exponent. */
static size_t
emit(char *out, int neg, uint64_t q, int e, int P)
{
    char d[20];
    for (int i = P - 1; i >= 0; i--) {
        d[i] = (char)('0' + q % 10);
        q /= 10;
    }
    int nd = P;
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    char *o = out;
    if (neg)
        *o++ = '-';
    if (e < -4 || e >= P) {
        *o++ = d[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)(nd - 1));
            o += nd - 1;
        }
        *o++ = 'e';
        *o++ = e < 0 ? '-' : '+';
        int x = e < 0 ? -e : e;
        if (x >= 100)
            *o++ = (char)('0' + x / 100);
        *o++ = (char)('0' + x / 10 % 10);
        *o++ = (char)('0' + x % 10);
    } else if (e < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = -1; i > e; i--)
            *o++ = '0';
        memcpy(o, d, (size_t)nd);
        o += nd;
    } else {
        for (int i = 0; i <= e; i++)
            *o++ = i < nd ? d[i] : '0';
        if (nd > e + 1) {
            *o++ = '.';
            memcpy(o, d + e + 1, (size_t)(nd - e - 1));
            o += nd - e - 1;
        } else {
            *o++ = '.';
            *o++ = '0';
        }
    }
    *o = '\0';
    return (size_t)(o - out);
}

static size_t
special(double v, char *out)
{
    const char *s = isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity";
    strcpy(out, s);
    return strlen(s);
}

/* TF Serving's rule through printf and strtod: the reference the fast
 * path is tested against, and its fallback. */
static size_t
slow(double v, int is_float, char *out)
{
    snprintf(out, 32, "%.6g", v);
    int same = is_float ? strtof(out, NULL) == (float)v
                        : strtod(out, NULL) == v;
    if (!same)
        snprintf(out, 32, "%.*g", is_float ? 9 : 17, v);
    if (!strchr(out, '.') && !strchr(out, 'e'))
        strcat(out, ".0");
    return strlen(out);
}

size_t
json_format_float(float v, char *out)
{
    if (!isfinite(v))
        return special(v, out);
    float a = fabsf(v);
    if (a == 0)
        return slow(v, 1, out);     /* "0.0" or "-0.0" */
    uint64_t q;
    int e;
    if (digits(a, 6, &q, &e)) {
        int rt = six_round_trips(a, q, e);
        if (rt == 1)
            return emit(out, v < 0, q, e, 6);
        if (rt == 0 && digits(a, 9, &q, &e))
            return emit(out, v < 0, q, e, 9);
    }
    return slow(v, 1, out);
}

size_t
json_format_double(double v, char *out)
{
    return isfinite(v) ? slow(v, 0, out) : special(v, out);
}

/* ---- tensors ---- */

static void
element(jbuf *b, TFM_DataType dt, const void *p, int64_t i)
{
    char s[40];
    size_t n;
    switch (dt) {
    case TFMINI_FLOAT32:
        n = json_format_float(((const float *)p)[i], s);
        break;
    case TFMINI_FLOAT64:
        n = json_format_double(((const double *)p)[i], s);
        break;
    case TFMINI_INT8: n = (size_t)sprintf(s, "%d", ((const int8_t *)p)[i]);
        break;
    case TFMINI_UINT8: n = (size_t)sprintf(s, "%u", ((const uint8_t *)p)[i]);
        break;
    case TFMINI_INT16: n = (size_t)sprintf(s, "%d", ((const int16_t *)p)[i]);
        break;
    case TFMINI_INT32: n = (size_t)sprintf(s, "%d", ((const int32_t *)p)[i]);
        break;
    case TFMINI_INT64:
        n = (size_t)sprintf(s, "%lld", (long long)((const int64_t *)p)[i]);
        break;
    case TFMINI_BOOL:
        n = (size_t)sprintf(s, "%s", ((const uint8_t *)p)[i] ? "true"
                                                              : "false");
        break;
    default:
        n = (size_t)sprintf(s, "null");
    }
    jb_put(b, s, n);
}

static void
nest(jbuf *b, const TFM_Tensor *t, int d, int64_t *at)
{
    if (d == tfmini_tensor_rank(t)) {
        element(b, tfmini_tensor_dtype(t), tfmini_tensor_data(t), (*at)++);
        return;
    }
    int64_t n = tfmini_tensor_dim(t, d);
    jb_put(b, "[", 1);
    for (int64_t k = 0; k < n && !b->failed; k++) {
        if (k)
            jb_put(b, ",", 1);
        nest(b, t, d + 1, at);
    }
    jb_put(b, "]", 1);
}

void
jb_tensor(jbuf *b, const TFM_Tensor *t, int64_t row)
{
    int64_t at = 0;
    if (row < 0) {
        nest(b, t, 0, &at);
        return;
    }
    int64_t per = 1;
    for (int d = 1; d < tfmini_tensor_rank(t); d++)
        per *= tfmini_tensor_dim(t, d);
    at = row * per;
    nest(b, t, 1, &at);
}

/* ---- per-thread state: the reply buffer ---- */

typedef struct per_thread {
    jbuf reply;
} per_thread;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void
per_thread_free(void *p)
{
    per_thread *t = p;
    free(t->reply.p);
    free(t);
}

static void
make_key(void)
{
    pthread_key_create(&key, per_thread_free);
}

static per_thread *
mine(void)
{
    pthread_once(&key_once, make_key);
    per_thread *t = pthread_getspecific(key);
    if (!t && (t = calloc(1, sizeof *t)))
        pthread_setspecific(key, t);
    return t;
}

jbuf *
jb_thread(void)
{
    static jbuf none = {NULL, 0, 0, 1};
    per_thread *t = mine();
    if (!t)
        return &none;
    t->reply.len = 0;
    t->reply.failed = 0;
    /* A huge reply once should not pin its memory for good. */
    if (t->reply.cap > (8u << 20)) {
        free(t->reply.p);
        t->reply.p = NULL;
        t->reply.cap = 0;
    }
    return &t->reply;
}
