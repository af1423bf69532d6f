"""Convolution and pooling: tf.nn.conv2d, tf.nn.max_pool2d, ...

NHWC only (TF's CPU layout); filters are [height, width, in, out]. The
ops and their attribute slots are in csrc/ops/ops_conv.def; every call
sends the same 12 ints: strides (2), dilations or window (2), sizes (4,
for the two-input backprop forms) and explicit pads (4)."""
import operator

from .. import _C
from .._opids import ID
from ..errors import InvalidArgumentError, UnimplementedError

__all__ = []
_NAMESPACES = {"nn": ["conv2d", "conv2d_transpose", "max_pool2d",
                      "avg_pool2d", "max_pool", "avg_pool",
                      "depthwise_conv2d", "separable_conv2d",
                      "depthwise_conv2d_backprop_input",
                      "depthwise_conv2d_backprop_filter"]}

_CONV2D = ID["Conv2D"]
_BACKPROP_INPUT = ID["Conv2DBackpropInput"]
_BACKPROP_FILTER = ID["Conv2DBackpropFilter"]
_DEPTHWISE = ID["DepthwiseConv2dNative"]
_DEPTHWISE_BPI = ID["DepthwiseConv2dNativeBackpropInput"]
_DEPTHWISE_BPF = ID["DepthwiseConv2dNativeBackpropFilter"]
_MAX_POOL = ID["MaxPool"]
_MAX_POOL_GRAD = ID["MaxPoolGrad"]
_MAX_POOL_GRAD_GRAD = ID["MaxPoolGradGrad"]
_AVG_POOL = ID["AvgPool"]
_AVG_POOL_GRAD = ID["AvgPoolGrad"]

_VALID, _SAME, _EXPLICIT = 0, 1, 2
_NO_SIZES = (0, 0, 0, 0)
_NO_PADS = (0, 0, 0, 0)


def _index(v, what, op):
    """v as a Python int that the C attributes (int64) hold; errors name
    op and what."""
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"{op}: {what} must be integers, got {v!r} of type "
                        f"{type(v).__name__}") from None
    if not -2 ** 63 <= v < 2 ** 63:
        raise InvalidArgumentError(
            None, None, f"{op}: {what} value {v} is out of range")
    return v


def _pair(value, what, op):
    """strides / dilations / ksize as (h, w): an int, or a list of 1, 2
    or 4 ints (4: NHWC, with 1 for the batch and depth dims)."""
    if value is None:
        return (1, 1)
    if not hasattr(value, "__iter__") or isinstance(value, (str, bytes)):
        return (_index(value, what, op),) * 2
    vals = [_index(v, what, op) for v in value]
    if len(vals) == 1:
        return (vals[0], vals[0])
    if len(vals) == 2:
        return tuple(vals)
    if len(vals) == 4:
        if vals[0] != 1 or vals[3] != 1:
            raise InvalidArgumentError(
                None, None, f"{op}: {what} in the batch and depth "
                f"dimensions must be 1 (NHWC), got {vals}")
        return (vals[1], vals[2])
    raise ValueError(f"{op}: {what} should be of length 1, 2 or 4 but was "
                     f"{len(vals)}")


def _padding(padding, op, explicit_ok=True):
    """(mode, pads) from "SAME", "VALID" or NHWC explicit pads
    [[0, 0], [top, bottom], [left, right], [0, 0]]."""
    if isinstance(padding, str):
        if padding == "SAME":
            return _SAME, _NO_PADS
        if padding == "VALID":
            return _VALID, _NO_PADS
        allowed = '"SAME", "VALID"' + (" or explicit paddings"
                                        if explicit_ok else "")
        raise InvalidArgumentError(
            None, None, f"{op}: padding must be {allowed}, got {padding!r}")
    if not explicit_ok:
        raise InvalidArgumentError(
            None, None, f"{op}: padding must be \"SAME\" or \"VALID\", got "
            f"{padding!r}")
    try:
        pairs = [tuple(_index(v, "padding", op) for v in p)
                 for p in padding]
    except TypeError:
        pairs = None
    if (pairs is None or len(pairs) != 4 or any(len(p) != 2 for p in pairs)
            or pairs[0] != (0, 0) or pairs[3] != (0, 0)):
        raise InvalidArgumentError(
            None, None, f"{op}: explicit padding must be 4 pairs, NHWC, with "
            f"[0, 0] for the batch and depth dims, got {padding!r}")
    return _EXPLICIT, pairs[1] + pairs[2]


def _check_format(data_format, op):
    if data_format in (None, "NHWC"):
        return
    if data_format == "NCHW":
        raise UnimplementedError(
            None, None, f"{op}: only the NHWC data format is supported on "
            f"the CPU, got NCHW (transpose to NHWC with tf.transpose)")
    raise InvalidArgumentError(
        None, None, f"{op}: data_format must be \"NHWC\" or \"NCHW\", got "
        f"{data_format!r}")


