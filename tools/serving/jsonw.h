/* Writing predict replies straight into a byte buffer (jsonw.c).
 *
 * A reply of a few hundred numbers built as a jansson tree and dumped
 * costs an allocation per number and a printf per float; written here it
 * costs neither. Floats come out as TF Serving prints them
 * (tensorflow_serving/util/json_tensor.cc, WriteDecimal): six
 * significant digits (printf's %g) when those read back to the same
 * value, else max_digits10 (9 for float, 17 for double); ".0" after a
 * whole number written without exponent; NaN, Infinity and -Infinity
 * bare, as TF Serving writes them (Python's json reads them). */
#ifndef TFMINI_SERVING_JSONW_H
#define TFMINI_SERVING_JSONW_H

#include <stddef.h>
#include <tfmini/tfmini.h>

/* A growing byte buffer; `failed` once an allocation failed (the text is
 * then incomplete and must not be sent). */
typedef struct jbuf {
    char *p;
    size_t len, cap;
    int failed;
} jbuf;

void jb_put(jbuf *b, const char *s, size_t n);
void jb_str(jbuf *b, const char *s);        /* raw text, no quoting */
void jb_quoted(jbuf *b, const char *s);     /* a JSON string */
/* t's elements as nested lists; with row >= 0 only that row of the
 * first axis. */
void jb_tensor(jbuf *b, const TFM_Tensor *t, int64_t row);

/* v as TF Serving writes it, NUL-terminated; returns the length. out
 * holds at least 32 bytes. */
size_t json_format_float(float v, char *out);
size_t json_format_double(double v, char *out);

/* A per-thread buffer for replies, emptied; reused between requests so a
 * reply allocates only when it outgrows the largest before it. */
jbuf *jb_thread(void);

#endif
