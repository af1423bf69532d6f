"""The fused ops off the CPU, checked without a GPU (issue 21): the
conv-epilogue and pool-gradient passes fuse nodes placed on a device
whose kernel table has the fused op (the test-only FAKE device here, a
GPU with cuDNN on a GPU machine) and leave them unfused where it has
none, so nothing falls back to the CPU; and a CUDA build's GPU kernel
table lists the fused ops' kernels. tests/gpu/test_gpu_fused_ops.py runs
them on a GPU."""
import ctypes

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

FAKE = "/device:FAKE:0"
FAKE_NAME = "/job:localhost/replica:0/task:0/device:FAKE:0"
CPU_NAME = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture
def fake():
    _C._enable_fake_device(True)
    yield
    tf.debugging.set_log_device_placement(False)
    _C._enable_fake_device(True)     # back to every kernel


def _placed(err):
    """(op, device name) of every "Executing op" line."""
    out = []
    for line in err.splitlines():
        if line.startswith("Executing op "):
            op, _, dev = line[len("Executing op "):].partition(" in device ")
            out.append((op, dev))
    return out


def _conv_block(x, f, b, r, act):
    h = tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), b)
    if r is not None:
        h = h + r
    return act(h) if act else h


def _inputs(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 7, 9, 3)).astype(dtype)
    f = rng.standard_normal((3, 3, 3, 5)).astype(dtype)
    b = rng.standard_normal(5).astype(dtype)
    r = rng.standard_normal((2, 7, 9, 5)).astype(dtype)
    return x, f, b, r


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("act", [None, tf.nn.relu, tf.nn.relu6, tf.nn.elu],
                         ids=["none", "relu", "relu6", "elu"])
def test_conv_epilogue_fuses_on_a_device_with_the_kernel(fake, capfd, act,
                                                         residual):
    x, f, b, r = _inputs()
    r = r if residual else None

    @tf.function
    def block(x, f, b, *r):
        with tf.device(FAKE):
            return _conv_block(x, f, b, r[0] if r else None, act)

    args = [tf.constant(v) for v in (x, f, b)] + (
        [tf.constant(r)] if residual else [])
    with tf.device("/CPU:0"):
        want = _conv_block(*[tf.constant(v) for v in (x, f, b)],
                           tf.constant(r) if residual else None, act).numpy()
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    got = block(*args)
    tf.debugging.set_log_device_placement(False)
    placed = _placed(capfd.readouterr().err)
    assert ("_FusedConv2D", FAKE_NAME) in placed, placed
    assert all(dev == FAKE_NAME for op, dev in placed
               if op not in ("_Copy",)), placed
    assert got.device == FAKE_NAME
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_no_fusion_where_the_device_has_no_fused_kernel(fake, capfd):
    # A GPU without cuDNN has no _FusedConv2D: the pass must leave the
    # conv, bias add and Relu on the device, not make a node that would
    # soft-place on the CPU.
    _C._fake_device_deny("_FusedConv2D")
    x, f, b, _ = _inputs(1)

    @tf.function
    def block(x, f, b):
        with tf.device(FAKE):
            return _conv_block(x, f, b, None, tf.nn.relu)

    tf.debugging.set_log_device_placement(True)
    got = block(*[tf.constant(v) for v in (x, f, b)])
    tf.debugging.set_log_device_placement(False)
    placed = _placed(capfd.readouterr().err)
    ops = {op for op, _ in placed}
    assert "_FusedConv2D" not in ops and ("Conv2D", FAKE_NAME) in placed
    with tf.device("/CPU:0"):
        want = _conv_block(*[tf.constant(v) for v in (x, f, b)], None,
                           tf.nn.relu).numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def _pool_step(x, f, b):
    with tf.GradientTape() as tape:
        tape.watch([f, b])
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), b))
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        loss = tf.reduce_sum(h * h)
    return tape.gradient(loss, [f, b])


