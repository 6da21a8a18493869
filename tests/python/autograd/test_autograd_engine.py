"""The autograd engine and its Python API, compared with torch on the ops that
have derivative formulas (the formula suites of each op family live with them)."""

import threading

import numpy as np
import pytest
import torch

import kiln


def pair(values, requires_grad=True, dtype="float32"):
    a = np.asarray(values, dtype=dtype)
    return (kiln.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


def same(k, t):
    assert k is not None and t is not None
    np.testing.assert_allclose(k.numpy() if not k.requires_grad else k.detach().numpy(),
                               t.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_broadcast_gradients_are_summed_to_the_input_shape():
    (kx, tx), (kw, tw) = pair([1.0, 2.0, 3.0]), pair(np.ones((2, 3)))
    for lib, x, w in ((kiln, kx, kw), (torch, tx, tw)):
        y = lib.add(x, w, alpha=3)
        y.backward(lib.ones(2, 3))
    same(kx.grad, tx.grad)
    same(kw.grad, tw.grad)


def test_diamond_and_shared_inputs_accumulate():
    kx, tx = pair([1.0, -2.0])
    for lib, x in ((kiln, kx), (torch, tx)):
        a = x.add(x)            # 2x
        b = a.add(x, alpha=2)   # 4x
        c = lib.add(a, b)       # 6x
        c.backward(lib.ones(2))
    same(kx.grad, tx.grad)
    assert kx.grad.tolist() == [6.0, 6.0]


def test_grad_returns_without_accumulating_and_allow_unused():
    kx, _ = pair([1.0, 2.0])
    ku, _ = pair([5.0])
    y = kx.add(kx, alpha=4)
    (g,) = kiln.autograd.grad(y, kx, kiln.ones(2), retain_graph=True)
    assert g.tolist() == [5.0, 5.0] and kx.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        kiln.autograd.grad(y, [kx, ku], kiln.ones(2), retain_graph=True)
    g1, g2 = kiln.autograd.grad(y, [kx, ku], kiln.ones(2), allow_unused=True, retain_graph=True)
    assert g2 is None
    g1, g2 = kiln.autograd.grad(y, [kx, ku], kiln.ones(2), materialize_grads=True)
    assert g2.tolist() == [0.0]


def test_grad_of_an_intermediate_tensor():
    kx, tx = pair([1.0, 2.0])
    results = []
    for lib, x in ((kiln, kx), (torch, tx)):
        h = x.add(1)
        y = h.add(h, alpha=3)
        results.append(lib.autograd.grad(y, h, lib.ones(2))[0])
    same(*results)


def test_backward_inputs_restricts_accumulation():
    kx, _ = pair([1.0])
    kz, _ = pair([2.0])
    y = kiln.add(kx, kz)
    y.backward(kiln.ones(1), inputs=[kz])
    assert kx.grad is None and kz.grad.tolist() == [1.0]


def test_grad_fn_names_and_next_functions_match_torch():
    kx, tx = pair([1.0])
    ky = kiln.add(kx, kx)
    ty = torch.add(tx, tx)
    kz, tz = kiln.add(ky, kx), torch.add(ty, tx)
    assert kz.grad_fn.name() == tz.grad_fn.name() == "AddBackward0"
    names = [f.name() for f, _ in kz.grad_fn.next_functions]
    torch_names = [f.name().replace("torch::", "kiln::") for f, _ in tz.grad_fn.next_functions]
    assert names == torch_names == ["AddBackward0", "kiln::autograd::AccumulateGrad"]
    assert kz.grad_fn.next_functions[1][0].variable is kx
    assert kx.is_leaf and not kz.is_leaf and kx.grad_fn is None


def test_retain_grad_hooks_and_handle_removal():
    kx, tx = pair([1.0, 2.0])
    out = []
    for lib, x in ((kiln, kx), (torch, tx)):
        h = x.add(1)
        h.retain_grad()
        handle = h.register_hook(lambda g: g.add(g))
        y = h.add(h)
        y.backward(lib.ones(2), retain_graph=True)
        out.append((h.grad.clone() if lib is torch else kiln.tensor(h.grad.tolist()), x.grad.clone() if lib is torch else kiln.tensor(x.grad.tolist())))
        handle.remove()
        x.grad = None
        y.backward(lib.ones(2))
        out.append((None, x.grad))
    same(out[0][0], out[2][0])
    same(out[0][1], out[2][1])
    same(out[1][1], out[3][1])


def test_leaf_hooks_change_the_accumulated_gradient():
    kx, tx = pair([3.0])
    for lib, x in ((kiln, kx), (torch, tx)):
        x.register_hook(lambda g: g.add(g, alpha=9))
        lib.add(x, x).backward(lib.ones(1))
    same(kx.grad, tx.grad)


def test_grad_modes_as_context_managers_and_decorators():
    kx, _ = pair([1.0])
    with kiln.no_grad():
        assert not kiln.is_grad_enabled()
        assert not kx.add(1).requires_grad
        with kiln.enable_grad():
            assert kx.add(1).requires_grad
    assert kiln.is_grad_enabled()

    @kiln.no_grad()
    def f(t):
        return t.add(1)

    assert not f(kx).requires_grad
    kiln.set_grad_enabled(False)
    assert not kiln.is_grad_enabled()
    kiln.set_grad_enabled(True)
    with kiln.set_grad_enabled(False):
        assert not kx.add(1).requires_grad
    with kiln.inference_mode():
        assert not kx.add(1).requires_grad
    assert kx.add(1).requires_grad


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda lib: lib.ones(3).backward(lib.ones(3)), "element 0 of tensors does not require grad and does not have a grad_fn"),
        (lambda lib: lib.ones(3, requires_grad=True).add(1).backward(), "grad can be implicitly created only for scalar outputs"),
        (lambda lib: lib.ones(2, requires_grad=True).add_(lib.ones(2)), "a leaf Variable that requires grad is being used in an in-place operation."),
        (lambda lib: lib.ones(2, requires_grad=True).add(1).backward(lib.ones(3)), "Mismatch in shape"),
    ],
)
def test_errors_match_torch(make, message):
    for lib in (kiln, torch):
        with pytest.raises(RuntimeError, match=message):
            make(lib)


