"""Linear algebra: tf.matmul, tf.tensordot, tf.einsum, tf.linalg.matvec
(csrc/ops/ops_linalg.def). See ops/__init__.py for __all__/_NAMESPACES."""
import collections

import numpy as np

from .. import _C
from .._opids import ID
from .._tensor import PLAIN_TENSOR_TYPES as _PLAIN, Tensor
from .constant_op import convert_to_tensor

__all__ = ["matmul", "tensordot", "einsum"]
_NAMESPACES = {"linalg": ["matmul", "matvec", "tensordot", "einsum",
                          "matrix_transpose", "adjoint", "solve", "inv",
                          "det", "slogdet", "band_part", "diag_part",
                          "diag", "set_diag", "trace", "cholesky", "cholesky_solve",
                          "triangular_solve", "logdet", "svd"]}

_MATMUL = ID["BatchMatMulV2"]
_SOLVE, _INVERSE = ID["MatrixSolve"], ID["MatrixInverse"]
_DET, _LOGDET = ID["MatrixDeterminant"], ID["LogMatrixDeterminant"]
_BAND, _CHOLESKY = ID["MatrixBandPart"], ID["Cholesky"]
_TRISOLVE = ID["MatrixTriangularSolve"]
_SVD = ID["Svd"]
_NO_TRANSPOSE = (0, 0)


def _as_tensor(x, hint=None):
    """x as a tensor; Python values take dtype `hint` where they fit (as
    TF's dtype_hint), NumPy arrays and tensors keep their own dtype."""
    if type(x) in _PLAIN:
        return x
    if hint is None or isinstance(x, (np.ndarray, np.generic)):
        return convert_to_tensor(x)
    return convert_to_tensor(x, dtype_hint=hint)


def _pair(a, b):
    """Both operands as tensors; b takes a's dtype when it is a Python
    value (TF converts b with a's dtype as the hint)."""
    a = _as_tensor(a)
    return a, _as_tensor(b, a.dtype)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False,
           adjoint_b=False, a_is_sparse=False, b_is_sparse=False,
           output_type=None, grad_a=False, grad_b=False, name=None):
    """Matrix product of the two innermost dims, batched over the rest
    (which broadcast). a and b have rank >= 2 and the same dtype."""
    # Two tensors, no flags: the rest of this function would only hand
    # them on, after a microsecond of checks.
    if (type(a) in _PLAIN and type(b) in _PLAIN and not transpose_a
            and not transpose_b and not adjoint_a and not adjoint_b
            and output_type is None):
        return _C.call(_MATMUL, (a, b), None, _NO_TRANSPOSE)
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    a, b = _pair(a, b)
    if adjoint_a or adjoint_b:
        from .complex_ops import conj
        a = conj(a) if adjoint_a else a
        b = conj(b) if adjoint_b else b
    out = _C.call(_MATMUL, (a, b), None,
                  (1 if transpose_a or adjoint_a else 0,
                   1 if transpose_b or adjoint_b else 0))
    if output_type is not None:
        from .math_ops import cast
        from .. import dtypes
        if dtypes.as_dtype(output_type) != out.dtype:
            out = cast(out, output_type)
    return out


# ---- composites over matmul, reshape, transpose and reduce_sum -----------

def _dims(t):
    return list(t._shape_tuple)


def _prod(dims):
    """Product of dims, or -1 when one is unknown (None)."""
    n = 1
    for d in dims:
        if d is None:
            return -1
        n *= d
    return n


def _reshape(t, dims):
    if list(t._shape_tuple) == list(dims):
        return t
    if sum(1 for d in dims if d is None or d < 0) > 1:
        raise ValueError(f"tfmini cannot reshape {t.shape} to {dims} with "
                         "more than one unknown dim; call it with known "
                         "shapes")
    from .array_ops import reshape
    return reshape(t, [-1 if d is None else d for d in dims])


