"""tfmini_model_server keeps state from one request to the next: each
worker thread its predict state (inputs, outputs, the job: rest.c,
thread_pending), each connection its request state and body buffer
(main.c). On one worker thread every request reuses the first: many
requests of different row counts, formats, models (one with one input
and output, one with two of each) and errors in between must each give
the Python model's answer, as if each had fresh state; and many
requests on one keep-alive connection, small and large bodies in turn,
likewise."""
import http.client
import json
import random
import urllib.error
import urllib.request

import numpy as np
import pytest

import tfmini as tf
from test_model_server import Server, _mlp, server_bin  # noqa: F401


class Two(tf.Module):
    def __init__(self):
        self.w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32),
                                  tf.TensorSpec([None], tf.int32)])
    def f(self, a, k):
        return {"sum": a @ self.w, "twice": k * 2}


@pytest.fixture(scope="module")
def one_thread_server(server_bin, tmp_path_factory):  # noqa: F811
    tmp = tmp_path_factory.mktemp("reuse")
    mlp, two = _mlp(11), Two()
    tf.saved_model.save(mlp, str(tmp / "mlp" / "1"))
    tf.saved_model.save(two, str(tmp / "two" / "1"))
    config = tmp / "models.config"
    config.write_text(
        f'model_config_list {{ config {{ name: "mlp" base_path: '
        f'"{tmp / "mlp"}" }} config {{ name: "two" base_path: '
        f'"{tmp / "two"}" }} }}\n')
    s = Server(server_bin, "mlp", tmp / "mlp", "--rest_api_num_threads=1",
               config=config)
    s.mlp, s.two = mlp, two
    yield s
    s.stop()


def _post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode())
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_reused_state_gives_fresh_answers(one_thread_server):
    s = one_thread_server
    mlp_url = s.url + ":predict"
    two_url = s.url.replace("/mlp", "/two") + ":predict"
    rng = random.Random(3)
    nprng = np.random.RandomState(3)
    seen = set()
    for i in range(240):
        rows = rng.choice([1, 2, 5, 9, 33])
        kind = rng.choice(["rows", "columns", "two_rows", "two_columns",
                           "bad_shape", "bad_dtype", "bad_signature"])
        seen.add(kind)
        if kind in ("rows", "columns"):
            x = nprng.randn(rows, 4).astype(np.float32)
            body = ({"instances": x.tolist()} if kind == "rows" else
                    {"inputs": x.tolist()})
            code, got = _post(mlp_url, body)
            assert code == 200, (i, got)
            out = got["predictions" if kind == "rows" else "outputs"]
            np.testing.assert_allclose(out, s.mlp(x).numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=f"request {i}")
        elif kind.startswith("two"):
            a = nprng.randn(rows, 2).astype(np.float32)
            k = nprng.randint(-50, 50, rows).astype(np.int32)
            want = s.two.f(a, k)
            if kind == "two_rows":
                code, got = _post(two_url, {"instances": [
                    {"a": a[r].tolist(), "k": int(k[r])}
                    for r in range(rows)]})
                assert code == 200, (i, got)
                preds = got["predictions"]
                sums = [p["sum"] for p in preds]
                twice = [p["twice"] for p in preds]
            else:
                code, got = _post(two_url, {"inputs": {
                    "a": a.tolist(), "k": k.tolist()}})
                assert code == 200, (i, got)
                sums, twice = got["outputs"]["sum"], got["outputs"]["twice"]
            np.testing.assert_allclose(sums, want["sum"].numpy(), rtol=1e-5,
                                       atol=1e-5, err_msg=f"request {i}")
            assert twice == want["twice"].numpy().tolist(), i
        elif kind == "bad_shape":
            # The first input is read into a tensor before the second
            # fails: the reused state must not keep it.
            code, got = _post(two_url, {"inputs": {
                "a": [[1.0, 2.0]] * rows, "k": [[1]] * rows}})
            assert code == 400 and "k" in got["error"], (i, got)
        elif kind == "bad_dtype":
            code, got = _post(mlp_url, {"instances": [["x"] * 4] * rows})
            assert code == 400, (i, got)
        else:
            code, got = _post(mlp_url, {"signature_name": "nope",
                                        "instances": [[0.0] * 4]})
            assert code == 400 and "nope" in got["error"], (i, got)
    assert len(seen) == 7


def test_keep_alive_connection_reuses_its_request_state(one_thread_server):
    """Bodies of 1 to ~190 KB in turn on one connection: the buffer
    grows, is dropped after a body over 64 KiB, and a shorter body after
    a longer one is read to its own length, not the buffer's."""
    s = one_thread_server
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    nprng = np.random.RandomState(4)
    try:
        for i, rows in enumerate([1, 40, 3, 5000, 2, 5000, 1, 700, 1]):
            x = nprng.randn(rows, 4).astype(np.float32)
            body = json.dumps({"instances": x.tolist()})
            conn.request("POST", "/v1/models/mlp:predict", body,
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            got = json.loads(r.read())
            assert r.status == 200, (i, got)
            np.testing.assert_allclose(got["predictions"], s.mlp(x).numpy(),
                                       rtol=1e-5, atol=1e-6,
                                       err_msg=f"request {i}")
            # A bad body between good ones on the same connection.
            conn.request("POST", "/v1/models/mlp:predict", "{\"inst",
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            assert r.status == 400 and "JSON" in json.loads(r.read())[
                "error"], i
            assert not r.will_close, i
    finally:
        conn.close()
