"""keras.layers.TextVectorization: text to token indices or to
multi_hot / count / tf_idf vectors.

The pipeline is Keras 3's: standardize (ASCII lowercasing and/or
stripping ASCII punctuation, or a callable), split (on whitespace, into
UTF-8 characters, or a callable), optional n-grams, then a StringLookup
whose vocabulary is given or learned by adapt(). Everything after adapt
is ops, so the layer runs eagerly, traced (tf.function) and in
tf.data's map; ragged=True returns the token indices as a
RaggedTensor."""
import collections

import numpy as np

import tfmini as tf

from .index_lookup import (StringLookup, TakesAnyInput, iter_batches,
                           pad_rows, positions, row_ids)

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = ("whitespace", "character")
# Keras' DEFAULT_STRIP_REGEX: ASCII punctuation.
_PUNCTUATION = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'


def _ngrams(tokens, widths):
    """Per row, the n-grams of each width in turn, pieces joined by a
    space (tf.strings.ngrams with separator ' ', no padding)."""
    values, splits = tokens.flat_values, tokens.row_splits
    pos = positions(values)
    rows = row_ids(tokens)
    row_end = tf.gather(splits[1:], rows)
    grams, owners, total = [], [], 0
    for n in widths:
        ok = pos + (n - 1) < row_end
        starts = tf.boolean_mask(pos, ok)
        pieces = [tf.gather(values, starts + k) for k in range(n)]
        grams.append(pieces[0] if n == 1 else tf.strings.join(pieces, " "))
        owners.append(tf.boolean_mask(rows, ok))
        total = total + tf.maximum(splits[1:] - splits[:-1] - (n - 1), 0)
    # Each row: its 1-grams, then its 2-grams, ...: a stable sort of
    # the width-ordered pieces by row (a ragged concat along rows does
    # not trace with unknown sizes).
    order = tf.argsort(tf.concat(owners, 0), stable=True)
    return tf.RaggedTensor.from_row_lengths(
        tf.gather(tf.concat(grams, 0), order), total)


