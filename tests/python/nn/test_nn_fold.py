"""F.unfold / F.fold (the im2col / col2im ops) and nn.Unfold / nn.Fold against
torch: values and gradients over dtypes, kernels, dilations, paddings, strides,
batched and unbatched inputs; gradchecks (both ops are each other's
derivative, so also the double backward); PyTorch's errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from nn_compare import FLOATS, REDUCED, close, grad_pair, pair
from torch_compare import assert_same_error

# (input shape, kwargs): unfold's input; fold's is unfold's output.
CASES = [
    ((2, 3, 5, 5), {"kernel_size": 2}),
    ((2, 3, 6, 7), {"kernel_size": (2, 3), "stride": (2, 1)}),
    ((1, 2, 7, 7), {"kernel_size": 3, "padding": 1}),
    ((2, 2, 9, 8), {"kernel_size": (3, 2), "dilation": (2, 1), "padding": (2, 1), "stride": (1, 3)}),
    ((3, 6, 6), {"kernel_size": 3, "stride": 2}),                          # unbatched
    ((0, 3, 5, 5), {"kernel_size": 2}),                                     # empty batch
    ((2, 4, 4, 4), {"kernel_size": 4}),                                     # one block
    ((1, 1, 1, 1), {"kernel_size": 2, "padding": 1}),                       # all but one tap in the padding
    ((2, 3, 8, 8), {"kernel_size": [3, 3], "dilation": 3, "padding": 2, "stride": 2}),
]


def tol(dtype):
    return {"rtol": 2e-2, "atol": 2e-2} if dtype in REDUCED else {}


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_unfold(case, dtype):
    shape, kwargs = CASES[case]
    kx, tx = pair(shape, dtype, requires_grad=True)
    ko, to = KF.unfold(kx, **kwargs), TF.unfold(tx, **kwargs)
    close(ko, to)                                   # a copy: exact in every dtype
    if to.numel():
        grad_pair(ko, to)
        close(kx.grad, tx.grad, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fold(case, dtype):
    shape, kwargs = CASES[case]
    cols = TF.unfold(torch.zeros(shape), **kwargs).shape
    kc, tc = pair(tuple(cols), dtype, requires_grad=True, seed=3)
    size = shape[-2:]
    ko, to = KF.fold(kc, size, **kwargs), TF.fold(tc, size, **kwargs)
    close(ko, to, **tol(dtype))
    if to.numel():
        grad_pair(ko, to)
        close(kc.grad, tc.grad)


def test_fold_noncontiguous_input_and_overlaps_sum():
    kc, tc = pair((2, 20, 6), noncontiguous=True)            # a transposed view: not contiguous
    assert not kc.is_contiguous()
    close(KF.fold(kc, (3, 4), 2, stride=(1, 2), padding=(0, 1)), TF.fold(tc, (3, 4), 2, stride=(1, 2), padding=(0, 1)))
    ones = torch.ones(1, 4, 9)                                # 2x2 kernel over a 4x4 image, stride 1: 9 blocks
    kfold = KF.fold(kiln.ones(1, 4, 9), 4, 2)
    close(kfold, TF.fold(ones, 4, 2))
    assert float(kfold[0, 0, 1, 1]) == 4.0                    # an inner pixel is read by four blocks


def test_unfold_noncontiguous_input():
    kx, tx = pair((2, 3, 6, 5), noncontiguous=True)
    close(KF.unfold(kx, 2, stride=2), TF.unfold(tx, 2, stride=2))


def test_bool_and_integer_dtypes():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 2, size=(2, 2, 5, 5)).astype(bool)
    kx, tx = kiln.tensor(values), torch.tensor(values)
    close(KF.unfold(kx, 2, stride=1), TF.unfold(tx, 2, stride=1))        # torch runs bool
    kc, tc = KF.unfold(kx, 2), TF.unfold(tx, 2)
    close(KF.fold(kc, 5, 2), TF.fold(tc, 5, 2))                          # overlapping trues stay true
    for dtype in ["int64", "int32", "uint8"]:
        ki, ti = kx.to(getattr(kiln, dtype)), tx.to(getattr(torch, dtype))
        assert_same_error(lambda: KF.unfold(ki, 2), lambda: TF.unfold(ti, 2))
        kc2, tc2 = kiln.zeros(2, 8, 16, dtype=getattr(kiln, dtype)), torch.zeros(2, 8, 16, dtype=getattr(torch, dtype))
        assert_same_error(lambda: KF.fold(kc2, 5, 2), lambda: TF.fold(tc2, 5, 2))


def test_gradcheck_and_double_backward():
    kx, _ = pair((1, 2, 5, 4), "float64", requires_grad=True)
    assert kiln.autograd.gradcheck(lambda x: KF.unfold(x, (2, 3), dilation=1, padding=1, stride=(2, 1)), (kx,))
    kc, _ = pair((2, 8, 12), "float64", requires_grad=True)
    assert kiln.autograd.gradcheck(lambda c: KF.fold(c, (4, 5), 2, stride=(2, 1), padding=(1, 0)), (kc,))
    assert kiln.autograd.gradgradcheck(lambda x: KF.unfold(x, 2, padding=1), (kx,))
    assert kiln.autograd.gradgradcheck(lambda c: KF.fold(c, (4, 5), 2, stride=(2, 1), padding=(1, 0)), (kc,))


def test_double_backward_matches_torch():
    kx, tx = pair((1, 2, 5, 5), "float64", requires_grad=True)

    def second(lib, F, x):
        y = F.unfold(x, 3, padding=1, stride=2)
        (gx,) = lib.autograd.grad((y * y).sum(), (x,), create_graph=True)
        return (gx * gx * x).sum()

    ks, ts = second(kiln, KF, kx), second(torch, TF, tx)
    close(ks, ts)
    ks.backward()
    ts.backward()
    close(kx.grad, tx.grad)


def test_modules_match_torch():
    kunfold, tunfold = kiln.nn.Unfold((2, 3), dilation=2, padding=1, stride=(1, 2)), torch.nn.Unfold(
        (2, 3), dilation=2, padding=1, stride=(1, 2))
    kfold, tfold = kiln.nn.Fold(5, 2), torch.nn.Fold(5, 2)
    assert repr(kunfold) == repr(tunfold) and repr(kfold) == repr(tfold)
    kx, tx = pair((2, 3, 6, 7), requires_grad=True)
    close(kunfold(kx), tunfold(tx))
    kc, tc = pair((2, 12, 16))
    close(kfold(kc), tfold(tc))
    # the patch-matmul round trip that makes unfold useful: a convolution
    kw, tw = pair((4, 3, 2, 2), seed=1)
    kconv = (kw.reshape(4, -1) @ KF.unfold(kx, 2)).reshape(2, 4, 5, 6)
    close(kconv, TF.conv2d(tx, tw), rtol=1e-4, atol=1e-5)


UNFOLD_ERRORS = [
    ((2, 3, 5, 5), {"kernel_size": 0}),
    ((2, 3, 5, 5), {"kernel_size": 2, "dilation": 0}),
    ((2, 3, 5, 5), {"kernel_size": 2, "padding": -1}),
    ((2, 3, 5, 5), {"kernel_size": 2, "stride": 0}),
    ((2, 3, 5, 5), {"kernel_size": 0, "stride": 0}),                      # the first failing check wins
    ((2, 3, 5, 5), {"kernel_size": 6}),
    ((2, 3, 5, 5), {"kernel_size": 2, "dilation": 5}),
    # a window one wider than the input, with stride 2: (4 - 5) / 2 + 1 blocks is 0 (floor), not 1 (truncation)
    ((1, 1, 6, 4), {"kernel_size": (2, 3), "dilation": 2, "stride": 2}),
    ((1, 1, 4, 6), {"kernel_size": 5, "stride": 3}),
    ((2, 3, 0, 5), {"kernel_size": 2}),
    ((2, 0, 5, 5), {"kernel_size": 2}),
    ((0, 5, 5), {"kernel_size": 2}),
    ((5, 5), {"kernel_size": 2}),                                         # IndexError, as torch
    ((5,), {"kernel_size": 2}),
    ((), {"kernel_size": 2}),
    ((2, 3, 5, 5, 1), {"kernel_size": 2}),
]


@pytest.mark.parametrize("case", range(len(UNFOLD_ERRORS)))
def test_unfold_errors(case):
    shape, kwargs = UNFOLD_ERRORS[case]
    kx, tx = pair(shape)
    assert_same_error(lambda: KF.unfold(kx, **kwargs), lambda: TF.unfold(tx, **kwargs))


FOLD_ERRORS = [
    ((2, 12, 16), 5, {"kernel_size": 0}),
    ((2, 12, 16), 5, {"kernel_size": 2, "stride": 0}),
    ((2, 12, 16), 5, {"kernel_size": 2, "dilation": 0}),
    ((2, 12, 16), 5, {"kernel_size": 2, "padding": -1}),
    ((2, 12, 16), 5, {"kernel_size": 0, "dilation": 0}),
    ((2, 12, 16), 6, {"kernel_size": 2}),                                 # block count mismatch
    ((2, 12, 16), 5, {"kernel_size": 2, "stride": 2}),
    ((2, 10, 16), 5, {"kernel_size": 2}),                                 # rows not divisible by the kernel
    ((2, 12, 16), (-1, 5), {"kernel_size": 2}),
    ((2, 12, 1), 1, {"kernel_size": 2}),
    ((1, 2, 12, 16), 5, {"kernel_size": 2}),                              # rank
    ((16,), 5, {"kernel_size": 2}),
    ((), 5, {"kernel_size": 2}),
    ((2, 0, 16), 5, {"kernel_size": 2}),
    ((2, 12, 0), 5, {"kernel_size": 2}),
    ((0, 16), 5, {"kernel_size": 2}),
]


@pytest.mark.parametrize("case", range(len(FOLD_ERRORS)))
def test_fold_errors(case):
    shape, size, kwargs = FOLD_ERRORS[case]
    kc, tc = pair(shape)
    assert_same_error(lambda: KF.fold(kc, size, **kwargs), lambda: TF.fold(tc, size, **kwargs))


def test_argument_list_lengths():
    kx, tx = pair((2, 3, 5, 5))
    assert_same_error(lambda: KF.unfold(kx, (2, 2, 2)), lambda: TF.unfold(tx, (2, 2, 2)), message=False)
    kc, tc = pair((2, 12, 16))
    assert_same_error(lambda: KF.fold(kc, (5, 5, 5), 2), lambda: TF.fold(tc, (5, 5, 5), 2), message=False)
