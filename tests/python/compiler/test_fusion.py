"""kiln.compile's "default" backend: pointwise fusion into LLVM kernels
(passes/fuse_pointwise, codegen/llvm, runtime/CompiledGraph) against eager:
kernel counts, broadcast and strided inputs, 0- and 1-size dimensions, an
MLP's inference, which replays need autograd (interpreter), the codegen log,
and the pointwise ops of ops.yaml the kernel math table leaves to eager."""

import pathlib

import numpy as np
import pytest
import yaml

import kiln
from kiln import _C, _logging
from kiln.compiler._backends import compiled_graphs, kernel_counts

ROOT = pathlib.Path(__file__).resolve().parents[3]
RNG = np.random.default_rng(24)


def rand(*shape, dtype=np.float32):
    return kiln.from_numpy(RNG.standard_normal(shape).astype(dtype))


def run_both(fn, *args):
    """(compiled replay, eager) under no_grad; the compiled function is called twice (capture, replay)."""
    compiled = kiln.compile(fn)
    with kiln.no_grad():
        compiled(*args)
        got = compiled(*args)
        want = fn(*args)
    return compiled, got, want


def assert_same(got, want):
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.stride() == w.stride()
        if g.dtype == kiln.bfloat16:  # numpy has no bfloat16; float32 holds it exactly
            g, w = g.float(), w.float()
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def chain8(x):
    return ((x * 2 + 1).sin().exp().tanh() - 0.5).relu().sqrt()


def test_chain_of_eight_ops_is_one_kernel():
    x = rand(1000)
    compiled, got, want = run_both(chain8, x)
    assert kernel_counts(compiled) == [1]
    (graph,) = compiled_graphs(compiled)
    assert len(graph.kernel_ops[0]) == 8 and graph.eager_ops == []
    assert_same(got, want)  # bit-identical: the same vector math (Note [Compiled vector math])


def test_chain_with_two_uses_and_two_outputs():
    def f(x, y):
        a = x * y
        b = a.exp() + a
        return b, b.neg() - y

    compiled, got, want = run_both(f, rand(37), rand(37))
    assert kernel_counts(compiled) == [1]
    assert_same(got, want)


@pytest.mark.parametrize("shapes", [((4, 5), (5,)), ((4, 1), (1, 5)), ((3, 4, 5), (4, 1)), ((6,), ())])
def test_broadcast_inputs(shapes):
    def f(x, y):
        return (x - y).abs() * 2 + y

    compiled, got, want = run_both(f, rand(*shapes[0]), rand(*shapes[1]))
    assert kernel_counts(compiled) == [1]
    assert_same(got, want)


def test_non_contiguous_inputs():
    x = rand(6, 8).t()  # transposed: eager's results keep its layout, and so do the kernel's
    y = rand(8, 12)[:, ::2]  # strided columns

    def f(x, y):
        return (x * y + 1).exp() - y

    compiled, got, want = run_both(f, x, y)
    assert kernel_counts(compiled) == [1]
    assert_same(got, want)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4), (1,), (1, 1), (5, 1), (1, 7)])
def test_zero_and_one_size_dims(shape):
    def f(x, y):
        return (x * 3 - y).relu() + x

    compiled, got, want = run_both(f, rand(*shape), rand(*shape))
    assert kernel_counts(compiled) == [1]
    assert_same(got, want)


@pytest.mark.parametrize("dtype", [kiln.float16, kiln.bfloat16, kiln.float64, kiln.int32])
def test_chain_in_other_dtypes(dtype):
    def f(x, y):
        return kiln.maximum(x * y - x, y) + (x > y).to(dtype)

    x = (rand(40) * 10).to(dtype)
    y = (rand(40) * 10).to(dtype)
    compiled, got, want = run_both(f, x, y)
    assert kernel_counts(compiled) == [1]
    assert_same(got, want)


