"""Batching BatchableExtensionType values (tf.data's from_tensor_slices,
batch and unbatch, tf.map_fn) by TF's default batch encoder: a batch of
values is one value whose tensor fields are stacked, whose TensorShape
fields gain the batch size in front, and whose batchable nested fields
are batched the same way; other fields (Python values) are shared and
must agree."""
from . import nest as _nest
from ._tensor import Tensor
from .composite_tensor import CompositeTensor, TypeSpec
from .extension_type import (BatchableExtensionType, ExtensionType,
                             ExtensionTypeSpec, _tensors)
from .extension_type_field import ImmutableDict
from .tensor_shape import TensorShape
from .tensor_spec import TensorSpec

__all__ = ["batch_size", "item", "slice_rows", "stack", "batch_spec",
           "unbatch_spec", "map_fn"]


def _map_fields(obj, fn):
    """obj's class rebuilt with fn applied to each field value."""
    return obj._tfm_replace({k: fn(v) for k, v in obj._tfm_items()})


def _walk(v, tensor, shape, composite):
    if isinstance(v, (Tensor, TensorSpec)):     # a value's or a spec's
        return tensor(v)
    if isinstance(v, TensorShape):
        return shape(v)
    if isinstance(v, (CompositeTensor, TypeSpec)):
        return composite(v)
    if isinstance(v, tuple):
        return tuple(_walk(x, tensor, shape, composite) for x in v)
    if isinstance(v, ImmutableDict):
        return ImmutableDict((k, _walk(x, tensor, shape, composite))
                             for k, x in v.items())
    return v


def batch_size(value):
    """The batch size of value (its first tensor's first dim)."""
    ts = _tensors(value, [])
    if not ts:
        for _, v in value._tfm_items():
            if isinstance(v, TensorShape) and v.rank:
                return v[0]
        raise ValueError(f"{type(value).__name__} holds no tensor to batch")
    if not ts[0].shape.rank:
        raise ValueError(f"{type(value).__name__}: a field has no batch "
                         f"dimension (a scalar tensor)")
    return ts[0].shape[0]


def _item_of(v, i):
    if hasattr(v, "_batch_item"):
        return v._batch_item(i)
    raise TypeError(f"{type(v).__name__} cannot be unbatched")


def item(value, i):
    """Row i of a batch."""
    return _map_fields(value, lambda v: _walk(
        v, lambda t: t[i], lambda s: s[1:], lambda c: _item_of(c, i)))


def slice_rows(value, start, stop):
    """Rows start:stop of a batch, still a batch."""
    n = batch_size(value)
    rows = None if n is None else max(0, min(stop, n) - start)

    def composite(c):
        if hasattr(c, "_batch_slice"):
            return c._batch_slice(start, stop)
        raise TypeError(f"{type(c).__name__} cannot be sliced as a batch")
    return _map_fields(value, lambda v: _walk(
        v, lambda t: t[start:stop],
        lambda s: TensorShape([rows]).concatenate(s[1:]), composite))


def _stack_field(vals):
    v0 = vals[0]
    if isinstance(v0, Tensor) or (not isinstance(v0, (
            CompositeTensor, TensorShape, tuple, ImmutableDict)) and
            hasattr(v0, "_as_tensor")):
        from .ops.array_ops import stack as _stack
        return _stack(list(vals))
    if isinstance(v0, TensorShape):
        return TensorShape([len(vals)]).concatenate(v0)
    if isinstance(v0, ExtensionType):
        return stack(vals)
    if isinstance(v0, CompositeTensor):
        from .data.transforms import stack_rows
        return stack_rows(list(vals))
    if isinstance(v0, tuple):
        return tuple(_stack_field([v[i] for v in vals])
                     for i in range(len(v0)))
    if isinstance(v0, ImmutableDict):
        return ImmutableDict((k, _stack_field([v[k] for v in vals]))
                             for k in v0)
    if any(v != v0 for v in vals[1:]):
        raise ValueError(f"Cannot batch values whose Python fields differ: "
                         f"{v0!r} vs {[v for v in vals if v != v0][0]!r}")
    return v0


def stack(items):
    """items (values of one BatchableExtensionType) as one batch."""
    items = list(items)
    if not items:
        raise ValueError("Cannot stack an empty list of extension types")
    cls = type(items[0])
    if any(type(x) is not cls for x in items):
        raise TypeError(f"Cannot batch values of different types: "
                        f"{sorted({type(x).__name__ for x in items})}")
    if not issubclass(cls, BatchableExtensionType):
        raise TypeError(f"{cls.__name__} is not a BatchableExtensionType")
    names = [k for k, _ in items[0]._tfm_items()]
    return items[0]._tfm_replace({
        k: _stack_field([x.__dict__[k] for x in items]) for k in names})


def _spec_map(spec, tensor, shape):
    def composite(c):
        if isinstance(c, ExtensionTypeSpec):
            return _spec_map(c, tensor, shape)
        return c
    return _map_fields(spec, lambda v: _walk(v, tensor, shape, composite))


def batch_spec(spec, n):
    return _spec_map(
        spec, lambda s: TensorSpec(TensorShape([n]).concatenate(s.shape),
                                   s.dtype),
        lambda s: TensorShape([n]).concatenate(s))


def unbatch_spec(spec):
    return _spec_map(spec, lambda s: TensorSpec(s.shape[1:], s.dtype),
                     lambda s: s[1:])


def map_fn(fn, elems):
    """tf.map_fn over elems holding batchable extension types: fn on each
    row (unrolled, as tfmini's map_fn), the results stacked."""
    leaves = _nest.flatten(elems)
    sizes = {batch_size(x) if isinstance(x, ExtensionType) else
             x.shape[0] for x in leaves}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(f"tf.map_fn: elems must have one known size on "
                         f"axis 0; got {sorted(map(str, sizes))}")
    n = sizes.pop()
    results = []
    for i in range(n):
        row = [x._batch_item(i) if isinstance(x, ExtensionType) else x[i]
               for x in leaves]
        results.append(fn(_nest.pack_sequence_as(elems, row)))
    if not results:
        raise ValueError("tf.map_fn: tfmini needs at least one row to learn "
                         "the result type of fn over extension types")
    flat = [_nest.flatten(r) for r in results]
    return _nest.pack_sequence_as(results[0], [
        _stack_field([f[j] for f in flat]) for j in range(len(flat[0]))])
