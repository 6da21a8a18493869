"""F.pad's reflect / replicate / circular modes against torch: 1-, 2- and 3-d
padding, negative pads, non-contiguous inputs, gradients, gradcheck, errors."""

import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import close, grad_pair, pair
from torch_compare import assert_same_error

CASES = [((2, 5), (2, 1)), ((2, 3, 5), (1, 3)), ((2, 3, 5), (-1, 2)), ((1, 2, 4, 5), (1, 2, 3, 0)),
         ((2, 4, 5), (2, 2, 1, 1)), ((1, 2, 3, 4, 5), (1, 1, 2, 0, 2, 1)), ((2, 3, 4, 4), (0, -1, 1, 2))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pad_modes(mode, shape, pad, dtype):
    k, t = pair(shape, dtype, requires_grad=True)
    ko, to = KF.pad(k, pad, mode=mode), TF.pad(t, pad, mode=mode)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_noncontiguous_and_gradcheck(mode):
    k, t = pair((3, 4, 5), noncontiguous=True)
    close(KF.pad(k, (2, 1, 1, 2), mode=mode), TF.pad(t, (2, 1, 1, 2), mode=mode))
    k, _ = pair((1, 2, 3, 4), "float64", requires_grad=True)
    assert kiln.autograd.gradcheck(lambda x: KF.pad(x, (2, 1, 1, 2), mode=mode), (k,))


def test_pad_module_and_int_dtype():
    k, t = pair((2, 3, 4))
    close(kiln.nn.functional.pad(k, (3, 3), mode="replicate"), TF.pad(t, (3, 3), mode="replicate"))
    ki, ti = kiln.arange(12).reshape(1, 3, 4), torch.arange(12).reshape(1, 3, 4)
    close(KF.pad(ki, (2, 2), mode="reflect"), TF.pad(ti, (2, 2), mode="reflect"))


def test_pad_errors():
    k, t = pair((1, 2, 3))
    for mode in ("reflect", "replicate", "circular"):
        assert_same_error(lambda: KF.pad(k, (1, 1, 1, 1, 1, 1), mode=mode),
                          lambda: TF.pad(t, (1, 1, 1, 1, 1, 1), mode=mode))
        k1, t1 = pair((3,))
        assert_same_error(lambda: KF.pad(k1, (1, 1), mode=mode), lambda: TF.pad(t1, (1, 1), mode=mode))
        assert_same_error(lambda: KF.pad(k, (1, 1), mode=mode, value=2.0),
                          lambda: TF.pad(t, (1, 1), mode=mode, value=2.0))
    assert_same_error(lambda: KF.pad(k, (3, 3), mode="reflect"), lambda: TF.pad(t, (3, 3), mode="reflect"))
    assert_same_error(lambda: KF.pad(k, (4, 0), mode="circular"), lambda: TF.pad(t, (4, 0), mode="circular"))
    assert_same_error(lambda: KF.pad(k, (1, 1), mode="foo"), lambda: TF.pad(t, (1, 1), mode="foo"))


EMPTY_CASES = [((2, 0, 3), (1, 1)), ((0, 2, 3), (1, 1)), ((2, 0, 3, 3), (1, 1, 1, 1)), ((2, 3, 0, 3), (1, 1, 1, 1)),
               ((0, 3), (1, 1)), ((3, 0), (0, 0)), ((1, 2, 0, 3, 3), (1, 1, 1, 1, 1, 1)), ((0, 2, 3, 3), (1, 1, 1, 1))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", EMPTY_CASES)
def test_pad_of_empty_inputs_matches_torch(mode, shape, pad):
    # reflect and replicate refuse an empty non-batch dim; only the batch dim may be 0.
    k, t = kiln.ones(shape), torch.ones(shape)
    try:
        expected = TF.pad(t, pad, mode=mode)
    except RuntimeError:
        assert_same_error(lambda: KF.pad(k, pad, mode=mode), lambda: TF.pad(t, pad, mode=mode))
        return
    assert tuple(KF.pad(k, pad, mode=mode).shape) == tuple(expected.shape)
