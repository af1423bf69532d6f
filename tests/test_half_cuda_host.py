"""reduce.cu's bodies, run on the host (issue 21): the GPU's reductions
(Sum, Mean, Max, Min, Prod of float32/float64/float16/bfloat16, All and
Any of bools) are thin kernels over __host__ __device__ bodies (one
output's thread-per-output loop, one block thread's share, the tree's
combine, the launch plan, the second pass's plan), so a host build of
reduce.cu (nvcc, no GPU needed) can run them serially in the order the
launcher would, over every path (a thread per output, a block per
output, split outputs with a second pass over float32 partials), and
compare with the CPU kernels. The 16-bit floats accumulate in float32
and round once; the CPU computes them in float32 (its sums pairwise
into double) and rounds once, so both lie within one rounding of the
16-bit type plus float32's accumulation error of the exact result; Max,
Min, All and Any are exact. nn.cu (softmax, log-softmax, the cross
entropies) and norm.cu (_LayerNorm(Grad), _SoftmaxGrad) split each slice's
work into host-device phases between the block's reductions; their host
builds run the phases thread by thread, the reductions between them in
order, against the CPU kernels in all four float types.
tests/gpu/test_gpu_mixed.py runs the kernels on a GPU."""
import subprocess

import numpy as np
import pytest
from cuda_host_util import nvcc_program

import tfmini as tf

ml_dtypes = pytest.importorskip(
    "ml_dtypes", reason="bfloat16's NumPy type comes from ml_dtypes")


HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <vector>
#include "kernels/cuda/reduce.cu"

/* The launcher's path for plan p, each block's threads one after
 * another, then the block's tree as the kernel pairs it. */
template <typename I, typename O>
static void
blocks(int kind, const I *x, O *o, const red_plan &p, int64_t chunks,
       int64_t per, int final)
{
    typedef typename red_elt<I>::acc A;
    A part[BLOCK];
    for (int64_t b = 0; b < p.nout * chunks; b++) {
        int64_t i = b / chunks, lo = (b % chunks) * per;
        int64_t hi = lo + per < p.count ? lo + per : p.count;
        const I *base = x + offset(i, p.nkeep, p.kdims, p.kstr);
        for (int t = 0; t < BLOCK; t++)
            part[t] = block_share(kind, base, p, lo, hi, t, BLOCK);
        for (int w = BLOCK / 2; w > 0; w /= 2)
            for (int t = 0; t < w; t++)
                part[t] = combine(kind, part[t], part[t + w]);
        o[b] = store<O>(final ? finish(kind, part[0], p.divisor) : part[0]);
    }
}

template <typename S>
static int
run(int kind, const void *xv, void *ov, const red_plan &p)
{
    typedef typename red_elt<S>::acc A;
    const S *x = (const S *)xv;
    S *o = (S *)ov;
    int64_t chunks = 1, per = 0;
    if (!launch_shape(p, &chunks, &per)) {
        for (int64_t i = 0; i < p.nout; i++)
            o[i] = store<S>(reduce_one(kind, x, p, i));
        return 0;
    }
    if (chunks == 1) {
        blocks<S, S>(kind, x, o, p, 1, per, 1);
        return 1;
    }
    std::vector<A> partial((size_t)(p.nout * chunks));
    blocks<S, A>(kind, x, partial.data(), p, chunks, per, 0);
    blocks<A, S>(kind, partial.data(), o, second_pass(p, chunks), 1, chunks,
                 1);
    return 2;
}

/* argv: in out kind ty nx nkeep (kdim kstr)... nred (rdim rstr)...;
 * prints the path taken (0 thread, 1 block, 2 two passes). */
