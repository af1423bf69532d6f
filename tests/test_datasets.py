"""keras.datasets loaders on files the tests write."""
import os

import numpy as np
import pytest

from tfmini.keras.datasets import digits, mnist


def _write_idx_set(folder, gz, rng):
    arrays = {
        "x_train": rng.integers(0, 256, (20, 28, 28), dtype=np.uint8),
        "y_train": rng.integers(0, 10, 20, dtype=np.uint8),
        "x_test": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
        "y_test": rng.integers(0, 10, 5, dtype=np.uint8),
    }
    for k, stem in mnist._IDX_FILES.items():
        mnist.write_idx(os.path.join(folder, stem + (".gz" if gz else "")),
                        arrays[k])
    return arrays


@pytest.mark.parametrize("gz", [False, True])
def test_load_idx_folder(tmp_path, gz):
    want = _write_idx_set(str(tmp_path), gz, np.random.default_rng(0))
    (xtr, ytr), (xte, yte) = mnist.load_data(path=str(tmp_path))
    assert xtr.dtype == np.uint8 and xtr.shape == (20, 28, 28)
    np.testing.assert_array_equal(xtr, want["x_train"])
    np.testing.assert_array_equal(yte, want["y_test"])


def test_load_npz_from_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    os.makedirs(tmp_path / "datasets")
    x = np.zeros((3, 28, 28), np.uint8)
    y = np.arange(3, dtype=np.uint8)
    np.savez(tmp_path / "datasets" / "mnist.npz", x_train=x, y_train=y,
             x_test=x[:1], y_test=y[:1])
    (xtr, ytr), (xte, yte) = mnist.load_data()
    assert xtr.shape == (3, 28, 28) and yte.tolist() == [0]


def test_missing_files_say_where_to_put_them(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="datasets"):
        mnist.load_data()


def test_truncated_idx_is_a_clear_error(tmp_path):
    p = str(tmp_path / "x")
    mnist.write_idx(p, np.zeros((4, 2), np.uint8))
    with open(p, "rb") as f:
        data = f.read()
    with open(p, "wb") as f:
        f.write(data[:-3])
    with pytest.raises(ValueError, match="header says"):
        mnist.read_idx(p)


def test_digits_split():
    (xtr, ytr), (xte, yte) = digits.load_data()
    assert xtr.shape[1:] == (8, 8) and xtr.dtype == np.float32
    assert len(xtr) + len(xte) == 1797
    assert 0.0 <= xtr.min() and xtr.max() <= 1.0
    assert set(np.unique(ytr)) == set(range(10))
