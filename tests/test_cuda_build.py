"""The CUDA backend's build and its behaviour without a GPU (issue 21):
setup.py finds the toolkit or builds the stub, TFMINI_CUDA forces either
way, and without a GPU tf.device('/GPU:0') soft-places on the CPU as TF
does. tests/gpu/ holds what needs a GPU."""
import os
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

ROOT = pathlib.Path(__file__).resolve().parent.parent
CPU_NAME = "/job:localhost/replica:0/task:0/device:CPU:0"


def _flags(monkeypatch, **env):
    for k in ("TFMINI_CUDA", "CUDA_HOME", "TFMINI_ARCH", "TFMINI_DEBUG",
              "TFMINI_SANITIZE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(ROOT)
    return runpy.run_path(str(ROOT / "setup.py"), run_name="setup_flags")


def _toolkit():
    g = runpy.run_path(str(ROOT / "setup.py"), run_name="setup_flags")
    return g["find_cuda"]()


def test_cuda_off_builds_the_stub(monkeypatch):
    g = _flags(monkeypatch, TFMINI_CUDA="0")
    assert g["CUDA_HOME"] is None
    srcs = g["sources"]()
    assert "csrc/kernels/cuda/stub.c" in srcs
    assert not [s for s in srcs if s.startswith("csrc/kernels/cuda/")
                and s != "csrc/kernels/cuda/stub.c"]
    assert g["cu_sources"]() == []
    # (ICU's -licudata is not CUDA: look for CUDA's libraries and paths)
    assert not any(f.startswith(("-lcu", "-lnv")) or "/cuda" in f
                   for f in g["LINK"] + g["CUDA_LINK"])
    assert g["CUDA_DEFINES"] == []


def test_cuda_on_compiles_every_cu_for_sm80_sm90(monkeypatch):
    if _toolkit() is None:
        pytest.skip("no CUDA toolkit on this machine")
    g = _flags(monkeypatch, TFMINI_CUDA="1")
    assert g["CUDA_HOME"]
    srcs = g["sources"]()
    assert "csrc/kernels/cuda/stub.c" not in srcs
    assert "csrc/kernels/cuda/kernels.c" in srcs
    cus = g["cu_sources"]()
    assert "csrc/kernels/cuda/ew.cu" in cus
    assert "csrc/kernels/cuda/reduce.cu" in cus
    flags = " ".join(g["NVCC_FLAGS"])
    for arch in ("arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90",
                 "arch=compute_90,code=compute_90"):
        assert arch in flags
    link = g["CUDA_LINK"]
    for lib in ("-lcudart", "-lcublas", "-lcublasLt"):
        assert lib in link
    assert any(f.startswith("-Wl,-rpath,") for f in link)
    assert g["CUDA_DEFINES"] == ["-DTFMINI_WITH_CUDA"]


def test_cu_objects_newer_than_their_sources_are_not_recompiled(
        monkeypatch, tmp_path):
    """CI compiles on every run: nvcc runs only for a .cu whose object is
    older than it or than a header it reads."""
    if _toolkit() is None:
        pytest.skip("no CUDA toolkit on this machine")
    g = _flags(monkeypatch, TFMINI_CUDA="1")
    cmd = g["BuildExt"].__new__(g["BuildExt"])
    cmd.build_temp, cmd.force, cmd.parallel = str(tmp_path), False, 1
    srcs = g["cu_sources"]()
    for src in srcs:
        obj = tmp_path / (src + ".o")
        obj.parent.mkdir(parents=True, exist_ok=True)
        obj.write_bytes(b"")
    ran = []

    def fake_run(c, **kw):
        ran.append(c)
        return subprocess.CompletedProcess(c, 0, "", "")
    monkeypatch.setattr(subprocess, "run", fake_run)
    objs = cmd.compile_cuda()
    assert [pathlib.Path(o) for o in objs] == [tmp_path / (s + ".o")
                                               for s in srcs]
    assert ran == []
    stale = tmp_path / (srcs[0] + ".o")
    os.utime(stale, (0, 0))
    cmd.compile_cuda()
    assert len(ran) == 1 and ran[0][-3] == srcs[0]
    assert "arch=compute_90,code=sm_90" in ran[0]
    cmd.force = True
    ran.clear()
    cmd.compile_cuda()
    assert len(ran) == len(srcs)


def test_cuda_required_without_a_toolkit_fails_clearly(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TFMINI_CUDA"}
    env.update(TFMINI_CUDA="1", CUDA_HOME=str(tmp_path), PATH="/usr/bin:/bin")
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace",
                        "--dry-run"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0
    assert "TFMINI_CUDA=1 but no CUDA toolkit was found" in r.stderr
    assert str(tmp_path) in r.stderr


def test_bad_cuda_switch_fails_clearly():
    env = dict(os.environ, TFMINI_CUDA="yes")
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace",
                        "--dry-run"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0
    assert "TFMINI_CUDA='yes'" in r.stderr


def test_extension_has_cuda_when_the_toolkit_is_here():
    """The build here compiled the .cu sources (the toolkit is on this
    machine unless the build was told TFMINI_CUDA=0)."""
    if os.environ.get("TFMINI_CUDA") == "0" or _toolkit() is None:
        assert isinstance(_C.cuda_built(), bool)
    else:
        assert _C.cuda_built() is True


# ---- no GPU: listing empty, /GPU:0 soft-places on the CPU ----

no_gpu = pytest.mark.skipif(tf.config._gpu_count() > 0,
                            reason="a GPU is present (tests/gpu covers it)")


@no_gpu
def test_no_gpu_listed():
    assert tf.config.list_physical_devices("GPU") == []
    assert tf.config.list_logical_devices("GPU") == []
    assert tf.config.list_physical_devices("CPU") == [
        tf.config.PhysicalDevice("/physical_device:CPU:0", "CPU")]
    assert tf.config.list_logical_devices() == [
        tf.config.LogicalDevice("/device:CPU:0", "CPU")]
    assert tf.config.experimental.list_physical_devices("GPU") == []
    assert _C.device_find("GPU", 0) == -1


@no_gpu
def test_gpu_memory_calls_name_the_missing_gpu():
    with pytest.raises(ValueError, match="GPU:0"):
        tf.config.experimental.get_memory_info("GPU:0")
    with pytest.raises(ValueError, match="only supported for GPU"):
        tf.config.experimental.get_memory_info("CPU:0")
    cpu = tf.config.list_physical_devices("CPU")[0]
    with pytest.raises(ValueError, match="non-GPU"):    # TF's text
        tf.config.experimental.set_memory_growth(cpu, True)


@no_gpu
def test_gpu_scope_soft_places_on_cpu(capfd):
    x = tf.constant([1.0, 4.0, 9.0])
    tf.debugging.set_log_device_placement(True)
    try:
        with tf.device("/GPU:0"):
            y = tf.sqrt(x)
    finally:
        tf.debugging.set_log_device_placement(False)
    assert y.device == CPU_NAME
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])
    err = capfd.readouterr().err
    assert "Executing op Sqrt in device " + CPU_NAME in err


@no_gpu
def test_gpu_scope_without_soft_placement_is_an_error():
    tf.config.set_soft_device_placement(False)
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="GPU:0"):
            with tf.device("/GPU:0"):
                pass
    finally:
        tf.config.set_soft_device_placement(True)


def test_tf32_switch_round_trips():
    old = tf.config.experimental.tensor_float_32_execution_enabled()
    try:
        tf.config.experimental.enable_tensor_float_32_execution(False)
        assert not tf.config.experimental.tensor_float_32_execution_enabled()
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(old)


def test_default_device_refuses_an_unknown_index():
    with pytest.raises(ValueError, match="no device with index 9"):
        _C.set_default_device(9)
    old = _C.set_default_device(-1)
    assert _C.set_default_device(old) == -1
