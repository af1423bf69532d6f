/* Reductions: the axis mask, the [A, R, B] plan (Note [Reduction plan]
 * in reduce_impl.h), the parallel driver and the Sum/Mean/Prod/Max/Min/
 * All/Any/ReduceLogSumExp kernel. The per-dtype loops are in
 * reduce_loops.c. */
#include "reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "loops.h"
#include "reduce_impl.h"

int
tfm_reduce_mask(int rank, const tfm_attrs *a, bool reduced[TFM_MAX_DIMS],
                int *bad)
{
    for (int d = 0; d < TFM_MAX_DIMS; d++)
        reduced[d] = a->i[1] && d < rank;
    if (a->i[1])
        return TFM_REDUCE_MASK_OK;
    for (int k = 0; k < a->n_ints; k++) {
        int64_t ax = a->ints[k];
        if (ax < -rank || ax >= rank) {
            *bad = k;
            return TFM_REDUCE_MASK_RANGE;
        }
        if (ax < 0)
            ax += rank;
        if (reduced[ax]) {
            *bad = k;
            return TFM_REDUCE_MASK_DUP;
        }
        reduced[ax] = true;
    }
    return TFM_REDUCE_MASK_OK;
}

void
tfm_red_plan_make(const tfm_shape *s, const bool *reduced, tfm_red_plan *p)
{
    int64_t gs[TFM_MAX_DIMS], st[TFM_MAX_DIMS];
    bool gr[TFM_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < s->ndim; d++) {
        if (s->dims[d] == 1)
            continue;
        if (m && gr[m - 1] == reduced[d]) {
            gs[m - 1] *= s->dims[d];
        } else {
            gs[m] = s->dims[d];
            gr[m++] = reduced[d];
        }
    }
    p->a = p->r = p->b = 1;
    p->gather = 0;
    p->ndim = 0;
    int i = 0;
    if (i < m && !gr[i])
        p->a = gs[i++];
    if (i < m && gr[i])
        p->r = gs[i++];
    if (i < m && !gr[i])
        p->b = gs[i++];
    if (i == m)
        return;
    /* Reduced dims in separate runs: gather kept-first, then rows. */
    p->gather = 1;
    p->a = p->r = p->b = 1;
    for (int k = m - 1; k >= 0; k--)
        st[k] = k == m - 1 ? 1 : st[k + 1] * gs[k + 1];
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < m; k++) {
            if (gr[k] != (pass == 1))
                continue;
            p->dims[p->ndim] = gs[k];
            p->strides[p->ndim++] = st[k];
            if (pass)
                p->r *= gs[k];
            else
                p->a *= gs[k];
        }
}

#define GATHER_ROW(T)                                                       \
    do {                                                                    \
        const T *s = (const T *)src + off;                                  \
        T *o = (T *)dst + r * len;                                          \
        for (int64_t j = 0; j < len; j++)                                   \
            o[j] = s[j * inner];                                            \
    } while (0)

/* complex128's 16 bytes, copied as one value. */
typedef struct {
    uint64_t w[2];
} tfm_elem16;

void
tfm_gather_strided(const void *src, void *dst, size_t es, int ndim,
                   const int64_t *dims, const int64_t *strides)
{
    int64_t len = ndim ? dims[ndim - 1] : 1;
    int64_t inner = ndim ? strides[ndim - 1] : 1;
    int64_t rows = 1;
    for (int d = 0; d < ndim - 1; d++)
        rows *= dims[d];
    if (len == 0)
        return;
    /* TFM_PAR_FOR, not omp's if(): a region whose if() is false still
     * wakes the pool (a futex call, most of a tiny reduction). */
    TFM_PAR_FOR(rows * len >= TFM_PAR_MIN, r, rows, {
        int64_t off = 0, q = r;
        for (int d = ndim - 2; d >= 0; d--) {
            off += (q % dims[d]) * strides[d];
            q /= dims[d];
        }
        switch (es) {
        case 1: GATHER_ROW(uint8_t); break;
        case 2: GATHER_ROW(uint16_t); break;
        case 4: GATHER_ROW(uint32_t); break;
        case 8: GATHER_ROW(uint64_t); break;
        default: GATHER_ROW(tfm_elem16); break;
        }
    });
}

static int
max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static inline int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Innermost reduction [A, R]: every row in blocks of TFM_RED_BLOCK whose
 * partials are combined in order, so the bits are the same whether rows
 * or blocks run in parallel. */
