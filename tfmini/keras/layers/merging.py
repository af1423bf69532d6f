"""Merge layers: Multiply, Average, Maximum, Minimum, Subtract, Dot and
their functional forms (Add and Concatenate are in core.py)."""
import functools
import operator

import tfmini as tf

from .core import _Merge


class _MaskedMerge(_Merge):
    """Keras' merge mask: a step is kept when every input that has a
    mask keeps it."""

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)):
            raise ValueError(f"`mask` should be a list. Received: {mask}")
        masks = [m for m in mask if m is not None]
        if not masks:
            return None
        return functools.reduce(tf.logical_and, masks)


class Multiply(_MaskedMerge):
    """The elementwise product of the inputs (broadcasting)."""

    def _merge(self, xs):
        return functools.reduce(operator.mul, xs)


class Average(_MaskedMerge):
    """The elementwise mean of the inputs."""

    def _merge(self, xs):
        return functools.reduce(operator.add, xs) / float(len(xs))


class Maximum(_MaskedMerge):
    def _merge(self, xs):
        return functools.reduce(tf.maximum, xs)


class Minimum(_MaskedMerge):
    def _merge(self, xs):
        return functools.reduce(tf.minimum, xs)


class Subtract(_MaskedMerge):
    """inputs[0] - inputs[1] (exactly two inputs)."""

    def _merge(self, xs):
        if len(xs) != 2:
            raise ValueError(f"A `Subtract` layer should be called on "
                             f"exactly 2 inputs. Received: {len(xs)} inputs")
        return xs[0] - xs[1]


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class Dot(_Merge):
    """Keras' batch dot of two inputs: the sum over axes[0] of x times
    axes[1] of y, per example; the remaining axes of x then those of y
    (a (batch, 1) result for two vectors). normalize=True L2-normalizes
    each input along its axis first (cosine proximity)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axes, int):
            axes = (axes, axes)
        axes = tuple(int(a) for a in axes)
        if len(axes) != 2:
            raise ValueError(f"Invalid format for argument `axes`: list "
                             f"must have 2 elements. Received: {axes}")
        self.axes = axes
        self.normalize = bool(normalize)

    def _merge(self, xs):
        if len(xs) != 2:
            raise ValueError(f"A `Dot` layer should be called on exactly 2 "
                             f"inputs. Received: {len(xs)} inputs")
        x, y = xs
        rx, ry = len(x._shape_tuple), len(y._shape_tuple)
        ax = [a % r for a, r in zip(self.axes, (rx, ry))]
        if 0 in ax:
            raise ValueError(f"Dot {self.name!r}: cannot contract the batch "
                             f"axis (axes={self.axes})")
        dx, dy = x._shape_tuple[ax[0]], y._shape_tuple[ax[1]]
        if dx is not None and dy is not None and dx != dy:
            raise ValueError(f"Dimension incompatibility: {dx} != {dy}. "
                             f"Layer shapes: {x._shape_tuple}, "
                             f"{y._shape_tuple}. Chosen axes: {self.axes}")
        if self.normalize:
            x = tf.nn.l2_normalize(x, axis=ax[0])
            y = tf.nn.l2_normalize(y, axis=ax[1])
        # 'z' is the batch, 'y' the contracted axis; others get letters.
        free = iter(_LETTERS[:24])
        sx = ["z"] + [None] * (rx - 1)
        sy = ["z"] + [None] * (ry - 1)
        sx[ax[0]] = sy[ax[1]] = "y"
        sx = [c or next(free) for c in sx]
        sy = [c or next(free) for c in sy]
        out = ["z"] + [c for c in sx[1:] + sy[1:] if c != "y"]
        res = tf.einsum(f"{''.join(sx)},{''.join(sy)}->{''.join(out)}", x, y)
        if len(out) == 1:
            res = tf.expand_dims(res, 1)
        return res

    def get_config(self):
        config = super().get_config()
        config.update(axes=self.axes, normalize=self.normalize)
        return config


def multiply(inputs, **kwargs):
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    return Minimum(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    return Subtract(**kwargs)(inputs)


def dot(inputs, axes=-1, normalize=False, **kwargs):
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
