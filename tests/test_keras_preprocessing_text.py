"""Keras preprocessing on strings (Hashing, StringLookup, IntegerLookup,
TextVectorization) and tf.strings.to_hash_bucket{,_strong}, against
TF 2.21 (tf.keras = Keras 3).

reference(tf) runs every case with the module it is given. The values
in tests/data/keras_text_tf_2_21.json are what TF 2.21 returned for it;
regenerate them with `python tests/test_keras_preprocessing_text.py
OUT.json` where tensorflow is installed. The tests run the same cases
with tfmini and compare (no TF needed)."""
import json
import os
import sys

import numpy as np
import pytest

_DATA = os.path.join(os.path.dirname(__file__), "data",
                     "keras_text_tf_2_21.json")
_GUIDE = os.path.join(os.path.dirname(__file__), "data",
                      "keras_text_guide_tf_2_21.txt")


def _plain(x, tf_ragged):
    """Nested lists of Python values (strings decoded) from a result."""
    if isinstance(x, tf_ragged):
        return {"ragged": _plain(x.to_list(), tf_ragged)}
    if hasattr(x, "dense_shape"):                   # a SparseTensor
        return {"indices": _plain(x.indices, tf_ragged),
                "values": _plain(x.values, tf_ragged),
                "dense_shape": _plain(x.dense_shape, tf_ragged)}
    if hasattr(x, "numpy"):
        x = x.numpy()
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if isinstance(x, (list, tuple)):
        return [_plain(v, tf_ragged) for v in x]
    if isinstance(x, bytes):
        return x.decode("utf-8")
    if isinstance(x, np.str_):
        return str(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def reference(tf):
    """Every case's result, keyed by name (the JSON's layout)."""
    L = tf.keras.layers
    out = {}

    def val(x):
        return _plain(x, tf.RaggedTensor)

    S = tf.strings
    big = 2 ** 63 - 1
    words = ["", "a", "hello", "world", "The quick brown fox", "x" * 7,
             "y" * 8, "z" * 9, "0123456789abcdef", "é漢字", "a" * 63,
             "b" * 64, "c" * 65, "d" * 200]
    out["words"] = words
    out["hash_fast_1000"] = val(S.to_hash_bucket_fast(words, 1000))
    out["hash_1000"] = val(S.to_hash_bucket(words, 1000))
    out["hash_big"] = val(S.to_hash_bucket(words, big))
    out["strong_1000_k12"] = val(S.to_hash_bucket_strong(words, 1000,
                                                         [1, 2]))
    out["strong_big"] = val(S.to_hash_bucket_strong(
        words, big, [123456789, 987654321]))
    out["strong_big_neg_key"] = val(S.to_hash_bucket_strong(words, big,
                                                            [-5, 7]))

    # Hashing: (name, kwargs, input).
    abcde = [["A"], ["B"], ["C"], ["D"], ["E"]]
    ints = [[1], [2], [3], [-4], [5]]
    cases = [
        ("plain", dict(num_bins=3), abcde),
        ("mask", dict(num_bins=3, mask_value=""),
         [["A"], ["B"], [""], ["C"], ["D"]]),
        ("salt_int", dict(num_bins=3, salt=133), abcde),
        ("salt_pair", dict(num_bins=3, salt=[133, 137]), abcde),
        ("ints", dict(num_bins=3), ints),
        ("ints_salt", dict(num_bins=3, salt=5), ints),
        ("int_mask", dict(num_bins=5, mask_value=0),
         [[0, 1, 2, 3, 4, 5, 6]]),
        ("multi_hot", dict(num_bins=4, output_mode="multi_hot"),
         [["A", "B"], ["C", "D"]]),
        ("count", dict(num_bins=4, output_mode="count"),
         [["A", "A"], ["C", "D"]]),
        ("one_hot", dict(num_bins=4, output_mode="one_hot"),
         ["A", "B", "C"]),
        ("count_1d", dict(num_bins=8, output_mode="count"), [1, 2, 3, 3]),
        ("words_100", dict(num_bins=100), words),
        ("words_100_salt", dict(num_bins=100, salt=[2 ** 40 + 3, -17]),
         words),
    ]
    out["hashing"] = [[n, kw, x, val(L.Hashing(**kw)(tf.constant(x)))]
                      for n, kw, x in cases]

    # StringLookup with a given vocabulary.
    v = ["a", "b", "c", "d"]
    data = [["a", "c", "d"], ["d", "z", "b"]]
    cases = [
        ("int", dict(vocabulary=v), data),
        ("oov2", dict(vocabulary=v, num_oov_indices=2), data),
        ("oov3", dict(vocabulary=v, num_oov_indices=3),
         ["q", "r", "s", "t", "u", "a"]),
        ("mask", dict(vocabulary=v, mask_token=""),
         [["a", "", "d"], ["z", "b", ""]]),
        ("one_hot", dict(vocabulary=v, output_mode="one_hot"),
         ["a", "b", "z"]),
        ("multi_hot", dict(vocabulary=v, output_mode="multi_hot"), data),
        ("count", dict(vocabulary=v, output_mode="count"),
         [["a", "a", "z"]]),
        ("tf_idf", dict(vocabulary=v, output_mode="tf_idf",
                        idf_weights=[0.25, 0.75, 0.6, 0.4]), data),
        ("pad", dict(vocabulary=v, output_mode="multi_hot",
                     pad_to_max_tokens=True, max_tokens=8), data),
        ("mask_multi_hot", dict(vocabulary=["a", "b"], mask_token="",
                                output_mode="multi_hot"), [["a", "", "z"]]),
        ("mask_one_hot", dict(vocabulary=["a", "b"], mask_token="",
                              output_mode="one_hot"), ["a", "", "z"]),
    ]
    out["string_lookup"] = [
        [n, kw, x, val(L.StringLookup(**kw)(tf.constant(x)))]
        for n, kw, x in cases]
    out["string_lookup_invert"] = val(L.StringLookup(
        vocabulary=v, invert=True)(tf.constant([[1, 3, 4], [4, 0, 2],
                                                [5, -1, 0]])))

    # adapt: frequency order, ties, max_tokens, idf.
    cases = [
        ("counts", dict(), list("abbcccdddeee")),
        ("max_tokens", dict(max_tokens=3), list("xyyzzzwww")),
        ("unicode", dict(), ["é", "z", "a", "Z"]),
        ("mask", dict(mask_token="", num_oov_indices=2),
         ["", "", "q", "r", "r"]),
    ]
    res = []
    for n, kw, x in cases:
        layer = L.StringLookup(**kw)
        layer.adapt(tf.constant(x))
        res.append([n, kw, x, val(layer.get_vocabulary())])
    out["string_adapt"] = res
    layer = L.StringLookup(output_mode="tf_idf", max_tokens=3)
    docs = [["a", "b"], ["a", "c"], ["a", "a"], ["d", "d"]]
    layer.adapt(tf.constant(docs))
    out["string_adapt_idf"] = [
        docs, val(layer.get_vocabulary()), val(layer.idf_weights),
        val(layer(tf.constant([["a", "d", "q"]])))]
    layer = L.IntegerLookup()
    layer.adapt([5, 5, 3, 3, 7, 9, 9, 9])
    out["int_adapt"] = val(layer.get_vocabulary())
    layer = L.IntegerLookup(vocabulary=[12, 36, 1138, 42], num_oov_indices=2)
    out["int_oov2"] = val(layer(tf.constant(
        [[12, 1138, 42], [42, 1000, 36], [-7, 13, 1001]])))

    # TextVectorization: (name, kwargs, adapt data, input).
    texts = ["The Brain is wider than the sky", "For put them side by side!",
             "The one the other will contain", "With ease, and You beside."]
    out["texts"] = texts
    abab = ["Ab ab, AB"]
    cases = [
        ("default", dict(), texts, texts + ["the sky is blue"]),
        ("max6_len4", dict(max_tokens=6, output_sequence_length=4), texts,
         texts),
        ("len10", dict(output_sequence_length=10), texts, texts[:1]),
        ("bigrams", dict(ngrams=2), ["a b c", "a b d"], ["a b c d"]),
        ("ngrams_1_3", dict(ngrams=(1, 3), max_tokens=20),
         ["a b c", "a b d"], ["a b c d", "b"]),
        ("multi_hot", dict(output_mode="multi_hot"), texts, texts[:2]),
        ("count", dict(output_mode="count", max_tokens=8), texts,
         texts[:2]),
        ("tf_idf", dict(output_mode="tf_idf", max_tokens=8), texts,
         texts[:2]),
        ("pad_multi_hot", dict(output_mode="multi_hot", max_tokens=10,
                               pad_to_max_tokens=True), ["a b", "c"],
         ["a c q"]),
        ("character", dict(split="character"), ["abca", "bb"], ["abz"]),
        ("no_standardize", dict(standardize=None), abab, ["ab, AB x"]),
        ("lower", dict(standardize="lower"), abab, ["ab, AB x"]),
        ("strip_punctuation", dict(standardize="strip_punctuation"),
         ["Ab ab, AB!"], ["ab AB"]),
        ("punctuation", dict(),
         ["ÉA éa", "Don't stop-me now... [ok] \\ back`q"], ["dont éa"]),
        ("ragged", dict(ragged=True), texts, texts[:2]),
        ("ties", dict(max_tokens=5), ["b a a c c c d d d d"], ["a b c d"]),
    ]
    res = []
    for n, kw, fit, x in cases:
        tv = L.TextVectorization(**kw)
        tv.adapt(fit)
        res.append([n, kw, fit, x, val(tv.get_vocabulary()), val(tv(x))])
    out["text_vectorization"] = res
    tv = L.TextVectorization(output_mode="tf_idf", vocabulary=["a", "b", "c"],
                             idf_weights=[0.5, 0.25, 0.125])
    out["tv_given_idf"] = val(tv(["a b b z z z"]))
    tv = L.TextVectorization(vocabulary=["a b", "b c d"], ngrams=3)
    out["tv_given_ngrams"] = val(tv(["a b c d", "a"]))
    tv = L.TextVectorization(split=None)
    tv.adapt(["a b", "c"])
    out["tv_no_split"] = [val(tv.get_vocabulary()),
                          val(tv(tf.constant([["a b"], ["c"]])))]
    tv = L.TextVectorization(vocabulary=["a", "b"])
    out["tv_scalar"] = val(tv("a b c"))
    ab = tf.constant([["a", "z"], ["b", "b"]])
    out["sparse"] = [
        val(L.StringLookup(vocabulary=["a", "b"], output_mode="multi_hot",
                           sparse=True)(ab)),
        val(L.StringLookup(vocabulary=["a", "b"], output_mode="one_hot",
                           sparse=True)(tf.constant(["a", "z"]))),
        val(L.Hashing(4, output_mode="count", sparse=True)(ab)),
        val(L.TextVectorization(vocabulary=["a", "b"], output_mode="count",
                                sparse=True)(tf.constant(["a z b b"]))),
    ]
    return out


def guide_cells(tf, layers):
    """Cells of TF's "Working with preprocessing layers" guide that use
    these layers (the hashing one on seeded data); they print."""
    data = [
        "ξεῖνος, ἦ τοι μὲν ὄνειροι ἀμήχανοι ἀκριτόμυθοι",
        "γίγνοντ᾽, οὐδέ τι πάντα τελείεται ἀνθρώποισι.",
        "δοιαὶ γάρ τε πύλαι ἀμενηνῶν εἰσὶν ὀνείρων:",
        "αἱ μὲν γὰρ κεράεσσι τετεύχαται, αἱ δ᾽ ἐλέφαντι:",
        "τῶν οἳ μέν κ᾽ ἔλθωσι διὰ πριστοῦ ἐλέφαντος,",
        "οἵ ῥ᾽ ἐλεφαίρονται, ἔπε᾽ ἀκράαντα φέροντες:",
        "οἱ δ᾽ ἐκ ξεστῶν κεράων ἔλθωσι θύραζε,",
        "οἵ ῥ᾽ ἔτυμα κραίνουσι, βροτῶν ὅτε κέν τις ἴδηται.",
    ]
    layer = layers.TextVectorization()
    layer.adapt(data)
    print(layer(data))
    vocab = ["a", "b", "c", "d"]
    data = tf.constant([["a", "c", "d"], ["d", "z", "b"]])
    print(layers.StringLookup(vocabulary=vocab)(data))
    lookup = layers.StringLookup(output_mode="one_hot")
    lookup.adapt(tf.constant([["a"], ["b"], ["c"], ["b"], ["c"], ["a"]]))
    print(lookup(tf.constant([["a"], ["b"], ["c"], ["d"], ["e"], [""]])))
    inverse = layers.StringLookup(vocabulary=vocab, invert=True)
    print(inverse(layers.StringLookup(vocabulary=vocab)(data)))
    adapt_data = tf.constant([
        "The Brain is wider than the Sky",
        "For put them side by side",
        "The one the other will contain",
        "With ease and You beside",
    ])
    for kw in (dict(output_mode="multi_hot"), dict(output_mode="tf_idf"),
               dict(output_mode="int"),
               dict(output_mode="multi_hot", ngrams=2)):
        text_vectorizer = layers.TextVectorization(**kw)
        text_vectorizer.adapt(adapt_data)
        print("Encoded text:\n", text_vectorizer(
            ["The Brain is deeper than the sea"]).numpy())
    data = np.random.default_rng(0).integers(0, 100000, size=(10000, 1))
    hasher = layers.Hashing(num_bins=64, salt=1337)
    encoder = layers.CategoryEncoding(num_tokens=64, output_mode="multi_hot")
    print(encoder(hasher(data)).shape)
    print(hasher(data[:6]).numpy().ravel().tolist())


def _write(path):
    import tensorflow
    with open(path, "w", encoding="utf-8") as f:
        ref = reference(tensorflow)
        f.write("{\n" + ",\n".join(
            f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
            for k, v in ref.items()) + "\n}\n")
    import contextlib
    import io
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        guide_cells(tensorflow, tensorflow.keras.layers)
    with open(_GUIDE, "w", encoding="utf-8") as f:
        f.write(text.getvalue())


if __name__ == "__main__":      # before tfmini's import: runs under TF
    _write(sys.argv[1])     # the guide's output goes to _GUIDE
    sys.exit(0)


# ---- against TF's values ----------------------------------------------

with open(_DATA, encoding="utf-8") as _f:
    _REF = json.load(_f)


def _close(got, want, where):
    """Equal, floats to float32 rounding."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for k in want:
            _close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), \
            f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-6), where
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.fixture(scope="module")
def mine():
    import tfmini
    # Through JSON, as the reference was: tuples become lists.
    return json.loads(json.dumps(reference(tfmini), ensure_ascii=False))


@pytest.mark.parametrize("key", sorted(_REF))
def test_equals_tf(mine, key):
    _close(mine[key], _REF[key], key)


# ---- behaviour beyond the table ---------------------------------------

import tfmini as tf  # noqa: E402

L = tf.keras.layers


def test_to_hash_bucket_strong_errors_and_trace():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Key must have 2 elements"):
        tf.strings.to_hash_bucket_strong(["a"], 10, [1])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="num_buckets must be >= 1"):
        tf.strings.to_hash_bucket_strong(["a"], 0, [1, 2])
    with pytest.raises(TypeError, match="string"):
        tf.strings.to_hash_bucket(tf.constant([1, 2]), 10)
    words = tf.constant([["a", "bc"], ["", "é"]])

    @tf.function
    def f(x):
        return (tf.strings.to_hash_bucket_strong(x, 97, [3, 4]),
                tf.strings.to_hash_bucket(x, 97))
    s, h = f(words)
    np.testing.assert_array_equal(
        s.numpy(), tf.strings.to_hash_bucket_strong(words, 97, [3, 4]))
    np.testing.assert_array_equal(h.numpy(),
                                  tf.strings.to_hash_bucket(words, 97))
    assert s.dtype == tf.int64 and s.shape == (2, 2)


def test_hashing_errors_config_and_trace():
    with pytest.raises(ValueError, match="output_mode"):
        L.Hashing(3, output_mode="bad")
    with pytest.raises(ValueError, match="num_bins"):
        L.Hashing(0)
    with pytest.raises(ValueError, match="salt"):
        L.Hashing(3, salt=[1, 2, 3])
    layer = L.Hashing(7, salt=11, mask_value="m")
    config = layer.get_config()
    assert config["salt"] == [11, 11] and config["num_bins"] == 7
    again = L.Hashing.from_config(config)
    x = tf.constant([["m", "a"], ["b", "m"]])
    np.testing.assert_array_equal(again(x).numpy(), layer(x).numpy())
    assert layer(x).numpy()[0, 0] == 0
    traced = tf.function(lambda t: layer(t))
    np.testing.assert_array_equal(traced(x).numpy(), layer(x).numpy())
    r = layer(tf.ragged.constant([["a", "b", "m"], []]))
    assert isinstance(r, tf.RaggedTensor) and r.to_list()[1] == []


def test_string_lookup_errors():
    with pytest.raises(ValueError, match="output_mode"):
        L.StringLookup(output_mode="bad")
    with pytest.raises(ValueError, match="no vocabulary yet"):
        L.StringLookup()(tf.constant(["a"]))
    with pytest.raises(RuntimeError, match="vocabulary before calling"):
        L.StringLookup(output_mode="tf_idf")(tf.constant(["a"]))
    with pytest.raises(ValueError, match="repeated term"):
        L.StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="reserved mask token"):
        L.StringLookup(vocabulary=["a", ""], mask_token="")
    with pytest.raises(ValueError, match="maximum vocab size"):
        L.StringLookup(vocabulary=["a", "b", "c"], max_tokens=3)
    with pytest.raises(ValueError, match="same length"):
        L.StringLookup(vocabulary=["a", "b"], output_mode="tf_idf",
                       idf_weights=[1.0])
    with pytest.raises(ValueError, match="must be `'int'`"):
        L.StringLookup(vocabulary=["a"], invert=True, output_mode="count")
    with pytest.raises(TypeError, match="string inputs.*int32"):
        L.StringLookup(vocabulary=["a"])(tf.constant([1]))
    strict = L.StringLookup(vocabulary=["a", "b"], num_oov_indices=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="OOV"):
        strict(tf.constant(["a", "q"]))

    @tf.function
    def traced(x):
        return strict(x)
    np.testing.assert_array_equal(traced(tf.constant(["b", "a"])).numpy(),
                                  [1, 0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="OOV"):
        traced(tf.constant(["a", "zz"]))


def test_string_lookup_invert_roundtrip_and_config():
    layer = L.StringLookup(max_tokens=6, mask_token="")
    layer.adapt(tf.constant([["x", "y", "y"], ["z", "z", "z"], ["", "", "w"]]))
    assert layer.get_vocabulary() == ["", "[UNK]", "z", "y", "x", "w"]
    assert layer.vocabulary_size() == 6
    words = tf.constant([["w", "", "q"], ["z", "y", "x"]])
    ids = layer(words)
    inv = L.StringLookup(vocabulary=layer.get_vocabulary(), mask_token="",
                         invert=True)
    assert inv(ids).numpy().tolist() == [[b"w", b"", b"[UNK]"],
                                         [b"z", b"y", b"x"]]
    again = L.StringLookup.from_config(layer.get_config())
    np.testing.assert_array_equal(again(words).numpy(), ids.numpy())
    assert again.get_vocabulary() == layer.get_vocabulary()
    mask = layer.compute_mask(words)
    assert mask.numpy().tolist() == [[True, False, True], [True] * 3]


def test_string_lookup_vocabulary_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\nc\n", encoding="utf-8")
    layer = L.StringLookup(vocabulary=str(path))
    assert layer.get_vocabulary() == ["[UNK]", "a", "b", "c"]
    assert layer(tf.constant(["c", "q"])).numpy().tolist() == [3, 0]
    with pytest.raises(ValueError, match="does not exist"):
        L.StringLookup(vocabulary=str(tmp_path / "none.txt"))


def test_string_lookup_collision_proof():
    # The lookup searches 63-bit hash keys and then compares the
    # strings: words outside the vocabulary never take a vocabulary
    # index, however many there are.
    vocab = [f"w{i}" for i in range(300)]
    layer = L.StringLookup(vocabulary=vocab)
    probe = vocab[::7] + [f"v{i}" for i in range(100)]
    got = layer(tf.constant(probe)).numpy()
    want = [vocab.index(w) + 1 if w in vocab else 0 for w in probe]
    np.testing.assert_array_equal(got, want)


def test_integer_lookup_shared_base():
    layer = L.IntegerLookup(vocabulary=[12, 36, 1138, 42], mask_token=0,
                            output_mode="count")
    got = layer(tf.constant([[12, 0, 7, 12], [42, 42, 36, 0]])).numpy()
    # Indices: 0 mask (dropped), 1 OOV, 2.. the vocabulary.
    np.testing.assert_array_equal(got, [[1, 2, 0, 0, 0], [0, 0, 1, 0, 2]])
    with pytest.raises(TypeError, match="integer inputs"):
        L.IntegerLookup(vocabulary=[1])(tf.constant([1.5]))


def test_sparse_needs_an_encoding():
    with pytest.raises(ValueError, match="`sparse` may only be true"):
        L.StringLookup(vocabulary=["a"], sparse=True)
    with pytest.raises(ValueError, match="`sparse` may only be true"):
        L.Hashing(3, sparse=True)
    layer = L.StringLookup(vocabulary=["a", "b"], output_mode="count",
                           sparse=True)
    traced = tf.function(lambda s: layer(s))
    x = tf.constant([["a", "a", "q"]])
    assert tf.sparse.to_dense(traced(x)).numpy().tolist() == [[1, 2, 0]]


def test_text_vectorization_errors():
    with pytest.raises(ValueError, match="output_mode"):
        L.TextVectorization(output_mode="bad")
    with pytest.raises(ValueError, match="split"):
        L.TextVectorization(split="bad")
    with pytest.raises(ValueError, match="standardize"):
        L.TextVectorization(standardize="upper")
    with pytest.raises(ValueError, match="output_sequence_length"):
        L.TextVectorization(output_mode="multi_hot", output_sequence_length=3)
    with pytest.raises(ValueError, match="ragged"):
        L.TextVectorization(ragged=True, output_mode="count")
    with pytest.raises(ValueError, match="TextVectorization has no vocab"):
        L.TextVectorization()(["a"])
    with pytest.raises(RuntimeError, match="vocabulary before calling"):
        L.TextVectorization(output_mode="tf_idf")(["a"])
    with pytest.raises(TypeError, match="string inputs"):
        L.TextVectorization(vocabulary=["a"])(tf.constant([1.0]))


def test_text_vectorization_dataset_function_and_callables():
    texts = ["Red fish, blue fish.", "One fish two fish", "red RED red"]
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(2)
    layer = L.TextVectorization(output_sequence_length=5)
    layer.adapt(ds)
    # red and fish both 4 times: the larger token first, as Keras.
    assert layer.get_vocabulary()[:4] == ["", "[UNK]", "red", "fish"]
    eager = layer(texts).numpy()
    mapped = np.concatenate([b.numpy() for b in ds.map(layer)])
    np.testing.assert_array_equal(mapped, eager)
    traced = tf.function(lambda t: layer(t))
    np.testing.assert_array_equal(traced(tf.constant(texts)).numpy(), eager)
    assert eager.shape == (3, 5)
    first = L.TextVectorization()
    first.adapt(ds, steps=1)        # the first batch only
    # fish 4 times, red once there; over all batches red ties fish.
    assert first.get_vocabulary()[2:4] == ["fish", "two"]
    # adapt from an array, and callables for standardize and split.
    custom = L.TextVectorization(
        standardize=lambda x: tf.strings.upper(x),
        split=lambda x: tf.strings.split(x, "-"))
    custom.adapt(np.array(["a-b-b", "c-b"]))
    assert custom.get_vocabulary() == ["", "[UNK]", "B", "C", "A"]
    np.testing.assert_array_equal(custom(["b-a-q"]).numpy(), [[2, 4, 1]])


def _synthetic_reviews(n, seed=0):
    rng = np.random.default_rng(seed)
    good, bad = ["good", "great", "superb"], ["bad", "awful", "dull"]
    filler = ["the", "movie", "was", "a", "plot", "and"]
    labels = rng.integers(0, 2, n)
    texts = []
    for y in labels:
        words = list(rng.choice(filler, 4)) + list(
            rng.choice(good if y else bad, 2))
        rng.shuffle(words)
        texts.append(" ".join(words).capitalize() + "!")
    return texts, labels.astype(np.float32)


def test_basic_text_classification_flow(tmp_path):
    """TF's "basic text classification" tutorial on synthetic reviews:
    vectorize in tf.data's map, train, then export a model that takes
    raw strings; a functional model with the layer saves and loads."""
    keras = tf.keras
    texts, labels = _synthetic_reviews(160)
    raw = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(32)
    vec = L.TextVectorization(max_tokens=30, output_sequence_length=8)
    vec.adapt(raw.map(lambda x, y: x))

    def vectorize_text(text, label):
        return vec(tf.expand_dims(text, -1)), label
    model = keras.Sequential([L.Embedding(31, 8),
                              L.GlobalAveragePooling1D(), L.Dense(1)])
    model.compile(loss=keras.losses.BinaryCrossentropy(from_logits=True),
                  optimizer=keras.optimizers.Adam(0.05),
                  metrics=["accuracy"])
    hist = model.fit(raw.map(vectorize_text), epochs=8, verbose=0)
    assert hist.history["accuracy"][-1] > 0.95
    export = keras.Sequential([vec, model, L.Activation("sigmoid")])
    export.compile(loss=keras.losses.BinaryCrossentropy(),
                   optimizer="adam", metrics=["accuracy"])
    loss, acc = export.evaluate(raw, verbose=0)
    assert acc > 0.95
    p = export.predict(tf.constant(["Great superb movie",
                                    "awful dull plot"]), verbose=0)
    assert p[0, 0] > 0.5 > p[1, 0]

    inp = keras.Input(shape=(1,), dtype="string")
    x = vec(inp)
    x = L.Embedding(31, 4)(x)
    out = L.Dense(1)(L.GlobalAveragePooling1D()(x))
    fm = keras.Model(inp, out)
    probe = tf.constant([["good movie"], ["dull plot and"]])
    path = str(tmp_path / "text.keras")
    fm.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(probe, verbose=0),
                               fm.predict(probe, verbose=0), rtol=1e-6)
    assert loaded.layers[1].get_vocabulary() == vec.get_vocabulary()


def test_preprocessing_guide_cells(capsys):
    """The guide's cells print exactly what TF 2.21 printed."""
    guide_cells(tf, L)
    with open(_GUIDE, encoding="utf-8") as f:
        want = f.read()
    got = capsys.readouterr().out
    assert got.splitlines() == want.splitlines()


def _same(a, b):
    def plain(x):
        return x.to_list() if hasattr(x, "to_list") else x.numpy().tolist()
    assert plain(a) == plain(b)


@pytest.mark.parametrize("kw", [
    dict(), dict(output_sequence_length=4), dict(output_mode="multi_hot"),
    dict(output_mode="tf_idf"), dict(ngrams=2), dict(ngrams=(1, 3)),
    dict(ragged=True), dict(split="character", output_mode="count"),
    dict(split=None, output_sequence_length=2)])
def test_text_vectorization_traced_unknown_batch(kw):
    """Traced with an unknown batch (a [None] signature) and mapped over
    a dataset, every mode gives the eager values."""
    texts = ["Red fish, blue fish.", "One fish two fish", "red RED red", ""]
    layer = L.TextVectorization(**kw)
    layer.adapt(texts)
    f = tf.function(lambda s: layer(s),
                    input_signature=[tf.TensorSpec([None], tf.string)])
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(2)
    for part, mapped in zip((texts[:2], texts[2:]), ds.map(layer)):
        eager = layer(part)
        _same(f(tf.constant(part)), eager)
        _same(mapped, eager)


@pytest.mark.parametrize("mode", ["int", "multi_hot", "count", "one_hot"])
def test_lookup_and_hashing_traced(mode):
    x = tf.constant([["a", "b"], ["b", "zz"]])
    spec = [tf.TensorSpec([None, None], tf.string)]
    for layer in (L.StringLookup(vocabulary=["a", "b"], output_mode=mode),
                  L.Hashing(5, output_mode=mode)):
        if mode == "one_hot":
            x1 = tf.reshape(x, [-1])
            f = tf.function(lambda s: layer(s),
                            input_signature=[tf.TensorSpec([None],
                                                           tf.string)])
            _same(f(x1), layer(x1))
            continue
        f = tf.function(lambda s: layer(s), input_signature=spec)
        _same(f(x), layer(x))
        _same(tf.function(lambda s: layer(s))(x), layer(x))   # known


def test_row_ids_matches_value_rowids():
    from tfmini.keras.layers.index_lookup import row_ids
    for rows in ([[1, 2], [], [3], [], [4, 5, 6]], [[]], [[1]],
                 [[], [], [7, 8]], [[1, 2, 3]] * 5 + [[]] * 3 + [[4]]):
        r = tf.ragged.constant(rows, dtype=tf.int64)
        assert row_ids(r).numpy().tolist() == \
            r.value_rowids().numpy().tolist(), rows


def test_saved_model_serves_raw_strings(tmp_path):
    """A model from raw text to a score saves as a SavedModel whose
    serving signature takes strings (StringToHashBucketFast and the
    vocabulary constants travel in the graph); multi_hot int64 feeds a
    Dense as in Keras."""
    keras = tf.keras
    vec = L.TextVectorization(max_tokens=20, output_sequence_length=4)
    vec.adapt(["a b c", "b c d"])
    inp = keras.Input(shape=(1,), dtype="string")
    x = L.Embedding(21, 2)(vec(inp))
    hot = L.StringLookup(vocabulary=["a", "b"], output_mode="multi_hot")
    out = L.Dense(1)(L.GlobalAveragePooling1D()(x))
    model = keras.Model(inp, out)
    tf.saved_model.save(model, str(tmp_path))
    serve = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    x = tf.constant([["a b"], ["d q z"]])
    np.testing.assert_allclose(serve(inputs=x)["output_0"].numpy(),
                               model(x).numpy(), rtol=1e-6)
    dense = keras.Sequential([hot, L.Dense(2)])
    assert dense(tf.constant([["a", "b"], ["q", "a"]])).shape == (2, 2)
