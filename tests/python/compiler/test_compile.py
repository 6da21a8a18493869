"""kiln.compile with the "eager" backend: capture, guards, cache, graph breaks.

Each function of the table runs eagerly and compiled (first call captures,
second replays the graph); values, dtypes and gradients must agree, and the
eager side agrees with torch."""

import warnings

import numpy as np
import pytest
import torch

import kiln
from kiln import _C
from kiln.compiler import GraphBreak

RNG = np.random.default_rng(23)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)
W = RNG.standard_normal((4, 5)).astype(np.float32)
B = RNG.standard_normal((4,)).astype(np.float32)


def _inplace_intermediate(F, x, y, w, b):
    z = x * 2
    z.add_(y)
    z.mul_(0.5)
    return z


# name -> (function of (F, x, y, w, b), where F is the kiln or torch module)
CASES = {
    "pointwise_chain": lambda F, x, y, w, b: ((x * 2 + y).relu() * y - 1).exp().tanh(),
    "broadcast": lambda F, x, y, w, b: x + b * 0.5 - y[0:1],
    "sum_dim": lambda F, x, y, w, b: (x * y).sum(dim=1),
    "sum_all": lambda F, x, y, w, b: (x * y).sum(),
    "mean_keepdim": lambda F, x, y, w, b: x - x.mean(dim=0, keepdim=True),
    "amax": lambda F, x, y, w, b: (x * y).amax(dim=1),
    "matmul": lambda F, x, y, w, b: x @ w,
    "linear": lambda F, x, y, w, b: F.nn.functional.linear(x, w.t(), b[:1].expand(5)),
    "views": lambda F, x, y, w, b: x.view(4, 3).t().reshape(12) * y.flatten(),
    "transpose_contiguous": lambda F, x, y, w, b: x.transpose(0, 1).contiguous() * 2,
    "slices": lambda F, x, y, w, b: x[:, 1:3] * y[:, :2],
    "softmax": lambda F, x, y, w, b: F.softmax(x, dim=-1) * y,
    "log_softmax": lambda F, x, y, w, b: F.log_softmax(x + y, dim=0),
    "layer_norm": lambda F, x, y, w, b: F.nn.functional.layer_norm(x, (4,), b, b * 2),
    "sigmoid_pow_sqrt": lambda F, x, y, w, b: (x.sigmoid() ** 2 + y * y + 1).sqrt(),
    "cat_stack": lambda F, x, y, w, b: F.cat([x, y], dim=0).sum(0) + F.stack([x, y]).mean(0).sum(0),
    "inplace_intermediate": _inplace_intermediate,
    "tuple_output": lambda F, x, y, w, b: (x + y, x * y),
    "dict_output": lambda F, x, y, w, b: {"sum": x + y, "w": (x @ w).relu()},
    "where": lambda F, x, y, w, b: F.where(x > 0, x, y * 0.1),
    "mse_loss": lambda F, x, y, w, b: F.nn.functional.mse_loss(x, y),
    "gelu": lambda F, x, y, w, b: F.nn.functional.gelu(x) * y,
}


def _inputs(lib, requires_grad):
    return [lib.tensor(a.copy(), requires_grad=requires_grad) for a in (X, Y, W, B)]


def _flat(out):
    if isinstance(out, dict):
        return [out[k] for k in sorted(out)]
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def _assert_same(got, want):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())


def _grads(fn, tensors):
    loss = sum((o.float() * (i + 1)).sum() for i, o in enumerate(_flat(fn(kiln, *tensors))))
    loss.backward()
    return [t.grad for t in tensors]


