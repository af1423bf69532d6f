"""Turning a Python function into its converted twin, and deciding which
functions to convert.

The converted function is compiled from the rewritten source with the
original file name and line numbers (tracebacks show the user's lines),
and is made from the original's globals, defaults and closure cells, so
it sees and changes the same variables. Conversion happens once per
function object (cached weakly)."""
import __future__
import ast
import copy
import functools
import inspect
import logging
import os
import site
import sysconfig
import textwrap
import types
import weakref

from . import converter
from . import operators

_logger = logging.getLogger("tfmini")

_FACTORY = "__ag_factory"
_CONVERTED = "__ag_converted"
_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

# Modules never converted: tfmini itself, the standard library and
# installed packages (see _is_library).
_DO_NOT_CONVERT = frozenset({
    "tfmini", "numpy", "scipy", "pandas", "pytest", "_pytest", "pluggy",
    "hypothesis", "unittest", "tensorflow", "torch", "jax", "keras",
    "builtins", "abc", "ast", "collections", "contextlib", "copy",
    "dataclasses", "enum", "functools", "inspect", "itertools", "json",
    "logging", "math", "operator", "os", "pickle", "random", "re", "sys",
    "threading", "traceback", "types", "typing", "warnings", "weakref"})


def _library_dirs():
    dirs = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.add(os.path.realpath(paths[key]))
    try:
        dirs.update(os.path.realpath(p) for p in site.getsitepackages())
    except AttributeError:
        pass
    user = getattr(site, "getusersitepackages", lambda: None)()
    if user:
        dirs.add(os.path.realpath(user))
    return tuple(d + os.sep for d in dirs)


_LIBRARY_DIRS = _library_dirs()
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class SourceUnavailable(Exception):
    """The function's source cannot be read (REPL, exec), or a lambda's
    cannot be told apart from another's on the same line."""


# ---- conversion ----------------------------------------------------------

# Note [Conversion cache]: a converted function shares its original's
# closure cells, which may lead back to the original (a tf.function that
# stores itself in a dict it closes over). Kept in a global weak-keyed
# table, the converted value would keep its own key alive; kept on the
# original function (`_ag_converted`, with the code it was made from, so
# that functools.wraps copying __dict__ to a wrapper does not fool us) it
# lives and dies with it. Decisions not to convert depend on the code
# object only and are cached by it.
_converted_code = weakref.WeakSet()          # code objects we compiled
_warned = weakref.WeakSet()                  # code objects warned about
_skipped = weakref.WeakKeyDictionary()       # code -> never convert?


def _strict():
    return os.environ.get("TFMINI_AUTOGRAPH_STRICT", "") not in ("", "0")


# ---- lambdas -------------------------------------------------------------

# Note [Lambda source]: like TF, a lambda is found by parsing its whole
# source file (the lines of a lambda inside a call spanning several lines
# do not parse alone) and picking the ast.Lambda nodes on the line where
# its code starts whose signature matches the code's. Two lambdas with
# identical signatures on one line cannot be told apart: that one is not
# converted (one warning, run as-is). Its body, one expression, becomes
# `return <body>` in a FunctionDef with the lambda's location, so the
# converted code names the user's file, line and column. Parsed files are
# cached by the identity of linecache's list of lines, which changes when
# the file does.
_LAMBDA = "__ag_lambda"          # the FunctionDef's name (see _build)
_lambda_nodes_cache = {}         # filename -> (lines, {lineno: [Lambda]})
_SNIPPET_REACH = 10              # lines tried around a lambda (fallback)


def _lambdas_by_line(tree, offset=0):
    by_line = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Lambda):
            by_line.setdefault(n.lineno + offset, []).append(n)
    return by_line


def _file_lambdas(filename, lines):
    """{line: [ast.Lambda]} for a whole source file, or None when it does
    not parse."""
    cached = _lambda_nodes_cache.get(filename)
    if cached is not None and cached[0] is lines:
        return cached[1]
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        by_line = None
    else:
        by_line = _lambdas_by_line(tree)
    _lambda_nodes_cache[filename] = (lines, by_line)
    return by_line


