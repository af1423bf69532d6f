/* Random kernels on the CPU: TensorFlow's numbers, bit for bit.
 *
 * Note [Random streams]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Every sampling op is Philox4x32-10 (philox.h) under a 64-bit key from
 * a 128-bit counter, with the attrs (ops_random.def):
 *   i[0] = key, i[1] = counter's high 64 bits, i[2] = its low 64 bits,
 *   i[3] = instance (graph mode, below).
 * The Python layer derives them as TF does (tfmini/ops/random_ops.py):
 * the stateful ops take key = seed, counter = (offset, seed2), where the
 * offset of a (op, dtype, seed, seed2) kernel grows by 256 per output
 * drawn, as TF's GuardedPhiloxRandom reserves; the stateless ops scramble
 * their seed into key and counter (TF's GenerateKey); tf.random.Generator
 * keeps (counter, key) as its state. From there the words become numbers
 * as TF's FillPhiloxRandom does:
 *   - uniform float32, int32, normal float32: output e from word e (one
 *     block makes four; normals in Box-Muller pairs of words);
 *   - float64, int64: output e from words 2e, 2e+1 (a float64 normal
 *     pair takes one whole block);
 *   - truncated normal: outputs in groups of 4 (float32) or 2 (float64),
 *     group g reading blocks from counter + g * 256 (or 128) one word at
 *     a time until its group is full of draws with |z| < 2.
 * Each element is a scalar function of its words, so the chunks below
 * run in parallel with the same result on any number of threads.
 *
 * A traced op has fixed attrs, but each run of the graph must draw new
 * numbers, as TF's stateful kernels do: such ops carry an instance id in
 * i[3], and this file counts the runs of each instance in a small table
 * (the only state here; never shrinks, one entry per traced random op).
 * Run r starts r times one run's reservation further (256 blocks per
 * output; a shuffle's words), where a TF kernel's own generator would be
 * after r runs. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/dtype.h"
#include "loops.h"
#include "philox.h"
#include "random.h"

/* float16 as TF computes it (Eigen's half): each op in float32, rounded
 * to half after each one. */
static inline float
h(float x)
{
    return tfm_half_to_float(tfm_float_to_half(x));
}

/* z * sd + mean, rounded as TF's half ops round: two stores. */
static inline uint16_t
affine_h(float z, float sd, float mean)
{
    return tfm_float_to_half(h(h(z) * sd) + mean);
}

/* splitmix64's finalizer: spreads instance ids over the table. */
static inline uint64_t
mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

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
                    size_t h = mix64((uint64_t)runs_table[i].instance)
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
            size_t h = mix64((uint64_t)instance) & (runs_cap - 1);
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
    uint64_t key;
    tfm_philox_ctr ctr;
} stream;

/* TF reserves 256 blocks per output drawn (GuardedPhiloxRandom's
 * ReserveRandomOutputs), whatever the distribution uses. */
#define BLOCKS_PER_OUTPUT 256

tfm_code
tfm_random_stream(const tfm_attrs *a, const int64_t *state,
                  uint64_t blocks_per_run, uint64_t *key, uint64_t *ctr_lo,
                  uint64_t *ctr_hi)
{
    if (state) {
        *ctr_lo = (uint64_t)state[0];
        *ctr_hi = (uint64_t)state[1];
        *key = (uint64_t)state[2];
        return TFM_OK;
    }
    uint64_t run = 0;
    if (a->i[3] > 0) {
        tfm_code rc = next_run(a->i[3], &run);
        if (rc)
            return rc;
    }
    tfm_philox_ctr c = {(uint64_t)a->i[2], (uint64_t)a->i[1]};
    c = tfm_philox_ctr_add(c, run * blocks_per_run);
    *key = (uint64_t)a->i[0];
    *ctr_lo = c.lo;
    *ctr_hi = c.hi;
    return TFM_OK;
}

/* The stream of one call: from the state input when there is one, else
 * from the attrs, a graph run r starting r * blocks_per_run blocks
 * further. */
static tfm_code
stream_of(const tfm_attrs *a, tfm_tensor *const *in, int nin,
          uint64_t blocks_per_run, stream *s)
{
    return tfm_random_stream(a, nin == 1 ? tfm_tensor_data(in[0]) : NULL,
                             blocks_per_run, &s->key, &s->ctr.lo,
                             &s->ctr.hi);
}

