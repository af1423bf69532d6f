"""AutoGraph's source transformation: a function's AST in, the same
function written with `ag__.*` operators out (see operators.py).

Per function scope (nested functions first), in this order:
  1. `global`/`nonlocal` statements move to the top (blocks become
     functions, so a declaration in a block would change meaning);
  2. `return` inside control flow becomes `do_return = True; retval_ = v`
     with the rest of each block guarded by `if not do_return:`; an `if`
     whose body always returns takes the code after it as its `else`;
  3. `break`/`continue` become flags the same way, loop `else` clauses
     move after the loop, set_loop_options() calls become loop options;
  4. expressions: `a if c else b`, `and`/`or`/`not`, calls, `assert`,
     item assignment (`x[i] = v` -> `x = ag__.setitem(x, i, v)`);
  5. `if`/`while`/`for` become local functions plus one operator call,
     with the variables they change as explicit state (Note [Block state]
     in operators.py), chosen by the liveness and definedness analyses;
  6. reads of variables that may be undefined go through ag__.ld().
Nodes keep the user's line numbers, so tracebacks point at their code."""
import ast
import copy

from . import analysis as an

AG = "ag__"
_TRY = (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_AUG_OPS = {ast.Add: "iadd", ast.Sub: "isub", ast.Mult: "imul",
            ast.Div: "itruediv", ast.FloorDiv: "ifloordiv",
            ast.Mod: "imod", ast.Pow: "ipow", ast.MatMult: "imatmul",
            ast.BitAnd: "iand", ast.BitOr: "ior", ast.BitXor: "ixor",
            ast.LShift: "ilshift", ast.RShift: "irshift"}
_LOOP_OPTION_ARGS = ("parallel_iterations", "swap_memory",
                     "maximum_iterations", "shape_invariants")


class ConversionError(Exception):
    """The function uses something AutoGraph cannot convert."""


# ---- node builders -------------------------------------------------------

def _load(name, raw=False):
    n = ast.Name(id=name, ctx=ast.Load())
    if raw:
        n._ag_raw = True
    return n


def _store(name):
    return ast.Name(id=name, ctx=ast.Store())


def _ag(attr):
    return ast.Attribute(value=_load(AG), attr=attr, ctx=ast.Load())


def _ag_call(attr, *args):
    return ast.Call(func=_ag(attr), args=list(args), keywords=[])


def _const(v):
    return ast.Constant(value=v)


def _not(e):
    return ast.UnaryOp(op=ast.Not(), operand=e)


def _assign(name, value):
    return ast.Assign(targets=[_store(name)], value=value)


def _arguments(names=()):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names],
                         vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


def _lambda(body):
    lam = ast.Lambda(args=_arguments(), body=body)
    lam._ag_inline = True     # called at once: not an escaping closure
    return lam