@pytest.mark.parametrize("name", sorted(CASES))
def test_table_compiled_equals_eager_values_and_grads(name):
    fn = CASES[name]
    compiled = kiln.compile(fn, backend="eager")
    args = _inputs(kiln, False)
    want = fn(kiln, *args)
    _assert_same(compiled(kiln, *args), want)  # capture
    _assert_same(compiled(kiln, *args), want)  # replay
    assert compiled.num_captures == 1
    assert not compiled.break_reasons
    # the eager side agrees with torch
    t_out = fn(torch, *_inputs(torch, False))
    for k, t in zip(_flat(want), _flat(t_out)):
        np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)

    eager_inputs = _inputs(kiln, True)
    eager_grads = _grads(fn, eager_inputs)
    compiled_inputs = _inputs(kiln, True)
    compiled(kiln, *compiled_inputs)  # capture for requires_grad=True
    assert compiled.num_captures == 2
    for t in compiled_inputs:
        t.grad = None
    compiled_grads = _grads(lambda F, *a: compiled(F, *a), compiled_inputs)  # replay, then backward
    assert compiled.num_captures == 2
    for g, w in zip(compiled_grads, eager_grads):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_captured_graph_has_ops_and_verifies():
    out = kiln.compiler.explain(CASES["pointwise_chain"])(kiln, *_inputs(kiln, False))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert out.op_count == len(out.ops_per_graph[0]) >= 5
    assert "kiln::relu" in out.ops_per_graph[0]
    out.graphs[0].verify()
    assert "graph(" in str(out) and "Op Count" in str(out)
    assert "grad mode" in out.out_guards and "tensor argument 0 sizes" in out.out_guards


# --- modules ---------------------------------------------------------------


def _mlp():
    kiln.manual_seed(0)
    return kiln.nn.Sequential(kiln.nn.Linear(4, 8), kiln.nn.ReLU(), kiln.nn.Linear(8, 2))


def test_mlp_module_values_and_parameter_grads():
    model = _mlp()
    compiled = kiln.compile(model, backend="eager")
    x = kiln.tensor(X)
    want = model(x)
    want.sum().backward()
    eager_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    for _ in range(2):  # capture, then replay
        model.zero_grad()
        got = compiled(x)
        _assert_same(got, want)
        got.sum().backward()
        for p, g in zip(model.parameters(), eager_grads):
            np.testing.assert_array_equal(p.grad.numpy(), g.numpy())
    assert compiled._compiled_call.num_captures == 1
    # parameters are inputs, not baked in: an in-place update is seen by the replay
    with kiln.no_grad():
        for p in model.parameters():
            p.mul_(0.5)
    _assert_same(compiled(x), model(x))


def test_module_wrapper_keeps_parameters_state_dict_and_modes():
    model = _mlp()
    compiled = kiln.compile(model)
    assert compiled._orig_mod is model
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]
    # torch's OptimizedModule prefixes state_dict keys with "_orig_mod."
    t_model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    # Importing torch._dynamo switches torch.distributions' argument validation off for the
    # whole process; restore it so later torch comparisons see torch's defaults.
    validate_args = torch.distributions.Distribution._validate_args
    try:
        torch_keys = list(torch.compile(t_model).state_dict())
    finally:
        torch.distributions.Distribution.set_default_validate_args(validate_args)
    assert list(compiled.state_dict()) == torch_keys
    assert list(compiled.state_dict()) == ["_orig_mod." + k for k in model.state_dict()]
    compiled.load_state_dict(compiled.state_dict())
    compiled.eval()
    assert not model.training and not model[0].training
    compiled.train()
    assert model.training
    assert compiled[0] is model[0] if hasattr(type(compiled), "__getitem__") else compiled._orig_mod[0] is model[0]
    lin = kiln.nn.Linear(3, 2)
    c = kiln.compile(lin)
    assert c.weight is lin.weight and c.in_features == 3


def test_module_compile_in_place():
    model = _mlp()
    x = kiln.tensor(X)
    want = model(x)
    state_keys = list(model.state_dict())
    assert model.compile(backend="eager") is None  # as torch's nn.Module.compile
    compiled_call = model._compiled_call_impl
    for _ in range(2):  # capture, then replay
        _assert_same(model(x), want)
    assert compiled_call.num_captures == 1
    assert list(model.state_dict()) == state_keys  # no prefix: the module itself is compiled
    model.eval()
    _assert_same(model(x), want)
    assert compiled_call.num_captures == 2  # training flags are guarded
    with kiln.no_grad():
        model[0].weight.mul_(0.5)
    _assert_same(model(x), model._call_impl(x))  # parameters are inputs, not baked in
    t_model = torch.nn.Linear(2, 2)
    assert hasattr(t_model, "compile") and hasattr(kiln.nn.Linear(2, 2), "compile")


