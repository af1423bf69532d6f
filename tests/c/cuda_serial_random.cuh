// random.cu built for the host (nvcc, no GPU needed), its launchers
// replaced by serial loops that run its per-thread bodies over the same
// thread ranges as the real ones: one Philox block (or truncated-normal
// group) a step for the draws, the multinomial's passes in order. For
// the host harnesses of tests/test_random_cuda_host.py and
// tests/test_cuda_glue_host.py; include it instead of random.cu.
#ifndef TFM_TESTS_CUDA_SERIAL_RANDOM_CUH
#define TFM_TESTS_CUDA_SERIAL_RANDOM_CUH

#define tfm_cu_random tfm_cu_random_on_device
#define tfm_cu_random_half tfm_cu_random_half_on_device
#define tfm_cu_multinomial tfm_cu_multinomial_on_device
#include "kernels/cuda/random.cu"
#undef tfm_cu_random
#undef tfm_cu_random_half
#undef tfm_cu_multinomial

static stream_at
serial_stream(uint64_t key, uint64_t lo, uint64_t hi)
{
    stream_at s;
    s.key = key;
    s.ctr.lo = lo;
    s.ctr.hi = hi;
    return s;
}

extern "C" int
tfm_cu_random(int dist, int kind, uint64_t key, uint64_t lo, uint64_t hi,
              double p0, double p1, uint64_t ilo, uint64_t isp, void *o,
              int64_t n, void *stream)
{
    (void)stream;
    stream_at s = serial_stream(key, lo, hi);
    int64_t per = kind == TFM_CU_OUT_F32 || kind == TFM_CU_OUT_I32 ? 4 : 2;
    float f0 = (float)p0, f1 = (float)p1;
    for (int64_t b = 0; b < (n + per - 1) / per; b++) {
        switch (dist * 4 + kind) {
        case TFM_CU_UNIFORM * 4 + TFM_CU_OUT_F32:
            uniform_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_UNIFORM * 4 + TFM_CU_OUT_F64:
            uniform_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_NORMAL * 4 + TFM_CU_OUT_F32:
            normal_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_NORMAL * 4 + TFM_CU_OUT_F64:
            normal_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_TRUNCATED * 4 + TFM_CU_OUT_F32:
            truncated_f32(s, b, f0, f1, (float *)o, n); break;
        case TFM_CU_TRUNCATED * 4 + TFM_CU_OUT_F64:
            truncated_f64(s, b, p0, p1, (double *)o, n); break;
        case TFM_CU_UNIFORM_INT * 4 + TFM_CU_OUT_I32:
            uniform_i32(s, b, (uint32_t)ilo, (uint32_t)isp, (int32_t *)o,
                        n); break;
        case TFM_CU_UNIFORM_INT * 4 + TFM_CU_OUT_I64:
            uniform_i64(s, b, ilo, isp, (int64_t *)o, n); break;
        default:
            return -1;
        }
    }
    return 0;
}

extern "C" int
tfm_cu_random_half(int dist, uint64_t key, uint64_t lo, uint64_t hi,
                   float p0, float p1, uint16_t *o, int64_t n, void *stream)
{
    (void)stream;
    stream_at s = serial_stream(key, lo, hi);
    for (int64_t b = 0; b < (n + 3) / 4; b++) {
        switch (dist) {
        case TFM_CU_UNIFORM: uniform_f16(s, b, p0, p1, o, n); break;
        case TFM_CU_NORMAL: normal_f16(s, b, p0, p1, o, n); break;
        case TFM_CU_TRUNCATED: truncated_f16(s, b, p0, p1, o, n); break;
        default: return -1;
        }
    }
    return 0;
}

extern "C" int
tfm_cu_multinomial(int ty, int wide, uint64_t key, uint64_t lo, uint64_t hi,
                   const void *x, int64_t batch, int64_t classes, int64_t n,
                   double *scratch, void *o, void *stream)
{
    (void)stream;
    if (batch == 0 || n == 0)
        return 0;
    if (ty != TFM_CU_F32 && ty != TFM_CU_F64 && ty != TFM_CU_F16)
        return -1;
    stream_at s = serial_stream(key, lo, hi);
    double *cdf = scratch, *shift = scratch + batch * classes,
           *total = shift + batch;
    if (classes > MN_CHUNK) {
        /* As the launcher: chunk maxima in cdf, then one per row. */
        int64_t chunks = (classes + MN_CHUNK - 1) / MN_CHUNK;
        for (int64_t e = 0; e < batch * chunks; e++)
            mn_shift_part(x, ty, e, classes, chunks, cdf);
        for (int64_t b = 0; b < batch; b++)
            mn_shift_join(cdf, b, chunks, shift);
    } else {
        for (int64_t b = 0; b < batch; b++)
            mn_shift(x, ty, b, classes, shift);
    }
    for (int64_t e = 0; e < batch * classes; e++)
        mn_weight(x, ty, e, classes, shift, cdf);
    for (int64_t b = 0; b < batch; b++)
        mn_scan(cdf, b, classes, total);
    int64_t m_end = batch * n;
    for (int64_t t = 0; t < (m_end + 1) / 2; t++)
        mn_samples(s, t, cdf, total, classes, n, m_end, wide, o);
    return 0;
}

#endif
