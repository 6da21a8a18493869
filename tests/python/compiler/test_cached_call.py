"""The C++ hit path of a cached kiln.compile call (python/csrc/PyCachedCall.cpp, Note [The cached-call
fast path]): which calls it serves and as what kind of entry, that every guard kind misses through it
(the Python key then recaptures), and that what it replays equals eager."""

import gc
import weakref

import numpy as np
import pytest

import kiln
from kiln import nn

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)


def _hits(compiled) -> dict:
    return dict(getattr(compiled, "_compiled_call", compiled)._fast_path_hits)


def _served(compiled, call):
    """(call()'s result, {kind: calls} the C++ hit path served during it)."""
    before = _hits(compiled)
    out = call()
    after = _hits(compiled)
    return out, {k: after[k] - before[k] for k in after if after[k] != before[k]}


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["default", "eager"])
def test_a_cached_call_without_grad_replays_the_graph_in_cpp(backend):
    f = lambda x, y: (x * 2 + y).relu() - 1  # noqa: E731
    compiled = kiln.compile(f, backend=backend)
    x, y = kiln.tensor(X), kiln.tensor(Y)
    compiled(x, y)
    for _ in range(3):
        out, served = _served(compiled, lambda: compiled(x, y))
        assert served == {"graph": 1}
        _close(out, f(x, y))
    assert compiled.num_captures == 1


@pytest.mark.parametrize("backend", ["default", "eager"])
def test_a_cached_call_needing_grad_runs_the_forward_and_attaches_the_node_in_cpp(backend):
    f = lambda x, w: ((x @ w).tanh() * 2).sum()  # noqa: E731
    compiled = kiln.compile(f, backend=backend)
    x = kiln.tensor(X)
    w = kiln.tensor(RNG.standard_normal((4, 5)).astype(np.float32), requires_grad=True)
    compiled(x, w)
    loss, served = _served(compiled, lambda: compiled(x, w))
    assert served == {"joint": 1}
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
    loss.backward()
    got = w.grad.clone()
    w.grad = None
    f(x, w).backward()
    _close(got, w.grad)
    _close(loss, f(x, w))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    again = compiled(x, w)
    with pytest.raises(RuntimeError, match="double backward"):
        kiln.autograd.grad(again, [w], create_graph=True)


def test_an_output_without_gradient_gets_zeros_in_the_compiled_backward():
    def f(x):
        return x * 2, x.exp()

    compiled = kiln.compile(f)
    x = kiln.tensor(X, requires_grad=True)
    compiled(x)
    (a, b), served = _served(compiled, lambda: compiled(x))
    assert served == {"joint": 1}
    a.sum().backward()  # b's gradient is None for the Engine: the node fills zeros
    _close(x.grad, kiln.full((3, 4), 2.0))


def test_a_graph_break_entry_runs_the_function_from_cpp():
    def f(x):
        return x * float(x.sum())  # item-like escape: a graph break

    compiled = kiln.compile(f)
    x = kiln.tensor(X)
    with pytest.warns(UserWarning, match="graph break"):
        compiled(x)
    out, served = _served(compiled, lambda: compiled(x))
    assert served == {"eager": 1}
    _close(out, f(x))


def test_a_training_step_is_served_from_cpp_and_a_changed_state_recaptures():
    kiln.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = kiln.optim.SGD(model.parameters(), lr=0.1)
    x = kiln.tensor(X)

    @kiln.compile
    def step(x):
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step(x)
    assert step.num_captures == 2  # observed, then captured
    _, served = _served(step, lambda: step(x))
    assert served == {"training": 1}
    # The same steps eagerly from the same start agree with the compiled ones.
    kiln.manual_seed(0)
    twin = nn.Linear(4, 2)
    twin_opt = kiln.optim.SGD(twin.parameters(), lr=0.1)
    for _ in range(4):
        twin_opt.zero_grad()
        twin(x).square().mean().backward()
        twin_opt.step()
    _close(model.weight, twin.weight)
    _close(model.bias, twin.bias)
    # A new optimizer state (momentum buffers appear): the C++ path sees it no longer fits and the Python
    # path recaptures, as before.
    for g in opt.param_groups:
        g["momentum"] = 0.9
    step(x)
    step(x)
    _, served = _served(step, lambda: step(x))
    assert served == {"training": 1}


