"""tf.data additions, against the outputs TF documents for them."""
import threading
import time

import numpy as np
import pytest

import tfmini as tf


def _list(ds):
    return [np.asarray(x).tolist() for x in ds.as_numpy_iterator()]


def test_interleave_documented_order():
    ds = tf.data.Dataset.range(1, 6).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
        cycle_length=2, block_length=4)
    assert _list(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 3, 3, 3, 3, 2, 2, 4,
                         4, 4, 4, 3, 3, 5, 5, 5, 5, 4, 4, 5, 5]
    ds = tf.data.Dataset.range(1, 4).interleave(
        lambda x: tf.data.Dataset.range(x), cycle_length=3)
    assert _list(ds) == [0, 0, 0, 1, 1, 2]


def test_window_documented():
    ds = tf.data.Dataset.range(7)
    ws = [_list(w) for w in ds.window(3)]
    assert ws == [[0, 1, 2], [3, 4, 5], [6]]
    ws = [_list(w) for w in ds.window(3, shift=2, drop_remainder=True)]
    assert ws == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    ws = [_list(w) for w in ds.window(3, shift=1, stride=2,
                                      drop_remainder=True)]
    assert ws == [[0, 2, 4], [1, 3, 5], [2, 4, 6]]
    pairs = tf.data.Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6]))
    w = next(iter(pairs.window(2)))
    assert isinstance(w, tuple) and isinstance(w[0], tf.data.Dataset)
    assert _list(w[1]) == [4, 5]
    flat = ds.window(3, drop_remainder=True).flat_map(lambda w: w.batch(3))
    assert _list(flat) == [[0, 1, 2], [3, 4, 5]]


