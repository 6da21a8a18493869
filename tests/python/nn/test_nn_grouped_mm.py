"""F.grouped_mm (torch 2.13) against torch: the four operand forms with jagged int32
offsets (empty and overlapping groups included), float32/bfloat16/float16, torch's
CPU errors, and gradients against a per-group reference (torch's own CPU backward
fails for the 3-D form)."""

import numpy as np
import pytest
import torch

import kiln
from torch_compare import assert_same_error

RNG = np.random.default_rng(13)


def both(shape, dtype="float32", grad=False):
    values = torch.tensor(RNG.standard_normal(shape), dtype=torch.float32).to(getattr(torch, dtype))
    k = kiln.from_numpy(values.float().numpy()).to(getattr(kiln, dtype))
    if grad:
        k.requires_grad_()
    return k, values


def offsets(values):
    return kiln.tensor(values, dtype=kiln.int32), torch.tensor(values, dtype=torch.int32)


FORMS = {
    "3-d @ 3-d": ((3, 8, 16), (3, 16, 8), None),
    "2-d @ 3-d": ((24, 16), (3, 16, 8), [8, 16, 24]),
    "2-d @ 3-d, jagged with an empty group": ((24, 16), (3, 16, 8), [5, 5, 24]),
    "2-d @ 3-d, decreasing offsets overlap": ((24, 16), (3, 16, 8), [8, 4, 24]),
    "3-d @ 2-d": ((3, 8, 16), (16, 24), [8, 16, 24]),
    "2-d @ 2-d": ((8, 24), (24, 16), [8, 16, 24]),  # torch needs 16-byte row strides in 16-bit dtypes
}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_values_match_torch(form, dtype):
    shape_a, shape_b, offs = FORMS[form]
    (ka, ta), (kb, tb) = both(shape_a, dtype), both(shape_b, dtype)
    kwargs_k, kwargs_t = {}, {}
    if offs is not None:
        kwargs_k["offs"], kwargs_t["offs"] = offsets(offs)
    got = kiln.nn.functional.grouped_mm(ka, kb, **kwargs_k)
    want = torch.nn.functional.grouped_mm(ta, tb, **kwargs_t)
    assert str(got.dtype).removeprefix("kiln.") == str(want.dtype).removeprefix("torch.")
    tol = {"float32": 1e-5, "bfloat16": 2e-2, "float16": 2e-3}[dtype]
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=tol, atol=tol * 8)


def test_gradients_match_a_per_group_reference():
    ka, ta = both((24, 16), grad=True)
    kb, tb = both((3, 16, 8), grad=True)
    ta, tb = ta.double().requires_grad_(), tb.double().requires_grad_()
    ka, kb = ka.double().detach().requires_grad_(), kb.double().detach().requires_grad_()
    ends = [8, 4, 24]
    got = kiln.nn.functional.grouped_mm(ka.float(), kb.float(), offs=offsets(ends)[0])
    want = torch.zeros(24, 8, dtype=torch.float64)
    start = 0
    for group, end in enumerate(ends):
        if end > start:
            want[start:end] = ta[start:end] @ tb[group]
        start = end
    seed = RNG.standard_normal((24, 8))
    kgrads = kiln.autograd.grad(got, [ka, kb], kiln.tensor(seed, dtype=kiln.float32))
    tgrads = torch.autograd.grad(want, [ta, tb], torch.tensor(seed))
    for kg, tg in zip(kgrads, tgrads):
        np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=1e-4, atol=1e-4)


ERRORS = {
    "2-d without offsets": lambda L: L.nn.functional.grouped_mm(L.ones(24, 16), L.ones(3, 16, 8)),
    "3-d with offsets": lambda L: L.nn.functional.grouped_mm(L.ones(2, 8, 16), L.ones(2, 16, 8),
                                                             offs=L.tensor([1, 2], dtype=L.int32)),
    "int64 offsets": lambda L: L.nn.functional.grouped_mm(L.ones(24, 16), L.ones(3, 16, 8),
                                                          offs=L.tensor([8, 16, 24])),
    "float64": lambda L: L.nn.functional.grouped_mm(L.ones(2, 8, 16, dtype=L.float64),
                                                    L.ones(2, 16, 8, dtype=L.float64)),
    "groups": lambda L: L.nn.functional.grouped_mm(L.ones(2, 8, 16), L.ones(3, 16, 8)),
    "contraction": lambda L: L.nn.functional.grouped_mm(L.ones(2, 8, 16), L.ones(2, 12, 8)),
    "1-d": lambda L: L.nn.functional.grouped_mm(L.ones(8), L.ones(3, 8, 4), offs=L.tensor([1], dtype=L.int32)),
    "4-d": lambda L: L.nn.functional.grouped_mm(L.ones(2, 2, 8, 16), L.ones(2, 16, 8)),
    "bias": lambda L: L.nn.functional.grouped_mm(L.ones(2, 8, 16), L.ones(2, 16, 8), bias=L.ones(2, 8)),
    "out_dtype": lambda L: L.nn.functional.grouped_mm(L.ones(2, 8, 16), L.ones(2, 16, 8), out_dtype=L.bfloat16),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(lambda: ERRORS[name](kiln), lambda: ERRORS[name](torch))


def test_mixed_dtypes_are_refused():
    with pytest.raises(RuntimeError, match="same dtype"):
        kiln.nn.functional.grouped_mm(kiln.ones(2, 8, 16), kiln.ones(2, 16, 8, dtype=kiln.bfloat16))
