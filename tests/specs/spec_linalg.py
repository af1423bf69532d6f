"""OpSpecs for the linalg family (csrc/ops/ops_linalg.def)."""
import numpy as np

import tfmini as tf

from .opspec import FLOATS, NUMERIC, OpSpec, uniform


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
           ops=["BatchMatMulV2"], second_order=True),
    OpSpec("matmul_transpose_b",
           lambda a, b: tf.matmul(a, b, transpose_b=True),
           lambda a, b: a @ _t(b), MATMUL_TB, NUMERIC, grad=(0, 1),
           ops=["BatchMatMulV2"], second_order=True),
    OpSpec("matmul_adjoint_both",
           lambda a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True),
           lambda a, b: _t(a) @ _t(b), MATMUL_TT, NUMERIC, grad=(0, 1),
           ops=["BatchMatMulV2"], second_order=True),
    OpSpec("matmul_operator", lambda a, b: a @ b, np.matmul,
           [((2, 3), (3, 4)), ((3, 2, 3), (3, 1))], FLOATS, grad=(0, 1),
           ops=["BatchMatMulV2"]),
    # Bigger products take Eigen's blocked, multithreaded path.
    OpSpec("matmul_large", tf.matmul, np.matmul,
           [((130, 257), (257, 70)), ((3, 65, 66), (66, 67))], FLOATS,
           rtol=1e-4, atol=1e-4, ops=["BatchMatMulV2"]),
]


def well_conditioned(rng, shape, dtype):
    """[..., M, M] matrices far from singular: uniform(-1, 1) plus M on
    the diagonal (diagonally dominant), so solves and inverses are
    accurate and finite differences stay in the invertible region."""
    x = rng.uniform(-1, 1, size=shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        x = x + shape[-1] * np.eye(shape[-1])
    return x.astype(dtype)


def _rhs(rng, shape, dtype):
    return rng.uniform(-2, 2, size=shape).astype(dtype)


SOLVE = [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1)), ((1, 1), (1, 3)),
         ((2, 1, 3, 3), (2, 1, 3, 2)), ((0, 0), (0, 2)), ((2, 2), (2, 0))]
SQUARE = [((3, 3),), ((2, 4, 4),), ((1, 1),), ((2, 1, 3, 3),), ((0, 0),),
          ((2, 0, 0),)]
_LU = dict(dtypes=FLOATS, rtol=1e-4, atol=1e-5, second_order=True)

SPECS += [
    OpSpec("linalg_solve", tf.linalg.solve, np.linalg.solve, SOLVE,
           inputs=[well_conditioned, _rhs], grad=(0, 1),
           ops=["MatrixSolve"], **_LU),
    OpSpec("linalg_solve_adjoint",
           lambda a, b: tf.linalg.solve(a, b, adjoint=True),
           lambda a, b: np.linalg.solve(_t(a), b), SOLVE[:4],
           inputs=[well_conditioned, _rhs], grad=(0, 1),
           ops=["MatrixSolve"], **_LU),
    OpSpec("linalg_inv", tf.linalg.inv, np.linalg.inv, SQUARE[:5],
           inputs=[well_conditioned], grad=(0,), ops=["MatrixInverse"],
           **_LU),
    OpSpec("linalg_inv_adjoint", lambda a: tf.linalg.inv(a, adjoint=True),
           lambda a: np.linalg.inv(_t(a)), SQUARE[:4],
           inputs=[well_conditioned], grad=(0,), ops=["MatrixInverse"],
           **_LU),
    OpSpec("linalg_det", tf.linalg.det, np.linalg.det, SQUARE,
           inputs=[well_conditioned], grad=(0,),
           ops=["MatrixDeterminant"], **_LU),
    OpSpec("linalg_slogdet_log_abs",
           lambda a: tf.linalg.slogdet(a).log_abs_determinant,
           lambda a: np.linalg.slogdet(a)[1], SQUARE,
           inputs=[uniform()], grad=(0,), ops=["LogMatrixDeterminant"],
           **_LU),
    OpSpec("linalg_slogdet_sign", lambda a: tf.linalg.slogdet(a).sign,
           lambda a: np.linalg.slogdet(a)[0], SQUARE, inputs=[uniform()],
           ops=["LogMatrixDeterminant"]),
]


def _band_np(x, lo, up):
    m, n = x.shape[-2:]
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = ((lo < 0) | (i - j <= lo)) & ((up < 0) | (j - i <= up))
    return np.where(keep, x, np.zeros_like(x))


def _set_diag_np(x, d):
    out = x.copy()
    k = min(x.shape[-2:])
    out[..., range(k), range(k)] = d
    return out


def _sym(x):
    """Symmetrized inside the function, so finite differences move the
    matrix as Cholesky reads it (TF's own gradient tests do the same)."""
    return (x + _t(x)) / 2


def _sym_tf(x):
    return (x + tf.linalg.matrix_transpose(x)) / 2


def _chol_tf(a):
    return tf.linalg.cholesky(_sym_tf(a))