def _transpose(t, perm):
    if list(perm) == list(range(len(perm))):
        return t
    from .array_ops import transpose
    return transpose(t, perm)


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    """Matrix-vector product a[..., m, n] @ b[..., n] -> [..., m]."""
    from .array_ops import expand_dims, squeeze
    a, b = _pair(a, b)
    out = matmul(a, expand_dims(b, -1), transpose_a=transpose_a,
                 adjoint_a=adjoint_a)
    return squeeze(out, [-1])


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Swaps the last two dims; conjugate=True conjugates complex values
    too (real dtypes: adjoint == transpose)."""
    a = _as_tensor(a)
    if conjugate:
        from .complex_ops import conj
        a = conj(a)
    r = len(a._shape_tuple)
    if r < 2:
        raise ValueError(f"Argument 'a' should be a (batch) matrix with rank "
                         f">= 2.  Received `a` = {a!r} with shape: {a.shape}")
    return _transpose(a, list(range(r - 2)) + [r - 1, r - 2])


def _axes_list(axes, rank, what):
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    out = []
    for ax in axes:
        ax = int(ax)
        if not -rank <= ax < rank:
            raise ValueError(f"tensordot: axis {ax} is out of range for "
                             f"{what} of rank {rank}")
        out.append(ax % rank)
    return out


def tensordot(a, b, axes, name=None):
    """Sums a[..., k] * b[k, ...] over the given axes: axes = N (the last
    N of a with the first N of b) or a pair of axis lists."""
    a, b = _pair(a, b)
    da, db = _dims(a), _dims(b)
    if isinstance(axes, Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > len(da) or n > len(db):
            raise ValueError(f"tensordot: axes = {n} must be in [0, "
                             f"min(rank(a), rank(b))] = [0, "
                             f"{min(len(da), len(db))}]")
        ax_a = list(range(len(da) - n, len(da)))
        ax_b = list(range(n))
    else:
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair of "
                             f"axis lists, got {axes!r}")
        ax_a = _axes_list(axes[0], len(da), "a")
        ax_b = _axes_list(axes[1], len(db), "b")
        if len(ax_a) != len(ax_b):
            raise ValueError(f"tensordot: the axes of a ({ax_a}) and b "
                             f"({ax_b}) have different lengths")
    for i, j in zip(ax_a, ax_b):
        if da[i] is not None and db[j] is not None and da[i] != db[j]:
            from ..errors import InvalidArgumentError
            raise InvalidArgumentError(
                f"tensordot: dim {i} of a (size {da[i]}) does not match dim "
                f"{j} of b (size {db[j]}); shapes {_shape_str(da)} and "
                f"{_shape_str(db)}")
    free_a = [i for i in range(len(da)) if i not in ax_a]
    free_b = [j for j in range(len(db)) if j not in ax_b]
    k = _prod([da[i] for i in ax_a])
    a2 = _reshape(_transpose(a, free_a + ax_a),
                  [_prod([da[i] for i in free_a]), k])
    b2 = _reshape(_transpose(b, ax_b + free_b),
                  [k, _prod([db[j] for j in free_b])])
    return _reshape(matmul(a2, b2),
                    [da[i] for i in free_a] + [db[j] for j in free_b])


def _shape_str(dims):
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


# ---- einsum ---------------------------------------------------------

_ELLIPSIS_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(equation, ranks):
    """(input subscripts, output subscripts), with '...' replaced by
    upper-case letters (right-aligned, so they broadcast)."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs, out = eq, None
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"einsum: the equation {equation!r} has "
                         f"{len(terms)} operand(s) but {len(ranks)} were "
                         f"given")
    n_ell = 0
    for t, r in zip(terms, ranks):
        if "..." in t:
            n_ell = max(n_ell, r - len(t.replace("...", "")))
    ell = _ELLIPSIS_LETTERS[len(_ELLIPSIS_LETTERS) - n_ell:] if n_ell else ""
    subs = []
    for t, r in zip(terms, ranks):
        letters = t.replace("...", "")
        ok = all(c.islower() for c in letters) and t.count("...") <= 1
        if "..." in t:
            k = r - len(letters)
            ok = ok and k >= 0
            t = t.replace("...", ell[len(ell) - k:] if k > 0 else "")
        if not ok or len(t) != r:
            raise ValueError(f"einsum: subscripts {t!r} do not fit an "
                             f"operand of rank {r} in {equation!r} (use "
                             "lower-case letters and '...')")
        subs.append(t)
    if out is None:
        counts = {}
        for t in subs:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items()
                                   if n == 1 and c.islower()))
    else:
        out = out.replace("...", ell)
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscripts of {equation!r} "
                             "repeat a letter")
        for c in out:
            if not any(c in t for t in subs):
                raise ValueError(f"einsum: output letter {c!r} of "
                                 f"{equation!r} is in no input")
    return subs, out


