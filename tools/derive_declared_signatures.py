"""Derives the declared signatures of kiln's Python-level functions from torch's schemas (issue 30; Note
[Declared signatures of Python-level ops], python/kiln/_arguments.py).

    python tools/derive_declared_signatures.py NAMES_FILE > derived.txt

NAMES_FILE: qualified names (kiln.X, kiln.linalg.X, ...; fuzz_python_functions.NAMES). Prints
'source file|def name|signature' for each function whose torch counterpart is a builtin with aten schemas
(its overloads' arguments of one kind, matched by name and position; self spelled 'input'; out= from the out
overload), Tensor-only checks of required tensor-named arguments where torch's function is Python, and
'#reason name' for the others. The @checked_signature lines in python/kiln were written from its output
(one decorator above each def); rerun it when torch's schemas or kiln's signatures change."""
import importlib, inspect, re, sys, types
import torch, kiln

REQUIRED_TENSORS = {"input", "input1", "input2", "target", "grid", "theta", "query", "key", "anchor",
                    "positive", "negative", "log_probs", "targets", "x1", "x2", "weight"}
CHECKABLE = {"Tensor", "int", "float", "bool", "str", "Scalar", "ScalarType", "int[]", "int[1]", "Tensor[]"}

def kind_of(t):
    t = re.sub(r"\(\w!?\)", "", t).replace("SymInt", "int")
    opt = t.endswith("?")
    t = t.rstrip("?")
    t = re.sub(r"\[\d+\]", "[1]", t)
    return t, opt

class Arg:
    def __init__(self, type, name, kwarg_only):
        self.type, self.name, self.kwarg_only = type, name, kwarg_only

def parse_args(text):
    inner = text[text.index("(") + 1:]
    depth, cur, items = 0, "", []
    for ch in inner:
        if ch in "([": depth += 1
        if ch in ")]":
            if depth == 0: break
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip()); cur = ""
        else:
            cur += ch
    if cur.strip(): items.append(cur.strip())
    out, kw = [], False
    for it in items:
        if it == "*": kw = True; continue
        t, n = it.split("=")[0].rsplit(" ", 1)
        out.append(Arg(t.strip(), n.strip(), kw))
    return out

def resolve(lib, q):
    o = lib
    for p in q.split(".")[1:]:
        o = getattr(o, p, None)
        if o is None: return None
    return o

def aten_candidates(q):
    parts = q.split(".")
    name = parts[-1]
    ns = parts[1] if len(parts) > 2 else ""
    c = []
    if ns == "linalg": c.append("linalg_" + name)
    if ns == "fft": c.append("fft_" + name)
    if ns == "special": c.append("special_" + name)
    c += [name, name + "_loss"]
    return c

def out_kind(q):
    for n in aten_candidates(q):
        try:
            ss = torch._C._jit_get_schemas_for_operator("aten::" + n)
        except Exception:
            ss = []
        counts = {sum(1 for a in parse_args(str(x)) if a.kwarg_only and "!" in a.type) for x in ss
                  if x.overload_name.endswith("out") and "Dimname" not in str(x)}
        counts.discard(0)
        if counts:
            return ("Tensor", True) if counts == {1} else ("Tensor[]", True) if 1 not in counts else None
    return None

def schemas(q):
    for n in aten_candidates(q):
        try:
            ss = torch._C._jit_get_schemas_for_operator("aten::" + n)
        except Exception:
            ss = []
        ss = [s for s in ss if not s.overload_name.endswith("out") and "Dimname" not in str(s)
              and not any(a.alias_info and a.alias_info.is_write and a.kwarg_only for a in s.arguments)]
        if ss:
            return n, ss
    return None, []

NAMESPACES = ("kiln", "kiln.nn.functional", "kiln.linalg", "kiln.fft", "kiln.special", "kiln.signal.windows",
              "kiln.masked", "kiln.func", "kiln.autograd", "kiln.sparse", "kiln.nn.init", "kiln.nn.utils", "kiln.Tensor")
