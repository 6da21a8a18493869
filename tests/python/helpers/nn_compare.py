"""Helpers the test_nn_*.py suites share: paired kiln/torch inputs, value and
gradient comparisons with torch.testing's default tolerances per dtype."""

from __future__ import annotations

import numpy as np
import torch

import kiln

F = kiln._C._functions
FLOATS = ["float32", "float64"]
REDUCED = ["float16", "bfloat16"]


def pair(shape, dtype="float32", *, requires_grad=False, low=None, high=None, seed=0, noncontiguous=False):
    """The same random values as a kiln and a torch tensor (a transposed view when noncontiguous)."""
    rng = np.random.default_rng(seed)
    if noncontiguous:
        shape = tuple(reversed(shape))
    values = rng.standard_normal(shape) if low is None else rng.uniform(low, high, size=shape)
    t = torch.tensor(values, dtype=torch.float64).to(getattr(torch, dtype))
    k = kiln.tensor(t.double().numpy(), dtype=getattr(kiln, dtype))
    if noncontiguous:
        t, k = t.permute(*reversed(range(t.dim()))), k.permute(*reversed(range(k.dim())))
    if requires_grad:
        t = t.detach().requires_grad_(True)
        k = k.detach().requires_grad_(True)
    return k, t


def index_pair(values):
    """An int64 tensor pair from a list / array of integers."""
    a = np.asarray(values, dtype=np.int64)
    return kiln.tensor(a), torch.tensor(a)



def close(k, t, **kw):
    """kiln result k matches torch result t: shape, dtype and values (torch.testing defaults)."""
    assert isinstance(k, kiln.Tensor), type(k)
    assert tuple(k.shape) == tuple(t.shape), (tuple(k.shape), tuple(t.shape))
    assert str(k.dtype).removeprefix("kiln.") == str(t.dtype).removeprefix("torch."), (k.dtype, t.dtype)
    torch.testing.assert_close(as_torch(k), t.detach(), equal_nan=True, **kw)


def exact(k, t):
    """close, bit for bit."""
    close(k, t, rtol=0, atol=0)


def as_torch(k):
    dtype = getattr(torch, str(k.dtype).removeprefix("kiln."))
    if k.dtype in (kiln.float16, kiln.bfloat16):
        flat = np.array(k.detach().tolist(), dtype=np.float64)
        return torch.tensor(flat, dtype=torch.float64).reshape(tuple(k.shape)).to(dtype)
    return torch.from_numpy(np.array(k.detach().numpy(), copy=True)).reshape(tuple(k.shape)).to(dtype)


def grad_pair(k_out, t_out, seed=1):
    """Backpropagates the same random upstream gradient through both outputs."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(tuple(t_out.shape))
    tg = torch.tensor(g, dtype=t_out.dtype)
    kg = kiln.tensor(tg.double().numpy(), dtype=k_out.dtype)
    t_out.backward(tg)
    k_out.backward(kg)