def test_mlp_inference_equals_eager():
    kiln.manual_seed(0)
    model = kiln.nn.Sequential(kiln.nn.Linear(16, 32), kiln.nn.ReLU(), kiln.nn.Linear(32, 32), kiln.nn.Tanh(),
                               kiln.nn.Linear(32, 4), kiln.nn.Sigmoid())
    compiled = kiln.compile(model)
    x = rand(8, 16)
    with kiln.no_grad():
        want = model(x)
        compiled(x)
        got = compiled(x)
    assert kernel_counts(compiled) == [3]  # relu, tanh, sigmoid after each matmul (the epilogues stay unfused)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, atol=1e-7)


def test_replays_that_need_autograd_fuse_forward_and_backward():
    # A joint capture's forward and backward graphs run with grad mode off under one
    # autograd node, so both fuse: (x * w).exp() forward, grad * exp * x backward.
    w = rand(5).requires_grad_()

    def f(x):
        return (x * w).exp()

    compiled = kiln.compile(f)
    x = rand(5)
    compiled(x).sum().backward()
    got = w.grad.clone()
    w.grad = None
    f(x).sum().backward()
    assert_same(got, w.grad)
    assert kernel_counts(compiled) == [2]
    forward, backward = compiled_graphs(compiled)
    assert forward.kernel_ops == [["kiln::mul.Tensor", "kiln::exp"]] and forward.eager_ops == []
    assert backward.kernel_count == 1 and backward.eager_ops == []
    with kiln.no_grad():
        compiled(x)
    assert kernel_counts(compiled) == [2, 1]


def test_eager_backend_never_compiles():
    compiled = kiln.compile(chain8, backend="eager")
    with kiln.no_grad():
        compiled(rand(10))
    assert kernel_counts(compiled) == [None]


def test_graph_writing_in_place_into_an_input_view_is_not_fused():
    # A write into a view of an input stays in place (Note [In-place ops under capture]),
    # so the graph is not functional and replays through the interpreter.
    def f(x):
        x[1:].add_(1)
        return x.exp()

    compiled = kiln.compile(f)
    x = rand(9)
    a, b = x.clone(), x.clone()
    with kiln.no_grad():
        compiled(x.clone())  # capture
        got = compiled(a)    # replay
        want = f(b)
    assert kernel_counts(compiled) == [None]
    assert_same(got, want)
    assert_same(a, b)


def test_in_place_writes_into_intermediates_are_recorded_functionally_and_fuse():
    def f(x):
        y = x * 2
        y.add_(1)
        return y.exp()

    compiled, got, want = run_both(f, rand(9))
    assert kernel_counts(compiled) == [1]
    assert_same(got, want)


def test_codegen_log(caplog):
    _logging.set_logs(codegen=True)
    try:
        with caplog.at_level("INFO", logger="kiln.compile.codegen"):
            run_both(lambda x: (x + 1).neg(), rand(4))
    finally:
        _logging.set_logs()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "= neg e" in text and "define void @kernel_" in text


def _yaml_pointwise_ops():
    """kiln::name.overload of every functional op of eager/ops/*.yaml tagged pointwise."""
    names = set()
    for path in sorted((ROOT / "eager" / "ops").glob("*.yaml")):
        for entry in yaml.safe_load(path.read_text()) or []:
            if not isinstance(entry, dict) or "pointwise" not in (entry.get("tags") or []):
                continue
            func = entry["func"]
            if "!" in func or "inplace" in entry["tags"]:
                continue  # in-place and out= forms: fusion only takes functional ops
            names.add("kiln::" + func.split("(")[0])
    return names


def test_pointwise_ops_left_to_eager_are_listed():
    """The pointwise ops of ops.yaml without kernel math run eagerly; the list is kept in
    pointwise_fallbacks.txt so the gap is visible (update it when the table grows)."""
    table = set(_C._runtime.pointwise_math_ops())
    yaml_ops = _yaml_pointwise_ops()
    fallbacks = sorted(yaml_ops - table)
    listed = (pathlib.Path(__file__).parent / "pointwise_fallbacks.txt").read_text().split()
    assert fallbacks == listed, f"{len(table & yaml_ops)} in the table, {len(fallbacks)} fall back"
    assert table - yaml_ops == {"kiln::_to_copy"}  # a conversion, not tagged pointwise

