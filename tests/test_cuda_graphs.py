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


def test_where_of_a_known_shape_is_not():
    """A Where of a condition known when traced has a known output shape,
    but its GPU kernel still reads its count back (Note [Where on the
    GPU]): the rule names it rather than let the capture fail."""
    @tf.function
    def f(a):
        with tf.device(FAKE):
            c = tf.constant([True, False, True])
            return tf.cast(tf.where(c), tf.float32) * a

    (ok, why), y = judge(f, tf.constant(2.0))
    assert ok == 0 and "'Where'" in why and "count back" in why, why
    np.testing.assert_array_equal(y.numpy(), [[0.0], [4.0]])


def test_gpu_only_reasons_stay_off_cpu_plans():
    """A plan on the CPU is refused for being there, not for what a GPU
    kernel of its Where or float16 scatter would do."""
    @tf.function
    def f(a):
        c = tf.constant([True, False, True])
        b = tf.tensor_scatter_nd_add(a, tf.constant([[0]]),
                                     tf.constant([1.0], tf.float16))
        return tf.cast(tf.where(c), tf.float16) * b[0]

    (ok, why), _ = judge(f, tf.constant(np.ones(3, np.float16)))
    assert ok == 0 and "runs on the CPU" in why, why


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


def emb_model(rng):
    with tf.device(FAKE):
        emb = tf.Variable(rng.standard_normal((20, 4)).astype(np.float32))
        w = tf.Variable(rng.standard_normal((4, 1)).astype(np.float32))
    return emb, w


def test_embedding_train_step_is_eligible():
    """Gather's gradient is TensorScatterAdd, whose GPU kernel checks its
    indices: inside a capture it sets the record's flag instead of
    reading back (Note [Index checks inside a CUDA graph capture]), so an
    embedding model's step is no longer kept off a graph."""
    rng = np.random.default_rng(0)
    emb, w = emb_model(rng)
    with tf.device(FAKE):
        opt = tf.keras.optimizers.Adam(0.05)

    @tf.function
    def step(ids, y):
        with tf.device(FAKE):
            with tf.GradientTape() as tape:
                h = tf.reduce_mean(tf.gather(emb, ids), axis=1)
                loss = tf.reduce_mean(tf.square(tf.matmul(h, w) - y))
            gs = tape.gradient(loss, [emb, w])
            opt.apply_gradients(zip(gs, [emb, w]))
        return loss

    ids = tf.constant(rng.integers(0, 20, (16, 3)).astype(np.int32))
    y = tf.constant(rng.standard_normal((16, 1)).astype(np.float32))
    (ok, why), loss0 = judge(step, ids, y)
    assert ok == 1, why
    ops = {op.type for op in step.get_concrete_function(
        ids, y).graph.get_operations()}
    assert "TensorScatterAdd" in ops, ops
    for _ in range(10):
        loss = step(ids, y)
    assert float(loss) < float(loss0)


SCATTERS = {
    "add": tf.tensor_scatter_nd_add, "update": tf.tensor_scatter_nd_update,
    "min": tf.tensor_scatter_nd_min, "max": tf.tensor_scatter_nd_max,
}


@pytest.mark.parametrize("kind", list(SCATTERS) + ["gather_nd", "shape"])
@pytest.mark.parametrize("idt", [np.int32, np.int64])
def test_index_checking_and_shape_steps_are_eligible(kind, idt):
    t = np.arange(12, dtype=np.float32).reshape(4, 3)
    ix = tf.constant(np.array([[3], [0], [3]], idt))

    @tf.function
    def f(a, i):
        with tf.device(FAKE):
            b = a * 2.0
            if kind == "gather_nd":
                return tf.gather_nd(b, i)
            if kind == "shape":
                s = tf.cast(tf.shape(b), tf.float32)
                return b * tf.cast(tf.size(b), tf.float32) + s[0] + \
                    tf.cast(tf.rank(b), tf.float32)
            return SCATTERS[kind](b, i, tf.ones((3, 3)) * 5.0)

    (ok, why), y = judge(f, tf.constant(t), ix)
    assert ok == 1, why
    with tf.device("/CPU:0"):
        want = f.python_function(tf.constant(t), ix)
    np.testing.assert_array_equal(y.numpy(), want.numpy())


@pytest.mark.parametrize("kind", ["add", "min", "max"])
def test_scatter_the_gpu_runs_on_host_copies_is_not(kind):
    """float16 adds, mins and maxes run the CPU kernel on host copies on
    a GPU (no atomics for them there), which waits for the stream: the
    rule says so rather than let a capture fail."""
    t = np.arange(6, dtype=np.float16)

    @tf.function
    def f(a):
        with tf.device(FAKE):
            return SCATTERS[kind](a, tf.constant([[1], [4]]),
                                  tf.constant([2.0, -2.0], tf.float16))

    (ok, why), y = judge(f, tf.constant(t))
    assert ok == 0 and "host copies" in why and "TensorScatter" in why, why
    assert y.dtype == tf.float16


def test_update_of_any_dtype_is_eligible():
    @tf.function
    def f(a):
        with tf.device(FAKE):
            return tf.tensor_scatter_nd_update(
                a, tf.constant([[1], [4]]), tf.constant([2, -2], tf.int16))

    (ok, why), y = judge(f, tf.constant(np.arange(6, dtype=np.int16)))
    assert ok == 1, why
    np.testing.assert_array_equal(y.numpy(), [0, 2, 2, 3, -2, 5])


