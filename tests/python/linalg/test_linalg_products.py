"""The matrix products beyond mm/bmm/matmul (addmv, addr, inner, vdot, trace,
kron, tensordot, matrix_power, linalg.multi_dot, chain_matmul, linalg.vecdot),
the in-place forms of the addmm family and the out= forms of every product,
against torch: values, dtypes, gradients, errors."""

import warnings

import numpy as np
import pytest
import torch

import kiln
from torch_compare import assert_same_error

RNG = np.random.default_rng(7)


def pair(shape, dtype="float64", low=-3, high=4):
    if dtype in ("int64", "int32"):
        a = RNG.integers(low, high, size=shape)
    elif dtype == "bool":
        a = RNG.integers(0, 2, size=shape).astype(bool)
    else:
        a = RNG.standard_normal(shape)
    t = torch.tensor(a).to(getattr(torch, dtype))
    return kiln.tensor(t.numpy()), t


def same(k, t, tol=1e-6):
    assert tuple(k.shape) == tuple(t.shape)
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch.")
    np.testing.assert_allclose(np.asarray(k.tolist(), dtype=np.float64).reshape(tuple(t.shape)),
                               t.detach().double().numpy(), rtol=tol, atol=tol)


def both(fn, *shapes, dtype="float64"):
    ks, ts = zip(*[pair(s, dtype) for s in shapes])
    return fn(kiln, *ks), fn(torch, *ts)


# --- the new products ----------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1)])
def test_addmv(dtype, beta, alpha):
    if dtype == "int64" and isinstance(beta, float):
        beta, alpha = 2, 3
    k, t = both(lambda L, s, m, v: L.addmv(s, m, v, beta=beta, alpha=alpha), (3,), (3, 4), (4,), dtype=dtype)
    same(k, t)


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
def test_addr(dtype):
    beta, alpha = (True, True) if dtype == "bool" else (2, 3)
    k, t = both(lambda L, s, a, b: L.addr(s, a, b, beta=beta, alpha=alpha), (3, 4), (3,), (4,), dtype=dtype)
    same(k, t)
    k, t = both(lambda L, s, a, b: s.addr(a, b), (4,), (3,), (4,), dtype=dtype)  # self broadcasts
    same(k, t)


@pytest.mark.parametrize("sa,sb", [((2, 3), (5, 3)), ((3,), (3,)), ((2, 4, 3), (3,)), ((), (2, 3)), ((4, 3), ())])
def test_inner(sa, sb):
    k, t = both(lambda L, a, b: L.inner(a, b), sa, sb)
    same(k, t)
    k, t = both(lambda L, a, b: a.inner(b), sa, sb)
    same(k, t)


def test_vdot_and_trace():
    k, t = both(lambda L, a, b: L.vdot(a, b), (5,), (5,))
    same(k, t)
    for dtype in ("float64", "int32", "int64"):
        k, t = both(lambda L, a: L.trace(a), (3, 5), dtype=dtype)
        same(k, t)
        k, t = both(lambda L, a: a.trace(), (4, 2), dtype=dtype)
        same(k, t)


@pytest.mark.parametrize("sa,sb", [((2, 3), (4,)), ((2,), (3,)), ((2, 1, 3), (3, 2)), ((0, 2), (3, 3)), ((), (3,))])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_kron(sa, sb, dtype):
    k, t = both(lambda L, a, b: L.kron(a, b), sa, sb, dtype=dtype)
    same(k, t)


def test_kron_promotes():
    ka, ta = pair((2, 2), "int64")
    kb, tb = pair((2,), "float32")
    same(kiln.kron(ka, kb), torch.kron(ta, tb))


@pytest.mark.parametrize("sa,sb,dims", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((2, 3), (3, 2), 1), ((2, 3), (4, 5), 0),
    ((2, 3, 4), (4, 3, 5), ([2], [0])), ((2, 3, 4), (4, 3, 5), ([-1, 1], [0, 1])), ((2, 1, 4), (4, 3, 5), ([1], [1])),
    ((2, 3, 4), (4, 1, 5), ([1], [1])), ((2, 3), (3, 2), ((1,), (0,))),
])
def test_tensordot(sa, sb, dims):
    k, t = both(lambda L, a, b: L.tensordot(a, b, dims=dims), sa, sb)
    same(k, t)


