"""tf.matmul beyond the OpSpec table: random shapes against NumPy, the
parallel paths, dtypes, conversions and errors."""
import numpy as np
import pytest

import tfmini as tf


def _rand(rng, shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-3, 4, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("seed", range(12))
def test_random_batched_broadcast_shapes_match_numpy(seed):
    rng = np.random.default_rng(seed)
    m, k, n = rng.integers(1, 9, size=3)
    batch_a = list(rng.integers(1, 4, size=rng.integers(0, 3)))
    # b's batch dims broadcast against a's: same, 1, or missing.
    batch_b = [d if rng.random() < 0.5 else 1 for d in batch_a]
    batch_b = batch_b[rng.integers(0, len(batch_b) + 1):]
    ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
    a = _rand(rng, batch_a + ([k, m] if ta else [m, k]), "float64")
    b = _rand(rng, batch_b + ([n, k] if tb else [k, n]), "float64")
    want = np.matmul(np.swapaxes(a, -1, -2) if ta else a,
                     np.swapaxes(b, -1, -2) if tb else b)
    got = tf.matmul(a, b, transpose_a=ta, transpose_b=tb)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_many_small_products_run_per_batch(dtype):
    # 512 products of 8x8: split over threads batch by batch.
    rng = np.random.default_rng(1)
    a = _rand(rng, (512, 8, 8), dtype)
    b = _rand(rng, (512, 8, 8), dtype)
    got = tf.matmul(a, b).numpy()
    if dtype.startswith("int"):
        np.testing.assert_array_equal(got, a @ b)
    else:
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False),
                                   (False, True), (True, True)])
def test_large_product_is_blocked_and_threaded(ta, tb):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 200)).astype("float32")
    b = rng.standard_normal((200, 300) if not ta else (300, 200))
    b = b.astype("float32")
    if tb:
        b = np.ascontiguousarray(b.T)
    want = np.matmul(a.T if ta else a, b.T if tb else b)
    got = tf.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_wide_product_is_split_by_columns(ta, tb, dtype):
    # m << n: each thread takes a block of columns of the result.
    rng = np.random.default_rng(8)
    a = rng.standard_normal((300, 40) if ta else (40, 300)).astype(dtype)
    b = rng.standard_normal((600, 300) if tb else (300, 600)).astype(dtype)
    want = np.matmul(a.T if ta else a, b.T if tb else b)
    got = tf.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy()
    tol = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)


def test_large_integer_product_runs_in_parallel_rows():
    rng = np.random.default_rng(3)
    a = rng.integers(-100, 100, size=(70, 90)).astype("int64")
    b = rng.integers(-100, 100, size=(90, 80)).astype("int64")
    np.testing.assert_array_equal(tf.matmul(a, b).numpy(), a @ b)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_integer_overflow_wraps_like_numpy(dtype):
    info = np.iinfo(dtype)
    a = np.array([[info.max, info.max], [info.min, 3]], dtype=dtype)
    b = np.array([[info.max, 2], [info.max, info.min]], dtype=dtype)
    with np.errstate(over="ignore"):
        want = a @ b
    np.testing.assert_array_equal(tf.matmul(a, b).numpy(), want)


def test_uint8_wraps():
    a = np.full((2, 3), 200, dtype="uint8")
    b = np.full((3, 2), 7, dtype="uint8")
    np.testing.assert_array_equal(tf.matmul(a, b).numpy(), a @ b)


def test_float16_is_computed_in_float32():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4)).astype("float16")
    b = rng.standard_normal((4, 2)).astype("float16")
    got = tf.matmul(a, b)
    assert got.dtype == tf.float16
    want = (a.astype("float32") @ b.astype("float32")).astype("float16")
    np.testing.assert_allclose(got.numpy().astype("float32"),
                               want.astype("float32"), rtol=2e-3, atol=2e-3)


def test_python_lists_and_dtype_hint_from_a():
    a = tf.constant([[1.0, 2.0]], dtype=tf.float64)
    got = tf.matmul(a, [[3.0], [4.0]])
    assert got.dtype == tf.float64
    assert got.numpy().tolist() == [[11.0]]
    assert tf.matmul([[1, 2]], [[3], [4]]).dtype == tf.int32


