"""The same Python code, eager and traced: same values (bit for bit: the
graph runs the same kernels), same dtypes and shapes, same structure,
same tf.print output, same exception type.

`same_eager_and_traced` runs a function eagerly, then through tf.function
twice (the tracing call and a cached one, which takes the C call path).

Every test here runs once with all graph passes on and once with each
pass off in turn (the `graph_passes` fixture): a pass must never change
what a program computes."""
import collections

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from specs import SPECS

_RANDOM = 1 << 4     # TFM_OPF_RANDOM (csrc/ops/op.h)
_FLAGS = {row[0]: row[3] for row in _C.op_table()}

# "all", then "no_<pass>" for each pass, in pipeline order.
# "native" compiles only fused nodes of 65,536 elements or more, far
# bigger than the harness's tensors: test_graph_native.py covers it.
_PASS_CONFIGS = ["all"] + [f"no_{name}" for name in _C.graph_passes()
                           if name != "native"]


@pytest.fixture(autouse=True, params=_PASS_CONFIGS)
def graph_passes(request):
    """The passes functions traced in this test use; restored after."""
    saved = _C.graph_passes()
    options = {name: True for name in saved}
    if request.param != "all":
        options[request.param[len("no_"):]] = False
    tf.config.optimizer.set_experimental_options(options)
    assert _C.graph_passes() == options
    yield request.param
    _C.set_graph_passes(saved)


def _run(fn, args, capsys):
    capsys.readouterr()
    try:
        result = fn(*args)
        error = None
    except Exception as e:      # noqa: BLE001  (compared by type)
        result, error = None, e
    out, err = capsys.readouterr()
    return result, error, out + "|" + err


def _flat(x):
    if isinstance(x, tf.Tensor):
        return [("T", x)]
    if isinstance(x, (list, tuple)):
        return [(type(x).__name__, len(x))] + [f for v in x for f in _flat(v)]
    if isinstance(x, dict):
        return [("dict", tuple(sorted(x)))] + [
            f for k in sorted(x) for f in _flat(x[k])]
    return [("value", x)]


def assert_same_result(a, b, exact=True):
    fa, fb = _flat(a), _flat(b)
    assert [k for k, _ in fa] == [k for k, _ in fb], (a, b)
    for (k, x), (_, y) in zip(fa, fb):
        if k != "T":
            assert x == y
            continue
        assert x.dtype == y.dtype and x.shape == y.shape
        if exact:
            np.testing.assert_array_equal(x.numpy(), y.numpy())


def same_eager_and_traced(fn, args, capsys, exact=True, **tf_function_kw):
    eager, eager_err, eager_out = _run(fn, args, capsys)
    traced_fn = tf.function(fn, **tf_function_kw)
    for _ in range(2):
        traced, err, out = _run(traced_fn, args, capsys)
        if eager_err is not None or err is not None:
            assert type(err) is type(eager_err), (eager_err, err)
            continue
        assert_same_result(eager, traced, exact)
        # Python's print runs only while tracing; tf.print every call.
        assert out.split("|")[1] == eager_out.split("|")[1]
    return eager


def c(x, dtype=None):
    return tf.constant(x, dtype=dtype)


A = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]], np.float32)
B = np.array([2.0, -0.5, 1.5], np.float32)
I = np.array([[7, -3, 4], [0, 9, -8]], np.int32)
Pair = collections.namedtuple("Pair", "first second")


def _opt(name):
    """A tf attribute that other issues add; cases using it skip until
    then."""
    return getattr(tf, name, None)


