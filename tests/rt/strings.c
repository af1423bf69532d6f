/* String tensors through the C runtime (tests/test_c_runtime.py, also
 * under ASan).
 *
 *   strings EXPORT_DIR FUNCTION STRING...
 *
 * Runs FUNCTION (one string input) on the 1-D tensor of the STRINGs and
 * prints each output as "output <k> <dtype> <n>" and then one element a
 * line: strings as <length>:<bytes in hex>, numbers in decimal. Before
 * that it checks the string API's own cases (embedded NULs, empty
 * elements, misuse) and exits 1 if one fails. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfmini/tfmini.h>

static int failed;

static void
check(int ok, const char *what, TFM_Status *st)
{
    if (!ok) {
        printf("FAILED: %s (%s: %s)\n", what,
               tfmini_code_name(tfmini_status_code(st)),
               tfmini_status_message(st));
        failed++;
    }
}

static void
api_cases(TFM_Status *st)
{
    const char *data[3] = {"a\0b", NULL, "xyz"};
    size_t lens[3] = {3, 0, 3};
    int64_t d3[1] = {3};
    TFM_Tensor *t = tfmini_tensor_new_string(d3, 1, data, lens, st);
    check(t && tfmini_status_code(st) == TFMINI_OK, "new_string", st);
    if (!t)
        return;
    size_t n = 99;
    const char *e0 = tfmini_tensor_string(t, 0, &n);
    check(e0 && n == 3 && memcmp(e0, "a\0b", 3) == 0, "embedded NUL", st);
    const char *e1 = tfmini_tensor_string(t, 1, &n);
    check(e1 && n == 0 && e1[0] == 0, "empty element", st);
    check(!tfmini_tensor_string(t, 3, &n) && n == 0, "out of range", st);
    check(tfmini_tensor_dtype(t) == TFMINI_STRING, "dtype", st);
    check(tfmini_tensor_byte_size(t) == 6, "byte size", st);
    check(tfmini_tensor_data(t) == NULL, "no raw data", st);
    check(tfmini_dtype_size(TFMINI_STRING) == 0, "dtype size", st);
    check(strcmp(tfmini_dtype_name(TFMINI_STRING), "string") == 0,
          "dtype name", st);
    tfmini_tensor_free(t);

    tfmini_tensor_new(TFMINI_STRING, d3, 1, NULL, 0, st);
    check(tfmini_status_code(st) == TFMINI_INVALID_ARGUMENT &&
          strstr(tfmini_status_message(st), "tfmini_tensor_new_string"),
          "tensor_new refuses strings", st);
    size_t bad[3] = {3, 2, 3};
    check(!tfmini_tensor_new_string(d3, 1, data, bad, st) &&
          tfmini_status_code(st) == TFMINI_INVALID_ARGUMENT,
          "NULL element with a length", st);
    check(!tfmini_tensor_new_string(d3, 1, NULL, NULL, st) &&
          tfmini_status_code(st) == TFMINI_INVALID_ARGUMENT,
          "no arrays", st);
    int64_t d0[1] = {0};
    t = tfmini_tensor_new_string(d0, 1, NULL, NULL, st);
    check(t && tfmini_tensor_element_count(t) == 0, "empty tensor", st);
    tfmini_tensor_free(t);
    float x = 1;
    int64_t d1[1] = {1};
    t = tfmini_tensor_new(TFMINI_FLOAT32, d1, 1, &x, sizeof x, st);
    check(t && !tfmini_tensor_string(t, 0, &n) && n == 0,
          "string of a float tensor", st);
    tfmini_tensor_free(t);
}

static void
print_output(int k, const TFM_Tensor *t)
{
    int64_t n = tfmini_tensor_element_count(t);
    TFM_DataType d = tfmini_tensor_dtype(t);
    printf("output %d %s %" PRId64 "\n", k, tfmini_dtype_name(d), n);
    const void *p = tfmini_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        switch (d) {
        case TFMINI_STRING: {
            size_t len;
            const unsigned char *s =
                (const unsigned char *)tfmini_tensor_string(t, i, &len);
            printf("%zu:", len);
            for (size_t j = 0; j < len; j++)
                printf("%02x", s[j]);
            printf("\n");
            break;
        }
        case TFMINI_INT32:
            printf("%" PRId32 "\n", ((const int32_t *)p)[i]);
            break;
        case TFMINI_INT64:
            printf("%" PRId64 "\n", ((const int64_t *)p)[i]);
            break;
        case TFMINI_BOOL:
            printf("%d\n", ((const uint8_t *)p)[i]);
            break;
        case TFMINI_FLOAT32:
            printf("%.9g\n", ((const float *)p)[i]);
            break;
        default:
            printf("?\n");
        }
    }
}

int
main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    TFM_Status *st = tfmini_status_new();
    api_cases(st);
    TFM_Model *m = tfmini_model_load(argv[1], st);
    if (!m) {
        fprintf(stderr, "%s\n", tfmini_status_message(st));
        return 1;
    }
    int f = tfmini_model_find(m, argv[2]);
    if (f < 0 || tfmini_model_input_count(m, f) != 1) {
        fprintf(stderr, "no one-input function %s\n", argv[2]);
        return 1;
    }
    int64_t n = argc - 3;
    const char **data = calloc((size_t)n + 1, sizeof *data);
    size_t *lens = calloc((size_t)n + 1, sizeof *lens);
    for (int64_t i = 0; i < n; i++) {
        data[i] = argv[3 + i];
        lens[i] = strlen(argv[3 + i]);
    }
    TFM_Tensor *x = tfmini_tensor_new_string(&n, 1, data, lens, st);
    free(data);
    free(lens);
    int nout = tfmini_model_output_count(m, f);
    TFM_Tensor **out = calloc((size_t)nout + 1, sizeof *out);
    int rc = 0;
    if (!x || tfmini_model_run(m, f, &x, 1, out, nout, st) != TFMINI_OK) {
        fprintf(stderr, "%s: %s\n", tfmini_code_name(tfmini_status_code(st)),
                tfmini_status_message(st));
        rc = 1;
    } else {
        for (int k = 0; k < nout; k++)
            print_output(k, out[k]);
    }
    for (int k = 0; k < nout; k++)
        tfmini_tensor_free(out[k]);
    free(out);
    tfmini_tensor_free(x);
    tfmini_model_free(m);
    tfmini_status_free(st);
    return rc || failed ? 1 : 0;
}
