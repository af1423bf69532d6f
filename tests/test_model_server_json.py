"""The server's reply writer (tools/serving/jsonw.c): floats as TF Serving
prints them (six significant digits when they read back exactly, else
nine; ".0" after a whole number; NaN, Infinity, -Infinity bare), checked
in C against the same rule done with printf/strtof over millions of bit
patterns, in Python against Python's own formatting, and end to end
through the server: non-finite outputs, a large output read back
bit-exact, and the request arena under error replies."""
import json
import math
import os
import subprocess
import urllib.request

import numpy as np
import pytest

import tfmini as tf
import tfmini.rt
from test_model_server import (ROOT, Server, _env,  # noqa: F401
                               _have_libraries, server_bin)


@pytest.fixture(scope="module")
def checker(tmp_path_factory):
    if not _have_libraries():
        pytest.skip("the server needs libmicrohttpd, jansson and cJSON: "
                    "apt-get install libmicrohttpd-dev libjansson-dev "
                    "libcjson-dev")
    out = tmp_path_factory.mktemp("jsonw") / "jsonw_check"
    lib = tfmini.rt.get_lib()
    tfmini.rt.get_library()
    r = subprocess.run(
        [os.environ.get("CC", "cc"), "-O2", f"-I{tfmini.rt.get_include()}",
         str(ROOT / "tests" / "serving" / "jsonw_check.c"), "-o", str(out),
         f"-L{lib}", "-ltfmini_rt", f"-Wl,-rpath,{lib}",
         "-lpthread", "-lm"], capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def tf_serving_text(v):
    """TF Serving's WriteDecimal for a float32, in Python."""
    v = np.float32(v)
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "-Infinity" if v < 0 else "Infinity"
    s = "%.6g" % float(v)
    if np.float32(float(s)) != v:
        s = "%.9g" % float(v)
    if "." not in s and "e" not in s:
        s += ".0"
    return s


def fmt(checker, values):
    bits = np.asarray(values, np.float32).view(np.uint32)
    r = subprocess.run([str(checker), "list"], capture_output=True,
                       text=True, input="".join(f"{b:08x}\n" for b in bits),
                       env=_env())
    assert r.returncode == 0, r.stderr
    return r.stdout.split("\n")[:-1]


def test_fast_writer_equals_printf_rule_on_random_bits(checker):
    r = subprocess.run([str(checker), "rand", "200000", "7"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0 and "mismatches 0" in r.stdout, r.stdout


def test_known_texts(checker):
    cases = [(0.1, "0.1"), (1.0, "1.0"), (-2.0, "-2.0"), (0.0, "0.0"),
             (-0.0, "-0.0"), (1e6, "1e+06"), (123456.0, "123456.0"),
             (1234567.0, "1234567.0"), (1e-5, "1e-05"), (0.3, "0.3"),
             (1 / 3, "0.333333343"), (3.4028234663852886e38,
                                      "3.40282347e+38"),
             (2.5e-3, "0.0025"), (float("nan"), "NaN"),
             (float("inf"), "Infinity"), (float("-inf"), "-Infinity"),
             # the smallest subnormal: six digits read back to it
             (1e-45, "1.4013e-45"), (16777216.0, "16777216.0")]
    assert fmt(checker, [v for v, _ in cases]) == [t for _, t in cases]


def test_texts_read_back_exactly_and_match_python(checker):
    rng = np.random.RandomState(3)
    v = np.concatenate([(rng.randn(3000) * 10.0 **
                         rng.randint(-12, 12, 3000)).astype(np.float32),
                        rng.randint(0, 2**32, 3000, dtype=np.uint64)
                        .astype(np.uint32).view(np.float32)])
    v = v[np.isfinite(v)]
    texts = fmt(checker, v)
    assert texts == [tf_serving_text(x) for x in v]
    np.testing.assert_array_equal(
        np.array([float(t) for t in texts], np.float32).view(np.uint32),
        v.view(np.uint32))


class Special(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(self, x):
        return {"log": tf.math.log(x), "same": x * 1.0}


@pytest.fixture(scope="module")
def special_server(server_bin, tmp_path_factory):
    base = tmp_path_factory.mktemp("special") / "models"
    tf.saved_model.save(Special(), str(base / "1"))
    s = Server(server_bin, "special", base)
    yield s
    s.stop()


def raw_predict(s, body):
    req = urllib.request.Request(s.url + ":predict",
                                 data=json.dumps(body).encode())
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def test_non_finite_outputs_as_tf_serving(special_server):
    text = raw_predict(special_server, {"inputs": {"x": [0.0, -1.0, 1.0]}})
    assert '"log":[-Infinity,NaN,0.0]' in text, text
    out = json.loads(text)["outputs"]       # Python's json reads them
    assert out["same"] == [0.0, -1.0, 1.0]
    assert math.isinf(out["log"][0]) and math.isnan(out["log"][1])
    text = raw_predict(special_server, {"instances": [{"x": 1e30}]})
    assert text.startswith('{"predictions":[{"log":69.0775') and \
        text.endswith(',"same":1e+30}]}'), text


def test_large_output_reads_back_bit_exact(special_server):
    rng = np.random.RandomState(0)
    x = (rng.randn(200000) * 10.0 ** rng.randint(-8, 8, 200000)) \
        .astype(np.float32)
    text = raw_predict(special_server, {"inputs": {"x": x.tolist()}})
    same = np.array(json.loads(text)["outputs"]["same"], np.float32)
    np.testing.assert_array_equal(same.view(np.uint32), x.view(np.uint32))
    # The reply buffer is per thread and reused: a small reply after the
    # large one holds only its own values.
    text = raw_predict(special_server, {"instances": [{"x": 2.0}]})
    assert text == '{"predictions":[{"log":0.693147182,"same":2.0}]}', text


def test_error_replies_made_while_the_arena_is_on(special_server):
    # Errors raised while the request tree is read are made outside the
    # per-request arena: each reply is intact after later requests reuse
    # it.
    for body, words in [({"inputs": {"y": [1.0]}}, 'no input "x"'),
                        ({"inputs": {"x": ["a"]}}, "expected a number"),
                        ({"instances": [{"x": 1.0}, {}]}, "has no input")]:
        code, reply = special_server.predict(body)
        assert code == 400 and words in reply["error"], reply
        text = raw_predict(special_server, {"inputs": {"x": [4.0]}})
        assert json.loads(text)["outputs"]["same"] == [4.0]
