"""A fast part of this suite once more, against an ASan + UBSan build of
the extension made in a temporary copy of the tree (tests/sanitize.sh):
any out-of-bounds access, use after free or undefined behaviour in the C
code those tests reach fails this test."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.skipif(bool(os.environ.get("TFMINI_UNDER_SANITIZER")),
                    reason="already running under the sanitizers")
def test_fast_suite_under_asan_and_ubsan():
    env = dict(os.environ, PYTHON=sys.executable)
    env.pop("LD_PRELOAD", None)
    r = subprocess.run(["bash", str(ROOT / "tests" / "sanitize.sh")],
                       cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=1500)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-12000:]
    assert " passed" in out and " failed" not in out, out[-4000:]
