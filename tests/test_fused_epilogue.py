"""Which _FusedMatMul programs a GPU runs as one cuBLASLt matmul with an
epilogue (csrc/graph/fused_epilogue.c, Note [Matmul epilogues on the
GPU]): the pure mapping program -> epilogue, checked here on the CPU
through its ctypes hook, and the programs a traced Dense layer really
makes (their text, from the optimized graph)."""
import ctypes

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini._opids import ID

NONE, BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS = range(6)
PRODUCT = -1
MAX_DIMS = 8


def IN(k):
    return -2 - k


F32, F16, BF16, F64 = (tf.float32._enum, tf.float16._enum,
                       tf.bfloat16._enum, tf.float64._enum)


def _hook():
    f = ctypes.CDLL(_C.__file__).tfm_fused_epilogue_check
    f.restype = ctypes.c_int
    return f


def epilogue(rows, inputs, out=(32, 16), out_dtype=F32):
    """rows: (op name, operands, approximate); inputs: [(shape, dtype)].
    Returns (epilogue, bias input)."""
    flat = []
    for op, srcs, ai in rows:
        nin = len(srcs)
        srcs = list(srcs) + [0] * (2 - nin)
        flat += [ID[op], nin, srcs[0], srcs[1], ai]
    rows_a = (ctypes.c_int64 * len(flat))(*flat)
    out_a = (ctypes.c_int64 * len(out))(*out)
    n = max(len(inputs), 1)
    ndim = (ctypes.c_int32 * n)(*[len(s) for s, _ in inputs] or [0])
    dims = (ctypes.c_int64 * (MAX_DIMS * n))()
    for k, (s, _) in enumerate(inputs):
        for j, d in enumerate(s):
            dims[k * MAX_DIMS + j] = d
    dts = (ctypes.c_int32 * n)(*[d for _, d in inputs] or [0])
    bias = ctypes.c_int(-7)
    e = _hook()(len(rows), rows_a, out_dtype, len(out), out_a, len(inputs),
                ndim, dims, dts, ctypes.byref(bias))
    return e, bias.value


B16 = [((16,), F32)]


@pytest.mark.parametrize("rows,inputs,want", [
    ([("AddV2", (PRODUCT, IN(0)), 0)], B16, (BIAS, 0)),
    ([("AddV2", (IN(0), PRODUCT), 0)], B16, (BIAS, 0)),     # b + x @ w
    ([("AddV2", (PRODUCT, IN(0)), 0), ("Relu", (0,), 0)], B16,
     (RELU_BIAS, 0)),
    ([("AddV2", (IN(0), PRODUCT), 0), ("Relu", (0,), 0)], B16,
     (RELU_BIAS, 0)),
    ([("AddV2", (PRODUCT, IN(0)), 0), ("Gelu", (0,), 1)], B16,
     (GELU_BIAS, 0)),
    ([("Relu", (PRODUCT,), 0)], [], (RELU, -1)),
    ([("Gelu", (PRODUCT,), 1)], [], (GELU, -1)),
    ([("AddV2", (PRODUCT, IN(0)), 0)], [((1, 16), F32)], (BIAS, 0)),
])
def test_forms_cublaslt_computes(rows, inputs, want):
    assert epilogue(rows, inputs) == want


@pytest.mark.parametrize("rows,inputs,why", [
    # exact (erf) GELU: cuBLASLt has only the tanh form
    ([("AddV2", (PRODUCT, IN(0)), 0), ("Gelu", (0,), 0)], B16, "erf gelu"),
    ([("Gelu", (PRODUCT,), 0)], [], "erf gelu"),
    ([("AddV2", (PRODUCT, IN(0)), 0), ("Sigmoid", (0,), 0)], B16,
     "sigmoid"),
    ([("AddV2", (PRODUCT, IN(0)), 0), ("Relu6", (0,), 0)], B16, "relu6"),
    ([("Mul", (PRODUCT, IN(0)), 0)], [((), F32)], "scale"),
    ([("Sub", (PRODUCT, IN(0)), 0)], B16, "sub"),
    ([("AddV2", (PRODUCT, IN(0)), 0)], [((32, 16), F32)], "full addend"),
    ([("AddV2", (PRODUCT, IN(0)), 0)], [((), F32)], "scalar"),
    ([("AddV2", (PRODUCT, IN(0)), 0)], [((32, 1), F32)], "column"),
    ([("AddV2", (PRODUCT, IN(0)), 0)], [((8,), F32)], "wrong length"),
    ([("AddV2", (PRODUCT, IN(0)), 0)], [((16,), F64)], "bias dtype"),
    # the activation before the bias is another function
    ([("Relu", (PRODUCT,), 0), ("AddV2", (0, IN(0)), 0)], B16, "order"),
    # two activations, or bias + relu + something
    ([("AddV2", (PRODUCT, IN(0)), 0), ("Relu", (0,), 0),
      ("Relu", (1,), 0)], B16, "too long"),
    # the activation reads the bias, not the sum
    ([("AddV2", (PRODUCT, IN(0)), 0), ("Relu", (IN(0),), 0)], B16,
     "not a chain"),
])
def test_forms_left_to_the_general_path(rows, inputs, why):
    e, bias = epilogue(rows, inputs)
    assert (e, bias) == (NONE, -1), why


@pytest.mark.parametrize("dt", [F16, BF16])
def test_half_programs_map_with_a_bias_of_their_dtype(dt):
    rows = [("AddV2", (PRODUCT, IN(0)), 0), ("Relu", (0,), 0)]
    assert epilogue(rows, [((16,), dt)], out_dtype=dt) == (RELU_BIAS, 0)
    assert epilogue(rows, [((16,), F32)], out_dtype=dt) == (NONE, -1)


def test_float64_has_no_epilogue():
    rows = [("AddV2", (PRODUCT, IN(0)), 0)]
    assert epilogue(rows, [((16,), F64)], out_dtype=F64) == (NONE, -1)


def test_batched_output_maps_by_its_last_dim():
    rows = [("AddV2", (PRODUCT, IN(0)), 0)]
    assert epilogue(rows, [((16,), F32)], out=(4, 32, 16)) == (BIAS, 0)
    assert epilogue(rows, [((1, 1, 16), F32)], out=(4, 32, 16)) == (BIAS, 0)
    assert epilogue(rows, [((32, 16), F32)], out=(4, 32, 16)) == (NONE, -1)


def test_bad_rows_are_refused_by_the_hook():
    assert epilogue([("Relu", (3,), 0)], [])[0] == -1   # forward ref
    assert epilogue([("AddV2", (PRODUCT, IN(2)), 0)], B16)[0] == -1


# ---- the programs a traced Dense layer makes (the CPU's graph) ----

def _programs(f, *args):
    cf = f.get_concrete_function(*args)
    return [op.program for op in cf.optimized_graph.get_operations()
            if op.type == "_FusedMatMul"]


@pytest.mark.parametrize("act,text", [
    ("relu", "r0 = AddV2(matmul, {b}); out0 = Relu(r0)"),
    (None, "out0 = AddV2(matmul, {b})"),
    ("gelu", "r0 = AddV2(matmul, {b}); out0 = Gelu(r0)"),
])
def test_dense_layer_programs_are_the_mapped_forms(act, text):
    layer = tf.keras.layers.Dense(16, activation=act)
    x = tf.constant(np.ones((32, 8), np.float32))
    layer(x)
    progs = _programs(tf.function(lambda x: layer(x)), x)
    assert len(progs) == 1
    b = progs[0].split("AddV2(matmul, ")[1].split(")")[0]
    assert progs[0] == text.format(b=b)