def test_tensordot_tensor_dims():
    k, t = both(lambda L, a, b: L.tensordot(a, b, dims=L.tensor([[1, 2], [1, 0]])), (2, 3, 4), (4, 3, 5))
    same(k, t)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
@pytest.mark.parametrize("shape,dtype", [((3, 3), "float64"), ((2, 4, 4), "float64"), ((3, 3), "int64"), ((0, 2, 2), "float64")])
def test_matrix_power(n, shape, dtype):
    k, t = both(lambda L, a: L.matrix_power(a, n), shape, dtype=dtype)
    same(k, t, tol=1e-5)
    k, t = both(lambda L, a: L.linalg.matrix_power(a, n), shape, dtype=dtype)
    same(k, t, tol=1e-5)
    k, t = both(lambda L, a: a.matrix_power(n), shape, dtype=dtype)
    same(k, t, tol=1e-5)


def test_matrix_power_negative_is_not_implemented():
    a, _ = pair((3, 3))
    with pytest.raises(NotImplementedError, match="inverse"):
        kiln.matrix_power(a, -1)


@pytest.mark.parametrize("shapes", [
    [(3, 4), (4, 5)], [(3,), (3, 4), (4,)], [(3,), (3, 4)], [(2, 3), (3,)], [(10, 2), (2, 30), (30, 3), (3, 40)],
    [(5, 1), (1, 5), (5, 1), (1, 5)], [(0, 3), (3, 2)],
])
def test_multi_dot(shapes):
    k, t = both(lambda L, *xs: L.linalg.multi_dot(list(xs)), *shapes)
    same(k, t)


