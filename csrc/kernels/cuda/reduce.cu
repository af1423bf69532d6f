/* Sum, Mean, Max, Min and Prod over any set of axes of float32, float64,
 * float16 and bfloat16, and All / Any of bools. The 16-bit floats
 * accumulate in float32 and round once at the end (half_elt.cuh), as
 * the CPU's float32 kernel does around them. The C glue (kernels.c)
 * splits x's dims into kept ones (the output's) and reduced ones, each
 * with x's strides. Few reduced elements per output: a thread per
 * output. Many: a block per output, its threads striding over the
 * reduced elements, then a tree in shared memory. Many per output and
 * few outputs (a full reduction): each output's elements split over up
 * to 1024 blocks whose partial results, in the accumulator's type, a
 * second pass combines, so that the whole GPU reads.
 * Max/Min propagate NaN (TF >= 2.4, as the CPU kernels); empty
 * reductions give the identity, Mean of nothing NaN.
 * The per-output and per-thread work is in __host__ __device__ bodies
 * that tests/test_half_cuda_host.py runs on the host, in the launch
 * plan's order, against the CPU. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "half_elt.cuh"
#include "launch.h"

namespace {

enum { K_SUM, K_MEAN, K_MAX, K_MIN, K_PROD, K_ALL, K_ANY };

/* All and Any read bools (one byte) and combine ints. */
typedef unsigned char boolean;

template <typename S> struct red_elt {
    typedef typename tfm_math<S>::type acc;
    static __host__ __device__ acc load(S v) { return tfm_widen(v); }
};
template <> struct red_elt<boolean> {
    typedef int acc;
    static __host__ __device__ int load(boolean v) { return v != 0; }
};
/* Pass two of All / Any reads the int partials. */
template <> struct red_elt<int> {
    typedef int acc;
    static __host__ __device__ int load(int v) { return v; }
};

template <typename O, typename A>
__host__ __device__ inline O
store(A v)
{
    return tfm_narrow<O>(v);
}
template <>
__host__ __device__ inline boolean
store<boolean, int>(int v)
{
    return (boolean)(v != 0);
}

struct red_plan {
    int nkeep, nred;
    int64_t kdims[TFM_CU_MAX_DIMS], kstr[TFM_CU_MAX_DIMS];
    int64_t rdims[TFM_CU_MAX_DIMS], rstr[TFM_CU_MAX_DIMS];
    int64_t nout, count;
    int64_t divisor;          /* Mean's: the elements per output */
};

template <typename A>
__host__ __device__ inline A
identity(int kind)
{
    switch (kind) {
    case K_MAX: return (A)-INFINITY;
    case K_MIN: return (A)INFINITY;
    case K_PROD: return (A)1;
    default: return (A)0;
    }
}
template <>
__host__ __device__ inline int
identity<int>(int kind)
{
    return kind == K_ALL;
}

template <typename A>
__host__ __device__ inline A
combine(int kind, A a, A b)
{
    switch (kind) {
    case K_MAX: return (a != a || a > b) ? a : b;
    case K_MIN: return (a != a || a < b) ? a : b;
    case K_PROD: return a * b;
    default: return a + b;
    }
}
template <>
__host__ __device__ inline int
combine<int>(int kind, int a, int b)
{
    return kind == K_ALL ? a & b : a | b;
}

__host__ __device__ inline int64_t
offset(int64_t i, int nd, const int64_t *dims, const int64_t *str)
{
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t k = i % dims[d];
        i /= dims[d];
        off += k * str[d];
    }
    return off;
}

template <typename A>
__host__ __device__ inline A
finish(int kind, A acc, int64_t divisor)
{
    return kind == K_MEAN ? acc / (A)divisor : acc;
}

/* Output i of the thread-per-output kernel, finished. */
template <typename S>
__host__ __device__ typename red_elt<S>::acc
reduce_one(int kind, const S *x, const red_plan &p, int64_t i)
{
    typedef typename red_elt<S>::acc A;
    const S *base = x + offset(i, p.nkeep, p.kdims, p.kstr);
    A acc = identity<A>(kind);
    for (int64_t r = 0; r < p.count; r++)
        acc = combine(kind, acc,
                      red_elt<S>::load(base[offset(r, p.nred, p.rdims,
                                                   p.rstr)]));
    return finish(kind, acc, p.divisor);
}