/* ---- chunks of blocks, vectorized --------------------------------------- */

/* Blocks per chunk: the chunk's Philox words are made 64 blocks at a time
 * in structure-of-arrays form, so the 10 rounds run as vector multiplies. */
#define CHUNK_BLOCKS 64

static void
philox_words(const stream *s, uint64_t b0, uint32_t *restrict w)
{
    const int nb = CHUNK_BLOCKS;
    uint32_t c0[CHUNK_BLOCKS], c1[CHUNK_BLOCKS], c2[CHUNK_BLOCKS],
             c3[CHUNK_BLOCKS];
    uint32_t k0 = (uint32_t)s->key, k1 = (uint32_t)(s->key >> 32);
    #pragma omp simd
    for (int k = 0; k < nb; k++) {
        uint64_t lo = s->ctr.lo + b0 + (uint64_t)k;
        uint64_t hi = s->ctr.hi + (lo < s->ctr.lo);
        c0[k] = (uint32_t)lo;
        c1[k] = (uint32_t)(lo >> 32);
        c2[k] = (uint32_t)hi;
        c3[k] = (uint32_t)(hi >> 32);
    }
    for (int r = 0; r < 10; r++) {     /* tfm_philox's round, lane-wise */
        #pragma omp simd
        for (int k = 0; k < nb; k++) {
            uint64_t p0 = (uint64_t)TFM_PHILOX_M0 * c0[k];
            uint64_t p1 = (uint64_t)TFM_PHILOX_M1 * c2[k];
            uint32_t r0 = (uint32_t)(p1 >> 32) ^ c1[k] ^ k0;
            uint32_t r2 = (uint32_t)(p0 >> 32) ^ c3[k] ^ k1;
            c0[k] = r0;
            c1[k] = (uint32_t)p1;
            c2[k] = r2;
            c3[k] = (uint32_t)p0;
        }
        k0 += TFM_PHILOX_W0;
        k1 += TFM_PHILOX_W1;
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
 * `len`, its number of outputs. */
#define FOR_CHUNKS(n, PER, s, ...)                                           \
    do {                                                                     \
        int64_t per_chunk_ = (int64_t)CHUNK_BLOCKS * (PER);                  \
        TFM_PAR_FOR((n) >= TFM_PAR_MIN / 4, c_,                              \
                    ((n) + per_chunk_ - 1) / per_chunk_,                     \
            uint32_t w[4 * CHUNK_BLOCKS];                                    \
            int64_t e0 = c_ * per_chunk_;                                    \
            int64_t len = (n) - e0 < per_chunk_ ? (n) - e0 : per_chunk_;     \
            philox_words(&(s), (uint64_t)c_ * CHUNK_BLOCKS, w);              \
            __VA_ARGS__                                                      \
        );                                                                   \
    } while (0)

/* ---- normal ------------------------------------------------------------ */

tfm_code
tfm_k_random_normal(tfm_op op, tfm_tensor *const *in, int nin,
                    const tfm_attrs *a, tfm_tensor *const *out, int nout,
                    const tfm_kctx *ctx)
{
    (void)op; (void)nout;
    int64_t n = tfm_tensor_numel(out[0]);
    stream s;
    tfm_code rc = stream_of(a, in, nin, (uint64_t)n * BLOCKS_PER_OUTPUT,
                            &s);
    if (rc)
        return rc;
    if (out[0]->dtype == TFM_FLOAT16) {
        /* TF: float32 Box-Muller, each draw rounded to half. */
        uint16_t *o = tfm_tensor_data(out[0]);
        float mean = h((float)a->f[0]), sd = h((float)a->f[1]);
        FOR_CHUNKS(n, 4, s, {
            for (int64_t k = 0; k < len; k += 2) {
                float z0, z1;
                tfm_box_muller_f(w[k], w[k + 1], &z0, &z1);
                o[e0 + k] = affine_h(z0, sd, mean);
                if (k + 1 < len)
                    o[e0 + k + 1] = affine_h(z1, sd, mean);
            }
        });
    } else if (out[0]->dtype == TFM_FLOAT32) {
        float *o = tfm_tensor_data(out[0]);
        /* As TF: the standard sample, times stddev, plus mean, in the
         * output's dtype. */
        float mean = (float)a->f[0], sd = (float)a->f[1];
        FOR_CHUNKS(n, 4, s, {
            for (int64_t k = 0; k < len; k += 2) {
                float z0, z1;
                tfm_box_muller_f(w[k], w[k + 1], &z0, &z1);
                o[e0 + k] = z0 * sd + mean;
                if (k + 1 < len)
                    o[e0 + k + 1] = z1 * sd + mean;
            }
        });
    } else {
        double *o = tfm_tensor_data(out[0]);
        double mean = a->f[0], sd = a->f[1];
        FOR_CHUNKS(n, 2, s, {
            for (int64_t k = 0; k < len; k += 2) {
                double z0, z1;
                tfm_box_muller_d(w + 2 * k, &z0, &z1);
                o[e0 + k] = z0 * sd + mean;
                if (k + 1 < len)
                    o[e0 + k + 1] = z1 * sd + mean;
            }
        });
    }
    return TFM_OK;
}

/* TF's SingleSampleAdapter: the words of consecutive blocks, one at a
 * time. */
typedef struct word_reader {
    uint64_t key;
    tfm_philox_ctr ctr;
    uint32_t w[4];
    int used;
} word_reader;

static inline uint32_t
next_word(word_reader *r)
{
    if (r->used == 4) {
        tfm_philox(r->key, r->ctr, r->w);
        r->ctr = tfm_philox_ctr_add(r->ctr, 1);
        r->used = 0;
    }
    return r->w[r->used++];
}

/* Group g of a float32 truncated normal: four draws with |z| < 2. */
static void
truncated_group_f(const stream *s, int64_t g, float z[4])
{
    word_reader r = {s->key, tfm_philox_ctr_add(s->ctr, (uint64_t)g * 256),
                     {0}, 4};
    int got = 0;
    for (;;) {
        uint32_t x0 = next_word(&r), x1 = next_word(&r);
        float f[2];
        tfm_box_muller_f(x0, x1, &f[0], &f[1]);
        for (int i = 0; i < 2; i++) {
            if (fabsf(f[i]) < 2.0f) {
                z[got++] = f[i];
                if (got == 4)
                    return;
            }
        }
    }
}

/* Group g of a float64 truncated normal: two draws, 128 blocks apart. */
static void
truncated_group_d(const stream *s, int64_t g, double z[2])
{
    word_reader r = {s->key, tfm_philox_ctr_add(s->ctr, (uint64_t)g * 128),
                     {0}, 4};
    int got = 0;
    for (;;) {
        uint32_t x[4];
        for (int i = 0; i < 4; i++)
            x[i] = next_word(&r);
        double d[2];
        tfm_box_muller_d(x, &d[0], &d[1]);
        for (int i = 0; i < 2; i++) {
            if (fabs(d[i]) < 2.0) {
                z[got++] = d[i];
                if (got == 2)
                    return;
            }
        }
    }
}

tfm_code
tfm_k_truncated_normal(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx)
{
    (void)op; (void)nout;
    int64_t n = tfm_tensor_numel(out[0]);
    stream s;
    tfm_code rc = stream_of(a, in, nin, (uint64_t)n * BLOCKS_PER_OUTPUT,
                            &s);
    if (rc)
        return rc;
    if (out[0]->dtype == TFM_FLOAT16) {
        uint16_t *o = tfm_tensor_data(out[0]);
        float mean = h((float)a->f[0]), sd = h((float)a->f[1]);
        TFM_PAR_FOR(n >= TFM_PAR_MIN / 8, g, (n + 3) / 4,
            float z[4];
            truncated_group_f(&s, g, z);
            for (int64_t k = 0; k < 4 && 4 * g + k < n; k++)
                o[4 * g + k] = affine_h(z[k], sd, mean);
        );
    } else if (out[0]->dtype == TFM_FLOAT32) {
        float *o = tfm_tensor_data(out[0]);
        float mean = (float)a->f[0], sd = (float)a->f[1];
        TFM_PAR_FOR(n >= TFM_PAR_MIN / 8, g, (n + 3) / 4,
            float z[4];
            truncated_group_f(&s, g, z);
            for (int64_t k = 0; k < 4 && 4 * g + k < n; k++)
                o[4 * g + k] = z[k] * sd + mean;
        );
    } else {
        double *o = tfm_tensor_data(out[0]);
        double mean = a->f[0], sd = a->f[1];
        TFM_PAR_FOR(n >= TFM_PAR_MIN / 8, g, (n + 1) / 2,
            double z[2];
            truncated_group_d(&s, g, z);
            for (int64_t k = 0; k < 2 && 2 * g + k < n; k++)
                o[2 * g + k] = z[k] * sd + mean;
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
    (void)op; (void)nout;
    int64_t n = tfm_tensor_numel(out[0]);
    stream s;
    tfm_code rc = stream_of(a, in, nin, (uint64_t)n * BLOCKS_PER_OUTPUT,
                            &s);
    if (rc)
        return rc;
    if (out[0]->dtype == TFM_FLOAT16) {
        /* TF's Uint16ToHalf: ten bits of each word, k / 1024 exactly;
         * then u * (maxval - minval) + minval in half. */
        uint16_t *o = tfm_tensor_data(out[0]);
        float lo = h((float)a->f[0]), span = h(h((float)a->f[1]) - lo);
        FOR_CHUNKS(n, 4, s, {
            for (int64_t k = 0; k < len; k++) {
                float u = (float)(w[k] & 0x3ffu) * 0x1.0p-10f;
                o[e0 + k] = tfm_float_to_half(h(u * span) + lo);
            }
        });
    } else if (out[0]->dtype == TFM_FLOAT32) {
        float *o = tfm_tensor_data(out[0]);
        /* As TF: u * (maxval - minval) + minval, all in float32. */
        float lo = (float)a->f[0], span = (float)a->f[1] - lo;
        FOR_CHUNKS(n, 4, s, {
            _Pragma("omp simd")
            for (int64_t k = 0; k < len; k++)
                o[e0 + k] = tfm_u32_to_float(w[k]) * span + lo;
        });
    } else {
        double *o = tfm_tensor_data(out[0]);
        double lo = a->f[0], span = a->f[1] - a->f[0];
        FOR_CHUNKS(n, 2, s, {
            _Pragma("omp simd")
            for (int64_t k = 0; k < len; k++)
                o[e0 + k] = tfm_u64_to_double(w[2 * k], w[2 * k + 1]) *
                            span + lo;
        });
    }
    return TFM_OK;
}

/* Integers in [lo, hi) as lo + (random % span), as TF (the modulo's bias
 * is below span / 2^32 or span / 2^64); f[0] != 0 asks for the raw words,
 * the dtype's whole range (TF's UniformFullIntDistribution). */
tfm_code
tfm_k_random_uniform_int(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout, const tfm_kctx *ctx)
{
    (void)op; (void)nout;
    int64_t n = tfm_tensor_numel(out[0]);
    stream s;
    tfm_code rc = stream_of(a, in, nin, (uint64_t)n * BLOCKS_PER_OUTPUT,
                            &s);
    if (rc)
        return rc;
    int full = a->f[0] != 0.0;
    uint64_t span = full ? 0 : (uint64_t)a->i[5] - (uint64_t)a->i[4];
    if (out[0]->dtype == TFM_INT32) {
        int32_t *o = tfm_tensor_data(out[0]);
        uint32_t lo = full ? 0 : (uint32_t)a->i[4], sp = (uint32_t)span;
        FOR_CHUNKS(n, 4, s, {
            for (int64_t k = 0; k < len; k++)
                o[e0 + k] = (int32_t)(lo + (sp ? w[k] % sp : w[k]));
        });
    } else {
        int64_t *o = tfm_tensor_data(out[0]);
        uint64_t lo = full ? 0 : (uint64_t)a->i[4];
        FOR_CHUNKS(n, 2, s, {
            for (int64_t k = 0; k < len; k++) {
                uint64_t r = w[2 * k] | ((uint64_t)w[2 * k + 1] << 32);
                o[e0 + k] = (int64_t)(lo + (span ? r % span : r));
            }
        });
    }
    return TFM_OK;
}

/* ---- shuffle ----------------------------------------------------------- */

/* Fisher-Yates over the rows as TF draws it, then the rows are copied in
 * parallel. */
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
    int64_t rows = x->shape.dims[0];
    stream s;
    /* As TF: rows - 1 words, reserved in whole blocks. */
    tfm_code rc = stream_of(a, in, 0, ((uint64_t)rows + 2) / 4, &s);
    if (rc)
        return rc;
    size_t row_bytes = nbytes / (size_t)rows;
    int64_t *perm = malloc((size_t)rows * sizeof *perm);
    if (!perm)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: cannot allocate "
                         "a permutation of %lld rows", tfm_ops[op].name,
                         (long long)rows);
    for (int64_t i = 0; i < rows; i++)
        perm[i] = i;
    /* TF's RandomShuffle: row i swaps with i + (word % (rows - i)), one
     * word each, in order (serial: each swap depends on the last). */
    word_reader r = {s.key, s.ctr, {0}, 4};
    for (int64_t i = 0; i < rows - 1; i++) {
        uint64_t left = (uint64_t)(rows - i);
        uint64_t w = next_word(&r);
        if (left > UINT32_MAX)    /* beyond TF's 32-bit draws */
            w = (w << 32) | next_word(&r);
        int64_t j = i + (int64_t)(w % left);
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

/* ---- multinomial (tf.random.categorical) -------------------------------- */

/* SimplePhilox's RandDouble: 52 mantissa bits from two words (the low
 * 20 bits of the first, all of the second), as a double in [0, 1). */
static inline double
rand_double(word_reader *r)
{
    uint32_t x0 = next_word(r), x1 = next_word(r);
    uint64_t bits = (UINT64_C(1023) << 52) |
                    ((uint64_t)(x0 & 0xFFFFFu) << 32) | x1;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d - 1.0;
}

static inline double
logit_at(const tfm_tensor *t, int64_t k)
{
    switch (t->dtype) {
    case TFM_FLOAT16:
        return tfm_half_to_float(((const uint16_t *)tfm_tensor_data(t))[k]);
    case TFM_FLOAT32:
        return ((const float *)tfm_tensor_data(t))[k];
    default:
        return ((const double *)tfm_tensor_data(t))[k];
    }
}

/* TF's CPU Multinomial, one shard: each row's unnormalized CDF of
 * exp(logit - max) over its finite logits, in double; each sample the
 * first class whose CDF exceeds RandDouble() * total. The rows read one
 * word stream in turn (TF splits rows into shards only when a batch's
 * estimated cost passes 10000 cycle units, with each shard skipping
 * ahead: tfmini always runs TF's one-shard order). */
tfm_code
tfm_k_multinomial(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor *const *out, int nout,
                  const tfm_kctx *ctx)
{
    (void)op; (void)nin; (void)nout; (void)ctx;
    int64_t batch = in[0]->shape.dims[0], classes = in[0]->shape.dims[1];
    int64_t n = a->i[4];
    if (batch == 0 || n == 0)
        return TFM_OK;
    /* TF reserves 256 blocks per "output": batch * ceil4(n) * 2 doubles'
     * worth of them. */
    uint64_t reserve = (uint64_t)batch * (uint64_t)((n + 3) / 4 * 4) * 2 *
                       BLOCKS_PER_OUTPUT;
    stream s;
    tfm_code rc = stream_of(a, in, 0, reserve, &s);
    if (rc)
        return rc;
    double *cdf = malloc((size_t)classes * sizeof *cdf);
    if (!cdf)
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "Multinomial: out of "
                         "memory for a CDF of %lld classes",
                         (long long)classes);
    word_reader r = {s.key, s.ctr, {0}, 4};
    int32_t *o32 = tfm_tensor_data(out[0]);
    int64_t *o64 = tfm_tensor_data(out[0]);
    for (int64_t b = 0; b < batch; b++) {
        const int64_t row = b * classes;
        double max = -HUGE_VAL;
        int any = 0;
        for (int64_t j = 0; j < classes; j++) {
            double x = logit_at(in[0], row + j);
            if (isfinite(x) && (!any || x > max))
                max = x, any = 1;
        }
        /* TF starts max at the dtype's lowest: no finite logit leaves it
         * there, and every class then has weight 0. */
        double total = 0;
        for (int64_t j = 0; j < classes; j++) {
            double x = logit_at(in[0], row + j);
            if (isfinite(x))
                total += exp(x - (any ? max : 0));
            cdf[j] = total;
        }
        for (int64_t k = 0; k < n; k++) {
            double find = rand_double(&r) * total;
            int64_t lo = 0, hi = classes;      /* upper_bound */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (find < cdf[mid])
                    hi = mid;
                else
                    lo = mid + 1;
            }
            if (out[0]->dtype == TFM_INT32)
                o32[b * n + k] = (int32_t)lo;
            else
                o64[b * n + k] = lo;
        }
    }
    free(cdf);
    return TFM_OK;
}
