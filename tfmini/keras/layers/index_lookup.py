"""IndexLookup: the vocabulary machinery shared by StringLookup and
IntegerLookup (and, through StringLookup, TextVectorization).

Index layout, as Keras 3: [mask token (when set)] [num_oov_indices OOV
slots] [vocabulary, most frequent first]. A value found in the
vocabulary gets its position; any other value an OOV slot (with several
slots: a hash of the value, FarmHash for strings, floormod for ints).

The lookup runs as ops, so it works eagerly, traced and inside
tf.data's map: tfmini has no hash-table resource, so the vocabulary is
kept as its int64 keys, sorted, and each value's key is found by a
branch-free binary search (log2(V) gathers, O(n log V) work and memory).
A string's key is its Fingerprint64; the string found at that key is
compared with the input, so a hash collision never maps a word to
another word's index.

adapt() counts tokens eagerly in Python (Keras does the same on the
host): the vocabulary is ordered by count, ties by the larger token
first (what Keras' np.lexsort(...)[::-1] gives)."""
import collections
import math
import os

import numpy as np

import tfmini as tf

from .. import backend
from .base import Layer

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_KEY_RANGE = 2 ** 63 - 1     # bucket count that keeps Fingerprint64 whole


def _is_symbolic(x):
    return getattr(x, "_symbolic", False) or not hasattr(x, "numpy")


def iter_batches(data, steps=None):
    """numpy arrays from a list, an array, a tensor or an iterable of
    batches (a tf.data.Dataset of x or of (x, y) pairs; steps: at most
    that many batches, as Keras' adapt)."""
    if isinstance(data, (list, tuple, np.ndarray)) or hasattr(data,
                                                              "numpy"):
        yield _as_numpy(data)
        return
    for k, b in enumerate(data):
        if steps is not None and k >= steps:
            return
        if isinstance(b, tuple):
            b = b[0]            # (x, y) pairs: adapt on x, as Keras
        yield _as_numpy(b)


def _as_numpy(x):
    if hasattr(x, "to_list"):                       # a RaggedTensor
        return np.asarray(_flatten(x.to_list()), dtype=object)
    if hasattr(x, "numpy"):
        return x.numpy()
    return np.asarray(x, dtype=object if _has_text(x) else None)


def _has_text(x):
    while isinstance(x, (list, tuple)) and x:
        x = x[0]
    return isinstance(x, (str, bytes))


def _flatten(rows):
    out = []
    for r in rows:
        if isinstance(r, list):
            out.extend(_flatten(r))
        else:
            out.append(r)
    return out


def positions(values):
    """0, 1, ..., len(values) - 1 as int64, also when the length is
    unknown while tracing (where tfmini's tf.range needs a known
    limit)."""
    if values.dtype == tf.string:
        values = tf.strings.length(values)
    return tf.cumsum(tf.ones_like(values, dtype=tf.int64)) - 1


def row_ids(r):
    """r.value_rowids() by a binary search of each value's position in
    the row ends: O(values * log rows) where tfmini's searchsorted
    compares every value with every row. Needs the row count known (it
    is eagerly); otherwise it is value_rowids of an int view (whose
    zero fill has no string kernel when traced)."""
    rows = r.row_splits._shape_tuple[0]
    if rows is None:
        if r.flat_values.dtype == tf.string:
            r = r.with_flat_values(tf.strings.length(r.flat_values))
        return r.value_rowids()
    rows -= 1
    pos = positions(r.flat_values)
    ends = r.row_splits[1:]
    below = tf.zeros_like(pos)      # rows ending at or before pos
    step = 1 << max(rows.bit_length() - 1, 0) if rows else 0
    while step:
        cand = below + step
        probe = tf.gather(ends, tf.minimum(cand, rows) - 1)
        below = tf.where(tf.logical_and(cand <= rows, probe <= pos),
                         cand, below)
        step >>= 1
    return below


