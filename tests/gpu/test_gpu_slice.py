"""kernels_slice.c's GPU kernels against the CPU's (issue 21):
StridedSlice (every mask, negative strides, empty and odd shapes, every
dtype) and its gradient through GradientTape, Slice, ReverseV2, Tile,
Split/SplitV/Unpack, PadV2, MirrorPad, ArgMax/ArgMin, Cumsum/Cumprod
and OneHot, each placed on the GPU with nothing soft-placed. Data
movement and the scans are compared bit for bit. Every test skips
without a GPU (conftest.py); the glue was checked on the host by
tests/test_slice_cuda_host.py."""
import numpy as np
import pytest

import tfmini as tf

from gpu_util import CPU_NAME, GPU, bits_equal, both, on_gpu_only

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_,
          np.float16, np.complex64, np.complex128]


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 10
    if np.issubdtype(dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


# Python slices, as users write them (tf's __getitem__ builds the masks).
SLICES = [
    ((5,), np.s_[1:4]), ((5,), np.s_[::-1]), ((5,), np.s_[-1:-6:-2]),
    ((7,), np.s_[::3]), ((7,), np.s_[::-3]), ((4, 6), np.s_[1:3, -1::-2]),
    ((4, 6), np.s_[2]), ((4, 6), np.s_[-1, 1:5:2]),
    ((3, 4, 5), np.s_[..., 1:3]), ((3, 4, 5), np.s_[None, ..., 2]),
    ((3, 4, 5), np.s_[1:2, None]), ((3, 4, 5), np.s_[2::-1, :, 1::2]),
    ((2, 3), np.s_[5:9]), ((0, 3), np.s_[:]),
    ((2, 3, 1, 4, 1, 2, 3, 2), np.s_[..., 1:, ::-1]),
    ((6, 5, 4), np.s_[5::-2, 4::-3, ::-1]), ((300, 7), np.s_[::7, 3]),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", range(len(SLICES)))
def test_strided_slice(capfd, case, dtype):
    shape, ix = SLICES[case]
    x = rand(shape, dtype, case)
    g, c, where = both(capfd, lambda: tf.constant(x)[ix])
    bits_equal(g, c)
    np.testing.assert_array_equal(c.numpy(), x[ix])
    on_gpu_only(where, ["StridedSlice"])


@pytest.mark.parametrize("case", range(len(SLICES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_slice_gradient(capfd, case, dtype):
    shape, ix = SLICES[case]
    x = rand(shape, dtype, case)

    def grad():
        v = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = v[ix]
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, v)

    g, c, where = both(capfd, grad)
    bits_equal(g, c)
    want = np.zeros_like(x)
    want[ix] = 2 * x[ix]
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-6)
    if np.prod(shape):
        on_gpu_only(where, ["StridedSliceGrad"])


def test_strided_slice_errors_are_the_cpus():
    with tf.device(GPU):
        x = tf.constant(np.zeros((3, 4), np.float32))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="out of bounds"):
            x[7]
        with pytest.raises((tf.errors.InvalidArgumentError, ValueError),
                           match="non-zero|zero"):
            x[::0]


def test_strided_slice_traced(capfd):
    @tf.function
    def f(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = v[:, 1::2][::-1]
            loss = tf.reduce_sum(y * 3.0)
        return y, tape.gradient(loss, v)

    x = rand((5, 8), np.float32)
    g, c, where = both(capfd, lambda: f(tf.constant(x)))
    bits_equal(g, c)
    want = np.zeros_like(x)
    want[:, 1::2] = 3.0
    np.testing.assert_array_equal(c[1].numpy(), want)
    on_gpu_only(where, ["StridedSlice", "StridedSliceGrad"])


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_,
                                   np.complex128],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,begin,size", [
    ((5,), [1], [3]), ((4, 6), [1, 2], [2, -1]), ((4, 6), [0, 5], [4, 1]),
    ((3, 4, 5), [1, 0, 2], [0, 4, 3]), ((2, 1, 3, 1, 2, 1, 2, 3),
                                        [1, 0, 1, 0, 0, 0, 1, 0],
                                        [1, 1, 2, 1, 2, 1, 1, 3])])
