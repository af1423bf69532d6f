"""keras.datasets and keras.utils.get_file read Keras's cache layout
(under $KERAS_HOME) and its real file formats; a missing file is a clear
error naming where to put it. The fake files here are tiny but written
in the exact formats Keras's downloads have."""
import gzip
import io
import json
import os
import pickle
import struct
import tarfile

import numpy as np
import pytest

import tfmini as tf

datasets = tf.keras.datasets
get_file = tf.keras.utils.get_file


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    return tmp_path


def _idx_gz(path, array):
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(
        f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def test_fashion_mnist_reads_keras_gz_files(home):
    d = home / "datasets" / "fashion-mnist"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    xtr = rng.integers(0, 255, (5, 28, 28)).astype(np.uint8)
    ytr = np.arange(5, dtype=np.uint8)
    xte = rng.integers(0, 255, (3, 28, 28)).astype(np.uint8)
    yte = np.array([9, 8, 7], np.uint8)
    _idx_gz(d / "train-images-idx3-ubyte.gz", xtr)
    _idx_gz(d / "train-labels-idx1-ubyte.gz", ytr)
    _idx_gz(d / "t10k-images-idx3-ubyte.gz", xte)
    _idx_gz(d / "t10k-labels-idx1-ubyte.gz", yte)
    (a, b), (c, e) = datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(a, xtr)
    np.testing.assert_array_equal(b, ytr)
    np.testing.assert_array_equal(c, xte)
    np.testing.assert_array_equal(e, yte)


def test_mnist_npz_in_cache(home):
    (home / "datasets").mkdir()
    x = np.ones((2, 28, 28), np.uint8)
    np.savez(home / "datasets" / "mnist.npz", x_train=x,
             y_train=np.array([1, 2], np.uint8), x_test=x[:1],
             y_test=np.array([3], np.uint8))
    (a, b), (c, d) = datasets.mnist.load_data()
    assert a.shape == (2, 28, 28) and list(d) == [3]


def _cifar_batch(n, seed):
    rng = np.random.default_rng(seed)
    return {b"batch_label": b"x",
            b"labels": list(rng.integers(0, 10, n)),
            b"data": rng.integers(0, 255, (n, 3072)).astype(np.uint8),
            b"filenames": [b"f"] * n}


def _write_cifar(folder):
    folder.mkdir(parents=True)
    batches = {}
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] +
                             ["test_batch"]):
        batches[name] = _cifar_batch(2, i)
        with open(folder / name, "wb") as f:
            pickle.dump(batches[name], f, protocol=2)
    return batches


def test_cifar10_keras3_layout(home):
    batches = _write_cifar(home / "datasets" / "cifar-10-batches-py-target"
                           / "cifar-10-batches-py")
    (xtr, ytr), (xte, yte) = datasets.cifar10.load_data()
    assert xtr.shape == (10, 32, 32, 3) and ytr.shape == (10, 1)
    assert xte.shape == (2, 32, 32, 3) and yte.dtype == np.uint8
    first = batches["data_batch_1"][b"data"][0].reshape(3, 32, 32)
    np.testing.assert_array_equal(xtr[0], first.transpose(1, 2, 0))
    assert ytr[2, 0] == batches["data_batch_2"][b"labels"][0]


def test_cifar10_from_archive_and_old_layout(home, tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    _write_cifar(src / "cifar-10-batches-py")
    (home / "datasets").mkdir()
    with tarfile.open(home / "datasets" / "cifar-10-batches-py-target_archive",
                      "w:gz") as t:
        t.add(src / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    (xtr, _), _ = datasets.cifar10.load_data()     # extracts the archive
    assert xtr.shape == (10, 32, 32, 3)


def test_pickled_code_is_refused(home):
    folder = home / "datasets" / "cifar-10-batches-py"
    _write_cifar(folder)

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": Evil(), b"labels": []}, f)
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        datasets.cifar10.load_data()


def test_imdb_npz_and_word_index(home):
    (home / "datasets").mkdir()
    seqs = [[5, 6, 7], [8], [9, 10], [11, 12, 13, 14]]
    x = np.empty(4, dtype=object)
    x[:] = seqs
    np.savez(home / "datasets" / "imdb.npz", x_train=x[:2],
             y_train=np.array([0, 1]), x_test=x[2:], y_test=np.array([1, 0]))
    (xtr, ytr), (xte, yte) = datasets.imdb.load_data()
    got = sorted((list(s), int(y)) for s, y in zip(xtr, ytr))
    # start_char=1, then each index + index_from (3)
    assert got == [([1, 8, 9, 10], 0), ([1, 11], 1)]
    (xtr, _), _ = datasets.imdb.load_data(num_words=10, index_from=0,
                                          start_char=None)
    assert sorted(map(list, xtr)) == [[5, 6, 7], [8]]
    (xtr, _), (xte, _) = datasets.imdb.load_data(maxlen=4)
    assert all(len(s) < 4 for s in list(xtr) + list(xte))
    with open(home / "datasets" / "imdb_word_index.json", "w") as f:
        json.dump({"the": 1}, f)
    assert datasets.imdb.get_word_index() == {"the": 1}


def test_missing_files_say_where(home):
    with pytest.raises(FileNotFoundError, match=r"fashion-mnist.*KERAS_HOME"):
        datasets.fashion_mnist.load_data()
    with pytest.raises(FileNotFoundError, match="imdb.npz"):
        datasets.imdb.load_data()
    with pytest.raises(FileNotFoundError,
                       match="cifar-10-batches-py-target_archive"):
        datasets.cifar10.load_data()


def test_get_file_cache_hash_and_extract(home):
    d = home / "datasets"
    d.mkdir()
    (d / "a.txt").write_bytes(b"hello")
    p = get_file("a.txt", origin="https://example.com/a.txt")
    assert p == str(d / "a.txt")
    assert get_file(origin="https://example.com/a.txt") == p
    sha = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert get_file("a.txt", origin="x", file_hash=sha) == p
    with pytest.raises(ValueError, match="hash"):
        get_file("a.txt", origin="x", file_hash="0" * 64)
    with pytest.raises(FileNotFoundError, match="b.txt"):
        get_file("b.txt", origin="https://example.com/b.txt")
    # extract=True: "<name>.tar.gz" -> "<name>_extracted/"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo("inner/x.txt")
        info.size = 2
        t.addfile(info, io.BytesIO(b"hi"))
    (d / "pack.tar.gz").write_bytes(buf.getvalue())
    out = get_file("pack.tar.gz", origin="x", extract=True)
    assert out == str(d / "pack_extracted")
    assert open(os.path.join(out, "inner", "x.txt")).read() == "hi"
    sub = home / "models"
    sub.mkdir()
    (sub / "m.bin").write_bytes(b"1")
    assert get_file("m.bin", origin="x", cache_subdir="models") == \
        str(sub / "m.bin")
