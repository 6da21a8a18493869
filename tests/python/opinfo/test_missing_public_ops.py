"""The public ops issue 31 item 3 added, each against torch: torch.masked's reductions and
normalisations, torch.signal.windows, nonzero_static, resize_as_, Tensor.__rdiv__/cfloat/cdouble,
hash_tensor (kiln has no uint64: the same 64 bits as int64); and the clear refusals of what kiln
has no counterpart of (complex32, sparse layouts). The OpInfo test runs them over torch's samples too.
"""

from __future__ import annotations

import pytest
import torch

import kiln
from tolerant_compare import assert_fails_alike, assert_matches


def _k(t: torch.Tensor, requires_grad: bool = False):
    k = kiln.from_numpy(t.detach().numpy().copy())
    return k.requires_grad_() if requires_grad else k


def _floats(*shape):
    return torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(7))


def _mask(*shape):
    mask = torch.rand(*shape, generator=torch.Generator().manual_seed(3)) > 0.4
    mask[1] = False  # a fully masked-out row: the identity (or NaN) there
    return mask


REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "norm", "var", "std", "logsumexp"]
NORMALISATIONS = ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_masked_reductions_match_torch_with_their_gradients(name, keepdim):
    x, mask = _floats(3, 4), _mask(3, 4)
    kx, tx = _k(x, True), x.clone().requires_grad_()
    k = getattr(kiln.masked, name)(kx, dim=1, keepdim=keepdim, mask=_k(mask))
    t = getattr(torch.masked, name)(tx, dim=1, keepdim=keepdim, mask=mask)
    assert_matches(k, t.detach())
    # the gradient through the rows that keep something (the masked-out row is inf/NaN for some)
    keep = torch.masked._output_mask(getattr(torch.masked, name), tx, dim=1, keepdim=keepdim, mask=mask)
    upstream = torch.where(keep, _floats(*t.shape), 0)
    kiln.where(_k(keep), k, 0).backward(_k(upstream))
    torch.where(keep, t, 0).backward(upstream)
    assert_matches(kx.grad, tx.grad)


@pytest.mark.parametrize("name", NORMALISATIONS)
def test_masked_normalisations_match_torch(name):
    x, mask = _floats(3, 4), _mask(3, 4)
    assert_matches(getattr(kiln.masked, name)(_k(x), 1, mask=_k(mask)), getattr(torch.masked, name)(x, 1, mask=mask))


def test_masked_all_dims_argmax_median_normalize_logaddexp_match_torch():
    x, mask = _floats(3, 4), _mask(3, 4)
    kx, km = _k(x), _k(mask)
    assert_matches(kiln.masked.sum(kx, mask=km), torch.masked.sum(x, mask=mask))
    assert_matches(kiln.masked.argmax(kx, 1, mask=km), torch.masked.argmax(x, 1, mask=mask))
    assert_matches(kiln.masked.median(kx, 1, mask=km), torch.masked.median(x, 1, mask=mask))
    assert_matches(kiln.masked.normalize(kx, 2.0, 1, mask=km), torch.masked.normalize(x, 2.0, 1, mask=mask))
    y = _floats(3, 4).flip(0)
    assert_matches(kiln.masked.logaddexp(kx, _k(y), input_mask=km, other_mask=km.logical_not()),
                   torch.masked.logaddexp(x, y, input_mask=mask, other_mask=mask.logical_not()))
    ints = torch.arange(12).reshape(3, 4)  # small integers sum as int64, as torch
    assert_matches(kiln.masked.sum(_k(ints.to(torch.int32)), 0, mask=km), torch.masked.sum(ints.to(torch.int32), 0,
                                                                                           mask=mask))


def test_masked_mean_of_an_integer_tensor_fails_as_torch():
    ints = torch.arange(6).reshape(2, 3)
    assert_fails_alike(lambda: kiln.masked.mean(_k(ints), mask=_k(ints > 1)), lambda: torch.masked.mean(ints, mask=ints > 1))