def _take_diagonals(x, sub, equation):
    """x (subscripts sub, a letter possibly repeated: 'ii', 'bxby') as
    the diagonal over each repeated letter, with that letter once: a
    product with an identity mask, then a sum, so it stays
    differentiable."""
    while len(set(sub)) != len(sub):
        c = next(ch for ch in sub if sub.count(ch) > 1)
        p = sub.index(c)
        q = sub.index(c, p + 1)
        dims = x._shape_tuple
        n = dims[p]
        if n is None or dims[q] is None:
            raise ValueError(f"einsum: {equation!r} takes a diagonal over "
                             f"{c!r}, which needs its size known, got "
                             f"shape {x.shape}")
        if dims[q] != n:
            from ..errors import InvalidArgumentError
            raise InvalidArgumentError(f"einsum: {equation!r} takes a diagonal over "
                             f"{c!r}, but its axes have sizes {n} and "
                             f"{dims[q]} (shape {x.shape})")
        mask_shape = [1] * len(dims)
        mask_shape[p] = mask_shape[q] = n
        mask = convert_to_tensor(
            np.eye(n, dtype=x.dtype.as_numpy_dtype).reshape(mask_shape))
        from .reduce_ops import reduce_sum
        x = reduce_sum(x * mask, q)
        sub = sub[:q] + sub[q + 1:]
    return x, sub


def _sum_out(x, sub, keep):
    """x (subscripts sub) summed over the letters not in keep."""
    drop = [i for i, c in enumerate(sub) if c not in keep]
    if not drop:
        return x, sub
    from .reduce_ops import reduce_sum
    return (reduce_sum(x, drop),
            "".join(c for c in sub if c in keep))


def _einsum_pair(a, sa, b, sb, out):
    """Contracts a (subscripts sa) with b (sb) into subscripts out."""
    a, sa = _sum_out(a, sa, set(sb) | set(out))
    b, sb = _sum_out(b, sb, set(sa) | set(out))
    batch = [c for c in sa if c in sb and c in out]
    contract = [c for c in sa if c in sb and c not in out]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    da = dict(zip(sa, _dims(a)))
    db = dict(zip(sb, _dims(b)))
    for c in contract:
        if da[c] is not None and db[c] is not None and da[c] != db[c]:
            from ..errors import InvalidArgumentError
            raise InvalidArgumentError(
                f"einsum: dimension {c!r} has size {da[c]} in one operand "
                f"and {db[c]} in the other")
    a3 = _transpose(a, [sa.index(c) for c in batch + free_a + contract])
    b3 = _transpose(b, [sb.index(c) for c in batch + contract + free_b])
    k = _prod([da[c] for c in contract])
    a3 = _reshape(a3, [da[c] for c in batch]
                  + [_prod([da[c] for c in free_a]), k])
    b3 = _reshape(b3, [db[c] for c in batch]
                  + [k, _prod([db[c] for c in free_b])])
    y = matmul(a3, b3)
    yb = _dims(y)[:len(batch)]     # broadcast batch sizes
    y = _reshape(y, yb + [da[c] for c in free_a] + [db[c] for c in free_b])
    sy = "".join(batch + free_a + free_b)
    return _transpose(y, [sy.index(c) for c in out])


def einsum(equation, *inputs, **kwargs):
    """Einstein summation over 1 or more operands, e.g. 'ij,jk->ik',
    'bij,bjk->bik', 'i,i->', 'ij->ji', 'ij->j', 'i,j->ij', '...ij,jk'.
    Products run as (batched) matmuls; more than two operands are
    contracted left to right."""
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    if not inputs:
        raise ValueError("einsum: no operands given")
    xs = [_as_tensor(x) for x in inputs]
    subs, out = _parse_einsum(equation, [len(x._shape_tuple) for x in xs])
    for i, (x, sub) in enumerate(zip(xs, subs)):
        if len(set(sub)) != len(sub):
            xs[i], subs[i] = _take_diagonals(x, sub, equation)
    if len(xs) == 1:
        x, s = _sum_out(xs[0], subs[0], set(out))
        return _transpose(x, [s.index(c) for c in out])
    x, s = xs[0], subs[0]
    for i in range(1, len(xs)):
        later = set(out).union(*[set(t) for t in subs[i + 1:]])
        if i == len(xs) - 1:
            step_out = out
        else:
            step_out = "".join(dict.fromkeys(
                c for c in s + subs[i] if c in later))
        x = _einsum_pair(x, s, xs[i], subs[i], step_out)
        s = step_out
    return x


def adjoint(matrix, name=None):
    """The conjugate transpose of the last two dims (real dtypes: the
    transpose)."""
    return matrix_transpose(matrix, conjugate=True)


# ---- square matrices, through an LU factorization (kernels/cpu/lu.c) ----

def solve(matrix, rhs, adjoint=False, name=None):
    """x with matrix @ x = rhs (adjoint: transpose(matrix) @ x = rhs);
    matrix [..., M, M], rhs [..., M, K] with the same batch dims.
    InvalidArgumentError if a matrix is singular."""
    matrix, rhs = _pair(matrix, rhs)
    return _C.call(_SOLVE, (matrix, rhs), i=(1 if adjoint else 0,))


