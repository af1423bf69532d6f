"""The GPU's fused elementwise kernels (csrc/graph/fused_nvrtc.c,
Note [Fused programs on the GPU]) without a GPU: NVRTC needs no device,
so the CUDA source that graph/fused_native.c writes for a program is
compiled here, to PTX for sm_80 and sm_90 and to an sm_90 cubin, through
the test hook tfm_cuda_fused_compile_check. Every formula row the GPU
path takes, each input kind, float32 and float64, multi-output programs;
programs the path must refuse are refused; and each instruction's
statement is the same text in the CPU's source and the GPU's. Skips in a
build without CUDA (the stub has no hook), but for setup.py's search for
NVRTC."""
import ctypes
import re

import pytest

import tfmini as tf
from tfmini import _C
from test_native_formulas import NAMES, ROWS

from tfmini._opids import ID
FULL, SCALAR, PERIODIC, OTHER = 0, 1, 2, 3     # fused.h's TFM_FUSED_IN_*
F32, F64 = tf.float32._enum, tf.float64._enum
INT32, BOOL = tf.int32._enum, tf.bool._enum


def _hook():
    try:
        f = ctypes.CDLL(_C.__file__).tfm_cuda_fused_compile_check
    except AttributeError:
        return None
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                  ctypes.POINTER(ctypes.c_double), ctypes.c_int,
                  ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                  ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    return f


HOOK = _hook()


@pytest.fixture(autouse=True)
def _need_hook(request):
    if HOOK is None and not request.node.name.startswith("test_setup_"):
        pytest.skip("built without CUDA: no NVRTC fused kernels")


def inp(k):
    return -2 - k                # fused.h's TFM_FUSED_INPUT(k)


def run(code, inputs, out_dtype, arch=None):
    """code: (op name, dtype, src0, src1 or None, out, ai, af) rows;
    inputs: (kind, dtype, period). (status, text)."""
    flat, af = [], []
    for op, dt, s0, s1, out, ai, f in code:
        flat += [ID[op], 1 if s1 is None else 2, dt, s0,
                 0 if s1 is None else s1, out, ai]
        af.append(f)
    ins = [v for row in inputs for v in row]
    cap = 1 << 20
    buf = ctypes.create_string_buffer(cap)
    rc = HOOK(len(code), (ctypes.c_int64 * len(flat))(*flat),
              (ctypes.c_double * len(af))(*af), len(inputs),
              (ctypes.c_int64 * max(1, len(ins)))(*ins), out_dtype,
              arch.encode() if arch else None, buf, cap)
    return rc, buf.value.decode("latin-1")


# The rows the GPU path takes: every EW row (its formula text is what
# fused_native.c writes), by loop kind.
EW = [(NAMES[a[0]], a[1]) for m, a in ROWS if m == "EW"]
BINARY = [n for n, loop in EW if loop == "BINARY"]
UNARY = [n for n, loop in EW if loop in ("UNARY", "HEAVY")]
PARAMS = [("LeakyRelu", 0, 0.2), ("Gelu", 0, 0.0), ("Gelu", 1, 0.0)]


def chain(dt):
    """Every formula op once, each reading the last one's value (so none
    is dead code) and input 1; Cast to the other float type and back at
    the end. Split in programs of at most 48 instructions."""
    other = F64 if dt == F32 else F32
    rows = [(n, dt, None, inp(1), 0, 0, 0.0) for n in BINARY]
    rows += [(n, dt, None, None, 0, 0, 0.0) for n in UNARY]
    rows += [(n, dt, None, None, 0, ai, f) for n, ai, f in PARAMS]
    rows += [("Cast", other, None, None, 0, 0, 0.0),
             ("Cast", dt, None, None, 0, 0, 0.0)]
    progs = []
    for start in range(0, len(rows), 40):
        part = rows[start:start + 40]
        progs.append([(op, d, inp(0) if i == 0 else i - 1, s1, o, ai, f)
                      for i, (op, d, _, s1, o, ai, f) in enumerate(part)])
    return progs


def test_every_formula_row_is_in_a_chain():
    names = {r[0] for p in chain(F32) for r in p}
    assert names == {n for n, _ in EW}