def _funcdef(name, params, body):
    fields = dict(name=name, args=_arguments(params), body=body,
                  decorator_list=[], returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:
        fields["type_params"] = []
    return ast.FunctionDef(**fields)


def _is_ag_call(node, attr=None):
    return (isinstance(node, ast.Call) and
            isinstance(node.func, ast.Attribute) and
            isinstance(node.func.value, ast.Name) and
            node.func.value.id == AG and
            (attr is None or node.func.attr == attr))


def _with_ctx(node, ctx):
    node = copy.deepcopy(node)
    node.ctx = ctx
    return node


def _at(nodes, ref):
    """Give generated statements ref's position, on ref's first line only:
    a generated call spanning ref's lines would make Python report its
    last line (3.11 places a method call at its attribute's end)."""
    for n in nodes:
        n.lineno = ref.lineno
        n.col_offset = ref.col_offset
        n.end_lineno = ref.lineno
        n.end_col_offset = (ref.end_col_offset if ref.end_lineno ==
                            ref.lineno else ref.col_offset)
    return nodes


def _child_blocks(s):
    """(owner, field) of each statement list directly inside s."""
    if isinstance(s, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [(s, "body"), (s, "orelse")]
    if isinstance(s, (ast.With, ast.AsyncWith)):
        return [(s, "body")]
    if isinstance(s, _TRY):
        return ([(s, "body"), (s, "orelse"), (s, "finalbody")] +
                [(h, "body") for h in s.handlers])
    if isinstance(s, ast.Match):
        return [(c, "body") for c in s.cases]
    return []


def _set_block(owner, field, stmts):
    if not stmts and field == "body":
        stmts = [ast.Pass()]
    setattr(owner, field, stmts)


def _docstring(body):
    if body and isinstance(body[0], ast.Expr) and \
            isinstance(body[0].value, ast.Constant) and \
            isinstance(body[0].value.value, str):
        return body[:1], body[1:]
    return [], body


class _Namer:
    """Fresh names that clash with nothing in the function."""

    def __init__(self, tree):
        self.used = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                self.used.add(n.id)
            elif isinstance(n, ast.arg):
                self.used.add(n.arg)
            elif isinstance(n, _DEFS):
                self.used.add(n.name)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                self.used.update(n.names)
            elif isinstance(n, ast.alias):
                self.used.add((n.asname or n.name).split(".")[0])

    def new(self, base):
        name, i = base, 1
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        return name


# ---- entry point ---------------------------------------------------------

def convert_function(fn):
    """Rewrite fn, an ast.FunctionDef, in place."""
    namer = _Namer(fn)
    if AG in namer.used:
        raise ConversionError(f"the name {AG!r} is reserved for AutoGraph")
    _scope(fn, namer, top=True)
    ast.fix_missing_locations(fn)
    return fn


def _is_generator(fn):
    return any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await))
               for n in an.own_nodes(fn.body))


def _scope(fn, namer, top=False):
    if isinstance(fn, ast.AsyncFunctionDef) or _is_generator(fn):
        return
    for n in list(an.own_nodes(fn.body)):
        if isinstance(n, ast.FunctionDef):
            _scope(n, namer)
    _hoist_declarations(fn)
    _Returns(namer).run(fn)
    fn.body = _Loops(namer).block(fn.body)
    local = set(an.params(fn)) | an.bound(fn.body)
    for n in an.own_nodes(fn.body):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            local.update(n.names)
    fn.body = _Rewriter(_super_self(fn, top), local).block(fn.body)
    scope = an.Scope(fn)
    an.Liveness(scope).run()
    an.Definedness(scope).run()
    cf = _ControlFlow(scope, namer)
    fn.body = cf.block(fn.body)
    if cf.undefined:
        loads = _Loads(cf.undefined)
        fn.body = [loads.visit(s) for s in fn.body]


def _super_self(fn, top):
    """The name of a method's first parameter, for rewriting `super()`
    into `super(__class__, self)`: zero-argument super() finds both in its
    own frame, which a block turned into a local function lacks."""
    if not top:
        return None
    a = fn.args
    first = (a.posonlyargs + a.args)[:1]
    if not first or "super" in an.bound(fn.body):
        return None
    return first[0].arg


# ---- 1. declarations -----------------------------------------------------

def _hoist_declarations(fn):
    glob, nonloc = [], []

    def strip(stmts):
        out = []
        for s in stmts:
            if isinstance(s, ast.Global):
                glob.extend(n for n in s.names if n not in glob)
                continue
            if isinstance(s, ast.Nonlocal):
                nonloc.extend(n for n in s.names if n not in nonloc)
                continue
            for owner, field in _child_blocks(s):
                _set_block(owner, field, strip(getattr(owner, field)))
            out.append(s)
        return out

    doc, body = _docstring(fn.body)
    body = strip(body)
    decls = []
    if glob:
        decls.append(ast.Global(names=glob))
    if nonloc:
        decls.append(ast.Nonlocal(names=nonloc))
    fn.body = doc + decls + (body or ([] if doc or decls else [ast.Pass()]))
    if not fn.body:
        fn.body = [ast.Pass()]


