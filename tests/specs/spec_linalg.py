"""OpSpecs for the linalg family (csrc/ops/ops_linalg.def)."""
import numpy as np

import tfmini as tf

from .opspec import FLOATS, NUMERIC, OpSpec


def _t(x):
    return np.swapaxes(x, -1, -2)


# (a, b) shapes: plain, batched, broadcast batch dims, rank-2 against a
# batch, empty dims (zero-size output and zero-length inner dim).
MATMUL = [((2, 3), (3, 4)), ((1, 1), (1, 1)), ((4, 2, 3), (4, 3, 5)),
          ((4, 2, 3), (3, 5)), ((2, 3), (4, 3, 5)),
          ((2, 1, 3, 4), (5, 4, 2)), ((0, 3), (3, 2)), ((2, 0), (0, 3)),
          ((3, 0, 2, 2), (2, 2))]
# Same products with a stored transposed.
MATMUL_TA = [((3, 2), (3, 4)), ((4, 3, 2), (3, 5)), ((2, 1, 4, 3), (5, 4, 2))]
MATMUL_TB = [((2, 3), (4, 3)), ((4, 2, 3), (4, 5, 3)), ((2, 3), (6, 1, 4, 3))]
MATMUL_TT = [((3, 2), (4, 3)), ((5, 3, 2), (1, 4, 3))]

SPECS = [
    OpSpec("matmul", tf.matmul, np.matmul, MATMUL,
           NUMERIC + ("int8", "int16", "uint8"), grad=(0, 1),
           ops=["BatchMatMulV2"], second_order=True),
    OpSpec("matmul_transpose_a",
           lambda a, b: tf.matmul(a, b, transpose_a=True),
           lambda a, b: _t(a) @ b, MATMUL_TA, NUMERIC, grad=(0, 1),
           ops=["BatchMatMulV2"]),
    OpSpec("matmul_transpose_b",
           lambda a, b: tf.matmul(a, b, transpose_b=True),
           lambda a, b: a @ _t(b), MATMUL_TB, NUMERIC, grad=(0, 1),
           ops=["BatchMatMulV2"]),
    OpSpec("matmul_adjoint_both",
           lambda a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True),
           lambda a, b: _t(a) @ _t(b), MATMUL_TT, NUMERIC, grad=(0, 1),
           ops=["BatchMatMulV2"]),
    OpSpec("matmul_operator", lambda a, b: a @ b, np.matmul,
           [((2, 3), (3, 4)), ((3, 2, 3), (3, 1))], FLOATS, grad=(0, 1),
           ops=["BatchMatMulV2"]),
    # Bigger products take Eigen's blocked, multithreaded path.
    OpSpec("matmul_large", tf.matmul, np.matmul,
           [((130, 257), (257, 70)), ((3, 65, 66), (66, 67))], FLOATS,
           rtol=1e-4, atol=1e-4, ops=["BatchMatMulV2"]),
]
