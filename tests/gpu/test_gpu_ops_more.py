"""GPU kernels of the ops the model steps and acceptance programs used to
soft-place (issue 21), against their CPU kernels: BroadcastTo, Shape,
Size, Rank (kernels_shape.c), the Philox random ops (random.cu: the
CPU's stream for the same seed; uniforms and integers bit for bit,
normals through CUDA's logf/sincosf within an ulp or two), TensorScatter
Add/Update (scatter.cu: duplicates, the CPU's error on a bad index) and
_LSTMSequence(Grad) (kernels_rnn.c); a traced LSTM train step with none
of them on the CPU. float32 without TF32 (conftest.py). Every test skips
without a GPU."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

from gpu_util import CPU_NAME, FLOATS, GPU, GPU_NAME, logged, on, on_gpu_only, tol

# CUDA's logf and sincosf are within 1-2 ulps of glibc's: a normal draw
# may differ from the CPU's in its last bits, never more.
NORMAL_TOL = {np.float32: dict(rtol=3e-6, atol=3e-6),
              np.float64: dict(rtol=1e-14, atol=1e-14)}


# ---- BroadcastTo, Shape, Size, Rank ----

BCAST = [((), (3, 2)), ((1,), (4,)), ((3, 1), (3, 5)), ((1, 4), (2, 3, 4)),
         ((2, 1, 3), (2, 5, 3)), ((5,), (0, 5)), ((1, 1), (7, 1025)),
         ((2, 1, 1, 1, 3), (2, 2, 1, 2, 3))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64, np.uint8, np.bool_,
                                   np.complex128])
@pytest.mark.parametrize("src,dst", BCAST, ids=str)
def test_broadcast_to(capfd, src, dst, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(src) * 5).astype(dtype)
    want = np.broadcast_to(x, dst)
    got, where = logged(capfd, lambda: on(GPU, "BroadcastTo", (x,),
                                          ints=dst)[0])
    assert got.device == GPU_NAME and got.shape == dst
    np.testing.assert_array_equal(got.numpy(), want)
    on_gpu_only(where, ["BroadcastTo"])


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 4, 5)],
                         ids=str)
@pytest.mark.parametrize("out_type", [tf.int32, tf.int64])
def test_shape_size_rank(capfd, shape, out_type):
    x = np.ones(shape, np.float32)

    def three():
        with tf.device(GPU):
            t = tf.constant(x)
            return (tf.shape(t, out_type=out_type),
                    tf.size(t, out_type=out_type), tf.rank(t))

    (s, n, r), where = logged(capfd, three)
    assert s.dtype == out_type and n.dtype == out_type and r.dtype == tf.int32
    assert s.device == n.device == r.device == GPU_NAME
    np.testing.assert_array_equal(s.numpy(), np.array(shape, np.int64))
    assert int(n.numpy()) == int(np.prod(shape)) and int(r.numpy()) == len(
        shape)
    on_gpu_only(where, ["Shape", "Size", "Rank"])


def test_size_overflow_is_the_cpus_error():
    # Size's int32 check runs in the CPU kernel the GPU one calls.
    with tf.device(GPU):
        x = tf.zeros([2**16, 2**15 + 1], tf.uint8)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Size: .* do not fit in int32"):
            tf.size(x)
        assert int(tf.size(x, out_type=tf.int64).numpy()) == 2**16 * (
            2**15 + 1)


# ---- Philox random ----

SIZES = [(), (1,), (3,), (5,), (7,), (4, 3), (1025,), (0, 4), (3, 257)]


def draw(device, fn, seed=7):
    tf.random.set_seed(seed)
    with tf.device(device):
        return fn()


def same_draws(fn, dtype, exact):
    want = draw("/CPU:0", fn)
    got = draw(GPU, fn)
    assert got.device == GPU_NAME and got.dtype == want.dtype
    if exact:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    else:
        np.testing.assert_allclose(got.numpy(), want.numpy(),
                                   **NORMAL_TOL[dtype])


@pytest.mark.parametrize("shape", SIZES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_is_the_cpus_stream(shape, dtype):
    same_draws(lambda: tf.random.uniform(shape, -2.5, 3.0, dtype=dtype,
                                         seed=11), dtype, exact=True)


@pytest.mark.parametrize("shape", SIZES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", ["normal", "truncated_normal"])
def test_normals_are_the_cpus_stream(shape, dtype, kind):
    f = getattr(tf.random, kind)
    same_draws(lambda: f(shape, 0.5, 2.0, dtype=dtype, seed=3), dtype,
               exact=False)


@pytest.mark.parametrize("shape", SIZES, ids=str)
@pytest.mark.parametrize("dtype,lo,hi", [(tf.int32, -5, 17),
                                         (tf.int64, -2**40, 2**41 + 3),
                                         (tf.int32, 0, 1)])
def test_uniform_int_is_the_cpus_stream(shape, dtype, lo, hi):
    same_draws(lambda: tf.random.uniform(shape, lo, hi, dtype=dtype,
                                         seed=5), None, exact=True)


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_uniform_full_int_is_the_cpus_stream(dtype):
    def fn():
        return tf.random.Generator.from_seed(9).uniform_full_int([33], dtype)
    same_draws(fn, None, exact=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_stateless_ops_are_the_cpus(dtype):
    seed = tf.constant([4, 123], tf.int64)
    for fn, exact in ((tf.random.stateless_uniform, True),
                      (tf.random.stateless_normal, False),
                      (tf.random.stateless_truncated_normal, False)):
        same_draws(lambda: fn((6, 5), seed, dtype=dtype), dtype, exact)
    same_draws(lambda: tf.random.stateless_uniform(
        (9,), seed, minval=-3, maxval=40, dtype=tf.int64), None, True)


def test_random_ops_run_on_the_gpu(capfd):
    def all_four():
        with tf.device(GPU):
            return [tf.random.uniform([5], seed=1),
                    tf.random.normal([5], seed=1),
                    tf.random.truncated_normal([5], seed=1),
                    tf.random.uniform([5], 0, 9, tf.int32, seed=1)]

    outs, where = logged(capfd, all_four)
    assert all(t.device == GPU_NAME for t in outs)
    on_gpu_only(where, ["RandomUniform", "RandomStandardNormal",
                        "TruncatedNormal", "RandomUniformInt"])


def test_generator_draws_interleaved_across_devices_continue_one_stream():
    g = tf.random.Generator.from_seed(1234)
    ref = tf.random.Generator.from_seed(1234)
    for k, dev in enumerate([GPU, "/CPU:0", GPU, GPU, "/CPU:0", GPU]):
        with tf.device(dev):
            got = g.uniform([k + 3]) if k % 2 == 0 else g.normal([k + 3])
        with tf.device("/CPU:0"):
            want = ref.uniform([k + 3]) if k % 2 == 0 else \
                ref.normal([k + 3])
        if k % 2 == 0:
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        else:
            np.testing.assert_allclose(got.numpy(), want.numpy(),
                                       **NORMAL_TOL[np.float32])
    np.testing.assert_array_equal(g.state.numpy(), ref.state.numpy())


def test_traced_draws_match_the_cpus_run_by_run():
    def runs(device):
        tf.random.set_seed(21)
        g = tf.random.Generator.from_seed(77)

        @tf.function
        def f():
            with tf.device(device):
                return (tf.random.uniform([6], seed=2), g.uniform([5]),
                        tf.random.uniform([3], 0, 100, tf.int64))

        return [[t.numpy() for t in f()] for _ in range(3)] + [
            [g.state.numpy()]]

    got, want = runs(GPU), runs("/CPU:0")
    for gr, wr in zip(got, want):
        for g_, w_ in zip(gr, wr):
            np.testing.assert_array_equal(g_, w_)
    assert not np.array_equal(got[0][0], got[1][0])   # fresh each run


def test_float16_draws_run_on_host_copies():
    same_draws(lambda: tf.random.uniform([9], dtype=tf.float16, seed=4),
               None, exact=True)


# ---- TensorScatterAdd / TensorScatterUpdate ----

SCATTER = [  # tensor shape, indices
    ((8,), [[1], [3], [1], [7], [1]]),
    ((5, 3), [[0], [4], [0]]),
    ((4, 3, 2), [[1, 2], [3, 0], [1, 2], [0, 0]]),
    ((6, 4), [[[2], [5]], [[2], [2]]]),
    ((3, 4), np.zeros((0, 1), np.int64)),
    ((2, 0), [[1], [1]]),
    ((300, 7), np.random.default_rng(3).integers(0, 300, (1000, 1))),
]


def _scatter_inputs(shape, idx, dtype, idx_dtype):
    rng = np.random.default_rng(4)
    idx = np.asarray(idx, idx_dtype)
    k = idx.shape[-1]
    ushape = idx.shape[:-1] + shape[k:]
    t = (rng.standard_normal(shape) * 10).astype(dtype)
    u = (rng.standard_normal(ushape) * 10).astype(dtype)
    return t, idx, u


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.int64])
@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", range(len(SCATTER)))
def test_tensor_scatter_add_with_duplicates(capfd, case, idx_dtype, dtype):
    t, idx, u = _scatter_inputs(*SCATTER[case], dtype, idx_dtype)
    want = on("/CPU:0", "TensorScatterAdd", (t, idx, u))[0].numpy()
    got, where = logged(capfd, lambda: on(GPU, "TensorScatterAdd",
                                          (t, idx, u))[0])
    assert got.device == GPU_NAME
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got.numpy(), want)
    else:   # atomic adds: the duplicates' sum in another order
        np.testing.assert_allclose(got.numpy(), want, **tol(dtype))
    on_gpu_only(where, ["TensorScatterAdd"])


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.bool_,
                                   np.complex128])
@pytest.mark.parametrize("case", range(len(SCATTER)))
def test_tensor_scatter_update_last_wins(case, dtype):
    t, idx, u = _scatter_inputs(*SCATTER[case], dtype, np.int64)
    want = on("/CPU:0", "TensorScatterUpdate", (t, idx, u))[0].numpy()
    got = on(GPU, "TensorScatterUpdate", (t, idx, u))[0]
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("op", ["TensorScatterAdd", "TensorScatterUpdate"])
@pytest.mark.parametrize("bad", [[[1], [5]], [[-1], [0]]])
def test_bad_index_is_the_cpus_error(op, bad):
    t = np.arange(5, dtype=np.float32)
    u = np.ones(2, np.float32)
    with tf.device(GPU):
        tt = tf.constant(t)
        with pytest.raises(tf.errors.InvalidArgumentError) as gpu_err:
            _C.call(ID[op], (tt, tf.constant(bad), tf.constant(u)))
    with pytest.raises(tf.errors.InvalidArgumentError) as cpu_err:
        on("/CPU:0", op, (t, np.array(bad), u))
    assert op in str(gpu_err.value)
    assert str(gpu_err.value) == str(cpu_err.value)
    np.testing.assert_array_equal(tt.numpy(), t)    # untouched


def test_scatter_nd_gradient_on_gpu():
    # tf.gather's gradient is a TensorScatterAdd (ops/grad_shape.c).
    p = np.random.default_rng(6).standard_normal((10, 3)).astype(np.float32)
    idx = np.array([1, 4, 1, 9, 1], np.int32)

    def grad(device):
        with tf.device(device):
            x = tf.constant(p)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(tf.gather_nd(x, idx[:, None]) ** 2)
            return tape.gradient(y, x)

    np.testing.assert_allclose(grad(GPU).numpy(), grad("/CPU:0").numpy(),
                               **tol(np.float32))


# ---- _LSTMSequence / _LSTMSequenceGrad ----

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("steps,batch,units", [(1, 1, 1), (5, 3, 7),
                                               (12, 16, 32), (0, 2, 3),
                                               (4, 0, 3), (3, 5, 0)],
                         ids=str)
@pytest.mark.parametrize("with_dout", [False, True])
def test_lstm_sequence_and_its_gradient(capfd, steps, batch, units, dtype,
                                        with_dout):
    rng = np.random.default_rng(7)

    def r(*s, scale=1.0):
        return (rng.standard_normal(s) * scale).astype(dtype)

    xs, h0, c0 = r(steps, batch, 4 * units, scale=2), r(batch, units), \
        r(batch, units)
    rk = r(units, 4 * units, scale=0.5)
    fwd_cpu = [t.numpy() for t in on("/CPU:0", "_LSTMSequence",
                                     (xs, h0, c0, rk))]
    fwd_gpu, where = logged(capfd, lambda: on(GPU, "_LSTMSequence",
                                              (xs, h0, c0, rk)))
    for k, (g, w) in enumerate(zip(fwd_gpu, fwd_cpu)):
        assert g.device == GPU_NAME and g.shape == w.shape, k
        np.testing.assert_allclose(g.numpy(), w, err_msg=f"out {k}",
                                   **tol(dtype))
    hs, cs, gates, _, c = fwd_cpu
    grad_in = [r(batch, units), r(batch, units), hs, cs, gates, c, rk]
    if with_dout:
        grad_in.append(r(steps, batch, units))
    want = [t.numpy() for t in on("/CPU:0", "_LSTMSequenceGrad", grad_in)]
    got, where2 = logged(capfd, lambda: on(GPU, "_LSTMSequenceGrad",
                                           grad_in))
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.device == GPU_NAME and g.shape == w.shape, k
        np.testing.assert_allclose(g.numpy(), w, err_msg=f"grad out {k}",
                                   **tol(dtype))
    on_gpu_only(where | where2, ["_LSTMSequence", "_LSTMSequenceGrad"])


# ---- a traced LSTM train step ----

SOFT_PLACED_BEFORE = ("_LSTMSequence", "_LSTMSequenceGrad", "BroadcastTo",
                      "Size", "TensorScatterAdd")


def _lstm_train(device, capfd):
    keras, L = tf.keras, tf.keras.layers
    tf.keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((6, 5)), L.LSTM(7),
                              L.Dense(4)])
    rng = np.random.default_rng(8)
    x = tf.constant(rng.standard_normal((5, 6, 5)).astype(np.float32))
    y = tf.constant(rng.integers(0, 4, 5).astype(np.int32))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = keras.optimizers.SGD(0.05)

    @tf.function
    def train(x, y):
        with tf.device(device):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

    train(x, y)
    loss, where = logged(capfd, lambda: train(x, y))
    return [loss.numpy()] + [w.numpy() for w in model.weights], where


def test_lstm_train_step_on_gpu_has_no_cpu_fallback(capfd):
    got, where = _lstm_train(GPU, capfd)
    want, _ = _lstm_train("/CPU:0", capfd)
    for op in ("_LSTMSequence", "_LSTMSequenceGrad"):
        assert (op, GPU_NAME) in where, (op, sorted(where))
    for op in SOFT_PLACED_BEFORE:
        assert (op, CPU_NAME) not in where, (op, sorted(where))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