/* One block thread's share of elements [lo, hi) of the output at base:
 * every step-th from lo + t. */
template <typename I>
__host__ __device__ typename red_elt<I>::acc
block_share(int kind, const I *base, const red_plan &p, int64_t lo,
            int64_t hi, int t, int step)
{
    typedef typename red_elt<I>::acc A;
    A acc = identity<A>(kind);
    /* The innermost reduced dim contiguous (the common case): no index
     * arithmetic per element. */
    if (p.nred == 1 && p.rstr[0] == 1) {
        for (int64_t r = lo + t; r < hi; r += step)
            acc = combine(kind, acc, red_elt<I>::load(base[r]));
    } else {
        for (int64_t r = lo + t; r < hi; r += step)
            acc = combine(kind, acc,
                          red_elt<I>::load(base[offset(r, p.nred, p.rdims,
                                                       p.rstr)]));
    }
    return acc;
}

const int BLOCK = 256;

/* How reduce() launches for plan p: 0 a thread per output; else blocks
 * of BLOCK threads, *chunks per output of *per elements each (chunks >
 * 1: a second pass combines each output's partials). */
__host__ __device__ inline int
launch_shape(const red_plan &p, int64_t *chunks, int64_t *per)
{
    if (p.count < 64 || p.nout >= 4096 * 32)
        return 0;
    *chunks = 1;
    if (p.count >= 65536 && p.nout < 512) {
        *chunks = (p.count + 32767) / 32768;
        int64_t most = 1024 / p.nout;
        *chunks = *chunks < most ? *chunks : most;
    }
    *per = (p.count + *chunks - 1) / *chunks;
    return 1;
}

template <typename S>
__global__ void
k_reduce_thread(int kind, const S *__restrict__ x, S *__restrict__ o,
                red_plan p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
         i < p.nout; i += (int64_t)gridDim.x * blockDim.x)
        o[i] = store<S>(reduce_one(kind, x, p, i));
}

/* Block b reduces chunk b % chunks (per elements) of output b / chunks
 * of x (elements I) into o[b] (elements O); final: finished (Mean
 * divided), else the accumulator's partial for a second pass. */
