"""keras.utils.Progbar: a redrawn bar on a terminal, plain lines
elsewhere."""
import io
import re

from tfmini.keras.utils import Progbar


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    bar = Progbar(5, stream=out, stateful_metrics=["loss"])
    for i in range(1, 6):
        bar.update(i, [("loss", 1.0 / i)])
    text = out.getvalue()
    assert "\r" not in text and "\b" not in text
    assert text.count("\n") == 1
    assert re.fullmatch(r"5/5 - \d+s - \d+(us|ms|s)/step - loss: 0\.2000\n",
                        text), text


def _plain(text):
    return re.sub(r"\x1b\[\d+m", "", text)


def test_terminal_bar_redraws_in_place():
    # Keras 3's bar (the `[====>...] - ETA:` bar pinned here before was
    # Keras 2's).
    out = FakeTTY()
    bar = Progbar(4, stream=out, interval=0.0, stateful_metrics=["acc"])
    bar.update(1, [("acc", 0.5)])
    bar.update(2, [("acc", 0.75)])
    bar.update(4, [("acc", 1.0)])
    text = out.getvalue()
    frames = text.split("\r")[1:]
    assert len(frames) == 3
    # Bold count, green done cells, white rest, bold ETA.
    assert frames[0].startswith("\x1b[1m1/4\x1b[0m \x1b[32m" + "\u2501" * 5 +
                                "\x1b[0m\x1b[37m" + "\u2501" * 15)
    assert re.fullmatch(r"1/4 \u2501{20} \d+s \d+(us|ms|s)/step - "
                        r"acc: 0\.5000 *", _plain(frames[0])), frames[0]
    assert re.fullmatch(r"4/4 \u2501{20} \d+s \d+(us|ms|s)/step - "
                        r"acc: 1\.0000 *\n", _plain(frames[-1])), frames[-1]
    assert "\x1b[37m\u2501" not in frames[-1]      # all cells done
    assert text.endswith("\n") and text.count("\n") == 1


def test_terminal_bar_is_throttled_and_pads_shorter_lines():
    out = FakeTTY()
    bar = Progbar(100, stream=out, interval=60.0, stateful_metrics=["l"])
    for i in range(1, 100):
        bar.update(i, [("l", 12345.0 if i == 1 else 1.0)])
    # Only the first update is drawn within the interval.
    assert out.getvalue().count("\r") == 1
    bar.update(100, [("l", 1.0)])
    first, last = out.getvalue().split("\r")[1:]
    assert len(_plain(last.rstrip("\n"))) >= len(_plain(first))


def test_verbose_two_prints_one_line_at_the_end_even_on_a_terminal():
    out = FakeTTY()
    bar = Progbar(3, stream=out, verbose=2, stateful_metrics=["loss"])
    for i in range(1, 4):
        bar.update(i, [("loss", 0.5)])
    assert re.fullmatch(r"3/3 - \d+s - \d+(us|ms|s)/step - loss: 0\.5000\n",
                        out.getvalue()), out.getvalue()


def test_a_jupyter_stream_gets_the_live_bar(monkeypatch):
    import sys
    import types

    class OutStream(io.StringIO):       # what ipykernel gives as stdout
        def isatty(self):
            return False
    OutStream.__module__ = "ipykernel.iostream"
    monkeypatch.setitem(sys.modules, "ipykernel",
                        sys.modules.get("ipykernel") or
                        types.ModuleType("ipykernel"))
    out = OutStream()
    bar = Progbar(2, stream=out, interval=0.0)
    bar.update(1, [("loss", 1.0)])
    bar.update(2, [("loss", 1.0)])
    assert out.getvalue().count("\r") == 2 and "\u2501" in out.getvalue()


def test_non_stateful_values_are_averaged():
    out = io.StringIO()
    bar = Progbar(2, stream=out)
    bar.update(1, [("loss", 1.0)])
    bar.update(2, [("loss", 3.0)])
    assert "loss: 2.0000" in out.getvalue()


def test_unknown_target_and_verbose_zero():
    out = io.StringIO()
    bar = Progbar(None, stream=out)
    bar.update(3, finalize=True)
    assert out.getvalue().startswith("3/Unknown")
    quiet = io.StringIO()
    bar = Progbar(2, stream=quiet, verbose=0)
    bar.update(2, [("loss", 1.0)])
    assert quiet.getvalue() == ""


def test_small_values_use_scientific_notation():
    out = io.StringIO()
    bar = Progbar(1, stream=out, stateful_metrics=["loss"])
    bar.update(1, [("loss", 1.5e-5)])
    assert "loss: 1.5000e-05" in out.getvalue()
    zero = io.StringIO()
    Progbar(1, stream=zero, stateful_metrics=["loss"]).update(
        1, [("loss", 0.0)])
    assert "loss: 0.0000e+00" in zero.getvalue()      # as Keras 3
