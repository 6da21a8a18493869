"""Symbolic sizes under capture: SymInt, the sizes a symbolic capture hands to
Python, and the guards its comparisons add (Note [Symbolic capture]).

A SymInt stands for an int the graph computes at run time from the tensors it
runs on (capture::sym_size / capture::sym_arith nodes; C++ Note [Symbolic sizes
under capture], capture/SymbolicInts.h). It carries its capture-time value, the
handle of its graph value, and an expression over the input symbols (None when
the capture cannot express it) that guards evaluate before a replay.
"""

from __future__ import annotations

import operator
import threading

from kiln import _C

# capture::sym_arith's op codes (capture/SymbolicInts.h, SymbolicOp).
_ADD, _SUB, _MUL, _FLOORDIV, _MOD = 0, 1, 2, 3, 4
_PY_OPS = {_ADD: operator.add, _SUB: operator.sub, _MUL: operator.mul, _FLOORDIV: operator.floordiv,
           _MOD: operator.mod}
_OP_TEXT = {_ADD: "+", _SUB: "-", _MUL: "*", _FLOORDIV: "//", _MOD: "%"}
_COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
                "!=": operator.ne}

_local = threading.local()


def active_context():
    """The SymbolicContext capturing on this thread, or None."""
    return getattr(_local, "context", None)


# --- expressions over the input symbols ------------------------------------------------
# ("sym", name) | ("const", value) | ("handle", k): the k-th intermediate extent, until the probe
# fits it (_dynamic.probe) | (op code, lhs, rhs); None: not expressible.

def evaluate(expr, env: dict) -> int:
    kind = expr[0]
    if kind == "sym":
        return env[expr[1]]
    if kind == "const":
        return expr[1]
    if kind == "handle":
        raise KeyError(f"an intermediate extent (h{expr[1]}) has no expression yet")
    return _PY_OPS[kind](evaluate(expr[1], env), evaluate(expr[2], env))


def substitute(expr, table: dict):
    """expr with each ("handle", k) replaced by table[k]."""
    kind = expr[0]
    if kind == "handle":
        return table[expr[1]]
    if kind in ("sym", "const"):
        return expr
    return (kind, substitute(expr[1], table), substitute(expr[2], table))


def has_handles(expr) -> bool:
    kind = expr[0]
    if kind == "handle":
        return True
    if kind in ("sym", "const"):
        return False
    return has_handles(expr[1]) or has_handles(expr[2])


def expr_text(expr) -> str:
    if expr is None:
        return "?"
    kind = expr[0]
    if kind == "sym":
        return expr[1]
    if kind == "const":
        return str(expr[1])
    if kind == "handle":
        return f"h{expr[1]}"
    return f"({expr_text(expr[1])} {_OP_TEXT[kind]} {expr_text(expr[2])})"


def symbols_of(expr, out: set) -> set:
    if expr is not None:
        if expr[0] == "sym":
            out.add(expr[1])
        elif expr[0] not in ("const", "handle"):
            symbols_of(expr[1], out)
            symbols_of(expr[2], out)
    return out


class Guard:
    """``lhs op rhs`` held ``result`` at capture (lhs, rhs: expressions); ``where`` names the user code."""

    __slots__ = ("lhs", "op", "rhs", "result", "where")

    def __init__(self, lhs, op, rhs, result, where):
        self.lhs, self.op, self.rhs, self.result, self.where = lhs, op, rhs, result, where

    def holds(self, env: dict) -> bool:
        return _COMPARISONS[self.op](evaluate(self.lhs, env), evaluate(self.rhs, env)) == self.result

    def __str__(self):
        text = f"{expr_text(self.lhs)} {self.op} {expr_text(self.rhs)}"
        return (text if self.result else f"not ({text})") + (f" ({self.where})" if self.where else "")


