"""F.interpolate's nearest and linear / bilinear / trilinear modes against torch:
size and scale_factor, align_corners, up and down sampling, gradients,
gradcheck, errors."""

import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import close, grad_pair, pair
from torch_compare import assert_same_error

CASES = [
    ((2, 3, 7), "nearest", {"size": 12}),
    ((2, 3, 7), "nearest", {"scale_factor": 0.5}),
    ((1, 2, 5, 6), "nearest", {"size": (8, 3)}),
    ((1, 2, 5, 6), "nearest", {"scale_factor": 2.5}),
    ((1, 1, 3, 4, 5), "nearest", {"size": (5, 2, 7)}),
    ((2, 3, 7), "linear", {"size": 12}),
    ((1, 2, 5, 6), "bilinear", {"size": (8, 3)}),
    ((1, 2, 5, 6), "bilinear", {"scale_factor": 1.7}),
    ((1, 2, 5, 6), "bilinear", {"scale_factor": (2.0, 0.5)}),
    ((1, 2, 5, 6), "bilinear", {"size": (1, 9)}),
    ((1, 1, 3, 4, 5), "trilinear", {"size": (5, 2, 7)}),
]


# align_corners applies to the linear modes only (its error with nearest is tested below).
PARAMS = [(*case, align) for case in CASES for align in ([None] if case[1] == "nearest" else [None, False, True])]


@pytest.mark.parametrize("shape,mode,kw,align_corners", PARAMS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate(shape, mode, kw, align_corners, dtype):
    k, t = pair(shape, dtype, requires_grad=True)
    ko = KF.interpolate(k, mode=mode, align_corners=align_corners, **kw)
    to = TF.interpolate(t, mode=mode, align_corners=align_corners, **kw)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


def test_interpolate_noncontiguous_recompute_and_gradcheck():
    k, t = pair((6, 5, 3, 1), noncontiguous=True)
    close(KF.interpolate(k, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True),
          TF.interpolate(t, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True))
    k, _ = pair((1, 2, 3, 4), "float64", requires_grad=True)
    assert kiln.autograd.gradcheck(lambda x: KF.interpolate(x, size=(5, 3), mode="bilinear"), (k,))
    assert kiln.autograd.gradcheck(lambda x: KF.interpolate(x, size=(5, 3), mode="bilinear", align_corners=True),
                                   (k,))
    assert kiln.autograd.gradcheck(lambda x: KF.interpolate(x, scale_factor=2, mode="nearest"), (k,))


def test_interpolate_errors():
    k, t = pair((1, 1, 4, 4))
    assert_same_error(lambda: KF.interpolate(k, size=3, align_corners=True),
                      lambda: TF.interpolate(t, size=3, align_corners=True))
    assert_same_error(lambda: KF.interpolate(k, size=3, scale_factor=2.0),
                      lambda: TF.interpolate(t, size=3, scale_factor=2.0))
    assert_same_error(lambda: KF.interpolate(k), lambda: TF.interpolate(t))
    assert_same_error(lambda: KF.interpolate(k, size=3, mode="linear"), lambda: TF.interpolate(t, size=3, mode="linear"))
    assert_same_error(lambda: KF.interpolate(k, size=3, mode="bogus"), lambda: TF.interpolate(t, size=3, mode="bogus"))
