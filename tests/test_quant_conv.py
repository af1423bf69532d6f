"""The direct int8 convolution (Note [Direct int8 convolution] in
csrc/kernels/cpu/quant_conv.c) against the im2col paths, bit for bit
(int8 arithmetic is exact, and the requantization runs the same float
steps): QuantizedConv2DPacked on its default path against the unpacked
QuantizedConv2D (im2col and the [K, N] GEMM), and against itself with
TFMINI_QCONV_IM2COL=1 (im2col and the packed GEMM) and TFMINI_QGEMM_REF=1
(the portable loops), across shapes, strides, paddings, dilations,
channel counts 1/3/4/5/16/17, batch 1 and 64, int8 and float in and out,
and each fused activation."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C
from tfmini.lite._convert import pack_weights

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPS = {row[0]: k for k, row in enumerate(_C.op_table())}


def _call(op, inputs, **kw):
    r = _C.call(OPS[op], tuple(tf.constant(x) for x in inputs), **kw)
    return np.asarray(r[0] if isinstance(r, (tuple, list)) else r)


def _direct_in_use():
    import ctypes
    lib = ctypes.CDLL(_C.__file__)
    return bool(lib.tfm_qconv_direct_enabled())


# (batch, h, w, c, kh, kw, out, strides, dilations, pad mode, explicit)
_SHAPES = [
    (1, 8, 8, 1, 3, 3, 16, (1, 1), (1, 1), 1, None),
    (64, 8, 8, 1, 3, 3, 16, (1, 1), (1, 1), 1, None),
    (64, 4, 4, 16, 3, 3, 32, (1, 1), (1, 1), 1, None),
    (1, 4, 4, 16, 3, 3, 32, (1, 1), (1, 1), 1, None),
    (2, 9, 8, 3, 3, 3, 20, (2, 2), (1, 1), 1, None),
    (3, 7, 10, 4, 2, 3, 17, (1, 2), (1, 1), 0, None),
    (2, 9, 9, 5, 3, 3, 64, (1, 1), (2, 2), 0, None),
    (1, 6, 7, 17, 1, 1, 70, (1, 1), (1, 1), 0, None),
    (2, 5, 6, 16, 3, 2, 33, (2, 1), (1, 1), 2, (1, 0, 2, 1)),
    (1, 11, 5, 17, 5, 3, 9, (3, 2), (1, 2), 1, None),
    (64, 6, 6, 3, 3, 3, 130, (1, 1), (1, 1), 1, None),
    (1, 3, 3, 4, 3, 3, 1, (1, 1), (1, 1), 0, None),
    (0, 5, 5, 4, 3, 3, 8, (1, 1), (1, 1), 1, None),
]


def _cases():
    """[(name, QuantizedConv2DPacked's output)] over _SHAPES, each with
    the unpacked QuantizedConv2D's answer checked against it here."""
    rng = np.random.default_rng(7)
    out = []
    for n, (b, h, w, c, kh, kw, o, st, dil, mode, pads) in enumerate(_SHAPES):
        x = rng.integers(-128, 128, (b, h, w, c)).astype(np.int8)
        wt = rng.integers(-128, 128, (kh, kw, c, o)).astype(np.int8)
        ws = rng.uniform(0.0005, 0.004, o).astype(np.float32)
        bias = rng.integers(-20000, 20000, o).astype(np.int32)
        wp, cs = pack_weights(wt.reshape(-1, o))
        z_in, z_out = int(rng.integers(-30, 30)), int(rng.integers(-20, 20))
        # the pads of EXPLICIT at ints[8..11], the filter's sizes
        # before them (the unpacked op reads them from its filter)
        ints = st + dil + (kh, kw, c, o) + (pads if mode == 2 else ())
        pints = ints
        off = (bias.astype(np.int64)
               - (z_in + 128) * cs.astype(np.int64)).astype(np.int32)
        for act in (0, 1, 2):
            kw_ = dict(i=(mode, z_in, z_out, act), f=(0.02, 0.05))
            want = _call("QuantizedConv2D", (x, wt, ws, bias), ints=ints,
                         **kw_)
            got = _call("QuantizedConv2DPacked", (x, wp, ws, off),
                        ints=pints, dtype=1, **kw_)
            assert got.dtype == np.int8 and got.shape == want.shape
            assert np.array_equal(got, want), (n, act)
            out.append((f"{n}/int8/{act}", got))
            gotf = _call("QuantizedConv2DPacked", (x, wp, ws, off),
                         ints=pints, dtype=7, **kw_)
            np.testing.assert_array_equal(
                gotf, (want.astype(np.float32) - z_out) * np.float32(0.05))
            out.append((f"{n}/float_out/{act}", gotf))
        # float in: the layer quantizes it with f[0], i[1]
        xf = (rng.standard_normal((b, h, w, c)) * 2).astype(np.float32)
        xq = _call("Quantize", (xf,), i=(0, z_in), f=(0.02,))
        kw_ = dict(i=(mode, z_in, z_out, 1), f=(0.02, 0.05))
        want = _call("QuantizedConv2D", (xq, wt, ws, bias), ints=ints, **kw_)
        got = _call("QuantizedConv2DPacked", (xf, wp, ws, off), ints=pints,
                    dtype=1, **kw_)
        assert np.array_equal(got, want), (n, "float in")
        out.append((f"{n}/float_in", got))
    return out


def test_direct_conv_equals_the_unpacked_op():
    assert len(_cases()) == len(_SHAPES) * 7


_CHILD = ("import sys, numpy as np; sys.path.insert(0, %r); "
          "import test_quant_conv as t; "
          "np.savez(sys.argv[1], **{k.replace('/', '_'): v "
          "for k, v in t._cases()})")


@pytest.mark.parametrize("env", ["TFMINI_QCONV_IM2COL", "TFMINI_QGEMM_REF"])
def test_direct_conv_equals_the_other_paths(env, tmp_path):
    """In a child process with env=1 (read once per process) the same
    cases run through im2col (and, for TFMINI_QGEMM_REF, the portable
    loops); every output equals this process's."""
    mine = {k.replace("/", "_"): v for k, v in _cases()}
    f = tmp_path / "other.npz"
    r = subprocess.run([sys.executable, "-c", _CHILD % str(ROOT / "tests"),
                        str(f)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **{env: "1"}))
    assert r.returncode == 0, r.stderr[-2000:]
    other = np.load(f)
    assert sorted(other.files) == sorted(mine)
    for k, v in mine.items():
        assert np.array_equal(other[k], v), k


def test_direct_conv_is_the_default_with_vnni():
    """On a CPU with AVX512-VNNI the direct kernel is what runs (so the
    tests above compare it); elsewhere nothing here can check it."""
    import ctypes
    lib = ctypes.CDLL(_C.__file__)
    if not lib.tfm_qgemm_uses_vnni():
        pytest.skip("this CPU has no AVX512-VNNI: the direct int8 conv "
                    "is not used")
    assert _direct_in_use()


def test_offsets_past_int32_headroom_fall_back_exactly():
    """A bias so large that sum + offset could leave int32 declines the
    direct kernel (its add is int32); the answer still equals the
    unpacked op's."""
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (2, 6, 6, 16)).astype(np.int8)
    wt = rng.integers(-128, 128, (3, 3, 16, 8)).astype(np.int8)
    ws = np.full(8, 1e-6, np.float32)
    bias = np.full(8, 2_000_000_000, np.int32)
    wp, cs = pack_weights(wt.reshape(-1, 8))
    off = np.clip(bias.astype(np.int64) - 128 * cs.astype(np.int64),
                  -2**31, 2**31 - 1).astype(np.int32)
    kw = dict(i=(1, 0, 0, 0), f=(1.0, 1.0))
    want = _call("QuantizedConv2D", (x, wt, ws, bias), ints=(1, 1, 1, 1),
                 **kw)
    got = _call("QuantizedConv2DPacked", (x, wp, ws, off),
                ints=(1, 1, 1, 1, 3, 3, 16, 8), dtype=1, **kw)
    assert np.array_equal(got, want)
