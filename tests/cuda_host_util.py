"""Where the CUDA toolkit is, for the tests that build CUDA sources or
headers into host programs without a GPU (test_philox_host_device.py,
test_random_cuda_host.py, test_cuda_glue_host.py, test_half_cuda_host.py,
test_cast_cuda_host.py ...), and the builds of such programs. Every
build sees csrc/ and tests/c/ (cuda_fake_glue.h: the fake GPU under the
C glue; cuda_serial_random.cuh: random.cu's serial launchers)."""
import ctypes
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDES = ["-I", os.path.join(ROOT, "csrc"), "-I",
            os.path.join(ROOT, "tests", "c")]


def nvcc():
    """nvcc's path, or None."""
    for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if d and os.path.exists(os.path.join(d, "bin", "nvcc")):
            return os.path.join(d, "bin", "nvcc")
    return shutil.which("nvcc")


def cuda_include():
    """The toolkit's include folder (with cublas_v2.h), or None."""
    for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if d and os.path.exists(os.path.join(d, "include", "cublas_v2.h")):
            return os.path.join(d, "include")
    return None


def _toolkit(need_nvcc):
    """(include folder, nvcc or None); skips without what the build
    needs: the headers, gcc and GNU ld (its flags below), nvcc."""
    inc, cc = cuda_include(), nvcc()
    if not inc or not shutil.which("gcc") or not sys.platform.startswith(
            "linux") or (need_nvcc and not cc):
        pytest.skip("needs the CUDA toolkit (headers%s), gcc and GNU ld" %
                    (", nvcc" if need_nvcc else ""))
    return inc, cc


def _steps(cmds):
    for cmd in cmds:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, (cmd, r.stderr[-3000:])


def _nvcc_object(cc, src, obj, pic):
    return [cc, "-O2", "-std=c++17", "-gencode", "arch=compute_80,code=sm_80",
            "-Xcompiler", "-fPIC" if pic else "-fno-pic"] + INCLUDES + [
        "-c", src, "-o", obj]


def nvcc_program(tmp_path_factory, name, source, gencode="sm_80",
                 optimize=True):
    """source (CUDA C++ whose kernels' bodies run on the host) built by
    nvcc into a program in a fresh folder: (its path, the folder). Skips
    without nvcc. gencode "compute_80" stops at PTX (no ptxas pass) when
    only the host code matters."""
    cc = nvcc()
    if not cc:
        pytest.skip("no nvcc (CUDA toolkit) on this machine")
    d = tmp_path_factory.mktemp(name)
    (d / "h.cu").write_text(source)
    _steps([[cc] + (["-O2"] if optimize else []) + [
        "-std=c++17", "-gencode", f"arch=compute_80,code={gencode}"] +
        INCLUDES + [str(d / "h.cu"), "-o", str(d / "h")]])
    return str(d / "h"), d


def gcc_cuda_program(tmp_path_factory, name, source):
    """source (C that includes CUDA-using glue and fakes the CUDA calls it
    makes, cuda_fake_glue.h) built by gcc against the toolkit's headers
    into a program in a fresh folder: its path. Unused CUDA symbols stay
    unresolved (the program never calls them; no PIE, so they need no
    dynamic relocations)."""
    inc, _ = _toolkit(False)
    d = tmp_path_factory.mktemp(name)
    (d / "h.c").write_text(source)
    _steps([["gcc", "-std=c11", "-D_GNU_SOURCE", "-DTFMINI_WITH_CUDA",
             "-no-pie", "-fno-pic"] + INCLUDES + [
        "-I", inc, str(d / "h.c"), "-o", str(d / "h"), "-lm",
        "-Wl,--unresolved-symbols=ignore-all"]])
    return str(d / "h")


def cudart_program(tmp_path_factory, name, cu_source, c_source, csrc=()):
    """cu_source (a .cu file whose launchers are serial host loops, as
    cuda_serial_random.cuh) built by nvcc, c_source (glue over
    cuda_fake_glue.h) and the csrc/ files named in csrc (CPU code the
    glue calls) by gcc, linked with CUDA's static runtime (which
    registers the .cu file's kernels) into a program: its path. Other
    symbols stay unresolved, as in gcc_cuda_program."""
    inc, cc = _toolkit(True)
    d = tmp_path_factory.mktemp(name)
    (d / "h.cu").write_text(cu_source)
    (d / "m.c").write_text(c_source)
    gcc = ["gcc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-fno-pic"] + \
        INCLUDES + ["-I", inc, "-c"]
    objs = [str(d / "m.o"), str(d / "h.o")]
    steps = [_nvcc_object(cc, str(d / "h.cu"), objs[1], False),
             gcc + [str(d / "m.c"), "-o", objs[0]]]
    for k, f in enumerate(csrc):
        objs.append(str(d / f"c{k}.o"))
        steps.append(gcc + [os.path.join(ROOT, "csrc", f), "-o", objs[-1]])
    steps.append(["g++", "-no-pie"] + objs + [
        "-o", str(d / "h"), "-L", os.path.join(os.path.dirname(inc), "lib64"),
        "-lcudart_static", "-ldl", "-lrt", "-lpthread", "-lm",
        "-Wl,--unresolved-symbols=ignore-all"])
    _steps(steps)
    return str(d / "h")


def library_beside_c(tmp_path_factory, name, c_source, cu_sources=(),
                     defines=()):
    """c_source (glue over cuda_fake_glue.h with FAKE_GLUE_RUN_CPU) and
    cu_sources (.cu texts with serial launchers, by nvcc) built into a
    shared library loaded beside tfmini._C, whose every other tfm_*
    symbol it takes from there: the loaded ctypes library. -Bsymbolic:
    the harness's own launchers and stand-ins win over _C's real ones,
    which the global load of _C also exposes. Skips without the toolkit
    or in a build without the CUDA backend."""
    from tfmini import _C
    inc, cc = _toolkit(bool(cu_sources))
    if not _C.cuda_built():
        pytest.skip("this build has no CUDA backend (the glue is not in it)")
    d = tmp_path_factory.mktemp(name)
    objs, steps = [], []
    for k, text in enumerate(cu_sources):
        (d / f"k{k}.cu").write_text(text)
        objs.append(str(d / f"k{k}.o"))
        steps.append(_nvcc_object(cc, str(d / f"k{k}.cu"), objs[-1], True))
    (d / "glue.c").write_text(c_source)
    objs.append(str(d / "glue.o"))
    steps.append(["gcc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-fPIC", "-Wall",
                  "-Wno-unused-function"] + list(defines) + INCLUDES + [
        "-I", inc, "-c", str(d / "glue.c"), "-o", objs[-1]])
    steps.append(["g++", "-shared", "-Wl,-Bsymbolic"] + objs + [
        "-o", str(d / "h.so")] + (["-L", os.path.join(
            os.path.dirname(inc), "lib64"), "-lcudart"] if cu_sources
            else []))
    _steps(steps)
    ctypes.CDLL(_C.__file__, mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(d / "h.so"))
    lib.dtype_of.argtypes = [ctypes.c_char_p]
    return lib
