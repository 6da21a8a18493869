"""kiln.fft against torch.fft: every transform's values over dims, sizes (trimmed and
padded), norms and dtypes; gradients (complex and real inputs); frequencies, shifts and
the errors."""

import numpy as np
import pytest
import torch

import kiln
from complex_compare import assert_close as _close
from tolerances import tolerance
from torch_compare import assert_same_error, to_kiln as _k


def _input(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=dtype, generator=g)


def _tol(dtype):
    return tolerance(str(dtype), "fft")


ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}


def _dtypes(name):
    return [torch.float32, torch.float64] if name in REAL_ONLY else [torch.float64, torch.complex64, torch.complex128]


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("n", [None, 5, 8, 12])
@pytest.mark.parametrize("dim", [-1, 0])
def test_one_dimensional_transforms_match_torch(name, norm, n, dim):
    for dtype in _dtypes(name):
        x = _input((8, 6), dtype)
        _close(getattr(kiln.fft, name)(_k(x), n=n, dim=dim, norm=norm),
               getattr(torch.fft, name)(x, n=n, dim=dim, norm=norm), **_tol(dtype))


@pytest.mark.parametrize("name", N_D)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("s,dim", [(None, None), ((4, 6), None), ((3, 8), (0, 2)), (None, (1, 0)), ((5,), (1,))])
def test_multi_dimensional_transforms_match_torch(name, norm, s, dim):
    kwargs = {"norm": norm}
    if s is not None:
        kwargs["s"] = s
    if dim is not None:
        kwargs["dim"] = dim
    for dtype in _dtypes(name):
        x = _input((4, 5, 6), dtype, seed=1)
        _close(getattr(kiln.fft, name)(_k(x), **kwargs), getattr(torch.fft, name)(x, **kwargs), **_tol(dtype))


def test_strided_and_integer_inputs():
    x = _input((6, 8), torch.complex128)[::2, 1::2]
    _close(kiln.fft.fft(_k(x).t(), dim=0), torch.fft.fft(x.t(), dim=0), rtol=1e-10, atol=1e-10)
    i = torch.arange(10)
    _close(kiln.fft.fft(_k(i)), torch.fft.fft(i), rtol=1e-5, atol=1e-5)
    _close(kiln.fft.rfft(_k(i)), torch.fft.rfft(i), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,dtype,kwargs", [
    ("fft", torch.complex128, {}), ("ifft", torch.complex128, {"norm": "ortho"}), ("fft", torch.float64, {"n": 9}),
    ("rfft", torch.float64, {}), ("rfft", torch.float64, {"n": 7}), ("irfft", torch.complex128, {}),
    ("irfft", torch.complex128, {"n": 9}), ("hfft", torch.complex128, {}), ("ihfft", torch.float64, {}),
    ("fft2", torch.complex128, {}), ("rfft2", torch.float64, {"norm": "forward"}), ("irfftn", torch.complex128, {}),
    ("rfftn", torch.float64, {"s": (3, 5)}),
])
def test_gradients_match_torch(name, dtype, kwargs):
    x = _input((4, 6), dtype, seed=2)
    kx = _k(x).requires_grad_()
    tx = x.clone().requires_grad_()
    kout, tout = getattr(kiln.fft, name)(kx, **kwargs), getattr(torch.fft, name)(tx, **kwargs)
    weights = _input(tuple(tout.shape), tout.dtype, seed=3)
    kloss = kout * _k(weights)
    tloss = tout * weights
    (kiln.view_as_real(kloss) if kloss.dtype.is_complex else kloss).sum().backward()
    (torch.view_as_real(tloss) if tloss.dtype.is_complex else tloss).sum().backward()
    _close(kx.grad, tx.grad, rtol=1e-9, atol=1e-9)


def test_frequencies_and_shifts_match_torch():
    for n in (1, 4, 7):
        _close(kiln.fft.fftfreq(n), torch.fft.fftfreq(n))
        _close(kiln.fft.rfftfreq(n, d=0.5), torch.fft.rfftfreq(n, d=0.5))
    _close(kiln.fft.fftfreq(6, dtype=kiln.float64), torch.fft.fftfreq(6, dtype=torch.float64))
    x = _input((4, 5), torch.complex64, seed=4)
    for dim in (None, 0, (1,), (-1, 0)):
        _close(kiln.fft.fftshift(_k(x), dim=dim), torch.fft.fftshift(x, dim=dim))
        _close(kiln.fft.ifftshift(_k(x), dim=dim), torch.fft.ifftshift(x, dim=dim))
    spectrum = kiln.fft.fftshift(kiln.fft.fft(_k(x)))
    _close(kiln.fft.ifft(kiln.fft.ifftshift(spectrum)), x.to(torch.complex64), rtol=1e-5, atol=1e-6)