def test_operator_and_linalg_namespace():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal((a @ a).numpy(), a.numpy() @ a.numpy())
    np.testing.assert_array_equal((a.numpy() @ a).numpy(),
                                  a.numpy() @ a.numpy())
    assert tf.linalg.matmul is tf.matmul


def test_output_type_casts():
    a = np.ones((2, 2), dtype="int8")
    assert tf.matmul(a, a, output_type=tf.int32).dtype == tf.int32


@pytest.mark.skipif(not hasattr(tf, "Variable"),
                    reason="tf.Variable is not public yet")
def test_variables_are_accepted():
    v = tf.Variable([[2.0, 0.0], [0.0, 2.0]])
    np.testing.assert_array_equal(tf.matmul(v, v).numpy(), [[4, 0], [0, 4]])


# ---- errors -----------------------------------------------------------------

def test_inner_dim_mismatch_names_op_and_shapes():
    a = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.matmul(a, a)
    msg = str(e.value)
    assert "BatchMatMulV2" in msg and msg.count("[2,3]") == 2
    # Transposing fixes it.
    assert tf.matmul(a, a, transpose_b=True).shape == (2, 2)


def test_batch_dims_must_broadcast():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 4)))
    assert "[2,2,3]" in str(e.value) and "[3,3,4]" in str(e.value)


def test_rank_below_two_is_rejected():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.matmul(tf.constant([1.0, 2.0]), tf.constant([[1.0], [2.0]]))
    assert "rank >= 2" in str(e.value) and "[2]" in str(e.value)


def test_dtypes_must_match_and_be_numeric():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.matmul(tf.constant([[1.0]]), tf.constant([[1.0]], tf.float64))
    assert "float32" in str(e.value) and "float64" in str(e.value)
    with pytest.raises(tf.errors.InvalidArgumentError, match="bool"):
        tf.matmul(np.ones((2, 2), bool), np.ones((2, 2), bool))


def test_transpose_and_adjoint_together_is_a_value_error():
    a = tf.constant([[1.0]])
    with pytest.raises(ValueError, match="transpose_a and adjoint_a"):
        tf.matmul(a, a, transpose_a=True, adjoint_a=True)
    with pytest.raises(ValueError, match="transpose_b and adjoint_b"):
        tf.matmul(a, a, transpose_b=True, adjoint_b=True)


def test_no_leaks():
    import gc
    gc.collect()
    before = tf._C.live_counts()[0]
    for _ in range(20):
        tf.matmul(np.ones((3, 4)), np.ones((4, 5)))
        try:
            tf.matmul(np.ones((3, 4)), np.ones((3, 5)))
        except tf.errors.InvalidArgumentError:
            pass
    gc.collect()
    assert tf._C.live_counts()[0] == before


# ---- tensordot, einsum, matvec ------------------------------------------
# Composites over the shape and reduce families' ops.
needs_composites = pytest.mark.skipif(
    not all(hasattr(tf, n) for n in ("reshape", "transpose", "expand_dims",
                                     "squeeze", "reduce_sum")),
    reason="needs the shape and reduce families")

TENSORDOT = [((3, 4, 5), (4, 5, 2), 2), ((3, 4), (4, 5), 1), ((2, 3), (4,), 0),
             ((2, 3, 4), (3, 2, 5), [[0, 1], [1, 0]]),
             ((2, 3, 4), (4, 3), [[1, 2], [1, 0]]),
             ((3, 4), (2, 4), [[-1], [-1]]), ((5,), (5,), 1)]


@needs_composites
@pytest.mark.parametrize("sa,sb,axes", TENSORDOT)
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_tensordot_matches_numpy(sa, sb, axes, dtype):
    rng = np.random.default_rng(5)
    a, b = _rand(rng, sa, dtype), _rand(rng, sb, dtype)
    want = np.tensordot(a, b, axes)
    got = tf.tensordot(a, b, axes)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    assert tf.linalg.tensordot is tf.tensordot


