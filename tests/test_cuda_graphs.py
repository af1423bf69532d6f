"""The rule that decides which cached tf.function calls may replay as a
CUDA graph (Note [CUDA graphs for cached calls] in
csrc/graph/exec_cugraph.c), checked on the test-only FAKE device: the
rule is a pure function of the plan, so it runs here without a GPU. The
FAKE device is no GPU, so nothing is captured here: the calls must
still give the right values. The capture and replay themselves are
tests/gpu/test_gpu_cuda_graphs.py's."""
import ctypes

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

FAKE = "/device:FAKE:0"
_lib = ctypes.CDLL(_C.__file__)
_lib.tfm_cugraph_last_verdict.restype = ctypes.c_int


def verdict():
    buf = ctypes.create_string_buffer(256)
    ok = _lib.tfm_cugraph_last_verdict(buf, 256)
    return ok, buf.value.decode()


def counters():
    c = (ctypes.c_int64 * 6)()
    _lib.tfm_cugraph_counters(c)
    return dict(zip(["captures", "replays", "fallbacks", "failures",
                     "eligible", "ineligible"], c))


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    monkeypatch.delenv("TFMINI_CUDA_GRAPHS", raising=False)
    _C._enable_fake_device(True)
    yield
    _C._enable_fake_device(True)


def x3():
    return tf.constant(np.array([0.5, -1.0, 2.0], np.float32))


def judge(fn, *args):
    """fn's verdict, judged on its first call, and its values."""
    before = counters()
    out = fn(*args)
    after = counters()
    assert (after["eligible"] + after["ineligible"]
            == before["eligible"] + before["ineligible"] + 1)
    return verdict(), out


def test_all_on_one_device_is_eligible():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            return tf.exp(tf.negative(tf.abs(a))) * 2.0 + a

    (ok, why), y = judge(f, x3())
    assert ok == 1 and why.startswith("eligible"), why
    # Judged once: later calls read the plan's verdict.
    before = counters()
    for _ in range(3):
        y = f(x3())
    assert counters() == before
    a = x3().numpy()
    np.testing.assert_allclose(y.numpy(), np.exp(-np.abs(a)) * 2 + a,
                               rtol=1e-6)


def test_matmul_with_variables_on_the_device_is_eligible():
    with tf.device(FAKE):
        w = tf.Variable(np.eye(3, dtype=np.float32))

    @tf.function
    def f(a):
        with tf.device(FAKE):
            w.assign_add(tf.ones((3, 3)) * 0.5)
            return tf.matmul(tf.reshape(a, (1, 3)), w)

    (ok, why), y = judge(f, x3())
    assert ok == 1, why
    np.testing.assert_allclose(y.numpy(), x3().numpy()[None] @
                               (np.eye(3) + 0.5), rtol=1e-6)


def test_cpu_function_is_not():
    @tf.function
    def f(a):
        return a * 2.0

    (ok, why), _ = judge(f, x3())
    assert ok == 0 and "runs on the CPU" in why and "'mul'" in why, why


def test_variable_on_the_cpu_is_not():
    v = tf.Variable(np.ones(3, np.float32))

    @tf.function
    def f(a):
        with tf.device(FAKE):
            v.assign_add(a)
            return a + 1.0

    (ok, why), _ = judge(f, x3())
    assert ok == 0 and "runs on the CPU" in why, why
    np.testing.assert_allclose(v.numpy(), 1 + x3().numpy())


@pytest.mark.parametrize("kind,words", [
    ("print", "prints on the host"),
    ("assert", "reads its condition on the host"),
    ("cond", "tf.cond"),
    ("while", "tf.while_loop"),
    ("where", "output shape known only from its values"),
    ("random", "random op"),
])
def test_host_synchronizing_steps_are_not(kind, words, capsys):
    @tf.function
    def f(a):
        with tf.device(FAKE):
            b = a * 2.0
            if kind == "print":
                tf.print(b)
            elif kind == "assert":
                tf.debugging.Assert(tf.reduce_all(b < 100.0), [b])
            elif kind == "cond":
                b = tf.cond(tf.reduce_sum(b) > 0, lambda: b + 1.0,
                            lambda: b - 1.0)
            elif kind == "while":
                b = tf.while_loop(lambda i, t: i < 3,
                                  lambda i, t: (i + 1, t * 2.0),
                                  (tf.constant(0), b))[1]
            elif kind == "where":
                b = tf.reduce_sum(tf.boolean_mask(b, b > 0)) + b
            elif kind == "random":
                b = b + tf.random.uniform((3,), seed=1)
            return b + 1.0

    (ok, why), y = judge(f, x3())
    assert ok == 0 and words in why, why
    assert y.shape == (3,)
    capsys.readouterr()


