/* The C runtime's versions, statuses, dtypes and tensors
 * (include/tfmini/tfmini.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/tstring.h"
#include "../graph/saved_model.h"
#include "../runtime/dispatch.h"
#include "rt_impl.h"

/* The public enums are the core's, renamed: keep them equal. */
_Static_assert((int)TFMINI_FLOAT64 == (int)TFM_FLOAT64 &&
               (int)TFMINI_BOOL == (int)TFM_BOOL &&
               (int)TFMINI_FLOAT16 == (int)TFM_FLOAT16 &&
               (int)TFMINI_BFLOAT16 == (int)TFM_BFLOAT16 &&
               (int)TFMINI_COMPLEX128 == (int)TFM_COMPLEX128 &&
               (int)TFMINI_STRING == (int)TFM_STRING &&
               TFM_DTYPE_COUNT == 16, "TFM_DataType drifted from tfm_dtype");
/* A string tensor's elements are the core's pointers (Note [String
 * elements]), never bytes a caller passes or reads: hence the string
 * functions, and tfmini_tensor_new refuses TFMINI_STRING. */
_Static_assert((int)TFMINI_DATA_LOSS == (int)TFM_ERR_DATA_LOSS &&
               (int)TFMINI_INVALID_ARGUMENT == (int)TFM_ERR_INVALID_ARGUMENT
               && TFM_CODE_COUNT == 11, "TFM_Code drifted from tfm_code");
_Static_assert(TFMINI_SAVED_MODEL_FORMAT == TFM_SAVED_MODEL_VERSION,
               "the header's format version is the reader's");
_Static_assert(TFMINI_MAX_DIMS == TFM_MAX_DIMS, "TFMINI_MAX_DIMS");

/* ---- the lock (Note [Runtime lock] in rt_impl.h) ---- */

static pthread_mutex_t core_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void *
hook_unlock(void)
{
    pthread_mutex_unlock(&core_lock);
    return NULL;
}

static void
hook_relock(void *token)
{
    (void)token;
    pthread_mutex_lock(&core_lock);
}

static void
install_hooks(void)
{
    tfm_set_lock_hooks(hook_unlock, hook_relock);
}

void
tfm_rt_lock(void)
{
    pthread_once(&hooks_once, install_hooks);
    pthread_mutex_lock(&core_lock);
    tfm_error_clear();
}

void
tfm_rt_unlock(void)
{
    pthread_mutex_unlock(&core_lock);
}

/* ---- versions and statuses ---- */

const char *
tfmini_version(void)
{
    return TFMINI_RT_VERSION;
}

int
tfmini_saved_model_format(void)
{
    return TFM_SAVED_MODEL_VERSION;
}

TFM_Status *
tfmini_status_new(void)
{
    return calloc(1, sizeof(TFM_Status));
}

void
tfmini_status_free(TFM_Status *s)
{
    if (s) {
        free(s->message);
        free(s);
    }
}

TFM_Code
tfmini_status_code(const TFM_Status *s)
{
    return s ? s->code : TFMINI_OK;
}

const char *
tfmini_status_message(const TFM_Status *s)
{
    return s && s->message ? s->message : "";
}

const char *
tfmini_code_name(TFM_Code code)
{
    static const char *const names[] = {
        "OK", "InvalidArgumentError", "ResourceExhaustedError",
        "OutOfRangeError", "UnimplementedError", "ValueError", "TypeError",
        "RuntimeError", "InternalError", "NotFoundError", "DataLossError"};
    return (unsigned)code < sizeof names / sizeof *names ? names[code]
                                                         : "UnknownError";
}

void
tfm_rt_ok(TFM_Status *s)
{
    if (s) {
        s->code = TFMINI_OK;
        free(s->message);
        s->message = NULL;
    }
}

static TFM_Code
set_message(TFM_Status *s, TFM_Code code, const char *text)
{
    if (s) {
        s->code = code;
        free(s->message);
        /* Out of memory for the message: the code still says it. */
        s->message = strdup(text);
    }
    return code;
}

