"""Dataset.sample_from_datasets, choose_from_datasets and list_files
(TF's rules: which dataset gives the next element, when an exhausted one
stops the whole, and list_files' glob and shuffle)."""
import glob

import numpy as np

from .. import errors as _errors
from .dataset import Dataset, _to_tensor


def _check(datasets):
    datasets = list(datasets)
    if not datasets or not all(isinstance(d, Dataset) for d in datasets):
        raise TypeError("Invalid `datasets`. `datasets` should be a "
                        "non-empty list of `tf.data.Dataset` objects.")
    return datasets


def _interleave(datasets, pick, stop_on_empty):
    """Elements of datasets in the order pick(live) chooses (an index,
    or None to end); an exhausted dataset ends all, or drops out."""
    def gen():
        its = [iter(d) for d in datasets]
        live = [True] * len(its)
        while any(live):
            i = pick(live)
            if i is None:
                return
            if not live[i]:
                if stop_on_empty:
                    return
                continue
            try:
                yield next(its[i])
            except StopIteration:
                if stop_on_empty:
                    return
                live[i] = False
    return gen


def sample_from_datasets(datasets, weights=None, seed=None,
                         stop_on_empty_dataset=False,
                         rerandomize_each_iteration=None):
    datasets = _check(datasets)
    n = len(datasets)
    if weights is None:
        w = np.full(n, 1.0 / n)
    else:
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy")
                       else weights, np.float64).reshape(-1)
        if len(w) != n:
            raise ValueError(
                f"Invalid `weights`. `weights` should have the same length "
                f"as `datasets` but got `len(weights)={len(w)}` vs. "
                f"`len(datasets)={n}`.")
    from ..ops.random_ops import _get_seed
    seeds = _get_seed(seed)
    state = {"epoch": 0}

    def make():
        # A fixed seed gives the same order each epoch unless asked.
        epoch = state["epoch"] if rerandomize_each_iteration else 0
        state["epoch"] += 1
        rng = np.random.default_rng(
            None if seeds is None else [int(s) % 2**63 for s in seeds]
            + [epoch])

        def pick(live):
            p = w * np.asarray(live, np.float64)
            if p.sum() <= 0:
                return None
            return int(rng.choice(n, p=p / p.sum()))
        return _interleave(datasets, pick, stop_on_empty_dataset)()
    return Dataset(make, None)


def choose_from_datasets(datasets, choice_dataset,
                         stop_on_empty_dataset=True):
    datasets = _check(datasets)
    from .. import dtypes
    spec = choice_dataset.element_spec
    if getattr(spec, "dtype", None) != dtypes.int64 or \
            tuple(getattr(spec, "shape", (1,))) != ():
        raise TypeError(f"Invalid `choice_dataset`. Elements of "
                        f"`choice_dataset` must be scalar `tf.int64` tensors"
                        f" but are {spec!r}.")
    n = len(datasets)

    def make():
        choices = iter(choice_dataset)

        def pick(live):
            c = next(choices, None)
            if c is None:
                return None
            i = int(c.numpy())
            if not 0 <= i < n:
                raise _errors.InvalidArgumentError(
                    None, None, f"Selector index out of range: {i} >= {n}")
            return i
        return _interleave(datasets, pick, stop_on_empty_dataset)()
    return Dataset(make, None)


def list_files(file_pattern, shuffle=None, seed=None, name=None):
    patterns = file_pattern
    if hasattr(patterns, "numpy"):
        patterns = patterns.numpy()
    if isinstance(patterns, (str, bytes)):
        patterns = [patterns]
    patterns = [p.decode() if isinstance(p, bytes) else str(p)
                for p in np.asarray(patterns, dtype=object).reshape(-1)]
    files = sorted({f for p in patterns for f in glob.glob(p)})
    if not files:
        raise _errors.InvalidArgumentError(
            None, None, "Expected 'tf.Tensor(False, shape=(), dtype=bool)' "
            "to be true. Summarized data: b'No files matched pattern: "
            f"{', '.join(patterns)}'")
    ds = Dataset(lambda: (_to_tensor(np.array(f.encode(), dtype=object))
                          for f in files), len(files))
    ds._tf_class = "_TensorSliceDataset"    # TF slices the names
    if shuffle is None or shuffle:
        ds = ds.shuffle(len(files), seed=seed)
    return ds
