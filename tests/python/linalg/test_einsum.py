"""kiln.einsum against torch.einsum: values, shapes and gradients over the
contractions models use (attention, bilinear, batched products, outer products,
transposes, diagonals, ellipses), and its equation errors."""

import numpy as np
import pytest
import torch

import kiln

# equation -> operand shapes
CASES = {
    "bij,bjk->bik": [(2, 3, 4), (2, 4, 5)],
    "bij,bjk": [(2, 3, 4), (2, 4, 5)],
    "bij,bjk,kl->bil": [(2, 3, 4), (2, 4, 5), (5, 3)],
    "...ij,...jk->...ik": [(2, 3, 4), (2, 4, 5)],
    "...ij,jk->...ik": [(2, 2, 3, 4), (4, 5)],
    "bhid,bhjd->bhij": [(2, 3, 4, 5), (2, 3, 6, 5)],
    "bhij,bhjd->bhid": [(2, 3, 4, 6), (2, 3, 6, 5)],
    "bn,anm,bm->ba": [(2, 3), (4, 3, 5), (2, 5)],
    "ij->ji": [(3, 5)],
    "i,j->ij": [(3,), (4,)],
    "ii->i": [(3, 3)],
    "bii->bi": [(2, 3, 3)],
    "ij,jk": [(3, 4), (4, 2)],
    "i,i->": [(5,), (5,)],
    "ij,ij->ij": [(3, 4), (3, 4)],
    "b i d, b j d -> b i j": [(2, 3, 4), (2, 5, 4)],
    "ij,kj->ik": [(3, 4), (1, 4)],
}


def operands(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("equation", list(CASES))
def test_einsum_matches_torch(equation):
    arrays = operands(CASES[equation], len(equation))
    got = kiln.einsum(equation, *[kiln.tensor(a) for a in arrays])
    want = torch.einsum(equation, *[torch.tensor(a) for a in arrays])
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("equation", list(CASES))
def test_einsum_gradients_match_torch(equation):
    arrays = operands(CASES[equation], len(equation) + 1)
    grads = []
    for lib in (kiln, torch):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = lib.einsum(equation, *xs)
        seed = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        grads.append(lib.autograd.grad(out, xs, seed))
    for kg, tg in zip(*grads):
        np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=1e-10, atol=1e-12)


def test_einsum_takes_a_list_of_operands():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    got = kiln.einsum("ij,jk->ik", [kiln.tensor(a), kiln.tensor(b)])
    np.testing.assert_allclose(got.numpy(), a @ b)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(2, 3)]),
    ("ij->ik", [(2, 3)]),
    ("ijk->ij", [(2, 3)]),
    ("ij->ii", [(2, 3)]),
    ("ij,jk->ik", [(2, 3), (4, 5)]),
])
def test_einsum_errors_match_torch(equation, shapes):
    from torch_compare import assert_same_error

    # torch's shape mismatch texts name its internal remapping; the type is what matters there
    assert_same_error(lambda: kiln.einsum(equation, *[kiln.ones(*s) for s in shapes]),
                      lambda: torch.einsum(equation, *[torch.ones(*s) for s in shapes]),
                      message=equation != "ij,jk->ik" or len(shapes) == 1)