int main(int argc, char **argv)
{
    int k = 1;
    const char *in = argv[k++], *out = argv[k++];
    int kind = atoi(argv[k++]), ty = atoi(argv[k++]);
    long long nx = atoll(argv[k++]);
    red_plan p;
    p.nkeep = atoi(argv[k++]);
    p.nout = 1;
    for (int d = 0; d < p.nkeep; d++) {
        p.kdims[d] = atoll(argv[k++]);
        p.kstr[d] = atoll(argv[k++]);
        p.nout *= p.kdims[d];
    }
    p.nred = atoi(argv[k++]);
    p.count = 1;
    for (int d = 0; d < p.nred; d++) {
        p.rdims[d] = atoll(argv[k++]);
        p.rstr[d] = atoll(argv[k++]);
        p.count *= p.rdims[d];
    }
    if (k != argc)
        return 2;
    p.divisor = p.count;
    size_t es = kind >= K_ALL ? 1 : ty == TFM_CU_F64 ? 8
              : ty == TFM_CU_F32 ? 4 : 2;
    void *x = calloc((size_t)nx + 1, es), *o = calloc(p.nout + 1, es);
    FILE *f = fopen(in, "rb");
    if (!f || fread(x, es, (size_t)nx, f) != (size_t)nx)
        return 3;
    fclose(f);
    int path;
    if (kind >= K_ALL)
        path = run<boolean>(kind, x, o, p);
    else if (ty == TFM_CU_F32)
        path = run<float>(kind, x, o, p);
    else if (ty == TFM_CU_F64)
        path = run<double>(kind, x, o, p);
    else if (ty == TFM_CU_F16)
        path = run<__half>(kind, x, o, p);
    else
        path = run<__nv_bfloat16>(kind, x, o, p);
    f = fopen(out, "wb");
    fwrite(o, es, (size_t)p.nout, f);
    fclose(f);
    printf("%d\n", path);
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return nvcc_program(tmp_path_factory, "half_cu", HARNESS)


KINDS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4, "all": 5,
         "any": 6}
TY = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "bool": 0}
ND = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
      "bfloat16": ml_dtypes.bfloat16, "bool": np.bool_}
# The 16-bit types' unit roundoff (half an ulp, relative).
U = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24,
     "float64": 2.0 ** -53}
# Half the spacing of the subnormals: the rounding error's floor.
TINY = {"float16": 2.0 ** -25, "bfloat16": 2.0 ** -134,
        "float32": 2.0 ** -150, "float64": 2.0 ** -1075}
TF = {"sum": tf.reduce_sum, "mean": tf.reduce_mean, "max": tf.reduce_max,
      "min": tf.reduce_min, "prod": tf.reduce_prod, "all": tf.reduce_all,
      "any": tf.reduce_any}


