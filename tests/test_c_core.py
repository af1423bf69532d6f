"""The C tests of tests/c (core pieces, linked without Python), built and
run by pytest so that the one test command runs them: plainly and under
AddressSanitizer + UndefinedBehaviorSanitizer (with leak checking)."""
import functools
import os
import pathlib
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent / "c"
PROGRAMS = sorted(p.stem for p in HERE.glob("test_*.c"))
MODES = ["plain", "sanitize"]


@functools.lru_cache(maxsize=None)
def _build(mode):
    """make the test binaries of one mode; (ok, log)."""
    cmd = ["make", "-C", str(HERE), f"-j{os.cpu_count() or 1}", "all",
           f"SANITIZE={int(mode == 'sanitize')}"]
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r.returncode == 0, r.stdout + r.stderr


def _run(binary, detect_leaks):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["ASAN_OPTIONS"] = (f"detect_leaks={int(detect_leaks)}:"
                           "halt_on_error=1:abort_on_error=0")
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    return subprocess.run([str(binary)], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("program", PROGRAMS)
def test_c(program, mode):
    ok, log = _build(mode)
    assert ok, f"building the C tests ({mode}) failed:\n{log[-6000:]}"
    binary = HERE / "build" / mode / program
    r = _run(binary, detect_leaks=mode == "sanitize")
    out = r.stdout + r.stderr
    if "LeakSanitizer has encountered a fatal error" in out:
        # LSan needs ptrace-like powers some sandboxes deny: still run
        # the ASan/UBSan checks, without the leak check.
        r = _run(binary, detect_leaks=False)
        out = r.stdout + r.stderr
    assert r.returncode == 0, f"{program} ({mode}) failed:\n{out[-8000:]}"
    assert " 0 failed" in out, out


def test_every_c_test_is_collected():
    assert len(PROGRAMS) >= 6, PROGRAMS
