"""tests/test_threads.py once more, against a ThreadSanitizer build of
the extension made in a temporary copy of the tree (tests/tsan.sh): any
data race that TSan sees in tfmini's C code fails this test. Slow: the
build alone takes minutes."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _have_tsan():
    gcc = shutil.which("gcc")
    if not gcc:
        return False
    lib = subprocess.run([gcc, "-print-file-name=libtsan.so"],
                         capture_output=True, text=True).stdout.strip()
    return os.path.isabs(lib) and os.path.exists(lib)


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("TFMINI_UNDER_SANITIZER")),
                    reason="already running under a sanitizer")
@pytest.mark.skipif(not _have_tsan(), reason="gcc has no libtsan.so")
def test_threaded_tests_under_thread_sanitizer():
    env = dict(os.environ, PYTHON=sys.executable)
    env.pop("LD_PRELOAD", None)
    r = subprocess.run(["bash", str(ROOT / "tests" / "tsan.sh"),
                        "tests/test_threads.py"],
                       cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=2400)
    out = r.stdout + r.stderr
    assert "ThreadSanitizer report" not in out, out[-12000:]
    assert r.returncode == 0, out[-12000:]
    assert " passed" in out and " failed" not in out, out[-4000:]
