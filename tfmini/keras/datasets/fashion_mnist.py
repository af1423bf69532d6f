"""keras.datasets.fashion_mnist.load_data from Keras's cache:
<KERAS_HOME>/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}
-ubyte.gz (the IDX files gzipped, read the way Keras reads them)."""
import gzip

import numpy as np

from ..utils.file_utils import get_file

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_SUBDIR = "datasets/fashion-mnist"
FILES = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
         "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]


def _read(path, offset):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < offset:
        raise ValueError(f"{path}: truncated ({len(data)} bytes, shorter "
                         f"than the {offset}-byte IDX header)")
    return np.frombuffer(data, np.uint8, offset=offset)


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images (n, 28, 28)
    and uint8 labels."""
    paths = [get_file(f, origin=_BASE + f, cache_subdir=_SUBDIR)
             for f in FILES]
    out = []
    for labels, images in ((paths[0], paths[1]), (paths[2], paths[3])):
        y = _read(labels, 8)
        x = _read(images, 16)
        if x.size != len(y) * 28 * 28:
            raise ValueError(f"{images}: {x.size} pixels for {len(y)} "
                             f"labels of 28x28 images")
        out.append((x.reshape(len(y), 28, 28), y))
    return tuple(out)

