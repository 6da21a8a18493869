"""kiln.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) against
torch.autograd.functional: values, output structure (tensor vs tuple), whether
results carry a graph, strict-mode and argument errors."""

import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import kiln
from torch_compare import assert_same_error as same_error
import kiln.autograd.functional as KF


def both(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype("float32")
    return kiln.tensor(a), torch.tensor(a)


def close(k, t, rtol=1e-5, atol=1e-5):
    if isinstance(t, torch.Tensor):
        assert isinstance(k, kiln.Tensor), type(k)
        assert tuple(k.shape) == tuple(t.shape)
        assert k.requires_grad == t.requires_grad
        np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    else:
        assert type(k) is type(t) and type(t) in (tuple, list) and len(k) == len(t), (type(k), type(t))
        for a, b in zip(k, t):
            close(a, b, rtol, atol)


def one(lib):
    return lambda x: (x.exp() * x).sum(0)


def two(lib):
    return lambda x, y: (x.sin() * y, (x * y).sum())


def scalar(lib):
    return lambda x, y: (x.sin() * y.cos()).sum() + (x ** 3).sum() * y.sum()


X = both(3, 2)
Y = both(3, 2, seed=1)
V2 = both(2, seed=2)
V32 = both(3, 2, seed=3)
S = both(seed=4)


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp(create_graph):
    (kx, tx), (ky, ty), (kv, tv), (kw, tw) = X, Y, V2, V32
    close(KF.vjp(one(kiln), kx, kv, create_graph=create_graph), TF.vjp(one(torch), tx, tv, create_graph=create_graph))
    close(KF.vjp(two(kiln), (kx, ky), (kw, kv[0]), create_graph=create_graph),
          TF.vjp(two(torch), (tx, ty), (tw, tv[0]), create_graph=create_graph))
    close(KF.vjp(lambda x: x.sum(), kx), TF.vjp(lambda x: x.sum(), tx))  # v=None for a single element


@pytest.mark.parametrize("create_graph", [False, True])
def test_jvp(create_graph):
    (kx, tx), (ky, ty), (kw, tw) = X, Y, V32
    close(KF.jvp(one(kiln), kx, kw, create_graph=create_graph), TF.jvp(one(torch), tx, tw, create_graph=create_graph))
    close(KF.jvp(two(kiln), (kx, ky), (kw, ky), create_graph=create_graph),
          TF.jvp(two(torch), (tx, ty), (tw, ty), create_graph=create_graph))
    (ks, ts) = S
    close(KF.jvp(lambda x: x * kw, ks), TF.jvp(lambda x: x * tw, ts))


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
def test_jacobian_reverse(vectorize, create_graph):
    (kx, tx), (ky, ty) = X, Y
    kw = dict(create_graph=create_graph, vectorize=vectorize)
    close(KF.jacobian(one(kiln), kx, **kw), TF.jacobian(one(torch), tx, **kw))
    close(KF.jacobian(two(kiln), (kx, ky), **kw), TF.jacobian(two(torch), (tx, ty), **kw))
    close(KF.jacobian(lambda x: (x * 2, x.sum()), kx, **kw), TF.jacobian(lambda x: (x * 2, x.sum()), tx, **kw))
    close(KF.jacobian(lambda x, y: x * 3, (kx, ky), **kw), TF.jacobian(lambda x, y: x * 3, (tx, ty), **kw))


def test_jacobian_forward_mode_matches_and_takes_the_output_dtype():
    (kx, tx), (ky, ty) = X, Y
    opts = dict(vectorize=True, strategy="forward-mode")
    close(KF.jacobian(two(kiln), (kx, ky), **opts), TF.jacobian(two(torch), (tx, ty), **opts))
    k = KF.jacobian(lambda x: x.double() * 2, kx, **opts)
    t = TF.jacobian(lambda x: x.double() * 2, tx, **opts)
    assert str(k.dtype).split(".")[1] == str(t.dtype).split(".")[1] == "float64"
    close(k, t)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_hessian(strategy, create_graph):
    if strategy == "forward-mode" and create_graph:
        same_error(lambda: KF.hessian(scalar(kiln), (X[0], Y[0]), create_graph=True, vectorize=True,
                                      outer_jacobian_strategy=strategy),
                   lambda: TF.hessian(scalar(torch), (X[1], Y[1]), create_graph=True, vectorize=True,
                                      outer_jacobian_strategy=strategy))
        return
    (kx, tx), (ky, ty) = X, Y
    opts = dict(create_graph=create_graph, vectorize=strategy == "forward-mode", outer_jacobian_strategy=strategy)
    close(KF.hessian(scalar(kiln), (kx, ky), **opts), TF.hessian(scalar(torch), (tx, ty), **opts), rtol=1e-4)
    close(KF.hessian(lambda x: (x ** 3).sum(), kx, **opts), TF.hessian(lambda x: (x ** 3).sum(), tx, **opts))


@pytest.mark.parametrize("name", ["vhp", "hvp"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_vhp_hvp(name, create_graph):
    (kx, tx), (ky, ty), (kw, tw) = X, Y, V32
    kfn, tfn = getattr(KF, name), getattr(TF, name)
    close(kfn(scalar(kiln), (kx, ky), (kw, ky), create_graph=create_graph),
          tfn(scalar(torch), (tx, ty), (tw, ty), create_graph=create_graph), rtol=1e-4)
    close(kfn(lambda x: (x ** 3).sum(), kx, kw), tfn(lambda x: (x ** 3).sum(), tx, tw))
    ks, ts = S
    close(kfn(lambda x: x ** 4, ks), tfn(lambda x: x ** 4, ts))


def test_independent_inputs_give_zeros_and_create_graph_keeps_the_graph():
    (kx, tx), (ky, ty), (kw, tw) = X, Y, V32
    close(KF.vjp(lambda x, y: x * 2, (kx, ky), kw), TF.vjp(lambda x, y: x * 2, (tx, ty), tw))
    close(KF.jvp(lambda x, y: (x * 2, ky * 1), (kx, ky), (kw, kw)), TF.jvp(lambda x, y: (x * 2, ty * 1), (tx, ty),
                                                                          (tw, tw)))
    kx2, tx2 = kx.clone().requires_grad_(), tx.clone().requires_grad_()
    _, kj = KF.vjp(lambda x: (x ** 3).sum(), kx2, create_graph=True)
    _, tj = TF.vjp(lambda x: (x ** 3).sum(), tx2, create_graph=True)
    kj.sum().backward(), tj.sum().backward()
    close(kx2.grad, tx2.grad)


def _strict_cases(lib, F):
    x, y = lib.ones(3), lib.ones(3)
    return [
        lambda: F.vjp(lambda a: y * 1, x, y, strict=True),
        lambda: F.vjp(lambda a, b: a * 2, (x, y), y, strict=True),
        lambda: F.jvp(lambda a: y * 1, x, y, strict=True),
        lambda: F.jvp(lambda a, b: a * 2, (x, y), (x, y), strict=True),
        lambda: F.jacobian(lambda a, b: a * 2, (x, y), strict=True),
        lambda: F.jacobian(lambda a: a * 2, x, strict=True, create_graph=True),
        lambda: F.jacobian(lambda a: a * 2, x, strict=True, vectorize=True),
        lambda: F.jacobian(lambda a: a * 2, x, strict=True, vectorize=True, strategy="forward-mode"),
        lambda: F.hessian(lambda a: (a * 2).sum(), x, strict=True),
        lambda: F.vhp(lambda a: (a * 2).sum(), x, y, strict=True),
        lambda: F.hvp(lambda a: (a * 2).sum(), x, y, strict=True),
        lambda: F.vhp(lambda a, b: (a ** 2).sum(), (x, y), (x, y), strict=True),
        lambda: F.jvp(lambda a: a * 2, x, x, strict=True, create_graph=True),
    ]


@pytest.mark.parametrize("case", range(13))
def test_strict_mode_errors_match_torch(case):
    same_error(_strict_cases(kiln, KF)[case], _strict_cases(torch, TF)[case])


def _argument_cases(lib, F):
    x = lib.ones(3)
    return [
        lambda: F.vjp(lambda a: a, 3),
        lambda: F.vjp(lambda a, b: a, (x, 3)),
        lambda: F.vjp(lambda a: 3, x),
        lambda: F.vjp(lambda a: (a, 3), x),
        lambda: F.vjp(lambda a: a, x),
        lambda: F.vjp(lambda a: a, x, lib.ones(2)),
        lambda: F.vjp(lambda a: (a, a), x, (x,)),
        lambda: F.vjp(lambda a: (a, a), x, (x, lib.ones(2))),
        lambda: F.vjp(lambda a: a, x, (x, x)),
        lambda: F.jvp(lambda a: a, x),
        lambda: F.jvp(lambda a: a, x, 3),
        lambda: F.jacobian(lambda a: a, x, strategy="sideways"),
        lambda: F.jacobian(lambda a: a, x, strategy="forward-mode"),
        lambda: F.jacobian(lambda a: a, x, strategy="forward-mode", create_graph=True),
        lambda: F.hessian(lambda a: a, x),
        lambda: F.hessian(lambda a: (a.sum(), a.sum()), x),
        lambda: F.hessian(lambda a: a.sum(), x, outer_jacobian_strategy="x"),
        lambda: F.vhp(lambda a: a, x, x),
        lambda: F.hvp(lambda a: (a.sum(),), x, x),
        lambda: F.vhp(lambda a: a.sum(), x),
        lambda: F.hvp(lambda a: a.sum(), x, lib.ones(4)),
    ]


@pytest.mark.parametrize("case", range(21))
def test_argument_errors_match_torch(case):
    same_error(_argument_cases(kiln, KF)[case], _argument_cases(torch, TF)[case])


def test_kiln_autograd_functional_is_wired():
    import kiln.autograd

    assert kiln.autograd.functional is KF