def test_random_ops_and_their_generator_advance_through_the_cpp_path():
    f = lambda x: kiln.nn.functional.dropout(x, 0.5) + kiln.rand_like(x)  # noqa: E731
    compiled = kiln.compile(f)
    x = kiln.tensor(X)
    with kiln.no_grad():
        compiled(x)
        kiln.manual_seed(5)
        out, served = _served(compiled, lambda: compiled(x))
        after = kiln.rand(3)
        kiln.manual_seed(5)
        want = f(x)
        want_after = kiln.rand(3)
    assert served == {"graph": 1}
    _close(out, want)
    _close(after, want_after)


def test_inputs_written_in_place_are_copied_back_by_the_cpp_path():
    def f(x, y):
        x.add_(y)
        return x * 2

    compiled = kiln.compile(f)
    x, y = kiln.tensor(X), kiln.tensor(Y)
    compiled(x, y)
    out, served = _served(compiled, lambda: compiled(x, y))
    assert served == {"graph": 1}
    _close(x, kiln.tensor(X + 2 * Y))
    _close(out, kiln.tensor(2 * (X + 2 * Y)))


def test_structured_outputs_and_scalar_arguments_through_the_cpp_path():
    def f(x, scale, name):
        return {"a": x * scale, "b": (x + 1, name, 3)}

    compiled = kiln.compile(f)
    x = kiln.tensor(X)
    compiled(x, 2.0, "n")
    out, served = _served(compiled, lambda: compiled(x, 2.0, "n"))
    assert served == {"graph": 1}
    assert out["b"][1:] == ("n", 3)
    _close(out["a"], x * 2.0)
    _close(out["b"][0], x + 1)


def _base_and_changes():
    """(name, first call's arguments, a call differing in exactly that guard, a context for the call)."""
    x, y = kiln.tensor(X), kiln.tensor(Y)
    return [
        ("sizes", (x, 2.0), (kiln.tensor(X[:2]), 2.0), None),
        ("rank", (x, 2.0), (kiln.tensor(X.reshape(12)), 2.0), None),
        ("strides", (x, 2.0), (x.t().contiguous().t(), 2.0), None),
        ("dtype", (x, 2.0), (x.double(), 2.0), None),
        ("device", (x, 2.0), (x.to("meta"), 2.0), None),
        ("requires_grad", (x, 2.0), (kiln.tensor(X, requires_grad=True), 2.0), None),
        ("grad mode", (x, 2.0), (x, 2.0), kiln.no_grad),
        ("scalar value", (x, 2.0), (x, 3.0), None),
        ("scalar type", (x, 2.0), (x, 2), None),
        ("bool for int", (x, 1), (x, True), None),
        ("None for a tensor", (x, y), (x, None), None),
        ("aliasing", (x, y), (x, x), None),
        ("a tensor's place", (x, 2.0), (2.0, x), None),
    ]


@pytest.mark.parametrize("case", range(len(_base_and_changes())), ids=[c[0] for c in _base_and_changes()])
def test_each_argument_guard_misses_through_the_cpp_path(case):
    name, base, changed, ctx = _base_and_changes()[case]

    def f(a, b):
        if b is None:
            return a * 2
        return a * b + 1

    compiled = kiln.compile(f, dynamic=False)
    compiled(*base)
    _, served = _served(compiled, lambda: compiled(*base))
    assert served, name  # the first entry is served from C++
    with (ctx() if ctx is not None else _nothing()):
        out, served = _served(compiled, lambda: compiled(*changed))
    assert served == {}, name  # the changed guard misses: the Python key recaptures
    assert compiled.num_captures == 2, name
    assert out.shape == f(*changed).shape
    with (ctx() if ctx is not None else _nothing()):
        _, served = _served(compiled, lambda: compiled(*changed))
    assert served, name  # the new entry is served from C++ too
    _, served = _served(compiled, lambda: compiled(*base))
    assert served and compiled.num_captures == 2, name


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.5)
        self.register_buffer("shift", kiln.ones(3))

    def forward(self, x):
        return self.drop(self.lin(x)) + self.shift


