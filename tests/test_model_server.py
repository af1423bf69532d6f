"""tfmini_model_server (tools/serving): TF Serving's REST API in C over
the C runtime. Started on a free loopback port and queried with urllib:
every endpoint, predictions against the Python model, errors as 4xx JSON,
a new version swapped in under load with no failed request, and a
bounded fuzz of request bodies. Skipped, naming the Debian packages, when
libmicrohttpd, jansson or cJSON is missing."""
import json
import os
import pathlib
import random
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import tfmini as tf
import tfmini.rt

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = "libmicrohttpd-dev libjansson-dev libcjson-dev"


def _env():
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def _have_libraries():
    src = ("#include <microhttpd.h>\n#include <jansson.h>\n"
           "#include <cjson/cJSON.h>\nint x;\n")
    r = subprocess.run([os.environ.get("CC", "cc"), "-fsyntax-only", "-x",
                        "c", "-"], input=src, text=True,
                       capture_output=True, env=_env())
    return r.returncode == 0


@pytest.fixture(scope="module")
def server_bin(tmp_path_factory):
    if not _have_libraries():
        pytest.skip(f"tfmini_model_server needs libmicrohttpd, jansson, cJSON: "
                    f"apt-get install {PACKAGES}")
    out = tmp_path_factory.mktemp("serving")
    lib = tfmini.rt.get_lib()
    tfmini.rt.get_library()
    r = subprocess.run(["make", "-C", str(ROOT / "tools" / "serving"),
                        f"BUILD={out}", f"RT_INC={tfmini.rt.get_include()}",
                        f"RT_LIB={lib}", "RT_LINK=-ltfmini_rt"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return out / "tfmini_model_server"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, name, base, *flags, config=None, env=None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1/models/{name}"
        self.log = open(base.parent / f"{name}.log", "w+")
        which = ([f"--model_config_file={config}"] if config else
                 [f"--model_name={name}", f"--model_base_path={base}"])
        self.proc = subprocess.Popen(
            [str(binary), f"--rest_api_port={self.port}", *which,
             "--rest_api_host=127.0.0.1",
             "--file_system_poll_wait_seconds=1", *flags],
            stdout=self.log, stderr=subprocess.STDOUT, env=env or _env())
        for _ in range(200):
            try:
                if self.get("")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
            assert self.proc.poll() is None, self.output()
        raise AssertionError("the server did not start: " + self.output())

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def request(self, path, body=None, method=None):
        data = body if body is None or isinstance(body, bytes) else \
            json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def get(self, path):
        return self.request(path)

    def predict(self, body, path=":predict"):
        return self.request(path, body)

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(timeout=30)
        assert rc == 0, f"the server exited with {rc}:\n{self.output()}"


def _mlp(seed):
    tf.random.set_seed(seed)
    return tf.keras.Sequential([tf.keras.layers.Input((4,)),
                                tf.keras.layers.Dense(8, activation="relu"),
                                tf.keras.layers.Dense(3)])


def exported_mlp(tmp_path_factory, tag, seed):
    """(models base dir, model): _mlp(seed) exported as version 1 under a
    fresh temp dir named tag."""
    base = tmp_path_factory.mktemp(tag) / "models"
    model = _mlp(seed)
    model.export(str(base / "1"), verbose=False)     # Keras 3's way
    return base, model


@pytest.fixture(scope="module")
def mlp_server(server_bin, tmp_path_factory):
    base, model = exported_mlp(tmp_path_factory, "mlp", 5)
    s = Server(server_bin, "mlp", base, "--max_body_bytes=200000",
               "--rest_api_timeout_in_ms=1000")
    s.model, s.base = model, base
    yield s
    s.stop()


X = np.random.RandomState(1).randn(3, 4).astype(np.float32)


def test_status_and_metadata(mlp_server):
    code, body = mlp_server.get("")
    assert code == 200
    assert body == {"model_version_status": [{
        "version": "1", "state": "AVAILABLE",
        "status": {"error_code": "OK", "error_message": ""}}]}
    assert mlp_server.get("/versions/1")[0] == 200
    code, body = mlp_server.get("/metadata")
    assert code == 200 and body["model_spec"]["version"] == "1"
    sig = body["metadata"]["signature_def"]["signature_def"][
        "serving_default"]
    x = sig["inputs"]["inputs"]
    assert x["dtype"] == "DT_FLOAT"
    assert [d["size"] for d in x["tensor_shape"]["dim"]] == ["-1", "4"]
    assert list(sig["outputs"]) == ["output_0"]


def test_predict_rows_and_columns_match_python(mlp_server):
    want = mlp_server.model(X).numpy()
    code, body = mlp_server.predict({"instances": X.tolist()})
    assert code == 200, body
    np.testing.assert_allclose(body["predictions"], want, rtol=1e-5,
                               atol=1e-6)
    code, body = mlp_server.predict({"inputs": X.tolist(),
                                     "signature_name": "serving_default"},
                                    "/versions/1:predict")
    assert code == 200, body
    np.testing.assert_allclose(body["outputs"], want, rtol=1e-5, atol=1e-6)
    code, body = mlp_server.predict({"instances": [{"inputs": r} for r in
                                                   X.tolist()]})
    assert code == 200, body
    np.testing.assert_allclose(body["predictions"], want, rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("body,path,code,words", [
    (b'{"instances": [[1, 2', ":predict", 400, "JSON Parse error"),
    ({"instances": [[1, 2, 3]]}, ":predict", 400, "shape [?,4]"),
    ({"instances": [[1, 2, 3, "x"]]}, ":predict", 400, "a string"),
    ({"instances": [[1, 2, 3, 4], [1, 2]]}, ":predict", 400, "unequal"),
    ({"instances": []}, ":predict", 400, "non-empty"),
    ({"inputs": [[1, 2, 3, 4]], "instances": [[1, 2, 3, 4]]}, ":predict",
     400, "exactly one"),
    ({"inputs": [[1, 2, 3, 4]], "signature_name": "nope"}, ":predict", 400,
     "not found in signature def"),
    ({"inputs": [[1, 2, 3, 4]]}, "/versions/9:predict", 404,
     "Specific(mlp, 9)"),
    ({"inputs": [[1, 2, 3, 4]]}, ":explain", 404, "Malformed"),
    (b"[1, 2]", ":predict", 400, "JSON object"),
])
def test_bad_requests_are_4xx_json(mlp_server, body, path, code, words):
    got, reply = mlp_server.predict(body, path)
    assert got == code and words in reply["error"], reply


def test_unknown_model_wrong_method_and_huge_body(mlp_server):
    other = mlp_server.url.replace("/mlp", "/nope")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(other, timeout=30)
    assert e.value.code == 404 and b"Latest(nope)" in e.value.read()
    assert mlp_server.get(":predict")[0] == 405
    big = {"instances": [[1.0, 2.0, 3.0, 4.0]] * 20000}
    code, reply = mlp_server.predict(big)
    assert code == 413 and "max_body_bytes" in reply["error"]


def test_slow_client_is_dropped_and_others_are_served(mlp_server):
    s = socket.create_connection(("127.0.0.1", mlp_server.port))
    s.sendall(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n")
    s.settimeout(10)
    t0 = time.time()
    assert mlp_server.predict({"inputs": X.tolist()})[0] == 200
    assert s.recv(100) == b""          # closed after the 1 s timeout
    assert time.time() - t0 < 8
    s.close()


def test_new_version_swaps_in_under_load(mlp_server, tmp_path):
    v1 = mlp_server.model(X).numpy()
    model2 = _mlp(6)
    v2 = model2(X).numpy()
    results, stop = [], threading.Event()

    def hammer():
        while not stop.is_set():
            results.append(mlp_server.predict({"inputs": X.tolist()}))

    threads = [threading.Thread(target=hammer) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    tf.saved_model.save(model2, str(tmp_path / "2"))
    os.rename(tmp_path / "2", mlp_server.base / "2")
    deadline = time.time() + 20
    while time.time() < deadline and mlp_server.get("")[1][
            "model_version_status"][0]["version"] != "2":
        time.sleep(0.1)
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join()
    assert mlp_server.get("")[1]["model_version_status"][0]["version"] == "2"
    assert all(code == 200 for code, _ in results), [
        r for r in results if r[0] != 200][:3]
    seen = set()
    for _, body in results:
        out = np.array(body["outputs"])
        if np.allclose(out, v1, rtol=1e-5, atol=1e-6):
            seen.add(1)
        else:
            np.testing.assert_allclose(out, v2, rtol=1e-5, atol=1e-6)
            seen.add(2)
    assert seen == {1, 2}, seen


def test_fuzzed_bodies_never_break_the_server(mlp_server):
    rng = random.Random(0)
    good = json.dumps({"instances": X.tolist()}).encode()
    pieces = [b"[", b"]", b"{", b"}", b'"inputs"', b'"instances"', b":",
              b",", b"1e999", b"-0", b"null", b"true", b'"x"', b"[[[[",
              b"\x00", b"\xff", b"1.5", b'"signature_name"']
    for i in range(300):
        kind = i % 3
        if kind == 0:
            body = bytearray(good)
            for _ in range(rng.randint(1, 5)):
                body[rng.randrange(len(body))] = rng.randrange(256)
        elif kind == 1:
            body = good[:rng.randrange(len(good))]
        else:
            body = b"".join(rng.choice(pieces)
                            for _ in range(rng.randint(1, 30)))
        code, reply = mlp_server.predict(bytes(body))
        assert code in (200, 400), (body, code, reply)
        assert code == 200 or "error" in reply
    assert mlp_server.predict({"inputs": X.tolist()})[0] == 200


def test_named_inputs_and_outputs(server_bin, tmp_path):
    class M(tf.Module):
        def __init__(self):
            self.w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32),
                                      tf.TensorSpec([None], tf.int32)])
        def f(self, a, k):
            return {"sum": a @ self.w, "twice": k * 2}

    m = M()
    tf.saved_model.save(m, str(tmp_path / "base" / "3"))
    s = Server(server_bin, "two", tmp_path / "base")
    try:
        a = [[1.0, 2.0], [3.0, 4.0]]
        code, body = s.predict({"instances": [{"a": a[0], "k": 1},
                                              {"a": a[1], "k": 5}]})
        assert code == 200, body
        want = m.f(np.array(a, np.float32), np.array([1, 5], np.int32))
        assert [p["twice"] for p in body["predictions"]] == [2, 10]
        np.testing.assert_allclose([p["sum"] for p in body["predictions"]],
                                   want["sum"].numpy())
        code, body = s.predict({"inputs": {"a": a, "k": [1, 5]}})
        assert code == 200 and body["outputs"]["twice"] == [2, 10], body
        code, body = s.predict({"inputs": {"a": a}})
        assert code == 400 and 'no input "k"' in body["error"]
        assert s.get("")[1]["model_version_status"][0]["version"] == "3"
    finally:
        s.stop()


def test_model_config_file_serves_several_models(server_bin, tmp_path):
    a, b = _mlp(7), _mlp(8)
    tf.saved_model.save(a, str(tmp_path / "a" / "1"))
    tf.saved_model.save(b, str(tmp_path / "b" / "4"))
    config = tmp_path / "models.config"
    config.write_text(f"""# two models
model_config_list {{
  config {{
    name: 'first'
    base_path: '{tmp_path / "a"}'
    model_platform: "tensorflow"
  }}
  config {{ name: "second" base_path: "{tmp_path / 'b'}" }}
}}
""")
    s = Server(server_bin, "first", tmp_path / "a", config=config)
    try:
        code, body = s.predict({"inputs": X.tolist()})
        assert code == 200, body
        np.testing.assert_allclose(body["outputs"], a(X).numpy(), rtol=1e-5,
                                   atol=1e-6)
        second = s.url.replace("/first", "/second")
        req = urllib.request.Request(second + ":predict", data=json.dumps(
            {"inputs": X.tolist()}).encode())
        with urllib.request.urlopen(req, timeout=30) as r:
            got = json.loads(r.read())["outputs"]
        np.testing.assert_allclose(got, b(X).numpy(), rtol=1e-5, atol=1e-6)
        with urllib.request.urlopen(second, timeout=30) as r:
            assert json.loads(r.read())["model_version_status"][0][
                "version"] == "4"
    finally:
        s.stop()


@pytest.mark.parametrize("text, words", [
    ("model_config_list { }", "no config"),
    ("model_config_list { config { name: 'x' base_path: '/nonexistent' } }",
     "no numbered version folder"),
    ("model_config_list { config { name: x base_path: '/a' } }",
     "quoted string"),
])
def test_bad_model_config_file_is_a_clear_error(server_bin, tmp_path, text,
                                                words):
    config = tmp_path / "bad.config"
    config.write_text(text)
    r = subprocess.run([str(server_bin), "--rest_api_port=1",
                        f"--model_config_file={config}"],
                       capture_output=True, text=True, timeout=30,
                       env=_env())
    assert r.returncode in (1, 2) and words in r.stderr, r.stderr


def build_asan_server(out):
    """The server and runtime under ASan + UBSan, linked with tests/c's
    sanitized core; its path, and the environment to run it in (the
    leak check on)."""
    tests_c = ROOT / "tests" / "c"
    r = subprocess.run(["make", "-C", str(tests_c), f"-j{os.cpu_count()}",
                        "build/sanitize/libtfmini.a", "SANITIZE=1"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    exe = out / "server_asan"
    srcs = sorted(str(p) for p in (ROOT / "tools" / "serving").glob("*.c"))
    srcs += sorted(str(p) for p in (ROOT / "csrc" / "rt").glob("*.c"))
    r = subprocess.run(
        ["gcc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-g",
         "-fno-omit-frame-pointer", "-fopenmp",
         "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
         "-I" + str(ROOT / "csrc"), "-I" + str(ROOT / "include"), *srcs,
         str(tests_c / "build" / "sanitize" / "libtfmini.a"), "-o", str(exe),
         "-lstdc++", "-lm", "-lpthread", "-lmicrohttpd", "-ljansson",
         "-lcjson"],
        capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr[-3000:]
    env = _env()
    env["ASAN_OPTIONS"] = "detect_leaks=1:halt_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    return exe, env


def assert_sanitizers_quiet(out):
    if "LeakSanitizer has encountered a fatal error" not in out:
        assert "ERROR" not in out and "runtime error" not in out, out[-4000:]


def test_server_under_asan_has_no_leak_or_error(server_bin, tmp_path):
    """Bad requests, a swap and a clean exit under ASan + UBSan with the
    leak check, linked with tests/c's sanitized core."""
    exe, env = build_asan_server(tmp_path)
    base = tmp_path / "models"
    tf.saved_model.save(_mlp(9), str(base / "1"))
    s = Server(exe, "m", base, "--max_body_bytes=100000", env=env)
    try:
        rng = random.Random(1)
        good = json.dumps({"instances": X.tolist()}).encode()
        for i in range(60):
            body = bytearray(good)
            body[rng.randrange(len(body))] = rng.randrange(256)
            assert s.predict(bytes(body))[0] in (200, 400)
        assert s.predict({"inputs": {"inputs": X.tolist()},
                          "signature_name": "x"})[0] == 400
        assert s.predict(b"[" + b"1," * 60000 + b"1]")[0] == 413
        assert s.get("/metadata")[0] == 200
        tf.saved_model.save(_mlp(10), str(tmp_path / "2"))
        os.rename(tmp_path / "2", base / "2")
        for _ in range(100):
            if s.get("")[1]["model_version_status"][0]["version"] == "2":
                break
            time.sleep(0.1)
        assert s.predict({"inputs": X.tolist()})[0] == 200
    finally:
        s.stop()
    assert_sanitizers_quiet(s.output())
