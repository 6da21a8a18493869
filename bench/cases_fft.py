"""Discrete Fourier transforms: kiln.fft (FFTW, Note [FFTs on FFTW]) against torch.fft
in one run, at audio- and image-like shapes. The first call of each layout plans (up to
1 s per plan in kiln, once per machine: the plans persist as FFTW wisdom), so the
harness's warm-up keeps planning out of the samples."""

from __future__ import annotations

from harness import Case

# (function, shape, dtype name, kwargs)
SHAPES = (
    ("fft", (1 << 20,), "complex64", {}),
    ("rfft", (64, 4096), "float32", {}),
    ("irfft", (64, 2049), "complex64", {}),
    ("fft2", (256, 256), "complex64", {}),
    ("rfft2", (8, 512, 512), "float32", {}),
)


def _fft_case(name: str, shape: tuple, dtype: str, kwargs: dict) -> Case:
    def make():
        import torch

        import kiln

        g = torch.Generator().manual_seed(0)
        t = torch.randn(shape, dtype=getattr(torch, dtype), generator=g)
        k = kiln.from_numpy(t.numpy().copy())
        kf, tf = getattr(kiln.fft, name), getattr(torch.fft, name)
        return (lambda: kf(k, **kwargs)), (lambda: tf(t, **kwargs))

    return Case(f"{name} {list(shape)} {dtype}", make=make, group="fft")


def cases() -> list[Case]:
    return [_fft_case(*spec) for spec in SHAPES]