def inv(input, adjoint=False, name=None):
    """The inverse of each [..., M, M] matrix (adjoint: of its
    transpose). InvalidArgumentError if a matrix is singular."""
    return _C.call(_INVERSE, (_as_tensor(input),), i=(1 if adjoint else 0,))


def det(input, name=None):
    """The determinant of each [..., M, M] matrix: shape [...]."""
    return _C.call(_DET, (_as_tensor(input),))


LogMatrixDeterminant = collections.namedtuple(
    "LogMatrixDeterminant", ["sign", "log_abs_determinant"])


def slogdet(input, name=None):
    """(sign, log|det|) of each [..., M, M] matrix; no overflow where
    det would. sign is 0 and log|det| -inf for a singular matrix."""
    sign, log_abs = _C.call(_LOGDET, (_as_tensor(input),))
    return LogMatrixDeterminant(sign, log_abs)


# ---- bands, diagonals and triangular matrices (kernels/cpu/triangular.c) --

def _band_bound(x, what):
    """A band bound as a Python int: MatrixBandPart takes it as an attr,
    so a symbolic tensor (unknown when traced) cannot be used."""
    if isinstance(x, Tensor):
        if getattr(x, "_symbolic", False):
            raise NotImplementedError(
                f"tfmini: tf.linalg.band_part's {what} must be known when "
                f"the function is traced, got the symbolic tensor {x}")
        if x.shape.rank != 0 or not x.dtype.is_integer:
            raise TypeError(f"MatrixBandPart: {what} must be an integer "
                            f"scalar, got {x!r}")
        x = x.numpy()
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"MatrixBandPart: {what} must be an integer "
                        f"scalar, got {x!r}")
    return int(x)


def band_part(input, num_lower, num_upper, name=None):
    """The band of each [..., M, N] matrix: entries with i - j <=
    num_lower and j - i <= num_upper (a negative bound keeps that whole
    triangle); the rest are zero. band_part(x, -1, 0) is the lower
    triangle, band_part(x, 0, 0) the diagonal."""
    lo = _band_bound(num_lower, "num_lower")
    up = _band_bound(num_upper, "num_upper")
    return _C.call(_BAND, (_as_tensor(input),), i=(lo, up))


def _only_main_diagonal(fn, k, align, **defaults):
    if k != 0 or align != "RIGHT_LEFT" or any(v not in (-1, 0)
                                              for v in defaults.values()):
        raise NotImplementedError(
            f"tfmini: tf.linalg.{fn} supports only the main diagonal (k=0) "
            f"with the default num_rows, num_cols, padding_value and align")


def _bool_via_int(fn, x):
    """fn over a bool tensor through int8 (sums and products of bools
    are not defined), back to bool."""
    from .math_ops import cast
    from .. import dtypes
    return cast(fn(cast(x, dtypes.int8)), dtypes.bool)