def test_padded_batch_documented():
    ds = tf.data.Dataset.range(1, 5).map(lambda x: tf.fill([x], x))
    assert _list(ds.padded_batch(2)) == [[[1, 0], [2, 2]],
                                         [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert _list(ds.padded_batch(2, padded_shapes=5)) == [
        [[1, 0, 0, 0, 0], [2, 2, 0, 0, 0]],
        [[3, 3, 3, 0, 0], [4, 4, 4, 4, 0]]]
    assert _list(ds.padded_batch(2, padded_shapes=[None],
                                 padding_values=tf.constant(-1, tf.int64))) \
        == [[[1, -1], [2, 2]], [[3, 3, 3, -1], [4, 4, 4, 4]]]
    tup = tf.data.Dataset.zip((ds, ds.map(lambda x: x[0])))
    out = list(tup.padded_batch(3, padded_shapes=([4], []),
                                drop_remainder=True))
    assert len(out) == 1 and out[0][0].shape == (3, 4)
    assert out[0][1].shape == (3,)
    with pytest.raises(ValueError, match="larger"):
        list(ds.padded_batch(2, padded_shapes=[2]))


def test_unbatch_take_while_enumerate_zip_apply():
    ds = tf.data.Dataset.from_tensor_slices(
        {"a": [[1, 2], [3, 4]], "b": [[5, 6], [7, 8]]}).unbatch()
    assert [(int(e["a"]), int(e["b"])) for e in ds] == [
        (1, 5), (2, 6), (3, 7), (4, 8)]
    r = tf.data.Dataset.range(10)
    assert _list(r.take_while(lambda x: x < 5)) == [0, 1, 2, 3, 4]
    assert [(int(i), int(x)) for i, x in r.take(2).enumerate(5)] == [
        (5, 0), (6, 1)]
    z = tf.data.Dataset.zip((r, r.map(lambda x: x * 2)))
    assert [(int(a), int(b)) for a, b in z.take(2)] == [(0, 0), (1, 2)]
    assert _list(r.apply(lambda d: d.filter(lambda x: x % 3 == 0))) == [
        0, 3, 6, 9]
    with pytest.raises(TypeError, match="Dataset"):
        r.apply(lambda d: 1)


def test_from_generator_signature_and_errors():
    def gen(n):
        for i in range(int(n)):
            yield i, [1.0] * i
    ds = tf.data.Dataset.from_generator(
        gen, args=(3,), output_signature=(
            tf.TensorSpec((), tf.int32), tf.TensorSpec((None,), tf.float32)))
    assert ds.element_spec[1].shape.as_list() == [None]
    out = list(ds)
    assert out[2][0].dtype == tf.int32 and out[2][1].dtype == tf.float32
    assert out[2][1].numpy().tolist() == [1.0, 1.0]
    assert len(list(ds)) == 3                    # each pass calls it again
    bad = tf.data.Dataset.from_generator(
        lambda: iter([[1, 2, 3]]),
        output_signature=tf.TensorSpec((2,), tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        list(bad)
    with pytest.raises(TypeError, match="output_signature"):
        tf.data.Dataset.from_generator(lambda: iter([1]))
    old = tf.data.Dataset.from_generator(lambda: iter([1, 2]),
                                         output_types=tf.int64,
                                         output_shapes=())
    assert [x.dtype for x in old] == [tf.int64, tf.int64]


def test_prefetch_runs_ahead_on_a_thread():
    seen = []

    def gen():
        for i in range(5):
            seen.append((i, threading.get_ident()))
            yield i
    ds = tf.data.Dataset.from_generator(
        gen, output_signature=tf.TensorSpec((), tf.int32)).prefetch(3)
    it = iter(ds)
    assert int(next(it)) == 0
    deadline = time.time() + 5
    while len(seen) < 4 and time.time() < deadline:
        time.sleep(0.01)
    assert len(seen) >= 4              # produced ahead of the consumer
    assert seen[0][1] != threading.get_ident()
    assert [int(x) for x in it] == [1, 2, 3, 4]
    assert _list(tf.data.Dataset.range(20).prefetch(tf.data.AUTOTUNE)) == \
        list(range(20))

    def boom():
        yield 1
        raise RuntimeError("source failed")
    bad = tf.data.Dataset.from_generator(
        boom, output_signature=tf.TensorSpec((), tf.int32)).prefetch(2)
    with pytest.raises(RuntimeError, match="source failed"):
        list(bad)


def test_cache_memory_and_file(tmp_path):
    calls = []

    def gen():
        for i in range(4):
            calls.append(i)
            yield i, {"sq": i * i}
    sig = (tf.TensorSpec((), tf.int64), {"sq": tf.TensorSpec((), tf.int64)})
    ds = tf.data.Dataset.from_generator(gen, output_signature=sig).cache()
    first = [(int(a), int(b["sq"])) for a, b in ds]
    assert [(int(a), int(b["sq"])) for a, b in ds] == first
    assert len(calls) == 4                       # read once
    calls.clear()
    partial = tf.data.Dataset.from_generator(
        gen, output_signature=sig).cache()
    next(iter(partial))
    assert len(list(partial)) == 4               # a stopped pass kept nothing
    calls.clear()
    fname = str(tmp_path / "c")
    fds = tf.data.Dataset.from_generator(
        gen, output_signature=sig).cache(fname)
    assert [(int(a), int(b["sq"])) for a, b in fds] == first
    calls.clear()
    again = tf.data.Dataset.from_generator(
        gen, output_signature=sig).cache(fname)  # a later program
    assert [(int(a), int(b["sq"])) for a, b in again] == first
    assert calls == []


def test_batch_element_spec():
    r = tf.data.Dataset.range(5)
    assert r.batch(2).element_spec.shape.as_list() == [None]
    assert r.batch(2, drop_remainder=True).element_spec.shape.as_list() \
        == [2]


def test_new_transforms_inside_tf_function():
    ds = tf.data.Dataset.range(1, 4).map(lambda x: tf.fill([x], x)) \
        .padded_batch(3).unbatch().prefetch(2)

    @tf.function
    def total():
        s = tf.constant(0, tf.int64)
        for row in ds:
            s += tf.reduce_sum(row)
        return s
    assert int(total()) == 1 + 4 + 9


def test_zip_structures():
    a, b = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)
    assert [(int(x), int(y)) for x, y in tf.data.Dataset.zip(a, b)] == [
        (0, 10), (1, 11)]
    d = tf.data.Dataset.zip({"x": a, "y": (b, a)})
    e = next(iter(d))
    assert int(e["x"]) == 0 and int(e["y"][0]) == 10
    with pytest.raises(TypeError):
        tf.data.Dataset.zip((a, 1))


def test_cache_file_keeps_binary_records(tmp_path):
    p = str(tmp_path / "r.tfrecord")
    recs = [b"a\x00", b"\x00\x00", b"", b"z"]
    with tf.io.TFRecordWriter(p) as w:
        for r in recs:
            w.write(r)
    fname = str(tmp_path / "cache")
    for _ in range(2):      # writes the cache, then reads it
        got = list(tf.data.TFRecordDataset(p).cache(fname))
        assert [r.numpy() for r in got] == recs
        assert all(r.dtype == tf.string for r in got)


def test_concatenate_shard_reduce():
    a, b = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)
    c = a.concatenate(b)
    assert _list(c) == [0, 1, 2, 10, 11] and len(c) == 5
    s = tf.data.Dataset.range(10).shard(3, 1)
    assert _list(s) == [1, 4, 7] and len(s) == 3
    total = tf.data.Dataset.range(5).reduce(
        tf.constant(0, tf.int64), lambda acc, x: acc + x)
    assert int(total) == 10
    with pytest.raises(ValueError):
        a.shard(2, 2)


def test_records_batch_and_pad_as_strings(tmp_path):
    p = str(tmp_path / "x.tfrecord")
    with tf.io.TFRecordWriter(p) as w:
        w.write(b"a")
        w.write(b"b\x00")
    (got,) = list(tf.data.TFRecordDataset(p).batch(2))
    assert got.dtype == tf.string and got.numpy().tolist() == [b"a", b"b\x00"]
    (got,) = list(tf.data.TFRecordDataset(p).padded_batch(2))
    assert got.numpy().tolist() == [b"a", b"b\x00"]
    # String vectors pad with b"" (TF's), or the padding value given.
    ds = tf.data.Dataset.from_tensor_slices([0, 1, 2]).map(
        lambda n: tf.fill([n + 1], "x"))
    (got,) = list(ds.padded_batch(3))
    assert got.numpy().tolist() == [[b"x", b"", b""], [b"x", b"x", b""],
                                    [b"x", b"x", b"x"]]
    got = next(iter(ds.padded_batch(2, padding_values="-")))
    assert got.numpy().tolist() == [[b"x", b"-"], [b"x", b"x"]]


def test_dataset_repr_names_tfs_class_and_element_spec():
    # TF 2.21's reprs.
    d = tf.data.Dataset.range(5)
    spec = "TensorSpec(shape=(), dtype=tf.int64, name=None)"
    assert repr(d) == f"<_RangeDataset element_spec={spec}>"
    assert repr(d.map(lambda x: x)) == f"<_MapDataset element_spec={spec}>"
    assert repr(d.map(lambda x: x, num_parallel_calls=2)) == \
        f"<_ParallelMapDataset element_spec={spec}>"
    assert repr(d.batch(2)) == ("<_BatchDataset element_spec=TensorSpec("
                                "shape=(None,), dtype=tf.int64, name=None)>")
    assert repr(d.enumerate()) == \
        f"<_ZipDataset element_spec=({spec}, {spec})>"
    s = tf.data.Dataset.from_tensor_slices(tf.constant([[1, 2]]))
    assert repr(s) == ("<_TensorSliceDataset element_spec=TensorSpec("
                       "shape=(2,), dtype=tf.int32, name=None)>")
    assert repr(s.batch(1, drop_remainder=True)).startswith(
        "<_BatchDataset element_spec=TensorSpec(shape=(1, 2)")
    assert repr(d.cache()) == f"<CacheDataset element_spec={spec}>"
    assert [repr(w) for w in d.window(2).take(1)] == \
        [f"<_VariantDataset element_spec={spec}>"]


def test_choose_from_datasets_stops_as_tf():
    a, b = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)
    c = tf.data.Dataset.from_tensor_slices(
        tf.constant([0, 1, 1, 1, 0], tf.int64))
    ch = tf.data.Dataset.choose_from_datasets
    assert list(ch([a, b], c).as_numpy_iterator()) == [0, 10, 11]
    assert list(ch([a, b], c, stop_on_empty_dataset=False)
                .as_numpy_iterator()) == [0, 10, 11, 1]
    bad = tf.data.Dataset.from_tensor_slices(tf.constant([2], tf.int64))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Selector index out of range: 2 >= 2"):
        list(ch([a, b], bad))
    with pytest.raises(TypeError, match="scalar `tf.int64`"):
        ch([a, b], tf.data.Dataset.from_tensor_slices([1]))


def test_sample_from_datasets_takes_every_element_by_weight():
    a, b = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)
    s = tf.data.Dataset.sample_from_datasets([a, b], seed=1)
    assert sorted(s.as_numpy_iterator()) == [0, 1, 2, 10, 11]
    assert list(tf.data.Dataset.sample_from_datasets(
        [a, b], [1.0, 0.0]).as_numpy_iterator()) == [0, 1, 2]
    once = list(tf.data.Dataset.sample_from_datasets(
        [a, b], seed=3, stop_on_empty_dataset=True).as_numpy_iterator())
    # It ends when it draws from an exhausted dataset: after 2 (b twice,
    # then b again) to all 5 elements, as the global seed decides; each
    # dataset's elements come in their order.
    assert 2 <= len(once) <= 5
    from_a = [x for x in once if x < 10]
    from_b = [x for x in once if x >= 10]
    assert from_a == [0, 1, 2][:len(from_a)]
    assert from_b == [10, 11][:len(from_b)]
    with pytest.raises(ValueError, match="same length as `datasets`"):
        tf.data.Dataset.sample_from_datasets([a, b], [0.5])