class SymInt:
    """A size read in Python during a symbolic capture (Note [Symbolic capture]). Integer arithmetic
    with ints and SymInts gives SymInts; a comparison, bool(), int(), float() or use as a Python index
    gives a plain value and adds a guard (or, when the SymInt has no expression, specialises the graph)."""

    __slots__ = ("_value", "_handle", "_expr", "_context")

    def __init__(self, value: int, handle: int, expr, context):
        self._value = value
        self._handle = handle
        self._expr = expr
        self._context = context

    def __repr__(self):
        return f"SymInt({self._value}, {expr_text(self._expr)})"

    # --- arithmetic: recorded as capture::sym_arith nodes --------------------------------
    def _arith(self, op, other, reflected=False):
        if isinstance(other, bool) or not isinstance(other, (int, SymInt)):
            return NotImplemented
        lhs, rhs = (other, self) if reflected else (self, other)
        if self._handle < 0:  # kept past its capture: a plain int from now on
            return _PY_OPS[op](int(lhs), int(rhs))
        return self._context.arith(op, lhs, rhs)

    def __add__(self, o): return self._arith(_ADD, o)
    def __radd__(self, o): return self._arith(_ADD, o, True)
    def __sub__(self, o): return self._arith(_SUB, o)
    def __rsub__(self, o): return self._arith(_SUB, o, True)
    def __mul__(self, o): return self._arith(_MUL, o)
    def __rmul__(self, o): return self._arith(_MUL, o, True)
    def __floordiv__(self, o): return self._arith(_FLOORDIV, o)
    def __rfloordiv__(self, o): return self._arith(_FLOORDIV, o, True)
    def __mod__(self, o): return self._arith(_MOD, o)
    def __rmod__(self, o): return self._arith(_MOD, o, True)
    def __neg__(self): return self._arith(_SUB, 0, True)
    def __pos__(self): return self

    # --- what leaves the graph: a guard ---------------------------------------------------
    def _compare(self, op, other):
        if self._handle < 0:
            return _COMPARISONS[op](self._value, other._value if isinstance(other, SymInt) else other)
        if isinstance(other, bool) or not isinstance(other, (int, SymInt)):
            if isinstance(other, float):
                return _COMPARISONS[op](self._context.specialize(self, f"compared with float {other}"), other)
            return NotImplemented
        return self._context.compare(op, self, other)

    def __lt__(self, o): return self._compare("<", o)
    def __le__(self, o): return self._compare("<=", o)
    def __gt__(self, o): return self._compare(">", o)
    def __ge__(self, o): return self._compare(">=", o)
    def __eq__(self, o): return self._compare("==", o)
    def __ne__(self, o): return self._compare("!=", o)

    def __bool__(self):
        return self._context.compare("!=", self, 0)

    def __index__(self):
        return self._context.specialize(self, "used as a Python int (an index, range(), a slice bound)")

    def __int__(self):
        return self._context.specialize(self, "int()")

    def __float__(self):
        return float(self._context.specialize(self, "float()"))

    def __truediv__(self, o):
        return self._context.specialize(self, "true division") / o

    def __rtruediv__(self, o):
        return o / self._context.specialize(self, "true division")

    def __pow__(self, o):
        return self._context.specialize(self, "**") ** o

    def __hash__(self):
        return hash(self._context.specialize(self, "hash() (a dict key or set member)"))

    def __format__(self, spec):
        return format(self._context.specialize(self, "formatted as text"), spec)


_C._capture.set_symbolic_int_type(SymInt)


def plain_sizes(value):
    """``value`` (a function's result) with each SymInt in its tuples, lists and dicts replaced by its int
    (which guards it: a replay returns the captured value)."""
    cls = type(value)
    if cls is SymInt:
        return int(value)
    if cls is tuple or cls is list:
        return cls(plain_sizes(v) for v in value)
    if cls is dict:
        return {k: plain_sizes(v) for k, v in value.items()}
    return value


def _user_location() -> str:
    import sys
    frame = sys._getframe(3)
    while frame is not None and "/kiln/" in frame.f_code.co_filename.replace("\\", "/"):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""


