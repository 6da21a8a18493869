"""Multi-tensor kernel steps (passes/group_multi_tensor.h, Note [Multi-tensor kernel steps]): in a compiled
training step the Adam/AdamW/SGD update of a whole parameter group is ONE kernel step (one launch over
every parameter's elements) instead of one kernel per parameter, and its results equal eager's fused
optimizer kernels (_fused_adam_, _fused_sgd_) bit for bit over several steps: the members run the very
kernel they ran alone, in the update's op order (python/kiln/optim/_capturable.py)."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.compiler._backends import compiled_graphs, kernel_counts

STEPS = 4


def _shapes(n: int) -> list[tuple[int, ...]]:
    """n parameter shapes of many sizes: 0-dim and 1-element ones (their kernels read every input as a single
    element: they take the dense kernel of the same math to join its step), vectors, matrices."""
    return [() if i == 50 else (3 + i % 7, 5 + 17 * (i % 3)) if i % 4 else (1 + 13 * (i % 9),) for i in range(n)]


def _params(n: int, dtype=kiln.float32) -> list:
    rng = np.random.default_rng(n)
    return [kiln.nn.Parameter(kiln.tensor(rng.standard_normal(s)).to(dtype)) for s in _shapes(n)]


def _grads(params, step: int) -> list:
    rng = np.random.default_rng(100 + step)
    return [kiln.tensor(rng.standard_normal(tuple(p.shape))).to(p.dtype) for p in params]


OPTIMIZERS = {
    "adamw": lambda ps: kiln.optim.AdamW(ps, lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95)),
    "adam": lambda ps: kiln.optim.Adam(ps, lr=1e-2),
    "adam_weight_decay": lambda ps: kiln.optim.Adam(ps, lr=1e-2, weight_decay=0.05),
    "sgd_momentum": lambda ps: kiln.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "sgd_nesterov": lambda ps: kiln.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
}


def _run(make_opt, n: int, compiled: bool, dtype=kiln.float32):
    params = _params(n, dtype)
    opt = make_opt(params)

    def step():
        opt.step()

    run = kiln.compile(step) if compiled else step
    for s in range(STEPS):
        for p, g in zip(params, _grads(params, s)):
            p.grad = g
        run()
    return params, opt, (run if compiled else None)


def _assert_same(got, want):
    (gp, gopt, _), (wp, wopt, _) = got, want
    for a, b in zip(gp, wp):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for a, b in zip(gp, wp):
        sa, sb = gopt.state[a], wopt.state[b]
        assert sa.keys() == sb.keys()
        for k in sa:
            np.testing.assert_array_equal(np.asarray(sa[k].numpy()), np.asarray(sb[k].numpy()), err_msg=k)


def _update_steps(run):
    """The one compiled graph's kernel steps as (members, ops of the first member)."""
    (graph,) = compiled_graphs(run)
    return list(zip(graph.kernel_members, graph.kernel_ops))


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_update_of_100_parameters_is_one_kernel_and_equals_eager(name):
    want = _run(OPTIMIZERS[name], 100, compiled=False)
    got = _run(OPTIMIZERS[name], 100, compiled=True)
    _assert_same(got, want)
    run = got[2]
    assert run.num_captures == 2 and not run.break_reasons
    steps = _update_steps(run)
    # The element-wise update of all 100 parameters is one multi-tensor kernel step.
    assert [m for m, _ in steps].count(100) == 1, steps
    assert EXPECTED_KERNELS[name] == kernel_counts(run), steps


# Kernel steps of the whole compiled optimizer step over 100 parameters (101 before multi-tensor steps): the
# update (one multi-tensor step over the 100 parameters) and one 0-dim kernel of the group's scalars (Adam/AdamW:
# the 100 step counters' increments and the bias corrections; SGD: the hyperparameters cast to float32).
EXPECTED_KERNELS = {name: [2] for name in OPTIMIZERS}


def test_adamw_over_100_parameters_kernel_count():
    """The issue's asserted count: an AdamW step over 100 parameters is 2 kernels, not 101."""
    _, _, run = _run(OPTIMIZERS["adamw"], 100, compiled=True)
    assert kernel_counts(run) == [2]
    assert sorted(m for m, _ in _update_steps(run)) == [1, 100]


