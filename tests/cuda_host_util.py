"""Where the CUDA toolkit is, for the tests that build CUDA sources or
headers into host programs without a GPU (test_philox_host_device.py,
test_random_cuda_host.py, test_cuda_glue_host.py, test_half_cuda_host.py,
test_cast_cuda_host.py ...), and the build of such a program."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
    r = subprocess.run([cc] + (["-O2"] if optimize else []) + [
        "-std=c++17", "-gencode", f"arch=compute_80,code={gencode}", "-I",
        os.path.join(ROOT, "csrc"), str(d / "h.cu"), "-o", str(d / "h")],
        capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return str(d / "h"), d


def gcc_cuda_program(tmp_path_factory, name, source):
    """source (C that includes CUDA-using glue and fakes the CUDA calls it
    makes) built by gcc against the toolkit's headers into a program in
    a fresh folder: its path. Unused CUDA symbols stay unresolved (the
    program never calls them). Skips without the headers or gcc."""
    inc = cuda_include()
    if not inc or not shutil.which("gcc"):
        pytest.skip("needs the CUDA toolkit's headers and gcc")
    d = tmp_path_factory.mktemp(name)
    (d / "h.c").write_text(source)
    r = subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE",
                        "-DTFMINI_WITH_CUDA", "-no-pie", "-fno-pic", "-I",
                        os.path.join(ROOT, "csrc"), "-I", inc,
                        str(d / "h.c"), "-o", str(d / "h"), "-lm",
                        "-Wl,--unresolved-symbols=ignore-all"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(d / "h")