def _conv_call(op_id, inputs, strides, padding, dilations, sizes, op):
    sh, sw = _pair(strides, "strides", op)
    dh, dw = _pair(dilations, "dilations", op)
    mode, pads = _padding(padding, op)
    return _C.call(op_id, inputs, ints=(sh, sw, dh, dw) + tuple(sizes)
                   + tuple(pads), i=(mode,))


def _sizes(value, what, op):
    """Four ints from a list, tuple or eager tensor; entries that are
    symbolic tensors (a batch size known only at run time) become -1."""
    if hasattr(value, "_symbolic"):
        if value._symbolic:
            raise ValueError(f"{op}: {what} must be known while tracing "
                             f"(Python ints, or a list whose symbolic "
                             f"entries are only the batch and depth sizes)")
        value = value.numpy().tolist()
    if not hasattr(value, "__iter__") or isinstance(value, (str, bytes)):
        raise TypeError(f"{op}: {what} must be a list of 4 ints, got "
                        f"{value!r}")
    out = []
    for v in value:
        if getattr(v, "_symbolic", False):
            out.append(-1)
        else:
            out.append(_index(v, what, op) if not hasattr(v, "numpy")
                       else _index(v.numpy(), what, op))
    if len(out) != 4:
        raise ValueError(f"{op}: {what} must have 4 elements (NHWC), got "
                         f"{len(out)}")
    return tuple(out)


def conv2d(input, filters, strides, padding, data_format="NHWC",
           dilations=None, name=None):
    """2-D convolution of input [batch, h, w, in] with filters
    [fh, fw, in, out]: TF's SAME/VALID arithmetic, strides, dilations."""
    _check_format(data_format, "Conv2D")
    return _conv_call(_CONV2D, (input, filters), strides, padding,
                      dilations, _NO_SIZES, "Conv2D")


def conv2d_backprop_input(input_sizes, filters, out_backprop, strides,
                          padding, data_format="NHWC", dilations=None,
                          name=None):
    """Gradient of conv2d with respect to its input (of shape
    input_sizes); tf.compat.v1.nn.conv2d_backprop_input."""
    _check_format(data_format, "Conv2DBackpropInput")
    return _conv_call(_BACKPROP_INPUT, (filters, out_backprop), strides,
                      padding, dilations,
                      _sizes(input_sizes, "input_sizes",
                             "Conv2DBackpropInput"),
                      "Conv2DBackpropInput")


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides,
                           padding, data_format="NHWC", dilations=None,
                           name=None):
    """Gradient of conv2d with respect to its filter (of shape
    filter_sizes); tf.compat.v1.nn.conv2d_backprop_filter."""
    _check_format(data_format, "Conv2DBackpropFilter")
    return _conv_call(_BACKPROP_FILTER, (input, out_backprop), strides,
                      padding, dilations,
                      _sizes(filter_sizes, "filter_sizes",
                             "Conv2DBackpropFilter"),
                      "Conv2DBackpropFilter")


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME",
                     data_format="NHWC", dilations=None, name=None):
    """The transpose (gradient) of conv2d: filters are [fh, fw, out, in]
    and output_shape is the [batch, h, w, out] it produces."""
    _check_format(data_format, "conv2d_transpose")
    return _conv_call(_BACKPROP_INPUT, (filters, input), strides, padding,
                      dilations,
                      _sizes(output_shape, "output_shape",
                             "Conv2DBackpropInput"),
                      "Conv2DBackpropInput")


def _no_strided_dilation(strides, dilations, op):
    """TF's documented rule for tf.nn.depthwise_conv2d: a rate above 1
    needs unit strides (TF 2.21 only warns, then computes something
    else again; an error is clearer than a number that differs)."""
    s = _pair(strides, "strides", op)
    d = _pair(dilations, "dilations", op)
    if max(d) > 1 and max(s) > 1:
        raise ValueError(f"{op}: when a dilation rate is greater than 1, "
                         f"all strides must be 1; got dilations {list(d)} "
                         f"and strides {list(s)}")


def depthwise_conv2d(input, filter, strides, padding, data_format=None,
                     dilations=None, name=None):
    """Depthwise 2-D convolution: input [batch, h, w, in], filter [fh, fw,
    in, multiplier]; output channel c * multiplier + m convolves input
    channel c with filter[:, :, c, m] (DepthwiseConv2dNative)."""
    op = "DepthwiseConv2dNative"
    _check_format(data_format, op)
    _no_strided_dilation(strides, dilations, op)
    return _conv_call(_DEPTHWISE, (input, filter), strides, padding,
                      dilations, _NO_SIZES, op)


def _placeholder_of(sizes, like, op):
    """Zeros of the given sizes (a list, or a tensor while tracing) in
    like's dtype: the depthwise backprops read only that operand's
    shape, and take it as a tensor so that it may be known only at run
    time."""
    from .array_ops import zeros
    dtype = getattr(like, "dtype", None)
    return zeros(sizes, dtype=dtype) if dtype is not None else zeros(sizes)


