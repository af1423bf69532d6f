"""The weights file of model.save_weights / load_weights.

A small, self-describing binary format that needs no pickle and runs no
code when read. All integers are little-endian.

    offset  size  field
    0       8     magic: 89 54 46 4D 57 0D 0A 1A  ("\\x89TFMW\\r\\n\\x1a";
                  the high byte and CR LF catch text-mode and 7-bit
                  mangling, like PNG's signature)
    8       4     u32 format version (1)
    12      4     u32 number of records N
    then N records:
            4     u32 name length L (bytes, <= 65536)
            L     name, UTF-8 (the weight's Keras path, e.g.
                  "model/dense/kernel"; files from before paths hold
                  the variable name, "dense/kernel:0", which
                  load_weights(by_name=True) still matches)
            1     u8 dtype code (DTYPES below)
            1     u8 rank R (<= 32)
            8*R   u64 dims
            ...   data: prod(dims) * itemsize bytes, C order
    then the trailer:
            4     u32 CRC-32 (zlib.crc32) of every byte before it
            4     end marker "TFMW"

A reader checks the magic, the version, that the file is long enough
for every record it announces (before allocating anything) and the
checksum, and raises WeightsFileError (a ValueError) saying which check
failed: a truncated, corrupted or foreign file never loads silently.

Files are written atomically by the C helper of saved models (Note
[Atomic file write] in csrc/graph/file_write.h): to a new temp file of
an unpredictable name in the same folder (never through a planted
symlink), fsynced, renamed over the target, and the folder fsynced, so
a crash mid-save leaves the previous file intact; temp files that a
killed save left are removed by a later save.
"""
import os
import struct
import zlib

import numpy as np

MAGIC = b"\x89TFMW\r\n\x1a"
END = b"TFMW"
VERSION = 1
MAX_NAME = 65536
MAX_RANK = 32

DTYPES = {1: "float32", 2: "float64", 3: "float16", 4: "int8", 5: "int16",
          6: "int32", 7: "int64", 8: "uint8", 9: "bool", 10: "uint16",
          11: "uint32", 12: "uint64"}
# complex: codes of their own, clear of the ones other dtypes may take.
DTYPES.update({20: "complex64", 21: "complex128"})
DTYPES[16] = "bfloat16"     # NumPy's through ml_dtypes (read: imported)
_CODES = {v: k for k, v in DTYPES.items()}


class WeightsFileError(ValueError):
    """A weights file that cannot be read: wrong format, truncated or
    corrupted."""


def encode(records):
    """bytes of a weights file holding records: [(name, ndarray)]."""
    parts = [MAGIC, struct.pack("<II", VERSION, len(records))]
    for name, array in records:
        a = np.asarray(array, order="C")     # (keeps rank 0)
        code = _CODES.get(a.dtype.name)
        if code is None:
            raise TypeError(f"Cannot save weight {name!r}: dtype "
                            f"{a.dtype.name} has no code in the weights "
                            f"format")
        raw = name.encode("utf-8")
        if len(raw) > MAX_NAME or a.ndim > MAX_RANK:
            raise ValueError(f"Cannot save weight {name!r}: name or rank "
                             f"too large")
        parts.append(struct.pack("<I", len(raw)))
        parts.append(raw)
        parts.append(struct.pack("<BB", code, a.ndim))
        parts.append(struct.pack(f"<{a.ndim}Q", *a.shape))
        parts.append(a.astype(a.dtype.newbyteorder("<"), copy=False)
                     .tobytes())
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF) + END


def decode(data, path="<bytes>"):
    """[(name, ndarray)] from the bytes of a weights file."""
    def fail(what):
        raise WeightsFileError(f"Cannot load weights from {path!r}: {what}")

    n = len(data)
    if n < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        fail("not a tfmini weights file (bad magic bytes; save it with "
             "model.save_weights)")
    if n < 16:
        fail(f"the file is truncated ({n} bytes, shorter than the header)")
    version, count = struct.unpack_from("<II", data, 8)
    if version != VERSION:
        fail(f"unsupported format version {version} (this tfmini reads "
             f"version {VERSION})")
    if n < 16 + 8 or data[-4:] != END:
        fail(f"the file is truncated ({n} bytes, no end marker)")
    body_end = n - 8
    (crc,) = struct.unpack_from("<I", data, body_end)
    if zlib.crc32(memoryview(data)[:body_end]) & 0xFFFFFFFF != crc:
        fail("checksum mismatch: the file is corrupted")
    pos = 16
    records = []
    for i in range(count):
        if pos + 4 > body_end:
            fail(f"record {i} of {count} runs past the end of the data")
        (name_len,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if name_len > MAX_NAME or pos + name_len + 2 > body_end:
            fail(f"record {i}: bad name length {name_len}")
        try:
            name = bytes(data[pos:pos + name_len]).decode("utf-8")
        except UnicodeDecodeError:
            fail(f"record {i}: name is not UTF-8")
        pos += name_len
        code, rank = struct.unpack_from("<BB", data, pos)
        pos += 2
        if code not in DTYPES:
            fail(f"record {i} ({name!r}): unknown dtype code {code}")
        if rank > MAX_RANK or pos + 8 * rank > body_end:
            fail(f"record {i} ({name!r}): bad rank {rank}")
        dims = struct.unpack_from(f"<{rank}Q", data, pos)
        pos += 8 * rank
        if DTYPES[code] == "bfloat16":
            from ...dtypes import _ml_dtypes
            _ml_dtypes()            # NumPy knows the name from then on
        dtype = np.dtype(DTYPES[code]).newbyteorder("<")
        size = 1
        for d in dims:
            size *= d
        nbytes = size * dtype.itemsize
        if nbytes > body_end - pos:
            fail(f"record {i} ({name!r}): {nbytes} bytes of data announced "
                 f"for shape {tuple(dims)}, {body_end - pos} left")
        array = np.frombuffer(data, dtype=dtype, count=size, offset=pos)
        records.append((name, array.reshape(dims).astype(
            dtype.newbyteorder("="), copy=True)))
        pos += nbytes
    if pos != body_end:
        fail(f"{body_end - pos} unexpected bytes after the last record")
    return records


def write(path, records, overwrite=True):
    """Write records to path atomically: a unique temp file, fsync,
    rename (Note [Atomic file write], csrc/graph/file_write.h)."""
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path!r} exists and overwrite=False")
    data = encode(records)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"Cannot save weights to {path!r}: the "
                                f"folder {folder!r} does not exist")
    from ... import _C
    _C.write_file_atomic(path, data, "save_weights")


def read(path):
    """The records of the weights file at path."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    return decode(data, path)