static tfm_code
run_rows(const tfm_reducer *rd, const char *x, size_t es, int64_t A,
         int64_t R, const tfm_acc *aux, tfm_acc *acc)
{
    int64_t nb = (R + TFM_RED_BLOCK - 1) / TFM_RED_BLOCK;
    int64_t total = A * R;
    if (nb <= 1 || A >= 4 * max_threads()) {
        TFM_PAR_FOR(total >= TFM_PAR_MIN, a, A, {
            const char *xr = x + (size_t)(a * R) * es;
            for (int64_t k = 0; k < nb; k++) {
                tfm_acc part = rd->identity;
                int64_t r0 = k * TFM_RED_BLOCK;
                rd->row(xr + (size_t)r0 * es, min64(TFM_RED_BLOCK, R - r0),
                        aux ? aux + a : NULL, &part);
                rd->comb(&acc[a], &part, 1);
            }
        });
        return TFM_OK;
    }
    tfm_acc *part = malloc((size_t)(A * nb) * sizeof *part);
    if (!part)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "reduction: out of "
                         "memory for %lld partial results",
                         (long long)(A * nb));
    #pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < A * nb; q++) {
        int64_t a = q / nb, r0 = (q % nb) * TFM_RED_BLOCK;
        part[q] = rd->identity;
        rd->row(x + (size_t)(a * R + r0) * es, min64(TFM_RED_BLOCK, R - r0),
                aux ? aux + a : NULL, &part[q]);
    }
    for (int64_t a = 0; a < A; a++)
        for (int64_t k = 0; k < nb; k++)
            rd->comb(&acc[a], &part[a * nb + k], 1);
    free(part);
    return TFM_OK;
}

/* [A, R, B] with B > 1: accumulate whole rows of B into tiles of acc
 * (vectorized across columns). With few tiles and many rows, R is split
 * into chunks with private accumulators; the split depends on the shape
 * only, never on the thread count. */
static tfm_code
run_cols(const tfm_reducer *rd, const char *x, size_t es, int64_t A,
         int64_t R, int64_t B, const tfm_acc *aux, tfm_acc *acc)
{
    int64_t nt = (B + TFM_RED_TILE - 1) / TFM_RED_TILE;
    int64_t items = A * nt, total = A * R * B, nch = 1;
    if (items < 16 && total >= TFM_PAR_MIN) {
        nch = min64(min64(total / (4 * TFM_PAR_MIN), 64), R);
        if (nch < 1)
            nch = 1;
    }
    if (nch == 1) {
        TFM_PAR_FOR(total >= TFM_PAR_MIN, q, items, {
            int64_t a = q / nt, j0 = (q % nt) * TFM_RED_TILE;
            rd->col(x + (size_t)(a * R * B + j0) * es, R,
                    min64(TFM_RED_TILE, B - j0), B,
                    aux ? aux + a * B + j0 : NULL, acc + a * B + j0);
        });
        return TFM_OK;
    }
    int64_t n = A * B, rc = (R + nch - 1) / nch;
    tfm_acc *part = malloc((size_t)(nch * n) * sizeof *part);
    if (!part)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "reduction: out of "
                         "memory for %lld partial results",
                         (long long)(nch * n));
    for (int64_t j = 0; j < nch * n; j++)
        part[j] = rd->identity;
    #pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < nch * items; q++) {
        int64_t c = q / items, it = q % items;
        int64_t a = it / nt, j0 = (it % nt) * TFM_RED_TILE;
        int64_t r0 = c * rc, rows = min64(rc, R - r0);
        if (rows <= 0)
            continue;
        rd->col(x + (size_t)((a * R + r0) * B + j0) * es, rows,
                min64(TFM_RED_TILE, B - j0), B,
                aux ? aux + a * B + j0 : NULL, part + c * n + a * B + j0);
    }
    for (int64_t c = 0; c < nch; c++)
        rd->comb(acc, part + c * n, n);
    free(part);
    return TFM_OK;
}

tfm_code
tfm_red_run(const tfm_reducer *rd, const tfm_red_plan *p, const void *x,
            size_t es, const tfm_acc *aux, tfm_acc *acc)
{
    int64_t A = p->a, R = p->r, B = p->b;
    for (int64_t j = 0; j < A * B; j++)
        acc[j] = rd->identity;
    if (A * R * B == 0)
        return TFM_OK;
    void *tmp = NULL;
    if (p->gather) {
        tmp = malloc((size_t)(A * R) * es);
        if (!tmp)
            return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "reduction: out "
                             "of memory gathering %lld elements",
                             (long long)(A * R));
        tfm_gather_strided(x, tmp, es, p->ndim, p->dims, p->strides);
        x = tmp;
    }
    tfm_code rc = B == 1 ? run_rows(rd, x, es, A, R, aux, acc)
                         : run_cols(rd, x, es, A, R, B, aux, acc);
    free(tmp);
    return rc;
}

/* ---- the kernel -------------------------------------------------------- */

#define STORE(T, EXPR)                                                      \
    do {                                                                    \
        T *o = tfm_tensor_data(y);                                          \
        TFM_PAR_FOR(n >= TFM_PAR_MIN, j, n, o[j] = (T)(EXPR););            \
    } while (0)

/* Integer results: sums and products as wrapped bits, max/min as they
 * are, means truncated toward zero (an empty mean is 0, not a trap). */
#define STORE_INT(T)                                                        \
    do {                                                                    \
        if (mean)                                                           \
            STORE(T, count ? (int64_t)acc[j].u / count : 0);                \
        else if (kind == TFM_RED_MAX || kind == TFM_RED_MIN)                \
            STORE(T, acc[j].i);                                             \
        else                                                                \
            STORE(T, (int64_t)acc[j].u);                                    \
    } while (0)