def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop,
                                    strides, padding, data_format="NHWC",
                                    dilations=None, name=None):
    """Gradient of depthwise_conv2d with respect to its input, of shape
    input_sizes [batch, h, w, in]."""
    op = "DepthwiseConv2dNativeBackpropInput"
    _check_format(data_format, op)
    _sizes(input_sizes, "input_sizes", op)
    return _conv_call(_DEPTHWISE_BPI,
                      (_placeholder_of(input_sizes, filter, op), filter,
                       out_backprop), strides, padding, dilations,
                      _NO_SIZES, op)


def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop,
                                     strides, padding, data_format="NHWC",
                                     dilations=None, name=None):
    """Gradient of depthwise_conv2d with respect to its filter, of shape
    filter_sizes [fh, fw, in, multiplier]."""
    op = "DepthwiseConv2dNativeBackpropFilter"
    _check_format(data_format, op)
    _sizes(filter_sizes, "filter_sizes", op)
    return _conv_call(_DEPTHWISE_BPF,
                      (input, _placeholder_of(filter_sizes, input, op),
                       out_backprop), strides, padding, dilations,
                      _NO_SIZES, op)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides,
                     padding, data_format=None, dilations=None, name=None):
    """depthwise_conv2d with depthwise_filter [fh, fw, in, multiplier],
    then a 1x1 conv2d with pointwise_filter [1, 1, in * multiplier,
    out]."""
    _check_format(data_format, "separable_conv2d")
    pw = getattr(pointwise_filter, "shape", None)
    if pw is not None and len(pw) == 4 and (pw[0] not in (1, None)
                                            or pw[1] not in (1, None)):
        raise ValueError(f"separable_conv2d: pointwise_filter must be "
                         f"[1, 1, in * multiplier, out], got shape "
                         f"{list(pw)}")
    y = depthwise_conv2d(input, depthwise_filter, strides, padding,
                         dilations=dilations)
    return conv2d(y, pointwise_filter, (1, 1), "VALID")


def _pool_call(op_id, input, ksize, strides, padding, data_format, op):
    _check_format(data_format, op)
    return _C.call(op_id, (input,),
                   **_pool_attrs(ksize, strides, padding, op))


def max_pool2d(input, ksize, strides, padding, data_format="NHWC",
               name=None):
    """Max over each ksize window of input [batch, h, w, c]."""
    return _pool_call(_MAX_POOL, input, ksize, strides, padding,
                      data_format, "MaxPool")


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC",
               name=None):
    """Mean over each ksize window (padding cells not counted)."""
    return _pool_call(_AVG_POOL, input, ksize, strides, padding,
                      data_format, "AvgPool")


def _rank(input):
    shape = getattr(input, "shape", None)
    return len(shape) if shape is not None else None


def max_pool(input, ksize, strides, padding, data_format=None, name=None):
    """tf.nn.max_pool: N-D in TF; here the 2-D (4-D input) case."""
    if _rank(input) not in (None, 4):
        raise UnimplementedError(None, None, "max_pool: only 4-D (NHWC) "
                                 "inputs are supported")
    return max_pool2d(input, ksize, strides, padding, data_format, name)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):
    """tf.nn.avg_pool: N-D in TF; here the 2-D (4-D input) case."""
    if _rank(input) not in (None, 4):
        raise UnimplementedError(None, None, "avg_pool: only 4-D (NHWC) "
                                 "inputs are supported")
    return avg_pool2d(input, ksize, strides, padding, data_format, name)


def _pool_attrs(ksize, strides, padding, op):
    kh, kw = _pair(ksize, "ksize", op)
    sh, sw = _pair(strides, "strides", op)
    mode, _ = _padding(padding, op, explicit_ok=False)
    return dict(ints=(sh, sw, kh, kw), i=(mode,))


def _max_pool_grad(orig_input, orig_output, grad, ksize, strides, padding):
    """MaxPoolGrad: grad routed to the first maximum of each window."""
    return _C.call(_MAX_POOL_GRAD, (orig_input, orig_output, grad),
                   **_pool_attrs(ksize, strides, padding, "MaxPoolGrad"))


def _max_pool_grad_grad(orig_input, orig_output, grad, ksize, strides,
                        padding):
    """MaxPoolGradGrad: grad (shaped like the input) read at each argmax."""
    return _C.call(_MAX_POOL_GRAD_GRAD, (orig_input, orig_output, grad),
                   **_pool_attrs(ksize, strides, padding,
                                 "MaxPoolGradGrad"))


def _avg_pool_grad(orig_input, grad, ksize, strides, padding):
    """AvgPoolGrad; only orig_input's shape is read."""
    return _C.call(_AVG_POOL_GRAD, (orig_input, grad),
                   **_pool_attrs(ksize, strides, padding, "AvgPoolGrad"))
