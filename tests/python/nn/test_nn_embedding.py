"""embedding against torch: index shapes, dtypes, padding_idx, duplicate
indices, scale_grad_by_freq, gradients, gradcheck, out-of-range indices."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
from nn_compare import FLOATS, REDUCED, F, close, grad_pair, index_pair, pair
from torch_compare import assert_same_error


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("index_shape", [(5,), (2, 3), (), (0,), (2, 0, 3)])
@pytest.mark.parametrize("padding_idx", [-1, 2])
@pytest.mark.parametrize("scale", [False, True])
def test_embedding(dtype, index_shape, padding_idx, scale):
    kw, tw = pair((6, 4), dtype, requires_grad=True)
    rng = np.random.default_rng(0)
    ki, ti = index_pair(rng.integers(0, 6, size=index_shape))
    ko = F.embedding(kw, ki, padding_idx, scale)
    to = torch.embedding(tw, ti, padding_idx, scale)
    close(ko, to)
    grad_pair(ko, to)
    close(kw.grad, tw.grad, **({"rtol": 1e-2, "atol": 1e-2} if dtype in REDUCED else {}))


def test_duplicates_accumulate_and_padding_gets_no_gradient():
    kw, tw = pair((5, 3), requires_grad=True)
    ki, ti = index_pair([1, 1, 1, 3, 0, 3])
    ko, to = F.embedding(kw, ki, 0), TF.embedding(ti, tw, padding_idx=0)
    close(ko, to)
    grad_pair(ko, to)
    close(kw.grad, tw.grad)
    assert np.all(kw.grad.numpy()[0] == 0)


def test_noncontiguous_weight_and_int32_indices():
    kw, tw = pair((4, 7), noncontiguous=True)
    ki = kiln.tensor(np.array([[0, 2], [3, 3]], dtype=np.int32))
    ti = torch.tensor([[0, 2], [3, 3]], dtype=torch.int32)
    close(F.embedding(kw, ki), TF.embedding(ti, tw))


def test_gradcheck():
    kw, _ = pair((5, 3), "float64", requires_grad=True)
    ki, _ = index_pair([[0, 4, 4], [2, 1, 0]])
    # padding_idx and scale_grad_by_freq change the gradient on purpose (not the true one): plain only.
    assert kiln.autograd.gradcheck(lambda w: F.embedding(w, ki), (kw,))


@pytest.mark.parametrize("bad", [6, -1, 100])
def test_out_of_range(bad):
    kw, tw = pair((6, 4))
    ki, ti = index_pair([0, bad])
    assert_same_error(lambda: F.embedding(kw, ki), lambda: TF.embedding(ti, tw))


def test_errors():
    kw, tw = pair((6,))
    ki, ti = index_pair([0])
    assert_same_error(lambda: F.embedding(kw, ki), lambda: TF.embedding(ti, tw))
    kw, tw = pair((6, 2))
    kf, tf_ = pair((3,))
    assert_same_error(lambda: F.embedding(kw, kf), lambda: TF.embedding(tf_, tw), message=False)