@needs_composites
def test_tensordot_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="\\[2,3\\]"):
        tf.tensordot(np.ones((2, 3)), np.ones((4, 2)), 1)
    with pytest.raises(ValueError, match="axes"):
        tf.tensordot(np.ones((2, 3)), np.ones((3, 2)), 3)
    with pytest.raises(ValueError, match="different lengths"):
        tf.tensordot(np.ones((2, 3)), np.ones((3, 2)), [[0, 1], [0]])


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("bij,jk->bik", [(5, 2, 3), (3, 4)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk->kij", [(2, 3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,ij,j->", [(3,), (3, 4), (4,)]),
    ("ij,jk", [(2, 3), (3, 4)]),             # implicit output
    ("ba,ac", [(2, 3), (3, 4)]),             # implicit: sorted letters
    ("...ij,...jk->...ik", [(4, 2, 3), (4, 3, 5)]),
    ("...ij,jk->...ik", [(2, 4, 2, 3), (3, 5)]),
    ("ij,jk->ki", [(2, 3), (3, 4)]),
    ("ijk,k->ij", [(2, 3, 4), (4,)]),
    ("ij,k->ijk", [(2, 3), (2,)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
]


@needs_composites
@pytest.mark.parametrize("eq,shapes", EINSUM,
                         ids=[e for e, _ in EINSUM])
def test_einsum_matches_numpy(eq, shapes):
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal(s) for s in shapes]
    want = np.einsum(eq, *xs)
    got = tf.einsum(eq, *xs)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


@needs_composites
def test_einsum_integers_and_namespaces():
    a = np.arange(6, dtype="int32").reshape(2, 3)
    np.testing.assert_array_equal(tf.einsum("ij,kj->ik", a, a).numpy(),
                                  a @ a.T)
    assert tf.linalg.einsum is tf.einsum


@needs_composites
def test_einsum_errors():
    with pytest.raises(ValueError, match="operand"):
        tf.einsum("ij,jk->ik", np.ones((2, 3)))
    with pytest.raises(ValueError, match="rank"):
        tf.einsum("ijk->k", np.ones((2, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="'j'"):
        tf.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="diagonal"):
        tf.einsum("ii->i", np.ones((3, 4)))
    with pytest.raises(ValueError, match="no input"):
        tf.einsum("ij->iz", np.ones((3, 3)))


@needs_composites
@pytest.mark.parametrize("ta", [False, True])
def test_matvec_matches_numpy(ta):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 3, 5))
    v = rng.standard_normal((4, 3 if ta else 5))
    m = np.swapaxes(a, -1, -2) if ta else a
    want = np.einsum("bij,bj->bi", m, v)
    got = tf.linalg.matvec(a, v, transpose_a=ta)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@needs_composites
def test_matrix_transpose():
    a = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(tf.linalg.matrix_transpose(a).numpy(),
                                  np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(tf.linalg.adjoint(a[0]).numpy(), a[0].T)
    with pytest.raises(ValueError, match="rank"):
        tf.linalg.matrix_transpose(np.ones(3))


# ---- solve / inv / det / slogdet (LU) -----------------------------------

def test_lu_ops_print_what_tf_prints():
    # TF 2.21's outputs for the same calls.
    a = tf.constant([[2.0, 1.0], [1.0, 3.0]])
    b = tf.constant([[1.0], [2.0]])
    assert repr(tf.linalg.solve(a, b)) == (
        "<tf.Tensor: shape=(2, 1), dtype=float32, numpy=\n"
        "array([[0.19999999],\n       [0.6       ]], dtype=float32)>")
    assert repr(tf.linalg.inv(a)) == (
        "<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\n"
        "array([[ 0.6, -0.2],\n       [-0.2,  0.4]], dtype=float32)>")
    assert repr(tf.linalg.det(a)) == \
        "<tf.Tensor: shape=(), dtype=float32, numpy=5.0>"
    assert str(tf.linalg.slogdet(tf.constant([[1.0, 2.0], [3.0, 4.0]]))) == (
        "LogMatrixDeterminant(sign=<tf.Tensor: shape=(), dtype=float32, "
        "numpy=-1.0>, log_abs_determinant=<tf.Tensor: shape=(), "
        "dtype=float32, numpy=0.6931471824645996>)")
    half = tf.linalg.inv(tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float16))
    assert half.dtype == tf.float16
    np.testing.assert_array_equal(half.numpy(), [[-2, 1], [1.5, -0.5]])


