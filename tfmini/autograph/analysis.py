"""What AutoGraph needs to know about a function's statements before it
rewrites them: the names a block binds, the names it reads, which names
are live after a statement (read later before being rebound) and which
are surely (or possibly) bound before it.

All of it works on one function scope at a time: nested function and
class bodies are opaque, except that the names they read from the
enclosing function count as read wherever they might run (see
`Scope.escaping`)."""
import ast

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Builtins that look at the caller's frame: their presence makes every
# name live (locals()) and their calls must stay where they are.
FRAME_BUILTINS = frozenset({"super", "locals", "globals", "vars", "eval",
                            "exec", "dir"})


def params(fn):
    """The parameter names of a FunctionDef or Lambda."""
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if a.vararg:
        names.append(a.vararg.arg)
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


def _target_names(t, out):
    if isinstance(t, ast.Name):
        out.add(t.id)
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            _target_names(e, out)
    elif isinstance(t, ast.Starred):
        _target_names(t.value, out)


class _Binds(ast.NodeVisitor):
    """Names bound in the current scope by the visited nodes."""

    def __init__(self):
        self.names = set()

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.names.add(node.id)

    def visit_FunctionDef(self, node):
        self.names.add(node.name)
        for d in node.decorator_list:
            self.visit(d)
        for d in node.args.defaults + [d for d in node.args.kw_defaults
                                       if d is not None]:
            self.visit(d)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.names.add(node.name)
        for d in node.decorator_list + node.bases:
            self.visit(d)

    def visit_Lambda(self, node):
        for d in node.args.defaults:
            self.visit(d)

    def _comp(self, node):
        # Comprehension targets are the comprehension's own, but a walrus
        # inside binds in the enclosing function.
        for n in ast.walk(node):
            if isinstance(n, ast.NamedExpr):
                _target_names(n.target, self.names)

    visit_ListComp = visit_SetComp = visit_DictComp = _comp
    visit_GeneratorExp = _comp

    def visit_Import(self, node):
        for a in node.names:
            self.names.add((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node):
        # The handler's name is unbound again when the handler ends, so
        # it never flows anywhere: not counted.
        if node.type is not None:
            self.visit(node.type)
        for s in node.body:
            self.visit(s)

    def visit_MatchAs(self, node):
        if node.name:
            self.names.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        if node.name:
            self.names.add(node.name)

    def visit_MatchMapping(self, node):
        if node.rest:
            self.names.add(node.rest)
        self.generic_visit(node)

    def visit_Global(self, node):
        pass

    visit_Nonlocal = visit_Global


def bound(nodes):
    """Names bound (assigned, deleted, defined, imported) in this scope by
    nodes, a node or a list of them."""
    v = _Binds()
    for n in nodes if isinstance(nodes, list) else [nodes]:
        v.visit(n)
    return v.names


def reads(nodes):
    """Names loaded anywhere in nodes (nested scopes included)."""
    out = set()
    for n in nodes if isinstance(nodes, list) else [nodes]:
        for m in ast.walk(n):
            if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Load):
                out.add(m.id)
    return out


def free_reads(fn):
    """Names a nested function or class reads from enclosing scopes."""
    if isinstance(fn, ast.Lambda):
        body = [fn.body]
    else:
        body = fn.body
    inner = reads(body)
    if isinstance(fn, ast.ClassDef):
        return inner
    return inner - bound(body) - set(params(fn))


def own_nodes(nodes):
    """Walk nodes without entering nested function or class bodies (their
    decorators and defaults are evaluated here, so they are walked)."""
    stack = list(nodes) if isinstance(nodes, list) else [nodes]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(n.decorator_list)
            stack.extend(n.args.defaults)
            stack.extend(d for d in n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, ast.ClassDef):
            stack.extend(n.decorator_list + n.bases)
            continue
        stack.extend(ast.iter_child_nodes(n))


class Scope:
    """Facts about one function scope."""

    def __init__(self, fn):
        self.fn = fn
        self.params = set(params(fn))
        self.globals = set()
        self.nonlocals = set()
        for n in own_nodes(fn.body):
            if isinstance(n, ast.Global):
                self.globals.update(n.names)
            elif isinstance(n, ast.Nonlocal):
                self.nonlocals.update(n.names)
        # Names that nested functions, classes and user lambdas read may
        # be read whenever those run: treat them as always live. A frame
        # builtin (locals(), eval) can read anything.
        self.escaping = set(self.globals | self.nonlocals)
        self.everything_live = False
        for n in own_nodes(fn.body):
            if isinstance(n, _SCOPES) and not getattr(n, "_ag_inline",
                                                      False):
                if isinstance(n, ast.Lambda):
                    self.escaping |= reads(n.body)
                else:
                    self.escaping |= free_reads(n)
            elif isinstance(n, ast.Name) and n.id in FRAME_BUILTINS - {
                    "super"} and isinstance(n.ctx, ast.Load):
                self.everything_live = True


# ---- liveness ------------------------------------------------------------

