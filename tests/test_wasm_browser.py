"""The C runtime in WebAssembly (make -C csrc wasm) and its JS wrapper
(examples/web/tfmini.js): the digits CNN saved from Python must give the
Python model's numbers under node (examples/web/run.mjs) and in headless
Chromium on the page examples/web/index.html, served on loopback.

The wasm build is kept under build/wasm/<hash of the runtime's sources>,
so only a change to them builds again (about a minute of CPU). Each test
skips, saying why, without node or chromium, or without emcc when no
build of these sources is cached."""
import hashlib
import html
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse

import numpy as np
import pytest

import tfmini as tf

ROOT = pathlib.Path(__file__).resolve().parent.parent
WEB = ROOT / "examples" / "web"


def _header_version():
    """TFMINI_RT_VERSION from the public header the wasm build compiles."""
    text = (ROOT / "include" / "tfmini" / "tfmini.h").read_text()
    return re.search(r'#define TFMINI_RT_VERSION "([^"]+)"', text).group(1)
# What goes into the .wasm: a change to any of it builds again.
SOURCES = ["csrc/core", "csrc/kernels/cpu", "csrc/ops", "csrc/runtime",
           "csrc/graph", "csrc/rt", "csrc/kernels/cuda/stub.c",
           "csrc/Makefile", "include/tfmini", "tools/wasm/native_off.c"]