TFM_Code
tfm_rt_fail(TFM_Status *s, TFM_Code code, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return set_message(s, code, buf);
}

TFM_Code
tfm_rt_core_error(TFM_Status *s)
{
    tfm_code c = tfm_error_code();
    if (c == TFM_OK)    /* a path that failed without saying why */
        return set_message(s, TFMINI_INTERNAL, "tfmini: internal error "
                           "with no message");
    return set_message(s, (TFM_Code)c, tfm_error_message());
}

/* ---- dtypes and tensors ---- */

const char *
tfmini_dtype_name(TFM_DataType d)
{
    return tfm_dtype_name((tfm_dtype)d);
}

size_t
tfmini_dtype_size(TFM_DataType d)
{
    return (unsigned)d < TFM_DTYPE_COUNT && (int)d != TFM_STRING
               ? tfm_dtype_size((tfm_dtype)d) : 0;
}

TFM_Tensor *
tfmini_tensor_new(TFM_DataType dtype, const int64_t *dims, int rank,
                  const void *data, size_t nbytes, TFM_Status *status)
{
    if ((unsigned)dtype >= TFM_DTYPE_COUNT) {
        tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT, "tfmini_tensor_new: "
                    "no dtype has code %d", (int)dtype);
        return NULL;
    }
    if ((int)dtype == TFM_STRING) {
        tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT, "tfmini_tensor_new: "
                    "string tensors are made by tfmini_tensor_new_string "
                    "(from (pointer, length) arrays)");
        return NULL;
    }
    if (rank < 0 || rank > TFM_MAX_DIMS || (rank > 0 && !dims)) {
        tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT, "tfmini_tensor_new: "
                    "rank %d (0 to %d, with dims)", rank, TFM_MAX_DIMS);
        return NULL;
    }
    size_t esize = tfm_dtype_size((tfm_dtype)dtype), want = esize;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) {
            tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT, "tfmini_tensor_new:"
                        " dimension %d is %lld", i, (long long)dims[i]);
            return NULL;
        }
        if (dims[i] > 0 && want > SIZE_MAX / (size_t)dims[i]) {
            tfm_rt_fail(status, TFMINI_RESOURCE_EXHAUSTED,
                        "tfmini_tensor_new: the shape's size overflows");
            return NULL;
        }
        want *= (size_t)dims[i];
    }
    if (data && nbytes != want) {
        tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT, "tfmini_tensor_new: "
                    "a %s tensor of rank %d with these dims holds %zu "
                    "bytes, got %zu", tfm_dtype_name((tfm_dtype)dtype),
                    rank, want, nbytes);
        return NULL;
    }
    TFM_Tensor *out = malloc(sizeof *out);
    if (!out) {
        tfm_rt_fail(status, TFMINI_RESOURCE_EXHAUSTED, "tfmini_tensor_new: "
                    "out of memory");
        return NULL;
    }
    tfm_shape shape = tfm_shape_make(rank, dims);
    tfm_rt_lock();
    out->t = tfm_tensor_new((tfm_dtype)dtype, &shape, TFM_CPU);
    if (!out->t) {
        tfm_rt_core_error(status);
        tfm_rt_unlock();
        free(out);
        return NULL;
    }
    tfm_rt_unlock();
    /* Not shared yet: filled outside the lock. */
    if (data)
        memcpy(tfm_tensor_data(out->t), data, want);
    else if (want)
        memset(tfm_tensor_data(out->t), 0, want);
    tfm_rt_ok(status);
    return out;
}

void
tfmini_tensor_free(TFM_Tensor *t)
{
    if (!t)
        return;
    tfm_rt_lock();
    tfm_tensor_decref(t->t);
    tfm_rt_unlock();
    free(t);
}

TFM_DataType
tfmini_tensor_dtype(const TFM_Tensor *t)
{
    return (TFM_DataType)t->t->dtype;
}

int
tfmini_tensor_rank(const TFM_Tensor *t)
{
    return t->t->shape.ndim;
}

int64_t
tfmini_tensor_dim(const TFM_Tensor *t, int i)
{
    return i >= 0 && i < t->t->shape.ndim ? t->t->shape.dims[i] : -1;
}

