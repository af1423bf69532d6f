"""The server's strtod (tools/serving/fastnum.c), the one cJSON calls for
every number of a request body: bit for bit and end pointer for end
pointer glibc's, checked in C over edge cases and millions of generated
numbers (float32 as Python writes them, random digits and exponents,
17-19 digit numbers next to a double's midpoint); then end to end, a
body written in several number spellings predicts what Python does."""
import json
import os
import subprocess

import numpy as np
import pytest

import tfmini.rt
from test_model_server import (ROOT, Server, _env,  # noqa: F401
                               _have_libraries, exported_mlp, server_bin)


def _build(out, *sources):
    r = subprocess.run([os.environ.get("CC", "cc"), "-O2", "-std=c11",
                        "-D_GNU_SOURCE", "-Wall", *map(str, sources), "-o",
                        str(out), "-ldl", "-lm"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_fastnum_strtod_equals_glibc(tmp_path):
    exe = _build(tmp_path / "fastnum_check",
                 ROOT / "tests" / "serving" / "fastnum_check.c",
                 ROOT / "tools" / "serving" / "fastnum.c")
    r = subprocess.run([str(exe), "1500000"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mismatches 0" in r.stdout


def test_the_check_fails_on_a_wrong_rounding(tmp_path):
    """The check can fail: fastnum.c without its guard against rounding
    twice disagrees with glibc somewhere in the generated numbers."""
    src = (ROOT / "tools" / "serving" / "fastnum.c").read_text()
    guard = "(mant & 0x7ff) == 0x400"
    assert guard in src
    bad = tmp_path / "fastnum_bad.c"
    bad.write_text(src.replace(guard, "0"))
    exe = _build(tmp_path / "fastnum_bad",
                 ROOT / "tests" / "serving" / "fastnum_check.c", bad)
    r = subprocess.run([str(exe), "300000"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1 and "mismatch on" in r.stderr, r.stdout


def test_the_server_binds_cjson_to_its_strtod(server_bin):
    """The executable exports strtod, so libcjson's calls reach it."""
    r = subprocess.run(["nm", "-D", str(server_bin)], capture_output=True,
                       text=True)
    if r.returncode:
        pytest.skip("nm (binutils) is needed to read the symbol table")
    assert any(line.split()[-2:] == ["T", "strtod"]
               for line in r.stdout.splitlines()), r.stdout


@pytest.fixture(scope="module")
def server(server_bin, tmp_path_factory):
    base, model = exported_mlp(tmp_path_factory, "fastnum", 21)
    s = Server(server_bin, "mlp", base)
    s.model = model
    yield s
    s.stop()


SPELLINGS = [
    lambda v: repr(float(v)),                   # Python's shortest
    lambda v: "%.17g" % v,
    lambda v: "%.9g" % np.float32(v),
    lambda v: "%.6e" % v,
    lambda v: "%.20f" % v,                      # over 19 digits: glibc
    lambda v: "%dE-3" % round(v * 1000),
    lambda v: "%.0f" % v,                       # integers, -0
]


@pytest.mark.parametrize("spell", range(len(SPELLINGS)))
def test_number_spellings_predict_as_python(server, spell):
    rng = np.random.RandomState(spell)
    x = (rng.randn(5, 4) * 10.0 ** rng.randint(-3, 3, (5, 4))).astype(
        np.float64)
    text = "[" + ",".join("[" + ",".join(SPELLINGS[spell](v) for v in row)
                          + "]" for row in x) + "]"
    want_x = np.array(json.loads(text), np.float64).astype(np.float32)
    code, reply = server.predict(('{"instances": %s}' % text).encode())
    assert code == 200, reply
    np.testing.assert_allclose(reply["predictions"],
                               server.model(want_x).numpy(), rtol=1e-5,
                               atol=1e-6)