def test_singular_matrices():
    s = tf.constant([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"^MatrixSolve: Input matrix is not invertible"):
        tf.linalg.solve(s, tf.ones((2, 1)))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"^MatrixInverse: Input is not invertible\. "
                             r"\[Op:MatrixInverse\]$"):
        tf.linalg.inv(s)
    # A NaN pivot is not > 0 either (TF's test).
    with pytest.raises(tf.errors.InvalidArgumentError, match="invertible"):
        tf.linalg.inv(tf.constant([[np.nan, 1.0], [1.0, 1.0]]))
    assert tf.linalg.det(s).numpy() == 0
    sign, log_abs = tf.linalg.slogdet(s)
    assert sign.numpy() == 0 and log_abs.numpy() == -np.inf
    # In a batch, the first singular matrix is named (on the threaded
    # path too: 40 matrices of 40x40).
    m = np.tile(np.eye(40), (40, 1, 1))
    m[31] = 0
    m[17, 3] = 0
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"matrix 17 of the batch"):
        tf.linalg.inv(m)

    @tf.function
    def f(x):
        return tf.linalg.inv(x)
    np.testing.assert_allclose(f(tf.eye(2) * 2).numpy(), np.eye(2) / 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="invertible"):
        f(s)


def test_lu_bad_input_names_op_shapes_and_dtypes():
    a = tf.ones((2, 2))
    cases = [
        (lambda: tf.linalg.solve(a, tf.ones((3, 1))),
         r"MatrixSolve: matrix and rhs are incompatible: matrix \[2,2\], "
         r"rhs \[3,1\]"),
        (lambda: tf.linalg.solve(tf.ones((3, 2, 2)), tf.ones((2, 2, 1))),
         r"incompatible: matrix \[3,2,2\], rhs \[2,2,1\]"),
        (lambda: tf.linalg.solve(a, tf.ones((2,))), r"rhs \[2\]"),
        (lambda: tf.linalg.solve(a, tf.ones((2, 1), tf.float64)),
         "same dtype, got float32 and float64"),
        (lambda: tf.linalg.inv(tf.ones((2, 3))),
         r"MatrixInverse: input must be a square matrix .*\[2,3\]"),
        (lambda: tf.linalg.det(tf.ones((3,))), r"rank >= 2, got shape \[3\]"),
        (lambda: tf.linalg.det(tf.constant([[1, 2], [3, 4]])),
         "MatrixDeterminant expects float16, float32 or float64 matrices, "
         "got int32"),
    ]
    for call, message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            call()


def test_lu_gradients_match_closed_forms():
    x = tf.Variable([[2.0, 1.0], [1.0, 3.0]], dtype=tf.float64)
    inv_t = np.linalg.inv(x.numpy()).T
    with tf.GradientTape(persistent=True) as tape:
        d = tf.linalg.det(x)
        log_abs = tf.linalg.slogdet(x).log_abs_determinant
    np.testing.assert_allclose(tape.gradient(d, x).numpy(), 5.0 * inv_t)
    np.testing.assert_allclose(tape.gradient(log_abs, x).numpy(), inv_t)
    # The sign alone has no gradient.
    with tf.GradientTape() as tape:
        sign = tf.linalg.slogdet(x).sign
    assert tape.gradient(sign, x) is None


def test_newton_step_with_hessian_solve():
    # A Newton step on a quadratic lands on its minimum in one step: the
    # Hessian from nested tapes, the step from tf.linalg.solve.
    a = tf.constant([[3.0, 1.0], [1.0, 2.0]], tf.float64)
    c = tf.constant([1.0, -1.0], tf.float64)
    x = tf.Variable([5.0, 5.0], dtype=tf.float64)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = 0.5 * tf.reduce_sum(x * tf.linalg.matvec(a, x)) - \
                tf.reduce_sum(c * x)
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x)
    x.assign_sub(tf.linalg.solve(h, g[:, tf.newaxis])[:, 0])
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, c), rtol=1e-12)


# ---- band_part, diagonals, Cholesky and triangular solves -------------

