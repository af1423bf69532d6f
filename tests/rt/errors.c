/* Misuse of the C runtime's API is an error status with a message,
 * never a crash (tests/test_c_runtime.py, also under ASan).
 *
 *   errors EXPORT_DIR
 *
 * EXPORT_DIR holds a model whose serving_default takes one float32
 * [?, 4] input. Prints each message; exits 0 when every case gave the
 * expected code. */
#include <stdio.h>
#include <string.h>

#include <tfmini/tfmini.h>

static int failed;

static void
expect(const char *what, TFM_Status *st, TFM_Code code)
{
    printf("%s: %s: %s\n", what, tfmini_code_name(tfmini_status_code(st)),
           tfmini_status_message(st));
    if (tfmini_status_code(st) != code || (code && !*tfmini_status_message(
            st))) {
        printf("  FAILED: expected %s\n", tfmini_code_name(code));
        failed++;
    }
}

int
main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    TFM_Status *st = tfmini_status_new();
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t d24[2] = {2, 4}, d23[2] = {2, 3}, dneg[2] = {-1, 4};

    TFM_Model *none = tfmini_model_load("/nonexistent/tfmini/model", st);
    expect("missing dir", st, TFMINI_NOT_FOUND);
    if (none)
        failed++;
    tfmini_model_load(NULL, st);
    expect("NULL dir", st, TFMINI_INVALID_ARGUMENT);

    tfmini_tensor_new((TFM_DataType)99, d24, 2, x, sizeof x, st);
    expect("bad dtype", st, TFMINI_INVALID_ARGUMENT);
    tfmini_tensor_new(TFMINI_FLOAT32, d24, 9, x, sizeof x, st);
    expect("rank 9", st, TFMINI_INVALID_ARGUMENT);
    tfmini_tensor_new(TFMINI_FLOAT32, dneg, 2, x, sizeof x, st);
    expect("negative dim", st, TFMINI_INVALID_ARGUMENT);
    tfmini_tensor_new(TFMINI_FLOAT32, d24, 2, x, 4, st);
    expect("short buffer", st, TFMINI_INVALID_ARGUMENT);
    int64_t huge[2] = {INT64_MAX / 2, 4};
    tfmini_tensor_new(TFMINI_FLOAT32, huge, 2, NULL, 0, st);
    expect("huge shape", st, TFMINI_RESOURCE_EXHAUSTED);

    TFM_Model *m = tfmini_model_load(argv[1], st);
    expect("load", st, TFMINI_OK);
    if (!m)
        return 1;
    int f = tfmini_model_find(m, "serving_default");
    if (f < 0 || tfmini_model_find(m, "no_such") != -1 ||
        tfmini_model_find(m, NULL) != -1 ||
        tfmini_model_input_name(m, f, 5) != NULL ||
        tfmini_model_input_shape(m, 99, 0, NULL, 0) != -1)
        failed++;
    TFM_Tensor *good = tfmini_tensor_new(TFMINI_FLOAT32, d24, 2, x,
                                         sizeof x, st);
    TFM_Tensor *narrow = tfmini_tensor_new(TFMINI_FLOAT32, d23, 2, x,
                                           6 * sizeof(float), st);
    TFM_Tensor *f64 = tfmini_tensor_new(TFMINI_FLOAT64, d24, 2, NULL, 0, st);
    TFM_Tensor *out[2] = {NULL, NULL}, *nul = NULL;

    tfmini_model_run(m, 99, &good, 1, out, 1, st);
    expect("function 99", st, TFMINI_INVALID_ARGUMENT);
    tfmini_model_run(m, f, &good, 0, out, 1, st);
    expect("no inputs", st, TFMINI_INVALID_ARGUMENT);
    tfmini_model_run(m, f, &good, 1, out, 2, st);
    expect("two outputs", st, TFMINI_INVALID_ARGUMENT);
    tfmini_model_run(m, f, &nul, 1, out, 1, st);
    expect("NULL input", st, TFMINI_INVALID_ARGUMENT);
    tfmini_model_run(m, f, &narrow, 1, out, 1, st);
    expect("wrong shape", st, TFMINI_INVALID_ARGUMENT);
    tfmini_model_run(m, f, &f64, 1, out, 1, st);
    expect("wrong dtype", st, TFMINI_INVALID_ARGUMENT);
    if (out[0] || out[1])
        failed++;
    if (tfmini_model_run(m, f, &good, 1, out, 1, NULL))   /* no status */
        failed++;
    tfmini_tensor_free(out[0]);
    tfmini_model_run(m, f, &good, 1, out, 1, st);
    expect("good run", st, TFMINI_OK);
    if (!out[0] || tfmini_tensor_dim(out[0], 0) != 2)
        failed++;
    tfmini_tensor_free(good);
    tfmini_tensor_free(narrow);
    tfmini_tensor_free(f64);
    tfmini_model_free(m);
    /* Outputs outlive their model. */
    if (out[0] && tfmini_tensor_element_count(out[0]) < 2)
        failed++;
    tfmini_tensor_free(out[0]);
    tfmini_tensor_free(NULL);
    tfmini_model_free(NULL);
    tfmini_status_free(st);
    printf("%s\n", failed ? "FAILED" : "ok");
    return failed != 0;
}