def test_bad_index_in_an_eligible_function_is_the_cpus_error():
    """The FAKE device never captures, so this is the plain run that the
    record falls back to when its flag says an index was out of range."""
    t = tf.constant(np.zeros((4, 2), np.float32))

    @tf.function
    def f(a, i):
        with tf.device(FAKE):
            return tf.tensor_scatter_nd_add(a * 1.0, i, tf.ones((2, 2)))

    (ok, why), _ = judge(f, t, tf.constant([[1], [2]]))
    assert ok == 1, why
    with pytest.raises(tf.errors.InvalidArgumentError) as got:
        f(t, tf.constant([[1], [7]]))
    with tf.device("/CPU:0"):
        with pytest.raises(tf.errors.InvalidArgumentError) as want:
            tf.tensor_scatter_nd_add(t, tf.constant([[1], [7]]),
                                     tf.ones((2, 2)))
    # The traced call adds the node and its line to the kernel's words.
    first = str(want.value).split(" [Op:")[0]
    assert str(got.value).split("\n")[0] == first, (got.value, first)


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
    import subprocess
    from cuda_host_util import gcc_cuda_program
    exe = gcc_cuda_program(tmp_path_factory, "cugraph_copies", COPY_HARNESS)

    def run(*nodes, fail_get=0):
        args = [exe, str(fail_get)]
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


# exec_cugraph.c's flag path (Note [Index checks inside a CUDA graph
# capture]) on the host: the stream's copies are memcpy/memset, the
# device flag and the variables plain host memory. argv: the flag's
# value after the launch, whether the flag's read fails. Prints what
# index_error returned, the flag after it, and the variable's bytes.
FLAG_HARNESS = r"""
#define FAKE_GLUE_ON_HOST FAKE_GLUE_EXIT
#include "cuda_fake_glue.h"
#include "graph/exec_cugraph.c"

static int syncs;

const tfm_device *tfm_device_get(int i) { (void)i; return &fake_gpu.dev; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; syncs++; return cudaSuccess; }
tfm_code tfm_tensor_copy_into(tfm_tensor *dst, const tfm_tensor *src)
{
    memcpy(tfm_tensor_data(dst), tfm_tensor_data(src),
           (size_t)tfm_shape_numel(&src->shape) * 4);
    return TFM_OK;
}

int main(int argc, char **argv)
{
    float now[3] = {1, 2, 3}, before[3] = {0};
    tfm_buffer bn = {.refcount = 1, .data = now, .nbytes = sizeof now};
    tfm_buffer bb = {.refcount = 1, .data = before, .nbytes = sizeof before};
    tfm_tensor tn = {.refcount = 1, .shape = {.ndim = 1, .dims = {3}},
                     .device = 1, .buf = &bn};
    tfm_tensor tb = tn;
    tb.buf = &bb;
    tfm_variable v = {.refcount = 1, .value = &tn};
    tfm_variable *vp = &v;
    tfm_tensor *kept = &tb;
    int flag = 0;
    struct tfm_cugraph r = {.dev = 1, .checks = 1, .flag = &flag,
                            .nkeep = 1, .keep_var = &vp, .kept = &kept};
    keep_vars(&r);                      /* before the launch */
    now[0] = 100;                       /* the launch wrote the variable */
    now[2] = -7;
    flag = atoi(argv[1]);
    fake_fail_d2h = atoi(argv[2]);
    int got = index_error(&r);
    printf("%d %d %g %g %g %d|%s\n", got, flag, now[0], now[1], now[2],
           syncs, got < 0 ? fake_gpu_error : "");
    return 0;
}
"""


@pytest.fixture(scope="module")
def flag_path(tmp_path_factory):
    import subprocess
    from cuda_host_util import gcc_cuda_program
    exe = gcc_cuda_program(tmp_path_factory, "cugraph_flag", FLAG_HARNESS)

    def run(flag, fail_copy=0):
        out = subprocess.run([exe, str(flag), str(fail_copy)],
                             capture_output=True, text=True,
                             check=True).stdout
        nums, _, err = out.strip().partition("|")
        got, fl, a, b, c, syncs = nums.split()
        return int(got), int(fl), [float(a), float(b), float(c)], \
            int(syncs), err
    return run


def test_flag_clear_after_a_launch_keeps_its_results(flag_path):
    got, flag, var, syncs, _ = flag_path(0)
    # One small read and one wait, then the call's outputs are copied.
    assert got == 0 and flag == 0 and syncs == 1
    assert var == [100.0, 2.0, -7.0]


def test_flag_set_puts_the_variables_back_and_clears_it(flag_path):
    """An index was out of range: the graph's writes to variables are
    undone, so the plain rerun starts from the state before the call and
    ends where a plain run that raised would; the next replay starts
    with a clear flag."""
    got, flag, var, _, _ = flag_path(1)
    assert got == 1 and flag == 0
    assert var == [1.0, 2.0, 3.0]


def test_unreadable_flag_is_the_calls_error(flag_path):
    got, _, var, _, err = flag_path(1, fail_copy=1)
    assert got == -1 and "index flag" in err
    # Nothing is known about the indices: the variables stay as the
    # launch left them, and the call fails (the work was done).
    assert var == [100.0, 2.0, -7.0]