def _module_changes():
    def train_flag(m):
        m.drop.eval()

    def parameter(m):
        m.lin.weight = nn.Parameter(m.lin.weight.detach().clone())

    def buffer(m):
        m.shift = kiln.zeros(3)

    def submodule(m):
        m.lin = nn.Linear(4, 3)

    def parameter_metadata(m):
        m.lin.bias.requires_grad_(False)

    return [train_flag, parameter, buffer, submodule, parameter_metadata]


@pytest.mark.parametrize("change", _module_changes(), ids=lambda c: c.__name__)
def test_each_module_guard_misses_through_the_cpp_path(change):
    kiln.manual_seed(0)
    net = _Net()
    compiled = kiln.compile(net)
    x = kiln.tensor(X)
    with kiln.no_grad():
        compiled(x)
        _, served = _served(compiled, lambda: compiled(x))
        assert served == {"graph": 1}
        calls = compiled._compiled_call
        change(net)
        kiln.manual_seed(1)
        out, served = _served(compiled, lambda: compiled(x))
        assert served == {}
        assert calls.num_captures == 2
        kiln.manual_seed(1)
        _close(out, net(x))
        kiln.manual_seed(1)
        out, served = _served(compiled, lambda: compiled(x))
        assert served == {"graph": 1}
        kiln.manual_seed(1)
        _close(out, net(x))


def test_a_first_keyword_call_misses_and_nested_captures_skip_the_cpp_path():
    inner = kiln.compile(lambda x: x * 3)
    x = kiln.tensor(X)
    inner(x)
    _, served = _served(inner, lambda: inner(x))
    assert served == {"graph": 1}
    _, served = _served(inner, lambda: inner(x=x))
    assert served == {}  # another structure: the Python key captures it
    _, served = _served(inner, lambda: inner(x=x))
    assert served == {"graph": 1}
    outer = kiln.compile(lambda x: inner(x) + 1)
    out, served = _served(inner, lambda: outer(x))  # inner runs inside outer's capture: inlined, never replayed
    assert served == {}
    _close(out, x * 3 + 1)
    assert outer.num_captures == 1 and inner.num_captures == 2


def test_reset_drops_the_cpp_entries():
    compiled = kiln.compile(lambda x: x - 1)
    x = kiln.tensor(X)
    compiled(x)
    assert len(compiled._fast_entries) == 1 and compiled._fast_entries[0].kind == "graph"
    kiln.compiler.reset()
    assert compiled._fast_entries == []
    _, served = _served(compiled, lambda: compiled(x))
    assert served == {} and compiled.num_captures == 1


def test_a_compiled_function_in_a_reference_cycle_is_collected():
    holder = {}
    # The function refers back to the compiled function; its graph break makes an "eager" entry, which
    # holds the function from C++ (CacheEntry's tp_traverse shows that reference to the collector).
    compiled = kiln.compile(lambda x: x * float(x.sum()) * holder["f"].num_captures)
    holder["f"] = compiled
    with pytest.warns(UserWarning, match="graph break"):
        compiled(kiln.tensor(X))
    assert compiled._fast_entries[0].kind == "eager"
    compiled(kiln.tensor(X))
    ref = weakref.ref(compiled)
    del compiled, holder
    gc.collect()
    assert ref() is None