def test_slice(capfd, shape, begin, size, dtype):
    x = rand(shape, dtype)
    g, c, where = both(capfd, lambda: tf.slice(tf.constant(x), begin, size))
    bits_equal(g, c)
    if c.numpy().size:
        on_gpu_only(where, ["Slice"])


@pytest.mark.parametrize("shape,axes", [
    ((5,), [0]), ((3, 4), [1]), ((3, 4), [0, 1]), ((2, 3, 4), [-1, 0]),
    ((2, 0, 3), [1])])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_reverse(capfd, shape, axes, dtype):
    x = rand(shape, dtype)
    g, c, where = both(capfd, lambda: tf.reverse(tf.constant(x), axes))
    bits_equal(g, c)
    np.testing.assert_array_equal(c.numpy(), np.flip(x, axes))


@pytest.mark.parametrize("shape,mult", [
    ((3,), [2]), ((2, 3), [3, 1]), ((2, 3), [1, 0]), ((2, 1, 3), [2, 4, 1]),
    ((1, 2, 1, 2), [2, 1, 3, 2]), ((1, 2, 1, 2, 1), [2, 1, 3, 2, 2])])
@pytest.mark.parametrize("dtype", [np.float64, np.uint8, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_tile(capfd, shape, mult, dtype):
    x = rand(shape, dtype)
    g, c, where = both(capfd, lambda: tf.tile(tf.constant(x), mult))
    bits_equal(g, c)
    np.testing.assert_array_equal(c.numpy(), np.tile(x, mult))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_split_splitv_unstack(capfd, dtype):
    x = rand((6, 4, 6), dtype)
    cases = [lambda t: tf.split(t, 3, axis=0),
             lambda t: tf.split(t, 2, axis=-1),
             lambda t: tf.split(t, [1, 0, 3], axis=1),
             lambda t: tf.split(t, [4, -1], axis=2),
             lambda t: tf.unstack(t, axis=1),
             lambda t: tf.unstack(t)]
    for fn in cases:
        g, c, where = both(capfd, lambda: fn(tf.constant(x)))
        bits_equal(g, c)
    where = {op for op, dev in where if dev == CPU_NAME}
    assert not where & {"Split", "SplitV", "Unpack"}, where


@pytest.mark.parametrize("shape,pads", [
    ((3,), [[1, 2]]), ((2, 3), [[0, 1], [2, 0]]), ((2, 3), [[0, 0], [0, 0]]),
    ((0, 2), [[1, 1], [0, 1]]), ((2, 1, 2), [[1, 0], [0, 2], [1, 1]])])
@pytest.mark.parametrize("dtype,value", [
    (np.float32, 1.5), (np.float64, -2.25), (np.int32, 7),
    (np.float16, 0.1), (np.uint8, 200), (np.complex128, 3.0)], ids=str)
def test_pad(capfd, shape, pads, dtype, value):
    x = rand(shape, dtype)
    g, c, where = both(capfd, lambda: tf.pad(tf.constant(x), pads,
                                             constant_values=value))
    bits_equal(g, c)
    on_gpu_only(where, ["PadV2"])


@pytest.mark.parametrize("shape,axis", [
    ((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
    ((4, 5000), 1), ((0, 4), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64], ids=lambda d: np.dtype(d).name)
def test_argmax_argmin(capfd, shape, axis, dtype):
    x = (rand(shape, np.float64, 3) // 4).astype(dtype)      # many ties
    for fn in (tf.math.argmax, tf.math.argmin):
        for out in (tf.int64, tf.int32):
            g, c, where = both(capfd, lambda: fn(tf.constant(x), axis,
                                                 output_type=out))
            bits_equal(g, c)
            if c.numpy().size:
                on_gpu_only(where, ["ArgMax" if fn is tf.math.argmax
                                    else "ArgMin"])


def test_argmax_nans_first_wins(capfd):
    x = np.array([[1, np.nan, 5, np.nan], [3, 3, -np.inf, 2],
                  [np.inf, 1, np.nan, np.inf]], np.float32)
    for axis in (0, 1):
        g, c, _ = both(capfd, lambda: (tf.math.argmax(x, axis),
                                       tf.math.argmin(x, axis)))
        bits_equal(g, c)


def test_keras_accuracy_step_places_argmax_on_the_gpu(capfd):
    # The MNIST-style models' accuracy metric ran ArgMax on the CPU.
    logits = rand((32, 10), np.float32)
    labels = np.arange(32) % 10
    m = tf.keras.metrics.SparseCategoricalAccuracy()

    def acc():
        m.reset_state()
        m.update_state(labels, tf.constant(logits))
        return m.result()

    g, c, where = both(capfd, acc)
    np.testing.assert_array_equal(g.numpy(), c.numpy())
    assert ("ArgMax", CPU_NAME) not in where, sorted(where)


@pytest.mark.parametrize("shape,axis", [
    ((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1), ((0, 4), 1),
    ((3, 3000), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64], ids=lambda d: np.dtype(d).name)
def test_cumsum_cumprod(capfd, shape, axis, dtype):
    x = rand(shape, np.float64, 5)
    for fn, name in ((tf.math.cumsum, "Cumsum"), (tf.math.cumprod,
                                                   "Cumprod")):
        v = (x / 8 + 1 if name == "Cumprod" else x).astype(dtype)
        for excl in (False, True):
            for rev in (False, True):
                g, c, where = both(capfd, lambda: fn(
                    tf.constant(v), axis, exclusive=excl, reverse=rev))
                bits_equal(g, c)     # the CPU's order and accumulators
                if v.size:
                    on_gpu_only(where, [name])


def test_cumsum_gradient(capfd):
    x = rand((4, 6), np.float32)

    def grad():
        v = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(v)
            loss = tf.reduce_sum(tf.math.cumsum(v, 1, reverse=True) * v)
        return tape.gradient(loss, v)

    g, c, where = both(capfd, grad)
    np.testing.assert_allclose(g.numpy(), c.numpy(), rtol=1e-6)
    assert ("Cumsum", CPU_NAME) not in where, sorted(where)


@pytest.mark.parametrize("ishape,depth,axis", [
    ((5,), 4, -1), ((2, 3), 5, -1), ((2, 3), 5, 0), ((0,), 3, -1),
    ((4,), 0, -1), ((64,), 10, -1)])
@pytest.mark.parametrize("idt", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.bool_], ids=lambda d: np.dtype(d).name)
def test_one_hot(capfd, ishape, depth, axis, idt, dtype):
    idx = (np.arange(int(np.prod(ishape))) % (depth + 3) - 1).reshape(
        ishape).astype(idt)                 # some -1 and >= depth
    g, c, where = both(capfd, lambda: tf.one_hot(
        tf.constant(idx), depth, on_value=np.array(1, dtype).item(),
        off_value=np.array(0, dtype).item(), axis=axis, dtype=dtype))
    bits_equal(g, c)
    if c.numpy().size:
        on_gpu_only(where, ["OneHot"])


@pytest.mark.parametrize("shape,pads", [
    ((3,), [[2, 1]]), ((2, 3), [[0, 1], [2, 0]]), ((3, 4), [[2, 2], [3, 3]]),
    ((3, 1, 4), [[1, 2], [0, 0], [3, 1]])])
@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_mirror_pad(capfd, shape, pads, mode, dtype):
    if mode == "REFLECT" and any(p > d - 1 for d, pp in zip(shape, pads)
                                 for p in pp):
        pytest.skip("REFLECT pads past dim - 1 are an error")
    x = rand(shape, dtype)
    g, c, where = both(capfd, lambda: tf.pad(tf.constant(x), pads,
                                             mode=mode))
    bits_equal(g, c)
    np.testing.assert_array_equal(c.numpy(), np.pad(x, pads,
                                                    mode=mode.lower()))
    on_gpu_only(where, ["MirrorPad"])