def test_detach_shares_storage_without_history():
    kx, _ = pair([1.0, 2.0])
    d = kx.add(1).detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    y = kx.add(1)
    y.detach_()
    assert y.grad_fn is None and not y.requires_grad


def test_inplace_on_a_non_leaf_rebases_history():
    kx, tx = pair([1.0, 2.0])
    for lib, x in ((kiln, kx), (torch, tx)):
        h = x.add(1)
        h.add_(x, alpha=2)
        assert h.grad_fn.name() == "AddBackward0"
        h.backward(lib.ones(2))
    same(kx.grad, tx.grad)


def test_create_graph_keeps_the_gradient_differentiable():
    kx, _ = pair([1.0])
    y = kx.add(kx, alpha=2)
    (g,) = kiln.autograd.grad(y, kx, kiln.ones(1, requires_grad=True), create_graph=True)
    assert g.tolist() == [3.0]
    assert g.requires_grad


def test_threads_run_independent_backwards():
    errors = []

    def work(seed):
        try:
            for _ in range(50):
                x = kiln.tensor([float(seed)], requires_grad=True)
                y = kiln.add(x, x, alpha=seed)
                y.backward(kiln.ones(1))
                assert x.grad.tolist() == [1.0 + seed]
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_gradients_flow_through_views_and_copy():
    kx, tx = pair([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for lib, x in ((kiln, kx), (torch, tx)):
        y = x.transpose(0, 1).add(1)
        y.backward(lib.arange(6.0).view(3, 2))
        w = x.view(6).add(1)
        w.backward(lib.arange(6.0))
    same(kx.grad, tx.grad)


class _Scale(kiln.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return kiln.tensor(x.detach().numpy() * k)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return kiln.tensor(grad.numpy() * ctx.k), None


class _TorchScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k, None


def test_custom_function_forward_backward_and_saved_tensors():
    kx, tx = pair([1.0, 2.0])
    ky, ty = _Scale.apply(kx, 3.0), _TorchScale.apply(tx, 3.0)
    assert ky.grad_fn.name() == "_ScaleBackward" and ty.grad_fn.name() == "_TorchScaleBackward"
    kiln.add(ky, kx).backward(kiln.ones(2))
    torch.add(ty, tx).backward(torch.ones(2))
    same(kx.grad, tx.grad)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        kiln.add(ky, kx).backward(kiln.ones(2))


def test_custom_function_without_grad_returns_plain_outputs():
    kx, _ = pair([1.0], requires_grad=False)
    y = _Scale.apply(kx, 2.0)
    assert not y.requires_grad and y.grad_fn is None


def test_ops_without_formulas_fail_only_in_backward():
    kx, _ = pair([1.0, 2.0, 3.0])
    y = kx.scatter(0, kiln.tensor([0, 1]), 2.0, reduce="add")  # no formula yet: the forward still works
    assert y.requires_grad and y.grad_fn.name() == "NotImplemented"
    with pytest.raises(NotImplementedError, match="derivative for 'kiln::scatter.value_reduce' is not implemented"):
        y.backward(kiln.ones(3))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        kiln.add(kx, kx, out=kiln.empty(3))


def test_gradcheck_and_gradgradcheck():
    x = kiln.tensor([1.0, 2.0], dtype=kiln.float64, requires_grad=True)
    w = kiln.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=kiln.float64, requires_grad=True)
    assert kiln.autograd.gradcheck(lambda a, b: kiln.add(a, b, alpha=2.5), (x, w))
    assert kiln.autograd.gradgradcheck(lambda a, b: kiln.add(a, b, alpha=-1.5), (x, x.add(1).detach().requires_grad_()))

    class Wrong(kiln.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return kiln.add(a, a)

        @staticmethod
        def backward(ctx, g):
            return g  # should be 2 * g

    with pytest.raises(kiln.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        kiln.autograd.gradcheck(Wrong.apply, (x,))
    assert not kiln.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)


def test_anomaly_mode_names_the_forward_call():
    kx, _ = pair([1.0, 2.0])
    with kiln.autograd.detect_anomaly():
        y = kx.scatter(0, kiln.tensor([0]), 2.0, reduce="add")
        with pytest.raises(NotImplementedError, match="Traceback of forward call that caused the error"):
            y.backward(kiln.ones(2))
    assert not kiln._C.is_anomaly_enabled()
