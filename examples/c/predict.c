/* predict: load a model saved from Python, list its functions and run
 * one on numbers from the command line or stdin.
 *
 *   predict EXPORT_DIR [-s SIGNATURE] [VALUE ...]
 *
 * The values fill the function's inputs in order, row-major; the batch
 * (the unknown first dimension) is however many rows they make. With no
 * values they are read from stdin. Prints each output's name, dtype and
 * shape, then one line per row. Build (README.md beside this file):
 *
 *   cc predict.c -I<include> -L<lib> -ltfmini_rt -o predict */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfmini/tfmini.h>

static void
print_shape(FILE *f, const int64_t *dims, int rank)
{
    fputc('[', f);
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0)
            fprintf(f, "%s?", d ? "," : "");
        else
            fprintf(f, "%s%lld", d ? "," : "", (long long)dims[d]);
    }
    fputc(']', f);
}

static void
list_functions(const TFM_Model *m)
{
    int64_t dims[TFMINI_MAX_DIMS];
    for (int f = 0; f < tfmini_model_function_count(m); f++) {
        printf("function %s:", tfmini_model_function_name(m, f));
        for (int i = 0; i < tfmini_model_input_count(m, f); i++) {
            int r = tfmini_model_input_shape(m, f, i, dims, TFMINI_MAX_DIMS);
            printf(" in %s %s ", tfmini_model_input_name(m, f, i),
                   tfmini_dtype_name(tfmini_model_input_dtype(m, f, i)));
            print_shape(stdout, dims, r);
        }
        for (int i = 0; i < tfmini_model_output_count(m, f); i++) {
            int r = tfmini_model_output_shape(m, f, i, dims, TFMINI_MAX_DIMS);
            printf(" out %s %s ", tfmini_model_output_name(m, f, i),
                   tfmini_dtype_name(tfmini_model_output_dtype(m, f, i)));
            print_shape(stdout, dims, r);
        }
        putchar('\n');
    }
}

/* Element k of t as a double (the dtypes a model's outputs have). */
static double
element(const TFM_Tensor *t, int64_t k)
{
    const void *p = tfmini_tensor_data(t);
    switch (tfmini_tensor_dtype(t)) {
    case TFMINI_FLOAT32: return ((const float *)p)[k];
    case TFMINI_FLOAT64: return ((const double *)p)[k];
    case TFMINI_INT32: return ((const int32_t *)p)[k];
    case TFMINI_INT64: return (double)((const int64_t *)p)[k];
    case TFMINI_UINT8: return ((const uint8_t *)p)[k];
    case TFMINI_BOOL: return ((const uint8_t *)p)[k];
    default: return 0.0 / 0.0;
    }
}

static void
print_output(const char *name, const TFM_Tensor *t)
{
    int rank = tfmini_tensor_rank(t);
    int64_t dims[TFMINI_MAX_DIMS];
    for (int d = 0; d < rank; d++)
        dims[d] = tfmini_tensor_dim(t, d);
    printf("%s %s ", name, tfmini_dtype_name(tfmini_tensor_dtype(t)));
    print_shape(stdout, dims, rank);
    putchar('\n');
    int64_t n = tfmini_tensor_element_count(t);
    int64_t row = rank > 1 && dims[0] > 0 ? n / dims[0] : n;
    for (int64_t k = 0; k < n; k++)
        printf("%.9g%c", element(t, k), (k + 1) % row == 0 ? '\n' : ' ');
}

/* Values from argv, or from stdin when there are none. */
static double *
read_values(int argc, char **argv, int *n)
{
    size_t cap = 64, len = 0;
    double *v = malloc(cap * sizeof *v);
    double x;
    for (int i = 0; v; i++) {
        if (argc > 0) {
            if (i == argc)
                break;
            char *end;
            x = strtod(argv[i], &end);
            if (end == argv[i] || *end) {
                fprintf(stderr, "predict: not a number: %s\n", argv[i]);
                free(v);
                return NULL;
            }
        } else if (scanf("%lf", &x) != 1) {
            break;
        }
        if (len == cap) {
            double *w = realloc(v, (cap *= 2) * sizeof *v);
            if (!w)
                free(v);
            v = w;
            if (!v)
                break;
        }
        v[len++] = x;
    }
    *n = (int)len;
    return v;
}