def pad_rows(r, pad=0):
    """A RaggedTensor [n, None] of ints as [n, longest row], padded with
    pad. The width is data: the columns come from the longest row's own
    positions (a boolean_mask, whose size may stay unknown), so this
    also traces when n and the width are unknown."""
    rows, starts = row_ids(r), r.row_splits[:-1]
    lens = r.row_lengths()
    local = positions(rows) - tf.gather(starts, rows)
    cols = tf.boolean_mask(local, tf.equal(rows, tf.argmax(lens)))
    at = tf.expand_dims(starts, 1) + tf.expand_dims(cols, 0)
    ok = tf.expand_dims(cols, 0) < tf.expand_dims(lens, 1)
    got = tf.gather(r.flat_values, tf.where(ok, at, tf.zeros_like(at)))
    return tf.where(ok, got, tf.zeros_like(got) + pad)


def _static(x):
    """Whether x's sizes are known (eager, or traced with known dims)."""
    if hasattr(x, "flat_values"):
        return (not _is_symbolic(x.flat_values)
                or None not in x.flat_values._shape_tuple
                + x.row_splits._shape_tuple)
    return not _is_symbolic(x) or None not in x._shape_tuple


def encode_ids(idx, depth, mode, idf=None):
    """Indices in [0, depth) (negative: dropped) as one_hot rows or as
    per-sample multi_hot / count / tf_idf vectors. idx is dense (the
    last axis holds a sample's values; rank <= 2) or a RaggedTensor
    (each row a sample). With known sizes counting scatters into
    [samples, depth] (memory of the result); traced with unknown sizes
    it sums one-hot rows ([samples, values, depth] at once)."""
    out_dtype = tf.float32 if mode == "tf_idf" else tf.int64
    if mode == "one_hot":
        if hasattr(idx, "flat_values"):
            raise ValueError("output_mode='one_hot' takes dense inputs, "
                             "not a RaggedTensor")
        shape = idx._shape_tuple
        if shape and shape[-1] == 1:
            idx = tf.squeeze(idx, -1)
        return tf.one_hot(idx, depth, dtype=out_dtype)
    ragged = hasattr(idx, "flat_values")
    if not ragged and len(idx._shape_tuple) > 2:
        raise ValueError(f"output_mode={mode!r} takes inputs of rank <= 2, "
                         f"got shape {idx._shape_tuple}")
    if _static(idx):
        counts = _scatter_counts(idx, depth)
    else:
        dense = pad_rows(idx, -1) if ragged else idx
        counts = tf.reduce_sum(tf.one_hot(tf.cast(dense, tf.int64), depth,
                                          dtype=tf.float32), axis=-2)
    if mode == "multi_hot":
        counts = tf.minimum(counts, 1.0)
    elif mode == "tf_idf":
        counts = counts * tf.constant(np.asarray(idf, np.float32))
    return tf.cast(counts, out_dtype)


def _scatter_counts(idx, depth):
    """Counts by one scatter; idx's sizes are known (_static), so they
    are Python ints here and the shapes stay static when traced."""
    if hasattr(idx, "flat_values"):
        flat, rows = idx.flat_values, row_ids(idx)
        n = idx.row_splits._shape_tuple[0]
        n = idx.nrows() if n is None else n - 1
        lead = True
    else:
        lead = len(idx._shape_tuple) == 2
        if not lead:
            idx = tf.reshape(idx, [1, -1])
        n, width = idx._shape_tuple
        rows = tf.constant(np.repeat(np.arange(n, dtype=np.int64), width))
        flat = tf.reshape(idx, [-1])
    flat = tf.cast(flat, tf.int64)
    keep = tf.logical_and(flat >= 0, flat < depth)
    # Dropped values (the mask) go to one extra slot that is cut off.
    cell = tf.where(keep, rows * (depth + 1) + flat,
                    rows * (depth + 1) + depth)
    ones = tf.ones_like(flat, dtype=tf.float32)
    counts = tf.math.unsorted_segment_sum(ones, cell, n * (depth + 1))
    counts = tf.reshape(counts, [-1, depth + 1])[:, :depth]
    return counts if lead else tf.reshape(counts, [depth])


