"""Helpers the complex-tensor tests share (test_complex.py, test_complex_ops.py,
test_linalg_complex.py, test_fft.py, test_stft.py): kiln copies of torch tensors
(torch_compare.to_kiln), complex included, and value comparisons of either."""

from __future__ import annotations

import numpy as np
import torch

import kiln
from torch_compare import to_kiln  # noqa: F401 - the complex tests take it from here


def dtype_name(dtype) -> str:
    """"complex64" for kiln.complex64 and torch.complex64 alike."""
    return str(dtype).split(".")[-1]


def as_numpy(t) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, kiln.Tensor) else t.detach().resolve_conj().numpy()


def assert_close(k, t, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Same dtype name, shape and values (within rtol/atol) of a kiln and a torch tensor."""
    assert dtype_name(k.dtype) == dtype_name(t.dtype), (k.dtype, t.dtype)
    assert tuple(k.shape) == tuple(t.shape)
    np.testing.assert_allclose(as_numpy(k), as_numpy(t), rtol=rtol, atol=atol)


def seeded_randn(shape, dtype=torch.complex64, seed: int = 0, requires_grad: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=dtype, generator=g).requires_grad_(requires_grad)