int64_t
tfmini_tensor_element_count(const TFM_Tensor *t)
{
    return tfm_tensor_numel(t->t);
}

size_t
tfmini_tensor_byte_size(const TFM_Tensor *t)
{
    if (t->t->dtype != TFM_STRING)
        return tfm_tensor_nbytes(t->t);
    size_t total = 0;
    tfm_str *const *v = tfm_tensor_strs(t->t);
    for (int64_t i = 0, n = tfm_tensor_numel(t->t); i < n; i++)
        total += (size_t)tfm_str_len(v[i]);
    return total;
}

const void *
tfmini_tensor_data(const TFM_Tensor *t)
{
    return t->t->dtype == TFM_STRING ? NULL : tfm_tensor_data(t->t);
}

TFM_Tensor *
tfmini_tensor_new_string(const int64_t *dims, int rank,
                         const char *const *data, const size_t *lens,
                         TFM_Status *status)
{
    if (rank < 0 || rank > TFM_MAX_DIMS || (rank > 0 && !dims)) {
        tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                    "tfmini_tensor_new_string: rank %d (0 to %d, with "
                    "dims)", rank, TFM_MAX_DIMS);
        return NULL;
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) {
            tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                        "tfmini_tensor_new_string: dimension %d is %lld",
                        i, (long long)dims[i]);
            return NULL;
        }
        if (__builtin_mul_overflow(n, dims[i], &n) ||
            n > (int64_t)(SIZE_MAX / sizeof(void *))) {
            tfm_rt_fail(status, TFMINI_RESOURCE_EXHAUSTED,
                        "tfmini_tensor_new_string: the shape's size "
                        "overflows");
            return NULL;
        }
    }
    if (n > 0 && (!data || !lens)) {
        tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                    "tfmini_tensor_new_string: %lld elements need data and "
                    "lens arrays", (long long)n);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        if (!data[i] && lens[i]) {
            tfm_rt_fail(status, TFMINI_INVALID_ARGUMENT,
                        "tfmini_tensor_new_string: element %lld is NULL "
                        "with length %zu", (long long)i, lens[i]);
            return NULL;
        }
    TFM_Tensor *out = malloc(sizeof *out);
    if (!out) {
        tfm_rt_fail(status, TFMINI_RESOURCE_EXHAUSTED,
                    "tfmini_tensor_new_string: out of memory");
        return NULL;
    }
    tfm_shape shape = tfm_shape_make(rank, dims);
    tfm_rt_lock();
    out->t = tfm_tensor_new(TFM_STRING, &shape, TFM_CPU);
    if (!out->t)
        goto fail;
    /* Zeroed slots are b"" (Note [String elements]): empty elements
     * stay NULL; the others are new strings the tensor then adopts. */
    tfm_str **v = tfm_tensor_strs(out->t);
    for (int64_t i = 0; i < n; i++) {
        if (!lens[i])
            continue;
        if (lens[i] > (size_t)INT64_MAX ||
            !(v[i] = tfm_str_new(data[i], (int64_t)lens[i]))) {
            if (lens[i] > (size_t)INT64_MAX)
                tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "tfmini_tensor_new_"
                          "string: element %lld is too long", (long long)i);
            tfm_tensor_adopt_strings(out->t);   /* so the free drops them */
            tfm_tensor_decref(out->t);
            goto fail;
        }
    }
    tfm_tensor_adopt_strings(out->t);
    tfm_rt_unlock();
    tfm_rt_ok(status);
    return out;
fail:
    tfm_rt_core_error(status);
    tfm_rt_unlock();
    free(out);
    return NULL;
}

const char *
tfmini_tensor_string(const TFM_Tensor *t, int64_t i, size_t *len)
{
    if (len)
        *len = 0;
    if (!t || t->t->dtype != TFM_STRING || i < 0 ||
        i >= tfm_tensor_numel(t->t))
        return NULL;
    const tfm_str *s = tfm_tensor_strs(t->t)[i];
    if (len)
        *len = (size_t)tfm_str_len(s);
    return tfm_str_data(s);
}
