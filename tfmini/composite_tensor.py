"""Composite tensors: values made of several tensors (tf.RaggedTensor,
tf.sparse.SparseTensor), and their specs.

A composite knows its components (a flat list of tensors, in TF's order)
and its TypeSpec; the spec rebuilds a value from components. That pair is
all tf.nest (expand_composites=True), tf.function (a composite argument
traces as placeholders for its components, Note [Composite arguments] in
function_structures.py) and tf.data need: none of them knows the types."""

__all__ = ["CompositeTensor", "TypeSpec"]


class CompositeTensor:
    """Base of the composite values. Subclasses give _type_spec and
    _to_components()."""

    __slots__ = ()

    @property
    def _type_spec(self):
        raise NotImplementedError

    def _to_components(self):
        raise NotImplementedError

    def _is_symbolic(self):
        return any(t._symbolic for t in self._to_components())

    # tf.data's view of a batch: its size, one item, a run of items.
    def _batch_size(self):
        return self.shape[0]

    def _batch_item(self, i):
        raise NotImplementedError

    def _batch_slice(self, start, stop):
        raise NotImplementedError


class TypeSpec:
    """Base of the composite specs (tf.RaggedTensorSpec,
    tf.SparseTensorSpec). Subclasses give _component_specs (TensorSpecs,
    one per component) and _from_components(tensors)."""

    __slots__ = ()

    # Both subclasses set _shape (a TensorShape) and _dtype.
    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def _component_specs(self):
        raise NotImplementedError

    def _from_components(self, components):
        raise NotImplementedError

    def is_compatible_with(self, other):
        if isinstance(other, CompositeTensor):
            other = other._type_spec
        if type(other) is not type(self):
            return False
        mine, theirs = self._component_specs, other._component_specs
        return len(mine) == len(theirs) and all(
            a.dtype == b.dtype and a.shape.is_compatible_with(b.shape)
            for a, b in zip(mine, theirs))


def is_composite(x):
    return isinstance(x, (CompositeTensor, TypeSpec))


def spec_of(x):
    """x's TypeSpec (x a composite value or already a spec)."""
    return x if isinstance(x, TypeSpec) else x._type_spec


# ---- op dispatch -----------------------------------------------------
# Note [Composite dispatch]: TF's public ops accept composite arguments
# (tf.add(ragged, 1), tf.reduce_sum(ragged, axis=1)) through a dispatch
# table on the op. tfmini's ops are C calls that refuse a non-tensor, so
# the ops that take composites are wrapped: the wrapper looks up the type
# of each of the first three positional arguments (and of the items of a
# list argument, for concat and stack) in a dict and calls the
# composite's handler. A Python wrapper costs a dense eager call about a
# microsecond, so the wrappers go in only when the first composite value
# is made (ensure_dispatch, from the composite constructors): a program
# that never makes one keeps the bare ops. (A function taken from tf
# before that, `from tfmini import add`, stays bare.)

_HANDLERS = {}        # op name -> {composite class: make_handler}
_NAMESPACES = []      # the modules whose ops get wrapped (tfmini's init)
_SCAN_ITEMS = object()
dispatch_installed = False


def register(names, cls, make_handler):
    """make_handler(original op, name) -> handler for cls arguments of
    each of the public ops `names` (tf.<name>, tf.math.<name>, ...)."""
    for n in names:
        _HANDLERS.setdefault(n, {})[cls] = make_handler


def _wrap(orig, name, makers):
    kinds = {cls: make(orig, name) for cls, make in makers.items()}
    kinds[list] = kinds[tuple] = _SCAN_ITEMS
    get = kinds.get

    def scan(items):
        for e in items:
            h = get(type(e))
            if h is not None and h is not _SCAN_ITEMS:
                return h
        return None

    # Inlined lookups: this runs on every call of a wrapped op.
    def op(*args, **kwargs):
        for a in args[:3]:
            h = get(type(a))
            if h is not None:
                if h is _SCAN_ITEMS:
                    h = scan(a)
                    if h is None:
                        continue
                return h(*args, **kwargs)
        if kwargs:
            for a in kwargs.values():
                h = get(type(a))
                if h is _SCAN_ITEMS:
                    h = scan(a)
                if h is not None:
                    return h(*args, **kwargs)
        return orig(*args, **kwargs)

    op.__name__ = op.__qualname__ = getattr(orig, "__name__", name)
    op.__doc__ = orig.__doc__
    op.__wrapped__ = orig
    op._composite_orig = orig      # what ensure_dispatch unwraps
    return op


def set_dispatch_namespaces(modules):
    _NAMESPACES[:] = modules


def ensure_dispatch():
    """Wrap the registered ops in each namespace module, once (one
    wrapper per distinct function, so tf.add and tf.math.add stay one
    object)."""
    global dispatch_installed
    if dispatch_installed:
        return
    done = {}
    for mod in _NAMESPACES:
        for name, makers in _HANDLERS.items():
            orig = getattr(mod, name, None)
            if orig is None:
                continue
            base = getattr(orig, "_composite_orig", orig)
            key = (id(base), name)
            if key not in done:
                done[key] = _wrap(base, name, makers)
            setattr(mod, name, done[key])
    # Set last: another thread making a composite meanwhile installs
    # again (the same wrappers, from the same bare ops) rather than
    # calling a bare op with a composite.
    dispatch_installed = True