def test_module_cached_calls_see_parameter_and_structure_changes():
    model = _mlp()
    compiled = kiln.compile(model, backend="eager")
    call = compiled._compiled_call
    x = kiln.tensor(X)
    compiled(x)
    _assert_same(compiled(x), model(x))
    assert call.num_captures == 1 and len(call.guarded_entries) == 1
    model[0].weight = kiln.nn.Parameter(model[0].weight.detach() * 2)  # a new parameter object
    _assert_same(compiled(x), model(x))
    assert call.num_captures == 2
    model[2].bias.requires_grad_(False)  # a parameter's metadata, in place
    _assert_same(compiled(x), model(x))
    assert call.num_captures == 3
    model[1].eval()  # one submodule's training flag
    _assert_same(compiled(x), model(x))
    assert call.num_captures == 4
    model[2] = kiln.nn.Linear(8, 2)  # a new submodule
    _assert_same(compiled(x), model(x))
    assert call.num_captures == 5
    model.register_buffer("scale", kiln.ones(1))  # a new buffer
    _assert_same(compiled(x), model(x))
    assert call.num_captures == 6
    _assert_same(compiled(x), model(x))
    assert call.num_captures == 6


def test_train_eval_recompiles_and_dropout_replays_fresh_numbers():
    model = kiln.nn.Sequential(kiln.nn.Linear(4, 4), kiln.nn.Dropout(0.5))
    compiled = kiln.compile(model, backend="eager")
    x = kiln.tensor(X)
    kiln.manual_seed(5)
    want = [model(x) for _ in range(3)]
    kiln.manual_seed(5)
    got = [compiled(x) for _ in range(3)]  # capture, replay, replay
    for g, w in zip(got, want):
        _assert_same(g, w)
    assert not np.array_equal(got[1].detach().numpy(), got[2].detach().numpy())
    calls = compiled._compiled_call
    assert calls.num_captures == 1 and not calls.break_reasons
    compiled.eval()
    _assert_same(compiled(x), model(x))
    assert calls.num_captures == 2
    compiled(x)
    compiled.train()
    compiled(x)
    assert calls.num_captures == 2


def test_random_factory_replays_fresh_numbers_like_eager():
    def f(x):
        return x + kiln.randn(3, 4) * kiln.rand(4)

    x = kiln.tensor(X)
    kiln.manual_seed(11)
    want = [f(x) for _ in range(3)]
    compiled = kiln.compile(f, backend="eager", fullgraph=True)
    kiln.manual_seed(11)
    got = [compiled(x) for _ in range(3)]
    for g, w in zip(got, want):
        _assert_same(g, w)
    assert compiled.num_captures == 1


def test_inplace_on_input_mutates_the_real_input_on_replay():
    def f(x, y):
        x.add_(y)
        return x * 2

    compiled = kiln.compile(f, backend="eager", fullgraph=True)
    for _ in range(2):
        xe, ye = kiln.tensor(X), kiln.tensor(Y)
        xc, yc = kiln.tensor(X), kiln.tensor(Y)
        want = f(xe, ye)
        got = compiled(xc, yc)
        _assert_same(got, want)
        _assert_same(xc, xe)
    assert compiled.num_captures == 1


def test_inplace_through_a_view_of_an_input_on_replay():
    def f(x):
        x[0].add_(1)
        return x.sum(dim=1)

    compiled = kiln.compile(f, backend="eager", fullgraph=True)
    for _ in range(2):
        xe, xc = kiln.tensor(X), kiln.tensor(X)
        _assert_same(compiled(xc), f(xe))
        _assert_same(xc, xe)
    assert compiled.num_captures == 1