# ---- 2. return statements ------------------------------------------------

class _Returns:

    def __init__(self, namer):
        self.namer = namer

    def run(self, fn):
        if not self._nested(fn.body, False):
            return
        body, _ = self._fold(fn.body)
        self.flag = self.namer.new("do_return")
        self.value = self.namer.new("retval_")
        body, _ = self._lower(body)
        doc, body = _docstring(body)
        decls = [s for s in body if isinstance(s, (ast.Global, ast.Nonlocal))]
        body = [s for s in body if s not in decls]
        head = _at([_assign(self.flag, _const(False)),
                    _assign(self.value, _ag_call("UndefinedReturnValue"))],
                   fn)
        tail = _at([ast.Return(value=_ag_call("retval", _load(self.value)))],
                   fn)
        fn.body = doc + decls + head + body + tail

    def _nested(self, stmts, inside):
        for s in stmts:
            if isinstance(s, ast.Return) and inside:
                return True
            deeper = inside or isinstance(s, (ast.If, ast.For, ast.While))
            for owner, field in _child_blocks(s):
                if self._nested(getattr(owner, field), deeper):
                    return True
        return False

    def _fold(self, stmts):
        """Move the code after an `if` one of whose branches always
        returns into the other branch; drop code after a return.
        Returns (stmts, whether the block always returns)."""
        out = []
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(s, ast.Return):
                out.append(s)
                return out, True
            if isinstance(s, ast.If):
                s.body, b = self._fold(s.body)
                s.orelse, o = self._fold(s.orelse)
                if b and o:
                    out.append(s)
                    return out, True
                if b and rest:
                    s.orelse, o = self._fold(s.orelse + rest)
                    out.append(s)
                    return out, b and o
                if o and rest:
                    s.body, b = self._fold(s.body + rest)
                    out.append(s)
                    return out, b and o
                out.append(s)
                continue
            if isinstance(s, (ast.With, ast.AsyncWith)):
                s.body, b = self._fold(s.body)
                out.append(s)
                if b:
                    return out, True
                continue
            for owner, field in _child_blocks(s):
                new, _ = self._fold(getattr(owner, field))
                _set_block(owner, field, new)
            out.append(s)
        return out, False

    def _guarded(self, stmts):
        return _not(_load(self.flag)), stmts

    def _lower(self, stmts):
        """Returns (stmts, whether they may have returned)."""
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                value = s.value if s.value is not None else _const(None)
                out.extend(_at([_assign(self.value, value),
                                _assign(self.flag, _const(True))], s))
                return out, True
            may = False
            if isinstance(s, (ast.While, ast.For)):
                s.body, may = self._lower(s.body)
                if may:
                    guard = _not(_load(self.flag))
                    if isinstance(s, ast.While):
                        s.test = ast.copy_location(ast.BoolOp(
                            op=ast.And(), values=[guard, s.test]), s.test)
                    else:
                        s._ag_extra_test = [guard] + getattr(
                            s, "_ag_extra_test", [])
                    if s.orelse:
                        s.orelse = _at([ast.If(test=_not(_load(self.flag)),
                                               body=s.orelse, orelse=[])],
                                       s.orelse[0])
                s.orelse, m = self._lower(s.orelse)
                may = may or m
            else:
                for owner, field in _child_blocks(s):
                    new, m = self._lower(getattr(owner, field))
                    _set_block(owner, field, new)
                    may = may or m
            out.append(s)
            if may:
                if i + 1 < len(stmts):
                    rest, _ = self._lower(stmts[i + 1:])
                    out.extend(_at([ast.If(test=_not(_load(self.flag)),
                                           body=rest, orelse=[])],
                                   stmts[i + 1]))
                return out, True
        return out, False


# ---- 3. break, continue, loop else, loop options -------------------------