def test_round_trips():
    x = _input((3, 10), torch.float64, seed=5)
    _close(kiln.fft.irfft(kiln.fft.rfft(_k(x)), n=10), x, rtol=1e-12, atol=1e-12)
    z = _input((3, 10), torch.complex128, seed=6)
    _close(kiln.fft.ifftn(kiln.fft.fftn(_k(z))), z, rtol=1e-12, atol=1e-12)


FFT_ERRORS = {
    "bad norm": lambda L: L.fft.fft(L.ones(4), norm="bogus"),
    "n=0": lambda L: L.fft.fft(L.ones(4), n=0),
    "irfft of one point": lambda L: L.fft.irfft(L.ones(1, dtype=L.complex64)),
    "dim out of range": lambda L: L.fft.fft(L.ones(4), dim=2),
    "rfft of complex": lambda L: L.fft.rfft(L.ones(4, dtype=L.complex64)),
    "not a tensor": lambda L: L.fft.fft([1.0, 2.0]),
}


@pytest.mark.parametrize("name", list(FFT_ERRORS))
def test_errors_match_torch(name):
    assert_same_error(lambda: FFT_ERRORS[name](kiln), lambda: FFT_ERRORS[name](torch))


def test_measured_plans_persist_as_fftw_wisdom(tmp_path):
    # Note [FFTs on FFTW]: what FFTW_MEASURE learns is saved under the cache dir and read back
    import os
    import subprocess
    import sys

    script = ("import kiln; x = kiln.randn(6, 96); "
              "y = kiln.fft.irfft(kiln.fft.rfft(x), n=96); print(float((y - x).abs().max()))")
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "on"))
    for _ in range(2):  # the second process starts from the first one's wisdom
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        assert float(out.stdout) < 1e-5
    wisdom = (tmp_path / "on" / "fftw-wisdom-float").read_text()
    assert wisdom.startswith("(fftw-3") and "fftwf_wisdom" in wisdom
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "off"), KILN_FFT_WISDOM="0")
    subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert not (tmp_path / "off").exists()


@pytest.mark.parametrize("shape,dim", [((64, 1024), -1), ((1024, 64), 0), ((3, 4096, 5), 1), ((33, 2050), -1),
                                       ((2, 8, 64, 64), (-2, -1)), ((70, 999), -1)])
def test_batches_split_over_threads_match_torch(shape, dim):
    # batches of 2^15 elements or more run as runs of transforms on kiln's threads (Fft.cpp, run_batched)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape)
    z = x + 1j * rng.standard_normal(shape)
    previous = kiln.get_num_threads()
    kiln.set_num_threads(2)
    try:
        dims = dim if isinstance(dim, tuple) else (dim,)
        for dtype_r, dtype_c, tol in ((np.float32, np.complex64, 1e-3), (np.float64, np.complex128, 1e-9)):
            kx, tx = kiln.from_numpy(x.astype(dtype_r)), torch.from_numpy(x.astype(dtype_r))
            kz, tz = kiln.from_numpy(z.astype(dtype_c)), torch.from_numpy(z.astype(dtype_c))
            pairs = [(kiln.fft.fftn(kz, dim=dims), torch.fft.fftn(tz, dim=dims)),
                     (kiln.fft.rfftn(kx, dim=dims), torch.fft.rfftn(tx, dim=dims)),
                     (kiln.fft.irfftn(kz, dim=dims), torch.fft.irfftn(tz, dim=dims)),
                     (kiln.fft.ifftn(kz, dim=dims, norm="ortho"), torch.fft.ifftn(tz, dim=dims, norm="ortho"))]
            for k, t in pairs:
                assert tuple(k.shape) == tuple(t.shape)
                scale = np.abs(t.numpy()).max()
                np.testing.assert_allclose(k.numpy(), t.numpy(), rtol=tol, atol=tol * scale)
    finally:
        kiln.set_num_threads(previous)