template <typename I, typename O>
__global__ void
k_reduce_block(int kind, const I *__restrict__ x, O *__restrict__ o,
               red_plan p, int64_t chunks, int64_t per, int final)
{
    typedef typename red_elt<I>::acc A;
    __shared__ A part[BLOCK];
    for (int64_t b = blockIdx.x; b < p.nout * chunks; b += gridDim.x) {
        int64_t i = b / chunks, lo = (b % chunks) * per;
        int64_t hi = lo + per < p.count ? lo + per : p.count;
        const I *base = x + offset(i, p.nkeep, p.kdims, p.kstr);
        part[threadIdx.x] = block_share(kind, base, p, lo, hi,
                                        (int)threadIdx.x, BLOCK);
        __syncthreads();
        for (int w = BLOCK / 2; w > 0; w /= 2) {
            if ((int)threadIdx.x < w)
                part[threadIdx.x] = combine(kind, part[threadIdx.x],
                                            part[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0)
            o[b] = store<O>(final ? finish(kind, part[0], p.divisor)
                                  : part[0]);
        __syncthreads();
    }
}

/* The plan of pass two: output i's partials are partial[i * chunks
 * ...]. */
__host__ __device__ inline red_plan
second_pass(const red_plan &p, int64_t chunks)
{
    red_plan q = p;
    q.nkeep = 1;
    q.kdims[0] = p.nout;
    q.kstr[0] = chunks;
    q.nred = 1;
    q.rdims[0] = chunks;
    q.rstr[0] = 1;
    q.count = chunks;
    return q;
}

/* Bytes of partial results reduce<S> needs for p (0: none). */
template <typename S>
int64_t
partial_bytes(const red_plan &p)
{
    int64_t chunks = 1, per = 0;
    if (p.nout == 0 || !launch_shape(p, &chunks, &per) || chunks == 1)
        return 0;
    return p.nout * chunks * (int64_t)sizeof(typename red_elt<S>::acc);
}

template <typename S>
int
reduce(int kind, const void *x, void *o, const red_plan &p, void *scratch,
       cudaStream_t s)
{
    typedef typename red_elt<S>::acc A;
    if (p.nout == 0)
        return 0;
    int64_t chunks = 1, per = 0;
    if (!launch_shape(p, &chunks, &per)) {
        int64_t b = (p.nout + BLOCK - 1) / BLOCK;
        unsigned g = (unsigned)(b > 65535 * 4 ? 65535 * 4 : b);
        k_reduce_thread<S><<<g, BLOCK, 0, s>>>(kind, (const S *)x, (S *)o, p);
        return (int)cudaGetLastError();
    }
    int64_t blocks = p.nout * chunks;
    unsigned g = (unsigned)(blocks > 65535 * 4 ? 65535 * 4 : blocks);
    if (chunks == 1) {
        k_reduce_block<S, S><<<g, BLOCK, 0, s>>>(kind, (const S *)x, (S *)o,
                                                 p, 1, per, 1);
        return (int)cudaGetLastError();
    }
    A *partial = (A *)scratch;
    if (!partial)
        return -1;
    k_reduce_block<S, A><<<g, BLOCK, 0, s>>>(kind, (const S *)x, partial, p,
                                             chunks, per, 0);
    k_reduce_block<A, S><<<(unsigned)p.nout, BLOCK, 0, s>>>(
        kind, partial, (S *)o, second_pass(p, chunks), 1, chunks, 1);
    return (int)cudaGetLastError();
}

/* The plan of tfm_cu_reduce's arguments (strides may be NULL: the
 * scratch query needs only the sizes); 0 when it has too many dims. */
int
plan_of(int kind, int nkeep, const int64_t *kdims, const int64_t *kstr,
        int nred, const int64_t *rdims, const int64_t *rstr, red_plan *p)
{
    if (nkeep > TFM_CU_MAX_DIMS || nred > TFM_CU_MAX_DIMS || kind < 0 ||
        kind > K_ANY)
        return 0;
    p->nkeep = nkeep;
    p->nred = nred;
    p->nout = 1;
    p->count = 1;
    for (int d = 0; d < nkeep; d++) {
        p->kdims[d] = kdims[d];
        p->kstr[d] = kstr ? kstr[d] : 0;
        p->nout *= kdims[d];
    }
    for (int d = 0; d < nred; d++) {
        p->rdims[d] = rdims[d];
        p->rstr[d] = rstr ? rstr[d] : 0;
        p->count *= rdims[d];
    }
    p->divisor = p->count;
    return 1;
}

/* f(S()) for the element type that kind and ty name; -1 for none. */
template <typename F>
int64_t
by_type(int kind, int ty, F f)
{
    if (kind >= K_ALL)
        return f(boolean());
    switch (ty) {
    case TFM_CU_F32: return f(float());
    case TFM_CU_F64: return f(double());
    case TFM_CU_F16: return f(__half());
    case TFM_CU_BF16: return f(__nv_bfloat16());
    default: return -1;
    }
}

} // namespace

extern "C" int64_t
tfm_cu_reduce_scratch(int kind, int ty, int nkeep, const int64_t *kdims,
                      int nred, const int64_t *rdims)
{
    red_plan p;
    if (!plan_of(kind, nkeep, kdims, NULL, nred, rdims, NULL, &p))
        return 0;
    int64_t n = by_type(kind, ty, [&](auto e) {
        return partial_bytes<decltype(e)>(p);
    });
    return n > 0 ? n : 0;
}

/* ty: TFM_CU_F32, _F64, _F16, _BF16 for kinds 0-4; kinds 5 All and 6
 * Any read bools whatever ty says. */
extern "C" int
tfm_cu_reduce(int kind, int ty, const void *x, void *o, int nkeep,
              const int64_t *kdims, const int64_t *kstr, int nred,
              const int64_t *rdims, const int64_t *rstr, void *scratch,
              void *stream)
{
    red_plan p;
    if (!plan_of(kind, nkeep, kdims, kstr, nred, rdims, rstr, &p))
        return -1;
    cudaStream_t s = (cudaStream_t)stream;
    return (int)by_type(kind, ty, [&](auto e) {
        return (int64_t)reduce<decltype(e)>(kind, x, o, p, scratch, s);
    });
}