def test_a_runner_replaced_after_the_capture_still_runs_the_graph():
    compiled = kiln.compile(lambda x: x * 2)
    x = kiln.tensor(X)
    compiled(x)
    (entry,) = compiled.guarded_entries
    program, runs = entry.program, []
    run = program.runner
    program.runner = lambda graph, inputs: runs.append(len(inputs)) or run(graph, inputs)
    _close(compiled(x), x * 2)
    assert runs == [1]
    program.runner = run
    _, served = _served(compiled, lambda: compiled(x))
    assert served == {"graph": 1} and runs == [1]


# --- keyword and container arguments ---------------------------------------------------------------


def _structured(x, scale, *, pair, table, name="n"):
    a, (b, c) = pair
    return {"out": (x * scale + a) * table["w"] - b * c, "n": table["n"], "name": name}


def _structured_args():
    x, y = kiln.tensor(X), kiln.tensor(Y)
    w = kiln.tensor(RNG.standard_normal((3, 4)).astype(np.float32))
    return (x, 2.0), {"pair": (y, [x, w]), "table": {"w": w, "n": 3}, "name": "n"}


@pytest.mark.parametrize("backend", ["default", "eager"])
def test_keyword_and_nested_arguments_are_served_from_cpp(backend):
    compiled = kiln.compile(_structured, backend=backend)
    args, kwargs = _structured_args()
    compiled(*args, **kwargs)
    for _ in range(2):
        out, served = _served(compiled, lambda: compiled(*args, **kwargs))
        assert served == {"graph": 1}
        want = _structured(*args, **kwargs)
        assert out["n"] == 3 and out["name"] == "n"
        _close(out["out"], want["out"])
    # New tensors of the same metadata are the graph's inputs, in flatten's order.
    x2, y2 = kiln.tensor(Y), kiln.tensor(X * 3)
    w2 = kiln.tensor(RNG.standard_normal((3, 4)).astype(np.float32))
    kwargs2 = {"pair": (y2, [x2, w2]), "table": {"w": w2, "n": 3}, "name": "n"}
    out, served = _served(compiled, lambda: compiled(x2, 2.0, **kwargs2))
    assert served == {"graph": 1}
    _close(out["out"], _structured(x2, 2.0, **kwargs2)["out"])
    assert compiled.num_captures == 1


def _structure_changes():
    """(name, a change of _structured_args' call that the guards must see)."""
    x = kiln.tensor(X)

    def nested_size(args, kw):
        kw["pair"] = (kw["pair"][0], [kiln.tensor(X[:1]), kw["pair"][1][1]])

    def list_for_tuple(args, kw):
        kw["pair"] = list(kw["pair"])

    def list_length(args, kw):
        kw["pair"] = (kw["pair"][0], kw["pair"][1] + [x])

    def dict_key(args, kw):
        kw["table"] = {"w": kw["table"]["w"], "m": 3}

    def dict_order(args, kw):
        kw["table"] = {"n": 3, "w": kw["table"]["w"]}

    def dict_value(args, kw):
        kw["table"] = {"w": kw["table"]["w"], "n": 4}

    def scalar_type(args, kw):
        kw["table"] = {"w": kw["table"]["w"], "n": 3.0}

    def keyword_order(args, kw):
        kw["table"] = kw.pop("table")

    def keyword_missing(args, kw):
        del kw["name"]

    def keyword_value(args, kw):
        kw["name"] = "m"

    def nested_aliasing(args, kw):
        kw["pair"] = (kw["pair"][0], [kw["pair"][1][0], kw["pair"][0]])  # c is now the same object as a

    def tensor_for_scalar(args, kw):
        kw["table"] = {"w": kw["table"]["w"], "n": kiln.tensor(3.0)}

    def positional_keyword(args, kw):
        args.append(kw.pop("pair"))

    return [nested_size, list_for_tuple, list_length, dict_key, dict_order, dict_value, scalar_type, keyword_order,
            keyword_missing, keyword_value, nested_aliasing, tensor_for_scalar, positional_keyword]


