/* The copy primitive of the shape family (tfm_copy_nd) and the kernels
 * that are nothing but a view copied: reshape, transpose, concat/stack,
 * split/unstack, tile, reverse, broadcast_to. Every kernel here moves
 * bytes by element size and so serves every dtype. */
#include "shape.h"

#include <string.h>

#include "loops.h"

#ifdef _OPENMP
#include <omp.h>
#define THREAD_ID() omp_get_thread_num()
#define THREAD_COUNT() omp_get_num_threads()
#else
#define THREAD_ID() 0
#define THREAD_COUNT() 1
#endif

/* Bytes above which a plain memcpy is split across threads. */
#define MEMCPY_PAR_MIN (1 << 20)
/* Tile edge (elements) of the transposing copy: two 32x32 tiles of
 * 8-byte elements fit in L1. */
#define TILE 32

void
tfm_row_strides(const tfm_shape *s, int64_t *strides)
{
    int64_t st = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        strides[d] = st;
        st *= s->dims[d];
    }
}

void
tfm_memcpy_par(void *dst, const void *src, size_t nbytes)
{
    if (nbytes < MEMCPY_PAR_MIN) {
        if (nbytes)
            memcpy(dst, src, nbytes);
        return;
    }
    #pragma omp parallel
    {
        size_t nt = (size_t)THREAD_COUNT(), t = (size_t)THREAD_ID();
        size_t lo = nbytes * t / nt, hi = nbytes * (t + 1) / nt;
        memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
    }
}

#define FILL_LOOP(T)                                                        \
    do {                                                                    \
        T v;                                                                \
        memcpy(&v, elem, sizeof v);                                         \
        T *o = dst;                                                         \
        TFM_PAR_FOR(n >= TFM_PAR_MIN, k, n, o[k] = v;);                    \
    } while (0)

void
tfm_fill_bytes(void *dst, const void *elem, int64_t n, size_t esz)
{
    if (n <= 0)
        return;
    int zero = 1;
    for (size_t b = 0; b < esz; b++)
        zero &= ((const unsigned char *)elem)[b] == 0;
    if (zero && (size_t)n * esz < MEMCPY_PAR_MIN) {
        memset(dst, 0, (size_t)n * esz);
        return;
    }
    switch (esz) {
    case 1: FILL_LOOP(uint8_t); break;
    case 2: FILL_LOOP(uint16_t); break;
    case 4: FILL_LOOP(uint32_t); break;
    case 8: FILL_LOOP(uint64_t); break;
    default:
        for (int64_t k = 0; k < n; k++)
            memcpy((char *)dst + k * esz, elem, esz);
    }
}

/* ---- tfm_copy_nd ---------------------------------------------------- */

typedef struct {
    int nd;
    int64_t dims[TFM_COPY_MAX_DIMS];
    int64_t ss[TFM_COPY_MAX_DIMS];   /* source strides (elements) */
    int64_t ds[TFM_COPY_MAX_DIMS];   /* destination strides (elements) */
} copy_plan;

/* Drop size-1 dims; merge a dim into the one outside it when both views
 * step across the boundary without a gap. */
static void
plan_simplify(copy_plan *p)
{
    int k = 0;
    for (int d = 0; d < p->nd; d++) {
        if (p->dims[d] == 1)
            continue;
        if (k > 0 && p->ss[k - 1] == p->ss[d] * p->dims[d] &&
            p->ds[k - 1] == p->ds[d] * p->dims[d]) {
            p->dims[k - 1] *= p->dims[d];
            p->ss[k - 1] = p->ss[d];
            p->ds[k - 1] = p->ds[d];
            continue;
        }
        p->dims[k] = p->dims[d];
        p->ss[k] = p->ss[d];
        p->ds[k] = p->ds[d];
        k++;
    }
    p->nd = k;
}

#define RUN_LOOP(T)                                                         \
    do {                                                                    \
        T *o = (T *)dst;                                                    \
        const T *i = (const T *)src;                                        \
        for (int64_t k = 0; k < n; k++)                                     \
            o[k * ds] = i[k * ss];                                          \
    } while (0)

