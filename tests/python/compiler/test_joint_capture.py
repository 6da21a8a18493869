"""Forward and backward together (issue 23 item 4): a capture whose outputs
require grad also records the Engine's backward, the joint graph is split
into a forward and a backward graph, and a replay attaches one autograd node
(Note [Joint capture], Note [Partitioning the joint graph])."""

import numpy as np
import pytest

import kiln
from kiln.compiler._joint import NODE_NAME

RNG = np.random.default_rng(11)


def _mlp():
    kiln.manual_seed(0)
    return kiln.nn.Sequential(kiln.nn.Linear(8, 16), kiln.nn.ReLU(), kiln.nn.Linear(16, 16), kiln.nn.Tanh(),
                              kiln.nn.Linear(16, 3))


def _cnn():
    kiln.manual_seed(0)
    return kiln.nn.Sequential(kiln.nn.Conv2d(2, 4, 3, padding=1), kiln.nn.BatchNorm2d(4), kiln.nn.ReLU(),
                              kiln.nn.MaxPool2d(2), kiln.nn.Flatten(), kiln.nn.Linear(4 * 3 * 3, 5))


def _train(model, step_model, make_opt, batches):
    opt = make_opt(model.parameters())
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = kiln.nn.functional.cross_entropy(step_model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("make, shape, classes, make_opt", [
    (_mlp, (6, 8), 3, lambda p: kiln.optim.SGD(p, lr=0.1, momentum=0.9)),
    (_cnn, (4, 2, 6, 6), 5, lambda p: kiln.optim.AdamW(p, lr=1e-2, weight_decay=0.1)),
], ids=["mlp_sgd", "cnn_adamw"])
def test_twenty_training_steps_of_a_compiled_model_equal_eager(make, shape, classes, make_opt):
    batches = [(kiln.tensor(RNG.standard_normal(shape).astype(np.float32)),
                kiln.tensor(RNG.integers(0, classes, shape[0]))) for _ in range(20)]
    eager, model = make(), make()
    compiled = kiln.compile(model, backend="eager", fullgraph=True)
    want = _train(eager, eager, make_opt, batches)
    got = _train(model, compiled, make_opt, batches)
    np.testing.assert_array_equal(got, want)
    for (name, p), (_, q) in zip(model.state_dict().items(), eager.state_dict().items()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=name)
    assert compiled._compiled_call.num_captures == 1


def test_a_replay_builds_one_autograd_node_whose_edges_reach_the_parameters():
    model = _mlp()
    compiled = kiln.compile(model, backend="eager")
    x = kiln.tensor(RNG.standard_normal((6, 8)).astype(np.float32))
    compiled(x)  # capture
    out = compiled(x)  # replay
    assert out.grad_fn.name() == NODE_NAME
    next_names = {fn.name().rsplit("::", 1)[-1] for fn, _ in out.grad_fn.next_functions if fn is not None}
    assert next_names == {"AccumulateGrad"}  # straight to the parameters: no other node in between
    (entry,) = compiled._compiled_call.cache.values()
    assert "kiln::mm" in entry.program.backward.graph.node_kinds  # the backward graph holds the formulas


def test_capture_never_accumulates_into_grad():
    model = _mlp()
    compiled = kiln.compile(model, backend="eager")
    x = kiln.tensor(RNG.standard_normal((6, 8)).astype(np.float32))
    compiled(x)
    compiled(x)
    assert all(p.grad is None for p in model.parameters())


GRADCHECK_FNS = {
    "pointwise": lambda x, y: (x * y).sin() + x.exp() * 0.5,
    "matmul_reduce": lambda x, y: (x @ y.t()).tanh().sum(dim=1),
    "softmax": lambda x, y: kiln.softmax(x * y, dim=1),
    "two_outputs": lambda x, y: (x.relu() * y, (x - y).pow(2).mean()),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK_FNS))
def test_gradients_of_a_compiled_function_pass_gradcheck_and_equal_eager(name):
    fn = GRADCHECK_FNS[name]
    compiled = kiln.compile(fn, backend="eager", fullgraph=True)
    x = kiln.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    y = kiln.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    compiled(x, y)  # capture
    assert kiln.autograd.gradcheck(compiled, (x, y))
    outs = compiled(x, y)
    outs = outs if isinstance(outs, tuple) else (outs,)
    got = kiln.autograd.grad([o.sum() for o in outs], (x, y))
    want_outs = fn(x, y)
    want_outs = want_outs if isinstance(want_outs, tuple) else (want_outs,)
    want = kiln.autograd.grad([o.sum() for o in want_outs], (x, y))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert compiled.num_captures == 1


def test_grad_of_only_some_inputs_and_an_unused_output():
    def f(x, w):
        return x @ w, x.sum()

    compiled = kiln.compile(f, backend="eager", fullgraph=True)
    x = kiln.tensor(RNG.standard_normal((3, 4)).astype(np.float32))
    w = kiln.tensor(RNG.standard_normal((4, 2)).astype(np.float32), requires_grad=True)
    compiled(x, w)
    a, b = compiled(x, w)
    assert not b.requires_grad
    a.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), (x.t() @ kiln.ones(3, 2)).numpy())


def test_double_backward_through_a_compiled_function_raises_a_clear_error():
    compiled = kiln.compile(lambda x: (x * x).sum(), backend="eager")
    x = kiln.tensor(RNG.standard_normal(5), requires_grad=True)
    compiled(x)
    out = compiled(x)
    with pytest.raises(RuntimeError, match="double backward"):
        kiln.autograd.grad(out, x, create_graph=True)


def test_a_second_backward_without_retain_graph_raises_as_eager():
    compiled = kiln.compile(lambda x: (x.exp() * x).sum(), backend="eager")
    x = kiln.tensor(RNG.standard_normal(5), requires_grad=True)
    compiled(x)
    out = compiled(x)
    out.backward(retain_graph=True)
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * ((x.exp() * (x + 1)).detach().numpy()), rtol=1e-12)


def test_an_output_requiring_grad_from_a_leaf_made_inside_is_a_graph_break():
    def f(x):
        w = kiln.ones(3)
        w.requires_grad_()
        return x * w

    compiled = kiln.compile(f, backend="eager")
    with pytest.warns(UserWarning, match="no input of the function does"):
        out = compiled(kiln.tensor(RNG.standard_normal(3).astype(np.float32)))
    assert out.requires_grad and compiled.break_reasons
