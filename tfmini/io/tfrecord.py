"""TFRecord files, in TensorFlow's own format, so TF reads what tfmini
writes and the reverse. Each record is

    uint64 length (little-endian)
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

with mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2**32).
A whole file may be GZIP (or ZLIB) compressed."""
import gzip
import struct
import zlib

from .. import errors as _errors

try:  # C implementation (google-crc32c, requirements-dev.txt)
    import google_crc32c as _gcrc

    def crc32c(data):
        return _gcrc.value(bytes(data))
except ImportError:  # pure Python, shipped with tensorboard: slow but right
    try:
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import \
            crc32c as _tb_crc32c

        def crc32c(data):
            return _tb_crc32c(bytes(data)) & 0xFFFFFFFF
    except ImportError:
        crc32c = None

_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data):
    if crc32c is None:
        raise ImportError("TFRecord files need a CRC32C implementation: "
                          "pip install google-crc32c")
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _compression(compression_type):
    if compression_type is None:
        return ""
    if isinstance(compression_type, TFRecordOptions):
        return compression_type.compression_type
    c = str(compression_type).upper()
    if c not in ("", "GZIP", "ZLIB"):
        raise ValueError(f"compression_type must be '', 'GZIP' or 'ZLIB', "
                         f"got {compression_type!r}")
    return c


class TFRecordCompressionType:
    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """tf.io.TFRecordOptions: the compression of a TFRecord file
    (compression_level is used; TF's zlib buffer tuning is accepted and
    changes nothing)."""

    def __init__(self, compression_type=None, flush_mode=None,
                 input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None,
                 compression_strategy=None):
        if compression_type == TFRecordCompressionType.GZIP:
            compression_type = "GZIP"
        elif compression_type == TFRecordCompressionType.ZLIB:
            compression_type = "ZLIB"
        elif compression_type == TFRecordCompressionType.NONE:
            compression_type = ""
        self.compression_type = _compression(compression_type)
        self.compression_level = (6 if compression_level is None
                                  else int(compression_level))


def _frame(record):
    header = struct.pack("<Q", len(record))
    return b"".join((header, struct.pack("<I", masked_crc32c(header)),
                     record, struct.pack("<I", masked_crc32c(record))))


class TFRecordWriter:
    """tf.io.TFRecordWriter(path, options=None): write(record) appends one
    record (bytes; str is encoded as UTF-8); close() ends the file. Also
    a context manager, as TF's."""

    def __init__(self, path, options=None):
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(_compression(options))
        self._path = str(path)
        raw = open(self._path, "wb")
        if options.compression_type == "GZIP":
            self._f = gzip.GzipFile(fileobj=raw, mode="wb",
                                    compresslevel=options.compression_level)
            self._raw = raw
        elif options.compression_type == "ZLIB":
            self._f = raw
            self._raw = raw
            self._z = zlib.compressobj(options.compression_level)
        else:
            self._f = raw
            self._raw = raw
        self._zlib = options.compression_type == "ZLIB"

    def write(self, record):
        if self._f is None:
            raise _errors.FailedPreconditionError(
                None, None, f"TFRecordWriter({self._path!r}) is closed")
        if isinstance(record, str):
            record = record.encode("utf-8")
        if hasattr(record, "numpy"):
            record = record.numpy()
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(f"TFRecordWriter.write takes bytes, got "
                            f"{type(record).__name__}")
        data = _frame(bytes(record))
        self._f.write(self._z.compress(data) if self._zlib else data)

    def flush(self):
        if self._f is not None:
            if self._zlib:
                self._f.write(self._z.flush(zlib.Z_SYNC_FLUSH))
            self._f.flush()

    def close(self):
        if self._f is None:
            return
        if self._zlib:
            self._f.write(self._z.flush())
        self._f.close()
        if self._raw is not self._f:
            self._raw.close()
        self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _ZlibReader:
    """A readable stream over a ZLIB-compressed file."""

    def __init__(self, f):
        self._f = f
        self._z = zlib.decompressobj()
        self._buf = b""

    def read(self, n=-1):
        while n < 0 or len(self._buf) < n:
            chunk = self._f.read(1 << 16)
            if not chunk:
                self._buf += self._z.flush()
                break
            self._buf += self._z.decompress(chunk)
        if n < 0:
            n = len(self._buf)
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def __iter__(self):      # lines, for TextLineDataset
        pending = b""
        while True:
            chunk = self.read(1 << 16)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line + b"\n"
        if pending:
            yield pending

    def close(self):
        self._f.close()


def open_stream(path, compression):
    """A binary stream of the file's (decompressed) bytes; errors of
    the compressed data surface as DataLossError when read."""
    f = open(path, "rb")
    if compression == "GZIP":
        return gzip.GzipFile(fileobj=f, mode="rb")
    if compression == "ZLIB":
        return _ZlibReader(f)
    return f


def _read(stream, n, path):
    try:
        return stream.read(n)
    except (OSError, zlib.error, EOFError) as e:
        raise _errors.DataLossError(
            None, None, f"{path}: not a valid compressed file ({e})")


def read_records(path, compression_type=None):
    """The records of one TFRecord file, as bytes, read as a stream and
    checking both CRCs; a bad length, CRC or a truncated record is
    DataLossError, as TF."""
    compression = _compression(compression_type)
    path = str(path)
    stream = open_stream(path, compression)
    try:
        offset, i = 0, 0
        while True:
            head = _read(stream, 12, path)
            if not head:
                return
            if len(head) < 12:
                raise _errors.DataLossError(
                    None, None, f"{path}: truncated record header at "
                    f"offset {offset} (record {i})")
            header = head[:8]
            (hcrc,) = struct.unpack_from("<I", head, 8)
            if masked_crc32c(header) != hcrc:
                raise _errors.DataLossError(
                    None, None, f"{path}: corrupted record at offset "
                    f"{offset} (record {i}): length CRC mismatch")
            (length,) = struct.unpack("<Q", header)
            body = _read(stream, length + 4, path)
            if len(body) < length + 4:
                raise _errors.DataLossError(
                    None, None, f"{path}: truncated record at offset "
                    f"{offset} (record {i}): {length} bytes announced, "
                    f"{max(len(body) - 4, 0)} present")
            record = body[:length]
            (dcrc,) = struct.unpack_from("<I", body, length)
            if masked_crc32c(record) != dcrc:
                raise _errors.DataLossError(
                    None, None, f"{path}: corrupted record at offset "
                    f"{offset} (record {i}): data CRC mismatch")
            yield record
            offset += 16 + length
            i += 1
    finally:
        stream.close()