def test_list_files_globs_sorted_or_shuffled(tmp_path):
    for n in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / n).write_text("x")
    lf = tf.data.Dataset.list_files
    plain = lf(str(tmp_path / "*.txt"), shuffle=False)
    assert repr(plain) == ("<_TensorSliceDataset element_spec=TensorSpec("
                           "shape=(), dtype=tf.string, name=None)>")
    assert repr(lf(str(tmp_path / "*.txt"))).startswith("<_ShuffleDataset")
    got = list(plain.as_numpy_iterator())
    assert got == [str(tmp_path / n).encode() for n in ("a.txt", "b.txt")]
    both = lf([str(tmp_path / "*.txt"), str(tmp_path / "*.csv")], seed=2)
    assert sorted(both.as_numpy_iterator()) == \
        sorted(str(tmp_path / n).encode() for n in ("a.txt", "b.txt",
                                                   "c.csv"))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="No files matched pattern"):
        lf(str(tmp_path / "*.png"))


def _csv(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_csv_dataset_reads_typed_records_as_tf(tmp_path):
    # Values and error texts from TF 2.21.
    f = _csv(tmp_path, "f.csv", 'a,b,c,d\n1,2.5,x,"q,r"\n,3.0,,s\n4,,y,t\n')
    Csv = tf.data.experimental.CsvDataset
    d = Csv(f, [-1, 0.5, "zz", "w"], header=True)
    assert repr(d).startswith("<CsvDatasetV2 element_spec=(TensorSpec("
                              "shape=(), dtype=tf.int32, name=None), ")
    got = [[x.numpy() for x in r] for r in d]
    assert got == [[1, 2.5, b"x", b"q,r"], [-1, 3.0, b"zz", b"s"],
                   [4, 0.5, b"y", b"t"]]
    assert [r[0].dtype for r in d][0] == tf.int32
    sel = Csv(f, [0.5, "w"], header=True, select_cols=[1, 3])
    assert [[x.numpy() for x in r] for r in sel] == \
        [[2.5, b"q,r"], [3.0, b"s"], [0.5, b"t"]]
    na = Csv(f, ["a", "b", "c", "d"], na_value="x")
    assert [x.numpy() for x in list(na)[1]] == [b"1", b"2.5", b"c", b"q,r"]
    req = Csv(f, [tf.int64, tf.float64], header=True, exclude_cols=[2, 3])
    assert req.element_spec[1].dtype == tf.float64
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="^Field 0 is required but missing in record!$"):
        list(req)


