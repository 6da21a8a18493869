"""Tensor.register_post_accumulate_grad_hook (what DDP launches its all-reduces from)
against torch: when it runs, what .grad holds then, removal, and its errors."""

from __future__ import annotations

import pytest
import torch

import kiln


def _trace(lib):
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (w * 3).sum().backward()
    (w * w).sum().backward()
    handle.remove()
    (w * 5).sum().backward()
    return seen, w.grad.tolist()


def test_hook_sees_the_accumulated_grad_like_torch():
    assert _trace(kiln) == _trace(torch)


def test_hook_errors():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        kiln.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    leaf = kiln.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (leaf * 2).register_post_accumulate_grad_hook(lambda t: None)
