"""tf.profiler.experimental: no profiler here, but TF's session rules
(messages from TF 2.21) and a warning that nothing is written."""
import logging

import pytest

import tfmini as tf

P = tf.profiler.experimental


def test_session_rules_as_tf(tmp_path, caplog):
    with pytest.raises(tf.errors.UnavailableError,
                       match="No profiler is running"):
        P.stop()
    with caplog.at_level(logging.WARNING, logger="tfmini"):
        P.start(str(tmp_path))
    assert "nothing will be written" in caplog.text
    try:
        with pytest.raises(tf.errors.AlreadyExistsError,
                           match="Another profiler is running."):
            P.start(str(tmp_path))
    finally:
        P.stop()
    with P.Profile(str(tmp_path), options=P.ProfilerOptions()):
        with P.Trace("train", step_num=1, _r=1):
            y = tf.constant(2.0) * 3.0
    assert float(y) == 6.0
    with pytest.raises(tf.errors.UnavailableError):
        P.stop()                     # Profile stopped its session
    assert not list(tmp_path.iterdir())


def test_options_are_tfs():
    assert repr(P.ProfilerOptions()) == (
        "ProfilerOptions(host_tracer_level=2, python_tracer_level=0, "
        "device_tracer_level=1, delay_ms=None)")
    with pytest.raises(TypeError, match="ProfilerOptions"):
        P.start("/tmp", options={})
