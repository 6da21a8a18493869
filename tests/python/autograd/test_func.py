"""kiln.func (vmap, grad, vjp, jvp, jacrev, jacfwd, hessian, linearize,
functional_call, stack_module_state) against torch.func: values, output
structures, and error types and messages."""

import collections

import numpy as np
import pytest
import torch
import torch.func as tf

import kiln
from torch_compare import assert_same_error as same_error
import kiln.func as kf
from kiln.func import _pytree as kp


def K(a):
    return kiln.tensor(np.asarray(a))


def T(a):
    return torch.tensor(np.asarray(a))


def both(*shape, seed=0, dtype="float32"):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return K(a), T(a)


def close(k, t, rtol=1e-5, atol=1e-5):
    """Same structure (tuples, lists, dicts), shapes and values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(k, kiln.Tensor), type(k)
        assert tuple(k.shape) == tuple(t.shape)
        np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    elif isinstance(t, dict):
        assert isinstance(k, dict) and list(k) == list(t)
        for key in t:
            close(k[key], t[key], rtol, atol)
    elif isinstance(t, (tuple, list)):
        assert type(k) is type(t) and len(k) == len(t), (type(k), type(t))
        for a, b in zip(k, t):
            close(a, b, rtol, atol)
    else:
        assert k == t


# --- pytrees ---------------------------------------------------------------------------------------------------------

P = collections.namedtuple("P", "a b")


@pytest.mark.parametrize("tree", [1, (1,), (1, [2, 3], {"a": 4}), {"b": 1, "a": (2, 3)}, P(1, [2]), [None, 1], (),
                                  collections.OrderedDict(a=1), ((1, 2),)])
def test_treespec_prints_as_torch(tree):
    from torch.utils import _pytree as tp

    k_leaves, k_spec = kp.tree_flatten(tree)
    t_leaves, t_spec = tp.tree_flatten(tree)
    assert k_leaves == t_leaves
    assert repr(k_spec) == repr(t_spec)
    assert kp.treespec_pprint(k_spec) == tp.treespec_pprint(t_spec)
    assert kp.tree_unflatten(k_leaves, k_spec) == tree


# --- vmap ------------------------------------------------------------------------------------------------------------

def vmap_both(fn, k_args, t_args, kwargs=None, **vmap_options):
    """kiln.vmap and torch.vmap of the same function give the same result."""
    kwargs = kwargs or ({}, {})
    close(kf.vmap(fn, **vmap_options)(*k_args, **kwargs[0]), tf.vmap(fn, **vmap_options)(*t_args, **kwargs[1]))


def test_vmap_in_dims_out_dims_and_kwargs():
    (kx, tx), (ky, ty) = both(3, 4), both(4, 3, seed=1)
    vmap_both(lambda a, b: a * b, (kx, ky), (tx, ty), in_dims=(0, 1))
    vmap_both(lambda a, b: a * b, (kx, ky), (tx, ty), in_dims=(-2, -1), out_dims=-1)
    vmap_both(lambda a, b: a + b, (kx, kx[0]), (tx, tx[0]), in_dims=(0, None))
    vmap_both(lambda a, scale=1.0: a * scale, (kx,), (tx,), kwargs=({"scale": kx[1]}, {"scale": tx[1]}))
    vmap_both(lambda a: (a.sum(), a * 2), (kx,), (tx,), out_dims=(0, 1))
    vmap_both(lambda a: a, (kx,), (tx,), out_dims=(1,))
    vmap_both(lambda a: a * 2, (kx,), (tx,), chunk_size=2)
    vmap_both(lambda a, bc: a + bc[0] * bc[1], (kx, (kx, kx[0])), (tx, (tx, tx[0])), in_dims=(0, (0, None)))
    k = kf.vmap(lambda a: P(a, a * 2))(kx)
    assert type(k) is P
    close(tuple(k), tuple(tf.vmap(lambda a: P(a, a * 2))(tx)))


def test_vmap_pytrees_in_and_out():
    (kx, tx), (ky, ty) = both(3, 4), both(4, seed=1)

    def f(d, pair):
        return {"s": d["x"] @ d["y"], "l": [pair[0] * 2, pair[1]]}

    k = kf.vmap(f, in_dims=({"x": 0, "y": None}, (0, None)))({"x": kx, "y": ky}, (kx, ky))
    t = tf.vmap(f, in_dims=({"x": 0, "y": None}, (0, None)))({"x": tx, "y": ty}, (tx, ty))
    close(k, t)
    k = kf.vmap(lambda d: d["a"] + 1, in_dims=({"a": 1},))({"a": kx})
    close(k, tf.vmap(lambda d: d["a"] + 1, in_dims=({"a": 1},))({"a": tx}))


def test_nested_vmap_is_an_outer_product():
    (kx, tx), (ky, ty) = both(3), both(5, seed=1)
    k = kf.vmap(kf.vmap(lambda a, b: a * b, in_dims=(None, 0)), in_dims=(0, None))(kx, ky)
    t = tf.vmap(tf.vmap(lambda a, b: a * b, in_dims=(None, 0)), in_dims=(0, None))(tx, ty)
    close(k, t)
    assert tuple(k.shape) == (3, 5)


def test_vmap_of_a_module():
    km, tm = kiln.nn.Linear(4, 2), torch.nn.Linear(4, 2)
    _copy_weights(km, tm)
    kx, tx = both(3, 4)
    close(kf.vmap(km)(kx), tf.vmap(tm)(tx))


def test_vmap_unbatched_outputs_with_out_dims_none():
    kx, tx = both(3, 4)
    kc, tc = both(2, seed=2)
    k = kf.vmap(lambda a: (a * 2, kc), out_dims=(0, None))(kx)
    t = tf.vmap(lambda a: (a * 2, tc), out_dims=(0, None))(tx)
    close(k, t)
    assert kf.vmap(lambda a: (a, 3), out_dims=(0, None))(kx)[1] == 3


def test_vmap_batch_of_size_zero():
    k = kf.vmap(lambda a: (a.sum(), a * 2))(kiln.zeros(0, 3))
    t = tf.vmap(lambda a: (a.sum(), a * 2))(torch.zeros(0, 3))
    close(k, t)
    close(kf.vmap(lambda a: a, out_dims=1)(kiln.zeros(0, 3)), tf.vmap(lambda a: a, out_dims=1)(torch.zeros(0, 3)))


def test_vmap_randomness():
    kx = kiln.ones(4, 6)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
        kf.vmap(lambda a: a + kiln.rand(6))(kx)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        kf.vmap(lambda a: kiln.nn.functional.dropout(a, 0.5))(kx)
    same = kf.vmap(lambda a: a * kiln.rand(6), randomness="same")(kx)
    assert all(same[i].tolist() == same[0].tolist() for i in range(4))
    different = kf.vmap(lambda a: a * kiln.rand(6), randomness="different")(kx)
    assert different[0].tolist() != different[1].tolist()
    # deterministic functions are fine in error mode, and eval-mode dropout draws nothing
    close(kf.vmap(lambda a: kiln.nn.functional.dropout(a, 0.5, training=False))(kx), torch.ones(4, 6))


def _vmap_error_cases(lib, vm):
    x = lib.arange(12.0).reshape(3, 4)  # rows differ: an equal-rows output would count as unbatched in kiln
    return [
        lambda: vm(lambda a: 1.0)(x),
        lambda: vm(lambda a: None)(x),
        lambda: vm(lambda a: a, out_dims=None)(x),
        lambda: vm(lambda a, b: a, in_dims=None)(x, x),
        lambda: vm(lambda a, b: a, in_dims=(None, None))(x, x),
        lambda: vm(lambda a, b: a)(x, lib.ones(4)),
        lambda: vm(lambda a, b: a, in_dims=(0, 1))(x, lib.ones(4, 5)),
        lambda: vm(lambda a: a, out_dims=2)(x),
        lambda: vm(lambda a: a, out_dims=-3)(x),
        lambda: vm(lambda a: a, in_dims=2)(x),
        lambda: vm(lambda a: a, in_dims=[0])(x),
        lambda: vm(lambda a: a, in_dims=(0, 0))(x),
        lambda: vm(lambda a: a, in_dims=(1.0,))(x),
        lambda: vm(lambda a: a, in_dims=0)(3),
        lambda: vm(lambda a: a)(),
        lambda: vm(lambda a: a, randomness="foo")(x),
        lambda: vm(lambda a: a, chunk_size=0)(x),
        lambda: vm(lambda a: (a, a), out_dims=(0, 0, 0))(x),
        lambda: vm(lambda a: a, out_dims="a")(x),
        lambda: vm(lambda d: d["x"], in_dims=({"y": 0},))({"x": x}),
        lambda: vm(lambda a: a, in_dims=0)(lib.tensor(1.0)),
    ]


@pytest.mark.parametrize("case", range(21))
def test_vmap_errors_match_torch(case):
    same_error(_vmap_error_cases(kiln, kf.vmap)[case], _vmap_error_cases(torch, tf.vmap)[case])


def test_vmap_mismatched_batch_sizes_message():
    with pytest.raises(ValueError, match=r"vmap: Expected all tensors to have the same size in the mapped dimension, "
                                         r"got sizes \[3, 4\] for the mapped dimension"):
        kf.vmap(lambda a, b: a + b)(kiln.ones(3, 2), kiln.ones(4, 2))


def test_kiln_vmap_is_func_vmap():
    assert kiln.vmap is kf.vmap and kiln.func is kf


# --- grad ------------------------------------------------------------------------------------------------------------

def _f(lib):
    return lambda x, y: (x.sin() * y).sum() + (x ** 2).sum()


def test_grad_values_and_argnums():
    (kx, tx), (ky, ty) = both(3, 4), both(3, 4, seed=1)
    close(kf.grad(_f(kiln))(kx, ky), tf.grad(_f(torch))(tx, ty))
    close(kf.grad(_f(kiln), argnums=1)(kx, ky), tf.grad(_f(torch), argnums=1)(tx, ty))
    close(kf.grad(_f(kiln), argnums=(0, 1))(kx, ky), tf.grad(_f(torch), argnums=(0, 1))(tx, ty))
    close(kf.grad(_f(kiln), argnums=-1)(kx, ky), tf.grad(_f(torch), argnums=-1)(tx, ty))
    g = kf.grad(_f(kiln))(kx, ky)
    assert not g.requires_grad and not kx.requires_grad


def test_grad_of_pytree_arguments_has_aux_and_unused_inputs():
    (kx, tx), (ky, ty) = both(3), both(3, seed=1)

    def f(p, lib):
        return (p["w"] * p["b"][0]).sum(), {"aux": p["w"] * 2}

    k = kf.grad(lambda p: f(p, kiln), has_aux=True)({"w": kx, "b": [ky, kx]})
    t = tf.grad(lambda p: f(p, torch), has_aux=True)({"w": tx, "b": [ty, tx]})
    close(k, t)
    close(kf.grad(lambda a, b: a.sum(), argnums=(0, 1))(kx, ky), tf.grad(lambda a, b: a.sum(), argnums=(0, 1))(tx, ty))
    close(kf.grad(lambda a: kx.sum())(ky), tf.grad(lambda a: tx.sum())(ty))  # independent: zeros


def test_grad_and_value():
    kx, tx = both(4)
    close(kf.grad_and_value(lambda a: (a ** 3).sum())(kx), tf.grad_and_value(lambda a: (a ** 3).sum())(tx))
    close(kf.grad_and_value(lambda a: ((a ** 3).sum(), a), has_aux=True)(kx),
          tf.grad_and_value(lambda a: ((a ** 3).sum(), a), has_aux=True)(tx))


def test_nested_grad_and_composition_with_autograd():
    kx, tx = both(5)
    close(kf.grad(lambda a: kf.grad(lambda b: (b.sin() * b).sum())(a).sum())(kx),
          tf.grad(lambda a: tf.grad(lambda b: (b.sin() * b).sum())(a).sum())(tx))
    # perturbation confusion: d/dx [x * d/dy (x * y)] = 2x
    close(kf.grad(lambda a: (a * kf.grad(lambda b: (a * b).sum())(a)).sum())(kx),
          tf.grad(lambda a: (a * tf.grad(lambda b: (a * b).sum())(a)).sum())(tx))
    kx.requires_grad_(), tx.requires_grad_()
    kg, tg = kf.grad(lambda a: (a ** 3).sum())(kx), tf.grad(lambda a: (a ** 3).sum())(tx)
    assert kg.requires_grad and tg.requires_grad
    kg.sum().backward(), tg.sum().backward()
    close(kx.grad, tx.grad)


def test_transforms_ignore_outer_no_grad_and_follow_ordinary_autograd():
    for lib, F in ((kiln, kf), (torch, tf)):
        x = lib.tensor([1.0, 2.0, 3.0])
        with lib.no_grad():
            assert F.grad(lambda a: (a ** 2).sum())(x).tolist() == [2.0, 4.0, 6.0]
            assert F.jacrev(lambda a: a ** 2)(x).diagonal().tolist() == [2.0, 4.0, 6.0]
        y = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out, fn = F.vjp(lambda a: a ** 2, y)
        assert out.requires_grad and fn(lib.ones(3))[0].requires_grad
        assert all(t.requires_grad for t in F.jvp(lambda a: a ** 2, (y,), (lib.ones(3),)))
        assert not any(t.requires_grad for t in F.jvp(lambda a: a ** 2, (x,), (lib.ones(3),)))
        assert F.jacrev(lambda a: a ** 2)(y).requires_grad and F.vmap(lambda a: a ** 2)(y).requires_grad
        assert not F.vjp(lambda a: a ** 2, x)[1](x)[0].requires_grad


def _grad_error_cases(lib, g):
    x = lib.ones(3, 4)
    return [
        lambda: g(lambda a: a)(x),
        lambda: g(lambda a: 1.0)(x),
        lambda: g(lambda a: a.sum(), has_aux=True)(x),
        lambda: g(lambda a: (a.sum(), 3), has_aux=True)(x),
        lambda: g(lambda a: a.sum(), argnums=1)(x),
        lambda: g(lambda a: a.sum(), argnums=-2)(x),
        lambda: g(lambda a: a.sum(), argnums=())(x),
        lambda: g(lambda a, b: a.sum(), argnums=(0, 0))(x, x),
        lambda: g(lambda a: a.sum(), argnums=1.0)(x),
        lambda: g(lambda a: a.sum(), argnums=[0])(x),
        lambda: g(lambda a, b: a.sum(), argnums=1)(x, 3),
        lambda: g(lambda a: a.sum())(lib.arange(3)),
        lambda: g(lambda a: a.sum(), argnums=(0, "a"))(x),
    ]


@pytest.mark.parametrize("case", range(13))
def test_grad_errors_match_torch(case):
    same_error(_grad_error_cases(kiln, kf.grad)[case], _grad_error_cases(torch, tf.grad)[case])


# --- vjp / jvp / linearize -----------------------------------------------------------------------------------------

def test_vjp_structure_aux_and_reuse():
    (kx, tx), (ky, ty) = both(3), both(3, seed=1)
    ko, kfn = kf.vjp(lambda a, b: {"p": a * b, "q": [a.exp()]}, kx, ky)
    to, tfn = tf.vjp(lambda a, b: {"p": a * b, "q": [a.exp()]}, tx, ty)
    close(ko, to)
    kc, tc = both(3, seed=2)
    close(kfn({"p": kc, "q": [kc]}), tfn({"p": tc, "q": [tc]}))
    close(kfn({"p": kc * 2, "q": [kc]}), tfn({"p": tc * 2, "q": [tc]}))  # callable again
    k = kf.vjp(lambda a: (a.sin(), a.cos()), kx, has_aux=True)
    t = tf.vjp(lambda a: (a.sin(), a.cos()), tx, has_aux=True)
    close(k[0], t[0]), close(k[2], t[2]), close(k[1](kc), t[1](tc))
    assert not k[0].requires_grad and not k[1](kc)[0].requires_grad


def _vjp_error_cases(lib, vjp):
    x = lib.ones(3, 4)
    return [
        lambda: vjp(lambda a: 3, x),
        lambda: vjp(lambda a: a.long(), x),
        lambda: vjp(lambda a: a, x)[1]((x,)),
        lambda: vjp(lambda a: a, x, has_aux=True),
        lambda: vjp(lambda a: a, 3),
        lambda: vjp(lambda a: (), x),
        lambda: vjp(lambda a: (a, 3), x, has_aux=True)[1](x),
    ]


@pytest.mark.parametrize("case", range(7))
def test_vjp_errors_match_torch(case):
    same_error(_vjp_error_cases(kiln, kf.vjp)[case], _vjp_error_cases(torch, tf.vjp)[case])


def test_jvp_values_structure_aux_and_strict():
    (kx, tx), (ky, ty) = both(3, 2), both(3, 2, seed=1)
    (kt, tt), (ku, tu) = both(3, 2, seed=2), both(3, 2, seed=3)
    f = lambda a, b: (a.sin() * b, [a.exp().sum(0)])  # noqa: E731
    close(kf.jvp(f, (kx, ky), (kt, ku)), tf.jvp(f, (tx, ty), (tt, tu)))
    g = lambda a: ((a ** 2).sum(), {"k": a})  # noqa: E731
    close(kf.jvp(g, (kx,), (kt,), has_aux=True), tf.jvp(g, (tx,), (tt,), has_aux=True))
    close(kf.jvp(lambda a: ky * 1, (kx,), (kt,)), tf.jvp(lambda a: ty * 1, (tx,), (tt,)))  # independent: zeros
    same_error(lambda: kf.jvp(lambda a: ky * 1, (kx,), (kt,), strict=True),
               lambda: tf.jvp(lambda a: ty * 1, (tx,), (tt,), strict=True))


def _jvp_error_cases(lib, jvp):
    x = lib.ones(3, 4)
    return [
        lambda: jvp(lambda a: a, x, x),
        lambda: jvp(lambda a: a, (x,), x),
        lambda: jvp(lambda a: a, (x,), (x, x)),
        lambda: jvp(lambda a: a, (x,), (lib.ones(2),)),
        lambda: jvp(lambda a: 3, (x,), (x,)),
        lambda: jvp(lambda a: a, (3,), (3,)),
        lambda: jvp(lambda a: a, (), ()),
        lambda: jvp(lambda a: a, (x,), (x,), has_aux=True),
    ]


@pytest.mark.parametrize("case", range(8))
def test_jvp_errors_match_torch(case):
    same_error(_jvp_error_cases(kiln, kf.jvp)[case], _jvp_error_cases(torch, tf.jvp)[case])


def test_linearize():
    kx, tx = both(4)
    (kt, tt), (ku, tu) = both(4, seed=1), both(4, seed=2)
    ko, kfn = kf.linearize(lambda a: a.sin() * a, kx)
    to, tfn = tf.linearize(lambda a: a.sin() * a, tx)
    close(ko, to)
    close(kfn(kt), tfn(tt))
    close(kfn(ku), tfn(tu))
    same_error(lambda: kfn(kiln.ones(3)), lambda: tfn(torch.ones(3)))


# --- jacobians --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobians_match_torch(name):
    kj, tj = getattr(kf, name), getattr(tf, name)
    (kx, tx), (ky, ty) = both(3), both(2, 3, seed=1)
    f = lambda a, b: (a.sin() * b, (a ** 2).sum())  # noqa: E731
    close(kj(f)(kx, ky), tj(f)(tx, ty))
    close(kj(f, argnums=1)(kx, ky), tj(f, argnums=1)(tx, ty))
    close(kj(f, argnums=(0, 1))(kx, ky), tj(f, argnums=(0, 1))(tx, ty))
    g = lambda p: {"o": p["w"] @ p["v"]}  # noqa: E731
    close(kj(g)({"w": ky, "v": kx}), tj(g)({"w": ty, "v": tx}))
    h = lambda a: (a.exp(), a.sum())  # noqa: E731
    close(kj(h, has_aux=True)(kx), tj(h, has_aux=True)(tx))
    close(kj(lambda a: a.sum())(kx), tj(lambda a: a.sum())(tx))
    close(kj(lambda a: ky * 1)(kx), tj(lambda a: ty * 1)(tx))


def test_jacfwd_dtype_follows_the_output_and_jacrev_the_input():
    kx, tx = both(3)
    assert kf.jacfwd(lambda a: a.double() * 2)(kx).dtype == kiln.float64
    assert tf.jacfwd(lambda a: a.double() * 2)(tx).dtype == torch.float64
    assert kf.jacrev(lambda a: a.double() * 2)(kx).dtype == kiln.float32
    assert tf.jacrev(lambda a: a.double() * 2)(tx).dtype == torch.float32


def _jac_error_cases(lib, mod):
    x = lib.ones(3)
    return [
        lambda: mod.jacrev(lambda a: a, chunk_size=0),
        lambda: mod.jacrev(lambda a: 3)(x),
        lambda: mod.jacrev(lambda a: a.long())(x),
        lambda: mod.jacfwd(lambda a: 3)(x),
        lambda: mod.jacrev(lambda a: a)(x.to(lib.complex64)),
        lambda: mod.jacrev(lambda a: a.sum(), has_aux=True)(x),
        lambda: mod.jacfwd(lambda a: a.sum(), has_aux=True)(x),
        lambda: mod.jacfwd(lambda a: a.sum(), argnums=3)(x),
        lambda: mod.jacfwd(lambda a: a + lib.rand(3))(x),
        lambda: mod.jacfwd(lambda a: a, randomness="x")(x),
    ]


@pytest.mark.parametrize("case", range(10))
def test_jacobian_errors_match_torch(case):
    same_error(_jac_error_cases(kiln, kf)[case], _jac_error_cases(torch, tf)[case])


def test_hessian_and_nested_jacobians():
    (kx, tx), (ky, ty) = both(4), both(3, seed=1)
    f = lambda a, b: (a.sin().sum() * b.cos()).sum() + (a ** 3).sum()  # noqa: E731
    close(kf.hessian(f)(kx, ky), tf.hessian(f)(tx, ty), rtol=1e-4, atol=1e-5)
    close(kf.hessian(f, argnums=(0, 1))(kx, ky), tf.hessian(f, argnums=(0, 1))(tx, ty), rtol=1e-4, atol=1e-5)
    close(kf.jacrev(kf.jacrev(lambda a: a.sin() * a))(kx), tf.jacrev(tf.jacrev(lambda a: a.sin() * a))(tx),
          rtol=1e-4, atol=1e-5)
    close(kf.jacfwd(kf.jacfwd(lambda a: a.exp().sum()))(kx), tf.jacfwd(tf.jacfwd(lambda a: a.exp().sum()))(tx),
          rtol=1e-4, atol=1e-5)


# --- per-sample gradients (the headline use) ---------------------------------------------------------------

def test_per_sample_gradients_vmap_of_grad():
    (kw, tw), (kx, tx), (ky, ty) = both(4, 3), both(6, 3, seed=1), both(6, 4, seed=2)

    def loss(lib):
        return lambda w, x, y: ((lib.tanh(w @ x) - y) ** 2).mean()

    k = kf.vmap(kf.grad(loss(kiln)), in_dims=(None, 0, 0))(kw, kx, ky)
    t = tf.vmap(tf.grad(loss(torch)), in_dims=(None, 0, 0))(tw, tx, ty)
    close(k, t)
    assert tuple(k.shape) == (6, 4, 3)
    # grad of a vmapped function, and vmap of vmap of grad
    close(kf.grad(lambda w: kf.vmap(loss(kiln), in_dims=(None, 0, 0))(w, kx, ky).sum())(kw),
          tf.grad(lambda w: tf.vmap(loss(torch), in_dims=(None, 0, 0))(w, tx, ty).sum())(tw))
    close(kf.vmap(kf.jacrev(loss(kiln)), in_dims=(None, 0, 0))(kw, kx, ky),
          tf.vmap(tf.jacrev(loss(torch)), in_dims=(None, 0, 0))(tw, tx, ty))


def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(5, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))


def _copy_weights(kmodel, tmodel):
    with torch.no_grad():
        for (kn, kpar), (tn, tpar) in zip(kmodel.named_parameters(), tmodel.named_parameters()):
            assert kn == tn
            tpar.copy_(torch.tensor(kpar.detach().numpy()))


def test_per_sample_gradients_of_a_module_with_functional_call():
    kmodel, tmodel = _mlp(kiln), _mlp(torch)
    _copy_weights(kmodel, tmodel)
    (kx, tx) = both(7, 5, seed=3)
    ky, ty = K(np.arange(7) % 3), T(np.arange(7) % 3)

    def per_sample(lib, func, model, x, y):
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            out = func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, target.unsqueeze(0))

        return func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, x, y)

    k, t = per_sample(kiln, kf, kmodel, kx, ky), per_sample(torch, tf, tmodel, tx, ty)
    close(k, t)
    # the model's own parameters are back in place, untouched
    assert all(isinstance(p, kiln.nn.Parameter) for p in kmodel.parameters())
    # summed per-sample gradients equal the batch gradient
    kmodel.zero_grad()
    kiln.nn.functional.cross_entropy(kmodel(kx), ky, reduction="sum").backward()
    for name, p in kmodel.named_parameters():
        np.testing.assert_allclose(k[name].sum(0).numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5)


def _cnn(lib):
    """The per-sample-gradients tutorial's network, smaller (and with a batch norm's buffers)."""
    F = lib.nn.functional

    class SimpleCNN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = lib.nn.Conv2d(1, 4, 3, 1)
            self.bn = lib.nn.BatchNorm2d(4)
            self.conv2 = lib.nn.Conv2d(4, 6, 3, 1)
            self.fc1 = lib.nn.Linear(6 * 2 * 2, 8)
            self.fc2 = lib.nn.Linear(8, 3)

        def forward(self, x):
            x = F.relu(self.bn(self.conv1(x)))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = F.relu(self.fc1(lib.flatten(x, 1)))
            return F.log_softmax(self.fc2(x), dim=1)

    return SimpleCNN().eval()


def test_per_sample_gradients_tutorial_cnn():
    kmodel, tmodel = _cnn(kiln), _cnn(torch)
    _copy_weights(kmodel, tmodel)
    with torch.no_grad():
        tmodel.bn.running_mean.copy_(torch.tensor(kmodel.bn.running_mean.numpy()))
        tmodel.bn.running_var.copy_(torch.tensor(kmodel.bn.running_var.numpy()))
    kx, tx = both(5, 1, 8, 8, seed=6)
    ky, ty = K(np.arange(5) % 3), T(np.arange(5) % 3)

    def per_sample(lib, func, model, data, targets):
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            predictions = func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return lib.nn.functional.nll_loss(predictions, target.unsqueeze(0))

        return func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)

    close(per_sample(kiln, kf, kmodel, kx, ky), per_sample(torch, tf, tmodel, tx, ty), rtol=1e-4, atol=1e-5)


# --- functional_call / stack_module_state ---------------------------------------------------------------------

def test_functional_call_dict_tuple_kwargs_and_restore():
    kmodel, tmodel = _mlp(kiln), _mlp(torch)
    _copy_weights(kmodel, tmodel)
    kx, tx = both(2, 5, seed=4)
    kp_ = {k: v * 2 for k, v in kmodel.named_parameters()}
    tp_ = {k: v * 2 for k, v in tmodel.named_parameters()}
    close(kf.functional_call(kmodel, kp_, kx), tf.functional_call(tmodel, tp_, tx))
    close(kf.functional_call(kmodel, kp_, (kx,)), tf.functional_call(tmodel, tp_, (tx,)))
    lin_k, lin_t = kiln.nn.Linear(5, 2), torch.nn.Linear(5, 2)
    w = np.ones((2, 5), "float32")
    close(kf.functional_call(lin_k, ({"weight": K(w)}, {"bias": kiln.zeros(2)}), args=(), kwargs={"input": kx}),
          tf.functional_call(lin_t, ({"weight": T(w)}, {"bias": torch.zeros(2)}), args=(), kwargs={"input": tx}))
    before = kmodel[0].weight

    class Boom(Exception):
        pass

    def hook(module, args):
        raise Boom("the pre-hook refuses")

    handle = kmodel.register_forward_pre_hook(hook)
    with pytest.raises(Boom, match="^the pre-hook refuses$"):
        kf.functional_call(kmodel, kp_, kx)
    handle.remove()
    assert kmodel[0].weight is before


def _functional_call_error_cases(lib, func):
    lin = lib.nn.Linear(2, 2)
    x = lib.ones(2)
    return [
        lambda: func.functional_call(lin, ({"weight": x}, {"weight": x}), x),
        lambda: func.functional_call(lin, [{"weight": x}, 3], x),
        lambda: func.functional_call(lin, 3, x),
        lambda: func.functional_call(lin, {"weight": lib.ones(2, 2), "extra": x}, x, strict=True),
        lambda: func.functional_call(lin, {"weight": lib.ones(2, 2)}, x, strict=True),
        lambda: func.functional_call(lin, {"nope.weight": x}, x),
    ]


@pytest.mark.parametrize("case", range(6))
def test_functional_call_errors_match_torch(case):
    same_error(_functional_call_error_cases(kiln, kf)[case], _functional_call_error_cases(torch, tf)[case])


def test_functional_call_tied_weights():
    class Tied(kiln.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = kiln.nn.Linear(2, 2, bias=False)
            self.b = kiln.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m, x = Tied(), kiln.ones(1, 2)
    w = kiln.eye(2) * 3
    assert kf.functional_call(m, {"a.weight": w}, x).tolist() == [[9.0, 9.0]]  # tied: both become w
    assert kf.functional_call(m, {"a.weight": w}, x, tie_weights=False).tolist() == \
        (m.b(kiln.ones(1, 2) * 3)).tolist()
    with pytest.raises(ValueError, match="functional_call got multiple values for keys"):
        kf.functional_call(m, {"a.weight": w, "b.weight": w * 2}, x)


def test_functional_call_writes_back_reassigned_buffers():
    class Counter(kiln.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", kiln.zeros(()))

        def forward(self, x):
            self.count = self.count + 1
            return x

    m = Counter()
    state = {"count": kiln.tensor(5.0)}
    kf.functional_call(m, state, kiln.ones(1))
    assert state["count"].item() == 6.0 and m.count.item() == 0.0


def test_stack_module_state_ensembles_like_torch():
    kms = [kiln.nn.Linear(3, 2) for _ in range(4)]
    tms = [torch.nn.Linear(3, 2) for _ in range(4)]
    for km, tm in zip(kms, tms):
        _copy_weights(km, tm)
    kparams, kbuffers = kf.stack_module_state(kms)
    tparams, tbuffers = tf.stack_module_state(tms)
    close(kparams, tparams)
    assert kparams["weight"].requires_grad and kparams["weight"].grad_fn is None
    kx, tx = both(5, 3, seed=5)
    k = kf.vmap(lambda p, b, x: kf.functional_call(kms[0], (p, b), (x,)), in_dims=(0, 0, None))(kparams, kbuffers, kx)
    t = tf.vmap(lambda p, b, x: tf.functional_call(tms[0], (p, b), (x,)), in_dims=(0, 0, None))(tparams, tbuffers, tx)
    close(k, t)
    same_error(lambda: kf.stack_module_state([]), lambda: tf.stack_module_state([]))
    same_error(lambda: kf.stack_module_state([kms[0], kiln.nn.Linear(3, 2).eval()]),
               lambda: tf.stack_module_state([tms[0], torch.nn.Linear(3, 2).eval()]))
    same_error(lambda: kf.stack_module_state([kms[0], kiln.nn.Tanh()]),
               lambda: tf.stack_module_state([tms[0], torch.nn.Tanh()]))
    same_error(lambda: kf.stack_module_state([kms[0], kiln.nn.Linear(3, 2).requires_grad_(False)]),
               lambda: tf.stack_module_state([tms[0], torch.nn.Linear(3, 2).requires_grad_(False)]))


def test_replace_all_batch_norm_modules():
    m = kiln.nn.Sequential(kiln.nn.Linear(2, 3), kiln.nn.BatchNorm1d(3))
    assert kf.replace_all_batch_norm_modules_(m) is m
    bn = m[1]
    assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats
    assert len(dict(m.named_buffers())) == 0
