/* Random kernels on the CPU, all over Philox4x32-10 (philox.h).
 *
 * Note [Random streams]
 * ~~~~~~~~~~~~~~~~~~~~~
 * A call's numbers are a pure function of its attrs: the Philox key is
 * the seed (i[0]), and the 64-bit stream half of the counter mixes seed2
 * (i[1]) with the call counter (i[2]) that the Python layer advances per
 * (seed, seed2) pair, so repeated eager calls with one seed differ, and
 * tf.random.set_seed (which resets the counters) replays them. Element e
 * comes from block e / k of the stream (k values per 4-word block), so
 * blocks are filled in parallel with the same result on any thread
 * count.
 *
 * A traced op has fixed attrs, but each run of the graph must draw new
 * numbers, as TF's stateful kernels do: such ops carry an instance id in
 * i[3], and this file counts the runs of each instance in a small table
 * (the only state here; never shrinks, one entry per traced random op)
 * and mixes the run number into the stream. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loops.h"
#include "philox.h"
#include "random.h"

/* for (int64_t VAR = 0; VAR < COUNT; VAR++) { body }, on all cores when
 * BIG. A parallel region whose if() is false still costs microseconds in
 * libgomp once its thread pool exists, so small loops never enter one.
 * (A candidate for loops.h, shared with the other families.) */
#ifndef TFM_PAR_FOR
#define TFM_PAR_FOR(BIG, VAR, COUNT, ...)                                    \
    do {                                                                     \
        int64_t VAR##_count = (COUNT);                                       \
        if (BIG) {                                                           \
            _Pragma("omp parallel for schedule(static)")                     \
            for (int64_t VAR = 0; VAR < VAR##_count; VAR++) {                \
                __VA_ARGS__                                                  \
            }                                                                \
        } else {                                                             \
            for (int64_t VAR = 0; VAR < VAR##_count; VAR++) {                \
                __VA_ARGS__                                                  \
            }                                                                \
        }                                                                    \
    } while (0)
#endif

/* ---- per-instance run counts (graph mode) ---------------------------- */

typedef struct run_count {
    int64_t instance;    /* 0 = empty slot */
    uint64_t runs;
} run_count;

static run_count *runs_table;
static size_t runs_cap;  /* power of two */
static size_t runs_used;

/* Number of earlier runs of instance, then counts this one; under a lock
 * because graph kernels may run without the interpreter lock. */
static tfm_code
next_run(int64_t instance, uint64_t *run)
{
    tfm_code rc = TFM_OK;
    #pragma omp critical(tfm_random_runs)
    {
        if (2 * (runs_used + 1) > runs_cap) {
            size_t cap = runs_cap ? 2 * runs_cap : 64;
            run_count *t = calloc(cap, sizeof *t);
            if (!t) {
                rc = TFM_ERR_RESOURCE_EXHAUSTED;
            } else {
                for (size_t i = 0; i < runs_cap; i++) {
                    if (!runs_table[i].instance)
                        continue;
                    size_t h = tfm_mix64((uint64_t)runs_table[i].instance)
                               & (cap - 1);
                    while (t[h].instance)
                        h = (h + 1) & (cap - 1);
                    t[h] = runs_table[i];
                }
                free(runs_table);
                runs_table = t;
                runs_cap = cap;
            }
        }
        if (!rc) {
            size_t h = tfm_mix64((uint64_t)instance) & (runs_cap - 1);
            while (runs_table[h].instance &&
                   runs_table[h].instance != instance)
                h = (h + 1) & (runs_cap - 1);
            if (!runs_table[h].instance) {
                runs_table[h].instance = instance;
                runs_used++;
            }
            *run = runs_table[h].runs++;
        }
    }
    if (rc)
        return tfm_error(rc, "random op: out of memory for the run table");
    return TFM_OK;
}

typedef struct stream {
    tfm_philox_key key;
    uint64_t id;
} stream;

static tfm_code
stream_of(const tfm_attrs *a, stream *s)
{
    uint64_t seed = (uint64_t)a->i[0];
    uint64_t run = 0;
    if (a->i[3] > 0) {
        tfm_code rc = next_run(a->i[3], &run);
        if (rc)
            return rc;
    }
    s->key.k[0] = (uint32_t)seed;
    s->key.k[1] = (uint32_t)(seed >> 32);
    /* The instance id itself stays out of the stream: the first run of
     * a traced op draws what the same call would draw eagerly, and a
     * retrace after tf.random.set_seed replays it, as in TF. */
    s->id = tfm_mix64((uint64_t)a->i[1] ^
                      tfm_mix64((uint64_t)a->i[2] ^ tfm_mix64(run)));
    return TFM_OK;
}