@pytest.mark.parametrize("arch", ["compute_80", "compute_90"])
@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_every_formula_compiles_to_ptx(dt, arch):
    for prog in chain(dt):
        rc, text = run(prog, [(FULL, dt, 0), (FULL, dt, 0)], dt, arch)
        assert rc == 1, text
        assert ".entry tfm_fused" in text
        assert f".target sm_{arch[-2:]}" in text
        # No call into anything NVRTC did not inline (no libdevice left
        # to link at load time).
        assert ".extern .func" not in text


def test_cubin_for_a_real_architecture():
    rc, text = run([("Exp", F32, inp(0), None, 0, 0, 0.0),
                    ("AddV2", F32, 0, inp(1), 0, 0, 0.0)],
                   [(FULL, F32, 0), (SCALAR, F32, 0)], F32, "sm_90")
    assert rc == 1, text
    assert text.startswith("\x7fELF")


INPUT_KINDS = [
    ("full", (FULL, F32, 0), "in1[i]"),
    ("scalar", (SCALAR, F32, 0), "s1"),
    ("periodic", (PERIODIC, F32, 16), "in1[j]"),
]


@pytest.mark.parametrize("name,kind,read", INPUT_KINDS,
                         ids=[k[0] for k in INPUT_KINDS])
def test_each_input_kind(name, kind, read):
    prog = [("Mul", F32, inp(0), inp(1), 0, 0, 0.0),
            ("Relu", F32, 0, None, 0, 0, 0.0)]
    ins = [(FULL, F32, 0), kind]
    rc, src = run(prog, ins, F32)
    assert rc == 1
    assert f"const float y = {read};" in src
    if name == "scalar":
        assert "const float s1 = *in1;" in src
    if name == "periodic":
        assert "i % 16LL" in src
    rc, text = run(prog, ins, F32, "compute_80")
    assert rc == 1, text


def test_all_kinds_in_one_float64_program():
    prog = [("AddV2", F64, inp(0), inp(1), 0, 0, 0.0),
            ("Mul", F64, 0, inp(2), 0, 0, 0.0),
            ("Tanh", F64, 1, None, 0, 0, 0.0),
            ("Sub", F64, 2, inp(3), 0, 0, 0.0)]
    ins = [(FULL, F64, 0), (PERIODIC, F64, 8), (SCALAR, F64, 0),
           (PERIODIC, F64, 8)]
    rc, text = run(prog, ins, F64, "compute_90")
    assert rc == 1, text


def test_multi_output_program():
    # v0 = exp(x) is also node output 1, v1 = v0 * y output 2, v2 output 0.
    prog = [("Exp", F32, inp(0), None, 1, 0, 0.0),
            ("Mul", F32, 0, inp(1), 2, 0, 0.0),
            ("Sigmoid", F32, 1, None, 0, 0, 0.0)]
    ins = [(FULL, F32, 0), (PERIODIC, F32, 5)]
    rc, src = run(prog, ins, F32)
    assert rc == 1
    # Parameters in the order the launch passes pointers.
    assert re.search(r"tfm_fused\(const float \*in0, const float \*in1, "
                     r"float \*o0, float \*o1, float \*o2, long long n\)",
                     src), src
    # Stores after every read of element i.
    tail = src[src.index("o1[i] = v0;"):]
    assert "o2[i] = v1;" in tail and "o0[i] = v2;" in tail
    rc, text = run(prog, ins, F32, "compute_80")
    assert rc == 1, text


def test_mixed_float_types_through_cast():
    prog = [("Cast", F64, inp(0), None, 0, 0, 0.0),
            ("AddV2", F64, 0, inp(1), 0, 0, 0.0),
            ("Cast", F32, 1, None, 0, 0, 0.0)]
    rc, text = run(prog, [(FULL, F32, 0), (SCALAR, F64, 0)], F32,
                   "compute_80")
    assert rc == 1, text


