"""tf.io: TFRecord framing (TF's format, checked byte by byte against a
reference CRC32C), Example protos, parsing, gfile, read/write_file."""
import gzip
import struct

import numpy as np
import pytest

import tfmini as tf
from tfmini.io import tfrecord


def _ref_crc32c(data):
    """Bitwise CRC32C (Castagnoli, reflected 0x82F63B78): the reference."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _ref_masked(data):
    c = _ref_crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_matches_reference_and_check_value():
    assert tfrecord.crc32c(b"123456789") == 0xE3069283   # the standard check
    for data in (b"", b"a", bytes(range(256)), b"x" * 1000):
        assert tfrecord.crc32c(data) == _ref_crc32c(data)
        assert tfrecord.masked_crc32c(data) == _ref_masked(data)


def test_record_framing_is_tfs(tmp_path):
    p = tmp_path / "a.tfrecord"
    with tf.io.TFRecordWriter(str(p)) as w:
        w.write(b"hello")
        w.write("")
    raw = p.read_bytes()
    header = struct.pack("<Q", 5)
    assert raw[:8] == header
    assert struct.unpack("<I", raw[8:12])[0] == _ref_masked(header)
    assert raw[12:17] == b"hello"
    assert struct.unpack("<I", raw[17:21])[0] == _ref_masked(b"hello")
    assert len(raw) == 21 + 16
    # Scalar string tensors, as TF's.
    got = list(tf.data.TFRecordDataset(str(p)))
    assert all(r.dtype == tf.string and r.shape == () for r in got)
    assert [r.numpy() for r in got] == [b"hello", b""]


@pytest.mark.parametrize("comp", ["", "GZIP", "ZLIB"])
def test_round_trip_compressed(tmp_path, comp):
    p = str(tmp_path / "r.tfrecord")
    recs = [bytes([i]) * i for i in range(50)]
    with tf.io.TFRecordWriter(p, tf.io.TFRecordOptions(comp)) as w:
        for r in recs:
            w.write(r)
    if comp == "GZIP":
        assert open(p, "rb").read(2) == b"\x1f\x8b"
        gzip.decompress(open(p, "rb").read())
    ds = tf.data.TFRecordDataset([p, p], compression_type=comp)
    assert [r.numpy() for r in ds] == recs + recs


def test_corrupt_records_are_data_loss(tmp_path):
    p = tmp_path / "c.tfrecord"
    with tf.io.TFRecordWriter(str(p)) as w:
        w.write(b"payload")
    good = p.read_bytes()
    bad = bytearray(good)
    bad[14] ^= 1                       # data byte
    p.write_bytes(bytes(bad))
    with pytest.raises(tf.errors.DataLossError, match="data CRC"):
        list(tf.data.TFRecordDataset(str(p)))
    bad = bytearray(good)
    bad[0] ^= 1                        # length byte
    p.write_bytes(bytes(bad))
    with pytest.raises(tf.errors.DataLossError, match="length CRC"):
        list(tf.data.TFRecordDataset(str(p)))
    p.write_bytes(good[:-3])
    with pytest.raises(tf.errors.DataLossError, match="truncated"):
        list(tf.data.TFRecordDataset(str(p)))
    with pytest.raises(tf.errors.NotFoundError):
        list(tf.data.TFRecordDataset(str(tmp_path / "missing")))


def _example(**kw):
    feats = {}
    for k, v in kw.items():
        if v and isinstance(v[0], float):
            feats[k] = tf.train.Feature(float_list=tf.train.FloatList(
                value=v))
        elif v and isinstance(v[0], bytes):
            feats[k] = tf.train.Feature(bytes_list=tf.train.BytesList(
                value=v))
        else:
            feats[k] = tf.train.Feature(int64_list=tf.train.Int64List(
                value=v))
    return tf.train.Example(features=tf.train.Features(feature=feats))


def test_example_wire_format_is_tfs():
    # Bytes of TF's Example for {"a": int64 [1, 2]}, by the schema:
    # Example.features(1) > Features.feature(1) map entry > key(1) "a",
    # value(2) Feature.int64_list(3) > packed value(1) [1, 2].
    s = _example(a=[1, 2]).SerializeToString()
    assert s.hex() == "0a0d" "0a0b" "0a0161" "1206" "1a04" "0a020102"
    assert tf.train.Example.FromString(s) == _example(a=[1, 2])


def test_parse_single_example():
    s = _example(i=[1, 2, 3, 4], f=[0.5, 1.5], b=[b"x"]).SerializeToString()
    out = tf.io.parse_single_example(s, {
        "i": tf.io.FixedLenFeature([2, 2], tf.int64),
        "f": tf.io.FixedLenFeature([2], tf.float32),
        "missing": tf.io.FixedLenFeature([], tf.float32, default_value=7.0),
        "seq": tf.io.FixedLenSequenceFeature([], tf.int64,
                                             allow_missing=True),
    })
    assert out["i"].dtype == tf.int64
    np.testing.assert_array_equal(out["i"].numpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(out["f"].numpy(), [0.5, 1.5])
    assert out["f"].dtype == tf.float32
    assert out["missing"].numpy() == 7.0
    assert out["seq"].shape == (0,)


def test_parse_errors_are_tfs():
    s = _example(i=[1, 2, 3], f=[1.0]).SerializeToString()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="is required but could not be found"):
        tf.io.parse_single_example(s, {"x": tf.io.FixedLenFeature(
            [], tf.int64)})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Data types don't match"):
        tf.io.parse_single_example(s, {"f": tf.io.FixedLenFeature(
            [], tf.int64)})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Can't parse serialized Example"):
        tf.io.parse_single_example(s, {"i": tf.io.FixedLenFeature(
            [2], tf.int64)})
    with pytest.raises(NotImplementedError, match="SparseFeature"):
        tf.io.parse_single_example(s, {"i": tf.io.SparseFeature(
            "i", "f", tf.float32, 4)})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Expected type: float, Actual type: int64"):
        tf.io.parse_single_example(s, {"i": tf.io.VarLenFeature(
            tf.float32)})
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_single_example(b"\xff\xff\xff", {
            "i": tf.io.FixedLenFeature([3], tf.int64)})
    with pytest.raises(TypeError, match="bytes"):
        tf.io.parse_single_example(_example(i=[1]), {
            "i": tf.io.FixedLenFeature([], tf.int64)})


def test_parse_example_batch_and_dataset_pipeline(tmp_path):
    p = str(tmp_path / "ex.tfrecord")
    with tf.io.TFRecordWriter(p) as w:
        for i in range(5):
            w.write(_example(x=[float(i), 2.0 * i], y=[i],
                             s=list(range(i))).SerializeToString())
    spec = {"x": tf.io.FixedLenFeature([2], tf.float32),
            "y": tf.io.FixedLenFeature([], tf.int64),
            "s": tf.io.FixedLenSequenceFeature([], tf.int64,
                                               allow_missing=True)}
    out = tf.io.parse_example(list(tf.data.TFRecordDataset(p)), spec)
    np.testing.assert_array_equal(out["y"].numpy(), np.arange(5))
    assert out["x"].shape == (5, 2)
    np.testing.assert_array_equal(out["s"].numpy()[4], [0, 1, 2, 3])
    np.testing.assert_array_equal(out["s"].numpy()[1], [0, 0, 0, 0])
    ds = tf.data.TFRecordDataset(p).map(
        lambda r: tf.io.parse_single_example(r, {"y": spec["y"]})["y"])
    assert [int(v) for v in ds] == list(range(5))


def test_string_apis_refuse_tracing(tmp_path):
    p = str(tmp_path / "f.tfrecord")
    with tf.io.TFRecordWriter(p) as w:
        w.write(b"a")

    @tf.function
    def f():
        for r in tf.data.TFRecordDataset(p):
            pass
        return tf.constant(1)
    with pytest.raises(NotImplementedError, match="eager iteration"):
        f()

    @tf.function
    def g():
        tf.io.read_file(p)
        return tf.constant(1)
    with pytest.raises(NotImplementedError, match="string dtype"):
        g()


def test_gfile_and_files(tmp_path):
    d = tmp_path / "a" / "b"
    tf.io.gfile.makedirs(str(d))
    assert tf.io.gfile.isdir(str(d))
    f = str(d / "t.txt")
    tf.io.write_file(f, "héllo\nworld\r\n")
    assert tf.io.read_file(f) == "héllo\nworld\r\n".encode()
    with tf.io.gfile.GFile(f) as g:
        assert g.read().startswith("héllo")
    assert tf.io.gfile.exists(f)
    assert tf.io.gfile.glob(str(d / "*.txt")) == [f]
    assert tf.io.gfile.listdir(str(d)) == ["t.txt"]
    assert [x.numpy() for x in tf.data.TextLineDataset(f)] == \
        ["héllo".encode(), b"world"]
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.read_file(str(d / "nope"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.GFile(str(d / "nope"))
    tf.io.gfile.remove(f)
    assert not tf.io.gfile.exists(f)


def test_decode_raw():
    data = np.arange(6, dtype=np.float32).tobytes()
    np.testing.assert_array_equal(
        tf.io.decode_raw(data, tf.float32).numpy(), np.arange(6))
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiple"):
        tf.io.decode_raw(b"abc", tf.int32)


def test_interop_with_tensorboards_record_code(tmp_path):
    # tensorboard ships an independent TFRecord writer and reader (its
    # event files are TFRecord files): each side reads the other's.
    from tensorboard.summary.writer.record_writer import RecordWriter
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
    p = tmp_path / "tb.tfrecord"
    with open(p, "wb") as f:
        w = RecordWriter(f)
        for r in (b"one", b"", b"three" * 100):
            w.write(r)
        w.flush()
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(p))] == \
        [b"one", b"", b"three" * 100]
    q = str(tmp_path / "ours.tfrecord")
    with tf.io.TFRecordWriter(q) as w:
        for r in (b"a", b"bc" * 1000):
            w.write(r)
    reader = pywrap_tensorflow.PyRecordReader_New(q.encode(), 0, b"", None)
    got = []
    while True:
        try:
            reader.GetNext()
        except Exception:
            break
        got.append(reader.record())
    assert got == [b"a", b"bc" * 1000]


@pytest.mark.parametrize("comp", ["", "GZIP", "ZLIB"])
def test_text_lines_compressed(tmp_path, comp):
    import zlib
    text = b"first\nsec\rond\r\n\nlast\r"
    p = tmp_path / "t.txt"
    p.write_bytes({"": text, "GZIP": gzip.compress(text),
                   "ZLIB": zlib.compress(text)}[comp])
    assert [x.numpy() for x in tf.data.TextLineDataset(str(p), comp)] == [
        b"first", b"second", b"", b"last"]
    if comp:
        p.write_bytes(b"not compressed at all")
        with pytest.raises(tf.errors.DataLossError):
            list(tf.data.TextLineDataset(str(p), comp))


# ---- VarLenFeature, RaggedFeature, string features (values from TF 2.21)

def _two_examples():
    e1 = _example(a=[1, 2, 3], s=[b"x", b"yy"], f=[1.5])
    e2 = _example(a=[7], f=[2.5, 3.5])
    return e1.SerializeToString(), e2.SerializeToString()


_VARLEN = {"a": tf.io.VarLenFeature(tf.int64),
           "s": tf.io.VarLenFeature(tf.string),
           "f": tf.io.VarLenFeature(tf.float32)}


def _sp(st):
    return (st.indices.numpy().tolist(), st.values.numpy().tolist(),
            st.dense_shape.numpy().tolist(), st.values.dtype)


def test_varlen_single_example_is_sparse():
    e1, _ = _two_examples()
    p = tf.io.parse_single_example(e1, _VARLEN)
    assert all(isinstance(v, tf.sparse.SparseTensor) for v in p.values())
    assert _sp(p["a"]) == ([[0], [1], [2]], [1, 2, 3], [3], tf.int64)
    assert _sp(p["s"]) == ([[0], [1]], [b"x", b"yy"], [2], tf.string)
    assert _sp(p["f"]) == ([[0]], [1.5], [1], tf.float32)
    assert p["a"].indices.dtype == tf.int64
    assert p["a"].dense_shape.dtype == tf.int64


def test_varlen_batch_is_sparse():
    e1, e2 = _two_examples()
    p = tf.io.parse_example(tf.constant([e1, e2]), _VARLEN)
    assert _sp(p["a"]) == ([[0, 0], [0, 1], [0, 2], [1, 0]], [1, 2, 3, 7],
                           [2, 3], tf.int64)
    assert _sp(p["f"]) == ([[0, 0], [1, 0], [1, 1]], [1.5, 2.5, 3.5],
                           [2, 2], tf.float32)
    assert _sp(p["s"]) == ([[0, 0], [0, 1]], [b"x", b"yy"], [2, 2],
                           tf.string)
    dense = tf.sparse.to_dense(p["a"])
    assert dense.numpy().tolist() == [[1, 2, 3], [7, 0, 0]]


def test_ragged_feature_and_string_fixed_len():
    e1, e2 = _two_examples()
    p = tf.io.parse_example([e1, e2], {
        "a": tf.io.RaggedFeature(tf.int64),
        "s": tf.io.RaggedFeature(tf.string),
        "fx": tf.io.FixedLenFeature([], tf.string, default_value="d")})
    assert isinstance(p["a"], tf.RaggedTensor)
    assert p["a"].to_list() == [[1, 2, 3], [7]]
    assert p["a"].row_splits.dtype == tf.int32      # TF's default
    assert p["s"].to_list() == [[b"x", b"yy"], []]
    assert p["fx"].numpy().tolist() == [b"d", b"d"]
    q = tf.io.parse_single_example(e1, {
        "a": tf.io.RaggedFeature(tf.int64),
        "s": tf.io.FixedLenFeature([2], tf.string)})
    assert isinstance(q["a"], tf.Tensor)
    assert q["a"].numpy().tolist() == [1, 2, 3]
    assert q["s"].numpy().tolist() == [b"x", b"yy"]
    r = tf.io.parse_example([e1, e2], {"v": tf.io.RaggedFeature(
        tf.int64, value_key="a", row_splits_dtype=tf.int64)})
    assert r["v"].row_splits.numpy().tolist() == [0, 3, 4]
    assert r["v"].row_splits.dtype == tf.int64
    assert repr(tf.io.RaggedFeature(tf.int64)).startswith(
        "RaggedFeature(dtype=tf.int64, value_key=None, partitions=()")
    with pytest.raises(NotImplementedError, match="partitions"):
        tf.io.parse_example([e1], {"a": tf.io.RaggedFeature(
            tf.int64, partitions=[tf.io.RaggedFeature.RowLengths("b")])})


def test_parsing_a_non_string_tensor_is_tfs_conversion_error():
    spec = {"a": tf.io.FixedLenFeature((), tf.string)}
    x = tf.constant([[1, 2]])
    with pytest.raises(ValueError) as e:
        tf.io.parse_example(x, spec)
    assert str(e.value) == ("Tensor conversion requested dtype string for "
                            f"Tensor with dtype int32: {x!r}")
    with pytest.raises(ValueError, match="dtype float32"):
        tf.io.parse_single_example(tf.constant(1.5), spec)