CASES = {
    "add_sub_mul": (lambda x, y: x + y - x * y, (c(A), c(B))),
    "div": (lambda x, y: x / y, (c(A), c(B))),
    "int_truediv": (lambda x, y: x / y, (c(I), c(np.int32(3)))),
    "floordiv_mod": (lambda x, y: (x // y, x % y), (c(I), c(np.int32(3)))),
    "pow": (lambda x: x ** 2.0, (c(A),)),
    "neg_abs": (lambda x: abs(-x), (c(A),)),
    "python_scalars": (lambda x: 2.0 * x - 1.0 + x / 4.0, (c(A),)),
    "reflected": (lambda x: 1.0 - x, (c(B),)),
    "compare": (lambda x, y: (x < y, x >= y, x == y, x != y), (c(A), c(B))),
    "logic": (lambda x, y: (x & y, x | y, x ^ y, ~x),
              (c([True, False, True]), c([True, True, False]))),
    "bitwise": (lambda x, y: (x & y, x | y, x ^ y, ~x),
                (c(I), c(np.int32(6)))),
    "cast": (lambda x: tf.cast(tf.cast(x, tf.int32), tf.float64), (c(A),)),
    "broadcast": (lambda x, y: x + y, (c(A), c(B.reshape(1, 3)))),
    "numpy_args": (lambda x, y: tf.multiply(x, y), (A, B)),
    "constant_inside": (lambda x: x + c([1.0, 2.0, 3.0]), (c(A),)),
    "unrolled_python_loop": (lambda x: [x * float(i) for i in range(4)],
                             (c(B),)),
    "python_branch_on_value": (lambda x, flag: x + 1.0 if flag else x - 1.0,
                               (c(B), True)),
    "nested_in": (lambda d: d["a"][0] * d["b"].second,
                  ({"a": [c(B)], "b": Pair(1, c(A))},)),
    "nested_out": (lambda x: {"k": (x, [x + 1.0]), "n": None,
                              "p": Pair(x, x * 2.0)}, (c(B),)),
    "returns_input": (lambda x: x, (c(B),)),
    "empty_tensor": (lambda x: x * 2.0, (c(np.zeros((0, 3), np.float32)),)),
    "float16": (lambda x: x * x + x, (c(A.astype(np.float16)),)),
    "float64_int64": (lambda x, y: (x * 2.0, y * 3),
                      (c(A.astype(np.float64)), c(I.astype(np.int64)))),
    "tf_print": (lambda x: (tf.print("x =", x, [x, 1]), x + 1.0)[1],
                 (c(np.arange(12.0, dtype=np.float32)),)),
    "tf_print_summarize": (lambda x: (tf.print(x, summarize=1), x)[1],
                           (c(I),)),
    "chain_of_300": (lambda x: _chain(x, 300), (c(B),)),
    "reduce_sum": (lambda x: _opt("reduce_sum")(x, axis=1), (c(A),)),
    "reduce_mean_keepdims": (
        lambda x: _opt("reduce_mean")(x, axis=0, keepdims=True), (c(A),)),
    "matmul": (lambda x, y: _opt("matmul")(x, y),
               (c(A), c(A.T.copy()))),
    "reshape_transpose": (
        lambda x: _opt("transpose")(_opt("reshape")(x, [3, 2])), (c(A),)),
    "indexing": (lambda x: (x[0], x[:, 1:], x[-1, ::2]), (c(A),)),
    "concat": (lambda x, y: _opt("concat")([x, y], axis=0), (c(A), c(A))),
    "softmax": (lambda x: _opt("nn").softmax(x), (c(A),)),
}


def _chain(x, n):
    for i in range(n):
        x = x * 0.5 + float(i % 3)
    return x


ERROR_CASES = {
    "dtype_mismatch": (lambda x, y: x + y,
                       (c(A), c(A.astype(np.float64)))),
    "shape_mismatch": (lambda x, y: x * y, (c(A), c([1.0, 2.0]))),
    "logical_on_floats": (lambda x: x & x, (c(A),)),
    "bad_cast": (lambda x: tf.cast(x, "no such dtype"), (c(A),)),
    "python_error": (lambda x: x + {}["missing"], (c(A),)),
}


# Cases over ops other issues add: skipped until the op exists.
NEEDS = {"reduce_sum": "reduce_sum", "reduce_mean_keepdims": "reduce_mean",
         "matmul": "matmul", "reshape_transpose": "transpose",
         "concat": "concat", "softmax": "nn.softmax",
         "indexing": "strided_slice"}


def _has(path):
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj is not None


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_equals_traced(name, capsys):
    if name in NEEDS and not _has(NEEDS[name]):
        pytest.skip(f"tf.{NEEDS[name]} is not built yet")
    fn, args = CASES[name]
    try:
        fn(*args)
    except tf.errors.InvalidArgumentError as e:
        if "has no kernel" not in str(e):
            raise
        pytest.skip(f"kernel not built yet: {e}")
    same_eager_and_traced(fn, args, capsys)


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_eager_and_traced_raise_the_same(name, capsys):
    fn, args = ERROR_CASES[name]
    with pytest.raises(Exception):
        fn(*args)
    same_eager_and_traced(fn, args, capsys)


def test_same_under_input_signature(capsys):
    sig = [tf.TensorSpec([None, 3]), tf.TensorSpec([3])]
    fn = CASES["add_sub_mul"][0]
    same_eager_and_traced(fn, (c(A), c(B)), capsys, input_signature=sig)


@pytest.mark.skipif(not hasattr(tf, "Variable"), reason="needs tf.Variable")
def test_same_with_variables(capsys):
    def run():
        v = tf.Variable(np.array([1.0, 2.0, 3.0], np.float32))
        log = []

        def body(x):
            v.assign_add(x)
            r = v * 2.0
            v.assign_sub(x * 0.5)
            return r, v.read_value()
        return v, log, body

    v1, _, body1 = run()
    eager = [body1(c(B)) for _ in range(3)]
    v2, _, body2 = run()
    traced_fn = tf.function(body2)
    traced = [traced_fn(c(B)) for _ in range(3)]
    for e, t in zip(eager, traced):
        assert_same_result(e, t)
    np.testing.assert_array_equal(v1.numpy(), v2.numpy())


@pytest.mark.skipif(not hasattr(tf, "GradientTape"), reason="needs tapes")
@pytest.mark.parametrize("name", ["add_sub_mul", "div", "pow", "neg_abs",
                                  "python_scalars", "chain_of_300",
                                  "float64_int64"])
def test_same_gradients(name, capsys):
    fn, args = CASES[name]
    args = tuple(a for a in args if a.dtype.is_floating)

    def grads(*xs):
        with tf.GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            out = fn(*xs) if name != "float64_int64" else fn(xs[0], c(I))
            out = out[0] if isinstance(out, tuple) else out
        return tape.gradient(out, list(xs))

    try:
        grads(*args)
    except tf.errors.UnimplementedError as e:
        pytest.skip(f"gradient not built yet: {e}")
    same_eager_and_traced(grads, args, capsys)


def _spec_cases():
    out = []
    for spec in SPECS:
        for shapes in spec.shapes[:3]:
            for dtype in spec.dtypes[:2]:
                out.append(pytest.param(spec, shapes, dtype,
                                        id=f"{spec.name}-{dtype}-{shapes}"))
    return out


@pytest.mark.parametrize("spec,shapes,dtype", _spec_cases())
def test_op_table_eager_equals_traced(spec, shapes, dtype, capsys):
    rng = np.random.default_rng(0)
    xs = [c(x) for x in spec.make_inputs(rng, shapes, dtype)]
    random = any(_FLAGS.get(op, 0) & _RANDOM for op in spec.ops)
    same_eager_and_traced(spec.fn, xs, capsys, exact=not random)
