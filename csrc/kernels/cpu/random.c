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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "loops.h"
#include "philox.h"
#include "random.h"

/* libmvec's log/sin/cos: the Box-Muller loops below run 16 or 8 lanes
 * per call. */
#include "mvec.h"

/* ---- per-instance run counts (graph mode) ---------------------------- */

typedef struct run_count {
    int64_t instance;    /* 0 = empty slot */
    uint64_t runs;
} run_count;

static run_count *runs_table;
static size_t runs_cap;  /* power of two */
static size_t runs_used;

/* Guards the table: graph kernels of several threads may run at once
 * without the interpreter lock. A pthread mutex, not an OpenMP critical
 * section: it must hold in a build without OpenMP too, and be visible to
 * ThreadSanitizer (libgomp is not instrumented). */
static pthread_mutex_t runs_lock = PTHREAD_MUTEX_INITIALIZER;

/* Number of earlier runs of instance, then counts this one. */
static tfm_code
next_run(int64_t instance, uint64_t *run)
{
    tfm_code rc = TFM_OK;
    pthread_mutex_lock(&runs_lock);
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
    pthread_mutex_unlock(&runs_lock);
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

/* ---- chunks of blocks, vectorized --------------------------------------- */

/* Blocks per chunk: the chunk's Philox words are made 64 blocks at a time
 * in structure-of-arrays form, so the 10 rounds run as vector multiplies,
 * and then turned into numbers by plain (vector) loops. */
#define CHUNK_BLOCKS 64

static void
philox_words(const stream *s, uint64_t b0, uint32_t *restrict w)
{
    const int nb = CHUNK_BLOCKS;
    uint32_t c0[CHUNK_BLOCKS], c1[CHUNK_BLOCKS], c2[CHUNK_BLOCKS],
             c3[CHUNK_BLOCKS];
    uint32_t k0 = s->key.k[0], k1 = s->key.k[1];
    #pragma omp simd
    for (int k = 0; k < nb; k++) {
        uint64_t b = b0 + (uint64_t)k;
        c0[k] = (uint32_t)b;
        c1[k] = (uint32_t)(b >> 32);
        c2[k] = (uint32_t)s->id;
        c3[k] = (uint32_t)(s->id >> 32);
    }
    for (int r = 0; r < 10; r++) {     /* tfm_philox_round, lane-wise */
        #pragma omp simd
        for (int k = 0; k < nb; k++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * c0[k];
            uint64_t p1 = (uint64_t)0xCD9E8D57u * c2[k];
            uint32_t r0 = (uint32_t)(p1 >> 32) ^ c1[k] ^ k0;
            uint32_t r2 = (uint32_t)(p0 >> 32) ^ c3[k] ^ k1;
            c0[k] = r0;
            c1[k] = (uint32_t)p1;
            c2[k] = r2;
            c3[k] = (uint32_t)p0;
        }
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    for (int k = 0; k < nb; k++) {
        w[4 * k] = c0[k];
        w[4 * k + 1] = c1[k];
        w[4 * k + 2] = c2[k];
        w[4 * k + 3] = c3[k];
    }
}

/* Runs the body for each chunk of the n outputs, PER outputs per block,
 * in parallel when n is big. The body (the variadic part) sees `w`, the
 * chunk's words (4 per block, block-major), `e0`, its first output, and
 * `len`, its number of outputs. A chunk always makes all its words, and
 * the transforms below run over all of them, whatever len: with libm
 * calls, a vector lane and a scalar tail differ in the last bits, and
 * output e must not depend on how many outputs were asked for. */
#define FOR_CHUNKS(n, PER, s, ...)                                           \
    do {                                                                     \
        int64_t per_chunk_ = (int64_t)CHUNK_BLOCKS * (PER);                  \
        TFM_PAR_FOR((n) >= TFM_PAR_MIN, c_,                                  \
                    ((n) + per_chunk_ - 1) / per_chunk_,                     \
            uint32_t w[4 * CHUNK_BLOCKS];                                    \
            int64_t e0 = c_ * per_chunk_;                                    \
            int64_t len = (n) - e0 < per_chunk_ ? (n) - e0 : per_chunk_;     \
            philox_words(&(s), (uint64_t)c_ * CHUNK_BLOCKS, w);              \
            __VA_ARGS__                                                      \
        );                                                                   \
    } while (0)

static const double TWO_PI = 6.283185307179586;
/* r sin(t) as r cos(t - pi/2): GCC fuses sin(t) and cos(t) into a scalar
 * sincos call, which has no vector version; sin(t) = cos(t - pi/2) keeps
 * both in libmvec (and the pair stays independent normals). */
static const double HALF_PI = 1.5707963267948966;
#define HALF_PI_F 1.5707964f

/* ---- normal ------------------------------------------------------------ */

/* Box-Muller on (0, 1] x [0, 1): outputs 2i and 2i+1 of a chunk come
 * from words 2i and 2i+1 (float32), or from block i (float64). */
static inline void
box_muller_d(const uint32_t w[4], double *z0, double *z1)
{
    double u1 = tfm_u01d(w[0], w[1]) + 0x1.0p-53;
    double u2 = tfm_u01d(w[2], w[3]);
    double r = sqrt(-2.0 * log(u1));
    double t = TWO_PI * u2;
    *z0 = r * cos(t);
    *z1 = r * cos(t - HALF_PI);
}

tfm_code
tfm_k_random_normal(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
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
        FOR_CHUNKS(n, 4, s, {
            float z[4 * CHUNK_BLOCKS];
            _Pragma("omp simd")
            for (int i = 0; i < 2 * CHUNK_BLOCKS; i++) {
                float u1 = ((float)(w[2 * i] >> 8) + 1.0f) * 0x1.0p-24f;
                float u2 = tfm_u01f(w[2 * i + 1]);
                float r = sqrtf(-2.0f * logf(u1));
                float t = (float)TWO_PI * u2;
                z[2 * i] = r * cosf(t);
                z[2 * i + 1] = r * cosf(t - HALF_PI_F);
            }
            _Pragma("omp simd")
            for (int64_t k = 0; k < len; k++)
                o[e0 + k] = mean + sd * z[k];
        });
    } else {
        double *o = tfm_tensor_data(out[0]);
        double mean = a->f[0], sd = a->f[1];
        FOR_CHUNKS(n, 2, s, {
            double z[2 * CHUNK_BLOCKS];
            _Pragma("omp simd")
            for (int i = 0; i < CHUNK_BLOCKS; i++)
                box_muller_d(w + 4 * i, &z[2 * i], &z[2 * i + 1]);
            _Pragma("omp simd")
            for (int64_t k = 0; k < len; k++)
                o[e0 + k] = mean + sd * z[k];
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
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx)
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
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
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
        FOR_CHUNKS(n, 4, s, {
            _Pragma("omp simd")
            for (int64_t k = 0; k < len; k++)
                o[e0 + k] = lo + span * tfm_u01f(w[k]);
        });
    } else {
        double *o = tfm_tensor_data(out[0]);
        double lo = a->f[0], span = a->f[1] - a->f[0];
        FOR_CHUNKS(n, 2, s, {
            _Pragma("omp simd")
            for (int64_t k = 0; k < len; k++)
                o[e0 + k] = lo + span * tfm_u01d(w[2 * k], w[2 * k + 1]);
        });
    }
    return TFM_OK;
}

/* Integers in [lo, hi) as lo + (random % span): the bias of the modulo
 * is below span / 2^32 (int32) or span / 2^64 (int64), as in TF. */
tfm_code
tfm_k_random_uniform_int(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
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
        FOR_CHUNKS(n, 4, s, {
            for (int64_t k = 0; k < len; k++)
                o[e0 + k] = (int32_t)(lo + (sp ? w[k] % sp : w[k]));
        });
    } else {
        int64_t *o = tfm_tensor_data(out[0]);
        uint64_t lo = (uint64_t)a->i[4];
        FOR_CHUNKS(n, 2, s, {
            for (int64_t k = 0; k < len; k++) {
                uint64_t r = ((uint64_t)w[2 * k] << 32) | w[2 * k + 1];
                o[e0 + k] = (int64_t)(lo + r % span);
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
                     const tfm_attrs *a, tfm_tensor *const *out, int nout,
                     const tfm_kctx *ctx)
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