def _contains(stmts, kind):
    """Whether stmts hold a `kind` statement of this loop (not one of a
    nested loop or function)."""
    for s in stmts:
        if isinstance(s, kind):
            return True
        if isinstance(s, (ast.For, ast.AsyncFor, ast.While) + _DEFS):
            continue
        for owner, field in _child_blocks(s):
            if _contains(getattr(owner, field), kind):
                return True
    return False


def _flag_block(stmts, kind, flag):
    """Replace `kind` (Break or Continue) by `flag = True`, guarding the
    statements after it. Returns (stmts, whether the flag may be set)."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, kind):
            out.extend(_at([_assign(flag, _const(True))], s))
            return out, True
        may = False
        if not isinstance(s, (ast.For, ast.AsyncFor, ast.While) + _DEFS):
            for owner, field in _child_blocks(s):
                new, m = _flag_block(getattr(owner, field), kind, flag)
                _set_block(owner, field, new)
                may = may or m
        out.append(s)
        if may:
            if i + 1 < len(stmts):
                rest, _ = _flag_block(stmts[i + 1:], kind, flag)
                out.extend(_at([ast.If(test=_not(_load(flag)), body=rest,
                                       orelse=[])], stmts[i + 1]))
            return out, True
    return out, False


def _callee_name(f):
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


class _Loops:

    def __init__(self, namer):
        self.namer = namer

    def block(self, stmts):
        out = []
        for s in stmts:
            if not isinstance(s, _DEFS):
                for owner, field in _child_blocks(s):
                    _set_block(owner, field, self.block(getattr(owner,
                                                                field)))
            if isinstance(s, (ast.While, ast.For)):
                out.extend(self.loop(s))
            else:
                out.append(s)
        return out

    def loop(self, s):
        s._ag_opts = self._options(s)
        before, after = [], []
        if _contains(s.body, ast.Continue):
            flag = self.namer.new("continue_")
            body, _ = _flag_block(s.body, ast.Continue, flag)
            s.body = _at([_assign(flag, _const(False))], s.body[0]) + body
        if _contains(s.body, ast.Break):
            flag = self.namer.new("break_")
            s.body, _ = _flag_block(s.body, ast.Break, flag)
            before = _at([_assign(flag, _const(False))], s)
            if isinstance(s, ast.While):
                s.test = ast.copy_location(ast.BoolOp(
                    op=ast.And(), values=[_not(_load(flag)), s.test]),
                    s.test)
            else:
                s._ag_extra_test = getattr(s, "_ag_extra_test", []) + [
                    _not(_load(flag))]
            if s.orelse:
                after = _at([ast.If(test=_not(_load(flag)), body=s.orelse,
                                    orelse=[])], s.orelse[0])
        else:
            after = s.orelse
        s.orelse = []
        return before + [s] + after

    def _options(self, s):
        """set_loop_options(...) calls at the top level of the loop body,
        removed, as the dict of options for the loop operator."""
        keys, values, keep = [], [], []
        for st in s.body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and _callee_name(st.value.func) == "set_loop_options":
                call = st.value
                for name, arg in zip(_LOOP_OPTION_ARGS, call.args):
                    keys.append(_const(name))
                    values.append(arg)
                for kw in call.keywords:
                    keys.append(_const(kw.arg))
                    values.append(kw.value)
                continue
            keep.append(st)
        s.body = keep or _at([ast.Pass()], s)
        return ast.copy_location(ast.Dict(keys=keys, values=values), s)


# ---- 4. expressions ------------------------------------------------------

def _key(s):
    """A subscript key as a value: slices become slice objects."""
    if isinstance(s, ast.Slice):
        return _ag_call("slice_", s.lower or _const(None),
                        s.upper or _const(None), s.step or _const(None))
    if isinstance(s, ast.Tuple):
        return ast.Tuple(elts=[_key(e) for e in s.elts], ctx=ast.Load())
    return s


class _Rewriter(ast.NodeTransformer):

    def __init__(self, self_name=None, local=()):
        self.self_name = self_name
        self.local = local      # names item assignment may rebind

    def block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            if isinstance(r, list):
                out.extend(r)
            elif r is not None:
                out.append(r)
        return out

    def visit_FunctionDef(self, node):
        return node            # its own scope, converted on its own

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_For(self, node):
        self.generic_visit(node)
        node._ag_extra_test = [self.visit(e) for e in
                               getattr(node, "_ag_extra_test", [])]
        if _is_ag_call(node.iter, "converted_call"):
            node.iter.args.append(_const(True))    # for_iter
        return node

    def visit_IfExp(self, node):
        text = ast.unparse(node)
        self.generic_visit(node)
        return ast.copy_location(
            _ag_call("if_exp", node.test, _lambda(node.body),
                     _lambda(node.orelse), _const(text)), node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        expr = node.values[-1]
        for v in reversed(node.values[:-1]):
            expr = _ag_call(fn, _lambda(v), _lambda(expr))
        return ast.copy_location(expr, node)

    def visit_Compare(self, node):
        # `a < b < c` is `a < b and b < c` with b evaluated once: Python's
        # `and` would need the truth of a graph tensor, so a chain of two
        # or more comparisons goes through ag.compare_chain (a graph cond
        # when the first comparison is staged). TF's AutoGraph leaves
        # chains as they are and fails on tensors (tensorflow#55278).
        self.generic_visit(node)
        if len(node.ops) < 2:
            return node
        names = ast.Tuple(elts=[_const(type(op).__name__) for op in node.ops],
                          ctx=ast.Load())
        rights = ast.Tuple(elts=[_lambda(c) for c in node.comparators],
                           ctx=ast.Load())
        return ast.copy_location(
            _ag_call("compare_chain", node.left, names, rights), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_ag_call("not_", node.operand), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if _is_ag_call(node):
            return node
        f = node.func
        if isinstance(f, ast.Name) and f.id == "super" and not node.args \
                and not node.keywords and self.self_name is not None:
            node.args = [_load("__class__"), _load(self.self_name)]
            return node
        if isinstance(f, ast.Name) and f.id in an.FRAME_BUILTINS:
            return node
        args = ast.Tuple(elts=node.args, ctx=ast.Load())
        kwargs = ast.Dict(keys=[_const(k.arg) if k.arg is not None else None
                                for k in node.keywords],
                          values=[k.value for k in node.keywords])
        return ast.copy_location(
            _ag_call("converted_call", f, args, kwargs), node)

    def visit_Assert(self, node):
        self.generic_visit(node)
        call = _ag_call("assert_stmt", node.test,
                        _lambda(node.msg if node.msg is not None
                                else _const(None)))
        return ast.copy_location(ast.Expr(value=call), node)

    def _rewritable(self, target):
        """Item assignment becomes a rebinding of the subscripted name or
        attribute; a name that is not this function's own (a global or
        closure variable) cannot be rebound, so that assignment stays
        as written."""
        base = target
        while isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name):
            return base.id in self.local
        return isinstance(base, ast.Attribute)

    def visit_Assign(self, node):
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0],
                                                 ast.Subscript) and \
                self._rewritable(node.targets[0]):
            t = node.targets[0]
            return self._store(t.value, _ag_call(
                "setitem", _with_ctx(t.value, ast.Load()), _key(t.slice),
                node.value), node)
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        t = node.target
        if isinstance(t, ast.Subscript) and self._rewritable(t):
            return self._store(t.value, _ag_call(
                "aug_setitem", _with_ctx(t.value, ast.Load()),
                _key(t.slice), _ag(_AUG_OPS[type(node.op)]), node.value),
                node)
        return node

    def _store(self, base, value, ref):
        """`base = value` (base a name, attribute or subscript); an
        attribute is set only if its value changed (a tensor updated),
        so read-only attributes holding lists still work."""
        if isinstance(base, ast.Subscript):
            return self._store(base.value, _ag_call(
                "setitem", _with_ctx(base.value, ast.Load()),
                _key(base.slice), value), ref)
        if isinstance(base, ast.Attribute):
            return ast.copy_location(ast.Expr(value=_ag_call(
                "update_attr", _with_ctx(base.value, ast.Load()),
                _const(base.attr), value)), ref)
        return ast.copy_location(ast.Assign(
            targets=[_with_ctx(base, ast.Store())], value=value), ref)


# ---- 5. control flow -----------------------------------------------------

class _ControlFlow:

    def __init__(self, scope, namer):
        self.scope = scope
        self.namer = namer
        self.undefined = set()
        self.vars_name = None

    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ast.If):
                out.extend(self.if_(s))
            elif isinstance(s, ast.While):
                out.extend(self.while_(s))
            elif isinstance(s, ast.For):
                out.extend(self.for_(s))
            else:
                if not isinstance(s, _DEFS):
                    for owner, field in _child_blocks(s):
                        _set_block(owner, field,
                                   self.block(getattr(owner, field)))
                out.append(s)
        return out

    def _decls(self, names):
        local = sorted(n for n in names if n not in self.scope.globals)
        glob = sorted(n for n in names if n in self.scope.globals)
        out = []
        if local:
            out.append(ast.Nonlocal(names=local))
        if glob:
            out.append(ast.Global(names=glob))
        return out

    def _inits(self, names, s):
        """Bind the names the statement's blocks change that may not be
        bound yet, so that `nonlocal` finds them."""
        out = []
        for n in sorted(names - s._ag_defined_in - self.scope.globals):
            if n in s._ag_maybe_in:
                value = _ag_call("ld_or_undef", _lambda(_load(n, raw=True)),
                                 _const(n))
            else:
                value = _ag_call("Undefined", _const(n))
            out.append(_assign(n, value))
            self.undefined.add(n)
        return out

    def _state(self, state):
        if self.vars_name is None:
            self.vars_name = self.namer.new("vars_")
        get = self.namer.new("get_state")
        put = self.namer.new("set_state")
        gdef = _funcdef(get, [], [ast.Return(value=ast.Tuple(
            elts=[_load(n, raw=True) for n in state], ctx=ast.Load()))])
        gdef._ag_state_fn = True
        if state:
            body = self._decls(state) + [ast.Assign(
                targets=[ast.Tuple(elts=[_store(n) for n in state],
                                   ctx=ast.Store())],
                value=_load(self.vars_name))]
        else:
            body = [ast.Pass()]
        pdef = _funcdef(put, [self.vars_name], body)
        return _load(get), _load(put), [gdef, pdef]

    @staticmethod
    def _names(state):
        return ast.Tuple(elts=[_const(n) for n in state], ctx=ast.Load())

    def _vars(self, changed):
        return changed - self.scope.globals

    def if_(self, s):
        changed = an.bound(s.body + s.orelse)
        live = s._ag_live_out
        outs = sorted(self._vars(changed) & live)
        state = outs + sorted(self._vars(changed) - live)
        inits = self._inits(changed, s)
        body = self.block(s.body)
        orelse = self.block(s.orelse) or [ast.Pass()]
        tname = self.namer.new("if_body")
        fname = self.namer.new("else_body")
        decls = self._decls(changed)
        defs = [_funcdef(tname, [], decls + body),
                _funcdef(fname, [], copy.deepcopy(decls) + orelse)]
        get, put, sdefs = self._state(state)
        call = ast.Expr(value=_ag_call(
            "if_stmt", s.test, _load(tname), _load(fname), get, put,
            self._names(state), _const(len(outs))))
        return _at(inits + sdefs + defs + [call], s)

    def _loop_vars(self, s, changed):
        return sorted(self._vars(changed) &
                      (s._ag_live_head | s._ag_live_out))

    def while_(self, s):
        changed = an.bound(s.body) | an.bound(s.test)
        loop_vars = self._loop_vars(s, changed)
        inits = self._inits(changed, s)
        body = self.block(s.body)
        tname = self.namer.new("loop_test")
        bname = self.namer.new("loop_body")
        defs = [_funcdef(tname, [], self._decls(an.bound(s.test)) +
                         [ast.Return(value=s.test)]),
                _funcdef(bname, [], self._decls(changed) + body)]
        defs[1]._ag_defined = _leading_binds(body)
        get, put, sdefs = self._state(loop_vars)
        call = ast.Expr(value=_ag_call(
            "while_stmt", _load(tname), _load(bname), get, put,
            self._names(loop_vars), s._ag_opts))
        return _at(inits + sdefs + defs + [call], s)

    def for_(self, s):
        changed = an.bound(s.body) | an.bound(s.target)
        loop_vars = self._loop_vars(s, changed)
        inits = self._inits(changed, s)
        body = self.block(s.body)
        itr = self.namer.new("itr")
        bname = self.namer.new("loop_body")
        target = ast.copy_location(
            ast.Assign(targets=[s.target], value=_load(itr)), s)
        defs = [_funcdef(bname, [itr], self._decls(changed) + [target] +
                         body)]
        defs[0]._ag_defined = an.bound(s.target) | _leading_binds(body)
        extra = getattr(s, "_ag_extra_test", [])
        if extra:
            test = extra[-1]
            for e in reversed(extra[:-1]):
                test = _ag_call("and_", _lambda(e), _lambda(test))
            ename = self.namer.new("extra_test")
            defs.insert(0, _funcdef(ename, [], [ast.Return(value=test)]))
            extra_ref = _load(ename)
        else:
            extra_ref = _const(None)
        get, put, sdefs = self._state(loop_vars)
        call = ast.Expr(value=_ag_call(
            "for_stmt", s.iter, extra_ref, _load(bname), get, put,
            self._names(loop_vars), s._ag_opts))
        return _at(inits + sdefs + defs + [call], s)


def _leading_binds(body):
    """Names surely bound by the first statements of body (`x = ...` not
    reading x): reads after them need no ag__.ld()."""
    out = set()
    for st in body:
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], ast.Name)):
            break
        if st.targets[0].id in an.reads(st.value):
            break
        out.add(st.targets[0].id)
    return out


# ---- 6. reads of possibly undefined variables ----------------------------

class _Loads(ast.NodeTransformer):

    def __init__(self, names):
        self.names = set(names)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.names and \
                not getattr(node, "_ag_raw", False):
            node._ag_raw = True
            return ast.copy_location(_ag_call("ld", node), node)
        return node

    def _inner(self, local, nodes):
        saved = self.names
        self.names = saved - local
        try:
            return [self.visit(n) for n in nodes]
        finally:
            self.names = saved

    def visit_FunctionDef(self, node):
        if getattr(node, "_ag_state_fn", False):
            return node
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        declared = set()
        for n in an.own_nodes(node.body):
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                declared.update(n.names)
        local = (an.bound(node.body) | set(an.params(node))) - declared
        # A loop body binds its target (and flags) before anything else.
        local |= getattr(node, "_ag_defined", set())
        node.body = self._inner(local, node.body)
        return node

    def visit_Lambda(self, node):
        node.args = self.visit(node.args)
        node.body = self._inner(set(an.params(node)), [node.body])[0]
        return node

    def _comprehension(self, node):
        local = set()
        for g in node.generators:
            local |= an.bound(g.target)
        saved = self.names
        self.names = saved - local
        try:
            return self.generic_visit(node)
        finally:
            self.names = saved

    visit_ListComp = visit_SetComp = visit_DictComp = _comprehension
    visit_GeneratorExp = _comprehension

    def visit_ClassDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef
