/* tfmini C runtime (libtfmini_rt): load a model saved from Python with
 * tf.saved_model.save (or Keras model.export) and run it from C, with no
 * Python in the process.
 *
 *     TFM_Status *st = tfmini_status_new();
 *     TFM_Model *m = tfmini_model_load("export_dir", st);
 *     int sig = tfmini_model_find(m, "serving_default");
 *     int64_t dims[2] = {1, 4};
 *     TFM_Tensor *x = tfmini_tensor_new(TFMINI_FLOAT32, dims, 2,
 *                                       data, sizeof data, st);
 *     TFM_Tensor *y = NULL;
 *     if (tfmini_model_run(m, sig, &x, 1, &y, 1, st) != TFMINI_OK)
 *         fprintf(stderr, "%s\n", tfmini_status_message(st));
 *
 * Errors. Every call that can fail takes a TFM_Status (which may be
 * NULL when the caller does not want the message) and either returns a
 * TFM_Code or NULL on failure; the status then holds the code and a
 * message naming the file, signature, input, dtypes and shapes
 * involved. A status is overwritten (set to TFMINI_OK) by each call that
 * takes it. A corrupt, truncated or hostile model file is
 * TFMINI_DATA_LOSS and a missing one TFMINI_NOT_FOUND: never a crash.
 *
 * Ownership. Whatever a tfmini_*_new / tfmini_model_load /
 * tfmini_model_run call returns belongs to the caller, who frees it
 * with the matching tfmini_*_free (free functions accept NULL). Input
 * tensors are copied from the caller's buffer by tfmini_tensor_new, so
 * the buffer may be reused at once; a run never takes or frees its
 * inputs. Strings returned by the model's query functions (names,
 * messages) are owned by the model or status and live until it is freed
 * (a status message until the next call that takes that status).
 * Output tensors stay valid after their model is freed.
 *
 * Threads. A loaded model may be run from several threads at once; each
 * thread must pass its own TFM_Status. Tensors are immutable once made,
 * so one input tensor may feed runs on several threads. The core under
 * the runtime was written for one caller at a time (the Python binding
 * calls it under the interpreter lock), so the runtime keeps one
 * process-wide lock over it, as the interpreter lock does, and releases
 * it around big kernels (matmuls, convolutions and elementwise ops over
 * 64Ki elements or more) so that those run in parallel; each concurrent
 * run of one function then gets a scratch arena of its own. Small models
 * therefore run one at a time however many threads call them; big
 * kernels also use OpenMP within one run (OMP_NUM_THREADS).
 * Variables a function assigns are updated under the lock.
 *
 * Versions. TFMINI_RT_VERSION_* is this header's version and
 * tfmini_version() the library's; a program should check that their
 * majors agree. The API follows semantic versioning: a minor release
 * only adds functions and enum values (enum values are never renumbered:
 * the dtype codes are those of the saved-model file). The runtime reads
 * saved-model files of format TFMINI_SAVED_MODEL_FORMAT (Note [Saved
 * model file] in csrc/graph/saved_model.h) and refuses others with
 * TFMINI_DATA_LOSS. */
#ifndef TFMINI_TFMINI_H
#define TFMINI_TFMINI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFMINI_RT_VERSION_MAJOR 1
#define TFMINI_RT_VERSION_MINOR 1
#define TFMINI_RT_VERSION_PATCH 0
#define TFMINI_RT_VERSION "1.1.0"
/* The saved-model file format version this runtime reads. */
#define TFMINI_SAVED_MODEL_FORMAT 1
/* The most dimensions a tensor has. */
#define TFMINI_MAX_DIMS 8

#if defined(__GNUC__)
#define TFMINI_API __attribute__((visibility("default")))
#else
#define TFMINI_API
#endif

/* Element types: the codes of the saved-model file (append-only). */
typedef enum TFM_DataType {
    TFMINI_BOOL = 0,
    TFMINI_INT8 = 1,
    TFMINI_UINT8 = 2,
    TFMINI_INT16 = 3,
    TFMINI_INT32 = 4,
    TFMINI_INT64 = 5,
    TFMINI_FLOAT16 = 6,    /* IEEE half, as uint16_t bits */
    TFMINI_FLOAT32 = 7,
    TFMINI_FLOAT64 = 8,
    /* Byte strings of any length (TF's tf.string): made with
     * tfmini_tensor_new_string, read with tfmini_tensor_string (since
     * 1.1). */
    TFMINI_STRING = 9,
    TFMINI_BFLOAT16 = 10,  /* the top 16 bits of a float32, as uint16_t */
    TFMINI_UINT16 = 11,
    TFMINI_UINT32 = 12,
    TFMINI_UINT64 = 13,
    TFMINI_COMPLEX64 = 14, /* float pairs: real, imaginary */
    TFMINI_COMPLEX128 = 15 /* double pairs */
} TFM_DataType;

/* Error codes: TensorFlow's error classes. */
typedef enum TFM_Code {
    TFMINI_OK = 0,
    TFMINI_INVALID_ARGUMENT = 1,
    TFMINI_RESOURCE_EXHAUSTED = 2,
    TFMINI_OUT_OF_RANGE = 3,
    TFMINI_UNIMPLEMENTED = 4,
    TFMINI_VALUE_ERROR = 5,
    TFMINI_TYPE_ERROR = 6,
    TFMINI_RUNTIME_ERROR = 7,
    TFMINI_INTERNAL = 8,
    TFMINI_NOT_FOUND = 9,
    TFMINI_DATA_LOSS = 10
} TFM_Code;

typedef struct TFM_Status TFM_Status;
typedef struct TFM_Model TFM_Model;
typedef struct TFM_Tensor TFM_Tensor;

/* ---- versions ---- */
/* The library's version, "MAJOR.MINOR.PATCH". */
TFMINI_API const char *tfmini_version(void);
/* The saved-model format version the library reads. */
TFMINI_API int tfmini_saved_model_format(void);

/* ---- status ---- */
TFMINI_API TFM_Status *tfmini_status_new(void);
TFMINI_API void tfmini_status_free(TFM_Status *s);
TFMINI_API TFM_Code tfmini_status_code(const TFM_Status *s);
/* "" when the code is TFMINI_OK. */
TFMINI_API const char *tfmini_status_message(const TFM_Status *s);
/* TensorFlow's name of a code: "InvalidArgumentError", "OK", ... */
TFMINI_API const char *tfmini_code_name(TFM_Code code);

/* ---- dtypes ---- */
/* "float32", ...; "invalid" for a code out of range. */
TFMINI_API const char *tfmini_dtype_name(TFM_DataType dtype);
/* Bytes per element; 0 for a code out of range and for TFMINI_STRING
 * (whose elements have their own lengths). */
TFMINI_API size_t tfmini_dtype_size(TFM_DataType dtype);

/* ---- tensors ---- */
/* A new tensor of dtype and shape dims[0..rank), holding a copy of
 * nbytes bytes of data (row-major), which must be exactly the tensor's
 * size. data may be NULL to get a zero-filled tensor. NULL on error. */
TFMINI_API TFM_Tensor *tfmini_tensor_new(TFM_DataType dtype,
                                         const int64_t *dims, int rank,
                                         const void *data, size_t nbytes,
                                         TFM_Status *status);
TFMINI_API void tfmini_tensor_free(TFM_Tensor *t);
TFMINI_API TFM_DataType tfmini_tensor_dtype(const TFM_Tensor *t);
TFMINI_API int tfmini_tensor_rank(const TFM_Tensor *t);
/* Dimension i (0 <= i < rank). */
TFMINI_API int64_t tfmini_tensor_dim(const TFM_Tensor *t, int i);
TFMINI_API int64_t tfmini_tensor_element_count(const TFM_Tensor *t);
/* The elements' bytes (for a string tensor: the sum of the elements'
 * lengths). */
TFMINI_API size_t tfmini_tensor_byte_size(const TFM_Tensor *t);
/* The elements, row-major; valid as long as t. Read-only: tensors are
 * immutable (write only into data passed to tfmini_tensor_new). NULL
 * for a string tensor: read its elements with tfmini_tensor_string. */