/* One run of n elements. */
static inline void
copy_run(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n,
         size_t esz)
{
    if (ds == 1 && ss == 1) {
        memcpy(dst, src, (size_t)n * esz);
        return;
    }
    switch (esz) {
    case 1: RUN_LOOP(uint8_t); break;
    case 2: RUN_LOOP(uint16_t); break;
    case 4: RUN_LOOP(uint32_t); break;
    case 8: RUN_LOOP(uint64_t); break;
    default:
        for (int64_t k = 0; k < n; k++)
            memcpy(dst + k * ds * (int64_t)esz, src + k * ss * (int64_t)esz,
                   esz);
    }
}

/* Offsets of outer index u over dims[0..nd) (row-major). */
static inline void
outer_offsets(const copy_plan *p, int nd, int64_t u, int64_t *so,
              int64_t *dof)
{
    int64_t s = 0, o = 0;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t i = u % p->dims[d];
        u /= p->dims[d];
        s += i * p->ss[d];
        o += i * p->ds[d];
    }
    *so = s;
    *dof = o;
}

/* Rows [r0, r1) of copy_rows: thread t's share of nt. */
static void
copy_rows_part(char *dst, const char *src, const copy_plan *p,
               int64_t rows, int64_t nt, int64_t t, size_t esz)
{
    int last = p->nd - 1;
    int64_t len = p->dims[last], ss = p->ss[last], ds = p->ds[last];
    int64_t e = (int64_t)esz;
    int64_t r0 = rows / nt * t + (t < rows % nt ? t : rows % nt);
    int64_t r1 = r0 + rows / nt + (t < rows % nt);
    int64_t idx[TFM_COPY_MAX_DIMS];
    int64_t so = 0, dof = 0, r = r0;
    for (int d = last - 1; d >= 0; d--) {
        idx[d] = r % p->dims[d];
        r /= p->dims[d];
        so += idx[d] * p->ss[d];
        dof += idx[d] * p->ds[d];
    }
    for (r = r0; r < r1; r++) {
        copy_run(dst + dof * e, ds, src + so * e, ss, len, esz);
        for (int d = last - 1; d >= 0; d--) {
            so += p->ss[d];
            dof += p->ds[d];
            if (++idx[d] < p->dims[d])
                break;
            so -= p->ss[d] * p->dims[d];
            dof -= p->ds[d] * p->dims[d];
            idx[d] = 0;
        }
    }
}

/* Runs along the last dim, for every index of the dims before it. Each
 * thread takes a block of rows and steps its index incrementally. */
static void
copy_rows(char *dst, const char *src, const copy_plan *p, int64_t n,
          size_t esz)
{
    int last = p->nd - 1;
    int64_t rows = n / p->dims[last];
    if (rows == 1 && p->ss[last] == 1 && p->ds[last] == 1) {
        tfm_memcpy_par(dst, src, (size_t)n * esz);
        return;
    }
    /* A parallel region whose if() is false still wakes libgomp's pool
     * (a futex call: most of a tiny transpose or slice), so small copies
     * never enter one. */
    if (n < TFM_PAR_MIN || rows == 1) {
        copy_rows_part(dst, src, p, rows, 1, 0, esz);
        return;
    }
    #pragma omp parallel
    copy_rows_part(dst, src, p, rows, THREAD_COUNT(), THREAD_ID(), esz);
}

#define TILE_LOOP(T)                                                        \
    do {                                                                    \
        T *o = (T *)dst + dof;                                              \
        const T *s = (const T *)src + so;                                   \
        for (int64_t i = i0; i < i1; i++)                                   \
            for (int64_t j = j0; j < j1; j++)                               \
                o[i * dk + j * dl] = s[i + j * sl];                         \
    } while (0)

/* A transposing copy: dim k has source stride 1 and the last dim has
 * destination stride 1. Reading along k and writing along last both stay
 * contiguous inside a TILE x TILE block. */