class TextVectorization(TakesAnyInput):
    """Maps text to integer sequences (output_mode='int') or to
    per-text vectors over the vocabulary."""

    def __init__(self, max_tokens=None,
                 standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False,
                 vocabulary=None, idf_weights=None, sparse=False,
                 ragged=False, encoding="utf-8", name=None, **kwargs):
        kwargs.pop("dtype", None)
        kwargs.pop("vocabulary_size", None)
        super().__init__(name=name, **kwargs)
        who = "TextVectorization"
        if output_mode not in _MODES:
            raise ValueError(f"Unknown value for `output_mode` argument of "
                             f"{who}. Allowed values are: {_MODES}. "
                             f"Received: output_mode={output_mode}")
        if not (standardize is None or callable(standardize)
                or standardize in _STANDARDIZE):
            raise ValueError(f"Unknown value for `standardize` argument of "
                             f"{who}. Allowed values are: {_STANDARDIZE}. "
                             f"Received: standardize={standardize}")
        if not (split is None or callable(split) or split in _SPLIT):
            raise ValueError(f"Unknown value for `split` argument of "
                             f"{who}. Allowed values are: {_SPLIT}. "
                             f"Received: split={split}")
        if isinstance(ngrams, int) and not isinstance(ngrams, bool):
            widths = tuple(range(1, ngrams + 1))
        elif ngrams is None:
            widths = None
        elif isinstance(ngrams, (list, tuple)) and all(
                isinstance(n, int) and n > 0 for n in ngrams) and ngrams:
            widths = tuple(ngrams)
        else:
            raise ValueError(f"`ngrams` must be None, an integer, or a "
                             f"tuple of integers. Received: ngrams={ngrams}")
        if widths is not None and split is None:
            raise ValueError("`ngrams` needs a `split`: received "
                             "split=None")
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError(f"`output_sequence_length` must not be set if "
                             f"`output_mode` is not 'int'. Received "
                             f"output_sequence_length="
                             f"{output_sequence_length}.")
        if ragged and output_mode != "int":
            raise ValueError(f"`ragged` must not be true if `output_mode` is "
                             f"`'int'`. Received: ragged={ragged} and "
                             f"output_mode={output_mode}")
        if ragged and output_sequence_length is not None:
            raise ValueError(f"`output_sequence_length` must not be set if "
                             f"ragged is True. Received: "
                             f"output_sequence_length="
                             f"{output_sequence_length}")
        self.max_tokens = max_tokens
        self.standardize = standardize
        self.split = split
        self.ngrams = ngrams
        self._widths = widths
        self.output_mode = output_mode
        self.output_sequence_length = output_sequence_length
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.ragged = bool(ragged)
        self.sparse = bool(sparse)
        self.encoding = encoding
        self._keras_autocast = False
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens,
            mask_token="" if output_mode == "int" else None,
            vocabulary=vocabulary, idf_weights=idf_weights,
            output_mode=output_mode, pad_to_max_tokens=pad_to_max_tokens,
            sparse=sparse, encoding=encoding, name=f"{self.name}_lookup")
        self._lookup_layer._owner = who     # errors name the layer used

    # ---- text to tokens ------------------------------------------------
    def _standardize(self, x):
        s = self.standardize
        if s is None:
            return x
        if callable(s):
            return s(x)
        if s in ("lower", "lower_and_strip_punctuation"):
            x = tf.strings.lower(x)
        if s in ("strip_punctuation", "lower_and_strip_punctuation"):
            x = tf.strings.regex_replace(x, _PUNCTUATION, "")
        return x

    def _tokens(self, x):
        """(tokens, scalar): a RaggedTensor [n, None] of tokens (a dense
        [n, 1] one when split is None)."""
        if not isinstance(x, tf.Tensor) and not hasattr(x, "flat_values"):
            x = tf.convert_to_tensor(x, dtype=tf.string)
        if x.dtype != tf.string:
            raise TypeError(f"TextVectorization: expected string inputs, got "
                            f"{x.dtype.name} of shape {x.shape}")
        shape = x._shape_tuple
        scalar = len(shape) == 0
        if scalar:
            x = tf.reshape(x, [1])
        elif len(shape) == 2 and shape[1] == 1:
            x = tf.reshape(x, [-1])
        elif len(shape) != 1:
            raise ValueError(f"TextVectorization: when split is set the "
                             f"input must be a scalar, [batch] or "
                             f"[batch, 1] string tensor; got shape {shape}")
        x = self._standardize(x)
        if self.split is None:
            return tf.reshape(x, [-1, 1]), scalar
        if callable(self.split):
            tokens = self.split(x)
        elif self.split == "whitespace":
            tokens = tf.strings.split(x)
        else:
            tokens = tf.strings.unicode_split(x, "UTF-8")
        if self._widths is not None:
            tokens = _ngrams(tokens, self._widths)
        return tokens, scalar

    # ---- vocabulary ------------------------------------------------------
    def adapt(self, data, batch_size=None, steps=None):
        if hasattr(data, "flat_values") or isinstance(data, (str, bytes)):
            data = [data]

        def docs():
            for batch in iter_batches(data, steps):
                batch = np.asarray(batch, dtype=object).reshape(-1)
                if not len(batch):
                    continue
                tokens, _ = self._tokens(tf.constant(
                    [b if isinstance(b, bytes) else str(b).encode("utf-8")
                     for b in batch], dtype=tf.string))
                if hasattr(tokens, "to_list"):
                    yield from tokens.to_list()
                else:
                    yield from tokens.numpy().tolist()
        lookup = self._lookup_layer
        counts = collections.Counter()
        dfs = collections.Counter()
        n_docs = 0
        for row in docs():
            row = [lookup._token(t) for t in row]
            row = [t for t in row if t != lookup.mask_token]
            counts.update(row)
            dfs.update(set(row))
            n_docs += 1
        lookup._finish_adapt(counts, dfs, n_docs)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    def get_vocabulary(self, include_special_tokens=True):
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    @property
    def idf_weights(self):
        return self._lookup_layer.idf_weights

    # ---- the call --------------------------------------------------------
    def call(self, inputs):
        tokens, scalar = self._tokens(inputs)
        out = self._lookup_layer.call(tokens)
        if self.output_mode != "int":
            if scalar and not self.sparse:
                out = tf.reshape(out, [-1])
            return out
        if self.ragged:
            return out
        if hasattr(out, "flat_values"):
            out = pad_rows(out)
        if self.output_sequence_length is not None:
            out = self._fit_length(out, self.output_sequence_length)
        if scalar:
            out = tf.reshape(out, [-1])
        return out

    @staticmethod
    def _fit_length(x, n):
        """x [batch, width] cut or 0-padded to n columns; the zeros are
        built by broadcasting, which traces with unknown dims."""
        pad = tf.zeros_like(tf.reduce_sum(x, axis=1, keepdims=True)) + \
            tf.zeros([1, n], x.dtype)       # [batch, n], width 0 too
        return tf.concat([x, pad], axis=1)[:, :n]

    def compute_output_shape(self, input_shape):
        batch = tuple(input_shape)[:1] or (None,)
        if self.output_mode == "int":
            return batch + (self.output_sequence_length,)
        depth = (self._lookup_layer._depth()
                 if self._lookup_layer._vocab is not None
                 else self.max_tokens)
        return batch + (depth,)

    def get_config(self):
        config = super().get_config()
        config.pop("dtype", None)
        lookup = self._lookup_layer.get_config()
        standardize, split = self.standardize, self.split
        if callable(standardize) or callable(split):
            # A callable cannot be written to JSON; Keras 3 writes it by
            # registered name, which tfmini's config cannot rebuild.
            standardize = getattr(standardize, "__name__", standardize)
            split = getattr(split, "__name__", split)
        config.update(
            max_tokens=self.max_tokens, standardize=standardize,
            split=split, ngrams=self.ngrams, output_mode=self.output_mode,
            output_sequence_length=self.output_sequence_length,
            pad_to_max_tokens=self.pad_to_max_tokens, sparse=self.sparse,
            ragged=self.ragged, vocabulary=lookup["vocabulary"],
            idf_weights=lookup["idf_weights"], encoding=self.encoding,
            vocabulary_size=lookup["vocabulary_size"])
        return config