def test_band_part_and_diagonals_print_as_tf():
    m = tf.reshape(tf.range(12), [3, 4])
    # TF 2.21 printed this for the same call.
    assert str(tf.linalg.band_part(m, 1, -1)) == (
        "tf.Tensor(\n[[ 0  1  2  3]\n [ 4  5  6  7]\n [ 0  9 10 11]], "
        "shape=(3, 4), dtype=int32)")
    assert tf.linalg.band_part(m, tf.constant(-1), 0).numpy().tolist() == [
        [0, 0, 0, 0], [4, 5, 0, 0], [8, 9, 10, 0]]
    assert tf.linalg.band_part(tf.fill([2, 2], True), 0, 0).numpy().tolist() \
        == [[True, False], [False, True]]
    assert tf.linalg.diag_part(m).numpy().tolist() == [0, 5, 10]
    assert tf.linalg.diag_part(tf.transpose(m)).numpy().tolist() == [0, 5, 10]
    assert str(tf.linalg.trace(m)) == "tf.Tensor(15, shape=(), dtype=int32)"
    d = tf.linalg.diag([[1.0, 2.0], [3.0, 4.0]])
    assert d.shape == (2, 2, 2)
    assert d.numpy().tolist() == [[[1, 0], [0, 2]], [[3, 0], [0, 4]]]


_SPD = [[4.0, 2.0, 0.6], [2.0, 3.0, 0.4], [0.6, 0.4, 2.0]]


def test_cholesky_triangular_solve_and_logdet_match_tf():
    a = tf.constant(_SPD)
    chol = tf.linalg.cholesky(a)
    # TF 2.21's values for the same inputs.
    np.testing.assert_allclose(chol.numpy(), [
        [2.0, 0.0, 0.0], [1.0, 1.4142135, 0.0],
        [0.3, 0.07071067, 1.3802173]], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tf.linalg.logdet(a).numpy(), 2.7239234,
                               rtol=1e-6)
    b = tf.constant([[1.0], [2.0], [3.0]])
    cases = [(dict(), [0.5, 1.0606601, 2.010553]),
             (dict(adjoint=True), [-0.4788032, 1.3055351, 2.1735709])]
    for kw, want in cases:
        got = tf.linalg.triangular_solve(chol, b, **kw)
        np.testing.assert_allclose(got.numpy()[:, 0], want, rtol=1e-5)
    upper = tf.linalg.triangular_solve(a, b, lower=False)
    np.testing.assert_allclose(upper.numpy()[:, 0],
                               [-0.20833334, 0.46666667, 1.5], rtol=1e-5)
    np.testing.assert_allclose(tf.linalg.cholesky_solve(chol, b).numpy(),
                               np.linalg.solve(np.array(_SPD), b.numpy()),
                               rtol=1e-5)
    # Batch dims broadcast: [3, 1] against [4].
    assert tf.linalg.triangular_solve(tf.ones([3, 1, 2, 2]),
                                      tf.ones([4, 2, 1])).shape == (3, 4, 2, 1)


def test_cholesky_of_indefinite_matrix_is_nan_as_tf():
    # TF 2.21 on the CPU returns NaNs here rather than raising.
    got = tf.linalg.cholesky(tf.constant([[4.0, 2.0], [7.0, 3.0]],
                                         tf.float64)).numpy()
    assert np.isnan(got[0, 0]) and np.isnan(got[1, 0]) and np.isnan(got[1, 1])
    assert got[0, 1] == 0.0
    # A zero on the diagonal of a triangular solve: inf/NaN, no error.
    x = tf.linalg.triangular_solve([[1.0, 0.0], [2.0, 0.0]], [[1.0], [2.0]])
    assert x.numpy()[0, 0] == 1.0 and np.isnan(x.numpy()[1, 0])


