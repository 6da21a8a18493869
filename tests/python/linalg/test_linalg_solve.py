"""linalg.solve, inv, det, slogdet, lu_factor(_ex) and torch.inverse/det/
logdet/slogdet (python/kiln/linalg/_solve.py over eager/ops/lapack.yaml)
against torch: values over batches, broadcasting, vector right-hand sides and
left=False, in float32 and float64; LinAlgError for singular matrices and
torch's words for bad shapes and dtypes; gradients against torch and by
gradcheck."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import numpy_pair as _pair, raised


def _matrix(shape, seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        a = a + 2 * np.eye(shape[-1])  # well conditioned
    return a.astype(dtype)


SOLVE_SHAPES = [((4, 4), (4, 2)), ((4, 4), (4,)), ((3, 4, 4), (3, 4, 1)), ((3, 4, 4), (4, 2)), ((4, 4), (2, 4, 3)),
                ((2, 1, 3, 3), (5, 3, 2)), ((3, 5, 5), (3, 5)), ((0, 3, 3), (0, 3, 2)), ((3, 3), (3, 0))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("a_shape, b_shape", SOLVE_SHAPES)
def test_solve_matches_torch(dtype, a_shape, b_shape):
    (ka, ta), (kb, tb) = _pair(_matrix(a_shape, 0, dtype)), _pair(_matrix(b_shape, 1, dtype))
    assert_matches(kiln.linalg.solve(ka, kb), torch.linalg.solve(ta, tb))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_solve_left_false_transposed_inputs_and_out(dtype):
    before = _matrix((2, 4, 4), 0, dtype)
    (ka, ta), (kb, tb) = _pair(_matrix((2, 4, 4), 0, dtype)), _pair(_matrix((2, 3, 4), 1, dtype))
    assert_matches(kiln.linalg.solve(ka, kb, left=False), torch.linalg.solve(ta, tb, left=False))
    assert_matches(kiln.linalg.solve(ka.mT, kb.mT), torch.linalg.solve(ta.mT, tb.mT))
    kout = kiln.empty(0, dtype=ka.dtype)
    kiln.linalg.solve(ka, kb.mT, out=kout)
    assert_matches(kout, torch.linalg.solve(ta, tb.mT))
    np.testing.assert_array_equal(ka.numpy(), before)  # LAPACK works on copies: inputs are never written


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 4, 4), (2, 3, 2, 2), (0, 3, 3)])
def test_inv_det_slogdet_match_torch(dtype, shape):
    ka, ta = _pair(_matrix(shape, 2, dtype))
    assert_matches(kiln.linalg.inv(ka), torch.linalg.inv(ta))
    assert_matches(kiln.inverse(ka), torch.inverse(ta))
    assert_matches(kiln.linalg.det(ka), torch.linalg.det(ta))
    assert_matches(ka.det(), ta.det())
    ks, ts = kiln.linalg.slogdet(ka), torch.linalg.slogdet(ta)
    assert_matches(ks.sign, ts.sign)
    assert_matches(ks.logabsdet, ts.logabsdet)
    assert_matches(kiln.logdet(ka), torch.logdet(ta))


def test_lu_factor_matches_torch():
    ka, ta = _pair(_matrix((2, 4, 4), 3))
    k, t = kiln.linalg.lu_factor(ka), torch.linalg.lu_factor(ta)
    assert_matches(k.LU, t.LU)
    assert_matches(k.pivots, t.pivots, exact=True)
    kx, tx = kiln.linalg.lu_factor_ex(ka), torch.linalg.lu_factor_ex(ta)
    assert_matches(kx.info, tx.info, exact=True)


def test_singular_matrices():
    singular = [[1.0, 2.0], [2.0, 4.0]]
    ks, ts = kiln.tensor(singular), torch.tensor(singular)
    assert_matches(kiln.linalg.det(ks), torch.linalg.det(ts))
    k, t = kiln.linalg.slogdet(ks), torch.linalg.slogdet(ts)
    assert_matches(k.sign, t.sign)
    assert_matches(k.logabsdet, t.logabsdet)
    for fn in (lambda L, a: L.linalg.inv(a), lambda L, a: L.linalg.solve(a, L.ones(2)),
               lambda L, a: L.linalg.inv(L.stack([L.eye(2), a]))):
        kerror, terror = raised(lambda: fn(kiln, ks)), raised(lambda: fn(torch, ts))
        # (torch's is torch._C._LinAlgError; both are RuntimeErrors with the same words)
        assert isinstance(kerror, kiln.linalg.LinAlgError) and isinstance(kerror, RuntimeError)
        assert isinstance(terror, RuntimeError) and str(kerror) == str(terror).replace("torch", "kiln")
    info = kiln.linalg.lu_factor_ex(ks).info
    assert int(info) == int(torch.linalg.lu_factor_ex(ts).info)
    assert_matches(kiln.logdet(kiln.tensor([[0.0, 1.0], [1.0, 0.0]])), torch.logdet(torch.tensor([[0.0, 1.0], [1.0, 0.0]])))


ERRORS = [
    ("inv_not_square", lambda L: L.linalg.inv(L.ones(2, 3))),
    ("inv_int", lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.int64))),
    ("inv_1d", lambda L: L.linalg.inv(L.ones(3))),
    ("det_not_square", lambda L: L.linalg.det(L.ones(2, 3))),
    ("solve_shapes", lambda L: L.linalg.solve(L.eye(2), L.ones(3))),
    ("solve_shapes_matrix", lambda L: L.linalg.solve(L.eye(2), L.ones(3, 4))),
]


@pytest.mark.parametrize("name, fn", ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)))


GRADIENTS = {
    "solve": ([(3, 3), (3, 2)], lambda L, a, b: L.linalg.solve(a, b)),
    "solve vector broadcast": ([(2, 3, 3), (3,)], lambda L, a, b: L.linalg.solve(a, b)),
    "solve left=False": ([(3, 3), (2, 3)], lambda L, a, b: L.linalg.solve(a, b, left=False)),
    "inv": ([(3, 3)], lambda L, a: L.linalg.inv(a)),
    "det": ([(2, 3, 3)], lambda L, a: L.linalg.det(a)),
    "slogdet logdet": ([(3, 3)], lambda L, a: [L.linalg.slogdet(a).logabsdet, L.logdet(a @ a.mT)]),
}


@pytest.mark.parametrize("case", list(GRADIENTS))
def test_gradients_match_torch(case):
    shapes, fn = GRADIENTS[case]
    arrays = [_matrix(s, i) for i, s in enumerate(shapes)]
    grads = []
    for L in (kiln, torch):
        xs = [L.tensor(a, dtype=L.float64, requires_grad=True) for a in arrays]
        outs = fn(L, *xs)
        outs = outs if isinstance(outs, list) else [outs]
        total = sum((o * L.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum() for o in outs)
        grads.append([g.numpy() for g in L.autograd.grad(total, xs)])
    for kg, tg in zip(*grads):
        np.testing.assert_allclose(kg, tg, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", list(GRADIENTS))
def test_gradcheck(case):
    shapes, fn = GRADIENTS[case]
    xs = tuple(kiln.tensor(_matrix(s, i), dtype=kiln.float64, requires_grad=True) for i, s in enumerate(shapes))

    def outputs(*inputs):
        out = fn(kiln, *inputs)
        return tuple(out) if isinstance(out, list) else out

    assert kiln.autograd.gradcheck(outputs, xs)
