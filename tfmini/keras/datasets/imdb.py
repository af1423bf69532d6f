"""keras.datasets.imdb from Keras's cache: <KERAS_HOME>/datasets/imdb.npz
(x_train, y_train, x_test, y_test; the sequences are ragged, stored as
pickled object arrays, read with a restricted unpickler) and
imdb_word_index.json. load_data's shuffling, start/OOV characters,
index_from, maxlen, num_words and skip_top follow Keras 3."""
import json
import zipfile

import numpy as np

from . import _unpickle
from ..utils.file_utils import get_file

_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def load_npz(path):
    """{name: array} of an .npz whose object arrays are unpickled with
    the restricted unpickler (plain arrays need no pickle at all)."""
    fmt = np.lib.format
    out = {}
    with zipfile.ZipFile(path) as zf:
        for member in zf.namelist():
            if not member.endswith(".npy"):
                continue
            with zf.open(member) as f:
                version = fmt.read_magic(f)
                read_header = (fmt.read_array_header_1_0 if version ==
                               (1, 0) else fmt.read_array_header_2_0)
                shape, fortran, dtype = read_header(f)
                if dtype.hasobject:
                    arr = _unpickle.load(f, encoding="latin1")
                    if not isinstance(arr, np.ndarray):
                        raise ValueError(f"{path}: {member} does not hold "
                                         f"an array")
                else:
                    data = f.read()
                    arr = np.frombuffer(data, dtype=dtype).reshape(
                        shape, order="F" if fortran else "C")
            out[member[:-4]] = arr
    return out


def _remove_long_seq(maxlen, seq, label):
    keep = [(x, y) for x, y in zip(seq, label) if len(x) < maxlen]
    return [x for x, _ in keep], [y for _, y in keep]


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None,
              seed=113, start_char=1, oov_char=2, index_from=3, **kwargs):
    """((x_train, y_train), (x_test, y_test)): object arrays of word-index
    lists and int labels, as keras.datasets.imdb.load_data."""
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
    f = load_npz(get_file(fname=path, origin=_ORIGIN + "imdb.npz"))
    x_train, labels_train = f["x_train"], f["y_train"]
    x_test, labels_test = f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    idx = np.arange(len(x_train))
    rng.shuffle(idx)
    x_train, labels_train = x_train[idx], labels_train[idx]
    idx = np.arange(len(x_test))
    rng.shuffle(idx)
    x_test, labels_test = x_test[idx], labels_test[idx]
    if start_char is not None:
        x_train = [[start_char] + [w + index_from for w in x]
                   for x in x_train]
        x_test = [[start_char] + [w + index_from for w in x]
                  for x in x_test]
    else:
        x_train = [[w + index_from for w in x] for x in x_train]
        x_test = [[w + index_from for w in x] for x in x_test]
    if maxlen:
        x_train, labels_train = _remove_long_seq(maxlen, x_train,
                                                 labels_train)
        x_test, labels_test = _remove_long_seq(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"After filtering for sequences shorter than "
                             f"maxlen={maxlen}, no sequence was kept. "
                             f"Increase maxlen.")
    xs = x_train + x_test
    labels = np.concatenate([labels_train, labels_test])
    if not num_words:
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x]
              for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]
    n = len(x_train)
    x_tr = np.empty(n, dtype=object)
    x_tr[:] = xs[:n]
    x_te = np.empty(len(xs) - n, dtype=object)
    x_te[:] = xs[n:]
    return (x_tr, labels[:n]), (x_te, labels[n:])


def get_word_index(path="imdb_word_index.json"):
    """{word: index} from the cached imdb_word_index.json."""
    with open(get_file(fname=path, origin=_ORIGIN +
                       "imdb_word_index.json")) as f:
        return json.load(f)