@pytest.mark.parametrize("deny", [False, True])
def test_pool_grad_fuses_only_where_the_device_has_the_kernel(fake, capfd,
                                                              deny):
    if deny:
        _C._fake_device_deny("_FusedMaxPoolGrad")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 8, 6, 3)).astype(np.float32)
    f = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)

    @tf.function
    def step(x, f, b):
        with tf.device(FAKE):
            return _pool_step(x, f, b)

    with tf.device("/CPU:0"):
        want = [g.numpy() for g in _pool_step(
            *[tf.constant(v) for v in (x, f, b)])]
    capfd.readouterr()
    tf.debugging.set_log_device_placement(True)
    got = step(*[tf.constant(v) for v in (x, f, b)])
    tf.debugging.set_log_device_placement(False)
    placed = _placed(capfd.readouterr().err)
    fused = ("_FusedMaxPoolGrad", FAKE_NAME) in placed
    assert fused != deny, placed
    assert not any(dev == CPU_NAME and op != "_Copy"
                   for op, dev in placed), placed
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-4)


def _has_kernel():
    """tfm_cuda_has_kernel of a CUDA build, else None."""
    if not _C.cuda_built():
        return None
    try:
        f = ctypes.CDLL(_C.__file__).tfm_cuda_has_kernel
    except AttributeError:
        return None
    f.argtypes = [ctypes.c_char_p]
    f.restype = ctypes.c_int
    return lambda name: f(name.encode())


def test_cuda_build_lists_the_fused_ops_gpu_kernels():
    has = _has_kernel()
    if has is None:
        pytest.skip("this build has no CUDA backend")
    for op in ("_LayerNorm", "_LayerNormGrad", "_SoftmaxGrad", "LSTMGates",
               "LSTMGatesGrad", "_FusedMaxPoolGrad", "MaxPoolGrad", "Fill",
               "ZerosLike", "OnesLike",
               "Softmax", "AddV2", "BatchMatMulV2"):
        assert has(op) == 1, op
    cudnn = ctypes.CDLL(_C.__file__).tfm_cuda_cudnn_version() > 0
    for op in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter",
               "_FusedConv2D", "DepthwiseConv2dNative",
               "DepthwiseConv2dNativeBackpropInput",
               "DepthwiseConv2dNativeBackpropFilter"):
        assert has(op) == int(cudnn), op
    # Ops with no GPU kernel soft-place on the CPU; unknown names are -1.
    assert has("StringJoin") == 0
    assert has("NoSuchOp") == -1


def _gpu_test_module():
    import importlib.util
    import pathlib
    import sys
    gpu_dir = pathlib.Path(__file__).parent / "gpu"
    # It imports tests/gpu/gpu_util.py, as pytest's rootdir import would.
    if str(gpu_dir) not in sys.path:
        sys.path.insert(0, str(gpu_dir))
    path = gpu_dir / "test_gpu_fused_ops.py"
    spec = importlib.util.spec_from_file_location("gpu_fused_ops", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["cnn", "transformer", "lstm"])
def test_model_steps_place_the_fused_ops_as_on_a_gpu(fake, capfd, name):
    # FAKE given exactly the GPU table's ops (the rest denied): the traced
    # steps of tests/gpu/test_gpu_fused_ops.py place their fused ops on
    # it, none on the CPU, and match the CPU's steps.
    has = _has_kernel()
    if has is None:
        pytest.skip("this build has no CUDA backend")
    if not ctypes.CDLL(_C.__file__).tfm_cuda_cudnn_version():
        pytest.skip("built without cuDNN: the convolutions soft-place")
    for row in _C.op_table():
        if has(row[0]) == 0:
            _C._fake_device_deny(row[0])
    m = _gpu_test_module()
    got, where = m._run(name, FAKE, capfd)
    want, _ = m._run(name, "/CPU:0", capfd)
    for op in m.FUSED[name]:
        assert (op, FAKE_NAME) in where, (op, sorted(where))
        assert (op, CPU_NAME) not in where, (op, sorted(where))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