def test_csv_dataset_errors_are_tfs(tmp_path):
    Csv = tf.data.experimental.CsvDataset
    bad = _csv(tmp_path, "bad.csv", "1,abc\n")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="^Field 1 in record is not a valid int32: abc$"):
        list(Csv(bad, [0, 0]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="not a valid float: abc"):
        list(Csv(bad, [0, 0.0, 0]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="^Expect 2 fields but have 1 in record$"):
        list(Csv(_csv(tmp_path, "s.csv", "1\n"), [0, 0]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="select_cols should match output size"):
        Csv(bad, [0, 0, 0], select_cols=[1, 0])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="strictly increasing"):
        Csv(bad, [0, 0], select_cols=[1, 0])
    with pytest.raises(tf.errors.NotFoundError,
                       match="missing.csv; No such file or directory"):
        list(Csv(str(tmp_path / "missing.csv"), [0]))


def test_make_csv_dataset_infers_types_and_splits_the_label(tmp_path):
    f = _csv(tmp_path, "t.csv",
             "survived,sex,age,fare,class\n0,male,22.0,7.25,Third\n"
             "1,female,38.0,71.2833,First\n1,female,26.0,7.925,Third\n"
             "1,female,35,53.1,First\n0,male,,8.05,Third\n")
    mk = tf.data.experimental.make_csv_dataset
    d = mk(f, batch_size=2, label_name="survived", shuffle=False,
           num_epochs=1)
    # TF 2.21's repr.
    assert repr(d) == (
        "<_PrefetchDataset element_spec=(OrderedDict([('sex', TensorSpec("
        "shape=(None,), dtype=tf.string, name=None)), ('age', TensorSpec("
        "shape=(None,), dtype=tf.float32, name=None)), ('fare', TensorSpec("
        "shape=(None,), dtype=tf.float32, name=None)), ('class', TensorSpec("
        "shape=(None,), dtype=tf.string, name=None))]), TensorSpec(shape=("
        "None,), dtype=tf.int32, name=None))>")
    feats, label = next(iter(d))
    assert list(feats) == ["sex", "age", "fare", "class"]
    assert label.numpy().tolist() == [0, 1]
    assert feats["sex"].numpy().tolist() == [b"male", b"female"]
    sel = mk(f, batch_size=2, select_columns=["class", "fare", "survived"],
             shuffle=False, num_epochs=1)
    assert list(sel.element_spec) == ["survived", "fare", "class"]
    ages = mk(f, batch_size=4, label_name="age", shuffle=False,
              num_epochs=1, column_defaults=[0, "x", 0.0, 0.0, "y"])
    assert [lab.numpy().tolist() for _, lab in ages] == \
        [[22.0, 38.0, 26.0, 35.0], [0.0]]
    assert int(mk(f, batch_size=2).cardinality()) == -1    # repeats
    with pytest.raises(ValueError, match="must be one of the columns"):
        mk(f, batch_size=2, label_name="nope")


def test_map_element_spec_is_traced_not_read(tmp_path):
    # As TF: the function is traced on the source's spec, so a None
    # dimension stays None and nothing is read (the file is missing).
    d = tf.data.Dataset.range(5).batch(2).map(lambda x: x * 2)
    assert repr(d.element_spec) == \
        "TensorSpec(shape=(None,), dtype=tf.int64, name=None)"
    csv = tf.data.experimental.CsvDataset(str(tmp_path / "missing.csv"),
                                          [999] * 4)
    m = csv.map(lambda *items: tf.stack(items))
    assert repr(m) == ("<_MapDataset element_spec=TensorSpec(shape=(4,), "
                       "dtype=tf.int32, name=None)>")
    # A function that needs eager values: the first element tells.
    e = tf.data.Dataset.range(3).map(lambda x: x.numpy() + 1)
    assert e.element_spec.dtype == tf.int64
    assert list(e.as_numpy_iterator()) == [1, 2, 3]


def test_repr_of_a_shuffled_pipeline_reads_nothing():
    read = []

    def gen():
        for i in range(1000):
            read.append(i)
            yield i
    ds = tf.data.Dataset.from_generator(
        gen, output_signature=tf.TensorSpec((), tf.int64))
    s = ds.shuffle(500).repeat().take(3).prefetch(2)
    assert repr(s) == ("<_PrefetchDataset element_spec=TensorSpec(shape=(), "
                       "dtype=tf.int64, name=None)>")
    assert read == []
    empty = tf.data.Dataset.range(5).filter(lambda x: x > 10)
    assert empty.element_spec.dtype == tf.int64      # no element needed


def test_csv_fields_split_by_tfs_quote_rules(tmp_path):
    from tfmini.data.csv_dataset import split_record
    # TF 2.21 reads this line as these five fields.
    assert split_record(b'a,"b,""c",,d,', b",", True) == \
        [b"a", b'b,"c', b"", b"d", b""]
    assert split_record(b'a"b', b",", False) == [b'a"b']
    Csv = tf.data.experimental.CsvDataset
    for text, msg in (('"ab\n', "without closing quoted field"),
                      ('1,x"y\n', "Unquoted fields cannot have quotes")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
            list(Csv(_csv(tmp_path, "q.csv", text), ["", ""]))
