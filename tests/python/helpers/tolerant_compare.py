"""Comparisons within torch.testing's default tolerance per dtype (or bit for bit
with exact=True), and of failures, shared by the pointwise, linalg, nn and tensor
suites: kiln's result against torch's, or kiln's exception against torch's (type,
and text with "torch" read as "kiln" and c10:: as kiln::)."""

from __future__ import annotations

import numpy as np
import torch

import kiln
from torch_compare import as_kiln_text, raised, torch_dtype


def to_torch(k) -> torch.Tensor:
    """A kiln tensor's values as a torch tensor of the same dtype (exactly)."""
    name = str(k.dtype).removeprefix("kiln.")
    if name in ("float16", "bfloat16"):  # through float32, which holds both exactly
        wide = kiln.empty(list(k.shape), dtype=kiln.float32)
        wide.copy_(k)
        return torch.from_numpy(np.array(wide.numpy())).to(torch_dtype(name))
    return torch.from_numpy(np.array(k.numpy(force=True)))


def assert_matches(k, t, *, exact: bool = False) -> None:
    """Same shape and dtype; values equal within torch.testing's default tolerance for
    the dtype (exact: bit for bit), nan equal to nan."""
    assert isinstance(k, kiln.Tensor), f"kiln returned {type(k).__name__}"
    assert tuple(k.shape) == tuple(t.shape), f"shape {tuple(k.shape)} != torch {tuple(t.shape)}"
    assert str(k.dtype) == as_kiln_text(str(t.dtype)), f"dtype {k.dtype} != torch {t.dtype}"
    if exact:
        torch.testing.assert_close(to_torch(k), t, rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(to_torch(k), t, equal_nan=True)


def assert_same_failure(kiln_error: BaseException | None, torch_error: BaseException, *, message: bool = True) -> None:
    assert kiln_error is not None, f"kiln did not raise; torch raised {type(torch_error).__name__}: {torch_error}"
    assert isinstance(kiln_error, type(torch_error)), (
        f"kiln raised {type(kiln_error).__name__}: {kiln_error}; torch raised {type(torch_error).__name__}: {torch_error}"
    )
    if message:  # torch's text with torch -> kiln (and c10::Half -> kiln::Half, as the core names its types)
        assert str(kiln_error) == as_kiln_text(str(torch_error)).replace("c10::", "kiln::")


def outcome(fn):
    """(result, None) or (None, exception)."""
    try:
        return fn(), None
    except Exception as error:  # noqa: BLE001 - the exception is the outcome under test
        return None, error


def assert_same_outcome(kiln_fn, torch_fn, *, message: bool = True, exact: bool = False):
    """Both raise alike or both return matching tensors; returns torch's result (or None)."""
    t, torch_error = outcome(torch_fn)
    k, kiln_error = outcome(kiln_fn)
    if torch_error is not None:
        assert_same_failure(kiln_error, torch_error, message=message)
        return None
    if kiln_error is not None:
        raise AssertionError(f"kiln raised {type(kiln_error).__name__}: {kiln_error}; torch returned {t}")
    assert_matches(k, t, exact=exact)
    return t


def assert_fails_alike(kiln_fn, torch_fn, message: bool = True) -> None:
    """torch_fn() raises (else the case is wrong), and kiln_fn() raises alike (assert_same_failure)."""
    torch_error = raised(torch_fn)
    assert torch_error is not None, "torch did not raise: the case is wrong"
    assert_same_failure(raised(kiln_fn), torch_error, message=message)