def test_batchnorm_running_stats_update_on_replay():
    def make():
        kiln.manual_seed(0)
        return kiln.nn.Sequential(kiln.nn.Linear(4, 6), kiln.nn.BatchNorm1d(6), kiln.nn.ReLU())

    eager, model = make(), make()
    compiled = kiln.compile(model, backend="eager", fullgraph=True)
    x = kiln.tensor(RNG.standard_normal((8, 4)).astype(np.float32))
    for _ in range(3):
        _assert_same(compiled(x), eager(x))
    assert compiled._compiled_call.num_captures == 1
    want = eager.state_dict()
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), want[k].numpy())
    assert int(model[1].num_batches_tracked) == 3


def test_global_tensor_is_read_by_reference_and_writing_it_breaks():
    g = kiln.tensor(B)

    def reads(x):
        return x + g

    compiled = kiln.compile(reads, backend="eager", fullgraph=True)
    x = kiln.tensor(X)
    compiled(x)
    g.mul_(3)  # an in-place change of the global is seen by the replay
    _assert_same(compiled(x), x + g)

    def writes(x):
        g.add_(1)
        return x * g

    with pytest.raises(GraphBreak, match="captured by reference"):
        kiln.compile(writes, fullgraph=True)(x)

    def returns_a_constant(x):
        return x * 2, kiln.tensor([1.0, 2.0])

    with pytest.raises(GraphBreak, match="did not compute"):
        kiln.compile(returns_a_constant, fullgraph=True)(x)
    compiled = kiln.compile(lambda x: (x, x + 1), fullgraph=True)  # returning an input is fine
    compiled(x)
    assert compiled(x)[0] is x


# --- guards ------------------------------------------------------------------


def test_guards_recompile_exactly_when_they_should():
    compiled = kiln.compile(lambda x, s: (x * s).sum(dim=0), backend="eager")
    x = kiln.tensor(X)
    compiled(x, 2.0)
    compiled(kiln.tensor(Y), 2.0)  # new values, same guards
    assert compiled.num_captures == 1
    compiled(kiln.tensor(X[:2]), 2.0)  # size
    assert compiled.num_captures == 2
    compiled(x, 2.0)  # back: cached
    assert compiled.num_captures == 2
    compiled(x.double(), 2.0)  # dtype
    assert compiled.num_captures == 3
    compiled(kiln.tensor(X, requires_grad=True), 2.0)  # requires_grad
    assert compiled.num_captures == 4
    with kiln.no_grad():  # grad mode
        compiled(kiln.tensor(X, requires_grad=True), 2.0)
    assert compiled.num_captures == 5
    compiled(x, 3.0)  # a Python scalar by value
    assert compiled.num_captures == 6
    compiled(x.t().contiguous().t(), 2.0)  # strides
    assert compiled.num_captures == 7
    compiled(x, 2.0)
    compiled(kiln.tensor(Y), 3.0)
    assert compiled.num_captures == 7


