"""setup.py's build switches: TFMINI_ARCH picks -march (a portable wheel),
and a target the compiler rejects fails before any compiling, naming it."""
import os
import pathlib
import runpy
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _flags(monkeypatch, **env):
    for k in ("TFMINI_ARCH", "TFMINI_DEBUG", "TFMINI_SANITIZE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(ROOT)
    return runpy.run_path(str(ROOT / "setup.py"), run_name="setup_flags")


@pytest.mark.parametrize("arch", [None, "x86-64-v3"])
def test_arch_sets_march(monkeypatch, arch):
    env = {"TFMINI_ARCH": arch} if arch else {}
    g = _flags(monkeypatch, **env)
    march = [f for f in g["COMMON"] if f.startswith("-march=")]
    assert march == ["-march=" + (arch or "native")]


def test_rejected_arch_fails_clearly():
    env = dict(os.environ, TFMINI_ARCH="no-such-cpu")
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace",
                        "--dry-run"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0
    assert "TFMINI_ARCH='no-such-cpu'" in r.stderr
    assert "x86-64-v3" in r.stderr