/* Runs the body for each block b of nblocks, in parallel when n is big;
 * the body (the variadic part) sees `w[4]`, the block's words, and `b`. */
#define FOR_BLOCKS(n, nblocks, s, ...)                                       \
    TFM_PAR_FOR((n) >= TFM_PAR_MIN, b, (nblocks),                            \
        uint32_t w[4];                                                       \
        tfm_philox((s).key, (uint64_t)b, (s).id, w);                         \
        __VA_ARGS__                                                          \
    )

static const double TWO_PI = 6.283185307179586;

/* ---- normal ------------------------------------------------------------ */

/* Box-Muller on (0, 1] x [0, 1). */
static inline void
box_muller_f(uint32_t x, uint32_t y, float *z0, float *z1)
{
    float u1 = ((float)(x >> 8) + 1.0f) * 0x1.0p-24f;
    float u2 = tfm_u01f(y);
    float r = sqrtf(-2.0f * logf(u1));
    float t = (float)TWO_PI * u2;
    *z0 = r * cosf(t);
    *z1 = r * sinf(t);
}

static inline void
box_muller_d(const uint32_t w[4], double *z0, double *z1)
{
    double u1 = tfm_u01d(w[0], w[1]) + 0x1.0p-53;
    double u2 = tfm_u01d(w[2], w[3]);
    double r = sqrt(-2.0 * log(u1));
    double t = TWO_PI * u2;
    *z0 = r * cos(t);
    *z1 = r * sin(t);
}

tfm_code
tfm_k_random_normal(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    (void)op; (void)in; (void)nin; (void)nout;
    stream s;
    tfm_code rc = stream_of(a, &s);
    if (rc)
        return rc;
    int64_t n = tfm_tensor_numel(out[0]);
    if (out[0]->dtype == TFM_FLOAT32) {
        float *o = tfm_tensor_data(out[0]);
        float mean = (float)a->f[0], sd = (float)a->f[1];
        FOR_BLOCKS(n, (n + 3) / 4, s, {
            float z[4];
            box_muller_f(w[0], w[1], &z[0], &z[1]);
            box_muller_f(w[2], w[3], &z[2], &z[3]);
            for (int j = 0; j < 4 && 4 * b + j < n; j++)
                o[4 * b + j] = mean + sd * z[j];
        });
    } else {
        double *o = tfm_tensor_data(out[0]);
        double mean = a->f[0], sd = a->f[1];
        FOR_BLOCKS(n, (n + 1) / 2, s, {
            double z[2];
            box_muller_d(w, &z[0], &z[1]);
            for (int j = 0; j < 2 && 2 * b + j < n; j++)
                o[2 * b + j] = mean + sd * z[j];
        });
    }
    return TFM_OK;
}

/* Element e of a truncated normal tries blocks (attempt << 48 | e) of the
 * stream until one of the block's two draws lies within 2 stddevs (each
 * attempt fails with probability 0.2%), so elements stay independent of
 * each other and of the thread count. */
static inline double
truncated_draw(const stream *s, int64_t e)
{
    for (uint64_t t = 0;; t++) {
        uint32_t w[4];
        double z0, z1;
        tfm_philox(s->key, (t << 48) | (uint64_t)e, s->id, w);
        box_muller_d(w, &z0, &z1);
        if (fabs(z0) <= 2.0)
            return z0;
        if (fabs(z1) <= 2.0)
            return z1;
    }
}

tfm_code
tfm_k_truncated_normal(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    (void)op; (void)in; (void)nin; (void)nout;
    stream s;
    tfm_code rc = stream_of(a, &s);
    if (rc)
        return rc;
    int64_t n = tfm_tensor_numel(out[0]);
    double mean = a->f[0], sd = a->f[1];
    if (out[0]->dtype == TFM_FLOAT32) {
        float *o = tfm_tensor_data(out[0]);
        TFM_PAR_FOR(n >= TFM_PAR_MIN / 8, e, n,
            o[e] = (float)(mean + sd * truncated_draw(&s, e));
        );
    } else {
        double *o = tfm_tensor_data(out[0]);
        TFM_PAR_FOR(n >= TFM_PAR_MIN / 8, e, n,
            o[e] = mean + sd * truncated_draw(&s, e);
        );
    }
    return TFM_OK;
}

/* ---- uniform ----------------------------------------------------------- */

