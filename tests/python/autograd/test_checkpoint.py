"""kiln.utils.checkpoint against torch.utils.checkpoint: gradients equal to no
checkpointing (both variants, modules and plain functions, autograd.grad,
double backward), dropout recomputed with the same mask, the RNG state around
it, warnings and errors."""

import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tc

import kiln
import kiln.utils.checkpoint as kc


def both(*shape, seed=0, requires_grad=True):
    a = np.random.default_rng(seed).standard_normal(shape).astype("float32")
    return kiln.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def close(k, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def block(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.Tanh(), lib.nn.Linear(6, 4), lib.nn.Sigmoid())


def copy_weights(km, tm):
    with torch.no_grad():
        for kp, tp in zip(km.parameters(), tm.parameters()):
            tp.copy_(torch.tensor(kp.detach().numpy()))


@pytest.mark.parametrize("reentrant", [True, False])
def test_module_gradients_equal_no_checkpointing(reentrant):
    km, tm = block(kiln), block(torch)
    copy_weights(km, tm)
    kx, tx = both(3, 4)
    kc.checkpoint(km, kx, use_reentrant=reentrant).pow(2).sum().backward()
    tc.checkpoint(tm, tx, use_reentrant=reentrant).pow(2).sum().backward()
    close(kx.grad, tx.grad)
    for kp, tp in zip(km.parameters(), tm.parameters()):
        close(kp.grad, tp.grad)
    # and equal to the plain (kiln) computation
    kx2 = kx.detach().requires_grad_()
    km.zero_grad()
    km(kx2).pow(2).sum().backward()
    close(kx2.grad, kx.grad)


@pytest.mark.parametrize("reentrant", [True, False])
def test_multiple_inputs_outputs_and_non_tensor_args(reentrant):
    (kx, tx), (ky, ty) = both(3), both(3, seed=1)

    def f(lib):
        return lambda a, b, scale: (a.sin() * b * scale, (a * b).exp())

    ko = kc.checkpoint(f(kiln), kx, ky, 2.0, use_reentrant=reentrant)
    to = tc.checkpoint(f(torch), tx, ty, 2.0, use_reentrant=reentrant)
    assert isinstance(ko, tuple) and len(ko) == 2
    (ko[0].sum() + ko[1].sum() * 3).backward()
    (to[0].sum() + to[1].sum() * 3).backward()
    close(kx.grad, tx.grad), close(ky.grad, ty.grad)


@pytest.mark.parametrize("reentrant", [True, False])
def test_dropout_is_recomputed_with_the_same_mask(reentrant):
    kx, _ = both(200)
    kiln.manual_seed(3)
    out = kc.checkpoint(lambda a: kiln.nn.functional.dropout(a * 1, 0.5), kx, use_reentrant=reentrant)
    after_forward = kiln.get_rng_state()
    out.sum().backward()
    # the gradient is the mask the forward drew (0 or 2), and backward left the outer RNG state alone
    kept = (out.detach() != 0).float()
    np.testing.assert_array_equal(kx.grad.numpy(), (kept * 2).numpy())
    assert kiln.equal(kiln.get_rng_state(), after_forward)


def test_without_preserve_rng_state_the_mask_differs():
    kx, _ = both(200)
    kiln.manual_seed(3)
    out = kc.checkpoint(lambda a: kiln.nn.functional.dropout(a * 1, 0.5), kx, use_reentrant=False,
                        preserve_rng_state=False)
    out.sum().backward()
    kept = (out.detach() != 0).float()
    assert not np.array_equal(kx.grad.numpy(), (kept * 2).numpy())


def test_non_reentrant_works_with_autograd_grad_kwargs_and_nested_outputs():
    km, tm = block(kiln), block(torch)
    copy_weights(km, tm)
    (kx, tx), (ky, ty) = both(2, 4), both(2, 4, seed=1)

    def f(model):
        return lambda a, *, other: {"out": [model(a) * other]}

    ko = kc.checkpoint(f(km), kx, other=ky, use_reentrant=False)
    to = tc.checkpoint(f(tm), tx, other=ty, use_reentrant=False)
    kl, tl = ko["out"][0].sum(), to["out"][0].sum()
    kg = kiln.autograd.grad(kl, [kx, ky] + list(km.parameters()))
    tg = torch.autograd.grad(tl, [tx, ty] + list(tm.parameters()))
    for a, b in zip(kg, tg):
        close(a, b)
    assert all(p.grad is None for p in km.parameters())


def test_non_reentrant_outputs_require_grad_through_parameters_only():
    km, tm = block(kiln), block(torch)
    copy_weights(km, tm)
    kx, tx = both(2, 4, requires_grad=False)
    ko, to = kc.checkpoint(km, kx, use_reentrant=False), tc.checkpoint(tm, tx, use_reentrant=False)
    assert ko.requires_grad and to.requires_grad
    ko.sum().backward(), to.sum().backward()
    for kp, tp in zip(km.parameters(), tm.parameters()):
        close(kp.grad, tp.grad)


def test_reentrant_without_tensor_inputs_requiring_grad_warns_and_does_not_track():
    km, tm = block(kiln), block(torch)
    kx, tx = both(2, 4, requires_grad=False)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        ko = kc.checkpoint(km, kx, use_reentrant=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        to = tc.checkpoint(tm, tx, use_reentrant=True)
    assert ko.requires_grad == to.requires_grad == False  # noqa: E712


def test_forward_graph_is_not_kept():
    km = block(kiln)
    kx, _ = both(2, 4)
    out = kc.checkpoint(km, kx, use_reentrant=False)
    node = out.grad_fn
    assert node.name() == "CheckpointBackward"
    # one node straight to the input and the parameters: no intermediate activations hang off it
    nexts = [n for n, _ in node.next_functions]
    assert len(nexts) == 1 + len(list(km.parameters()))
    assert all(n.name().endswith("AccumulateGrad") for n in nexts)


def test_double_backward_through_non_reentrant_checkpoint():
    (kx, tx) = both(3)
    kg, = kiln.autograd.grad(kc.checkpoint(lambda a: (a ** 3).sum(), kx, use_reentrant=False), kx, create_graph=True)
    tg, = torch.autograd.grad(tc.checkpoint(lambda a: (a ** 3).sum(), tx, use_reentrant=False), tx, create_graph=True)
    close(kg, tg)
    kg.sum().backward(), tg.sum().backward()
    close(kx.grad, tx.grad)


def test_nested_checkpoints():
    kx, tx = both(3)
    inner = lambda lib: (lambda a: tc.checkpoint(torch.sin, a, use_reentrant=False) if lib is torch  # noqa: E731
                         else kc.checkpoint(kiln.sin, a, use_reentrant=False))
    kc.checkpoint(lambda a: inner(kiln)(a * 2) * a, kx, use_reentrant=False).sum().backward()
    tc.checkpoint(lambda a: inner(torch)(a * 2) * a, tx, use_reentrant=False).sum().backward()
    close(kx.grad, tx.grad)


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential(reentrant, segments):
    km, tm = block(kiln), block(torch)
    copy_weights(km, tm)
    kx, tx = both(3, 4)
    ko = kc.checkpoint_sequential(km, segments, kx, use_reentrant=reentrant)
    to = tc.checkpoint_sequential(tm, segments, tx, use_reentrant=reentrant)
    close(ko, to)
    ko.sum().backward(), to.sum().backward()
    close(kx.grad, tx.grad)
    for kp, tp in zip(km.parameters(), tm.parameters()):
        close(kp.grad, tp.grad)


@pytest.mark.parametrize("reentrant", [True, False])
def test_backward_twice_with_retain_graph_then_freed(reentrant):
    for lib, c in ((kiln, kc), (torch, tc)):
        x = lib.ones(3, requires_grad=True)
        out = c.checkpoint(lambda a: (a.sin() * a).sum(), x, use_reentrant=reentrant)
        out.backward(retain_graph=True)
        first = x.grad.clone()
        out.backward()
        assert (x.grad - 2 * first).abs().max().item() == 0
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            out.backward()


def test_use_reentrant_not_passed_warns_like_torch():
    kx, tx = both(3)
    with pytest.warns(UserWarning) as kw:
        kc.checkpoint(kiln.sin, kx)
    with pytest.warns(UserWarning) as tw:
        tc.checkpoint(torch.sin, tx)
    assert str(kw[0].message) == str(tw[0].message).replace("torch.", "kiln.")
    with pytest.warns(UserWarning) as kw:
        kc.checkpoint_sequential([kiln.sin], 1, kx)
    with pytest.warns(UserWarning) as tw:
        tc.checkpoint_sequential([torch.sin], 1, tx)
    assert str(kw[0].message) == str(tw[0].message).replace("torch.", "kiln.")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kc.checkpoint(kiln.sin, kx, use_reentrant=False)


def _error_cases(lib, c):
    x = lib.ones(3, requires_grad=True)
    return [
        lambda: c.checkpoint(lambda a, b: a, x, b=1, use_reentrant=True),
        lambda: c.checkpoint(lambda a: a * 1, x, use_reentrant=True, debug=True),
        lambda: c.checkpoint(lambda a: a * 1, x, use_reentrant=True, context_fn=lambda: (None, None)),
        lambda: c.checkpoint(lambda a: a * 1, x, use_reentrant=False, determinism_check="strict"),
        lambda: c.checkpoint_sequential([lib.sin], 1, x, use_reentrant=False, foo=1),
        lambda: c.detach_variable([x]),
    ]


@pytest.mark.parametrize("case", range(6))
def test_errors_match_torch(case):
    k_call, t_call = _error_cases(kiln, kc)[case], _error_cases(torch, tc)[case]
    with pytest.raises(Exception) as te:
        t_call()
    with pytest.raises(type(te.value)) as ke:
        k_call()
    assert str(ke.value) == str(te.value)


def test_determinism_check_catches_a_different_recomputation():
    calls = []

    def f(a):
        calls.append(1)
        return a * 2 if len(calls) == 1 else (a * 2).sum()

    out = kc.checkpoint(f, kiln.ones(3, requires_grad=True), use_reentrant=False)
    with pytest.raises(kc.CheckpointError, match="Recomputed values for the following tensors have different metadata"):
        out.sum().backward()
    calls.clear()
    out = kc.checkpoint(f, kiln.ones(3, requires_grad=True), use_reentrant=False, determinism_check="none")
    with pytest.raises(RuntimeError):  # no metadata check: autograd rejects the mismatched shapes itself
        out.sum().backward()
    assert issubclass(kc.CheckpointError, RuntimeError)


def test_context_fn_wraps_forward_and_recomputation():
    seen = []

    class Ctx:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            seen.append(self.name)

        def __exit__(self, *exc):
            pass

    kx, _ = both(3)
    out = kc.checkpoint(kiln.sin, kx, use_reentrant=False, context_fn=lambda: (Ctx("forward"), Ctx("recompute")))
    assert seen == ["forward"]
    out.sum().backward()
    assert seen == ["forward", "recompute"]
    close(kx.grad, torch.tensor(kx.detach().numpy()).cos())


def test_under_no_grad_it_just_runs():
    kx, _ = both(3)
    with kiln.no_grad():
        out = kc.checkpoint(kiln.sin, kx, use_reentrant=False)
    assert not out.requires_grad
    close(out, torch.tensor(kx.detach().numpy()).sin())
