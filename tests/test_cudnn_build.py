"""Which cuDNN the CUDA build takes (setup.py's find_cudnn: CUDNN_ROOT,
else the toolkit's folders, else the pip nvidia-cudnn wheel, else the
system's), that TFMINI_CUDNN forces either way, that the glue compiles
with and without it, and that the built extension loads it without
LD_LIBRARY_PATH. The kernels themselves run in tests/gpu/test_gpu_conv.py
(GPU machines only)."""
import ast
import os
import pathlib
import runpy
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SYSTEM_CUDNN = os.path.exists("/usr/include/cudnn_version.h")


def setup_functions():
    """find_cudnn and its helpers from setup.py, without running it."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    keep = {"_cudnn_major", "_pip_nvidia_dirs", "find_cudnn"}
    body = [n for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name in keep]
    assert {n.name for n in body} == keep
    ns = {}
    exec("import glob, os, re, sys", ns)
    exec(compile(ast.Module(body=body, type_ignores=[]), "setup.py", "exec"),
         ns)
    return ns


def fake_cudnn(root, major=9, lib="lib64", soname="libcudnn.so"):
    (root / "include").mkdir(parents=True, exist_ok=True)
    (root / "include" / "cudnn_version.h").write_text(
        f"#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR 1\n")
    (root / lib).mkdir(parents=True, exist_ok=True)
    (root / lib / soname).write_text("")
    return str(root / "include"), str(root / lib)


@pytest.fixture
def fns(monkeypatch):
    ns = setup_functions()
    ns["_pip_nvidia_dirs"] = lambda sub: []     # no wheel unless a test says
    return ns


def test_the_toolkits_own_cudnn(fns, tmp_path):
    inc, lib = fake_cudnn(tmp_path / "cuda")
    assert fns["find_cudnn"](str(tmp_path / "cuda"), {}) == (
        inc, lib, "-lcudnn")
    assert fns["_cudnn_major"](inc) == 9


def test_the_pip_wheel_with_only_a_versioned_library(fns, tmp_path):
    (tmp_path / "cuda" / "include").mkdir(parents=True)
    wheel = tmp_path / "site" / "nvidia" / "cudnn"
    inc, lib = fake_cudnn(wheel, lib="lib", soname="libcudnn.so.9")
    fake_cudnn(tmp_path / "site" / "nvidia" / "cublas")  # not cuDNN's
    fns["_pip_nvidia_dirs"] = lambda sub: sorted(
        str(p) for p in (tmp_path / "site" / "nvidia").glob("*/" + sub))
    assert fns["find_cudnn"](str(tmp_path / "cuda"), {}) == (
        inc, lib, "-l:libcudnn.so.9")


def test_cudnn_root_alone_when_set(fns, tmp_path):
    fake_cudnn(tmp_path / "cuda")
    inc, lib = fake_cudnn(tmp_path / "mine", lib="lib")
    env = {"CUDNN_ROOT": str(tmp_path / "mine")}
    assert fns["find_cudnn"](str(tmp_path / "cuda"), env) == (
        inc, lib, "-lcudnn")
    # A CUDNN_ROOT without cuDNN is not silently replaced by another.
    env = {"CUDNN_ROOT": str(tmp_path / "empty")}
    assert fns["find_cudnn"](str(tmp_path / "cuda"), env) is None
    with pytest.raises(SystemExit, match="CUDNN_ROOT"):
        fns["find_cudnn"](str(tmp_path / "cuda"),
                          dict(env, TFMINI_CUDNN="1"))


def test_off_without_cuda_or_when_asked(fns, tmp_path):
    fake_cudnn(tmp_path / "cuda")
    assert fns["find_cudnn"](None, {}) is None
    assert fns["find_cudnn"](str(tmp_path / "cuda"),
                             {"TFMINI_CUDNN": "0"}) is None
    with pytest.raises(SystemExit, match="TFMINI_CUDNN='yes'"):
        fns["find_cudnn"](str(tmp_path / "cuda"), {"TFMINI_CUDNN": "yes"})


@pytest.mark.skipif(SYSTEM_CUDNN, reason="this machine has a system cuDNN")
def test_old_or_missing_cudnn_is_not_taken(fns, tmp_path):
    fake_cudnn(tmp_path / "cuda", major=7)      # no _v7 heuristics API
    assert fns["find_cudnn"](str(tmp_path / "cuda"), {}) is None
    with pytest.raises(SystemExit, match="no cuDNN 8"):
        fns["find_cudnn"](str(tmp_path / "cuda"), {"TFMINI_CUDNN": "1"})


def _flags(monkeypatch, **env):
    for k in ("TFMINI_CUDA", "TFMINI_CUDNN", "CUDNN_ROOT", "CUDA_HOME"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(ROOT)
    return runpy.run_path(str(ROOT / "setup.py"), run_name="setup_flags")


def _real_cudnn():
    g = runpy.run_path(str(ROOT / "setup.py"), run_name="setup_flags")
    root = g["find_cuda"]()
    return root, root and g["find_cudnn"](root)


def test_setup_flags_follow_the_finder(monkeypatch):
    root, found = _real_cudnn()
    if not found:
        pytest.skip("no CUDA toolkit with cuDNN on this machine")
    g = _flags(monkeypatch, TFMINI_CUDA="1")
    assert g["CUDNN_DEFINES"] == ["-DTFMINI_WITH_CUDNN"]
    link = g["CUDNN_LINK"]
    assert link[-1] in ("-lcudnn", "-l:libcudnn.so.9") or \
        link[-1].startswith("-l:libcudnn.so.")
    assert "-Wl,-rpath," + found[1] in link
    # cuDNN off: the build is today's CUDA build (convolutions soft-place).
    g = _flags(monkeypatch, TFMINI_CUDA="1", TFMINI_CUDNN="0")
    assert g["CUDNN"] is None
    assert g["CUDNN_DEFINES"] == [] and g["CUDNN_LINK"] == []
    assert g["CUDA_DEFINES"] == ["-DTFMINI_WITH_CUDA"]


def test_glue_compiles_with_and_without_cudnn():
    root, found = _real_cudnn()
    if not root or not shutil.which("gcc"):
        pytest.skip("no CUDA toolkit on this machine")
    g = runpy.run_path(str(ROOT / "setup.py"), run_name="setup_flags")
    incs = ["-I" + d for d in g["cuda_includes"](root)]
    base = ["gcc", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
            "-Werror", "-Wno-unused-parameter", "-fsyntax-only",
            "-DTFMINI_WITH_CUDA", "-Icsrc"] + incs
    for extra in ([], ["-DTFMINI_WITH_CUDNN", "-I" + found[0]] if found
                  else None):
        if extra is None:
            continue
        for src in ("conv_cudnn.c", "kernels_pool.c", "kernels_nn.c"):
            r = subprocess.run(base + extra + ["csrc/kernels/cuda/" + src],
                               cwd=ROOT, capture_output=True, text=True)
            assert r.returncode == 0, (extra, src, r.stderr)


def test_built_extension_loads_cudnn_without_ld_library_path():
    from tfmini import _C
    if not _C.cuda_built():
        pytest.skip("this build has no CUDA backend")
    code = ("import ctypes, tfmini; "
            "f = getattr(ctypes.CDLL(tfmini._C.__file__), "
            "'tfm_cuda_cudnn_version', None); "
            "print(f() if f else -1)")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    version = int(r.stdout.split()[-1])
    assert version != -1        # CUDA builds always export it
    _, found = _real_cudnn()
    if found and os.environ.get("TFMINI_CUDNN") != "0":
        # Built with cuDNN (setup.py finds the same one now): its
        # library loads and reports 8.x or newer (8xxx / 9xxxx).
        assert version >= 8000, version
