"""layer_norm and rms_norm against torch: normalized shapes, optional weight
and bias, eps, dtypes, empty and non-contiguous inputs, gradients, gradcheck, errors."""

import pytest
import torch
import torch.nn.functional as TF

import kiln
from nn_compare import FLOATS, REDUCED, F, close, grad_pair, pair
from torch_compare import assert_same_error

CASES = [((4, 10), (10,)), ((2, 3, 37), (37,)), ((2, 3, 4, 5), (4, 5)), ((5,), (5,)), ((3, 1), (1,)),
         ((2, 300), (300,))]


def tol(dtype):
    return {"rtol": 2e-2, "atol": 2e-2} if dtype in REDUCED else {}


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("shape,normalized", CASES)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm(dtype, shape, normalized, affine):
    k, t = pair(shape, dtype, requires_grad=True)
    kw, tw = pair(normalized, dtype, requires_grad=True, seed=2) if affine != "none" else (None, None)
    kb, tb = pair(normalized, dtype, requires_grad=True, seed=3) if affine == "both" else (None, None)
    ko = F.layer_norm(k, list(normalized), kw, kb, 1e-5)
    to = TF.layer_norm(t, normalized, tw, tb, 1e-5)
    close(ko, to, **tol(dtype))
    grad_pair(ko, to)
    close(k.grad, t.grad, **tol(dtype))
    if kw is not None:
        close(kw.grad, tw.grad, **tol(dtype))
    if kb is not None:
        close(kb.grad, tb.grad, **tol(dtype))


def test_native_layer_norm_statistics():
    k, t = pair((3, 4, 6))
    for kv, tv in zip(F.native_layer_norm(k, [6], None, None, 1e-3), torch.native_layer_norm(t, [6], None, None, 1e-3)):
        close(kv, tv)


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("shape,normalized", CASES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(dtype, shape, normalized, weighted, eps):
    k, t = pair(shape, dtype, requires_grad=True)
    kw, tw = pair(normalized, dtype, requires_grad=True, seed=2) if weighted else (None, None)
    ko = F.rms_norm(k, list(normalized), kw, eps)
    to = TF.rms_norm(t, normalized, tw, eps)
    close(ko, to, **tol(dtype))
    grad_pair(ko, to)
    close(k.grad, t.grad, **tol(dtype))
    if kw is not None:
        close(kw.grad, tw.grad, **tol(dtype))


def test_noncontiguous_and_empty():
    k, t = pair((6, 5), noncontiguous=True)
    close(F.layer_norm(k, [5]), TF.layer_norm(t, (5,)))
    close(F.rms_norm(k, [5]), TF.rms_norm(t, (5,)))
    k, t = pair((0, 5), requires_grad=True)
    ko, to = F.layer_norm(k, [5]), TF.layer_norm(t, (5,))
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


def test_gradcheck():
    k, _ = pair((3, 2, 5), "float64", requires_grad=True)
    kw, _ = pair((5,), "float64", requires_grad=True, seed=4)
    kb, _ = pair((5,), "float64", requires_grad=True, seed=5)
    assert kiln.autograd.gradcheck(lambda x, w, b: F.layer_norm(x, [5], w, b, 1e-5), (k, kw, kb))
    assert kiln.autograd.gradcheck(lambda x: F.layer_norm(x, [2, 5]), (k,))
    assert kiln.autograd.gradcheck(lambda x, w: F.rms_norm(x, [5], w, 1e-6), (k, kw))


def test_errors():
    k, t = pair((3, 4))
    assert_same_error(lambda: F.layer_norm(k, [5]), lambda: TF.layer_norm(t, (5,)))
    kw, tw = pair((3,))
    assert_same_error(lambda: F.layer_norm(k, [4], kw), lambda: TF.layer_norm(t, (4,), tw))
    assert_same_error(lambda: F.layer_norm(k, [4], None, kw), lambda: TF.layer_norm(t, (4,), None, tw))
