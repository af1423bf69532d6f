"""AutoGraph converts lambdas like TF: found in their source file by line
and signature, their one expression converted (`a if c else b` on a
tensor becomes a tf.cond, `and`/`or`/`not` on tensors graph ops), and
silently. Only a lambda that cannot be told apart from another on its
line (or whose source cannot be read) runs as-is, with one warning."""
import linecache
import logging
import traceback

import numpy as np
import pytest

import tfmini as tf
import tfmini.autograph  # noqa: F401  (tf.autograph, the tf.function hook)
from tfmini.autograph import api

ag = tf.autograph
_LOGGER = "tfmini"


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    # A converter bug must fail the test, not fall back with a warning.
    monkeypatch.setenv("TFMINI_AUTOGRAPH_STRICT", "1")


def _T(v):
    return tf.constant(v)


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if "could not transform" in r.getMessage()]


def _check_silent_and_converted(caplog, f):
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        conv = api.convert(f)
    assert not _warnings(caplog)
    assert conv is not f
    return conv


# ---- converted, silently -------------------------------------------------

def test_traced_lambda_prints_no_warning(caplog):
    f = tf.function(lambda x: x + 1)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert float(f(_T(1.0))) == 2.0
        assert float(f(_T(2.0))) == 3.0
    assert not _warnings(caplog)
    assert not caplog.records


def test_converted_lambda_keeps_name_and_is_cached(caplog):
    f = lambda x: x * 3  # noqa: E731
    conv = _check_silent_and_converted(caplog, f)
    assert conv.__name__ == "<lambda>"
    assert conv.__code__.co_name == "<lambda>"
    assert conv.__qualname__ == f.__qualname__
    assert api.convert(f) is conv               # converted once
    assert api.convert(conv) is conv            # never converted twice
    assert float(conv(_T(2.0))) == 6.0


def test_ternary_on_tensor_becomes_cond(caplog):
    fn = lambda x: x * 2 if x > 0 else -x  # noqa: E731
    assert "ag__.if_exp(" in ag.to_code(fn)
    f = tf.function(fn)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        for v in (3.0, -3.0, 0.0, 0.5, -0.25):
            np.testing.assert_allclose(f(_T(v)).numpy(), fn(_T(v)).numpy())
    # One trace serves both signs: the condition is in the graph.
    assert f.experimental_get_tracing_count() == 1
    assert not _warnings(caplog)


def test_ternary_on_python_value_stays_python():
    f = tf.function(lambda x, flag: x + 1 if flag else x - 1)
    assert float(f(_T(1.0), True)) == 2.0
    assert float(f(_T(1.0), False)) == 0.0


@pytest.mark.parametrize("fn,cases", [
    (lambda x: x > 0 and x < 5, [1.0, 3.0, 5.0, -1.0, 7.0]),
    (lambda x: x < 0 or x > 5, [1.0, -3.0, 5.0, 6.0]),
    (lambda x: not x > 0, [1.0, -1.0, 0.0]),
    (lambda x, y: (x > 0 and y > 0) or not x > -5, [(1.0, 1.0), (1.0, -1.0),
                                                     (-9.0, 1.0)]),
])
def test_boolean_ops_on_tensors(caplog, fn, cases):
    f = tf.function(fn)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        for c in cases:
            args = [_T(v) for v in (c if isinstance(c, tuple) else (c,))]
            expected = fn(*args)
            got = f(*args)
            assert got.dtype == tf.bool
            assert bool(got) == bool(expected), c
    assert f.experimental_get_tracing_count() == 1
    assert not _warnings(caplog)


def test_lambda_with_defaults(caplog):
    fn = lambda x, y=2: x * y  # noqa: E731
    f = tf.function(fn)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert float(f(_T(3.0))) == 6.0
        assert float(f(_T(3.0), 4)) == 12.0
        assert float(f(_T(3.0), y=_T(5.0))) == 15.0
    assert not _warnings(caplog)
    conv = api.convert(fn)
    assert conv is not fn and conv.__defaults__ == (2,)