def _snippet_lambdas(lines, lnum):
    """The lambdas starting on line lnum (1-based), from the first window
    of lines around it (fewest lines before it, then after) that parses
    once dedented and has lambdas on that line, with their real line
    numbers and columns; None when there is none."""
    start0 = lnum - 1
    for back in range(min(start0, _SNIPPET_REACH) + 1):
        for ahead in range(min(len(lines) - start0, _SNIPPET_REACH + 1)):
            chunk = lines[start0 - back:start0 + ahead + 1]
            text = "".join(chunk)
            dedented = textwrap.dedent(text)
            try:
                tree = ast.parse(dedented)
            except (SyntaxError, ValueError):
                continue
            nodes = _lambdas_by_line(tree, start0 - back).get(lnum)
            if not nodes:
                continue
            # The whitespace dedent removed from every non-blank line.
            k = next(k for k, ln in enumerate(chunk) if ln.strip())
            indent = len(chunk[k].rstrip("\r\n")) - \
                len(dedented.splitlines()[k])
            for node in nodes:
                for n in ast.walk(node):
                    if hasattr(n, "lineno"):
                        n.lineno += start0 - back
                        if getattr(n, "end_lineno", None) is not None:
                            n.end_lineno += start0 - back
                    if indent and hasattr(n, "col_offset"):
                        n.col_offset += indent
                        if getattr(n, "end_col_offset", None) is not None:
                            n.end_col_offset += indent
            return nodes
    return None


def _matches_signature(node, f):
    """Whether an ast.Lambda has f's parameters: names, kinds, and which
    have defaults."""
    code = f.__code__
    a = node.args
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    i = npos + nkw
    vararg = kwarg = None
    if code.co_flags & inspect.CO_VARARGS:
        vararg, i = names[i], i + 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwarg = names[i]
    kw_with_defaults = {arg.arg for arg, d in zip(a.kwonlyargs, a.kw_defaults)
                        if d is not None}
    return ([p.arg for p in a.posonlyargs + a.args] == list(names[:npos])
            and len(a.posonlyargs) == code.co_posonlyargcount
            and [p.arg for p in a.kwonlyargs] == list(names[npos:npos + nkw])
            and (a.vararg.arg if a.vararg else None) == vararg
            and (a.kwarg.arg if a.kwarg else None) == kwarg
            and len(a.defaults) == len(f.__defaults__ or ())
            and kw_with_defaults == set(f.__kwdefaults__ or ()))