static void
copy_tiled(char *dst, const char *src, const copy_plan *p, int k,
           int64_t n, size_t esz)
{
    int last = p->nd - 1;
    copy_plan outer;
    outer.nd = 0;
    for (int d = 0; d < last; d++) {
        if (d == k)
            continue;
        outer.dims[outer.nd] = p->dims[d];
        outer.ss[outer.nd] = p->ss[d];
        outer.ds[outer.nd] = p->ds[d];
        outer.nd++;
    }
    int64_t nk = p->dims[k], nl = p->dims[last];
    int64_t dk = p->ds[k], dl = p->ds[last], sl = p->ss[last];
    int64_t ktiles = (nk + TILE - 1) / TILE;
    int64_t units = n / (nk * nl) * ktiles;
    TFM_PAR_FOR(n >= TFM_PAR_MIN, u, units, {
        int64_t so, dof;
        outer_offsets(&outer, outer.nd, u / ktiles, &so, &dof);
        int64_t i0 = u % ktiles * TILE;
        int64_t i1 = i0 + TILE < nk ? i0 + TILE : nk;
        for (int64_t j0 = 0; j0 < nl; j0 += TILE) {
            int64_t j1 = j0 + TILE < nl ? j0 + TILE : nl;
            switch (esz) {
            case 1: TILE_LOOP(uint8_t); break;
            case 2: TILE_LOOP(uint16_t); break;
            case 4: TILE_LOOP(uint32_t); break;
            default: TILE_LOOP(uint64_t); break;
            }
        }
    });
}

void
tfm_copy_nd(void *dst, const int64_t *dstride, const void *src,
            const int64_t *sstride, const int64_t *dims, int ndim,
            size_t esz)
{
    copy_plan p;
    int64_t n = 1;
    p.nd = ndim;
    for (int d = 0; d < ndim; d++) {
        p.dims[d] = dims[d];
        p.ss[d] = sstride[d];
        p.ds[d] = dstride[d];
        n *= dims[d];
    }
    if (n <= 0)
        return;
    plan_simplify(&p);
    if (p.nd == 0) {
        memcpy(dst, src, esz);
        return;
    }
    int last = p.nd - 1;
    if (p.ss[last] != 1 && p.ds[last] == 1 && esz <= 8 && p.dims[last] >= 4) {
        for (int k = last - 1; k >= 0; k--) {
            if (p.ss[k] == 1 && p.dims[k] >= 4) {
                copy_tiled(dst, src, &p, k, n, esz);
                return;
            }
        }
    }
    copy_rows(dst, src, &p, n, esz);
}

void
tfm_copy_strided(void *dst, const void *src, const int64_t *sstride,
                 const int64_t *dims, int ndim, size_t esz)
{
    int64_t ds[TFM_COPY_MAX_DIMS], st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        ds[d] = st;
        st *= dims[d];
    }
    tfm_copy_nd(dst, ds, src, sstride, dims, ndim, esz);
}

/* ---- kernels ------------------------------------------------------- */

static inline size_t
esize(const tfm_tensor *t)
{
    return tfm_dtype_size(t->dtype);
}

tfm_code
tfm_k_copy(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    /* The memory plan may put a reshape's output over its input
     * (Note [Memory plan]): then there is nothing to copy. */
    if (tfm_tensor_data(out[0]) != tfm_tensor_data(in[0]))
        tfm_memcpy_par(tfm_tensor_data(out[0]), tfm_tensor_data(in[0]),
                       tfm_tensor_nbytes(out[0]));
    return TFM_OK;
}

tfm_code
tfm_k_transpose(tfm_op op, tfm_tensor *const *in, int nin,
                const tfm_attrs *a, tfm_tensor *const *out, int nout,
                const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    int64_t st[TFM_MAX_DIMS], ss[TFM_MAX_DIMS];
    tfm_row_strides(x, st);
    for (int d = 0; d < x->ndim; d++)
        ss[d] = st[a->ints[d]];
    tfm_copy_strided(tfm_tensor_data(out[0]), tfm_tensor_data(in[0]), ss,
                     out[0]->shape.dims, x->ndim, esize(in[0]));
    return TFM_OK;
}