def test_guard_set_checks_what_the_python_key_holds():
    x, y = kiln.tensor(X), kiln.tensor(Y)
    guards = _C._capture.GuardSet((x, y, 2.0, None, "mean"))
    assert guards.check((x, y, 2.0, None, "mean")) and guards.check((y, x, 2.0, None, "mean"))
    assert not guards.check((x, x, 2.0, None, "mean"))  # aliasing
    assert not guards.check((x, y, 2, None, "mean"))  # a scalar's type
    assert not guards.check((x, y, 3.0, None, "mean"))  # a scalar's value
    assert not guards.check((x, y, 2.0, None, "sum"))
    assert not guards.check((x, y, 2.0, None))  # the number of arguments
    assert not guards.check((x[:2], y, 2.0, None, "mean"))  # sizes
    assert not guards.check((x.t().contiguous().t(), y, 2.0, None, "mean"))  # strides
    assert not guards.check((x.double(), y, 2.0, None, "mean"))  # dtype
    assert not guards.check((kiln.tensor(X, requires_grad=True), y, 2.0, None, "mean"))  # requires_grad
    with kiln.no_grad():
        assert not guards.check((x, y, 2.0, None, "mean"))  # grad mode
    assert not guards.check((2.0, y, 2.0, None, "mean"))  # a tensor's place
    same = _C._capture.GuardSet((x, x))
    assert same.check((y, y)) and not same.check((x, y))
    nested = _C._capture.GuardSet(([x, {"k": y}],), {"s": 2.0})  # containers and keywords are walked
    assert nested.check(([y, {"k": x}],), {"s": 2.0}) and nested.num_tensors == 2
    assert not nested.check(([y, {"j": x}],), {"s": 2.0})  # a dict key
    assert not nested.check(((y, {"k": x}),), {"s": 2.0})  # a tuple for a list
    assert not nested.check(([y, {"k": x}],), {"t": 2.0})  # a keyword's name
    assert not nested.check(([y, {"k": x}],))
    with pytest.raises(TypeError):
        _C._capture.GuardSet((object(),))  # an object: the Python key guards it


def test_cached_calls_take_the_guard_set_and_replay_the_graph():
    compiled = kiln.compile(lambda x, y, s: x * s + y, backend="eager")
    x, y = kiln.tensor(X), kiln.tensor(Y)
    compiled(x, y, 2)
    assert len(compiled.guarded_entries) == 1
    _assert_same(compiled(y, x, 2), y * 2 + x)
    _assert_same(compiled(x, x, 2), x * 2 + x)  # aliasing: a new entry
    _assert_same(compiled(x, y, 2.0), x * 2.0 + y)  # int -> float: a new entry
    assert compiled.num_captures == 3 and len(compiled.guarded_entries) == 3
    keyword = kiln.compile(lambda x, y: x - y, backend="eager")
    _assert_same(keyword(x, y=y), x - y)
    _assert_same(keyword(x, y=y), x - y)
    assert keyword.num_captures == 1 and len(keyword.guarded_entries) == 1  # keywords are guarded in C++ too


def test_recompile_limit_warns_once_then_runs_eagerly():
    # dynamic=False: every size is a new guard set (dynamic=None would make the size symbolic at the
    # first change: compiler/test_dynamic_shapes.py).
    compiled = kiln.compile(lambda x: x * 2 + 1, backend="eager", dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 12):
            x = kiln.ones(n)
            _assert_same(compiled(x), x * 2 + 1)
    assert compiled.num_captures == 8
    limit = [w for w in caught if "recompile limit" in str(w.message)]
    assert len(limit) == 1 and "tensor argument 0 sizes" in str(limit[0].message)


def test_reset_forgets_graphs():
    compiled = kiln.compile(lambda x: x + 1)
    compiled(kiln.tensor(X))
    kiln.compiler.reset()
    compiled(kiln.tensor(X))
    assert compiled.num_captures == 1  # reset also clears the counter
    assert len(compiled.cache) == 1


# --- graph breaks --------------------------------------------------------------


def _branches(x):
    if x.sum() > 0:  # __bool__ -> item(): the value escapes to Python
        return x * 2
    return x - 1


@pytest.mark.parametrize("escape,what", [
    (lambda x: x * x.sum().item(), "item()"),
    (_branches, "item()"),
    (lambda x: x * float(x.sum()), "item()"),
    (lambda x: x[: int(x.abs().sum() > 0) + 1], "item()"),
    (lambda x: x * len(x.tolist()), "tolist()"),
    (lambda x: x * x.detach().numpy().shape[0], "numpy()"),
])
def test_escape_is_a_graph_break_with_reason(escape, what):
    x = kiln.tensor(X)
    out = kiln.compiler.explain(escape)(x)
    assert out.graph_count == 0 and out.graph_break_count == 1
    reason = out.break_reasons[0]
    assert what in reason and "test_compile.py:" in reason, reason
    compiled = kiln.compile(escape, backend="eager")
    with pytest.warns(UserWarning, match="graph break"):
        _assert_same(compiled(x), escape(x))
    _assert_same(compiled(x), escape(x))  # runs eagerly for this guard set
    assert compiled.num_captures == 1
    with pytest.raises(GraphBreak, match=what.replace("(", r"\(").replace(")", r"\)")):
        kiln.compile(escape, fullgraph=True)(x)