def test_value_crossing_devices_is_not():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            b = tf.exp(a)
        with tf.device("/CPU:0"):
            c = b * 2.0
        return c

    (ok, why), y = judge(f, x3())
    assert ok == 0, why
    assert "runs on the CPU" in why or "between devices" in why, why
    np.testing.assert_allclose(y.numpy(), np.exp(x3().numpy()) * 2,
                               rtol=1e-6)


def test_off_judges_nothing(monkeypatch):
    monkeypatch.setenv("TFMINI_CUDA_GRAPHS", "0")

    @tf.function
    def f(a):
        with tf.device(FAKE):
            return a * 3.0

    before = counters()
    y = f(x3())
    assert counters() == before
    np.testing.assert_allclose(y.numpy(), x3().numpy() * 3)


def test_fake_device_is_judged_but_never_captured(monkeypatch, capfd):
    monkeypatch.setenv("TFMINI_CUDA_GRAPHS", "1")
    with tf.device(FAKE):
        v = tf.Variable(np.zeros(3, np.float32))

    @tf.function
    def step(a):
        with tf.device(FAKE):
            v.assign_add(a)
            return v.read_value() * 2.0

    before = counters()
    for k in range(1, 5):
        y = step(x3())
        np.testing.assert_allclose(y.numpy(), 2 * k * x3().numpy(),
                                   rtol=1e-6)
    after = counters()
    assert after["eligible"] == before["eligible"] + 1
    for name in ("captures", "replays", "fallbacks", "failures"):
        assert after[name] == before[name], name
    # =1 says why a judged plan stays plain.
    assert "not a GPU" in capfd.readouterr().err


def test_input_shapes_may_change_between_calls():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            return tf.reduce_sum(a * a, axis=-1)

    for n in (3, 4, 3, 5):
        a = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(f(tf.constant(a)).numpy(),
                                   (a * a).sum(), rtol=1e-6)


@pytest.mark.parametrize("optimizer", ["manual", "SGD", "Adam"])
def test_train_step_is_eligible(optimizer):
    """An MLP step with its variables and optimizer on the device: the
    mean's divisor (a host constant read straight by RealDiv, made after
    placement) and the optimizer's slots do not keep it off a graph."""
    rng = np.random.default_rng(0)
    with tf.device(FAKE):
        w1 = tf.Variable(rng.standard_normal((8, 16)).astype(np.float32))
        b1 = tf.Variable(np.zeros(16, np.float32))
        w2 = tf.Variable(rng.standard_normal((16, 1)).astype(np.float32))
        opt = (None if optimizer == "manual"
               else getattr(tf.keras.optimizers, optimizer)(0.01))
    ws = [w1, b1, w2]

    @tf.function
    def step(x, y):
        with tf.device(FAKE):
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.matmul(x, w1) + b1)
                loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y))
            gs = tape.gradient(loss, ws)
            if opt is None:
                for v, g in zip(ws, gs):
                    v.assign_sub(0.01 * g)
            else:
                opt.apply_gradients(zip(gs, ws))
        return loss

    x = tf.constant(rng.standard_normal((32, 8)).astype(np.float32))
    y = tf.constant(rng.standard_normal((32, 1)).astype(np.float32))
    (ok, why), loss0 = judge(step, x, y)
    assert ok == 1, why
    for _ in range(5):
        loss = step(x, y)
    assert float(loss) < float(loss0)


