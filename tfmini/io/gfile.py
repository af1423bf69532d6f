"""tf.io.gfile: files through Python's own I/O (local paths only; TF's
gs://, s3:// and hdfs:// filesystems are not here)."""
import glob as _glob
import os
import shutil

from .. import errors as _errors


def _local(path):
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode("utf-8")
    if "://" in path and not path.startswith("file://"):
        raise _errors.UnimplementedError(
            None, None, f"File system scheme '{path.split('://')[0]}' not "
            f"implemented (file: '{path}'): tfmini reads local files only")
    return path[len("file://"):] if path.startswith("file://") else path


def _not_found(path, e):
    return _errors.NotFoundError(None, None, f"{path}; {e.strerror}")


class GFile:
    """tf.io.gfile.GFile(name, mode='r'): a file object; 'r'/'w'/'a' give
    str, with 'b' bytes, as TF."""

    def __init__(self, name, mode="r"):
        self.name = _local(name)
        self.mode = mode
        try:
            self._f = open(self.name, mode)
        except FileNotFoundError as e:
            raise _not_found(self.name, e) from None

    def __getattr__(self, attr):
        return getattr(self._f, attr)

    def __iter__(self):
        return iter(self._f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def size(self):
        return os.path.getsize(self.name)


Open = GFile


def exists(path):
    return os.path.exists(_local(path))


def isdir(path):
    return os.path.isdir(_local(path))


def glob(pattern):
    return sorted(_glob.glob(_local(pattern)))


def listdir(path):
    p = _local(path)
    if not os.path.isdir(p):
        raise _errors.NotFoundError(None, None,
                                    f"Could not find directory {p}")
    return sorted(os.listdir(p))


def makedirs(path):
    os.makedirs(_local(path), exist_ok=True)


def mkdir(path):
    p = _local(path)
    try:
        os.mkdir(p)
    except FileExistsError:
        raise _errors.OpError(None, None, f"{p} already exists") from None
    except FileNotFoundError as e:
        raise _not_found(p, e) from None


def remove(path):
    p = _local(path)
    try:
        os.remove(p)
    except FileNotFoundError as e:
        raise _not_found(p, e) from None


def rmtree(path):
    p = _local(path)
    if not os.path.exists(p):
        raise _errors.NotFoundError(None, None, f"{p}: not found")
    shutil.rmtree(p)


def rename(src, dst, overwrite=False):
    s, d = _local(src), _local(dst)
    if os.path.exists(d) and not overwrite:
        raise _errors.OpError(None, None, f"{d} already exists")
    os.replace(s, d)


def copy(src, dst, overwrite=False):
    s, d = _local(src), _local(dst)
    if os.path.exists(d) and not overwrite:
        raise _errors.OpError(None, None, f"{d} already exists")
    try:
        shutil.copyfile(s, d)
    except FileNotFoundError as e:
        raise _not_found(s, e) from None


def walk(top, topdown=True, onerror=None):
    yield from os.walk(_local(top), topdown=topdown, onerror=onerror)


def join(path, *paths):
    return os.path.join(path, *paths)