def _sources_hash():
    h = hashlib.sha256()
    for s in SOURCES:
        p = ROOT / s
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        for f in files:
            if f.is_file():
                h.update(str(f.relative_to(ROOT)).encode() + b"\0")
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def wasm():
    """The folder holding tfmini_rt.js and tfmini_rt.wasm."""
    cache = ROOT / "build" / "wasm" / _sources_hash()
    if not (cache / "tfmini_rt.wasm").exists():
        if not shutil.which("emcc"):
            pytest.skip("emcc not found: the wasm build needs Emscripten "
                        "(Debian: apt-get install emscripten)")
        r = subprocess.run(["make", "-C", str(ROOT / "csrc"), "wasm",
                            f"-j{os.cpu_count() or 1}"],
                           capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        cache.mkdir(parents=True, exist_ok=True)
        for f in ("tfmini_rt.js", "tfmini_rt.wasm"):
            shutil.copy(ROOT / "build" / "wasm" / f, cache / f)
    return cache


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The page's model, trained briefly, saved; and test images with the
    Python model's probabilities for them."""
    sys.path.insert(0, str(WEB))
    try:
        import make_model
    finally:
        sys.path.remove(str(WEB))
    model, acc = make_model.build(epochs=3)
    assert acc > 0.8, f"the digits CNN learned too little: {acc}"
    path = tmp_path_factory.mktemp("web_model") / "digits_cnn"
    tf.saved_model.save(model, str(path))
    (_, _), (xt, _) = tf.keras.datasets.digits.load_data()
    x = xt[:4, ..., None]
    return path, x, np.asarray(model(x))


def _node(wasm, model_dir, inputs, *extra):
    if not shutil.which("node"):
        pytest.skip("node not found (Debian: apt-get install nodejs)")
    return subprocess.run(
        ["node", str(WEB / "run.mjs"), str(model_dir), "--rt",
         str(wasm / "tfmini_rt.js"), *extra], input=json.dumps(inputs),
        capture_output=True, text=True, timeout=120)


def test_node_matches_python(wasm, digits):
    path, x, want = digits
    r = _node(wasm, path, {"data": x.ravel().tolist(),
                           "shape": list(x.shape)})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["version"] == _header_version()
    [sig] = out["signatures"]
    assert sig["name"] == "serving_default"
    assert sig["inputs"] == [{"name": "inputs", "dtype": "float32",
                              "shape": [None, 8, 8, 1]}]
    assert sig["outputs"][0]["shape"] == [None, 10]
    [y] = out["outputs"]
    assert y["dtype"] == "float32" and y["shape"] == [4, 10]
    got = np.array(y["data"], np.float32).reshape(4, 10)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert (got.argmax(1) == want.argmax(1)).all()


def test_node_runs_an_mlp_and_its_traced_function(wasm, tmp_path):
    tf.random.set_seed(5)
    model = tf.keras.Sequential([
        tf.keras.layers.Input((6,)),
        tf.keras.layers.Dense(16, activation="tanh"),
        tf.keras.layers.Dense(3, activation="softmax")])
    tf.saved_model.save(model, str(tmp_path / "mlp"))
    x = np.random.default_rng(1).normal(size=(5, 6)).astype(np.float32)
    want = np.asarray(model(x))
    for fn in ("serving_default", "__call__"):
        r = _node(wasm, tmp_path / "mlp", {"data": x.ravel().tolist(),
                                           "shape": [5, 6]},
                  "--signature", fn)
        assert r.returncode == 0, r.stderr
        [y] = json.loads(r.stdout)["outputs"]
        assert y["shape"] == [5, 3]
        np.testing.assert_allclose(np.reshape(y["data"], (5, 3)), want,
                                   rtol=1e-5, atol=1e-6)


def test_node_errors_are_clear(wasm, digits, tmp_path):
    path, x, _ = digits
    # A wrong shape: the runtime's message names the input and shapes.
    r = _node(wasm, path, {"data": x[0].ravel().tolist(),
                           "shape": [1, 4, 16, 1]})
    assert r.returncode == 1
    assert "InvalidArgumentError" in r.stderr, r.stderr
    assert "'inputs'" in r.stderr and "[?,8,8,1]" in r.stderr \
        and "[1,4,16,1]" in r.stderr, r.stderr
    # Data and shape that disagree, caught by the wrapper.
    r = _node(wasm, path, {"data": [0.0] * 5, "shape": [1, 8, 8, 1]})
    assert r.returncode == 1 and "holds 64 elements" in r.stderr, r.stderr
    # An unknown signature lists the ones there are.
    r = _node(wasm, path, {"data": [0.0] * 64, "shape": [1, 8, 8, 1]},
              "--signature", "nope")
    assert r.returncode == 1 and "serving_default" in r.stderr, r.stderr
    # A damaged file is DataLossError, not a crash.
    bad = tmp_path / "bad"
    bad.mkdir()
    raw = bytearray((path / "saved_model.tfm").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (bad / "saved_model.tfm").write_bytes(bytes(raw))
    r = _node(wasm, bad, {"data": [0.0] * 64, "shape": [1, 8, 8, 1]})
    assert r.returncode == 1 and "DataLossError" in r.stderr, r.stderr


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def site(wasm, digits, tmp_path_factory):
    """examples/web as a user deploys it (the page, the wrapper, the
    runtime and the model in one folder), served on loopback."""
    path, _, _ = digits
    root = tmp_path_factory.mktemp("site")
    for f in ("index.html", "app.js", "tfmini.js"):
        shutil.copy(WEB / f, root / f)
    for f in ("tfmini_rt.js", "tfmini_rt.wasm"):
        shutil.copy(wasm / f, root / f)
    shutil.copytree(path, root / "digits_cnn")

    class Handler(_Quiet):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

    Handler.extensions_map = {**Handler.extensions_map,
                              ".wasm": "application/wasm",
                              ".js": "text/javascript",
                              ".mjs": "text/javascript"}
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _page(url, tmp_path):
    """The #result of the page at url, once it has run, as a dict."""
    chrome = _chromium()
    if not chrome:
        pytest.skip("chromium not found (Debian: apt-get install chromium)")
    # --virtual-time-budget holds the dump until the page's fetches and
    # promises have settled (virtual time runs only while it is idle).
    r = subprocess.run(
        [chrome, "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=30000", "--dump-dom", url],
        capture_output=True, text=True, timeout=180)
    m = re.search(r'<pre id="result">(.*?)</pre>', r.stdout, re.S)
    assert m and m.group(1), (f"no result in the page (rc {r.returncode})"
                              f"\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return json.loads(html.unescape(m.group(1)))


@pytest.mark.parametrize("k", [0, 3])
def test_browser_page_matches_python(site, digits, tmp_path, k):
    _, x, want = digits
    pixels = ",".join(repr(float(v)) for v in x[k].ravel())
    out = _page(f"{site}/index.html?input={urllib.parse.quote(pixels)}",
                tmp_path)
    assert "error" not in out, out
    np.testing.assert_allclose(np.array(out["probs"], np.float32), want[k],
                               rtol=1e-4, atol=1e-6)
    assert out["digit"] == int(want[k].argmax())


def test_browser_page_reports_a_missing_model(site, tmp_path):
    out = _page(f"{site}/index.html?model=nothing.tfm&input=0", tmp_path)
    assert out["error"].startswith("NotFoundError"), out
    assert "nothing.tfm" in out["error"] and "404" in out["error"], out


def test_browser_drawn_zero(site, digits, tmp_path):
    """An ellipse drawn with pointer events on the canvas: the page's
    reduction to 8x8 gives a digits-like image, the model calls it 0, and
    the numbers are the Python model's on the page's pixels."""
    path, _, _ = digits
    ring = [(112 + 45 * np.sin(2 * np.pi * k / 40),
             112 - 75 * np.cos(2 * np.pi * k / 40)) for k in range(41)]
    strokes = ",".join(f"{x:.0f},{y:.0f}" for x, y in ring)
    out = _page(f"{site}/index.html?strokes={strokes}", tmp_path)
    assert "error" not in out, out
    pixels = np.array(out["pixels"], np.float32).reshape(1, 8, 8, 1)
    assert pixels.min() >= 0 and pixels.max() <= 1 and pixels.max() > 0.5
    assert pixels[0, 3:5, 3:5].max() < 0.1, "the ring's middle is empty"
    want = np.asarray(tf.saved_model.load(str(path)).signatures[
        "serving_default"](inputs=tf.constant(pixels))["output_0"])[0]
    np.testing.assert_allclose(out["probs"], want, rtol=1e-4, atol=1e-6)
    assert out["digit"] == 0 == int(want.argmax())
