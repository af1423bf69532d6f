"""examples/notebook.ipynb, executed in a fresh ipykernel by nbclient:
tensors, a tape, run_functions_eagerly, fit's live bar, an error."""
import os
import re

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "examples", "notebook.ipynb")


def _rendered(text):
    """What Jupyter shows for a stream: each '\\r' returns to the line's
    start, so only the last frame of a line remains."""
    return "\n".join(line.split("\r")[-1] for line in text.split("\n"))


def _stream(cell, name="stdout"):
    return "".join(o["text"] for o in cell["outputs"]
                   if o["output_type"] == "stream" and o["name"] == name)


def _result(cell):
    (out,) = [o for o in cell["outputs"] if o["output_type"] ==
              "execute_result"]
    return out["data"]["text/plain"]


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    old = os.environ.get("PYTHONPATH")
    # The kernel imports this checkout's tfmini.
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + old if old else "")
    try:
        client = nbclient.NotebookClient(
            nb, timeout=120, kernel_name="python3",
            resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
        client.execute()
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    return [c for c in nb.cells if c.cell_type == "code"]


def test_tensor_and_tape_reprs(executed):
    assert _result(executed[1]) == (
        "<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\n"
        "array([[ 7., 10.],\n"
        "       [15., 22.]], dtype=float32)>")
    assert _result(executed[2]) == \
        "<tf.Tensor: shape=(), dtype=float32, numpy=8.0>"


def test_run_functions_eagerly_toggles(executed):
    assert _stream(executed[3]).splitlines() == [
        "executing eagerly: False", "executing eagerly: True",
        "functions run eagerly: False"]


def test_fit_draws_a_live_bar_in_place(executed):
    raw = _stream(executed[4])
    # Redrawn with '\r' (as Keras 3 does in Jupyter), not line by line.
    assert "\r" in raw and "\u2501" in raw
    assert raw.count("\n") == 4          # 'Epoch i/2' and one bar each
    shown = re.sub(r"\x1b\[\d+m", "", _rendered(raw)).splitlines()
    assert shown[0] == "Epoch 1/2" and shown[2] == "Epoch 2/2"
    for line in (shown[1], shown[3]):
        assert re.fullmatch(r"16/16 \u2501{20} \d+s \d+(us|ms|s)/step - "
                            r"accuracy: \d\.\d{4} - loss: \d\.\d{4} *",
                            line), line


def test_error_cell_shows_tf_error_type(executed):
    (err,) = [o for o in executed[5]["outputs"]
              if o["output_type"] == "error"]
    assert err["ename"] == "InvalidArgumentError"
    assert "MatMul" in err["evalue"] and "[2,3]" in err["evalue"]
    # Nothing else raised.
    for cell in executed[:5]:
        assert not [o for o in cell["outputs"]
                    if o["output_type"] == "error"]