class SymbolicContext:
    """One symbolic capture: which dimensions of the declared tensors are symbols (``dims``:
    index -> per-dimension symbol name or None), the guards added, whether the graph had to be
    specialised (``specialized``: the reason), and the SymInts whose expressions are guesses a probe
    run fits (``assumed``: [graph handle, capture-time extent] per intermediate extent read, referred
    to as ("handle", index) in expressions until ``resolve``)."""

    def __init__(self, session, declared: list, dims: dict, values: dict):
        self.session = session
        self.dims = dims  # tensor index -> [symbol name or None per dim]
        self.values = values  # symbol name -> capture-time value
        # Every declared tensor: its dynamic dimensions' symbols, None for a static extent (an argument's
        # other dimensions, the parameters and buffers: the guards fix them).
        self.by_tensor = {}
        for i, t in enumerate(declared):
            names = dims.get(i) or [None] * _TensorBase_dim(t)
            if id(t) not in self.by_tensor or i in dims:
                self.by_tensor[id(t)] = (t, names)
        self.guards: list = []
        self.specialized = None
        self.pinned: set = set()  # symbols an equality guard fixes
        self.pin_exprs: list = []  # (lhs, rhs) guarded equal where one mentions intermediate extents
        self.assumed: list = []
        self._sizes: dict = {}  # (id(tensor), dim) -> SymInt or int
        self._held: list = []  # tensors whose id keys _sizes
        self._made: list = []  # every SymInt made (release turns them into plain values)

    # --- sizes ------------------------------------------------------------------------------
    def size(self, t, dim: int):
        rank = _TensorBase_dim(t)
        if dim < 0:
            dim += rank
        key = (id(t), dim)
        cached = self._sizes.get(key)
        if cached is not None:
            return cached
        value = _TensorBase_size(t, dim)
        entry = self.by_tensor.get(id(t))
        if entry is not None and entry[0] is t:
            name = entry[1][dim]
            result = value if name is None else self._made_int(value, self.session.symbolic_size(t, dim),
                                                               ("sym", name))
        elif not self.values or value < 2:
            result = value  # nothing is symbolic, or a 0/1 extent (Note [Symbolic capture])
        else:
            handle = self.session.symbolic_size(t, dim)
            self.assumed.append([handle, value])
            result = self._made_int(value, handle, ("handle", len(self.assumed) - 1))
        self._sizes[key] = result
        self._held.append(t)
        return result

    # --- arithmetic -------------------------------------------------------------------------
    def arith(self, op, lhs, rhs):
        lv = lhs._value if isinstance(lhs, SymInt) else lhs
        rv = rhs._value if isinstance(rhs, SymInt) else rhs
        if op in (_FLOORDIV, _MOD) and rv == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        value = _PY_OPS[op](lv, rv)
        # Identities keep the graph small: x + 0, x * 1, x // 1, 0 + x, 1 * x.
        if isinstance(lhs, SymInt) and not isinstance(rhs, SymInt):
            if (op in (_ADD, _SUB) and rv == 0) or (op in (_MUL, _FLOORDIV) and rv == 1):
                return lhs
        if isinstance(rhs, SymInt) and not isinstance(lhs, SymInt):
            if (op == _ADD and lv == 0) or (op == _MUL and lv == 1):
                return rhs
        le = lhs._expr if isinstance(lhs, SymInt) else ("const", lhs)
        re = rhs._expr if isinstance(rhs, SymInt) else ("const", rhs)
        handle = self.session.symbolic_arith(op, lhs._handle if isinstance(lhs, SymInt) else lhs,
                                             not isinstance(lhs, SymInt),
                                             rhs._handle if isinstance(rhs, SymInt) else rhs,
                                             not isinstance(rhs, SymInt))
        expr = None if le is None or re is None else (op, le, re)
        return self._made_int(value, handle, expr)

    def _made_int(self, value, handle, expr):
        s = SymInt(value, handle, expr, self)
        self._made.append(s)
        return s

    # --- guards -----------------------------------------------------------------------------
    def compare(self, op, lhs, rhs) -> bool:
        if any(isinstance(x, SymInt) and x._handle < 0 for x in (lhs, rhs)):
            return _COMPARISONS[op](int(lhs), int(rhs))
        lv = lhs._value if isinstance(lhs, SymInt) else lhs
        rv = rhs._value if isinstance(rhs, SymInt) else rhs
        result = _COMPARISONS[op](lv, rv)
        le = lhs._expr if isinstance(lhs, SymInt) else ("const", lhs)
        re = rhs._expr if isinstance(rhs, SymInt) else ("const", rhs)
        if le is not None and le == re:
            return result  # one expression on both sides (q.shape == k.shape of one batch): true for every binding
        if le is None or re is None:
            self._specialize_all(f"a comparison ({op}) of sizes kiln cannot express at {_user_location()}")
        else:
            self.guards.append(Guard(le, op, re, result, _user_location()))
            if (op == "==" and result) or (op == "!=" and not result):
                self._pin_expr(le, re)
        return result

    def specialize(self, s: SymInt, why: str) -> int:
        """A SymInt that becomes a plain int: guard its expression equal to its value."""
        if s._handle < 0:
            return s._value
        if s._expr is None:
            self._specialize_all(f"a size kiln cannot express was {why} at {_user_location()}")
        else:
            self.guards.append(Guard(s._expr, "==", ("const", s._value), True, f"{why} at {_user_location()}"))
            self._pin_expr(s._expr, ("const", s._value))
        return s._value

    def _pin_expr(self, lhs, rhs):
        """Two expressions guarded equal: the symbols they mention are pinned (when they mention
        intermediate extents, once ``resolve`` has fitted them, and only if they then differ: the batch
        extents of q, k and v compared in Python are one symbol)."""
        if has_handles(lhs) or has_handles(rhs):
            self.pin_exprs.append((lhs, rhs))
        elif lhs != rhs:
            self.pinned |= symbols_of(lhs, set()) | symbols_of(rhs, set())

    def resolve(self, table: dict):
        """Replaces the intermediate extents in the guards by their fitted expressions (``table``:
        index -> expression) and pins the symbols of the pinned expressions that mentioned them."""
        for g in self.guards:
            g.lhs, g.rhs = substitute(g.lhs, table), substitute(g.rhs, table)
        for lhs, rhs in self.pin_exprs:
            lhs, rhs = substitute(lhs, table), substitute(rhs, table)
            if lhs != rhs:
                self.pinned |= symbols_of(lhs, set()) | symbols_of(rhs, set())
        self.pin_exprs.clear()

    def pin(self, name: str, value: int, why: str):
        """Guards symbol ``name`` equal to ``value``."""
        self.guards.append(Guard(("sym", name), "==", ("const", value), True, why))
        self.pinned.add(name)

    def _specialize_all(self, reason):
        if self.specialized is None:
            self.specialized = reason

    def release(self):
        """After the capture: every SymInt it made becomes its value (a SymInt kept in Python, say on a
        module, must not name a graph value of a later capture)."""
        for s in self._made:
            s._handle = -1
        self._made.clear()
        self._sizes.clear()
        self._held.clear()


