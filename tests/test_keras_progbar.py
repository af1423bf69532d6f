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


def test_terminal_bar_redraws_in_place():
    out = FakeTTY()
    bar = Progbar(4, stream=out, interval=0.0, stateful_metrics=["acc"])
    bar.update(1, [("acc", 0.5)])
    bar.update(2, [("acc", 0.75)])
    bar.update(4, [("acc", 1.0)])
    text = out.getvalue()
    frames = text.split("\r")[1:]
    assert len(frames) == 3
    assert re.match(r"1/4 \[======>\.+\] - ETA: \d+s - acc: 0\.5000",
                    frames[0]), frames[0]
    assert re.match(r"4/4 \[=+\] - \d+s \d+(us|ms|s)/step - acc: 1\.0000\n",
                    frames[-1]), frames[-1]
    assert text.endswith("\n") and text.count("\n") == 1


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
