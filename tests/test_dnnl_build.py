"""Which oneDNN the build takes (setup.py's find_dnnl: DNNL_ROOT, then the
onednn-cpu-gomp wheels, then Debian's libdnnl-dev) and that the built
extension loads it without LD_LIBRARY_PATH. The conv and GEMM kernels
build against oneDNN 2.x and 3.x (csrc/kernels/cpu/dnnl_compat.h); their
values are checked by test_conv_dnnl.py and test_gemm_backend.py under
whichever the build found."""
import ast
import ctypes
import json
import os
import subprocess
import sys

import pytest

import tfmini as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def setup_functions():
    """find_dnnl and its helpers from setup.py, without running setup()."""
    with open(os.path.join(ROOT, "setup.py")) as f:
        tree = ast.parse(f.read())
    keep = {"_dnnl_runtime", "_dnnl_major", "_pip_dnnl", "find_dnnl"}
    body = [n for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name in keep]
    assert {n.name for n in body} == keep
    mod = ast.Module(body=body, type_ignores=[])
    ns = {}
    exec("import glob, os, re, shutil, subprocess, sys", ns)
    exec(compile(mod, "setup.py", "exec"), ns)
    return ns


def fake_wheels(tmp_path, runtime="OMP"):
    """A prefix as `pip install onednn-cpu-gomp onednn-devel-cpu-gomp`
    leaves it: data files under prefix/include and prefix/lib, recorded
    relative to site-packages."""
    prefix = tmp_path / "prefix"
    site = prefix / "lib" / "python3" / "site-packages"
    inc, lib = prefix / "include", prefix / "lib"
    (inc / "oneapi" / "dnnl").mkdir(parents=True)
    site.mkdir(parents=True)
    (inc / "dnnl.h").write_text("")
    (inc / "oneapi" / "dnnl" / "dnnl.h").write_text("")
    (inc / "oneapi" / "dnnl" / "dnnl_config.h").write_text(
        f"#define DNNL_CPU_RUNTIME DNNL_RUNTIME_{runtime}\n")
    (inc / "oneapi" / "dnnl" / "dnnl_version.h").write_text(
        "#define DNNL_VERSION_MAJOR 3\n#define DNNL_VERSION_MINOR 2\n")
    (lib / "libdnnl.so").write_text("")
    for name, files in (
            ("onednn_devel_cpu_gomp", ["../../../include/dnnl.h",
                                       "../../../include/oneapi/dnnl/dnnl.h",
                                       "../../../include/oneapi/dnnl/"
                                       "dnnl_config.h"]),
            ("onednn_cpu_gomp", ["../../libdnnl.so"])):
        info = site / f"{name}-2023.2.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\n"
            "Version: 2023.2.0\n")
        (info / "RECORD").write_text("".join(f"{p},,\n" for p in files))
    return site, str(inc), str(lib)


def test_finds_the_wheels_and_prefers_them(tmp_path, monkeypatch):
    fns = setup_functions()
    site, inc, lib = fake_wheels(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    assert fns["_pip_dnnl"]() == (inc, lib)
    assert fns["find_dnnl"]({}) == (inc, lib)
    # setup.py passes the header's major version, and dnnl_compat.h
    # stops a build whose compiler finds another dnnl.h first.
    assert fns["_dnnl_major"](inc) == 3
    assert fns["_dnnl_major"](str(tmp_path)) is None
    # DNNL_ROOT still comes first, and TFMINI_DNNL=0 still turns it off.
    root = tmp_path / "root"
    (root / "include").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "include" / "dnnl.h").write_text("")
    (root / "lib" / "libdnnl.so.2").write_text("")
    assert fns["find_dnnl"]({"DNNL_ROOT": str(root)}) == (
        str(root / "include"), str(root / "lib"))
    assert fns["find_dnnl"]({"TFMINI_DNNL": "0"}) is None


def test_skips_a_wheel_with_another_thread_runtime(tmp_path, monkeypatch):
    """A TBB or SYCL build would run a second thread pool beside tfmini's
    OpenMP one: find_dnnl passes over it to the system's oneDNN."""
    fns = setup_functions()
    site, inc, lib = fake_wheels(tmp_path, runtime="SYCL")
    monkeypatch.syspath_prepend(str(site))
    assert fns["_dnnl_runtime"](inc) == "SYCL"
    assert fns["_pip_dnnl"]() == (inc, lib)
    assert fns["find_dnnl"]({}) != (inc, lib)


def test_no_wheels_no_answer(tmp_path, monkeypatch):
    fns = setup_functions()
    monkeypatch.setattr(sys, "path", [p for p in sys.path
                                      if "site-packages" not in p
                                      and "dist-packages" not in p])
    assert fns["_pip_dnnl"]() is None


def dnnl_build():
    lib = ctypes.CDLL(tf._C.__file__)
    lib.tfm_conv_backend.restype = ctypes.c_char_p
    return lib.tfm_conv_backend().decode() == "dnnl"


@pytest.mark.skipif(not dnnl_build(), reason="built without oneDNN")
def test_extension_loads_its_onednn_without_library_path():
    code = r"""
import ctypes, json
import numpy as np
import tfmini as tf
x = np.ones((1, 8, 8, 4), np.float32)
f = np.ones((3, 3, 4, 8), np.float32)
y = tf.nn.conv2d(x, f, 1, "SAME").numpy()
lib = ctypes.CDLL(tf._C.__file__)
lib.tfm_conv_dnnl_calls.restype = ctypes.c_long
maps = open("/proc/self/maps").read().split()
print(json.dumps({"calls": lib.tfm_conv_dnnl_calls(),
                  "centre": float(y[0, 4, 4, 0]),
                  "libs": sorted({p for p in maps if "libdnnl" in p})}))
"""
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env["PYTHONPATH"] = ROOT
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["calls"] == 1 and r["centre"] == 36.0
    # One oneDNN in the process: never Debian's 2.x beside the wheel's 3.x.
    assert len(r["libs"]) == 1, r["libs"]
