"""kiln.stft / kiln.istft against torch: spectra, round trips, gradients, errors; and the
complex mean they rely on."""

import functools
import re

import numpy as np
import pytest
import torch

import kiln
from complex_compare import assert_close
from torch_compare import assert_same_error, raised, to_kiln as _k


_close = functools.partial(assert_close, rtol=1e-10, atol=1e-10)


SIGNAL = torch.randn(2, 1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0))

CASES = [
    dict(n_fft=256, hop_length=64, window=256),
    dict(n_fft=256, window=256, normalized=True),
    dict(n_fft=200, win_length=150, window=150, hop_length=40),
    dict(n_fft=128, window=128, center=False),
    dict(n_fft=256, window=256, onesided=False),
    dict(n_fft=64, hop_length=16, window=64, pad_mode="constant"),
]


def _args(case, m):
    out = dict(case)
    if "window" in out:
        out["window"] = m.hann_window(out["window"], dtype=m.float64)
    return out


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("batched", [True, False])
def test_stft_matches_torch_and_istft_inverts_it(case, batched):
    x = SIGNAL if batched else SIGNAL[0]
    kspec = kiln.stft(_k(x), return_complex=True, **_args(case, kiln))
    tspec = torch.stft(x, return_complex=True, **_args(case, torch))
    _close(kspec, tspec)
    icase = {k: v for k, v in case.items() if k != "pad_mode"}
    if not icase.get("center", True):
        return  # a Hann window is zero at the ends, so torch's istft refuses center=False (see the error test)
    ky = kiln.istft(kspec, length=1000, **_args(icase, kiln))
    ty = torch.istft(tspec, length=1000, **_args(icase, torch))
    _close(ky, ty)
    _close(ky, x)


def test_stft_gradient_matches_torch():
    x = SIGNAL[:1]
    kx, tx = _k(x).requires_grad_(), x.clone().requires_grad_()
    case = dict(n_fft=128, hop_length=32)
    kspec = kiln.stft(kx, window=kiln.hann_window(128, dtype=kiln.float64), return_complex=True, **case)
    tspec = torch.stft(tx, window=torch.hann_window(128, dtype=torch.float64), return_complex=True, **case)
    kiln.abs(kspec).pow(2).sum().backward()
    torch.abs(tspec).pow(2).sum().backward()
    _close(kx.grad, tx.grad, rtol=1e-8, atol=1e-8)


def test_stft_return_complex_false_and_missing_window():
    x = SIGNAL[0]
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        k = kiln.stft(_k(x), 128, window=kiln.hann_window(128, dtype=kiln.float64), return_complex=False)
    with pytest.warns(UserWarning):
        t = torch.stft(x, 128, window=torch.hann_window(128, dtype=torch.float64), return_complex=False)
    _close(k, t)
    with pytest.warns(UserWarning, match="A window was not provided"):
        k = kiln.stft(_k(x), 64, return_complex=True)
    with pytest.warns(UserWarning):
        t = torch.stft(x, 64, return_complex=True)
    _close(k, t)


def _signal(L):
    return SIGNAL[0] if L is torch else _k(SIGNAL[0])


def _window_gap_spectrum(L):
    return L.stft(_signal(L), 200, win_length=150, window=L.hann_window(150, dtype=L.float64), center=False,
                  return_complex=True)


STFT_ERRORS = {
    "no return_complex": lambda L: L.stft(_signal(L), 64),
    "istft of a real input": lambda L: L.istft(L.ones(33, 4), 64),
}
# torch opens these with a dump of the call's arguments ("stft(torch.DoubleTensor[10], n_fft=64, ...) : ");
# kiln names the function alone: the reason after it must be torch's.
STFT_ERRORS_AFTER_AN_ARGUMENT_DUMP = {
    "n_fft past the signal": lambda L: L.stft(_signal(L)[:10], 64, center=False, return_complex=True),
    "istft window overlap add min": lambda L: L.istft(_window_gap_spectrum(L), 200, win_length=150,
                                                      window=L.hann_window(150, dtype=L.float64), center=False),
}


@pytest.mark.parametrize("name", list(STFT_ERRORS))
def test_errors_match_torch(name):
    assert_same_error(lambda: STFT_ERRORS[name](kiln), lambda: STFT_ERRORS[name](torch))


def _reason(error: BaseException) -> str:
    """The first line of an stft/istft message without the function name and torch's argument dump."""
    return re.sub(r"^i?stft(\(.*\))?\s*:?\s*", "", str(error).splitlines()[0])


@pytest.mark.parametrize("name", list(STFT_ERRORS_AFTER_AN_ARGUMENT_DUMP))
def test_errors_after_torchs_argument_dump_match_torch(name):
    call = STFT_ERRORS_AFTER_AN_ARGUMENT_DUMP[name]
    error = assert_same_error(lambda: call(kiln), lambda: call(torch), message=False)
    assert _reason(error) == _reason(raised(lambda: call(torch)))


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), ((0, 1), False)])
def test_complex_mean_matches_torch(dim, keepdim):
    z = torch.randn(3, 4, 5, dtype=torch.complex128, generator=torch.Generator().manual_seed(1))
    kz = _k(z).requires_grad_()
    tz = z.clone().requires_grad_()
    kout = kz.mean() if dim is None else kz.mean(dim, keepdim=keepdim)
    tout = tz.mean() if dim is None else tz.mean(dim, keepdim=keepdim)
    _close(kout, tout)
    kiln.view_as_real(kout).sum().backward()
    torch.view_as_real(tout).sum().backward()
    _close(kz.grad, tz.grad)
    _close(kiln.mean(_k(z.real), dtype=kiln.complex128), torch.mean(z.real, dtype=torch.complex128))
