"""The device run made to count (issue 21), checked without a GPU:
tools/gpu_check.sh's files and early exits, and CUDA glue built into
host programs with the CUDA calls faked (the pattern of
test_cuda_glue_host.py)."""
import os
import re
import subprocess

import pytest

from cuda_host_util import ROOT, cuda_include, nvcc

GPU_CHECK = os.path.join(ROOT, "tools", "gpu_check.sh")


def _read(path):
    with open(path) as f:
        return f.read()


def _fake_bin(tmp_path, **scripts):
    """A folder of executable shell scripts, named by the keywords."""
    d = tmp_path / "bin"
    d.mkdir()
    for name, body in scripts.items():
        (d / name).write_text("#!/bin/bash\n" + body)
        (d / name).chmod(0o755)
    return d


FAKE_SMI = "echo 'GPU 0: Fake GPU (UUID: GPU-0)'\n"


def test_gpu_check_writes_at_most_eight_files():
    """A device run brings back 8 files of $OUT at most: more, and which
    ones come back (summary.txt among them?) is not ours to choose."""
    src = _read(GPU_CHECK)
    names = set(re.findall(r'\$OUT/([\w.-]+)', src))
    assert names and len(names) <= 8, sorted(names)
    assert "summary.txt" in src and "$SUMMARY" in src


def test_gpu_check_asks_the_cuda_runtime_before_building(tmp_path):
    """With a GPU listed by nvidia-smi but a CUDA runtime that finds none
    (here: no driver at all; on a device, a toolkit newer than its
    driver), the script stops before the build, naming CUDA's reason,
    instead of after minutes of compiling."""
    bindir = _fake_bin(tmp_path, **{"nvidia-smi": FAKE_SMI})
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), EIGEN3_INCLUDE_DIR=str(tmp_path),
               PATH=f"{bindir}:{os.environ.get('PATH', '')}")
    r = subprocess.run(["bash", GPU_CHECK], env=env, capture_output=True,
                       text=True, timeout=120)
    summary = (out / "summary.txt").read_text()
    assert not (out / "build.log").exists(), summary
    if nvcc() and cuda_include():
        assert r.returncode == 5, r.stdout + r.stderr
        assert "cudaGetDeviceCount" in summary, summary
        assert "sees no GPU" in r.stdout
    else:
        # No toolkit: setup.py's own refusal, before the build too.
        assert r.returncode == 3, r.stdout + r.stderr
        assert "setup.py stops" in summary, summary
    assert len(os.listdir(out)) <= 8


def test_gpu_check_reruns_each_file_after_a_crash(tmp_path):
    """A segfault (or a sticky CUDA error) in the one pytest process of
    tests/gpu would cost every file after it: the files then run again,
    each in a process of its own, and the run counts their results."""
    smi = FAKE_SMI
    # python3: the dir run dies of SIGSEGV; a file run passes; the
    # probes, the build and the benchmarks succeed at once.
    py = ('case " $* " in\n'
          '*" tests/gpu "*"not slow"*) echo "Fatal Python error: '
          'Segmentation fault"; exit 139;;\n'
          '*" -m pytest "*) echo "3 passed in 0.01s"; exit 0;;\n'
          'esac\nexit 0\n')
    bindir = _fake_bin(tmp_path, **{"nvidia-smi": smi, "python3": py})
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), EIGEN3_INCLUDE_DIR=str(tmp_path),
               PATH=f"{bindir}:{os.environ.get('PATH', '')}")
    r = subprocess.run(["bash", GPU_CHECK], env=env, capture_output=True,
                       text=True, timeout=120)
    summary = (out / "summary.txt").read_text()
    assert "each file again" in summary, summary
    files = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "gpu"))
                   if f.startswith("test_gpu_") and f.endswith(".py")
                   and f not in ("test_gpu_conv.py", "test_gpu_fused.py"))
    for f in files:
        assert f"tests/gpu/{f} rc=0: 3 passed" in summary, (f, summary)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(os.listdir(out)) <= 8, os.listdir(out)


def test_gpu_check_counts_a_failure_seen_only_in_the_rerun(tmp_path):
    """The per-file rerun's failures are the run's result."""
    py = ('case " $* " in\n'
          '*" tests/gpu "*"not slow"*) echo "an illegal memory access '
          'was encountered"; exit 1;;\n'
          '*"test_gpu_index.py"*) echo "1 failed in 0.01s"; exit 1;;\n'
          '*" -m pytest "*) echo "3 passed in 0.01s"; exit 0;;\n'
          'esac\nexit 0\n')
    bindir = _fake_bin(tmp_path, **{"nvidia-smi": FAKE_SMI, "python3": py})
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), EIGEN3_INCLUDE_DIR=str(tmp_path),
               PATH=f"{bindir}:{os.environ.get('PATH', '')}")
    r = subprocess.run(["bash", GPU_CHECK], env=env, capture_output=True,
                       text=True, timeout=120)
    summary = (out / "summary.txt").read_text()
    assert "tests/gpu/test_gpu_index.py rc=1: 1 failed" in summary, summary
    assert r.returncode == 1, r.stdout + r.stderr