_TensorBase_size = _C.TensorBase.size
_TensorBase_dim = _C.TensorBase.dim

# Note [Symbolic capture]
# kiln.compile(dynamic=None) specialises every size on the first capture; a call
# whose guard key differs from an earlier one only in some tensor dimensions
# marks those dimensions dynamic, and the captures from then on are symbolic in
# them (dynamic=True: every dimension of every tensor argument from the start;
# dynamic=False: never). A symbolic capture names each dynamic dimension with a
# symbol, one per distinct extent (duck sizing, as torch: equal extents share a
# symbol, so `x + y` of two [B, 4] arguments stays valid); extents 0 and 1 stay
# specialised. While it runs, Tensor.size, .shape and len() (_symbolic_patches)
# return SymInts for those dimensions and for every dimension >= 2 of the
# tensors it computes, each backed by a graph value (C++ Note [Symbolic sizes
# under capture]), so `B, T, C = x.size(); x.view(B, T, h, C // h)` records the
# view's sizes as graph values. Python control flow on a SymInt adds a guard on
# its expression over the symbols (`T > 8`, or `T == 16` for int(T)); the guard
# key of a symbolic entry keeps each tensor's rank, dtype, device,
# requires_grad, contiguity, its static extents, and which symbol each dynamic
# extent binds; a lookup binds each symbol from the call (its extents must agree
# and be >= 2; two symbols may meet at one extent) and checks the entry's guards.
#
# An intermediate tensor's extent (k.size(-1) of a computed tensor) is an
# unknown ("handle") until the capture ends, and a composite op that computes
# sizes in C++ records them as literals. So before a symbolic entry is kept, a
# probe replays the graph on meta tensors at other symbol values (_dynamic.probe):
# symbols no run can move (a feature dimension a weight fixes) are pinned by an
# equality guard; each intermediate extent gets the simplest expression (a
# constant, a symbol, s * c, s // c, s + c, s * t) that fits its values at two
# probe points and is checked at a third; the guards mentioning it are rewritten
# with it. Where the graph runs at no other extents, an extent fits no
# expression, or a comparison involved an expression-less SymInt, the entry is
# keyed on exact sizes instead (the graph is still right
# for the sizes it saw). nn.Linear/matmul on inputs of rank > 2 and basic
# slicing with SymInt bounds are rewritten in Python during the capture
# (_symbolic_patches), since their C++ forms fold sizes into literals. What the
# probe cannot see: a literal size that runs at every extent and only changes an
# output's shape (a C++ composite returning zeros of a size it computed).