/* A tensor of input i's dtype and shape (batch rows) from vals. */
static TFM_Tensor *
make_input(const TFM_Model *m, int f, int i, int64_t batch,
           const double *vals, TFM_Status *st)
{
    int64_t dims[TFMINI_MAX_DIMS], n = 1;
    int rank = tfmini_model_input_shape(m, f, i, dims, TFMINI_MAX_DIMS);
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0)
            dims[d] = d == 0 ? batch : 1;
        n *= dims[d];
    }
    TFM_DataType dt = tfmini_model_input_dtype(m, f, i);
    size_t es = tfmini_dtype_size(dt);
    char *buf = malloc((size_t)n * es + 1);
    if (!buf)
        return NULL;
    for (int64_t k = 0; k < n; k++) {
        switch (dt) {
        case TFMINI_FLOAT32: ((float *)buf)[k] = (float)vals[k]; break;
        case TFMINI_FLOAT64: ((double *)buf)[k] = vals[k]; break;
        case TFMINI_INT32: ((int32_t *)buf)[k] = (int32_t)vals[k]; break;
        case TFMINI_INT64: ((int64_t *)buf)[k] = (int64_t)vals[k]; break;
        default:
            fprintf(stderr, "predict: inputs of dtype %s are not read\n",
                    tfmini_dtype_name(dt));
            free(buf);
            return NULL;
        }
    }
    TFM_Tensor *t = tfmini_tensor_new(dt, dims, rank, buf, (size_t)n * es, st);
    free(buf);
    return t;
}

/* Elements per batch row of input i (its known dims past the first). */
static int64_t
row_size(const TFM_Model *m, int f, int i)
{
    int64_t dims[TFMINI_MAX_DIMS], n = 1;
    int rank = tfmini_model_input_shape(m, f, i, dims, TFMINI_MAX_DIMS);
    for (int d = 1; d < rank; d++)
        n *= dims[d] < 0 ? 1 : dims[d];
    return n;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: predict EXPORT_DIR [-s SIGNATURE] "
                "[VALUE ...]\n(runtime %s, header %s)\n", tfmini_version(),
                TFMINI_RT_VERSION);
        return 2;
    }
    if (atoi(tfmini_version()) != TFMINI_RT_VERSION_MAJOR) {
        fprintf(stderr, "predict: built for tfmini_rt %s, runs with %s\n",
                TFMINI_RT_VERSION, tfmini_version());
        return 2;
    }
    const char *sig = "serving_default";
    int first = 2;
    if (argc > 3 && strcmp(argv[2], "-s") == 0) {
        sig = argv[3];
        first = 4;
    }
    TFM_Status *st = tfmini_status_new();
    TFM_Model *m = tfmini_model_load(argv[1], st);
    int rc = 1;
    double *vals = NULL;
    TFM_Tensor *in[16] = {0}, *out[16] = {0};
    int nin = 0, nout = 0;
    if (!m) {
        fprintf(stderr, "predict: %s: %s\n",
                tfmini_code_name(tfmini_status_code(st)),
                tfmini_status_message(st));
        goto done;
    }
    list_functions(m);
    int f = tfmini_model_find(m, sig);
    if (f < 0) {
        fprintf(stderr, "predict: the model has no function '%s'\n", sig);
        goto done;
    }
    nin = tfmini_model_input_count(m, f);
    nout = tfmini_model_output_count(m, f);
    if (nin > 16 || nout > 16) {
        fprintf(stderr, "predict: '%s' has too many inputs or outputs\n",
                sig);
        goto done;
    }
    int nvals;
    if (!(vals = read_values(argc - first, argv + first, &nvals)))
        goto done;
    int64_t per_row = 0;
    for (int i = 0; i < nin; i++)
        per_row += row_size(m, f, i);
    if (nin > 0 && (nvals == 0 || nvals % per_row)) {
        fprintf(stderr, "predict: '%s' takes rows of %lld values in all, "
                "got %d values\n", sig, (long long)per_row, nvals);
        goto done;
    }
    int64_t batch = nin > 0 ? nvals / per_row : 0;
    const double *at = vals;
    for (int i = 0; i < nin; i++) {
        if (!(in[i] = make_input(m, f, i, batch, at, st))) {
            fprintf(stderr, "predict: input %s: %s\n",
                    tfmini_model_input_name(m, f, i),
                    tfmini_status_message(st));
            goto done;
        }
        at += batch * row_size(m, f, i);
    }
    if (tfmini_model_run(m, f, in, nin, out, nout, st) != TFMINI_OK) {
        fprintf(stderr, "predict: %s: %s\n",
                tfmini_code_name(tfmini_status_code(st)),
                tfmini_status_message(st));
        goto done;
    }
    for (int k = 0; k < nout; k++)
        print_output(tfmini_model_output_name(m, f, k), out[k]);
    rc = 0;
done:
    for (int i = 0; i < 16; i++) {
        tfmini_tensor_free(in[i]);
        tfmini_tensor_free(out[i]);
    }
    free(vals);
    tfmini_model_free(m);
    tfmini_status_free(st);
    return rc;
}
