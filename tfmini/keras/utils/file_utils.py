"""keras.utils.get_file over Keras 3's cache layout, without a network.

The cache is $KERAS_HOME (default ~/.keras; /tmp/.keras when that is
not writable), files under <cache>/<cache_subdir>/<fname>, as Keras
3.15's keras/src/utils/file_utils.py lays them out, including where
extract=True puts archives (`<name>_archive`, or `<name>` for a name with
a dot) and their contents (`<name>` or `<stem>_extracted`). A file found
there is used (after its hash is checked, when one is given); a missing
one is a FileNotFoundError saying where to put it, since this machine
cannot download."""
import hashlib
import os
import tarfile
import tempfile
import urllib.parse
import zipfile


def keras_home():
    return os.path.expanduser(os.environ.get(
        "KERAS_HOME", os.path.join("~", ".keras")))


def _cache_base(cache_dir):
    base = os.path.expanduser(cache_dir or keras_home())
    if os.path.isdir(base) and not os.access(base, os.W_OK):
        base = os.path.join("/tmp" if os.path.isdir("/tmp")
                            else tempfile.gettempdir(), ".keras")
    return base


def _hash(path, algorithm):
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def validate_file(fpath, file_hash, algorithm="auto"):
    """Whether fpath's sha256 (64 hex digits, or algorithm=) or md5
    matches file_hash."""
    if algorithm == "auto":
        algorithm = "sha256" if len(file_hash) == 64 else "md5"
    return _hash(fpath, algorithm) == str(file_hash)


def _extract(archive, dest, archive_format="auto"):
    """Extract a tar or zip archive into dest, refusing members that
    would land outside it."""
    kinds = (["tar", "zip"] if archive_format == "auto" else
             [archive_format] if isinstance(archive_format, str)
             else list(archive_format))
    os.makedirs(dest, exist_ok=True)
    root = os.path.realpath(dest)
    if "tar" in kinds and tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            tf.extractall(dest, filter="data")
        return True
    if "zip" in kinds and zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                target = os.path.realpath(os.path.join(dest, name))
                if not target.startswith(root + os.sep) and target != root:
                    raise ValueError(f"get_file: archive member {name!r} "
                                     f"would extract outside {dest!r}")
            zf.extractall(dest)
        return True
    return False


def get_file(fname=None, origin=None, untar=False, md5_hash=None,
             file_hash=None, cache_subdir="datasets", hash_algorithm="auto",
             extract=False, archive_format="auto", cache_dir=None,
             force_download=False):
    """The local path of a cached file (or of its extracted folder with
    extract=True), as keras.utils.get_file returns it."""
    if origin is None and fname is None:
        raise ValueError('Please specify the "origin" argument (URL of the '
                         'file to download).')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    datadir = os.path.join(_cache_base(cache_dir), cache_subdir)
    fname = os.fspath(fname) if fname else ""
    if not fname:
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not fname:
            raise ValueError(f"Can't parse the file name from the origin "
                             f"provided: {origin!r}. Please specify the "
                             f"`fname` argument.")
    elif os.sep in fname:
        raise ValueError(f"Paths are not accepted as the `fname` argument;"
                         f" use `cache_dir` for the folder. Received: "
                         f"fname={fname}")
    extraction_dir = None
    if extract or untar:
        if "." in fname:
            target = os.path.join(datadir, fname)
            extraction_dir = os.path.join(
                datadir, fname[:fname.find(".")] + "_extracted")
        else:
            extraction_dir = os.path.join(datadir, fname)
            target = os.path.join(datadir, fname + "_archive")
    else:
        target = os.path.join(datadir, fname)
    if extraction_dir and os.path.isdir(extraction_dir) and \
            os.listdir(extraction_dir) and not force_download:
        return extraction_dir
    if force_download or not os.path.exists(target):
        where = extraction_dir and (f" (or its contents already extracted "
                                    f"into {extraction_dir})")
        raise FileNotFoundError(
            f"get_file: {target} is not in the local cache and tfmini "
            f"cannot download it. Fetch "
            f"{origin or fname} on a machine with a network and put it at "
            f"{target}{where or ''} (the cache folder is $KERAS_HOME, "
            f"default ~/.keras).")
    if file_hash is not None and \
            not validate_file(target, file_hash, hash_algorithm):
        raise ValueError(f"get_file: {target} does not match the expected "
                         f"hash {file_hash}: the file is incomplete or "
                         f"another version; replace it")
    if extraction_dir:
        if not _extract(target, extraction_dir,
                        "tar" if untar else archive_format):
            raise ValueError(f"get_file: could not extract {target} (not "
                             f"a tar or zip archive)")
        return extraction_dir
    return target