def exposures(f):
    out = []
    for ns in NAMESPACES:
        mod = resolve(kiln, ns) if ns != "kiln" else kiln
        for n in dir(mod):
            if getattr(mod, n, None) is f:
                out.append(ns + "." + n)
    return out

for q in open(sys.argv[1]).read().split():
    f = resolve(kiln, q)
    f = f.__wrapped__ if hasattr(f, "as_method") else f  # already declared: derived again
    if not isinstance(f, types.FunctionType):
        continue
    tf = resolve(torch, q.replace("kiln", "torch", 1))
    if tf is None:
        print("#no-torch", q); continue
    if isinstance(tf, types.FunctionType):
        try:
            sig = inspect.signature(f); tsig = inspect.signature(tf)
        except Exception:
            continue
        parts, any_checked, kw_started = [], False, False
        tparams = list(tsig.parameters)
        for i, p in enumerate(sig.parameters.values()):
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                break
            if p.kind == p.KEYWORD_ONLY and not kw_started:
                parts.append("*"); kw_started = True
            if (p.name in REQUIRED_TENSORS and p.default is p.empty and p.kind != p.KEYWORD_ONLY
                    and i < len(tparams) and tparams[i] == p.name):
                parts.append(f"Tensor {p.name}"); any_checked = True
            else:
                parts.append(f"Any {p.name}")
        while parts and (parts[-1].startswith("Any ") or parts[-1] == "*"):
            parts.pop()
        if any_checked:
            print(f"{inspect.getsourcefile(f)}|{f.__name__}|{q.split('.')[-1]}({', '.join(parts)})")
        else:
            print("#torch-python", q)
        continue
    tensor_only = False
    for e in exposures(f):
        te = resolve(torch, e.replace("kiln", "torch", 1))
        if not e.startswith("kiln.Tensor") and (te is None or isinstance(te, types.FunctionType)):
            tensor_only = True
    namespaced = [e for e in exposures(f) if e.split(".")[1] in ("linalg", "fft", "special")]
    if namespaced and q.count(".") == 1:
        q = namespaced[0]
    name, ss = schemas(q)
    if not ss:
        print("#noschema", q); continue
    try:
        sig = inspect.signature(f)
    except Exception:
        continue
    params = list(sig.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL,) for p in params):
        print("#varargs", q); continue
    parts, any_checked, kw_started = [], False, False
    pos_i = 0
    for p in params:
        if p.kind == p.VAR_KEYWORD: continue
        kw = p.kind == p.KEYWORD_ONLY
        if kw and not kw_started:
            parts.append("*"); kw_started = True
        kinds = set()
        if kw and p.name == "out":
            k = out_kind(q)
            if k is not None and not tensor_only:
                parts.append(f"{k[0]}? out"); any_checked = True
            else:
                parts.append("Any out")
            continue
        for s in ss:
            args = parse_args(str(s))
            pos_args = [a for a in args if not a.kwarg_only]
            pyname = lambda a: "input" if a.name == "self" else a.name
            if not kw:
                a = pos_args[pos_i] if pos_i < len(pos_args) else None
                if a is not None and pos_i == 0 and a.name == "self" and kind_of(a.type)[0] == "Tensor" and p.name != "input":
                    kinds.add(("Tensor as input", False)); continue
                elif a is None or pyname(a) != p.name:
                    kinds.add(None); continue
            else:
                m = [a for a in args if pyname(a) == p.name]
                if not m: kinds.add(None); continue
                a = m[0]
            kinds.add(kind_of(a.type))
        if not kw: pos_i += 1
        if len(kinds) == 1 and None not in kinds:
            (k, opt), = kinds
            if k == "Tensor as input":
                parts.append(f"Tensor {p.name} as input"); any_checked = True
                continue
            if k in CHECKABLE and (not tensor_only or k in ("Tensor", "Tensor[]")):
                parts.append(f"{k}{'?' if opt else ''} {p.name}"); any_checked = True
                continue
        parts.append(f"Any {p.name}")
    while parts and (parts[-1].startswith("Any ") or parts[-1] == "*"):
        parts.pop()
    if any_checked:
        src = inspect.getsourcefile(f)
        print(f"{src}|{f.__name__}|{name}({', '.join(parts)})")
