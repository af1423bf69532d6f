/* Reading a predict request body (jparse.c): the one place that knows
 * which JSON library parses requests.
 *
 * cJSON (Debian libcjson-dev), not jansson, parses bodies: on a one-row
 * MLP body (64 numbers) it takes about half jansson's time, whose lexer
 * reads through a per-character stream and allocates a buffer per token
 * (jansson still builds the cold replies: metadata, status, errors). The
 * tree's nodes come from a per-thread arena that jp_end drops at once:
 * no malloc/free per number.
 *
 * Numbers are doubles, as in cJSON: integers beyond 2^53 are not exact,
 * which convert.c refuses for integer inputs rather than round. */
#ifndef TFMINI_SERVING_JPARSE_H
#define TFMINI_SERVING_JPARSE_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef cJSON jnode;

/* Once, before any other call (sets cJSON's allocation hooks). */
void jp_install(void);
/* Parse len bytes of body (no NUL needed). The tree lives in the calling
 * thread's arena until jp_end, which the caller calls once done with it
 * (also after a failed parse). NULL with "JSON Parse error: ..." in err:
 * malformed text, trailing garbage, or nesting over 1000 levels. (A
 * number beyond a double's range reads as +-inf: convert.c refuses it.) */
const jnode *jp_parse(const char *body, size_t len, char *err,
                      size_t errlen);
void jp_end(void);

static inline int jp_is_object(const jnode *n) { return cJSON_IsObject(n); }
static inline int jp_is_array(const jnode *n) { return cJSON_IsArray(n); }
static inline int jp_is_number(const jnode *n) { return cJSON_IsNumber(n); }
static inline int jp_is_string(const jnode *n) { return cJSON_IsString(n); }
static inline int jp_is_bool(const jnode *n) { return cJSON_IsBool(n); }
static inline int jp_is_true(const jnode *n) { return cJSON_IsTrue(n); }
static inline int jp_is_null(const jnode *n) { return cJSON_IsNull(n); }
static inline double jp_number(const jnode *n) { return n->valuedouble; }
static inline const char *jp_string(const jnode *n)
{
    return cJSON_IsString(n) ? n->valuestring : NULL;
}
/* The member named key (the first, if repeated), or NULL. */
static inline const jnode *jp_get(const jnode *obj, const char *key)
{
    return cJSON_IsObject(obj) ?
        cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}
/* Children of an array or object, in order: first, then next until
 * NULL. */
static inline const jnode *jp_first(const jnode *n)
{
    return n && (cJSON_IsArray(n) || cJSON_IsObject(n)) ? n->child : NULL;
}
static inline const jnode *jp_next(const jnode *n) { return n->next; }
/* An array's length (a walk: cJSON keeps a list). */
static inline size_t jp_count(const jnode *n)
{
    size_t k = 0;
    for (const jnode *x = jp_first(n); x; x = x->next)
        k++;
    return k;
}

#endif
