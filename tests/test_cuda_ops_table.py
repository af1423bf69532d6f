"""The GPU kernel table of a CUDA build lists the ops the model steps and
acceptance programs used to soft-place (issue 21): BroadcastTo, Shape,
Size, Rank, the Philox random ops, TensorScatterAdd/Update and the LSTM
sequence ops, read through tfm_cuda_has_kernel without a GPU. Their
values on a GPU are checked by tests/gpu/test_gpu_ops_more.py."""
import ctypes

import pytest

from tfmini import _C

NEW_OPS = ("BroadcastTo", "Shape", "Size", "Rank", "RandomUniform",
           "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
           "TensorScatterAdd", "TensorScatterUpdate", "_LSTMSequence",
           "_LSTMSequenceGrad", "RandomShuffle", "Multinomial")


def _has_kernel():
    if not _C.cuda_built():
        pytest.skip("this build has no CUDA backend")
    try:
        f = ctypes.CDLL(_C.__file__).tfm_cuda_has_kernel
    except AttributeError:
        pytest.skip("this build has no tfm_cuda_has_kernel")
    f.argtypes = [ctypes.c_char_p]
    f.restype = ctypes.c_int
    return lambda name: f(name.encode())


@pytest.mark.parametrize("op", NEW_OPS)
def test_cuda_build_has_a_gpu_kernel_for(op):
    assert _has_kernel()(op) == 1, op


# kernels_slice.c (issue 21, branch cuslice): StridedSlice and its
# gradient on the CPU's slice plan, and the data-movement ops and
# ArgMax/ArgMin, Cumsum/Cumprod, OneHot and MirrorPad the guides and
# Keras models ran on the CPU.
SLICE_OPS = ("StridedSlice", "StridedSliceGrad", "Slice", "ReverseV2",
             "Tile", "Split", "SplitV", "Unpack", "PadV2", "ArgMax",
             "ArgMin", "Cumsum", "Cumprod", "OneHot", "MirrorPad")


@pytest.mark.parametrize("op", SLICE_OPS)
def test_cuda_build_has_a_slice_kernel_for(op):
    assert _has_kernel()(op) == 1, op



# kernels_index.c, kernels_scatter.c, kernels_shape.c (issue 21, branch
# cuops3): the ops that soft-placed after the slicing ops, checked on
# the host by tests/test_index_cuda_host.py.
INDEX_OPS = ("IsNan", "IsInf", "IsFinite", "Range", "LinSpace", "GatherNd",
             "Where", "TensorScatterMin", "TensorScatterMax")


@pytest.mark.parametrize("op", INDEX_OPS)
def test_cuda_build_has_an_index_kernel_for(op):
    assert _has_kernel()(op) == 1, op