def test_cholesky_and_triangular_solve_gradients_match_tf_traced():
    a = tf.constant(_SPD)
    b = tf.constant([[1.0], [2.0], [3.0]])

    @tf.function
    def grads(a, b):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([a, b])
            c = tf.linalg.cholesky(a)
            y = tf.reduce_sum(c * c * tf.constant([[1.0, 2.0, 3.0]]))
            z = tf.reduce_sum(
                tf.linalg.triangular_solve(a, b, lower=False) ** 2)
            w = tf.linalg.logdet(a)
        return tape.gradient(y, a), tape.gradient(z, [a, b]), \
            tape.gradient(w, a)

    gy, (gza, gzb), gw = grads(a, b)
    # TF 2.21's gradients for the same functions.
    np.testing.assert_allclose(gy.numpy(), [
        [1.2881249, -0.49374992, -0.27499998],
        [-0.49374992, 2.0024998, -0.05],
        [-0.27499998, -0.05, 3.0]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gza.numpy(), [
        [-0.02170139, 0.04861111, 0.15625],
        [0.0, -0.1775926, -0.5708333],
        [0.0, 0.0, -2.1827083]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gzb.numpy()[:, 0],
                               [-0.10416667, 0.38055557, 1.4551389],
                               rtol=1e-5)
    np.testing.assert_allclose(gw.numpy(), np.linalg.inv(np.array(_SPD)),
                               rtol=1e-5)


def test_band_and_triangular_errors_name_op_and_shapes():
    cases = [
        (lambda: tf.linalg.band_part(tf.ones([3]), 1, -1),
         r"MatrixBandPart: input must be at least 2-dim, received shape: "
         r"\[3\]"),
        (lambda: tf.linalg.band_part(tf.ones([3, 3]), 5, -1),
         r"MatrixBandPart: num_lower must be negative or less or equal to "
         r"number of rows \(3\) got: 5"),
        (lambda: tf.linalg.band_part(tf.ones([3, 2]), 0, 4),
         r"num_upper must be .* number of columns \(2\) got: 4"),
        (lambda: tf.linalg.cholesky(tf.ones([2, 3])),
         r"Cholesky: input must be a square matrix .*\[2,3\]"),
        (lambda: tf.linalg.cholesky(tf.ones([2, 2], tf.int32)),
         "Cholesky expects float16, float32 or float64 matrices, got int32"),
        (lambda: tf.linalg.triangular_solve(tf.ones([2, 2]), tf.ones([3, 1])),
         r"MatrixTriangularSolve: In\[0\] mismatch In\[1\] shape: 2 vs. 3: "
         r"\[2,2\] \[3,1\]"),
        (lambda: tf.linalg.triangular_solve(tf.ones([2, 2]),
                                            tf.ones([2, 1], tf.float64)),
         "MatrixTriangularSolve: matrix and rhs must have the same dtype, "
         "got float32 and float64"),
        (lambda: tf.linalg.triangular_solve(tf.ones([2, 2, 2]),
                                            tf.ones([3, 2, 1])),
         r"broadcastable batch dimensions: matrix \[2,2,2\], rhs \[3,2,1\]"),
        (lambda: tf.linalg.diag_part(tf.ones([3])),
         r"diag_part: input must be at least 2-dim, received shape: \[3\]"),
    ]
    for call, message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            call()
    with pytest.raises(TypeError, match="num_lower must be an integer"):
        tf.linalg.band_part(tf.ones([2, 2]), 0.5, 0)
    with pytest.raises(NotImplementedError, match="k=0"):
        tf.linalg.diag([1.0, 2.0], k=1)


def test_band_part_bounds_must_be_known_when_traced():
    @tf.function
    def f(x, n):
        return tf.linalg.band_part(x, n, 0)

    with pytest.raises(NotImplementedError, match="num_lower must be known"):
        f(tf.ones([2, 2]), tf.constant(1))


def test_big_batches_take_the_threaded_paths():
    # Enough work per call that the batch is split over threads.
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, size=(80, 16, 16))
    spd = x @ np.swapaxes(x, -1, -2) + 16 * np.eye(16)
    chol = tf.linalg.cholesky(spd)
    np.testing.assert_allclose(chol.numpy(), np.linalg.cholesky(spd),
                               rtol=1e-10, atol=1e-12)
    rhs = rng.uniform(-1, 1, size=(80, 16, 16))
    got = tf.linalg.triangular_solve(chol, rhs, adjoint=True).numpy()
    want = np.linalg.solve(np.swapaxes(np.linalg.cholesky(spd), -1, -2), rhs)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)
    big = rng.uniform(-1, 1, size=(40, 64, 64)).astype("float32")
    band = tf.linalg.band_part(big, 2, 3).numpy()
    i, j = np.arange(64)[:, None], np.arange(64)[None, :]
    np.testing.assert_array_equal(
        band, np.where((i - j <= 2) & (j - i <= 3), big, 0))


def test_diag_part_and_trace_traced_with_unknown_dims():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            d = tf.linalg.diag_part(x)
            y = tf.reduce_sum(d * d) + tf.linalg.trace(x)
        return d, tape.gradient(y, x)

    for shape in [(3, 2), (2, 3), (2, 2)]:
        x = np.arange(6.0, dtype="float32")[:np.prod(shape)].reshape(shape)
        d, g = f(tf.constant(x))
        k = min(shape)
        np.testing.assert_array_equal(d.numpy(), np.diagonal(x))
        want = np.zeros(shape, "float32")
        want[range(k), range(k)] = 2 * np.diagonal(x) + 1
        np.testing.assert_array_equal(g.numpy(), want)