def _flexible(x, scale, pair=None, *, table, name="n"):
    a, rest = pair
    b, c = rest[0], rest[1]
    n = table.get("n", table.get("m"))
    return (x * scale + a) * table["w"] - b * c * (n if isinstance(n, (int, float)) else n.sum()), name


@pytest.mark.parametrize("change", _structure_changes(), ids=lambda c: c.__name__)
def test_each_container_and_keyword_guard_misses_through_the_cpp_path(change):
    compiled = kiln.compile(_flexible, dynamic=False)
    args, kwargs = _structured_args()
    compiled(*args, **kwargs)
    _, served = _served(compiled, lambda: compiled(*args, **kwargs))
    assert served == {"graph": 1}
    args2, kwargs2 = list(args), dict(kwargs)
    change(args2, kwargs2)
    out, served = _served(compiled, lambda: compiled(*args2, **kwargs2))
    assert served == {}  # the changed structure misses: the Python key recaptures
    assert compiled.num_captures == 2
    want = _flexible(*args2, **kwargs2)
    _close(out[0], want[0])
    assert out[1] == want[1]
    out, served = _served(compiled, lambda: compiled(*args2, **kwargs2))
    assert served == {"graph": 1}  # the new structure has its own C++ entry
    _close(out[0], want[0])
    _, served = _served(compiled, lambda: compiled(*args, **kwargs))
    assert served == {"graph": 1} and compiled.num_captures == 2


def test_a_named_tuple_argument_is_guarded_by_its_class():
    import collections

    Pair = collections.namedtuple("Pair", "a b")
    f = lambda p: p.a * 2 + p.b  # noqa: E731
    compiled = kiln.compile(f)
    x, y = kiln.tensor(X), kiln.tensor(Y)
    compiled(Pair(x, y))
    out, served = _served(compiled, lambda: compiled(Pair(y, x)))
    assert served == {"graph": 1}
    _close(out, y * 2 + x)
    Other = collections.namedtuple("Other", "a b")
    out, served = _served(compiled, lambda: compiled(Other(x, y)))
    assert served == {} and compiled.num_captures == 2
    _close(out, x * 2 + y)


def test_unguardable_containers_take_the_python_key():
    import collections

    f = lambda d: d["a"] * 2  # noqa: E731
    compiled = kiln.compile(f)
    x = kiln.tensor(X)
    ordered = collections.OrderedDict(a=x)  # a dict subclass: C++ does not walk it
    compiled(ordered)
    out, served = _served(compiled, lambda: compiled(ordered))
    assert served == {} and compiled.num_captures == 1
    _close(out, x * 2)
    keyed = kiln.compile(lambda d: d[(0, 1)] + 1)  # a tuple key
    keyed({(0, 1): x})
    out, served = _served(keyed, lambda: keyed({(0, 1): x}))
    assert served == {} and keyed.num_captures == 1
    _close(out, x + 1)


@pytest.mark.parametrize("backend", ["default", "eager"])
def test_gradients_flow_through_keyword_and_nested_arguments(backend):
    def f(x, *, weights, bias=None):
        return ((x @ weights[0]).tanh() @ weights[1] + bias["b"]).square().mean()

    compiled = kiln.compile(f, backend=backend)
    x = kiln.tensor(X)
    w0 = kiln.tensor(RNG.standard_normal((4, 5)).astype(np.float32), requires_grad=True)
    w1 = kiln.tensor(RNG.standard_normal((5, 2)).astype(np.float32), requires_grad=True)
    b = kiln.tensor(RNG.standard_normal(2).astype(np.float32), requires_grad=True)
    compiled(x, weights=[w0, w1], bias={"b": b})
    loss, served = _served(compiled, lambda: compiled(x, weights=[w0, w1], bias={"b": b}))
    assert served == {"joint": 1}
    loss.backward()
    got = [t.grad.clone() for t in (w0, w1, b)]
    for t in (w0, w1, b):
        t.grad = None
    want = f(x, weights=[w0, w1], bias={"b": b})
    want.backward()
    _close(loss, want)
    for g, t in zip(got, (w0, w1, b)):
        _close(g, t.grad)