class TakesAnyInput(Layer):
    """A layer of strings or integers: its first call records no input
    shape, since a Sequential model would then rebuild its input as a
    float placeholder; the model instead builds on its first real
    call, as Keras 3 does for these layers."""

    def _keras_maybe_build(self, inputs):
        known = self._keras_batch_input_shape
        super()._keras_maybe_build(inputs)
        self._keras_batch_input_shape = known


class IndexLookup(TakesAnyInput):
    """The common part of StringLookup and IntegerLookup; a subclass
    gives its token type through the _token/_keys/_oov_bucket hooks."""

    _strings = False

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token,
                 vocabulary=None, idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False,
                 name=None, **kwargs):
        kwargs.pop("dtype", None)
        kwargs.pop("vocabulary_size", None)     # written by get_config
        super().__init__(name=name, **kwargs)
        who = type(self).__name__
        if output_mode not in _MODES:
            raise ValueError(f"Unknown value for `output_mode` argument of "
                             f"{who}. Allowed values are: {_MODES}. "
                             f"Received: output_mode={output_mode}")
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"If set, `max_tokens` must be greater than 1. "
                             f"Received: max_tokens={max_tokens}")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"If pad_to_max_tokens is True, must set "
                             f"`max_tokens`. Received: "
                             f"max_tokens={max_tokens}")
        if num_oov_indices < 0:
            raise ValueError(f"`num_oov_indices` must be greater than or "
                             f"equal to 0. Received: "
                             f"num_oov_indices={num_oov_indices}")
        if invert and output_mode != "int":
            raise ValueError(f"`output_mode` must be `'int'` when `invert` "
                             f"is true. Received: output_mode={output_mode}")
        if output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError(f"`idf_weights` should only be set if "
                             f"`output_mode` is `'tf_idf'`. Received: "
                             f"idf_weights={idf_weights} and "
                             f"output_mode={output_mode}")
        if sparse and output_mode == "int":
            raise ValueError(f"`sparse` may only be true if `output_mode` "
                             f"is `'one_hot'`, `'multi_hot'`, `'count'` or "
                             f"`'tf_idf'`. Received: sparse=True and "
                             f"output_mode={output_mode}")
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = (None if mask_token is None
                           else self._token(mask_token))
        self.oov_token = self._token(oov_token)
        self.invert = bool(invert)
        self.output_mode = output_mode
        self.sparse = bool(sparse)
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self._keras_autocast = False
        self.supports_masking = output_mode == "int"
        self._vocab = None          # tokens, without the special ones
        self._idf = None            # per index of the encoded output
        self._table = None
        self._cached = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)
        elif idf_weights is not None:
            raise ValueError("`idf_weights` were given without a "
                             "`vocabulary`")

    # ---- hooks -------------------------------------------------------
    def _token(self, t):
        """A token as Python keeps it (str or int)."""
        raise NotImplementedError

    def _keys(self, x):
        """int64 lookup keys of tensor x."""
        raise NotImplementedError

    def _keys_np(self, tokens):
        raise NotImplementedError

    def _oov_bucket(self, x):
        raise NotImplementedError

    def _const(self, tokens):
        raise NotImplementedError

    # ---- the vocabulary ---------------------------------------------
    def _special(self):
        head = [] if self.mask_token is None else [self.mask_token]
        return head + [self.oov_token] * self.num_oov_indices

    def _token_start(self):
        return self.num_oov_indices + (self.mask_token is not None)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        tokens = [self._token(v) for v in
                  np.asarray(vocabulary, dtype=object).reshape(-1)]
        special = self._special()
        if special and tokens[:len(special)] == special:
            tokens = tokens[len(special):]
        repeated = sorted({t for t in tokens if tokens.count(t) > 1}
                          if len(set(tokens)) != len(tokens) else ())
        if repeated:
            raise ValueError(f"The passed vocabulary has at least one "
                             f"repeated term. Please uniquify your "
                             f"dataset. The repeated terms are: {repeated}")
        if self.mask_token is not None and self.mask_token in tokens:
            raise ValueError(
                f"Found reserved mask token at unexpected location in "
                f"`vocabulary`. Note that passed `vocabulary` does not "
                f"need to include the OOV and mask tokens. Either remove "
                f"all mask and OOV tokens, or include them only at the "
                f"start of the vocabulary in precisely this order: "
                f"{special}. Received: mask_token={self.mask_token} at "
                f"vocabulary index {tokens.index(self.mask_token)}")
        size = len(tokens) + self._token_start()
        if self.max_tokens is not None and size > self.max_tokens:
            raise ValueError(f"Attempted to set a vocabulary larger than "
                             f"the maximum vocab size. Received vocabulary "
                             f"size is {size}; `max_tokens` is "
                             f"{self.max_tokens}.")
        if self.output_mode == "tf_idf":
            if idf_weights is None:
                raise ValueError("When specifying the `vocabulary` argument, "
                                 "in TF-IDF output mode, the `idf_weights` "
                                 "argument must also be provided.")
            idf = np.asarray(idf_weights, np.float64).reshape(-1)
            if len(idf) != len(tokens):
                raise ValueError(f"`idf_weights` must be the same length as "
                                 f"vocabulary. len(idf_weights) is "
                                 f"{len(idf)}; len(vocabulary) is "
                                 f"{len(tokens)}")
            self._set(tokens, idf)
        elif idf_weights is not None:
            raise ValueError(f"`idf_weights` should only be set if "
                             f"`output_mode` is `'tf_idf'`. Received: "
                             f"output_mode={self.output_mode}")
        else:
            self._set(tokens, None)

    def _set(self, tokens, idf):
        self._vocab = list(tokens)
        keys = self._keys_np(self._vocab)
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        if len(sk) > 1 and np.any(sk[1:] == sk[:-1]):
            dup = [self._vocab[i] for i in order[1:][sk[1:] == sk[:-1]]]
            raise ValueError(f"{type(self).__name__}: vocabulary entries "
                             f"{dup[:4]} share a 63-bit hash key with "
                             f"another entry; tfmini cannot look them up")
        self._table = (sk, order.astype(np.int64),
                       [self._vocab[i] for i in order])
        self._cached = None
        if idf is None:
            self._idf = None
        else:
            # The OOV slots weigh the mean idf of the vocabulary, as Keras.
            mean = float(np.mean(idf)) if len(idf) else 0.0
            self._idf = np.concatenate(
                [np.full(self.num_oov_indices, mean), idf])
            depth = self._depth()
            if len(self._idf) < depth:
                self._idf = np.concatenate(
                    [self._idf, np.zeros(depth - len(self._idf))])

    def _tensors(self):
        """The sorted keys, their vocabulary positions and (strings) the
        sorted tokens as tensors, made once per vocabulary and outside
        any trace: building a 20k-string constant per call would cost
        more than the lookup."""
        if self._cached is None:
            sk, order, tokens = self._table
            with backend.init_scope():
                self._cached = (tf.constant(sk), tf.constant(order),
                                self._const(tokens) if self._strings
                                else None)
        return self._cached

    def _require_vocab(self):
        if self._vocab is None:
            who = getattr(self, "_owner", type(self).__name__)
            if self.output_mode == "tf_idf":
                raise RuntimeError(
                    f"{who}: When using `output_mode=tf_idf` and "
                    f"`pad_to_max_tokens=False`, you must set the layer's "
                    f"vocabulary before calling it. Either pass a "
                    f"`vocabulary` argument to the layer, or call `adapt` "
                    f"with some sample data.")
            raise ValueError(f"{who} has no vocabulary yet (Keras: 'Table "
                             f"not initialized'): pass `vocabulary` or call "
                             f"adapt() first")

    def get_vocabulary(self, include_special_tokens=True):
        self._require_vocab()
        if not include_special_tokens:
            return list(self._vocab)
        return self._special() + list(self._vocab)

    def vocabulary_size(self):
        n = len(self.get_vocabulary())
        if self.pad_to_max_tokens and self.max_tokens:
            n = max(n, self.max_tokens)
        return n

    def _depth(self):
        """Width of the encoded output: the mask's index is dropped."""
        size = self._token_start() + len(self._vocab)
        if self.pad_to_max_tokens and self.max_tokens:
            size = max(size, self.max_tokens)
        return size - (self.mask_token is not None)

    @property
    def idf_weights(self):
        if self._idf is None:
            return None
        return tf.constant(self._idf.astype(np.float32))

    # ---- adapt -------------------------------------------------------
    def adapt(self, data, steps=None):
        counts = collections.Counter()
        docs = collections.Counter()
        n_docs = 0
        for batch in iter_batches(data, steps):
            rows = self._adapt_rows(batch)
            for row in rows:
                row = [self._token(t) for t in row]
                if self.mask_token is not None:
                    row = [t for t in row if t != self.mask_token]
                counts.update(row)
                docs.update(set(row))
                n_docs += 1
        self._finish_adapt(counts, docs, n_docs)

    def _adapt_rows(self, batch):
        """The documents of one batch, each a list of tokens."""
        batch = np.asarray(batch, dtype=object)
        if batch.ndim <= 1:
            return [[t] for t in batch.reshape(-1)]
        return [list(r.reshape(-1)) for r in batch]

    def _finish_adapt(self, counts, docs, n_docs):
        def rank(t):
            return (counts[t], t.encode("utf-8") if isinstance(t, str)
                    else t)
        tokens = sorted(counts, key=rank, reverse=True)
        if self.max_tokens is not None:
            tokens = tokens[:max(self.max_tokens - self._token_start(), 0)]
        # Keras hands adapted tokens back as NumPy scalars (np.str_,
        # np.int64), so get_vocabulary() prints as TF's does.
        tokens = [np.str_(t) if isinstance(t, str) else np.int64(t)
                  for t in tokens]
        idf = None
        if self.output_mode == "tf_idf":
            idf = np.asarray([math.log(1 + n_docs / (1 + docs[t]))
                              for t in tokens], np.float64)
        self._set(tokens, idf)

    # ---- the lookup --------------------------------------------------
    def _lookup(self, x):
        """Indices (int64) of x's values; x dense or flat."""
        table, order, sorted_tokens = self._tensors()
        v = len(self._table[0])
        keys = self._keys(x)
        start = self._token_start()
        oov_start = start - self.num_oov_indices
        if self.num_oov_indices > 1:
            oov = self._oov_bucket(x) + oov_start
        else:
            oov = tf.zeros_like(keys) + oov_start
        if v:
            pos = tf.zeros_like(keys)
            step = 1 << (v.bit_length() - 1)
            while step:         # pos ends as the count of keys below
                cand = pos + step
                probe = tf.gather(table, tf.minimum(cand, v) - 1)
                pos = tf.where(tf.logical_and(cand <= v, probe < keys),
                               cand, pos)
                step >>= 1
            at = tf.minimum(pos, v - 1)
            found = tf.logical_and(pos < v,
                                   tf.equal(tf.gather(table, at), keys))
            if self._strings:
                found = tf.logical_and(found, tf.equal(
                    tf.gather(sorted_tokens, at), x))
            idx = tf.where(found, tf.gather(order, at) + start, oov)
        else:
            found = tf.zeros_like(keys, dtype=tf.bool)
            idx = oov
        if self.mask_token is not None:
            is_mask = tf.equal(x, self._const([self.mask_token])[0])
            idx = tf.where(is_mask, tf.zeros_like(idx), idx)
            found = tf.logical_or(found, is_mask)
        if self.num_oov_indices == 0:
            self._check_all_found(x, found)
        return idx

    def _check_all_found(self, x, found):
        msg = ("When `num_oov_indices=0` all inputs should be in "
               "vocabulary, found OOV values")
        if _is_symbolic(found):
            tf.debugging.Assert(tf.reduce_all(found), [msg])
            return
        miss = np.logical_not(found.numpy())
        if miss.any():
            bad = np.asarray(x.numpy())[miss].reshape(-1)[:10].tolist()
            raise tf.errors.InvalidArgumentError(
                None, None, f"{type(self).__name__}: {msg} {bad}")

    def _invert(self, ids):
        full = self.get_vocabulary()
        ids = tf.cast(ids, tf.int64)
        # Keras gives the OOV token for any index outside the vocabulary.
        ok = tf.logical_and(ids >= 0, ids < len(full))
        out = tf.gather(self._const(full), tf.where(ok, ids,
                                                    tf.zeros_like(ids)))
        # where() broadcasts the scalar: no shape-dependent fill, so
        # this traces with unknown dims too.
        return tf.where(ok, out, self._const([self.oov_token])[0])

    def _map_values(self, fn, inputs):
        if hasattr(inputs, "flat_values"):
            return inputs.with_flat_values(fn(inputs.flat_values))
        return fn(inputs)

    def call(self, inputs):
        self._require_vocab()
        if not hasattr(inputs, "flat_values") and not isinstance(
                inputs, tf.Tensor):
            inputs = tf.convert_to_tensor(
                inputs, dtype=None if not self._strings or self.invert
                else tf.string)
        if self.invert:
            return self._map_values(self._invert, inputs)
        inputs = self._map_values(self._prepare, inputs)
        idx = self._map_values(self._lookup, inputs)
        if self.output_mode == "int":
            return idx
        if self.mask_token is not None:
            idx = self._map_values(lambda i: i - 1, idx)
        out = encode_ids(idx, self._depth(), self.output_mode, self._idf)
        return tf.sparse.from_dense(out) if self.sparse else out

    def _prepare(self, x):
        return x

    def compute_mask(self, inputs, mask=None):
        if self.output_mode != "int" or self.mask_token is None or \
                self.invert:
            return None
        return tf.not_equal(inputs, self._const([self.mask_token])[0])

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        depth = self._depth() if self._vocab is not None else \
            self.max_tokens
        if self.output_mode == "one_hot" and (not shape or shape[-1] != 1):
            return shape + (depth,)
        return shape[:-1] + (depth,)

    def get_config(self):
        config = super().get_config()
        config.pop("dtype", None)
        # The vocabulary (adapted too) rides in the config: tfmini's
        # .keras files keep no assets, so this is what save/load keeps.
        idf = None
        if self._idf is not None:
            idf = [float(w) for w in
                   self._idf[self.num_oov_indices:
                             self.num_oov_indices + len(self._vocab)]]
        config.update(
            invert=self.invert, max_tokens=self.max_tokens,
            num_oov_indices=self.num_oov_indices,
            oov_token=self.oov_token, mask_token=self.mask_token,
            output_mode=self.output_mode, sparse=self.sparse,
            pad_to_max_tokens=self.pad_to_max_tokens, idf_weights=idf,
            vocabulary=(None if self._vocab is None else
                        [str(t) if isinstance(t, str) else int(t)
                         for t in self._vocab]),
            vocabulary_size=(None if self._vocab is None
                             else self.vocabulary_size()))
        return config


