"""cdist against torch: p = 2 through both compute modes, p = 0, 1, 3, inf,
batch broadcasting, non-contiguous and empty inputs, gradients (0 at zero
distances, as torch), gradcheck, errors."""

import math

import pytest
import torch

import kiln
from nn_compare import close, grad_pair, pair
from torch_compare import assert_same_error

MODES = ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"]
SHAPES = [((4, 3), (5, 3)), ((30, 4), (7, 4)), ((2, 6, 3), (2, 5, 3)), ((2, 1, 3, 4), (5, 2, 4))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("s1,s2", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cdist_euclidean(mode, s1, s2, dtype):
    k1, t1 = pair(s1, dtype, requires_grad=True)
    k2, t2 = pair(s2, dtype, requires_grad=True, seed=1)
    ko, to = kiln.cdist(k1, k2, compute_mode=mode), torch.cdist(t1, t2, compute_mode=mode)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {}
    close(ko, to, **tol)
    grad_pair(ko, to)
    close(k1.grad, t1.grad, **tol)
    close(k2.grad, t2.grad, **tol)


@pytest.mark.parametrize("p", [0.0, 1.0, 3.0, 0.5, math.inf])
def test_cdist_other_p(p):
    k1, t1 = pair((4, 3), "float64", requires_grad=True)
    k2, t2 = pair((2, 5, 3), "float64", requires_grad=True, seed=1)
    ko, to = kiln.cdist(k1, k2, p), torch.cdist(t1, t2, p)
    close(ko, to)
    grad_pair(ko, to)
    close(k1.grad, t1.grad)
    close(k2.grad, t2.grad)


@pytest.mark.parametrize("mode", MODES)
def test_cdist_zero_distance_gradient(mode):
    k1, t1 = pair((3, 4), "float64", requires_grad=True)
    k2, t2 = k1.detach().clone(), t1.detach().clone()
    ko, to = kiln.cdist(k1, k2, compute_mode=mode), torch.cdist(t1, t2, compute_mode=mode)
    close(ko, to, atol=1e-7, rtol=0)
    ko.sum().backward()
    to.sum().backward()
    close(k1.grad, t1.grad)


def test_cdist_noncontiguous_empty_and_gradcheck():
    k1, t1 = pair((3, 4), noncontiguous=True)
    k2, t2 = pair((5, 4), noncontiguous=True, seed=2)
    close(kiln.cdist(k1, k2), torch.cdist(t1, t2))
    for s1, s2 in [((0, 3), (4, 3)), ((2, 0), (3, 0))]:
        k1, t1 = pair(s1)
        k2, t2 = pair(s2, seed=1)
        close(kiln.cdist(k1, k2), torch.cdist(t1, t2))
    k1, _ = pair((3, 2), "float64", requires_grad=True)
    k2, _ = pair((4, 2), "float64", requires_grad=True, seed=1)
    for p in (1.0, 2.0, 3.0):
        assert kiln.autograd.gradcheck(lambda a, b: kiln.cdist(a, b, p), (k1, k2))
    assert kiln.autograd.gradcheck(lambda a, b: kiln.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), (k1, k2))


def test_cdist_errors():
    k, t = pair((2, 3))
    k1, t1 = pair((3,))
    k4, t4 = pair((2, 4))
    assert_same_error(lambda: kiln.cdist(k1, k), lambda: torch.cdist(t1, t))
    assert_same_error(lambda: kiln.cdist(k, k4), lambda: torch.cdist(t, t4))
    assert_same_error(lambda: kiln.cdist(k, k, -1.0), lambda: torch.cdist(t, t, -1.0))
    assert_same_error(lambda: kiln.cdist(k, k, compute_mode="bad"), lambda: torch.cdist(t, t, compute_mode="bad"))
    ki, ti = kiln.ones(2, 3, dtype=kiln.int64), torch.ones(2, 3, dtype=torch.int64)
    assert_same_error(lambda: kiln.cdist(ki, ki), lambda: torch.cdist(ti, ti))
