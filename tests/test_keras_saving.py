"""model.save_weights / load_weights: round trip, atomic writes, and
clear errors for truncated, corrupted, foreign or mismatched files."""
import os
import resource
import signal
import struct
import zlib

import numpy as np
import pytest

import tfmini as tf
from tfmini import keras
from tfmini.keras.saving import WeightsFileError, weights_format

L = keras.layers


def make_model(units=8):
    return keras.Sequential([keras.Input((4,)),
                             L.Dense(units, activation="relu"),
                             L.BatchNormalization(),
                             L.Dense(3)])


def test_round_trip(tmp_path):
    tf.random.set_seed(1)
    a = make_model()
    path = tmp_path / "model.weights"
    a.save_weights(path)
    tf.random.set_seed(2)
    b = make_model()
    assert not np.allclose(a.weights[0].numpy(), b.weights[0].numpy())
    b.load_weights(path)
    for wa, wb in zip(a.weights, b.weights):
        np.testing.assert_array_equal(wa.numpy(), wb.numpy())
        assert wa.dtype == wb.dtype
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_format_layout(tmp_path):
    """The bytes follow the layout documented in weights_format.py."""
    path = tmp_path / "w.bin"
    records = [("a/kernel:0", np.arange(6, dtype=np.float32).reshape(2, 3)),
               ("b:0", np.array([7], np.int64)),
               ("flag:0", np.array(True))]
    weights_format.write(path, records)
    data = path.read_bytes()
    assert data[:8] == b"\x89TFMW\r\n\x1a"
    assert struct.unpack_from("<II", data, 8) == (1, 3)
    (name_len,) = struct.unpack_from("<I", data, 16)
    assert data[20:20 + name_len] == b"a/kernel:0"
    code, rank = struct.unpack_from("<BB", data, 20 + name_len)
    assert (weights_format.DTYPES[code], rank) == ("float32", 2)
    assert struct.unpack_from("<2Q", data, 22 + name_len) == (2, 3)
    assert data[-4:] == b"TFMW"
    (crc,) = struct.unpack_from("<I", data, len(data) - 8)
    assert crc == zlib.crc32(data[:-8])
    back = weights_format.read(path)
    assert [n for n, _ in back] == [n for n, _ in records]
    for (_, x), (_, y) in zip(back, records):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype and x.shape == y.shape


def test_truncated_file(tmp_path):
    model = make_model()
    path = tmp_path / "m.weights"
    model.save_weights(path)
    data = path.read_bytes()
    for cut in (4, 12, 30, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(WeightsFileError, match="truncated|magic|"
                                                   "checksum|end"):
            model.load_weights(path)


def test_corrupted_file(tmp_path):
    model = make_model()
    path = tmp_path / "m.weights"
    model.save_weights(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    before = [w.numpy() for w in model.weights]
    with pytest.raises(WeightsFileError, match="checksum mismatch"):
        model.load_weights(path)
    for w, b in zip(model.weights, before):       # nothing was assigned
        np.testing.assert_array_equal(w.numpy(), b)


def test_foreign_file_and_version(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"\x80\x04\x95 pickle-ish bytes")
    with pytest.raises(WeightsFileError, match="not a tfmini weights file"):
        make_model().load_weights(path)
    good = weights_format.encode([("a:0", np.zeros(2, np.float32))])
    bad = bytearray(good)
    bad[8] = 9
    path.write_bytes(bytes(bad))
    with pytest.raises(WeightsFileError, match="version 9"):
        weights_format.read(path)


def test_lying_lengths_are_rejected_before_allocation():
    # A record that claims a huge shape: checksum valid, sizes not.
    body = (b"\x89TFMW\r\n\x1a" + struct.pack("<II", 1, 1) +
            struct.pack("<I", 1) + b"w" + struct.pack("<BB", 1, 2) +
            struct.pack("<2Q", 1 << 40, 1 << 20))
    data = body + struct.pack("<I", zlib.crc32(body)) + b"TFMW"
    with pytest.raises(WeightsFileError, match="bytes of data announced"):
        weights_format.decode(data)


def test_architecture_mismatch(tmp_path):
    path = tmp_path / "m.weights"
    make_model(8).save_weights(path)
    with pytest.raises(ValueError, match="Shape mismatch"):
        make_model(9).load_weights(path)
    other = keras.Sequential([keras.Input((4,)), L.Dense(3)])
    with pytest.raises(ValueError, match="count mismatch"):
        other.load_weights(path)
    unbuilt = keras.Sequential([L.Dense(3)])
    with pytest.raises(ValueError, match="not created its weights"):
        unbuilt.load_weights(path)


def test_load_by_name_and_skip_mismatch(tmp_path):
    keras.backend.clear_session()
    a = make_model()
    path = tmp_path / "m.weights"
    a.save_weights(path)
    keras.backend.clear_session()
    b = make_model(units=9)
    kernel_before = b.layers[0].kernel.numpy()
    b.load_weights(path, skip_mismatch=True)
    # Only the last bias has the same shape in both models.
    np.testing.assert_array_equal(b.layers[2].bias.numpy(),
                                  a.layers[2].bias.numpy())
    np.testing.assert_array_equal(b.layers[0].kernel.numpy(),
                                  kernel_before)
    keras.backend.clear_session()
    c = make_model()
    c.load_weights(path, by_name=True)
    np.testing.assert_array_equal(c.layers[2].bias.numpy(),
                                  a.layers[2].bias.numpy())


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    model = make_model()
    path = tmp_path / "m.weights"
    model.save_weights(path)
    old = path.read_bytes()
    # A write that fails midway (the file size limit: EFBIG, as a full
    # disk would fail it) leaves the old file and no temp file.
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(old) // 2, hard))
    try:
        with pytest.raises(tf.errors.OutOfRangeError, match="too large"):
            model.save_weights(path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert path.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["m.weights"]
    with pytest.raises(FileExistsError):
        model.save_weights(path, overwrite=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model.save_weights(tmp_path / "no" / "dir" / "w")