class StringLookup(IndexLookup):
    """Strings to indices through a vocabulary (given, or learned by
    adapt()); invert=True maps indices back to strings."""

    _strings = True

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None,
                 oov_token="[UNK]", vocabulary=None, idf_weights=None,
                 invert=False, output_mode="int", pad_to_max_tokens=False,
                 sparse=False, encoding="utf-8", name=None, **kwargs):
        if encoding not in ("utf-8", "UTF-8", "utf8"):
            raise ValueError(f"tfmini's StringLookup reads UTF-8 only, got "
                             f"encoding={encoding!r}")
        self.encoding = "utf-8"
        for k in ("oov_method", "salt"):
            kwargs.pop(k, None)
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token,
                         vocabulary, idf_weights, invert, output_mode,
                         sparse, pad_to_max_tokens, name=name, **kwargs)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        if isinstance(vocabulary, (str, os.PathLike)):
            # A text file, one token a line, as Keras reads it.
            path = os.fspath(vocabulary)
            if not os.path.isfile(path):
                raise ValueError(f"StringLookup: vocabulary file {path!r} "
                                 f"does not exist")
            with open(path, encoding="utf-8") as f:
                vocabulary = [np.str_(line.rstrip("\n").rstrip("\r"))
                              for line in f]
        super().set_vocabulary(vocabulary, idf_weights)

    def _token(self, t):
        if isinstance(t, (bytes, np.bytes_)):
            return bytes(t).decode("utf-8", "surrogateescape")
        if isinstance(t, (str, np.str_)):
            return str(t)
        raise TypeError(f"StringLookup: tokens must be strings, got "
                        f"{type(t).__name__} {t!r}")

    def _const(self, tokens):
        return tf.constant([t.encode("utf-8", "surrogateescape")
                            for t in tokens], dtype=tf.string)

    def _keys_np(self, tokens):
        if not tokens:
            return np.zeros([0], np.int64)
        return tf.strings.to_hash_bucket_fast(
            self._const(tokens), _KEY_RANGE).numpy()

    def _keys(self, x):
        return tf.strings.to_hash_bucket_fast(x, _KEY_RANGE)

    def _oov_bucket(self, x):
        return tf.strings.to_hash_bucket_fast(x, self.num_oov_indices)

    def _prepare(self, x):
        if x.dtype != tf.string:
            raise TypeError(f"StringLookup: expected string inputs, got "
                            f"{x.dtype.name} of shape {x.shape}")
        return x

    def get_config(self):
        config = super().get_config()
        config.update(encoding=self.encoding)
        return config