def test_two_dtypes_in_one_group_are_one_kernel_each():
    def make(ps):
        return kiln.optim.AdamW(ps, lr=1e-2)

    def mixed(n, dtype):
        params = _params(n, kiln.float32)
        for i in range(0, n, 2):
            params[i] = kiln.nn.Parameter(params[i].detach().to(kiln.float64))
        return params

    results = []
    for compiled in (False, True):
        params = mixed(10, None)
        opt = make(params)
        run = kiln.compile(opt.step) if compiled else opt.step
        for s in range(STEPS):
            for p, g in zip(params, _grads(params, s)):
                p.grad = g
            run()
        results.append((params, opt, run))
    _assert_same(results[1], results[0])
    members = sorted(m for m, _ in _update_steps(results[1][2]))
    assert members.count(5) == 2, members  # float32 and float64 updates: one multi-tensor step each


def test_independent_same_kernel_chains_returned_only_share_one_step():
    """The pass is not about optimizers: same-kernel groups whose results are only returned run as one step."""
    def f(a, b, c):
        return (a * 2.0 + 1.0).sin(), (b * 2.0 + 1.0).sin(), (c * 2.0 + 1.0).sin()

    rng = np.random.default_rng(0)
    xs = [kiln.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((5, 7), (40000,), (3,))]
    with kiln.no_grad():
        run = kiln.compile(f)
        got = run(*xs)
        want = f(*xs)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert kernel_counts(run) == [1]
    (graph,) = compiled_graphs(run)
    assert graph.kernel_members == [3]


def test_a_result_read_later_keeps_its_own_kernel():
    def f(a, b):
        x = (a * 2.0 + 1.0).sin()
        y = (b * 2.0 + 1.0).sin()
        return x.sum() + y.sum(), y

    rng = np.random.default_rng(1)
    xs = [kiln.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((5, 7), (9,))]
    with kiln.no_grad():
        run = kiln.compile(f)
        got = run(*xs)
        want = f(*xs)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    (graph,) = compiled_graphs(run)
    assert all(m == 1 for m in graph.kernel_members)


def test_seed_mlp_training_step_update_is_one_kernel_and_equals_eager():
    def train(compiled):
        kiln.manual_seed(0)
        model = kiln.nn.Sequential(kiln.nn.Linear(784, 128), kiln.nn.ReLU(), kiln.nn.Linear(128, 10))
        opt = kiln.optim.Adam(model.parameters(), lr=1e-3)
        rng = np.random.default_rng(0)

        def step(x, y):
            loss = kiln.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        run = kiln.compile(step) if compiled else step
        losses = []
        for _ in range(STEPS + 1):
            x = kiln.tensor(rng.standard_normal((16, 784)).astype(np.float32))
            y = kiln.tensor(rng.integers(0, 10, 16))
            losses.append(float(run(x, y)))
        return losses, [p.detach().numpy().copy() for p in model.parameters()], run

    want = train(False)
    got = train(True)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    members = [m for m, _ in _update_steps(got[2])]
    assert 4 in members, members  # the Adam update of the 4 parameters: one multi-tensor step
    assert kernel_counts(got[2]) == [SEED_MLP_KERNELS]


# The seed MLP's whole step: 8 kernel steps with one kernel per parameter's update, 5 with the update as one.
SEED_MLP_KERNELS = 5


def test_members_sharing_a_dying_input_never_write_over_it():
    """Two members read the same intermediate (a matmul's result, dead after the step): no member's output may
    take its buffer, since the members do not run element by element together (runtime MultiTensorRun.h)."""
    def f(a, b, c, d, x):
        t = a @ b
        u = (t * c).exp()
        v = (x * 2.0).sin()  # another layout between them: u and w are two groups of one kernel
        w = (t * d).exp()
        return u, v, w

    rng = np.random.default_rng(2)
    a, b, c, d = (kiln.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((64, 32), (32, 48), (64, 48),
                                                                                    (64, 48)))
    x = kiln.tensor(rng.standard_normal(7).astype(np.float32))
    with kiln.no_grad():
        for mode in (None, "reduce-overhead"):
            run = kiln.compile(f, mode=mode)
            for _ in range(2):
                got = run(a, b, c, d, x)
            want = f(a, b, c, d, x)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.numpy(), w.numpy())
            (graph,) = compiled_graphs(run)
            assert sorted(graph.kernel_members) == [1, 2]


def test_reduce_overhead_update_equals_eager():
    def make(ps):
        return kiln.optim.AdamW(ps, lr=1e-2, weight_decay=0.1)

    want = _run(make, 30, compiled=False)
    params = _params(30)
    opt = make(params)
    run = kiln.compile(lambda: opt.step(), mode="reduce-overhead")
    for s in range(STEPS):
        for p, g in zip(params, _grads(params, s)):
            p.grad = g
        run()
    _assert_same((params, opt, run), want)
    assert sorted(m for m, _ in _update_steps(run)) == [1, 30]