TFMINI_API const void *tfmini_tensor_data(const TFM_Tensor *t);
/* A new TFMINI_STRING tensor of shape dims[0..rank): element i (row-
 * major) is a copy of the lens[i] bytes at data[i] (any bytes, NULs
 * included; data[i] may be NULL when lens[i] is 0). data and lens hold
 * one entry per element (they may be NULL for a tensor of no elements).
 * NULL on error. (Since 1.1.) */
TFMINI_API TFM_Tensor *tfmini_tensor_new_string(const int64_t *dims,
                                                int rank,
                                                const char *const *data,
                                                const size_t *lens,
                                                TFM_Status *status);
/* Element i (row-major) of a string tensor: its bytes, followed by a NUL
 * that is not counted, and its length in *len (len may be NULL). Owned
 * by t, valid as long as t. NULL (and *len = 0) when t is not a string
 * tensor or i is out of range. (Since 1.1.) */
TFMINI_API const char *tfmini_tensor_string(const TFM_Tensor *t, int64_t i,
                                            size_t *len);

/* ---- models ---- */
/* Load export_dir/saved_model.tfm. With several numbered version
 * folders (TF Serving's layout), pass the version folder. NULL on error
 * (TFMINI_NOT_FOUND, TFMINI_DATA_LOSS for a bad file). */
TFMINI_API TFM_Model *tfmini_model_load(const char *export_dir,
                                        TFM_Status *status);
/* Waits for nothing: the caller must not free a model while another
 * thread runs it. */
TFMINI_API void tfmini_model_free(TFM_Model *m);

/* The model's functions, in the order they were saved: each traced
 * tf.function of the saved object (named by attribute path: "f",
 * "__call__") and each signature ("serving_default", and the keys of
 * signatures= in tf.saved_model.save). */
TFMINI_API int tfmini_model_function_count(const TFM_Model *m);
TFMINI_API const char *tfmini_model_function_name(const TFM_Model *m,
                                                  int fn);
/* The index of the function named name, or -1. */
TFMINI_API int tfmini_model_find(const TFM_Model *m, const char *name);
/* The JSON the Python side saved with the model (Python structures of
 * inputs and outputs, and under "signatures" each signature's input
 * names and output keys, in run order), or NULL with *len = 0. Owned by
 * the model. The runtime itself does not need it. */
TFMINI_API const char *tfmini_model_meta(const TFM_Model *m, size_t *len);

/* A function's inputs and outputs, in the order tfmini_model_run takes
 * and gives them. Inputs are named by the traced function's arguments;
 * outputs "output_<k>" (a signature's input names and output keys, as
 * TF Serving shows them, are in the meta, in this order). Out of range: 0, NULL, -1. */
TFMINI_API int tfmini_model_input_count(const TFM_Model *m, int fn);
TFMINI_API int tfmini_model_output_count(const TFM_Model *m, int fn);
TFMINI_API const char *tfmini_model_input_name(const TFM_Model *m, int fn,
                                               int i);
TFMINI_API const char *tfmini_model_output_name(const TFM_Model *m, int fn,
                                                int i);
TFMINI_API TFM_DataType tfmini_model_input_dtype(const TFM_Model *m, int fn,
                                                 int i);
TFMINI_API TFM_DataType tfmini_model_output_dtype(const TFM_Model *m,
                                                  int fn, int i);
/* The declared shape: its rank, with up to max_dims dims stored in dims
 * (-1 for a dimension unknown until run time, such as the batch);
 * -1 for an out-of-range index. */
TFMINI_API int tfmini_model_input_shape(const TFM_Model *m, int fn, int i,
                                        int64_t *dims, int max_dims);
TFMINI_API int tfmini_model_output_shape(const TFM_Model *m, int fn, int i,
                                         int64_t *dims, int max_dims);

/* Run function fn on inputs[0..nin) (one per input, of its dtype and
 * of a shape that agrees with its declared dims); fills
 * outputs[0..nout) with new tensors the caller frees. nout must be the
 * function's output count. On error no output is set (all NULL). Safe
 * to call from several threads at once (see Threads above). */
TFMINI_API TFM_Code tfmini_model_run(TFM_Model *m, int fn,
                                     TFM_Tensor *const *inputs, int nin,
                                     TFM_Tensor **outputs, int nout,
                                     TFM_Status *status);

#ifdef __cplusplus
}
#endif

#endif