def _lambda_source(f):
    """An ast.FunctionDef equivalent to the lambda f (see Note [Lambda
    source])."""
    code = f.__code__
    try:
        lines, _ = inspect.findsource(code)
    except (OSError, TypeError, IndexError) as e:
        raise SourceUnavailable(f"could not get source code ({e})") from None
    lnum = code.co_firstlineno
    by_line = _file_lambdas(code.co_filename, lines)
    if by_line is not None:
        nodes = by_line.get(lnum, [])
    else:
        nodes = _snippet_lambdas(lines, lnum) or []
    matches = [n for n in nodes if _matches_signature(n, f)]
    if not matches:
        raise SourceUnavailable(
            f"could not parse the source code of {code.co_name}: no "
            f"matching AST found among candidates")
    if len(matches) > 1:
        found = "\n".join(f"Match {i}:\n{ast.unparse(n)}"
                           for i, n in enumerate(matches))
        raise SourceUnavailable(
            f"could not parse the source code of {code.co_name}: found "
            f"multiple definitions with identical signatures at the "
            f"location. This error may be avoided by defining each lambda "
            f"on a single line and with unique argument names. The "
            f"matching definitions were:\n{found}")
    node = copy.deepcopy(matches[0])     # converting rewrites it in place
    body = ast.copy_location(ast.Return(value=node.body), node.body)
    fields = dict(name=_LAMBDA, args=node.args, body=[body],
                  decorator_list=[], returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:
        fields["type_params"] = []
    return ast.copy_location(ast.FunctionDef(**fields), node)


def _function_source(f):
    code = f.__code__
    if code.co_name == "<lambda>":
        return _lambda_source(f)
    try:
        # The code object, not f: inspect would follow f.__wrapped__ (set
        # by functools.wraps) to another function's source.
        lines, first = inspect.getsourcelines(code)
    except (OSError, TypeError) as e:
        raise SourceUnavailable(f"could not get source code ({e})") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    first_line = next((ln for ln in lines if ln.strip()), "")
    indent = len(first_line) - len(first_line.lstrip())
    if dedented == text:
        indent = 0
    try:
        tree = ast.parse(dedented)
    except SyntaxError as e:
        raise SourceUnavailable(f"could not parse its source ({e})") from None
    fn = next((n for n in tree.body
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.name == code.co_name), None)
    if fn is None:
        raise SourceUnavailable(f"no definition of {code.co_name!r} found "
                                f"in its source")
    ast.increment_lineno(tree, max(code.co_firstlineno, first) - 1)
    if indent:
        for n in ast.walk(tree):
            if hasattr(n, "col_offset"):
                n.col_offset += indent
                if getattr(n, "end_col_offset", None) is not None:
                    n.end_col_offset += indent
    return fn


def _build(f, fn_node):
    """The converted function: fn_node compiled inside a factory whose
    locals are named like f's free variables, so the new code has them as
    free variables too, then given f's own cells."""
    code = f.__code__
    fn_node.decorator_list = []
    # Renamed inside the factory: a def binds its name there, which would
    # turn the function's own name (a global, for recursion) into a free
    # variable.
    fn_node.name = _CONVERTED
    freevars = [v for v in code.co_freevars]
    factory = converter._funcdef(_FACTORY, [], [
        converter._assign(name, converter._const(None))
        for name in [converter.AG] + freevars] + [fn_node])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    flags = code.co_flags & _FUTURE_FLAGS
    compiled = compile(module, code.co_filename, "exec", flags=flags,
                       dont_inherit=True)
    fcode = next(c for c in compiled.co_consts
                 if isinstance(c, types.CodeType) and c.co_name == _FACTORY)
    new_code = next(c for c in fcode.co_consts
                    if isinstance(c, types.CodeType) and
                    c.co_name == _CONVERTED)
    renames = dict(co_name=code.co_name)
    if hasattr(code, "co_qualname"):
        renames["co_qualname"] = code.co_qualname
    new_code = new_code.replace(**renames)
    cells = dict(zip(freevars, f.__closure__ or ()))
    closure = []
    for name in new_code.co_freevars:
        if name == converter.AG:
            closure.append(types.CellType(operators))
        else:
            closure.append(cells[name])
    new = types.FunctionType(new_code, f.__globals__, f.__name__,
                             f.__defaults__, tuple(closure) or None)
    new.__kwdefaults__ = f.__kwdefaults__
    new.__dict__.update((k, v) for k, v in f.__dict__.items()
                        if not k.startswith("_ag_"))
    for attr in ("__doc__", "__module__", "__qualname__", "__annotations__"):
        try:
            setattr(new, attr, getattr(f, attr))
        except (AttributeError, TypeError):
            pass
    _register_code(new_code)
    return new


def _register_code(code):
    _converted_code.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _register_code(c)


def _transform(f):
    """(converted function, converted source) for a Python function."""
    fn_node = _function_source(f)
    converter.convert_function(fn_node)
    fn_node.decorator_list = []
    source = ast.unparse(fn_node)
    new = _build(f, fn_node)
    new._ag_source = source
    new._ag_original = weakref.ref(f)
    return new


def _warn_once(f, cause):
    code = getattr(f, "__code__", None)
    if code is not None:
        if code in _warned:
            return
        _warned.add(code)
    _logger.warning(
        "AutoGraph could not transform %r and will run it as-is. Cause: %s. "
        "Python control flow on tensors in it will not become graph "
        "control flow. To silence this warning, decorate the function "
        "with @tf.autograph.experimental.do_not_convert", f, cause)


def _unwrap(f):
    """The plain function behind f, and a way to call its converted
    version like f, or None when f is not a Python function."""
    if type(f) is types.FunctionType:
        return f, lambda conv: conv
    if type(f) is types.MethodType and \
            type(f.__func__) is types.FunctionType:
        self = f.__self__
        return f.__func__, lambda conv: types.MethodType(conv, self)
    return None, None


def _never(fn):
    """Functions that are not converted, silently."""
    if getattr(fn, "_ag_do_not_convert", False):
        return True
    code = fn.__code__
    skip = _skipped.get(code)
    if skip is None:
        skip = (code in _converted_code or
                bool(code.co_flags & (inspect.CO_GENERATOR |
                                      inspect.CO_COROUTINE |
                                      inspect.CO_ASYNC_GENERATOR)) or
                _is_library(fn))
        _skipped[code] = skip
    return skip


def _is_library(fn):
    module = getattr(fn, "__module__", None) or ""
    if module.split(".")[0] in _DO_NOT_CONVERT:
        return True
    path = os.path.realpath(fn.__code__.co_filename)
    if path.startswith(_here):
        return True
    return path.startswith(_LIBRARY_DIRS)


def _convert_cached(fn, warn_lambda):
    """fn's converted twin, or None (see Note [Conversion cache])."""
    code = fn.__code__
    cached = fn.__dict__.get("_ag_converted")
    if cached is not None and cached[0] is code:
        return cached[1]
    if _never(fn):
        return None
    try:
        result = _transform(fn)
    except SourceUnavailable as e:
        if warn_lambda or code.co_name != "<lambda>":
            _warn_once(fn, e)
        _skipped[code] = True
        return None
    except Exception as e:  # a converter bug must not break user code
        if _strict():
            raise
        _warn_once(fn, f"{type(e).__name__}: {e}")
        _skipped[code] = True
        return None
    fn.__dict__["_ag_converted"] = (code, result)
    return result


def call_target(f):
    """What converted code should call for f: f's converted twin (bound
    like f) for a user function, else None (call f itself)."""
    if isinstance(f, functools.partial):
        inner = call_target(f.func)
        if inner is None:
            return None
        return functools.partial(inner, *f.args, **f.keywords)
    fn, rebind = _unwrap(f)
    if fn is None:
        call = getattr(type(f), "__call__", None)
        if type(call) is not types.FunctionType or \
                isinstance(f, (type, types.BuiltinFunctionType)):
            return None
        conv = _convert_cached(call, False)
        return None if conv is None else types.MethodType(conv, f)
    conv = _convert_cached(fn, False)
    return None if conv is None else rebind(conv)


operators._call_target = call_target


def convert(f):
    """f's converted twin for tf.function (autograph=True): f itself when
    it must not or cannot be converted (with one warning for the
    latter)."""
    fn, rebind = _unwrap(f)
    if fn is None:
        return f
    if getattr(fn, "_ag_do_not_convert", False) or fn.__code__ in \
            _converted_code:
        return f
    conv = _convert_cached(fn, True)
    return f if conv is None else rebind(conv)


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """The converted version of a Python function (or method): Python
    control flow on tensors in it becomes graph control flow when it is
    traced. Raises if it cannot be converted."""
    fn, rebind = _unwrap(entity)
    if fn is None:
        raise TypeError(f"tf.autograph.to_graph expects a Python function "
                        f"or method, got {entity!r}")
    return rebind(_transform(fn))


def to_code(entity, recursive=True, experimental_optional_features=None):
    """The source code of entity as AutoGraph converts it."""
    fn, _ = _unwrap(entity)
    if fn is None:
        raise TypeError(f"tf.autograph.to_code expects a Python function "
                        f"or method, got {entity!r}")
    original = getattr(fn, "_ag_original", None)
    if original is not None and original() is not None:
        fn = original()
    return _transform(fn)._ag_source + "\n"


def do_not_convert(func=None):
    """Decorator: run func as written, never converted by AutoGraph."""
    if func is None:
        return do_not_convert
    try:
        func._ag_do_not_convert = True
        return func
    except AttributeError:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)
        wrapper._ag_do_not_convert = True
        return wrapper