WINDOWS = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "hamming", "hann", "kaiser", "nuttall"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_signal_windows_match_torch(name, sym, dtype):
    for length in (0, 1, 2, 7, 16):
        k = getattr(kiln.signal.windows, name)(length, sym=sym, dtype=getattr(kiln, dtype))
        t = getattr(torch.signal.windows, name)(length, sym=sym, dtype=getattr(torch, dtype))
        assert_matches(k, t)


def test_signal_windows_with_parameters_and_errors_match_torch():
    kw, tw = kiln.signal.windows, torch.signal.windows
    assert_matches(kw.general_cosine(9, a=[0.5, 0.3, 0.2]), tw.general_cosine(9, a=[0.5, 0.3, 0.2]))
    assert_matches(kw.general_hamming(9, alpha=0.6, sym=False), tw.general_hamming(9, alpha=0.6, sym=False))
    assert_matches(kw.kaiser(12, beta=3.5), tw.kaiser(12, beta=3.5))
    assert_matches(kw.gaussian(10, std=2.5), tw.gaussian(10, std=2.5))
    assert_matches(kw.exponential(10, center=3.0, tau=2.0, sym=False), tw.exponential(10, center=3.0, tau=2.0, sym=False))
    assert_fails_alike(lambda: kw.hann(-1), lambda: tw.hann(-1))
    assert_fails_alike(lambda: kw.gaussian(5, std=0), lambda: tw.gaussian(5, std=0))
    assert_fails_alike(lambda: kw.cosine(5, dtype=kiln.int64), lambda: tw.cosine(5, dtype=torch.int64))


@pytest.mark.parametrize("size", [0, 2, 4, 7])
def test_nonzero_static_pads_or_truncates_as_torch(size):
    t = torch.tensor([[1, 0, 2], [0, 3, 4]])
    assert_matches(kiln.nonzero_static(_k(t), size=size), torch.nonzero_static(t, size=size))
    assert_matches(_k(t).nonzero_static(size=size, fill_value=9), t.nonzero_static(size=size, fill_value=9))
    assert_fails_alike(lambda: kiln.nonzero_static(_k(t), size=-1), lambda: torch.nonzero_static(t, size=-1))


def test_resize_as_rdiv_and_complex_conversions_match_torch():
    x, other = _floats(2, 3), _floats(3, 2)
    assert_matches(kiln.resize_as_(_k(x).clone(), _k(other)), torch.resize_as_(x.clone(), other))
    assert_matches(_k(x).__rdiv__(2.0), x.__rdiv__(2.0))
    assert_matches(_k(x).cfloat(), x.cfloat())
    assert_matches(_k(x).cdouble(), x.cdouble())
    with pytest.raises(NotImplementedError, match="kiln has no complex32"):
        _k(x).chalf()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "bool"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, True), (-1, False), ((0, 2), False), ((1,), True)])
def test_hash_tensor_gives_torchs_bits(dtype, dim, keepdim):
    t = (_floats(3, 5, 4) * 10).to(getattr(torch, dtype))
    want = torch.hash_tensor(t) if dim is None else torch.hash_tensor(t, dim, keepdim=keepdim)
    got = kiln.hash_tensor(_k(t)) if dim is None else kiln.hash_tensor(_k(t), dim, keepdim=keepdim)
    assert got.dtype == kiln.int64  # kiln has no uint64: torch's bits, read as int64
    assert_matches(got, want.view(torch.int64))


def test_hash_tensor_errors_match_torch():
    empty = torch.zeros(0, 3)
    assert_fails_alike(lambda: kiln.hash_tensor(_k(empty)), lambda: torch.hash_tensor(empty))
    assert_fails_alike(lambda: kiln.hash_tensor(_k(empty), 0), lambda: torch.hash_tensor(empty, 0))
    assert_fails_alike(lambda: kiln.hash_tensor(_k(empty), 1, mode=1), lambda: torch.hash_tensor(empty, 1, mode=1))


def test_sparse_entry_points_raise_not_implemented():
    x = kiln.ones(2, 2)
    for call in (x.to_sparse, x.to_sparse_csr, lambda: kiln.sparse.mm(x, x), lambda: kiln.sparse.sum(x),
                 lambda: kiln.sparse_coo_tensor([[0]], [1.0], (1,))):
        with pytest.raises(NotImplementedError, match="kiln has no sparse layouts"):
            call()