def test_chain_matmul_warns_as_torch():
    ks, ts = zip(*[pair(s) for s in [(2, 3), (3, 4), (4, 2)]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = kiln.chain_matmul(*ks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.chain_matmul(*ts)
    same(k, t)
    assert any("chain_matmul is deprecated" in str(w.message) for w in caught)


def test_linalg_matmul_and_vecdot():
    k, t = both(lambda L, a, b: L.linalg.matmul(a, b), (2, 3, 4), (4, 5))
    same(k, t)
    k, t = both(lambda L, a, b: L.linalg.vecdot(a, b), (2, 3, 4), (3, 4))
    same(k, t)
    k, t = both(lambda L, a, b: L.linalg.vecdot(a, b, dim=1), (2, 3, 4), (3, 1))
    same(k, t)


# --- gradients: the composites differentiate through their parts ------------------

GRAD_CASES = {
    "addmv": (lambda L, s, m, v: L.addmv(s, m, v, beta=0.5, alpha=2), [(3,), (3, 4), (4,)]),
    "addr": (lambda L, s, a, b: L.addr(s, a, b, beta=0.5, alpha=2), [(3, 4), (3,), (4,)]),
    "inner": (lambda L, a, b: L.inner(a, b), [(2, 3), (4, 3)]),
    "vdot": (lambda L, a, b: L.vdot(a, b), [(4,), (4,)]),
    "trace": (lambda L, a: L.trace(a), [(3, 4)]),
    "kron": (lambda L, a, b: L.kron(a, b), [(2, 3), (3, 2)]),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, dims=([1, 2], [1, 0])), [(2, 3, 4), (4, 3, 2)]),
    "tensordot_size1": (lambda L, a, b: L.tensordot(a, b, dims=([1], [1])), [(2, 1, 4), (4, 3, 2)]),
    "matrix_power": (lambda L, a: L.matrix_power(a, 3), [(3, 3)]),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), [(3,), (3, 4), (4, 2)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_torch(name):
    fn, shapes = GRAD_CASES[name]
    ks, ts = zip(*[pair(s) for s in shapes])
    ks = [k.requires_grad_() for k in ks]
    ts = [t.requires_grad_() for t in ts]
    ko, to = fn(kiln, *ks), fn(torch, *ts)
    same(ko, to)
    g = RNG.standard_normal(tuple(to.shape))
    ko.backward(kiln.tensor(g))
    to.backward(torch.tensor(g))
    for k, t in zip(ks, ts):
        same(k.grad, t.grad, tol=1e-9)
    assert kiln.autograd.gradcheck(lambda *xs: fn(kiln, *xs), tuple(ks))


# --- in-place forms ---------------------------------------------------------------

INPLACE = {
    "addmm_": (lambda s, a, b: s.addmm_(a, b, beta=0.5, alpha=2), [(3, 5), (3, 4), (4, 5)]),
    "baddbmm_": (lambda s, a, b: s.baddbmm_(a, b, beta=0.5, alpha=2), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "addbmm_": (lambda s, a, b: s.addbmm_(a, b, beta=0.5, alpha=2), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    "addmv_": (lambda s, a, b: s.addmv_(a, b, beta=0.5, alpha=2), [(3,), (3, 4), (4,)]),
    "addr_": (lambda s, a, b: s.addr_(a, b, beta=0.5, alpha=2), [(3, 4), (3,), (4,)]),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_values_and_gradients(name):
    fn, shapes = INPLACE[name]
    ks, ts = zip(*[pair(s) for s in shapes])
    kleaf, tleaf = ks[0].clone().requires_grad_(), ts[0].clone().requires_grad_()
    kx = [k.clone().requires_grad_() for k in ks[1:]]
    tx = [t.clone().requires_grad_() for t in ts[1:]]
    kself, tself = kleaf * 1, tleaf * 1
    kr, tr = fn(kself, *kx), fn(tself, *tx)
    assert kr is kself
    same(kself, tself)
    kself.sum().backward()
    tself.sum().backward()
    for k, t in zip([kleaf, *kx], [tleaf, *tx]):
        same(k.grad, t.grad, tol=1e-9)


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_errors(name):
    fn, shapes = INPLACE[name]
    ks, ts = zip(*[pair(s) for s in shapes])
    # A leaf that requires grad.
    assert_same_error(lambda: fn(ks[0].clone().requires_grad_(), *ks[1:]),
                      lambda: fn(ts[0].clone().requires_grad_(), *ts[1:]))


def test_inplace_shape_must_match():
    assert_same_error(lambda: kiln.zeros(5).addmm_(kiln.zeros(3, 4), kiln.zeros(4, 5)),
                      lambda: torch.zeros(5).addmm_(torch.zeros(3, 4), torch.zeros(4, 5)))
    assert_same_error(lambda: kiln.zeros(1, 5).baddbmm_(kiln.zeros(2, 3, 4), kiln.zeros(2, 4, 5)),
                      lambda: torch.zeros(1, 5).baddbmm_(torch.zeros(2, 3, 4), torch.zeros(2, 4, 5)))


# --- out= forms ---------------------------------------------------------------------

OUT = {
    "mm": (lambda L, a, b, **o: L.mm(a, b, **o), [(3, 4), (4, 5)]),
    "bmm": (lambda L, a, b, **o: L.bmm(a, b, **o), [(2, 3, 4), (2, 4, 5)]),
    "addmm": (lambda L, s, a, b, **o: L.addmm(s, a, b, beta=0.5, alpha=2, **o), [(5,), (3, 4), (4, 5)]),
    "dot": (lambda L, a, b, **o: L.dot(a, b, **o), [(4,), (4,)]),
    "vdot": (lambda L, a, b, **o: L.vdot(a, b, **o), [(4,), (4,)]),
    "mv": (lambda L, a, b, **o: L.mv(a, b, **o), [(3, 4), (4,)]),
    "outer": (lambda L, a, b, **o: L.outer(a, b, **o), [(3,), (4,)]),
    "matmul": (lambda L, a, b, **o: L.matmul(a, b, **o), [(2, 3, 4), (4, 5)]),
    "baddbmm": (lambda L, s, a, b, **o: L.baddbmm(s, a, b, **o), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    "addbmm": (lambda L, s, a, b, **o: L.addbmm(s, a, b, **o), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    "addmv": (lambda L, s, a, b, **o: L.addmv(s, a, b, **o), [(3,), (3, 4), (4,)]),
    "addr": (lambda L, s, a, b, **o: L.addr(s, a, b, **o), [(3, 4), (3,), (4,)]),
    "inner": (lambda L, a, b, **o: L.inner(a, b, **o), [(2, 3), (4, 3)]),
    "kron": (lambda L, a, b, **o: L.kron(a, b, **o), [(2, 3), (2,)]),
    "tensordot": (lambda L, a, b, **o: L.tensordot(a, b, dims=1, **o), [(2, 3), (3, 4)]),
    "multi_dot": (lambda L, a, b, c, **o: L.linalg.multi_dot([a, b, c], **o), [(2, 3), (3, 4), (4, 2)]),
}


TWO_D_RESULTS = {"mm", "addmm", "outer", "addbmm", "addr", "inner", "kron", "tensordot", "multi_dot"}
OUT_CASES = [(name, kind) for name in sorted(OUT) for kind in ("empty", "right_shape", "transposed")
             if kind != "transposed" or name in TWO_D_RESULTS]


@pytest.mark.parametrize("name,out_kind", OUT_CASES)
def test_out_forms(name, out_kind):
    fn, shapes = OUT[name]
    ks, ts = zip(*[pair(s, "float32") for s in shapes])
    expected = fn(torch, *ts)
    if out_kind == "empty":
        kout = kiln.empty(0)
    elif out_kind == "right_shape":
        kout = kiln.full(tuple(expected.shape), float("nan"))
    else:
        assert expected.dim() == 2
        kout = kiln.full(tuple(expected.shape)[::-1], float("nan")).t()
    ptr = kout.data_ptr()
    result = fn(kiln, *ks, out=kout)
    assert result is kout
    same(kout, expected, tol=1e-5)
    if out_kind != "empty":
        assert kout.data_ptr() == ptr  # written in place, not replaced


@pytest.mark.parametrize("name", sorted(OUT))
def test_out_dtype_and_grad_errors(name):
    fn, shapes = OUT[name]
    ks, ts = zip(*[pair(s, "float32") for s in shapes])
    assert_same_error(lambda: fn(kiln, *ks, out=kiln.empty(0, dtype=kiln.int64)),
                      lambda: fn(torch, *ts, out=torch.empty(0, dtype=torch.int64)))
    kg = [ks[0].clone().requires_grad_(), *ks[1:]]
    tg = [ts[0].clone().requires_grad_(), *ts[1:]]
    if name in ("inner", "tensordot"):  # composites in torch: out takes the history (CopyBackwards)
        kout, tout = kiln.empty(0), torch.empty(0)
        fn(kiln, *kg, out=kout)
        fn(torch, *tg, out=tout)
        assert kout.requires_grad and tout.requires_grad
        kout.sum().backward()
        tout.sum().backward()
        same(kg[0].grad, tg[0].grad, tol=1e-5)
        return
    assert_same_error(lambda: fn(kiln, *kg, out=kiln.empty(0)), lambda: fn(torch, *tg, out=torch.empty(0)),
                      message=False)


# --- errors -------------------------------------------------------------------------

ERRORS = [
    lambda L: L.addmv(L.zeros(3), L.zeros(3, 4), L.zeros(5)),
    lambda L: L.addmv(L.zeros(3), L.zeros(3, 4, 1), L.zeros(4)),
    lambda L: L.addr(L.zeros(3, 4), L.zeros(3, 1), L.zeros(4)),
    lambda L: L.addr(L.zeros(3, 4), L.zeros(3), L.zeros(4, 1)),
    lambda L: L.inner(L.zeros(2, 3), L.zeros(4)),
    lambda L: L.vdot(L.zeros(3), L.zeros(4)),
    lambda L: L.vdot(L.zeros(3, 1), L.zeros(3)),
    lambda L: L.trace(L.zeros(3, 4, 5)),
    lambda L: L.trace(L.zeros(3, 3, dtype=L.bool)),
    lambda L: L.tensordot(L.zeros(2, 3, 4), L.zeros(4, 3, 5), dims=([1], [1, 0])),
    lambda L: L.tensordot(L.zeros(2, 3, 4), L.zeros(4, 3, 5), dims=([1], [0])),
    lambda L: L.tensordot(L.zeros(2, 3, 4), L.zeros(4, 3, 5), dims=-1),
    lambda L: L.tensordot(L.zeros(2, 3, 4), L.zeros(4, 3, 5, dtype=L.float64), dims=([2], [0])),
    lambda L: L.matrix_power(L.zeros(3, 4), 2),
    lambda L: L.matrix_power(L.zeros(3), 2),
    lambda L: L.linalg.multi_dot([L.zeros(3, 4)]),
    lambda L: L.linalg.multi_dot([L.zeros(3, 4), L.zeros(5, 2)]),
    lambda L: L.linalg.multi_dot([L.zeros(2, 3, 4), L.zeros(4, 2)]),
    lambda L: L.linalg.multi_dot([L.zeros(3, 4), L.zeros(4), L.zeros(4, 2)]),
    lambda L: L.linalg.multi_dot([L.zeros(3, 4), L.zeros(4, 2, dtype=L.float64)]),
    lambda L: L.linalg.vecdot(L.zeros(3), L.zeros(3, dtype=L.float64)),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    fn = ERRORS[case]
    assert_same_error(lambda: fn(kiln), lambda: fn(torch))


# --- dtype mismatches: each product raises with PyTorch's own wording (they differ per op) ---------------------


def _ones(L, shape, dtype="float32"):
    return L.ones(*shape, dtype=getattr(L, dtype))


DTYPE_ERRORS = {
    "mm": lambda L: L.mm(_ones(L, (2, 2)), _ones(L, (2, 2), "float64")),
    "addmm mat2": lambda L: L.addmm(_ones(L, (2, 2)), _ones(L, (2, 2)), _ones(L, (2, 2), "float64")),
    "addmm mat1": lambda L: L.addmm(_ones(L, (2, 2)), _ones(L, (2, 2), "float64"), _ones(L, (2, 2))),
    "addmm self, beta=0": lambda L: L.addmm(_ones(L, (2, 2), "float64"), _ones(L, (2, 2)), _ones(L, (2, 2)), beta=0),
    "bmm": lambda L: L.bmm(_ones(L, (1, 2, 2)), _ones(L, (1, 2, 2), "float64")),
    "baddbmm self": lambda L: L.baddbmm(_ones(L, (1, 2, 2), "float64"), _ones(L, (1, 2, 2)), _ones(L, (1, 2, 2))),
    "baddbmm int self, beta=0": lambda L: L.baddbmm(_ones(L, (1, 2, 2), "int64"), _ones(L, (1, 2, 2)),
                                                    _ones(L, (1, 2, 2)), beta=0),
    "baddbmm batch2": lambda L: L.baddbmm(_ones(L, (1, 2, 2)), _ones(L, (1, 2, 2)), _ones(L, (1, 2, 2), "float64")),
    "addbmm self": lambda L: L.addbmm(_ones(L, (2, 2), "float64"), _ones(L, (1, 2, 2)), _ones(L, (1, 2, 2))),
    "addbmm batch1": lambda L: L.addbmm(_ones(L, (2, 2)), _ones(L, (1, 2, 2), "float64"), _ones(L, (1, 2, 2))),
    "mv": lambda L: L.mv(_ones(L, (2, 2), "float64"), _ones(L, (2,))),
    "addmv self": lambda L: L.addmv(_ones(L, (2,), "float64"), _ones(L, (2, 2)), _ones(L, (2,))),
    "addmv vec": lambda L: L.addmv(_ones(L, (2,)), _ones(L, (2, 2)), _ones(L, (2,), "float64")),
    "dot": lambda L: L.dot(_ones(L, (2,)), _ones(L, (2,), "float64")),
    "matmul 3d@1d": lambda L: L.matmul(_ones(L, (3, 2, 2), "float64"), _ones(L, (2,))),
    "matmul 1d@3d": lambda L: L.matmul(_ones(L, (2,)), _ones(L, (3, 2, 2), "float64")),
    "matmul 3d@3d": lambda L: L.matmul(_ones(L, (3, 2, 2)), _ones(L, (3, 2, 2), "float64")),
    "linear weight": lambda L: L.nn.functional.linear(_ones(L, (2, 2)), _ones(L, (2, 2), "float64")),
    "linear bias": lambda L: L.nn.functional.linear(_ones(L, (2, 2)), _ones(L, (2, 2)), _ones(L, (2,), "float64")),
    "linear 3d bias": lambda L: L.nn.functional.linear(_ones(L, (3, 2, 2)), _ones(L, (2, 2)),
                                                       _ones(L, (2,), "float64")),
    "linear contiguous 4d bias": lambda L: L.nn.functional.linear(_ones(L, (2, 1, 2, 2)), _ones(L, (3, 2)),
                                                                  L.arange(3, dtype=L.float64)),
    "linear 1d bias": lambda L: L.nn.functional.linear(_ones(L, (2,)), _ones(L, (2, 2)), _ones(L, (2,), "float64")),
    "bilinear weight": lambda L: L.nn.functional.bilinear(_ones(L, (2, 2)), _ones(L, (2, 2)),
                                                          _ones(L, (3, 2, 2), "float64")),
    "bilinear bias": lambda L: L.nn.functional.bilinear(_ones(L, (2, 2)), _ones(L, (2, 2)), _ones(L, (3, 2, 2)),
                                                        _ones(L, (3,), "float64")),
    "einsum contraction": lambda L: L.einsum("bij,bjk->bik", _ones(L, (2, 2, 2), "float64"), _ones(L, (2, 2, 2))),
    "einsum three operands": lambda L: L.einsum("i,i,i->", _ones(L, (2,)), _ones(L, (2,)), _ones(L, (2,), "float64")),
    "einsum int and float": lambda L: L.einsum("ij,jk->ik", _ones(L, (2, 2), "int64"), _ones(L, (2, 2))),
    "einsum sizes": lambda L: L.einsum("ij,jk->ik", _ones(L, (2, 3)), _ones(L, (4, 5))),
}


@pytest.mark.parametrize("name", sorted(DTYPE_ERRORS))
def test_dtype_errors_match_torch(name):
    assert_same_error(lambda: DTYPE_ERRORS[name](kiln), lambda: DTYPE_ERRORS[name](torch))


PROMOTING = {
    # outer and an einsum with nothing to sum are broadcast multiplies in PyTorch, so they promote.
    "outer int, float": lambda L: L.outer(L.arange(3), _ones(L, (2,)) * 1.5),
    "outer bool": lambda L: L.outer(L.tensor([True, False]), L.tensor([True, True, False])),
    "outer bool, int": lambda L: L.outer(L.tensor([True, False]), L.arange(3, dtype=L.int32)),
    "ger float, double": lambda L: L.ger(_ones(L, (2,)) * 2, L.arange(3, dtype=L.float64)),
    "einsum outer": lambda L: L.einsum("i,j->ij", L.arange(3, dtype=L.float32), L.arange(2, dtype=L.float64)),
    "einsum batch, no sum": lambda L: L.einsum("bi,bj->bij", L.arange(6).reshape(2, 3), _ones(L, (2, 2)) / 3),
    "linear, non-contiguous 4d input: the bias keeps the product's dtype": lambda L: L.nn.functional.linear(
        _ones(L, (2, 1, 2, 2)).transpose(0, 2), _ones(L, (3, 2)), L.arange(3, dtype=L.float64)),
}


@pytest.mark.parametrize("name", sorted(PROMOTING))
def test_promoting_products_match_torch(name):
    k, t = PROMOTING[name](kiln), PROMOTING[name](torch)
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch.")
    np.testing.assert_allclose(k.numpy().astype(np.float64), t.numpy().astype(np.float64))


def test_outer_of_mixed_dtypes_has_gradients_of_each_input_dtype():
    a, b = kiln.tensor([1.0, 2.0], requires_grad=True), kiln.tensor([3.0, 4.0, 5.0], dtype=kiln.float64,
                                                                      requires_grad=True)
    ta, tb = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64,
                                                                         requires_grad=True)
    kiln.outer(a, b).pow(2).sum().backward()
    torch.outer(ta, tb).pow(2).sum().backward()
    assert a.grad.dtype == kiln.float32 and b.grad.dtype == kiln.float64
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)