def _chol_np(a):
    return np.linalg.cholesky(_sym(a))


def _tri_np(lower, adjoint):
    def ref(a, b):
        t = np.tril(a) if lower else np.triu(a)
        return np.linalg.solve(_t(t) if adjoint else t, b)
    return ref


def _tri_tf(lower, adjoint):
    return lambda a, b: tf.linalg.triangular_solve(a, b, lower=lower,
                                                   adjoint=adjoint)


BAND = [((3, 4),), ((2, 4, 3),), ((1, 1),), ((2, 3, 0),), ((5, 5),)]
# matrix and rhs shapes; the last ones broadcast batch dims.
TRISOLVE = [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1)), ((1, 1), (1, 3)),
            ((0, 0), (0, 2)), ((2, 1, 3, 3), (4, 3, 2)),
            ((3, 3), (2, 3, 1))]

SPECS += [
    OpSpec("linalg_band_part_lower", lambda x: tf.linalg.band_part(x, 1, 0),
           lambda x: _band_np(x, 1, 0), BAND,
           NUMERIC + ("float16", "bool", "uint8"), grad=(0,),
           ops=["MatrixBandPart"], second_order=True),
    OpSpec("linalg_band_part_upper_all",
           lambda x: tf.linalg.band_part(x, 0, -1),
           lambda x: _band_np(x, 0, -1), BAND, NUMERIC, grad=(0,),
           ops=["MatrixBandPart"]),
    OpSpec("linalg_band_part_tensor_bounds",
           lambda x: tf.linalg.band_part(x, tf.constant(-1),
                                         tf.constant(2, tf.int64)),
           lambda x: _band_np(x, -1, 2), BAND[:2], FLOATS,
           ops=["MatrixBandPart"]),
    OpSpec("linalg_diag_part", tf.linalg.diag_part,
           lambda x: np.diagonal(x, axis1=-2, axis2=-1), BAND[:4] +
           [((4, 2),)], NUMERIC, grad=(0,), ops=["MatrixBandPart"],
           second_order=True),
    OpSpec("linalg_diag", tf.linalg.diag,
           lambda v: v[..., :, None] * np.eye(v.shape[-1], dtype=v.dtype),
           [((3,),), ((2, 4),), ((0,),), ((2, 1, 2),)], NUMERIC,
           grad=(0,), ops=["MatrixBandPart"], second_order=True),
    OpSpec("linalg_set_diag", tf.linalg.set_diag, _set_diag_np,
           [((3, 4), (3,)), ((2, 4, 3), (2, 3)), ((1, 1), (1,)),
            ((2, 3, 0), (2, 0))], NUMERIC, grad=(0, 1),
           ops=["MatrixBandPart"], second_order=True),
    OpSpec("linalg_trace", tf.linalg.trace,
           lambda x: np.trace(x, axis1=-2, axis2=-1).astype(x.dtype),
           BAND[:4] + [((4, 2),)], NUMERIC, grad=(0,),
           ops=["MatrixBandPart"]),
    OpSpec("linalg_cholesky", _chol_tf, _chol_np, SQUARE,
           inputs=[well_conditioned], grad=(0,), ops=["Cholesky"], **_LU),
    OpSpec("linalg_logdet", lambda a: tf.linalg.logdet(_sym_tf(a)),
           lambda a: np.linalg.slogdet(_sym(a))[1], SQUARE[:5],
           inputs=[well_conditioned], grad=(0,), ops=["Cholesky"], **_LU),
    OpSpec("linalg_cholesky_solve",
           lambda a, b: tf.linalg.cholesky_solve(_chol_tf(a), b),
           lambda a, b: np.linalg.solve(_sym(a), b), SOLVE[:4],
           inputs=[well_conditioned, _rhs], grad=(0, 1),
           ops=["Cholesky", "MatrixTriangularSolve"], **_LU),
] + [
    OpSpec(f"linalg_triangular_solve_{'lower' if lo else 'upper'}"
           f"{'_adjoint' if adj else ''}", _tri_tf(lo, adj),
           _tri_np(lo, adj), TRISOLVE, inputs=[well_conditioned, _rhs],
           grad=(0, 1), ops=["MatrixTriangularSolve"], **_LU)
    for lo in (True, False) for adj in (False, True)
]

# Svd through its singular values (unique, unlike the vectors' signs):
# random matrices have distinct values, where the gradient is defined.
SVD = [((3, 3),), ((2, 4, 3),), ((3, 5),), ((1, 1),), ((2, 3, 0),)]
SPECS += [
    OpSpec("linalg_svd_values",
           lambda x: tf.linalg.svd(x, compute_uv=False),
           lambda x: np.linalg.svd(x, compute_uv=False) if x.size else
           np.zeros(x.shape[:-2] + (min(x.shape[-2:]),), x.dtype),
           SVD, grad=(0,), ops=["Svd"],
           # The gradient reads u and v, whose own gradient is not written.
           **dict(_LU, second_order=False)),
]