def test_no_grad_block_inside_is_a_graph_break():
    def f(x):
        with kiln.no_grad():
            t = x * 2
        return x * t

    x = kiln.tensor(X, requires_grad=True)
    with pytest.raises(GraphBreak, match="grad mode changed"):
        kiln.compile(f, fullgraph=True)(x)


def test_backward_inside_is_captured_with_the_grad_accumulation():
    # Whole training steps (issue 23 item 5; compiler/test_training_step.py): the first call runs eagerly and
    # shows the step's leaves, the second captures the forward, the backward and the accumulation into .grad.
    def step(x):
        loss = (x * x).sum()
        loss.backward()
        return loss

    x = kiln.tensor(X, requires_grad=True)
    compiled = kiln.compile(step, fullgraph=True)
    for _ in range(3):
        compiled(x)
    np.testing.assert_allclose(x.grad.numpy(), 3 * 2 * X, rtol=1e-6)
    assert compiled.num_captures == 2 and len(compiled.cache) == 1 and not compiled.break_reasons


def test_disable_and_is_compiling():
    seen = []

    @kiln.compiler.disable
    def helper(x):
        return x + 1

    def f(x):
        seen.append(kiln.compiler.is_compiling())
        return helper(x) * 2

    x = kiln.tensor(X)
    out = kiln.compiler.explain(f)(x)
    assert seen == [True] and not kiln.compiler.is_compiling()
    assert "kiln.compiler.disable" in out.break_reasons[0]
    assert kiln.compile(helper)(x).shape == x.shape


# --- the API -----------------------------------------------------------------


def test_decorator_forms():
    @kiln.compile
    def a(x):
        return x + 1

    @kiln.compile()
    def b(x):
        return x + 2

    @kiln.compile(backend="eager", fullgraph=True, mode=None, options=None)
    def c(x):
        return x + 3

    x = kiln.tensor(X)
    for fn, k in ((a, 1), (b, 2), (c, 3)):
        fn(x)
        _assert_same(fn(x), x + k)
    assert a.__name__ == "a" and a.num_captures == 1

    def d(x):
        return x

    assert kiln.compile(d, disable=True) is d
    with pytest.raises(ValueError, match="unknown backend"):
        kiln.compile(d, backend="inductor")
    assert kiln.compile is kiln.compiler.compile


def test_signature_matches_torch():
    import inspect

    ours = inspect.signature(kiln.compile)
    theirs = inspect.signature(torch.compile)
    names = list(ours.parameters)
    assert names == ["model", "fullgraph", "dynamic", "backend", "mode", "options", "disable"]
    assert names == [n for n in theirs.parameters if n in names]  # same order as torch's
    for name in ("fullgraph", "dynamic", "mode", "options", "disable"):
        assert ours.parameters[name].default == theirs.parameters[name].default


def test_capture_session_binding():
    x, w = kiln.tensor(X), kiln.tensor(W)
    s = _C._capture.Session()
    s.add_input(x)
    s.add_input(w)
    with s:
        assert _C._capture.is_capturing()
        y = (x @ w).relu().sum(dim=1)
    assert not _C._capture.is_capturing()
    s.mark_output(y)
    assert not s.broken and s.break_reason is None and s.num_ops >= 2
    assert [t is x for t in s.input_tensors] == [True, False]
    g = s.take_graph()
    g.verify()
    assert "kiln::relu" in _C._ir.print(g)
    x2 = kiln.tensor(Y[:, :4])
    _assert_same(_C._ir.run(g, [x2, w])[0], (x2 @ w).relu().sum(dim=1))