/* Unsigned results: every accumulator is the value's bits (max and min of
 * uint16/32 are non-negative int64s); a mean divides the wrapped sum. */
#define STORE_UINT(T)                                                       \
    STORE(T, mean ? (count ? acc[j].u / (uint64_t)count : 0) : acc[j].u)

static void
finish(tfm_tensor *y, tfm_red_kind kind, bool mean, const tfm_acc *acc,
       const tfm_acc *shift, int64_t n, int64_t count)
{
    switch (y->dtype) {
    case TFM_FLOAT32:
        if (shift)
            STORE(float, log(acc[j].d) + shift[j].d);
        else
            STORE(float, mean ? acc[j].d / (double)count : acc[j].d);
        break;
    case TFM_FLOAT64:
        if (shift)
            STORE(double, log(acc[j].d) + shift[j].d);
        else
            STORE(double, mean ? acc[j].d / (double)count : acc[j].d);
        break;
    case TFM_INT8: STORE_INT(int8_t); break;
    case TFM_UINT8: STORE_INT(uint8_t); break;
    case TFM_INT16: STORE_INT(int16_t); break;
    case TFM_INT32: STORE_INT(int32_t); break;
    case TFM_INT64: STORE_INT(int64_t); break;
    case TFM_UINT16: STORE_UINT(uint16_t); break;
    case TFM_UINT32: STORE_UINT(uint32_t); break;
    case TFM_UINT64: STORE_UINT(uint64_t); break;
    case TFM_BOOL: STORE(uint8_t, acc[j].i != 0); break;
    default: break;
    }
}

static tfm_red_kind
kind_of(tfm_op op)
{
    switch (op) {
    case TFM_OP_PROD: return TFM_RED_PROD;
    case TFM_OP_MAX: case TFM_OP_REDUCE_LOGSUMEXP: return TFM_RED_MAX;
    case TFM_OP_MIN: return TFM_RED_MIN;
    case TFM_OP_ALL: return TFM_RED_ALL;
    case TFM_OP_ANY: return TFM_RED_ANY;
    default: return TFM_RED_SUM;
    }
}

tfm_code
tfm_k_reduce(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    (void)nin; (void)nout;
    const tfm_tensor *x = in[0];
    tfm_tensor *y = out[0];
    bool red[TFM_MAX_DIMS];
    int bad;
    tfm_reduce_mask(x->shape.ndim, a, red, &bad);  /* checked by infer */
    int64_t n = tfm_tensor_numel(y), count = 1;
    for (int d = 0; d < x->shape.ndim; d++)
        if (red[d])
            count *= x->shape.dims[d];
    if (n == 0)
        return TFM_OK;
    if (count == 1) {
        /* Nothing to combine (axis=[] or only size-1 axes): every one of
         * these reductions of a single value is that value. */
        memcpy(tfm_tensor_data(y), tfm_tensor_data(x), tfm_tensor_nbytes(x));
        return TFM_OK;
    }
    tfm_red_kind kind = kind_of(op);
    if (tfm_dtype_is_complex(x->dtype) &&
        (kind == TFM_RED_SUM || kind == TFM_RED_PROD) &&
        op != TFM_OP_REDUCE_LOGSUMEXP) {
        tfm_red_plan p;
        tfm_red_plan_make(&x->shape, red, &p);
        return tfm_red_complex(kind, op == TFM_OP_MEAN, &p, x, y, count);
    }
    tfm_reducer rd, rexp;
    if (!tfm_reducer_get(kind, x->dtype, &rd))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel for "
                         "dtype %s", tfm_ops[op].name,
                         tfm_dtype_name(x->dtype));
    tfm_red_plan p;
    tfm_red_plan_make(&x->shape, red, &p);
    size_t es = tfm_dtype_size(x->dtype);
    tfm_acc *acc = malloc((size_t)n * sizeof *acc), *shift = NULL;
    if (!acc)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory",
                         tfm_ops[op].name);
    tfm_code rc = tfm_red_run(&rd, &p, tfm_tensor_data(x), es, NULL, acc);
    if (!rc && op == TFM_OP_REDUCE_LOGSUMEXP) {
        /* Second pass: sum exp(x - m), m = the max, or 0 where the max is
         * infinite or NaN (then the sum itself gives inf, -inf or nan). */
        shift = acc;
        for (int64_t j = 0; j < n; j++)
            if (!isfinite(shift[j].d))
                shift[j].d = 0;
        acc = malloc((size_t)n * sizeof *acc);
        if (!acc)
            rc = tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory",
                           tfm_ops[op].name);
        else if (!tfm_reducer_get(TFM_RED_SUMEXP, x->dtype, &rexp))
            rc = tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s has no kernel "
                           "for dtype %s", tfm_ops[op].name,
                           tfm_dtype_name(x->dtype));
        else
            rc = tfm_red_run(&rexp, &p, tfm_tensor_data(x), es, shift, acc);
    }
    if (!rc)
        finish(y, kind, op == TFM_OP_MEAN, acc, shift, n, count);
    free(acc);
    free(shift);
    return rc;
}