/* ConcatV2 and Pack: each output row (the dims before the axis) is the
 * inputs' rows one after another. */
tfm_code
tfm_k_concat(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
             tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *os = &out[0]->shape;
    int64_t outer, row;
    tfm_concat_rows(os, a->i[0], &outer, &row);
    size_t esz = esize(out[0]);
    char *o = tfm_tensor_data(out[0]);
    int64_t off = 0;
    for (int i = 0; i < nin; i++) {
        int64_t chunk = outer ? tfm_tensor_numel(in[i]) / outer : 0;
        int64_t dims[2] = {outer, chunk}, ss[2] = {chunk, 1},
                ds[2] = {row, 1};
        tfm_copy_nd(o + off * (int64_t)esz, ds, tfm_tensor_data(in[i]), ss,
                    dims, 2, esz);
        off += chunk;
    }
    return TFM_OK;
}

/* Unpack, Split, SplitV: output k is a band of the input along the
 * axis. */
tfm_code
tfm_k_split(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
            tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    int64_t axis = a->i[0];
    int ax = (int)(axis < 0 ? axis + x->ndim : axis);
    int64_t outer = tfm_dims_prod(x->dims, 0, ax);
    int64_t row = tfm_dims_prod(x->dims, ax, x->ndim);
    size_t esz = esize(in[0]);
    const char *s = tfm_tensor_data(in[0]);
    int64_t off = 0;
    for (int k = 0; k < nout; k++) {
        int64_t chunk = outer ? tfm_tensor_numel(out[k]) / outer : 0;
        int64_t dims[2] = {outer, chunk}, ss[2] = {row, 1};
        tfm_copy_strided(tfm_tensor_data(out[k]), s + off * (int64_t)esz, ss,
                         dims, 2, esz);
        off += chunk;
    }
    return TFM_OK;
}

/* The output as [m0, d0, m1, d1, ...]: the m dims repeat (stride 0). */
tfm_code
tfm_k_tile(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
           tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    int64_t st[TFM_MAX_DIMS];
    int64_t dims[TFM_COPY_MAX_DIMS], ss[TFM_COPY_MAX_DIMS];
    tfm_row_strides(x, st);
    for (int d = 0; d < x->ndim; d++) {
        dims[2 * d] = a->ints[d];
        ss[2 * d] = 0;
        dims[2 * d + 1] = x->dims[d];
        ss[2 * d + 1] = st[d];
    }
    tfm_copy_strided(tfm_tensor_data(out[0]), tfm_tensor_data(in[0]), ss,
                     dims, 2 * x->ndim, esize(in[0]));
    return TFM_OK;
}

tfm_code
tfm_k_reverse(tfm_op op, tfm_tensor *const *in, int nin, const tfm_attrs *a,
              tfm_tensor *const *out, int nout, const tfm_kctx *ctx)
{
    const tfm_shape *x = &in[0]->shape;
    if (tfm_shape_numel(x) == 0)
        return TFM_OK;
    int64_t ss[TFM_MAX_DIMS];
    tfm_row_strides(x, ss);
    int64_t base = 0;
    for (int k = 0; k < a->n_ints; k++) {
        int d = (int)(a->ints[k] < 0 ? a->ints[k] + x->ndim : a->ints[k]);
        base += (x->dims[d] - 1) * ss[d];
        ss[d] = -ss[d];
    }
    size_t esz = esize(in[0]);
    tfm_copy_strided(tfm_tensor_data(out[0]),
                     (const char *)tfm_tensor_data(in[0]) +
                         base * (int64_t)esz,
                     ss, x->dims, x->ndim, esz);
    return TFM_OK;
}

tfm_code
tfm_k_broadcast_to(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_tensor *const *out, int nout,
                   const tfm_kctx *ctx)
{
    const tfm_shape *os = &out[0]->shape;
    int64_t ss[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(&in[0]->shape, os, ss);
    tfm_copy_strided(tfm_tensor_data(out[0]), tfm_tensor_data(in[0]), ss,
                     os->dims, os->ndim, esize(in[0]));
    return TFM_OK;
}
