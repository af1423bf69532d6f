"""Every OpSpec row on the GPU against the CPU, eager and traced: ops
with a GPU kernel run there, the rest soft-place on the CPU with copies,
and either way the values match the CPU's to float tolerances."""
import numpy as np
import pytest

import tfmini as tf
from specs import case_id, device_cases, outputs

from gpu_util import GPU, GPU_NAME



def close(got, want, spec, dtype):
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype,
                                                       g.shape, w.shape)
    if g.dtype.kind in "fc":
        # Summation orders differ between the GPU's trees and the CPU's
        # loops: a few ulps of the op's own tolerance.
        rtol = max(spec.rtol * 10, 1e-4 if dtype == "float32" else 1e-10)
        atol = max(spec.atol * 10, 1e-4 if dtype == "float32" else 1e-10)
        if dtype == "float16":
            rtol, atol = 1e-2, 1e-2
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=spec.name)
    else:
        np.testing.assert_array_equal(g, w, err_msg=spec.name)


def _check_row(case):
    spec, shapes, dtype = case
    xs = spec.make_inputs(np.random.default_rng(0), shapes, dtype)
    with tf.device("/CPU:0"):
        want = [o.numpy() for o in outputs(spec.fn(*[tf.constant(x)
                                                      for x in xs]))]
    with tf.device(GPU):
        got = outputs(spec.fn(*[tf.constant(x) for x in xs]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        close(g.numpy(), w, spec, dtype)

    def body(*args):
        with tf.device(GPU):
            return spec.fn(*args)
    traced = outputs(tf.function(body)(*[tf.constant(x) for x in xs]))
    for g, w in zip(traced, want):
        close(g.numpy(), w, spec, dtype)


FAST, SLOW = device_cases()


@pytest.mark.parametrize("case", FAST, ids=[case_id(c) for c in FAST])
def test_every_op_on_gpu_matches_cpu(case):
    _check_row(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW, ids=[case_id(c) for c in SLOW])
def test_every_row_on_gpu_matches_cpu(case):
    _check_row(case)


def test_gpu_kernels_run_on_the_gpu(capfd):
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    tf.debugging.set_log_device_placement(True)
    with tf.device(GPU):
        y = tf.reduce_sum(tf.exp(x * 0.1) + 1.0, axis=1)
        z = tf.matmul(x, x, transpose_b=True)
    tf.debugging.set_log_device_placement(False)
    assert y.device == GPU_NAME and z.device == GPU_NAME
    err = capfd.readouterr().err
    for op in ("Mul", "Exp", "AddV2", "Sum", "BatchMatMulV2"):
        assert f"Executing op {op} in device {GPU_NAME}" in err, op
    np.testing.assert_allclose(y.numpy(), np.sum(np.exp(x.numpy() * 0.1)
                                                 + 1, axis=1), rtol=1e-5)
    np.testing.assert_allclose(z.numpy(), x.numpy() @ x.numpy().T,
                               rtol=1e-5)


def test_default_placement_is_the_gpu():
    x = tf.constant([1.0, 2.0])
    assert (x * 2.0).device == GPU_NAME
    with tf.device("/CPU:0"):
        assert (x * 2.0).device.endswith("CPU:0")


def test_op_without_gpu_kernel_soft_places(capfd):
    x = tf.constant(np.random.default_rng(1).standard_normal((4, 5))
                    .astype(np.float32))
    tf.debugging.set_log_device_placement(True)
    with tf.device(GPU):
        y = tf.math.cumsum(tf.exp(x), axis=1)
    tf.debugging.set_log_device_placement(False)
    err = capfd.readouterr().err
    assert "Executing op Exp in device " + GPU_NAME in err
    assert "device:CPU:0" in err
    np.testing.assert_allclose(y.numpy(), np.cumsum(np.exp(x.numpy()), 1),
                               rtol=1e-5)


def test_identity_copies_across_and_numpy_copies_home():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.device(GPU):
        y = tf.identity(x)
    assert y.device == GPU_NAME
    with tf.device("/CPU:0"):
        z = tf.identity(y)
    assert z.device.endswith("CPU:0")
    np.testing.assert_array_equal(z.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("n", [10, 3 << 20, (40 << 20) + 3])
def test_big_copies_round_trip(n):
    """Past the pinned staging threshold and across several chunks."""
    a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    with tf.device(GPU):
        y = tf.identity(tf.constant(a))
    np.testing.assert_array_equal(y.numpy(), a)


@pytest.mark.parametrize("sa,sb,adj", [
    ((3, 4), (4, 5), (0, 0)), ((2, 3, 4), (4, 5), (0, 0)),
    ((3, 4), (2, 4, 5), (0, 0)), ((2, 1, 3, 4), (1, 3, 4, 5), (0, 0)),
    ((2, 4, 3), (2, 5, 4), (1, 1)), ((64, 33), (64, 17), (1, 0)),
    ((0, 4), (4, 5), (0, 0)), ((3, 0), (0, 5), (0, 0))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_shapes(sa, sb, adj, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    with tf.device(GPU):
        got = tf.matmul(a, b, transpose_a=bool(adj[0]),
                        transpose_b=bool(adj[1]))
    ta = np.swapaxes(a, -1, -2) if adj[0] else a
    tb = np.swapaxes(b, -1, -2) if adj[1] else b
    np.testing.assert_allclose(got.numpy(), ta @ tb, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 2], [1, 2]])
@pytest.mark.parametrize("fn,ref", [
    (tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean),
    (tf.reduce_max, np.max), (tf.reduce_min, np.min)])
def test_reductions(axis, fn, ref):
    a = np.random.default_rng(2).standard_normal((7, 130, 9)) \
        .astype(np.float32)
    with tf.device(GPU):
        got = fn(a, axis=axis)
    want = ref(a, axis=tuple(axis) if isinstance(axis, list) else axis)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,axis", [
    ((1 << 22,), None), ((3, 1 << 20), 1), ((1 << 20, 3), 0),
    ((100_003,), 0)])
@pytest.mark.parametrize("fn,ref", [
    (tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean),
    (tf.reduce_max, np.max), (tf.reduce_min, np.min)])
def test_big_reductions_in_two_passes(shape, axis, fn, ref):
    a = np.random.default_rng(4).uniform(0.5, 1.5, shape).astype(np.float64)
    a[len(a) // 2] = 7.0                 # a max/min far from the rest
    with tf.device(GPU):
        got = fn(tf.constant(a), axis=axis)
    np.testing.assert_allclose(got.numpy(), ref(a, axis=axis), rtol=1e-12)


def test_split_reduction_partials_are_the_allocators():
    """A full reduction of many elements (1 << 22 float64: 128 chunks of
    its one output, reduce.cu) keeps its partial results in memory from
    the GPU's allocator: the peak counts them beside the output."""
    with tf.device(GPU):
        x = tf.constant(np.ones(1 << 22))
    tf.config.experimental.reset_memory_stats("GPU:0")
    before = tf.config.experimental.get_memory_info("GPU:0")["current"]
    with tf.device(GPU):
        y = tf.reduce_sum(x)
    peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
    assert y.numpy() == 1 << 22
    # 8 bytes of output, then 128 float64 partials.
    assert peak - before >= 8 + 128 * 8, peak - before


def test_nan_propagates_through_gpu_max():
    a = np.ones(1 << 20, np.float32)
    a[12345] = np.nan
    with tf.device(GPU):
        assert np.isnan(tf.reduce_max(a).numpy())
        assert np.isnan(tf.reduce_min(a).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_comparisons_broadcast_and_nan(dtype, capfd):
    x = np.array([[1.0, np.nan, 3.0], [0.0, -1.0, 2.0]], dtype)
    y = np.array([1.0, np.nan, 2.0], dtype)
    tf.debugging.set_log_device_placement(True)
    with tf.device(GPU):
        got = [tf.equal(x, y), tf.not_equal(x, y), tf.less(x, y),
               tf.less_equal(x, 2.0), tf.greater(2.0, x),
               tf.greater_equal(x, y)]
    tf.debugging.set_log_device_placement(False)
    want = [x == y, x != y, x < y, x <= 2.0, 2.0 > x, x >= y]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)
    assert "Executing op Less in device " + GPU_NAME in capfd.readouterr().err


def test_integer_ops_with_a_gpu_kernel_run_on_host_copies():
    a = np.arange(-6, 6, dtype=np.int32)
    with tf.device(GPU):
        got = tf.math.floordiv(a, 4) + tf.constant(1)
    np.testing.assert_array_equal(got.numpy(), a // 4 + 1)


def test_bad_input_names_op_and_shapes():
    with tf.device(GPU):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"AddV2.*\[2,3\].*\[4\]|Incompatible"):
            tf.constant(np.zeros((2, 3), np.float32)) + \
                tf.constant(np.zeros(4, np.float32))


def test_out_of_memory_names_op_and_bytes():
    a = tf.constant(np.ones((1 << 18, 1), np.float32))
    b = tf.constant(np.ones((1, 1 << 18), np.float32))
    with tf.device(GPU):
        with pytest.raises(tf.errors.ResourceExhaustedError,
                           match=r"AddV2: OOM when allocating .*274877906944 "
                                 r"bytes"):
            a + b
        # And the GPU still works afterwards.
        np.testing.assert_array_equal((a[:2] * 2.0).numpy(), [[2.0], [2.0]])


def test_sync_devices_waits_for_queued_work():
    assert tf.test.is_built_with_cuda()
    assert tf.test.gpu_device_name() == "/device:GPU:0"
    with tf.device(GPU):
        x = tf.identity(tf.constant(np.ones(1 << 22, np.float32)))
        for _ in range(20):
            x = x * 1.0001
    tf.test.experimental.sync_devices()
    np.testing.assert_allclose(x.numpy()[:3], [1.0001 ** 20] * 3,
                               rtol=1e-5)


def test_softmax_family_and_shape_ops_run_on_the_gpu(capfd):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 1000)).astype(np.float32)
    lab = rng.integers(0, 1000, 6).astype(np.int64)
    tf.debugging.set_log_device_placement(True)
    with tf.device(GPU):
        sm = tf.nn.softmax(x)
        lsm = tf.nn.log_softmax(x, axis=0)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(lab, x)
        tr = tf.transpose(tf.reshape(x, [6, 10, 100]), [2, 0, 1])
        ga = tf.gather(x, [5, 0, 5], axis=0)
        ca = tf.concat([x, x[:, :7]], axis=1)
    tf.debugging.set_log_device_placement(False)
    err = capfd.readouterr().err
    for op in ("Softmax", "LogSoftmax", "SparseSoftmaxCrossEntropyWithLogits",
               "Transpose", "GatherV2", "ConcatV2"):
        assert f"Executing op {op} in device {GPU_NAME}" in err, op
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(sm.numpy(), e / e.sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    m0 = x.max(0, keepdims=True)
    np.testing.assert_allclose(
        lsm.numpy(), x - m0 - np.log(np.exp(x - m0).sum(0, keepdims=True)),
        rtol=1e-5, atol=1e-5)
    m = x.max(1)
    want = np.log(np.exp(x - m[:, None]).sum(1)) - (x[np.arange(6), lab] - m)
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-5)
    np.testing.assert_array_equal(
        tr.numpy(), x.reshape(6, 10, 100).transpose(2, 0, 1))
    np.testing.assert_array_equal(ga.numpy(), x[[5, 0, 5]])
    np.testing.assert_array_equal(ca.numpy(),
                                  np.concatenate([x, x[:, :7]], 1))


def test_gpu_bad_labels_and_indices_follow_tf_gpu():
    """TF's GPU kernels give NaN rows for a label out of range and zeros
    for a gather index out of range (its CPU kernels raise)."""
    x = tf.constant(np.zeros((2, 3), np.float32))
    with tf.device(GPU):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
                np.array([1, 7], np.int32), x)
        back = tape.gradient(loss, x)
        g = tf.gather(tf.constant([[1.0, 2.0], [3.0, 4.0]]), [1, 9], axis=0)
    assert np.isfinite(loss.numpy()[0]) and np.isnan(loss.numpy()[1])
    assert np.isfinite(back.numpy()[0]).all()
    assert np.isnan(back.numpy()[1]).all()
    np.testing.assert_array_equal(g.numpy(), [[3.0, 4.0], [0.0, 0.0]])
