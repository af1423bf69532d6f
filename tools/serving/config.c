/* --model_config_file (config.h). A scanner for the subset of protobuf
 * text format a ModelServerConfig uses: identifiers, ':', '{', '}' and
 * quoted strings; a config entry ends at the '}' after its name and
 * base_path have been seen. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* The quoted string at *p into buf; 0, or -1 if not a string. */
static int
quoted(const char **p, char *buf, size_t n)
{
    char q = **p;
    if (q != '\'' && q != '"')
        return -1;
    const char *s = ++*p;
    while (**p && **p != q)
        ++*p;
    if (**p != q || (size_t)(*p - s) >= n)
        return -1;
    memcpy(buf, s, (size_t)(*p - s));
    buf[*p - s] = '\0';
    ++*p;
    return 0;
}

int
config_read(const char *path, model_entry *out, int max, char *err,
            size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read --model_config_file %s", path);
        return -1;
    }
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    int n = 0;
    model_entry cur = {{0}, {0}};
    for (const char *p = text; *p;) {
        if (isspace((unsigned char)*p)) {
            p++;
        } else if (*p == '#') {
            while (*p && *p != '\n')
                p++;
        } else if (*p == '}') {
            p++;
            if (cur.name[0] && cur.base_path[0]) {
                if (n == max) {
                    snprintf(err, errlen, "%s: more than %d models", path,
                             max);
                    return -1;
                }
                out[n++] = cur;
                memset(&cur, 0, sizeof cur);
            }
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            const char *w = p;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            size_t wl = (size_t)(p - w);
            while (isspace((unsigned char)*p))
                p++;
            if (*p != ':')
                continue;           /* a block name: its '{' follows */
            p++;
            while (isspace((unsigned char)*p))
                p++;
            char *dst = NULL;
            size_t cap = 0;
            if (wl == 4 && strncmp(w, "name", 4) == 0)
                dst = cur.name, cap = sizeof cur.name;
            else if (wl == 9 && strncmp(w, "base_path", 9) == 0)
                dst = cur.base_path, cap = sizeof cur.base_path;
            if (dst) {
                if (quoted(&p, dst, cap)) {
                    snprintf(err, errlen, "%s: %.*s must be a quoted "
                             "string", path, (int)wl, w);
                    return -1;
                }
            } else if (*p == '\'' || *p == '"') {
                char skip[4096];
                if (quoted(&p, skip, sizeof skip)) {
                    snprintf(err, errlen, "%s: unterminated string", path);
                    return -1;
                }
            }
        } else {
            p++;                    /* '{', numbers, ... */
        }
    }
    if (n == 0)
        snprintf(err, errlen, "%s: no config { name: ... base_path: ... } "
                 "entry", path);
    return n ? n : -1;
}