def test_set_diag_replaces_only_the_diagonal():
    x = tf.reshape(tf.range(6.0), [2, 3])
    # TF 2.21 printed this for the same call.
    assert str(tf.linalg.set_diag(x, [10.0, 20.0])) == (
        "tf.Tensor(\n[[10.  1.  2.]\n [ 3. 20.  5.]], shape=(2, 3), "
        "dtype=float32)")
    # inf and NaN on the old diagonal do not leak into the new one.
    got = tf.linalg.set_diag(tf.constant([[np.inf, 1.0], [2.0, np.nan]]),
                             [1.0, 2.0])
    assert got.numpy().tolist() == [[1.0, 1.0], [2.0, 2.0]]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"diagonal must have shape .* \[2\], got \[3\]"):
        tf.linalg.set_diag(x, [1.0, 2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="diagonal must be at least 1-dim"):
        tf.linalg.set_diag(x, 1.0)


# ---- svd ------------------------------------------------------------------

def test_svd_reconstructs_and_matches_numpy_values():
    rng = np.random.default_rng(0)
    for shape, full in [((5, 3), False), ((3, 5), False), ((2, 4, 4), False),
                        ((5, 3), True), ((3, 5), True)]:
        a = rng.standard_normal(shape)
        s, u, v = tf.linalg.svd(tf.constant(a), full_matrices=full)
        m, n = shape[-2:]
        p = min(m, n)
        assert s.shape == shape[:-2] + (p,)
        assert u.shape == shape[:-2] + (m, m if full else p)
        assert v.shape == shape[:-2] + (n, n if full else p)
        np.testing.assert_allclose(s.numpy(), np.linalg.svd(a)[1],
                                   rtol=1e-10)
        rebuilt = (u.numpy()[..., :, :p] * s.numpy()[..., None, :]) @ \
            np.swapaxes(v.numpy()[..., :, :p], -1, -2)
        np.testing.assert_allclose(rebuilt, a, atol=1e-10)
        # The vectors are orthonormal.
        for q in (u.numpy(), v.numpy()):
            gram = np.swapaxes(q, -1, -2) @ q
            np.testing.assert_allclose(
                gram, np.broadcast_to(np.eye(q.shape[-1]), gram.shape),
                atol=1e-10)


def test_svd_values_only_and_tf_numbers():
    a = tf.reshape(tf.range(6.0), [2, 3])
    # TF 2.21: [7.3484697, 1.0000001]; u's first column [-0.2747, -0.9615].
    s = tf.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(s.numpy(), [7.3484697, 1.0000001], rtol=1e-5)
    _, u, v = tf.linalg.svd(a)
    np.testing.assert_allclose(np.abs(u.numpy()[:, 0]), [0.27472118,
                                                         0.96152395],
                               rtol=1e-5)
    assert s.dtype == tf.float32 and v.shape == (3, 2)


def test_svd_of_empty_and_bad_inputs():
    s, u, v = tf.linalg.svd(tf.zeros([2, 0, 3]))
    assert (s.shape, u.shape, v.shape) == ((2, 0), (2, 0, 0), (2, 3, 0))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Svd: input must have rank >= 2, got shape \[2\]"):
        tf.linalg.svd(tf.constant([1., 2.]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Svd.*int32"):
        tf.linalg.svd(tf.constant([[1, 2]]))


def test_svd_gradient_through_values_and_clear_error_through_vectors():
    a = tf.Variable([[0., 1., 2.], [3., 4., 5.]])
    with tf.GradientTape() as t:
        y = tf.reduce_sum(tf.linalg.svd(a, compute_uv=False))
    # TF 2.21's gradient of the nuclear norm of this matrix.
    np.testing.assert_allclose(t.gradient(y, a).numpy(),
                               [[-0.68461376, 0.02198054, 0.7285747],
                                [0.6038523, 0.57693166, 0.5500113]],
                               atol=1e-5)
    with tf.GradientTape() as t:
        s, u, v = tf.linalg.svd(a)
        y = tf.reduce_sum(u)
    with pytest.raises(Exception, match="through u or v"):
        t.gradient(y, a)
