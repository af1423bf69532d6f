"""How tfmini_model_server reads predict bodies (tools/serving/jparse.c,
cJSON into a per-request arena; convert.c, nodes into tensors): malformed
JSON, numbers past a double's or an integer dtype's range, nested and
ragged lists, and wrong JSON types are each a 400 naming the problem;
int64 values within 2^53 come back exact; bodies large enough to outgrow
the arena's first block parse the same."""
import json

import numpy as np
import pytest

import tfmini as tf
from test_model_server import (Server, _have_libraries,  # noqa: F401
                               server_bin)


class Typed(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32),
                                  tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([None], tf.int64)])
    def f(self, x, i, j):
        return {"x2": x * 2.0, "i1": i + 1, "j1": j + 1}


@pytest.fixture(scope="module")
def typed_server(server_bin, tmp_path_factory):
    base = tmp_path_factory.mktemp("typed") / "models"
    tf.saved_model.save(Typed(), str(base / "1"))
    s = Server(server_bin, "typed", base)
    yield s
    s.stop()


GOOD = {"inputs": {"x": [[1.5, -2.0]], "i": [7], "j": [8]}}


def test_a_good_body_and_its_white_space(typed_server):
    code, body = typed_server.predict(GOOD)
    assert code == 200, body
    assert body["outputs"] == {"x2": [[3.0, -4.0]], "i1": [8], "j1": [9]}
    text = b" \n\t" + json.dumps(GOOD).encode() + b"\r\n  "
    assert typed_server.predict(text)[0] == 200
    # Escapes in strings are decoded (the signature's name here).
    text = json.dumps(dict(GOOD, signature_name="serving_default"))
    text = text.replace("serving_default", "\\u0073erving_default")
    assert typed_server.predict(text.encode())[0] == 200
    # A number of many digits (past any fixed buffer) reads correctly.
    text = json.dumps(GOOD).replace("1.5", "1.5" + "0" * 1500 + "1")
    code, body = typed_server.predict(text.encode())
    assert code == 200 and body["outputs"]["x2"] == [[3.0, -4.0]], body


@pytest.mark.parametrize("text, words", [
    (b"", "the body is empty"),
    (b'{"inputs": {"x": [[1, 2]], "i": [1], "j": [1]}',
     "the text ends inside a value"),
    (b'{"inputs": {"x": [[1, 2]], "i": [1], "j": [1]}} x',
     "text after the value"),
    (b'{"inputs": {"x": [[1, 2]], "i": [1], "j": [1]}}\x00',
     "text after the value"),
    (b'{"inputs": {"x": [[1, 2,]], "i": [1], "j": [1]}}', "offset: 24"),
    (b"{'inputs': 1}", "invalid value or syntax"),
    (b'{"inputs": [NaN]}', "JSON Parse error"),
    (b'{"inputs": [Infinity]}', "JSON Parse error"),
    (b"[" * 5000 + b"]" * 5000, "JSON Parse error"),
])
def test_malformed_json_is_a_400_saying_where(typed_server, text, words):
    code, body = typed_server.predict(text)
    assert code == 400 and "JSON Parse error" in body["error"] and \
        words in body["error"], body


def _with(**inputs):
    return {"inputs": dict(GOOD["inputs"], **inputs)}


def test_numbers_past_a_double_are_refused(typed_server):
    for big in (b"1e999", b"-1e999", b"1" + b"0" * 400):
        text = json.dumps(_with(x=[[0.25, 1]])).encode()
        code, reply = typed_server.predict(text.replace(b"0.25", big))
        assert code == 400 and "too big to be stored in a double" in \
            reply["error"], reply


@pytest.mark.parametrize("body, words", [
    (_with(i=[2147483648]), "whole number in [-2147483648, 2147483648)"),
    (_with(i=[-2147483649]), "for a int32 input"),
    (_with(i=[1.5]), "got 1.5"),
    (_with(j=[2 ** 53]), "whole number in [-9007199254740992, "
                         "9007199254740992)"),
    (_with(j=[10 ** 30]), "for a int64 input"),
])
def test_numbers_out_of_range_are_refused(typed_server, body, words):
    code, reply = typed_server.predict(body)
    assert code == 400 and words in reply["error"], reply


def test_integers_within_range_are_exact(typed_server):
    big = 2 ** 53 - 2
    code, body = typed_server.predict(_with(j=[big, -big - 1], i=[
        2 ** 31 - 2, -2 ** 31], x=[[0, 0], [0, 0]]))
    assert code == 200, body
    assert body["outputs"]["j1"] == [big + 1, -big]
    assert body["outputs"]["i1"] == [2 ** 31 - 1, -2 ** 31 + 1]
    # A whole number written as a real is that integer.
    code, body = typed_server.predict(_with(i=[3.0], j=[1e3]))
    assert code == 200 and body["outputs"]["i1"] == [4] and \
        body["outputs"]["j1"] == [1001], body


@pytest.mark.parametrize("x, words", [
    ([[1, 2], [3]], "unequal"),
    ([[1, 2], 3], "unequal"),
    ([[1, [2]]], "expected a number"),
    ([[1, 2], [3, 4, 5]], "unequal"),
    ([[[1, 2]]], "shape [?,2]"),
    ([1, 2], "shape [?,2]"),
    ([[1, "2"]], "got a string"),
    ([[1, None]], "got null"),
    ([[1, {"a": 1}]], "got an object"),
])
def test_nested_lists_and_wrong_types(typed_server, x, words):
    code, reply = typed_server.predict(_with(x=x, i=[1] * len(x),
                                             j=[1] * len(x)))
    assert code == 400 and words in reply["error"], reply
    assert "input \"x\"" in reply["error"] or "input 'x'" in \
        reply["error"], reply


def test_row_format_with_named_inputs(typed_server):
    rows = [{"x": [1, 2], "i": 1, "j": 2}, {"x": [3, 4], "i": 3, "j": 4}]
    code, body = typed_server.predict({"instances": rows})
    assert code == 200, body
    assert body["predictions"] == [{"x2": [2.0, 4.0], "i1": 2, "j1": 3},
                                   {"x2": [6.0, 8.0], "i1": 4, "j1": 5}]
    rows[1] = {"x": [3, 4], "i": "3", "j": 4}
    code, body = typed_server.predict({"instances": rows})
    assert code == 400 and 'input "i"' in body["error"] and \
        "a string" in body["error"], body
    rows[1] = {"x": [3, 4, 5], "i": 3, "j": 4}
    assert typed_server.predict({"instances": rows})[0] == 400


def test_a_body_past_the_arena_chunk(typed_server):
    # 64 KiB of first block holds ~800 numbers; this needs several more
    # blocks, twice in a row (the arena is reused).
    rng = np.random.RandomState(0)
    x = rng.randn(20000, 2).astype(np.float32)
    n = len(x)
    for _ in range(2):
        code, body = typed_server.predict(
            {"inputs": {"x": x.tolist(), "i": list(range(n)),
                        "j": list(range(n))}})
        assert code == 200, body
        np.testing.assert_array_equal(np.array(body["outputs"]["x2"],
                                               np.float32), x * 2)
        assert body["outputs"]["i1"][-1] == n


def test_bytes_that_are_not_utf8_in_an_echoed_name(typed_server):
    text = json.dumps(dict(GOOD, signature_name="NAME")).encode()
    code, body = typed_server.predict(text.replace(b"NAME", b"a\xffb"))
    assert code == 400 and "not found in signature def" in body["error"]