tfm_code
tfm_k_random_uniform(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    (void)op; (void)in; (void)nin; (void)nout;
    stream s;
    tfm_code rc = stream_of(a, &s);
    if (rc)
        return rc;
    int64_t n = tfm_tensor_numel(out[0]);
    if (out[0]->dtype == TFM_FLOAT32) {
        float *o = tfm_tensor_data(out[0]);
        float lo = (float)a->f[0], span = (float)(a->f[1] - a->f[0]);
        FOR_BLOCKS(n, (n + 3) / 4, s, {
            for (int j = 0; j < 4 && 4 * b + j < n; j++)
                o[4 * b + j] = lo + span * tfm_u01f(w[j]);
        });
    } else {
        double *o = tfm_tensor_data(out[0]);
        double lo = a->f[0], span = a->f[1] - a->f[0];
        FOR_BLOCKS(n, (n + 1) / 2, s, {
            for (int j = 0; j < 2 && 2 * b + j < n; j++)
                o[2 * b + j] = lo + span * tfm_u01d(w[2 * j], w[2 * j + 1]);
        });
    }
    return TFM_OK;
}

/* Integers in [lo, hi) as lo + (random % span): the bias of the modulo
 * is below span / 2^32 (int32) or span / 2^64 (int64), as in TF. */
tfm_code
tfm_k_random_uniform_int(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout)
{
    (void)op; (void)in; (void)nin; (void)nout;
    stream s;
    tfm_code rc = stream_of(a, &s);
    if (rc)
        return rc;
    int64_t n = tfm_tensor_numel(out[0]);
    uint64_t span = (uint64_t)a->i[5] - (uint64_t)a->i[4];
    if (out[0]->dtype == TFM_INT32) {
        int32_t *o = tfm_tensor_data(out[0]);
        /* sp == 0: the full 2^32 range of int32. */
        uint32_t lo = (uint32_t)a->i[4], sp = (uint32_t)span;
        FOR_BLOCKS(n, (n + 3) / 4, s, {
            for (int j = 0; j < 4 && 4 * b + j < n; j++)
                o[4 * b + j] = (int32_t)(lo + (sp ? w[j] % sp : w[j]));
        });
    } else {
        int64_t *o = tfm_tensor_data(out[0]);
        uint64_t lo = (uint64_t)a->i[4];
        FOR_BLOCKS(n, (n + 1) / 2, s, {
            for (int j = 0; j < 2 && 2 * b + j < n; j++) {
                uint64_t r = ((uint64_t)w[2 * j] << 32) | w[2 * j + 1];
                o[2 * b + j] = (int64_t)(lo + r % span);
            }
        });
    }
    return TFM_OK;
}

/* ---- shuffle ----------------------------------------------------------- */

/* Fisher-Yates over the rows (serial: each swap depends on the last),
 * then the rows are copied in parallel. */
tfm_code
tfm_k_random_shuffle(tfm_op op, tfm_tensor *const *in, int nin,
                     const tfm_attrs *a, tfm_tensor *const *out, int nout)
{
    (void)nin; (void)nout;
    const tfm_tensor *x = in[0];
    size_t nbytes = tfm_tensor_nbytes(x);
    if (x->shape.ndim == 0 || x->shape.dims[0] <= 1) {
        if (nbytes)
            memcpy(tfm_tensor_data(out[0]), tfm_tensor_data(x), nbytes);
        return TFM_OK;
    }
    stream s;
    tfm_code rc = stream_of(a, &s);
    if (rc)
        return rc;
    int64_t rows = x->shape.dims[0];
    size_t row_bytes = nbytes / (size_t)rows;
    int64_t *perm = malloc((size_t)rows * sizeof *perm);
    if (!perm)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: cannot allocate "
                         "a permutation of %lld rows", tfm_ops[op].name,
                         (long long)rows);
    for (int64_t i = 0; i < rows; i++)
        perm[i] = i;
    uint32_t w[4];
    for (int64_t i = rows - 1; i > 0; i--) {
        /* Two 64-bit draws per block; draw k of row i is block k / 2. */
        int64_t k = rows - 1 - i;
        if ((k & 1) == 0)
            tfm_philox(s.key, (uint64_t)(k / 2), s.id, w);
        int h = (int)(k & 1) * 2;
        uint64_t r = ((uint64_t)w[h] << 32) | w[h + 1];
        int64_t j = (int64_t)(r % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    const char *src = tfm_tensor_data(x);
    char *dst = tfm_tensor_data(out[0]);
    TFM_PAR_FOR((int64_t)nbytes >= 8 * TFM_PAR_MIN, i, rows,
        memcpy(dst + (size_t)i * row_bytes,
               src + (size_t)perm[i] * row_bytes, row_bytes);
    );
    free(perm);
    return TFM_OK;
}
