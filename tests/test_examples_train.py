"""The training examples (examples/*.py) reach the accuracy their
docstrings state, eagerly and traced. Slow: pytest -m slow."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ["transformer_recall", "lstm_recall", "resnet_digits"]


@pytest.mark.slow
@pytest.mark.parametrize("eager", [False, True], ids=["traced", "eager"])
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_trains(name, eager):
    if name == "resnet_digits":
        pytest.importorskip("sklearn", reason="the digits come from "
                            "scikit-learn")
    # A process of its own: each example seeds and builds from scratch.
    code = (f"import sys, json; sys.path.insert(0, {str(ROOT / 'examples')!r})\n"
            f"import {name} as m\n"
            f"acc, s = m.train(eager={eager})\n"
            f"print(json.dumps([acc, s, m.TARGET]))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # On a busy CI machine one thread (the examples' docstrings): the
    # same accuracy, minutes sooner.
    env.setdefault("OMP_NUM_THREADS", "1")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    acc, seconds, target = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"{name} ({'eager' if eager else 'traced'}): accuracy {acc:.3f} "
          f"in {seconds:.1f} s")
    assert acc >= target, f"{name}: test accuracy {acc:.3f} < {target}"