class Liveness:
    """Backward liveness over structured statements. Annotates every If,
    While and For with `_ag_live_out` (names read after it before being
    rebound) and loops with `_ag_live_head` (names live at the top of an
    iteration: read by the test or by the body before it binds them)."""

    def __init__(self, scope):
        self.scope = scope
        self.always = scope.escaping
        if scope.everything_live:
            self.always = self.always | reads(scope.fn.body) | \
                bound(scope.fn.body) | scope.params
        self.loops = []            # (live after loop, live at loop head)

    def run(self):
        self.block(self.scope.fn.body, set(self.always))

    def block(self, stmts, live):
        for s in reversed(stmts):
            live = self.stmt(s, live)
        return live

    def expr(self, node):
        return reads(node) if node is not None else set()

    def stmt(self, s, live):
        live = set(live)
        if isinstance(s, ast.If):
            s._ag_live_out = live | self.always
            return (self.expr(s.test) | self.block(s.body, live) |
                    self.block(s.orelse, live))
        if isinstance(s, (ast.While, ast.For, ast.AsyncFor)):
            return self.loop(s, live)
        if isinstance(s, ast.Return):
            return self.expr(s.value) | self.always
        if isinstance(s, ast.Break):
            return set(self.loops[-1][0]) if self.loops else live
        if isinstance(s, ast.Continue):
            return set(self.loops[-1][1]) if self.loops else live
        if isinstance(s, ast.Raise):
            return live | self.expr(s.exc) | self.expr(s.cause)
        if isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            # Any statement may raise into a handler: conservative.
            inner = set(live)
            for h in s.handlers:
                inner |= self.block(h.body, live)
            inner |= self.block(s.finalbody, live)
            inner |= self.block(s.orelse, inner)
            inner |= self.block(s.body, inner)
            return inner | reads(s)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            inner = self.block(s.body, live)
            for item in reversed(s.items):
                if item.optional_vars is not None:
                    inner -= bound(item.optional_vars)
                    inner |= self.expr(item.optional_vars)  # x.attr targets
                inner |= self.expr(item.context_expr)
            return inner
        if isinstance(s, ast.Match):
            out = set()
            for c in s.cases:
                out |= self.block(c.body, live) | reads(c.pattern) | \
                    self.expr(c.guard)
            return out | self.expr(s.subject)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                          ast.ClassDef)):
            r = set()
            for n in own_nodes([s]):
                if n is not s and isinstance(n, ast.Name) and \
                        isinstance(n.ctx, ast.Load):
                    r.add(n.id)
            return (live - {s.name}) | r | free_reads(s)
        # A simple statement: what it binds dies, what it reads lives.
        uses = set()
        for n in own_nodes([s]):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Load,
                                                             ast.Del)):
                uses.add(n.id)
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            uses.add(s.target.id)
        kills = bound(s)
        if isinstance(s, ast.AnnAssign) and s.value is None:
            kills = set()
        return (live - kills) | uses | (self.always & kills)

    def loop(self, s, live):
        s._ag_live_out = live | self.always
        after = self.block(s.orelse, live) if s.orelse else set(live)
        head = set(after)
        while True:     # a fixpoint: the sets only grow
            self.loops.append((live, head))
            body_in = self.block(s.body, head)
            self.loops.pop()
            if isinstance(s, ast.While):
                new = after | body_in | self.expr(s.test)
            else:
                tgt = bound(s.target)
                new = after | (body_in - tgt) | (self.expr(s.target) - tgt)
                for t in getattr(s, "_ag_extra_test", []):
                    new |= self.expr(t)
            if new <= head:
                break
            head |= new
        s._ag_live_head = head | self.always
        if isinstance(s, ast.While):
            return head
        return head | self.expr(s.iter)


# ---- definedness ---------------------------------------------------------

_TOP = None     # "every name": the state after a statement that never
#                 falls through (return, raise, break, continue)


def _meet(a, b):
    if a is _TOP:
        return b
    if b is _TOP:
        return a
    return a & b


class Definedness:
    """Forward analysis. Annotates every If, While and For with
    `_ag_defined_in` (names surely bound when it starts) and
    `_ag_maybe_in` (names possibly bound then)."""

    def __init__(self, scope):
        self.scope = scope

    def run(self):
        start = self.scope.params | self.scope.globals | \
            self.scope.nonlocals
        self.block(self.scope.fn.body, set(start), set(start))

    def block(self, stmts, d, p):
        for s in stmts:
            if d is _TOP:
                d = set(p)       # unreachable code: be conservative
            d, p = self.stmt(s, d, p)
        return d, p

    def stmt(self, s, d, p):
        if isinstance(s, ast.If):
            s._ag_defined_in, s._ag_maybe_in = set(d), set(p)
            db, pb = self.block(s.body, set(d), set(p))
            do, po = self.block(s.orelse, set(d), set(p))
            return _meet(db, do), pb | po
        if isinstance(s, (ast.While, ast.For, ast.AsyncFor)):
            every = bound(s)
            s._ag_defined_in, s._ag_maybe_in = set(d), set(p)
            inner_d = set(d)
            if isinstance(s, (ast.For, ast.AsyncFor)):
                inner_d |= bound(s.target)
            self.block(s.body, inner_d, p | every)
            self.block(s.orelse, set(d), p | every)
            return d, p | every
        if isinstance(s, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            return _TOP, p
        if isinstance(s, (ast.With, ast.AsyncWith)):
            extra = set()
            for item in s.items:
                if item.optional_vars is not None:
                    extra |= bound(item.optional_vars)
            return self.block(s.body, d | extra, p | extra)
        if isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            every = bound(s)
            for blk in [s.body, s.orelse, s.finalbody] + \
                    [h.body for h in s.handlers]:
                self.block(blk, set(d), p | every)
            return d, p | every
        if isinstance(s, ast.Match):
            every = bound(s)
            for c in s.cases:
                self.block(c.body, set(d) | bound(c.pattern), p | every)
            return d, p | every
        b = bound(s)
        if isinstance(s, ast.Delete):
            return d - b, p
        return d | b, p | b