REFUSED = [
    ("int32 input", [("AddV2", F32, inp(0), inp(1), 0, 0, 0.0)],
     [(FULL, INT32, 0), (FULL, F32, 0)], F32),
    ("bool input", [("Relu", F32, inp(0), None, 0, 0, 0.0)],
     [(FULL, BOOL, 0)], F32),
    ("int32 result", [("AddV2", INT32, inp(0), inp(1), 0, 0, 0.0)],
     [(FULL, INT32, 0), (FULL, INT32, 0)], INT32),
    ("op with no formula", [("Equal", F32, inp(0), inp(1), 0, 0, 0.0)],
     [(FULL, F32, 0), (FULL, F32, 0)], F32),
    ("other broadcast", [("AddV2", F32, inp(0), inp(1), 0, 0, 0.0)],
     [(FULL, F32, 0), (OTHER, F32, 0)], F32),
    ("two periods", [("AddV2", F32, inp(0), inp(1), 0, 0, 0.0),
                     ("AddV2", F32, 0, inp(2), 0, 0, 0.0)],
     [(FULL, F32, 0), (PERIODIC, F32, 4), (PERIODIC, F32, 8)], F32),
    ("infinite attribute", [("LeakyRelu", F32, inp(0), None, 0, 0,
                             float("inf"))], [(FULL, F32, 0)], F32),
]


@pytest.mark.parametrize("name,prog,ins,out", REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_refused(name, prog, ins, out):
    assert run(prog, ins, out)[0] == 0
    assert run(prog, ins, out, "compute_80")[0] == 0
    assert run(prog, ins, out, "c")[0] == 0


def test_nvrtc_failure_returns_its_log():
    rc, text = run([("Exp", F32, inp(0), None, 0, 0, 0.0)],
                   [(FULL, F32, 0)], F32, "compute_1")
    assert rc == -1
    assert text


def _statements(src):
    """The per-instruction statements and the stores: the loop body's
    lines after its `(void)j;`."""
    lines = src.splitlines()
    start = lines.index("            (void)j;") + 1
    return [ln for ln in lines[start:] if ln.startswith(" " * 12)]


@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_cpu_and_gpu_share_each_statement(dt):
    for prog in chain(dt) + [
            [("Exp", dt, inp(0), None, 1, 0, 0.0),
             ("Mul", dt, 0, inp(1), 0, 0, 0.0)]]:
        ins = [(FULL, dt, 0), (PERIODIC, dt, 7)]
        rc_c, c = run(prog, ins, dt, "c")
        rc_g, g = run(prog, ins, dt)
        assert rc_c == rc_g == 1
        assert "tfm_native(const void *const *in" in c
        assert "__global__" in g and "__global__" not in c
        body = _statements(c)
        assert len(body) > 4 * len(prog)
        assert body == _statements(g)


# ---- setup.py finds NVRTC (runs in any build) ----

def _setup_functions():
    """find_nvrtc and what it calls, from setup.py, without running it."""
    import ast
    from pathlib import Path
    tree = ast.parse((Path(__file__).resolve().parents[1] / "setup.py")
                     .read_text())
    keep = {"_pip_nvidia_dirs", "cuda_lib", "find_nvrtc"}
    body = [n for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name in keep]
    assert {n.name for n in body} == keep
    ns = {}
    exec("import glob, os, sys", ns)
    exec(compile(ast.Module(body=body, type_ignores=[]), "setup.py", "exec"),
         ns)
    return ns


@pytest.fixture
def setup_fns():
    ns = _setup_functions()
    ns["_pip_nvidia_dirs"] = lambda sub: []     # no wheel unless a test says
    return ns


def test_setup_links_the_toolkits_nvrtc(setup_fns, tmp_path):
    (tmp_path / "lib64").mkdir()
    (tmp_path / "lib64" / "libnvrtc.so").write_text("")
    assert setup_fns["find_nvrtc"](str(tmp_path)) == (
        str(tmp_path / "lib64"), "-lnvrtc")


def test_setup_takes_the_wheels_versioned_nvrtc(setup_fns, tmp_path):
    wheel = tmp_path / "nvidia" / "cu13" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libnvrtc.so.13").write_text("")
    setup_fns["_pip_nvidia_dirs"] = lambda sub: [str(wheel)]
    assert setup_fns["find_nvrtc"](str(tmp_path / "cuda")) == (
        str(wheel), "-l:libnvrtc.so.13")


def test_setup_without_nvrtc_names_the_package(setup_fns, tmp_path):
    with pytest.raises(SystemExit) as e:
        setup_fns["find_nvrtc"](str(tmp_path))
    assert "libnvrtc.so" in str(e.value)
    assert "nvidia-cuda-nvrtc" in str(e.value)