def _gpu(harness, kind, dtype, x, axes):
    """The launcher's result for x reduced over axes (kernels.c's split:
    dims of 1 dropped, the rest kept or reduced with x's strides), and
    the path it took."""
    exe, d = harness
    st = [int(s // x.itemsize) for s in np.ascontiguousarray(x).strides]
    keep, red = [], []
    for k, n in enumerate(x.shape):
        if n == 1:
            continue
        (red if k in axes else keep).append((n, st[k]))
    xin, xout = d / "x.bin", d / "o.bin"
    np.ascontiguousarray(x).tofile(xin)
    args = [exe, str(xin), str(xout), str(KINDS[kind]), str(TY[dtype]),
            str(x.size), str(len(keep))]
    for n, s in keep:
        args += [str(n), str(s)]
    args.append(str(len(red)))
    for n, s in red:
        args += [str(n), str(s)]
    path = int(subprocess.run(args, capture_output=True, text=True,
                              check=True).stdout)
    shape = [n for k, n in enumerate(x.shape) if k not in axes]
    return np.fromfile(xout, ND[dtype]).reshape(shape), path


def _cpu(kind, x, axes):
    with tf.device("/CPU:0"):
        return TF[kind](tf.constant(x), axis=list(axes)).numpy()


def _data(dtype, shape, kind, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < (0.97 if kind == "all" else 0.03)
    if kind == "prod":          # near 1, so that products stay finite
        v = 1 + 0.02 * rng.standard_normal(shape)
    else:
        v = rng.standard_normal(shape) * 4
    return v.astype(ND[dtype])


# (shape, axes, path): a thread per output, a block per output (strided
# and contiguous), split outputs and a second pass.
CASES = [((5, 7, 3), (1,), 0), ((6, 5, 4), (0, 2), 0), ((300, 6), (0,), 1),
         ((4, 500), (1,), 1), ((6, 70, 5), (0, 2), 0), ((70, 3, 5), (0, 2), 1),
         ((3, 70000), (1,), 2), ((140000,), (0,), 2), ((2, 1, 3), (1,), 0),
         ((40, 9), (0, 1), 1)]


def _check(kind, dtype, got, want, x, axes):
    if dtype in ("bool",) or kind in ("max", "min"):
        np.testing.assert_array_equal(got.reshape(-1).view(np.uint8),
                                      want.reshape(-1).view(np.uint8))
        return
    x64 = x.astype(np.float64)
    if kind == "prod":
        exact = np.prod(x64, axis=axes)
        mag = np.prod(np.abs(x64), axis=axes)
    else:
        exact = np.sum(x64, axis=axes)
        mag = np.sum(np.abs(x64), axis=axes)
        if kind == "mean":
            n = np.prod([x.shape[a] for a in axes])
            exact, mag = exact / n, mag / n
    n = np.prod([x.shape[a] for a in axes])
    # One rounding into dtype, float32's (or float64's) accumulation.
    acc = U["float64"] if dtype == "float64" else U["float32"]
    bound = (U[dtype] * np.abs(exact) * 1.001 + 2 * n * acc * mag
             + TINY[dtype])
    for name, v in (("gpu", got), ("cpu", want)):
        err = np.abs(v.astype(np.float64) - exact)
        assert (err <= bound).all(), (name, kind, dtype,
                                      np.max(err / bound))


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32",
                                   "float64"])
def test_float_reductions_match_cpu(harness, dtype, kind, case):
    shape, axes, path = CASES[case]
    x = _data(dtype, shape, kind, case)
    got, took = _gpu(harness, kind, dtype, x, axes)
    assert took == path
    want = _cpu(kind, x, axes)
    assert got.shape == want.shape and got.dtype == want.dtype
    _check(kind, dtype, got, want, x, axes)
    if dtype in ("float16", "bfloat16") and kind in ("sum", "mean"):
        # Both round once from nearly the same float32 value: nearly all
        # equal bit for bit.
        same = np.mean(got.reshape(-1).view(np.uint16) ==
                       want.reshape(-1).view(np.uint16))
        assert same >= 0.9, same


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("kind", ["all", "any"])
def test_all_any_match_cpu(harness, kind, case):
    shape, axes, path = CASES[case]
    x = _data("bool", shape, kind, case)
    got, took = _gpu(harness, kind, "bool", x, axes)
    assert took == path
    np.testing.assert_array_equal(got, _cpu(kind, x, axes))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", [0, 2, 5])
def test_half_max_min_propagate_nan_and_sums_round_once(harness, dtype,
                                                        case):
    shape, axes, _ = CASES[case]
    x = _data(dtype, shape, "sum", case)
    flat = x.reshape(-1)
    flat[len(flat) // 3] = np.nan
    for kind in ("max", "min", "sum"):
        got, _ = _gpu(harness, kind, dtype, x, axes)
        want = _cpu(kind, x, axes)
        np.testing.assert_array_equal(np.isnan(got.astype(np.float32)),
                                      np.isnan(want.astype(np.float32)))
        assert np.isnan(got.astype(np.float32)).any()
    # 2048 ones and one 1 in float16: each partial rounding to float16
    # would stop at 2048; float32 accumulation gives 2049 -> 2048 (even)
    # and 4097 ones give 4096 (ties to even) -- but 3000 ones give 3000.
    ones = np.ones(3000, ND[dtype])
    got, _ = _gpu(harness, "sum", dtype, ones, (0,))
    assert float(got) == float(np.array(3000.0).astype(ND[dtype]))
    assert float(got) == float(_cpu("sum", ones, (0,)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_empty_reductions_give_the_identity(harness, dtype):
    x = np.zeros((3, 0), ND[dtype])
    for kind, want in (("sum", 0.0), ("prod", 1.0), ("max", -np.inf),
                       ("min", np.inf)):
        got, _ = _gpu(harness, kind, dtype, x, (1,))
        np.testing.assert_array_equal(got.astype(np.float32),
                                      np.full(3, want, np.float32))
        np.testing.assert_array_equal(got.astype(np.float32),
                                      _cpu(kind, x, (1,)).astype(np.float32))
    got, _ = _gpu(harness, "mean", dtype, x, (1,))
    assert np.isnan(got.astype(np.float32)).all()


# ---- nn.cu: softmax, log-softmax, the two cross entropies ---------------
# The nn and norm harnesses' inputs and outputs: whole files of raw
# bytes (a short read exits 3).
FILES = r"""
static void *
slurp(const char *path, size_t nb)
{
    void *p = calloc(nb + 8, 1);
    FILE *f = fopen(path, "rb");
    if (!f || fread(p, 1, nb, f) != nb)
        exit(3);
    fclose(f);
    return p;
}

static void
spill(const char *path, const void *p, size_t nb)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, nb, f);
    fclose(f);
}
"""

NN_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "kernels/cuda/nn.cu"

/* One block's phases for each slice, its threads one after another
 * between the block's reductions (threads_for(n) of them, as launched). */
template <typename S, typename L>
static void
run(int op, const S *x, const void *lab, S *y, S *back, int64_t outer,
    int64_t n, int64_t inner)
{
    typedef typename tfm_math<S>::type A;
    int nt = threads_for(n);
    for (int64_t s = 0; s < outer * inner; s++) {
        int64_t b = base_of(s, n, inner);
        if (op >= 3) {
            int64_t label = (int64_t)((const L *)lab)[s];
            if (label < 0 || label >= n) {
                for (int t = 0; t < nt; t++)
                    sparse_bad_write(back + s * n, y + s, n, t, nt);
                continue;
            }
        }
        A m = (A)-INFINITY;
        for (int t = 0; t < nt; t++)
            m = Max()(m, part_max(x + b, n, inner, t, nt));
        double sum = 0;
        for (int t = 0; t < nt; t++)
            sum += part_sum_exp(x + b, n, inner, m, t, nt);
        if (op <= 1) {
            for (int t = 0; t < nt; t++)
                softmax_write(x + b, y + b, n, inner, m, sum, op, t, nt);
        } else if (op == 2) {
            double tot = 0;
            for (int t = 0; t < nt; t++)
                tot += xent_write(x + b, (const S *)lab + b, back + b, n,
                                  inner, m, sum, t, nt);
            y[s] = xent_loss<S>(tot);
        } else {
            int64_t label = (int64_t)((const L *)lab)[s];
            for (int t = 0; t < nt; t++)
                sparse_write(x + b, back + b, y + s, n, label, m, sum, t, nt);
        }
    }
}

""" + FILES + r"""

/* argv: op (0 Softmax, 1 LogSoftmax, 2 xent, 3 sparse int32 labels,
 * 4 sparse int64) ty outer n inner x lab out back */
int main(int argc, char **argv)
{
    if (argc != 10)
        return 2;
    int op = atoi(argv[1]), ty = atoi(argv[2]);
    int64_t outer = atoll(argv[3]), n = atoll(argv[4]);
    int64_t inner = atoll(argv[5]), slices = outer * inner;
    size_t es = ty == TFM_CU_F64 ? 8 : ty == TFM_CU_F32 ? 4 : 2;
    size_t nx = (size_t)(slices * n);
    void *x = slurp(argv[6], nx * es);
    void *lab = op == 2 ? slurp(argv[7], nx * es)
              : op >= 3 ? slurp(argv[7], (size_t)slices * (op == 3 ? 4 : 8))
              : NULL;
    size_t ny = op <= 1 ? nx : (size_t)slices;
    void *y = calloc(ny + 1, es), *back = calloc(nx + 1, es);
#define RUN(S) (op == 4 ? run<S, long long>(op, (const S *)x, lab, (S *)y,  \
                                            (S *)back, outer, n, inner)      \
                        : run<S, int>(op, (const S *)x, lab, (S *)y,          \
                                      (S *)back, outer, n, inner))
    switch (ty) {
    case TFM_CU_F32: RUN(float); break;
    case TFM_CU_F64: RUN(double); break;
    case TFM_CU_F16: RUN(__half); break;
    default: RUN(__nv_bfloat16); break;
    }
    spill(argv[8], y, ny * es);
    if (op >= 2)
        spill(argv[9], back, nx * es);
    return 0;
}
"""


@pytest.fixture(scope="module")
def nn_harness(tmp_path_factory):
    return nvcc_program(tmp_path_factory, "half_nn_cu", NN_HARNESS)


NN_OPS = {"Softmax": 0, "LogSoftmax": 1,
          "SoftmaxCrossEntropyWithLogits": 2,
          "SparseSoftmaxCrossEntropyWithLogits": 3}


def _nn_gpu(harness, op, dtype, x, axis, lab=None):
    exe, d = harness
    shape = x.shape
    axis %= len(shape)
    outer = int(np.prod(shape[:axis]))
    n, inner = shape[axis], int(np.prod(shape[axis + 1:]))
    code = NN_OPS[op] + (1 if lab is not None and lab.dtype == np.int64
                         else 0)
    files = [d / f for f in ("x.bin", "l.bin", "y.bin", "b.bin")]
    x.tofile(files[0])
    (lab if lab is not None else np.zeros(1, np.int8)).tofile(files[1])
    subprocess.run([exe, str(code), str(TY[dtype]), str(outer), str(n),
                    str(inner)] + [str(f) for f in files], check=True)
    nd = ND[dtype]
    if code <= 1:
        return [np.fromfile(files[2], nd).reshape(shape)]
    return [np.fromfile(files[2], nd).reshape(shape[:-1]),
            np.fromfile(files[3], nd).reshape(shape)]


def _nn_cpu(op, ins, **kw):
    from tfmini import _C
    from tfmini._opids import ID
    with tf.device("/CPU:0"):
        out = _C.call(ID[op], tuple(tf.constant(v) for v in ins), **kw)
    return [o.numpy() for o in (out if isinstance(out, (list, tuple))
                                else [out])]


def _nn_close(got, want, dtype):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g64), np.isnan(w64))
        rtol = {"float64": 1e-13, "float32": 2e-6}.get(dtype, 2 * U[dtype])
        np.testing.assert_allclose(g64, w64, rtol=rtol, atol=4e-6)
        if dtype in ("float16", "bfloat16") and g.size:
            # One rounding of nearly the same float32 value.
            same = np.mean(g.reshape(-1).view(np.uint16) ==
                           w.reshape(-1).view(np.uint16))
            assert same >= 0.9, same


NN_SLICES = [((4, 10), -1), ((3, 5, 7), 1), ((2, 3, 4), 0), ((2, 1100), 1),
             ((6, 1), -1), ((3, 300), -1)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32",
                                   "float64"])
@pytest.mark.parametrize("shape,axis", NN_SLICES, ids=str)
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_bodies_match_cpu(nn_harness, op, shape, axis, dtype):
    x = (np.random.default_rng(20).standard_normal(shape) * 3).astype(
        ND[dtype])
    _nn_close(_nn_gpu(nn_harness, op, dtype, x, axis),
              _nn_cpu(op, (x,), i=(axis,)), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32",
                                   "float64"])
@pytest.mark.parametrize("rows,classes", [(1, 1), (5, 10), (33, 300),
                                          (2, 1100)])
def test_cross_entropy_bodies_match_cpu(nn_harness, rows, classes, dtype):
    rng = np.random.default_rng(21)
    x = (rng.standard_normal((rows, classes)) * 2).astype(ND[dtype])
    p = rng.random((rows, classes))
    lab = (p / p.sum(-1, keepdims=True)).astype(ND[dtype])
    op = "SoftmaxCrossEntropyWithLogits"
    _nn_close(_nn_gpu(nn_harness, op, dtype, x, -1, lab),
              _nn_cpu(op, (x, lab), i=(-1,)), dtype)
    op = "SparseSoftmaxCrossEntropyWithLogits"
    for it in (np.int32, np.int64):
        idx = rng.integers(0, classes, rows).astype(it)
        _nn_close(_nn_gpu(nn_harness, op, dtype, x, -1, idx),
                  _nn_cpu(op, (x, idx)), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sparse_labels_out_of_range_give_nan_rows(nn_harness, dtype):
    # TF's GPU kernel's rule (the CPU raises instead): NaN loss and
    # backprop for that row only.
    x = np.random.default_rng(22).standard_normal((3, 5)).astype(ND[dtype])
    loss, back = _nn_gpu(nn_harness, "SparseSoftmaxCrossEntropyWithLogits",
                         dtype, x, -1, np.array([1, 5, -1], np.int32))
    loss, back = loss.astype(np.float32), back.astype(np.float32)
    assert np.isfinite(loss[0]) and np.isfinite(back[0]).all()
    assert np.isnan(loss[1:]).all() and np.isnan(back[1:]).all()


# ---- norm.cu: _LayerNorm, _LayerNormGrad, _SoftmaxGrad -------------------
NORM_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "kernels/cuda/norm.cu"

template <typename S>
static void
layer_norm(const S *x, const S *g, const S *b, S *y, int64_t rows,
           int64_t n, double eps)
{
    typedef typename tfm_math<S>::type A;
    int nt = threads_for(n);
    for (int64_t r = 0; r < rows; r++) {
        const S *xr = x + r * n;
        double s = 0, q = 0;
        for (int t = 0; t < nt; t++)
            s += part_sum(xr, n, t, nt);
        A mu = (A)(s / (double)n);
        for (int t = 0; t < nt; t++)
            q += part_sq(xr, n, mu, t, nt);
        A rs = rstd_of<A>(q, n, eps);
        for (int t = 0; t < nt; t++)
            layer_norm_write(xr, g, b, y + r * n, n, mu, rs, t, nt);
    }
}

/* col_sums.h's order: 32 partial sums over every 32nd row, then those in
 * order, rounded as its kernel stores them. */
template <typename S, typename V>
static void
col_sums(V val, S *out, int64_t rows, int64_t cols)
{
    for (int64_t c = 0; c < cols; c++) {
        double t = 0;
        for (int y = 0; y < 32; y++) {
            double s = 0;
            for (int64_t r = y; r < rows; r += 32)
                s += (double)val(r, c);
            t += s;
        }
        out[c] = (S)t;
    }
}

template <typename S>
static void
layer_norm_grad(const S *dy, const S *x, const S *g, S *dx, S *dg, S *db,
                int64_t rows, int64_t n, double eps)
{
    typedef typename tfm_math<S>::type A;
    int nt = threads_for(n);
    double *stats = (double *)calloc(2 * rows + 2, sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        const S *xr = x + r * n, *gr = dy + r * n;
        double s = 0, q = 0, sv = 0, svx = 0;
        for (int t = 0; t < nt; t++)
            s += part_sum(xr, n, t, nt);
        A mu = (A)(s / (double)n);
        for (int t = 0; t < nt; t++)
            q += part_sq(xr, n, mu, t, nt);
        A rs = rstd_of<A>(q, n, eps);
        for (int t = 0; t < nt; t++) {
            double a, b;
            ln_grad_parts(gr, xr, g, n, mu, rs, t, nt, &a, &b);
            sv += a;
            svx += b;
        }
        A mv = (A)(sv / (double)n), mvx = (A)(svx / (double)n);
        for (int t = 0; t < nt; t++)
            ln_grad_write(gr, xr, g, dx + r * n, n, mu, rs, mv, mvx, t, nt);
        stats[2 * r] = (double)mu;
        stats[2 * r + 1] = (double)rs;
    }
    col_sums(DyXhat<S>{dy, x, stats, n}, dg, rows, n);
    col_sums(Rows<S>{dy, n}, db, rows, n);
    free(stats);
}

template <typename S>
static void
softmax_grad(const S *y, const S *dy, S *dx, int64_t outer, int64_t n,
             int64_t inner)
{
    typedef typename tfm_math<S>::type A;
    int nt = threads_for(n);
    for (int64_t s = 0; s < outer * inner; s++) {
        int64_t base = (s / inner) * n * inner + s % inner;
        double acc = 0;
        for (int t = 0; t < nt; t++)
            acc += softmax_grad_part(y + base, dy + base, n, inner, t, nt);
        for (int t = 0; t < nt; t++)
            softmax_grad_write(y + base, dy + base, dx + base, n, inner,
                               (A)acc, t, nt);
    }
}

""" + FILES + r"""

/* argv: op (0 _LayerNorm: x g b -> y; 1 _LayerNormGrad: dy x g -> dx dg
 * db; 2 _SoftmaxGrad: y dy -> dx) ty a b c (rows n 0, or outer n inner)
 * eps dir: inputs dir/i0.bin ..., outputs dir/o0.bin ... */
int main(int argc, char **argv)
{
    if (argc != 9)
        return 2;
    int op = atoi(argv[1]), ty = atoi(argv[2]);
    int64_t a = atoll(argv[3]), n = atoll(argv[4]), c = atoll(argv[5]);
    double eps = atof(argv[6]);
    const char *dir = argv[7];
    (void)argv[8];
    size_t es = ty == TFM_CU_F64 ? 8 : ty == TFM_CU_F32 ? 4 : 2;
    size_t big = (size_t)(a * n * (op == 2 ? c : 1)), sm = (size_t)n;
    size_t in_n[3] = {big, op == 1 ? big : sm, sm};
    size_t out_n[3] = {big, sm, sm};
    if (op == 2)
        in_n[1] = big;
    int nin = op == 2 ? 2 : 3, nout = op == 1 ? 3 : 1;
    void *in[3], *out[3];
    char path[4096];
    for (int k = 0; k < nin; k++) {
        snprintf(path, sizeof path, "%s/i%d.bin", dir, k);
        in[k] = slurp(path, in_n[k] * es);
    }
    for (int k = 0; k < nout; k++)
        out[k] = calloc(out_n[k] + 1, es);
#define RUN(S)                                                               \
    do {                                                                     \
        if (op == 0)                                                         \
            layer_norm((const S *)in[0], (const S *)in[1], (const S *)in[2], \
                       (S *)out[0], a, n, eps);                              \
        else if (op == 1)                                                    \
            layer_norm_grad((const S *)in[0], (const S *)in[1],              \
                            (const S *)in[2], (S *)out[0], (S *)out[1],      \
                            (S *)out[2], a, n, eps);                         \
        else                                                                 \
            softmax_grad((const S *)in[0], (const S *)in[1], (S *)out[0], a, \
                         n, c);                                              \
    } while (0)
    switch (ty) {
    case TFM_CU_F32: RUN(float); break;
    case TFM_CU_F64: RUN(double); break;
    case TFM_CU_F16: RUN(__half); break;
    default: RUN(__nv_bfloat16); break;
    }
    for (int k = 0; k < nout; k++) {
        snprintf(path, sizeof path, "%s/o%d.bin", dir, k);
        spill(path, out[k], out_n[k] * es);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def norm_harness(tmp_path_factory):
    return nvcc_program(tmp_path_factory, "half_norm_cu", NORM_HARNESS)


def _norm_gpu(harness, op, dtype, ins, a, n, c, eps, out_shapes):
    exe, d = harness
    for k, v in enumerate(ins):
        np.ascontiguousarray(v).tofile(d / f"i{k}.bin")
    code = {"_LayerNorm": 0, "_LayerNormGrad": 1, "_SoftmaxGrad": 2}[op]
    subprocess.run([exe, str(code), str(TY[dtype]), str(a), str(n), str(c),
                    repr(eps), str(d), "-"], check=True)
    return [np.fromfile(d / f"o{k}.bin", ND[dtype]).reshape(s)
            for k, s in enumerate(out_shapes)]


def _norm_close(got, want, dtype, atol):
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, k
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        rtol = {"float64": 1e-12, "float32": 1e-5}.get(dtype, 2 * U[dtype])
        scale = max(1.0, float(np.max(np.abs(w64), initial=0)))
        np.testing.assert_allclose(g64, w64, rtol=rtol, atol=atol * scale,
                                   err_msg=f"out {k}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32",
                                   "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (10, 33), (4, 1025),
                                   (300, 2)], ids=str)
def test_layer_norm_bodies_match_cpu(norm_harness, shape, dtype):
    rng = np.random.default_rng(23)
    rows, n = shape
    nd = ND[dtype]
    x = (rng.standard_normal(shape) * 3 + 2).astype(nd)
    g, b = rng.standard_normal(n).astype(nd), rng.standard_normal(n).astype(nd)
    dy = rng.standard_normal(shape).astype(nd)
    eps = 1e-3
    got = _norm_gpu(norm_harness, "_LayerNorm", dtype, (x, g, b), rows, n, 1,
                    eps, [shape])
    _norm_close(got, _nn_cpu("_LayerNorm", (x, g, b), f=(eps,)), dtype,
                1e-6)
    got = _norm_gpu(norm_harness, "_LayerNormGrad", dtype, (dy, x, g), rows,
                    n, 1, eps, [shape, (n,), (n,)])
    # dx cancels; dgamma / dbeta sum up to 300 rows (double here, float32
    # on the CPU).
    _norm_close(got, _nn_cpu("_LayerNormGrad", (dy, x, g), f=(eps,)), dtype,
                1e-4 if dtype != "float64" else 1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32",
                                   "float64"])
@pytest.mark.parametrize("shape,axis", [((4, 10), -1), ((3, 5, 7), 1),
                                        ((2, 3, 4), 0), ((2, 1100), 1)],
                         ids=str)
def test_softmax_grad_bodies_match_cpu(norm_harness, shape, axis, dtype):
    rng = np.random.default_rng(24)
    nd = ND[dtype]
    with tf.device("/CPU:0"):
        y = tf.nn.softmax(tf.constant(rng.standard_normal(shape).astype(nd)),
                          axis=axis).numpy()
    dy = rng.standard_normal(shape).astype(nd)
    ax = axis % len(shape)
    outer, n = int(np.prod(shape[:ax])), shape[ax]
    inner = int(np.prod(shape[ax + 1:]))
    got = _norm_gpu(norm_harness, "_SoftmaxGrad", dtype, (y, dy), outer, n,
                    inner, 0.0, [shape])
    _norm_close(got, _nn_cpu("_SoftmaxGrad", (y, dy), i=(axis,)), dtype,
                1e-6 if dtype != "float64" else 1e-13)
