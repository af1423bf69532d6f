"""What a client sees of a tfmini_model_server connection, kept as it was
while the server's per-request costs were cut (main.c: libmicrohttpd's
per-connection pool is 16 KiB instead of 32): on one keep-alive socket,
many predicts in a row, with and without batching, each come back with
status, Content-Type and Content-Length, the body the Python model
gives, and the socket still open; errors in between keep it open too;
request headers of 12 KiB are still served, and headers too large for
the pool get a 431 (or a closed socket), not a crash or a hang."""
import http.client
import json

import numpy as np
import pytest

from test_model_server import (Server, exported_mlp,  # noqa: F401
                               server_bin)


@pytest.fixture(scope="module", params=["plain", "batching"])
def server(request, server_bin, tmp_path_factory):  # noqa: F811
    base, model = exported_mlp(tmp_path_factory, "conn", 31)
    flags = ["--enable_batching", "--num_batch_threads=1"] \
        if request.param == "batching" else []
    s = Server(server_bin, "mlp", base, "--rest_api_num_threads=1", *flags)
    s.model = model
    yield s
    s.stop()


def _conn(server):
    return http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)


def test_keep_alive_replies_are_whole_and_the_socket_stays(server):
    rng = np.random.RandomState(0)
    c = _conn(server)
    c.connect()
    sock = c.sock
    for i in range(200):
        rows = 1 + i % 5
        x = rng.randn(rows, 4).astype(np.float32)
        if i % 17 == 3:             # a bad body between good ones
            c.request("POST", "/v1/models/mlp:predict", b'{"instances": [')
            r = c.getresponse()
            body = r.read()
            assert r.status == 400 and b"JSON Parse error" in body
            assert r.getheader("Content-Type") == "application/json"
            continue
        c.request("POST", "/v1/models/mlp:predict",
                  json.dumps({"instances": x.tolist()}).encode(),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        assert r.status == 200, body
        assert r.getheader("Content-Type") == "application/json"
        assert int(r.getheader("Content-Length")) == len(body)
        assert r.getheader("Connection", "").lower() != "close"
        np.testing.assert_allclose(json.loads(body)["predictions"],
                                   server.model(x).numpy(), rtol=1e-5,
                                   atol=1e-6)
        assert c.sock is sock       # no reconnect: kept alive
    c.close()


def test_large_headers_fit_and_larger_ones_get_431(server):
    body = json.dumps({"instances": [[0.5, 1.0, -1.0, 2.0]]}).encode()
    c = _conn(server)
    c.request("POST", "/v1/models/mlp:predict", body,
              {"X-Pad": "a" * 12000})
    r = c.getresponse()
    assert r.status == 200, r.read()
    r.read()
    c.close()
    # The server answers 431 and closes as soon as the pool is full:
    # the client may still be sending (a broken pipe or a reset).
    c = _conn(server)
    try:
        c.request("POST", "/v1/models/mlp:predict", body,
                  {"X-Pad": "a" * 40000})
        r = c.getresponse()
        assert r.status == 431
        r.read()
    except ConnectionError:
        pass
    c.close()
    # and the server goes on
    c = _conn(server)
    c.request("GET", "/v1/models/mlp")
    r = c.getresponse()
    assert r.status == 200 and b"AVAILABLE" in r.read()
    c.close()