def diag_part(input, name="diag_part", k=0, padding_value=0,
              align="RIGHT_LEFT"):
    """The main diagonal of each [..., M, N] matrix: [..., min(M, N)].
    A sum over the band (0, 0), so it differentiates and traces."""
    _only_main_diagonal("diag_part", k, align, padding_value=padding_value)
    x = _as_tensor(input)
    dims = x._shape_tuple
    if len(dims) < 2:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError(
            f"diag_part: input must be at least 2-dim, received shape: "
            f"{_shape_str(dims)}")
    if x.dtype.name == "bool":
        return _bool_via_int(diag_part, x)
    m, n = dims[-2], dims[-1]
    from .reduce_ops import reduce_sum
    band = band_part(x, 0, 0)
    if m is not None and n is not None:
        return reduce_sum(band, -1 if m <= n else -2)
    # Traced with unknown matrix dims: summing the rows gives M values,
    # the columns N; the diagonal has min(M, N), chosen at run time.
    from .array_ops import shape
    from .control_flow_ops import cond
    s = shape(x)
    return cond(s[-2] <= s[-1], lambda: reduce_sum(band, -1),
                lambda: reduce_sum(band, -2))


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1,
         padding_value=0, align="RIGHT_LEFT"):
    """Square matrices [..., N, N] with the vectors [..., N] on their
    diagonals and zeros elsewhere."""
    _only_main_diagonal("diag", k, align, num_rows=num_rows,
                        num_cols=num_cols, padding_value=padding_value)
    v = _as_tensor(diagonal)
    if len(v._shape_tuple) < 1:
        raise ValueError(f"diag: diagonal must be at least 1-dim, got "
                         f"shape {v.shape}")
    if v.dtype.name == "bool":
        return _bool_via_int(diag, v)
    from .array_ops import expand_dims, ones_like
    # [..., 1, N] * [..., N, 1] ones: every row a copy of v, then its
    # diagonal band.
    rows = expand_dims(v, -2) * ones_like(expand_dims(v, -1))
    return band_part(rows, 0, 0)


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):
    """input [..., M, N] with its main diagonal replaced by diagonal
    [..., min(M, N)]: the input off its diagonal band plus the new
    diagonal, padded out to M x N."""
    _only_main_diagonal("set_diag", k, align)
    x, d = _pair(input, diagonal)
    xd, dd = _dims(x), _dims(d)
    from ..errors import InvalidArgumentError
    if len(xd) < 2:
        raise InvalidArgumentError(
            f"set_diag: input must be at least 2-dim, received shape: "
            f"{_shape_str(xd)}")
    if len(dd) < 1:
        raise InvalidArgumentError(
            f"set_diag: diagonal must be at least 1-dim, received shape: "
            f"{_shape_str(dd)}")
    m, n = xd[-2], xd[-1]
    if m is None or n is None:
        raise NotImplementedError(
            f"tfmini: tf.linalg.set_diag needs the matrix dims known when "
            f"traced, got shape {x.shape}")
    want = xd[:-2] + [min(m, n)]
    if len(dd) != len(want) or any(a is not None and b is not None and
                                   a != b for a, b in zip(dd, want)):
        raise InvalidArgumentError(
            f"set_diag: diagonal must have shape input.shape[:-2] + "
            f"[min(M, N)] = {_shape_str(want)}, got {_shape_str(dd)} "
            f"(input shape {_shape_str(xd)})")
    from .array_ops import ones_like, pad, where
    size = min(m, n)
    new = diag(d)
    if (m, n) != (size, size):
        new = pad(new, [[0, 0]] * (len(xd) - 2)
                  + [[0, m - size], [0, n - size]])
    # A select, not x - band + new: an inf or NaN on x's diagonal must
    # not leak into the result.
    on_diag = band_part(ones_like(x, dtype="bool"), 0, 0)
    return where(on_diag, new, x)


def trace(x, name=None):
    """The sum of the main diagonal of each [..., M, N] matrix: [...]."""
    from .reduce_ops import reduce_sum
    return reduce_sum(diag_part(x), -1)


def cholesky(input, name=None):
    """The lower-triangular L with L @ transpose(L) = input, for each
    symmetric positive definite [..., M, M] matrix (only its lower
    triangle is read). A matrix that is not positive definite gives NaNs,
    as TF 2.21 on the CPU."""
    return _C.call(_CHOLESKY, (_as_tensor(input),))


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """x with op(T) @ x = rhs, T the lower (or upper) triangle of each
    [..., M, M] matrix, op = transpose when adjoint; rhs [..., M, K].
    Batch dims broadcast. A zero on T's diagonal gives inf/NaN."""
    matrix, rhs = _pair(matrix, rhs)
    return _C.call(_TRISOLVE, (matrix, rhs),
                   i=(1 if lower else 0, 1 if adjoint else 0))


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """The singular value decomposition of each [..., M, N] matrix:
    tensor = u @ diag(s) @ adjoint(v). Returns s ([..., P], P = min(M,
    N), descending) when not compute_uv, else (s, u, v) with u [..., M,
    P] and v [..., N, P], or [..., M, M] and [..., N, N] when
    full_matrices. The vectors are unique only up to sign."""
    s, u, v = _C.call(_SVD, (_as_tensor(tensor),),
                      i=(1 if full_matrices else 0,))
    return (s, u, v) if compute_uv else s


def cholesky_solve(chol, rhs, name=None):
    """x with A @ x = rhs, given chol = cholesky(A): two triangular
    solves."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


def logdet(matrix, name=None):
    """log(det(matrix)) of each Hermitian positive definite [..., M, M]
    matrix, through its Cholesky factor: 2 * sum(log(diag(L)))."""
    from .math_ops import log
    from .reduce_ops import reduce_sum
    diag_l = diag_part(cholesky(matrix))
    return 2.0 * reduce_sum(log(diag_l), -1)


# The @ operator of tensors (see tfmini/_tensor.py).
def _matmul_op(a, b):
    return matmul(a, b)


def _rmatmul_op(a, b):
    return matmul(b, a)


Tensor.__matmul__ = _matmul_op
Tensor.__rmatmul__ = _rmatmul_op
