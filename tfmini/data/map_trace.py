"""Dataset.map's function traced when map() is called, as TF traces it.

Note [Map traced at map()]: TF builds a graph of the map function in
map(), so an error in the function is raised there (wrapped as "in user
code:"), and the element_spec is known without reading. tfmini traces it
there too (for the spec and for those errors) but still runs the
function eagerly per element, once each: some functions that TF runs as
graphs tfmini can only run eagerly (ops with no graph form, .numpy(),
return values tf.function refuses). A failed trace is therefore the
user's error only if the function also fails eagerly on a made-up
element of the source's spec (ones of each dtype, a None dimension 1);
otherwise tfmini's limit, and the elements tell as before.
"""
import importlib
import linecache
import os
import traceback

import numpy as np

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _ds():
    from . import dataset
    return dataset


def known_spec(ds):
    """ds.element_spec where it is known without reading an element;
    None otherwise."""
    Dataset = _ds().Dataset
    if not isinstance(ds, Dataset):
        return None
    if type(ds).element_spec is not Dataset.element_spec:
        return ds.element_spec        # a source that names its spec
    spec = getattr(ds, "_spec", None)
    if spec is not None:
        return spec
    same = getattr(ds, "_spec_from", None)
    if same is not None:
        return known_spec(same)
    batched = getattr(ds, "_batched_from", None)
    if batched is not None and getattr(ds, "_mapped_from", None) is None:
        src = known_spec(batched[0])
        if src is None:
            return None
        from .transforms import batched_spec
        return batched_spec(src, batched[1])
    padded = getattr(ds, "_padded_from", None)
    if padded is not None:
        src = known_spec(padded[0])
        if src is None:
            return None
        from .transforms import padded_spec
        return padded_spec(src, *padded[1:])
    zipped = getattr(ds, "_zipped_from", None)
    if zipped is not None:
        specs = [known_spec(d) for d in _ds()._nest._flatten(zipped)]
        if any(s is None for s in specs):
            return None
        return _ds()._nest._pack(zipped, specs)
    return getattr(ds, "_untraced_spec", None)


def _args(spec):
    if isinstance(spec, tuple) and not hasattr(spec, "_fields"):
        return spec
    return (spec,)


def _made_up(spec):
    """An eager element of a plain TensorSpec (None for anything else)."""
    from ..tensor_spec import TensorSpec
    from .. import dtypes
    if type(spec) is not TensorSpec or spec.shape.rank is None:
        return None
    dt = spec.dtype
    if dt == dtypes.string or not (dt.is_floating or dt.is_integer or
                                   dt.is_bool or dt.is_complex):
        return None
    shape = [1 if d is None else int(d) for d in spec.shape.as_list()]
    from ..ops.constant_op import constant
    return constant(np.ones(shape, dt.as_numpy_dtype), dtype=dt)


def _eager_spec(map_func, spec):
    """map_func run eagerly on a made-up element of spec: (failed, the
    output's spec with every dimension None, or None)."""
    from .. import nest
    from ..tensor_spec import TensorSpec
    from . import transforms
    leaves = nest.flatten(spec)
    made = [_made_up(s) for s in leaves]
    if not leaves or any(m is None for m in made):
        return False, None
    element = nest.pack_sequence_as(spec, made)
    try:
        out = map_func(*_args(element))
    except Exception:  # noqa: BLE001 - any error: the trace's stands
        return True, None
    try:
        out = _ds()._map_structure(transforms._spec_of, out)
        return False, _ds()._map_structure(
            lambda s: TensorSpec([None] * len(s.shape), s.dtype)
            if type(s) is TensorSpec else s, out)
    except Exception:  # noqa: BLE001 - no spec: the elements tell
        return False, None


def _in_user_code(e):
    """e again, its message TF's "in user code:" with the frames of the
    user's function (TF: the same exception type)."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not os.path.abspath(f.filename).startswith(_HERE)]
    lines = ["in user code:", ""]
    for f in frames:
        lines.append(f'    File "{f.filename}", line {f.lineno}, in '
                     f'{f.name}  *')
        src = f.line or linecache.getline(f.filename, f.lineno).strip()
        if src:
            lines.append(f"        {src}")
    lines += ["", f"    {type(e).__name__}: {e}", ""]
    msg = "\n".join(lines)
    for args in ((msg,), (None, None, msg)):
        try:
            new = type(e)(*args)
        except Exception:  # noqa: BLE001 - another constructor: try next
            continue
        if str(new) == msg:
            return new
    return e


def trace(src, map_func):
    """(traced, spec, untraced): whether the function was traced now,
    on src's spec; the mapped dataset's element_spec (None where tfmini
    cannot trace the function; see Note [Map traced at map()]); and,
    where it cannot, the spec of a made-up element's result with every
    dimension None (for known_spec only). Not traced where src's spec
    needs an element. Raises the function's own error."""
    in_spec = known_spec(src)
    if in_spec is None:
        return False, None, None
    args = _args(in_spec)
    if not all(hasattr(a, "dtype") or isinstance(a, dict) for a in args):
        return False, None, None
    from . import transforms
    _function = importlib.import_module("tfmini.function")
    traced = _function.function(lambda *a: map_func(*a), autograph=False)
    transforms._probe.on = True
    try:
        outs = traced.get_concrete_function(*args).structured_outputs
    except Exception as e:  # noqa: BLE001 - tfmini's limit or the user's
        transforms._probe.on = False
        failed, untraced = _eager_spec(map_func, in_spec)
        if failed:
            raise _in_user_code(e) from None
        return True, None, untraced
    finally:
        transforms._probe.on = False
    # A Python list in the result becomes one tensor per element (as TF
    # converts it), which the trace's outputs do not show: the spec then
    # comes from the first element, as for an untraced function.
    if outs is None or _has_list(outs):
        return True, None, None
    return True, _ds()._map_structure(transforms._spec_of, outs), None


def _has_list(x):
    if isinstance(x, list):
        return True
    if isinstance(x, tuple):
        return any(_has_list(v) for v in x)
    if isinstance(x, dict):
        return any(_has_list(v) for v in x.values())
    return False
