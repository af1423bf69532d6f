/* Request bodies through cJSON, nodes from a per-thread arena (jparse.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jparse.h"

#define CHUNK (64 << 10)
#define HDR 16              /* keeps 16-byte alignment; says who owns */
enum { FROM_HEAP = 1, FROM_ARENA = 2 };

/* A block taken when the chunk is full (a large body): BIG_HDR bytes
 * of link, then `cap` bytes bumped through. */
typedef struct big {
    struct big *next;
    size_t cap, used;
} big;
#define BIG_HDR 32          /* sizeof(big), rounded up to 16 */
_Static_assert(sizeof(big) <= BIG_HDR, "big's header");

typedef struct arena {
    int active;
    char *chunk;            /* CHUNK bytes, kept between requests */
    size_t used;
    big *bigs;              /* newest first, freed at jp_end */
} arena;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void
drop_bigs(arena *a)
{
    while (a->bigs) {
        big *n = a->bigs->next;
        free(a->bigs);
        a->bigs = n;
    }
}

static void
arena_free(void *p)
{
    arena *a = p;
    drop_bigs(a);
    free(a->chunk);
    free(a);
}

static void
make_key(void)
{
    pthread_key_create(&key, arena_free);
}

static void *
tagged(char *p, size_t tag)
{
    memcpy(p, &tag, sizeof tag);
    return p + HDR;
}

/* cJSON's hooks are process-wide: outside jp_parse..jp_end (no other
 * user in the server, but a library might be) they are plain malloc and
 * free, told apart by the tag. */
static void *
j_malloc(size_t n)
{
    arena *a = pthread_getspecific(key);
    if (a && a->active) {
        size_t need = (n + HDR + 15) & ~(size_t)15;
        if (!a->chunk)
            a->chunk = malloc(CHUNK);
        if (a->chunk && a->used + need <= CHUNK) {
            char *p = a->chunk + a->used;
            a->used += need;
            return tagged(p, FROM_ARENA);
        }
        big *g = a->bigs;
        if (!g || g->used + need > g->cap) {
            size_t cap = need > CHUNK ? need : CHUNK;
            if (!(g = malloc(BIG_HDR + cap)))
                return NULL;
            g->next = a->bigs;
            g->cap = cap;
            g->used = 0;
            a->bigs = g;
        }
        char *p = (char *)g + BIG_HDR + g->used;
        g->used += need;
        return tagged(p, FROM_ARENA);
    }
    char *p = malloc(n + HDR);
    return p ? tagged(p, FROM_HEAP) : NULL;
}

static void
j_free(void *p)
{
    if (!p)
        return;
    size_t tag;
    memcpy(&tag, (char *)p - HDR, sizeof tag);
    if (tag == FROM_HEAP)
        free((char *)p - HDR);
    /* Arena memory goes back all at once, at jp_end. */
}

void
jp_install(void)
{
    pthread_once(&key_once, make_key);
    cJSON_Hooks hooks = {j_malloc, j_free};
    cJSON_InitHooks(&hooks);
}

static int
space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Why cJSON stopped at `at` (it says only where). */
static void
parse_error(size_t len, size_t at, char *err, size_t errlen)
{
    const char *what = len == 0 ? "the body is empty"
        : at + 1 >= len ? "the text ends inside a value"
        : "invalid value or syntax";
    snprintf(err, errlen, "JSON Parse error: %s at offset: %zu", what, at);
}

const jnode *
jp_parse(const char *body, size_t len, char *err, size_t errlen)
{
    arena *a = pthread_getspecific(key);
    if (!a && (a = calloc(1, sizeof *a)))
        pthread_setspecific(key, a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->active = 1;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body ? body : "", len, &end, 0);
    size_t at = end && body ? (size_t)(end - body) : 0;
    if (root) {
        /* cJSON stops after the value; only white space may follow. */
        while (at < len && space(body[at]))
            at++;
        if (at == len)
            return root;
        snprintf(err, errlen, "JSON Parse error: text after the value at "
                 "offset: %zu", at);
        return NULL;
    }
    parse_error(len, at, err, errlen);
    return NULL;
}

void
jp_end(void)
{
    arena *a = pthread_getspecific(key);
    if (!a)
        return;
    a->active = 0;
    a->used = 0;
    drop_bigs(a);
}
