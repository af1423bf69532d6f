/* The element types. The order is part of the saved-model format: append
 * only. */
#ifndef TFM_DTYPE_H
#define TFM_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tfm_dtype {
    TFM_BOOL = 0,
    TFM_INT8,
    TFM_UINT8,
    TFM_INT16,
    TFM_INT32,
    TFM_INT64,
    TFM_FLOAT16,
    TFM_FLOAT32,
    TFM_FLOAT64,
    TFM_STRING,         /* Note [String elements] in tstring.h */
    TFM_BFLOAT16,       /* the top 16 bits of a float32, in a uint16_t */
    TFM_UINT16,
    TFM_UINT32,
    TFM_UINT64,
    TFM_COMPLEX64,      /* two float32, real then imaginary (C's float complex) */
    TFM_COMPLEX128,     /* two float64 */
    TFM_DTYPE_COUNT
} tfm_dtype;

extern const size_t tfm_dtype_sizes[TFM_DTYPE_COUNT];
extern const char *const tfm_dtype_names[TFM_DTYPE_COUNT];

static inline size_t
tfm_dtype_size(tfm_dtype d)
{
    return tfm_dtype_sizes[d];
}

static inline const char *
tfm_dtype_name(tfm_dtype d)
{
    return (unsigned)d < TFM_DTYPE_COUNT ? tfm_dtype_names[d] : "invalid";
}

static inline bool
tfm_dtype_is_float(tfm_dtype d)
{
    return d == TFM_FLOAT16 || d == TFM_FLOAT32 || d == TFM_FLOAT64
        || d == TFM_BFLOAT16;
}

static inline bool
tfm_dtype_is_int(tfm_dtype d)
{
    return (d >= TFM_INT8 && d <= TFM_INT64)
        || (d >= TFM_UINT16 && d <= TFM_UINT64);
}

static inline bool
tfm_dtype_is_string(tfm_dtype d)
{
    return d == TFM_STRING;
}

static inline bool
tfm_dtype_is_unsigned(tfm_dtype d)
{
    return d == TFM_UINT8 || (d >= TFM_UINT16 && d <= TFM_UINT64);
}

static inline bool
tfm_dtype_is_complex(tfm_dtype d)
{
    return d == TFM_COMPLEX64 || d == TFM_COMPLEX128;
}

/* Result type of true division (`/`): TF's truediv casts 8 and 16 bit
 * ints to float32 and 32 and 64 bit ints to float64; floats keep theirs. */
tfm_dtype tfm_dtype_truediv(tfm_dtype d);

/* float16 storage: IEEE binary16 bits in a uint16_t; kernels compute in
 * float32 (the dispatcher casts around kernels that lack float16). */
float tfm_half_to_float(uint16_t h);
uint16_t tfm_float_to_half(float f);

#endif