def test_lambda_full_signatures(caplog):
    k = 10.0
    fns = [
        (lambda a, /, b, *args, c, d=1.0, **kw:
         a + b + sum(args) + c + d + sum(kw.values()),
         ((_T(1.0), 2.0, 3.0), dict(c=4.0, e=5.0)), 16.0),
        (lambda *args: args[0] - args[1], ((_T(5.0), 2.0), {}), 3.0),
        (lambda **kw: kw["a"] * k, ((), dict(a=_T(2.0))), 20.0),
        (lambda *, a=2.0, b: a - b, ((), dict(b=_T(1.0))), 1.0),
    ]
    for fn, (args, kwargs), want in fns:
        conv = _check_silent_and_converted(caplog, fn)
        assert float(conv(*args, **kwargs)) == want
        assert float(tf.function(fn)(*args, **kwargs)) == want


def test_lambda_in_multiline_call(caplog):
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        f = tf.function(
            lambda x: x + 1 if x > 0 else x - 1)
        g = tf.function(lambda x:
                        x * 2
                        if x > 0
                        else -x)
        assert float(f(_T(1.0))) == 2.0 and float(f(_T(-1.0))) == -2.0
        assert float(g(_T(2.0))) == 4.0 and float(g(_T(-2.0))) == 2.0
    assert f.experimental_get_tracing_count() == 1
    assert g.experimental_get_tracing_count() == 1
    assert not _warnings(caplog)


def test_lambdas_on_one_line_with_different_signatures(caplog):
    a, b = lambda x: x + 1 if x > 0 else x, lambda y: y * 2 if y > 0 else y
    for fn, want in ((a, 3.0), (b, 4.0)):
        conv = _check_silent_and_converted(caplog, fn)
        assert float(conv(_T(2.0))) == want
    f = tf.function(b)
    assert float(f(_T(-1.0))) == -1.0 and float(f(_T(3.0))) == 6.0


def test_lambda_closure_shares_cells(caplog):
    scale = [2.0]
    k = 3.0
    fn = lambda x: x * k * scale[0] if x > 0 else x  # noqa: E731
    conv = _check_silent_and_converted(caplog, fn)
    assert float(conv(_T(1.0))) == 6.0
    k = 5.0                                      # noqa: F841 (read by fn)
    assert float(conv(_T(1.0))) == 10.0


def test_nested_lambda(caplog):
    make = lambda k: lambda x: x * k if x > 0 else -x  # noqa: E731
    conv = _check_silent_and_converted(caplog, make)
    inner = conv(3.0)
    assert float(inner(_T(2.0))) == 6.0
    assert float(tf.function(make(2.0))(_T(-4.0))) == 4.0
    assert not _warnings(caplog)


def _make_scaler(k):
    return lambda v: v * k if v > 0 else -v


_module_lambda = lambda v: v + 1 if v > 0 else v - 1  # noqa: E731


def test_lambdas_called_from_tf_function_are_converted(caplog):
    made = _make_scaler(2.0)             # made by unconverted code

    def body(x):
        local = lambda v: v * 3 if v > 0 else v  # noqa: E731
        return made(x) + _module_lambda(x) + local(x)

    f = tf.function(body)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        for v in (2.0, -2.0):
            np.testing.assert_allclose(f(_T(v)).numpy(),
                                       body(_T(v)).numpy())
    assert f.experimental_get_tracing_count() == 1
    assert not _warnings(caplog)
    assert api.call_target(made) is not None
    assert api.call_target(_module_lambda) is not None


def test_lambdas_passed_to_graph_control_flow(caplog):
    @tf.function
    def f(x):
        y = tf.cond(x > 0, lambda: x * 2, lambda: -x)
        i, = tf.while_loop(lambda i: i < 3, lambda i: i + 1,
                           [tf.constant(0)])
        return y + tf.cast(i, tf.float32)

    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert float(f(_T(2.0))) == 7.0
        assert float(f(_T(-2.0))) == 5.0
    assert not _warnings(caplog)


