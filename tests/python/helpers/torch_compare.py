"""Helpers every suite shares: kiln <-> torch dtype mapping, copies between the two
libraries, and exact comparisons of results and errors.

Every comparison reads torch's text with "torch" replaced by "kiln", the only
difference kiln allows itself.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

import kiln

DTYPE_NAMES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"]
FLOAT_DTYPE_NAMES = ["float32", "float64", "float16", "bfloat16"]
INT_DTYPE_NAMES = ["int8", "int16", "int32", "int64", "uint8"]
# The dtypes numpy holds (numpy has no bfloat16).
NUMPY_DTYPE_NAMES = [name for name in DTYPE_NAMES if name != "bfloat16"]


def kiln_dtype(name: str) -> kiln.dtype:
    return getattr(kiln, name)


def torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def as_kiln_text(text: str) -> str:
    return text.replace("torch", "kiln")


def raised(fn, *, ignore_warnings: bool = False):
    """The exception ``fn()`` raises, or None (with ignore_warnings, the warnings it gives are dropped)."""
    try:
        if ignore_warnings:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn()
        else:
            fn()
    except Exception as error:  # noqa: BLE001 - any exception is the result under test
        return error
    return None


def assert_same_error(kiln_fn, torch_fn, *, message: bool = True) -> BaseException:
    """Both raise; same exception type, and (unless message=False) the same text."""
    torch_error = raised(torch_fn)
    assert torch_error is not None, "the torch side did not raise: the case is wrong"
    kiln_error = raised(kiln_fn)
    assert kiln_error is not None, f"kiln did not raise; torch raised {type(torch_error).__name__}: {torch_error}"
    assert isinstance(kiln_error, type(torch_error)), (
        f"kiln raised {type(kiln_error).__name__}: {kiln_error}; torch raised {type(torch_error).__name__}: "
        f"{torch_error}"
    )
    if message:
        assert str(kiln_error) == as_kiln_text(str(torch_error))
    return kiln_error


def values(t) -> np.ndarray:
    """A tensor's values as a numpy array (bfloat16 and float16 as float64) for comparison."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype in (torch.bfloat16, torch.float16):
            return t.double().numpy()
        return t.numpy()
    if t.dtype in (kiln.bfloat16, kiln.float16):
        return np.array(t.tolist(), dtype=np.float64).reshape(tuple(t.shape))
    return t.numpy(force=True)


def float64_values(t) -> np.ndarray:
    """A kiln or torch tensor's values as float64 numpy data (detached)."""
    if isinstance(t, torch.Tensor):
        return t.detach().double().numpy()
    return np.asarray(t.detach().to(kiln.float64).numpy())


def to_kiln(t: torch.Tensor) -> kiln.Tensor:
    """A kiln copy of a torch tensor (complex and conjugate-bit ones included), with its requires_grad."""
    k = kiln.from_numpy(t.detach().resolve_conj().numpy().copy())
    return k.requires_grad_() if t.requires_grad else k


def torch_copy(k) -> torch.Tensor:
    """A kiln tensor's values as a torch tensor, copied through numpy (the dtypes numpy holds)."""
    return torch.from_numpy(np.array(k.detach().numpy(), copy=True))


def numpy_pair(a):
    """(kiln tensor, torch tensor), each holding its own copy of the array ``a`` (made contiguous)."""
    return kiln.from_numpy(np.ascontiguousarray(a).copy()), torch.from_numpy(np.ascontiguousarray(a).copy())


def assert_same_tensor(k, t, *, check_stride: bool = True, check_values: bool = True) -> None:
    """Same shape, dtype, (strides) and values, NaN equal to NaN."""
    assert isinstance(k, kiln.Tensor), type(k)
    assert tuple(k.shape) == tuple(t.shape)
    assert str(k.dtype) == as_kiln_text(str(t.dtype))
    if check_stride:
        assert k.stride() == t.stride()
    if check_values:
        kv, tv = values(k), values(t)
        assert kv.dtype == tv.dtype
        assert np.array_equal(kv, tv, equal_nan=kv.dtype.kind == "f"), f"kiln {kv} != torch {tv}"


def assert_same_outcome(kiln_fn, torch_fn, **tensor_checks) -> None:
    """The same tensor, or, where torch raises, the same exception type and text."""
    if raised(torch_fn) is not None:
        assert_same_error(kiln_fn, torch_fn)
        return
    assert_same_tensor(kiln_fn(), torch_fn(), **tensor_checks)