# exec_cugraph.c's check of a captured graph's copies, built on the host
# with the CUDA runtime's graph queries replaced: each fake node is (type,
# kind, source is device memory, destination is device memory), and
# cudaPointerGetAttributes answers from those flags.
COPY_HARNESS = r"""
#include "graph/exec_cugraph.c"
#include <stdio.h>
#include <stdlib.h>

static int nnodes, types[16], kinds[16], src_dev[16], dst_dev[16];
static int fail_get;
static char mem[64];            /* what the fake pointers point into */

cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes,
                              size_t *n)
{
    (void)g;
    if (fail_get)
        return cudaErrorInvalidValue;
    if (nodes)
        for (int i = 0; i < nnodes && (size_t)i < *n; i++)
            nodes[i] = (cudaGraphNode_t)(intptr_t)(i + 1);
    *n = (size_t)nnodes;
    return cudaSuccess;
}
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t nd, enum cudaGraphNodeType *t)
{
    *t = (enum cudaGraphNodeType)types[(intptr_t)nd - 1];
    return cudaSuccess;
}
cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t nd,
                                         struct cudaMemcpy3DParms *p)
{
    int i = (int)((intptr_t)nd - 1);
    memset(p, 0, sizeof *p);
    p->kind = (enum cudaMemcpyKind)kinds[i];
    p->srcPtr.ptr = &mem[2 * i + (src_dev[i] ? 32 : 0)];
    p->dstPtr.ptr = &mem[2 * i + 1 + (dst_dev[i] ? 32 : 0)];
    p->extent.width = 8;
    p->extent.height = p->extent.depth = 1;
    return cudaSuccess;
}
/* The upper half of mem plays device memory. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
                                     const void *p)
{
    memset(a, 0, sizeof *a);
    a->type = (const char *)p >= mem + 32 ? cudaMemoryTypeDevice
                                          : cudaMemoryTypeUnregistered;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { (void)e; return "fake"; }

/* argv: fail_get, then per node: type kind src_dev dst_dev */
int main(int argc, char **argv)
{
    char why[256] = "";
    fail_get = atoi(argv[1]);
    for (int a = 2; a + 3 < argc; a += 4, nnodes++) {
        types[nnodes] = atoi(argv[a]);
        kinds[nnodes] = atoi(argv[a + 1]);
        src_dev[nnodes] = atoi(argv[a + 2]);
        dst_dev[nnodes] = atoi(argv[a + 3]);
    }
    int ok = copies_stay_on_device((cudaGraph_t)mem, why, sizeof why);
    printf("%d %s\n", ok, why);
    return 0;
}
"""

KERNEL, MEMCPY, MEMSET = 0, 1, 2     # cudaGraphNodeType
H2H, H2D, D2H, D2D, DEFAULT = 0, 1, 2, 3, 4     # cudaMemcpyKind


@pytest.fixture(scope="module")
def copy_check(tmp_path_factory):
    import os
    import shutil
    import subprocess
    from cuda_host_util import cuda_include
    inc = cuda_include()
    if not inc or not shutil.which("gcc"):
        pytest.skip("needs the CUDA toolkit's headers and gcc")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    d = tmp_path_factory.mktemp("cugraph_copies")
    (d / "h.c").write_text(COPY_HARNESS)
    r = subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE",
                        "-DTFMINI_WITH_CUDA", "-no-pie", "-fno-pic", "-I",
                        os.path.join(root, "csrc"), "-I", inc,
                        str(d / "h.c"), "-o", str(d / "h"), "-lm",
                        "-Wl,--unresolved-symbols=ignore-all"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    def run(*nodes, fail_get=0):
        args = [str(d / "h"), str(fail_get)]
        for nd in nodes:
            args += [str(v) for v in nd]
        out = subprocess.run(args, capture_output=True, text=True,
                             check=True).stdout
        ok, _, why = out.partition(" ")
        return int(ok), why.strip()
    return run


def test_captured_device_copies_are_kept(copy_check):
    assert copy_check() == (1, "")
    assert copy_check((KERNEL, 0, 0, 0), (MEMSET, 0, 0, 0),
                      (MEMCPY, D2D, 1, 1))[0] == 1
    # cudaMemcpyDefault: the pointers say where the memory is.
    assert copy_check((MEMCPY, DEFAULT, 1, 1))[0] == 1


@pytest.mark.parametrize("kind,src,dst", [
    (H2D, 0, 1), (D2H, 1, 0), (H2H, 0, 0), (DEFAULT, 0, 1),
    (DEFAULT, 1, 0)])
def test_captured_host_copies_refuse_the_graph(copy_check, kind, src, dst):
    # A replay would read (or write) the host address again, long after
    # the kernel that queued the copy returned: never kept.
    ok, why = copy_check((KERNEL, 0, 0, 0), (MEMCPY, D2D, 1, 1),
                         (MEMCPY, kind, src, dst))
    assert ok == 0 and "host memory" in why and f"kind {kind}" in why


def test_unreadable_graph_is_refused(copy_check):
    ok, why = copy_check((MEMCPY, D2D, 1, 1), fail_get=1)
    assert ok == 0 and "captured graph's nodes" in why