def test_errors_name_the_users_line():
    f = tf.function(lambda x:
                    x + undefined_name_for_the_test)  # noqa: F821
    line = f.python_function.__code__.co_firstlineno + 1
    with pytest.raises(NameError) as e:
        f(_T(1.0))
    frames = [fr for fr in traceback.extract_tb(e.value.__traceback__)
              if fr.filename == __file__ and fr.name == "<lambda>"]
    assert frames and frames[-1].lineno == line


def test_to_code_of_lambda_compiles():
    code = ag.to_code(lambda x, y=1: x + y if x > 0 and y > 0 else -x)
    compile(code, "<to_code>", "exec")
    assert "ag__.if_exp(" in code and "ag__.and_(" in code
    assert ag.to_graph(lambda x: -x if x > 0 else x)(_T(2.0)).numpy() == -2.0


# ---- not converted: one warning, run as-is --------------------------------

def test_identical_signatures_on_one_line_warn_once_and_run(caplog):
    a, b = lambda x: x + 1, lambda x: x + 2  # noqa: E731
    fa, fb = tf.function(a), tf.function(b)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert float(fa(_T(1.0))) == 2.0
        assert float(fa(_T(1))) == 2.0               # a second trace
        assert float(tf.function(a)(_T(3.0))) == 4.0
        assert api.convert(a) is a
    msgs = _warnings(caplog)
    assert len(msgs) == 1, msgs
    assert "could not parse the source code of <lambda>: found multiple " \
        "definitions with identical signatures at the location" in msgs[0]
    assert "do_not_convert" in msgs[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert float(fb(_T(1.0))) == 3.0
        # From converted code, an unconvertible lambda is just called.
        assert api.call_target(b) is None
    assert len(_warnings(caplog)) == 1


def test_do_not_convert_lambda_is_silent(caplog):
    a, b = lambda x: x + 1, lambda x: x + 2  # noqa: E731
    f = tf.function(ag.experimental.do_not_convert(a))
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert float(f(_T(1.0))) == 2.0
    assert not caplog.records


def test_lambda_without_source_warns_once_and_runs(caplog):
    f = eval("lambda x: x * 2")
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert api.convert(f) is f
        assert api.convert(f) is f
        assert float(tf.function(f)(_T(2.0))) == 4.0
    msgs = _warnings(caplog)
    assert len(msgs) == 1 and "source code" in msgs[0], msgs
    with pytest.raises(api.SourceUnavailable):
        ag.to_graph(f)


def test_changed_default_count_is_not_matched(caplog):
    f = lambda x, y=1: x + y  # noqa: E731
    f.__defaults__ = None           # no longer the signature in the source
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert api.convert(f) is f
    assert "no matching AST" in _warnings(caplog)[0]


# ---- source that does not parse as a whole ---------------------------------

def _fake_file(name, source, compiled_prefix_lines):
    lines = source.splitlines(True)
    linecache.cache[name] = (len(source), None, lines, name)
    ns = {"tf": tf}
    exec(compile("".join(lines[:compiled_prefix_lines]), name, "exec"), ns)
    return ns


def test_lambda_in_a_file_that_does_not_parse_whole(caplog):
    name = "<tfmini-test-broken-file>"
    source = ("def make():\n"
              "    return dict(\n"
              "        f=lambda x: x * 2 if x > 0 else -x,\n"
              "        g=lambda y: y)\n"
              "\n"
              "def broken(:\n")
    try:
        ns = _fake_file(name, source, 4)
        fn = ns["make"]()["f"]
        conv = _check_silent_and_converted(caplog, fn)
        assert float(conv(_T(2.0))) == 4.0
        assert float(conv(_T(-2.0))) == 2.0
        node = api._function_source(fn)
        assert (node.lineno, node.col_offset) == (3, 10)
        assert node.body[0].value.lineno == 3
    finally:
        linecache.cache.pop(name, None)