def test_a_module_called_with_keywords_is_served_from_cpp():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def forward(self, x, *, extra, scale=1.0):
            return self.lin(x + extra[0]) * scale

    kiln.manual_seed(0)
    net = Net()
    compiled = kiln.compile(net)
    x, y = kiln.tensor(X), kiln.tensor(Y)
    with kiln.no_grad():
        compiled(x, extra=[y], scale=2.0)
        out, served = _served(compiled, lambda: compiled(x, extra=[y], scale=2.0))
        assert served == {"graph": 1}
        _close(out, net(x, extra=[y], scale=2.0))
        _, served = _served(compiled, lambda: compiled(x, extra=[y], scale=3.0))
        assert served == {}


# --- modules overriding Module's walks ---------------------------------------------------------------


class _ExtraWeight(nn.Module):
    """A module whose class overrides named_parameters: its extra weight (a plain attribute) is a parameter
    the Python key's walk sees."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        object.__setattr__(self, "extra", kiln.ones(3))

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from super().named_parameters(prefix, recurse, remove_duplicate)
        yield "extra", self.extra

    def forward(self, x):
        return self.lin(x) * self.extra


def test_a_module_overriding_the_walks_takes_the_python_key_and_sees_a_rebound_tensor():
    kiln.manual_seed(0)
    net = _ExtraWeight()
    compiled = kiln.compile(net)
    x = kiln.tensor(X)
    with kiln.no_grad():
        compiled(x)
        out, served = _served(compiled, lambda: compiled(x))
        assert served == {} and compiled._compiled_call.num_captures == 1  # no C++ guard: the Python key
        _close(out, net(x))
        object.__setattr__(net, "extra", kiln.full((3,), 2.0))  # only the overridden walk sees this
        out, served = _served(compiled, lambda: compiled(x))
        assert served == {} and compiled._compiled_call.num_captures == 2
        _close(out, net(x))


def test_a_walk_overridden_after_the_capture_is_never_a_stale_hit():
    class Lin(nn.Linear):
        pass

    class Walking(nn.Module):  # its forward reads its buffers through the walk
        def __init__(self):
            super().__init__()
            self.lin = Lin(4, 3)
            self.register_buffer("shift", kiln.ones(3))

        def forward(self, x):
            return self.lin(x) + sum(b for _, b in self.named_buffers())

    kiln.manual_seed(0)
    net = Walking()
    compiled = kiln.compile(net)
    x = kiln.tensor(X)
    twice = kiln.ones(3) * 2
    with kiln.no_grad():
        compiled(x)
        _, served = _served(compiled, lambda: compiled(x))
        assert served == {"graph": 1}
        calls = compiled._compiled_call
        # An instance's own walk: its buffers are now other tensors.
        net.named_buffers = lambda *a, **k: iter([("shift", twice)])
        out, served = _served(compiled, lambda: compiled(x))
        assert served == {} and calls.num_captures == 2
        _close(out, net.lin(x) + twice)
        _close(out, net(x))
        del net.named_buffers
        out, served = _served(compiled, lambda: compiled(x))
        assert served == {"graph": 1}  # the first entry holds again
        _close(out, net(x))
        # The class changed after the capture: its version tag moves, the C++ guard misses.
        Walking.named_buffers = lambda self, *a, **k: iter([("shift", twice * 2)])
        out, served = _served(compiled, lambda: compiled(x))
        assert served == {} and calls.num_captures == 3
        _close(out, net.lin(x) + twice * 2)
        # A submodule's class changed: the same.
        del Walking.named_buffers
        compiled(x)
        _, served = _served(compiled, lambda: compiled(x))
        assert served == {"graph": 1}
        Lin.scale = 1.0  # any class attribute set
        _, served = _served(compiled, lambda: compiled(x))
        assert served == {}