class IntegerLookup(IndexLookup):
    """Integers to contiguous indices through a vocabulary (given, or
    learned by adapt()); invert=True maps indices back."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None,
                 oov_token=-1, output_mode="int", sparse=False,
                 vocabulary=None, vocabulary_dtype="int64",
                 idf_weights=None, invert=False, pad_to_max_tokens=False,
                 name=None, **kwargs):
        if vocabulary_dtype not in ("int64", "int32"):
            raise ValueError(f"IntegerLookup: vocabulary_dtype must be "
                             f"'int64' (or 'int32'), got "
                             f"{vocabulary_dtype!r}")
        self.vocabulary_dtype = vocabulary_dtype
        for k in ("oov_method", "salt"):
            kwargs.pop(k, None)
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token,
                         vocabulary, idf_weights, invert, output_mode,
                         sparse, pad_to_max_tokens, name=name, **kwargs)

    def _token(self, t):
        if isinstance(t, (str, bytes, float, np.floating)):
            raise TypeError(f"IntegerLookup: tokens must be integers, got "
                            f"{type(t).__name__} {t!r}")
        return int(t)

    def _const(self, tokens):
        return tf.constant(np.asarray(tokens, np.int64).reshape(-1))

    def _keys_np(self, tokens):
        return np.asarray(tokens, np.int64).reshape(-1)

    def _keys(self, x):
        return x

    def _oov_bucket(self, x):
        return tf.math.floormod(x, tf.constant(self.num_oov_indices,
                                               tf.int64))

    def _prepare(self, x):
        if not x.dtype.is_integer:
            raise TypeError(f"IntegerLookup: expected integer inputs, got "
                            f"{x.dtype.name} of shape {x.shape}")
        return tf.cast(x, tf.int64)

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_dtype=self.vocabulary_dtype)
        return config
