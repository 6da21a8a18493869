"""Shared machinery of the random-case tests (test_nn_random_cases.py,
test_tensor_random_cases.py): a seeded Draw of sizes, dtype, layout and
operands, and the runner that compares kiln with torch on one drawn case.

A case group is a function of a Draw returning {name: (fn, operands)}; fn(L, F,
*tensors) runs on torch (L = torch, F = torch.nn.functional) and on kiln. Every
random choice must be drawn in the group function, before the lambdas, which
run twice.
"""

import warnings

import numpy as np
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF
from tolerances import DRAWN_COMPOSITE_TOLERANCE
from torch_compare import as_kiln_text, raised

TOLERANCE = DRAWN_COMPOSITE_TOLERANCE  # (rtol, atol) per dtype, with its reason in tolerances.py


class Draw:
    """One case's random choices: sizes, dtype, layout, and the operands made from them."""

    def __init__(self, seed: int, name: str, dtypes=("float64", "float64", "float32"), grads=True):
        self.rng = np.random.default_rng([seed, sum(map(ord, name))])
        sizes = self.rng.integers(0, 4, 4)
        if self.rng.random() < 0.75:
            sizes = sizes + 1  # most cases non-empty, a quarter may have an empty dim
        self.B, self.C, self.H, self.W = (int(s) for s in sizes)
        self.dtype = str(self.rng.choice(list(dtypes)))
        self.grads = grads
        self.noncontiguous = bool(self.rng.integers(0, 2))
        self.tol = TOLERANCE[self.dtype]

    def int(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high))

    def tensor(self, *shape, grad=True, dtype=None, noncontiguous=None):
        """A (kiln, torch) pair with equal values; noncontiguous ones are transposed copies."""
        dtype = dtype or self.dtype
        values = torch.tensor(self.rng.standard_normal(shape))
        if dtype in ("int64", "int32"):
            values = (values * 3).round()  # small integers, with repeats
        elif dtype == "bool":
            values = values > 0
        values = values.to(getattr(torch, dtype))
        k = kiln.from_numpy(values.double().numpy()).to(getattr(kiln, dtype))
        t = values
        if (self.noncontiguous if noncontiguous is None else noncontiguous) and t.dim() >= 2:
            t = t.transpose(0, -1).contiguous().transpose(0, -1)
            k = k.transpose(0, -1).contiguous().transpose(0, -1)
        if grad and self.grads and dtype in ("float64", "float32"):
            k.requires_grad_()
            t.requires_grad_()
        return k, t

    def index(self, *shape, high: int):
        values = self.rng.integers(0, max(high, 1), size=shape)
        return kiln.from_numpy(values.copy()), torch.from_numpy(values.copy())


def as_numpy(x):
    return x.detach().double().numpy()


def compare(name, got, want, tol):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), f"{name}: kiln returned {len(got)} results, torch {len(want)}"
    for k, t in zip(got, want):
        dtype = str(t.dtype).split(".")[-1]
        assert str(k.dtype).split(".")[-1] == dtype, f"{name}: dtype {k.dtype} vs {t.dtype}"
        assert tuple(k.shape) == tuple(t.shape), f"{name}: shape {tuple(k.shape)} vs {tuple(t.shape)}"
        # at least the result dtype's tolerance: integer operands may promote to a floating result
        rtol, atol = (max(a, b) for a, b in zip(tol, TOLERANCE.get(dtype, (0, 0))))
        np.testing.assert_allclose(as_numpy(k), as_numpy(t), rtol=rtol, atol=atol, err_msg=name)


def run_case(d, group, name):
    """Runs one drawn case on both sides; returns (kiln result, torch result, operands), or None where both raised."""
    fn, operands = group(d)[name]
    ks, ts = [k for k, _ in operands], [t for _, t in operands]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = fn(torch, TF, *ts)
        except Exception as error:  # noqa: BLE001 - torch refuses these operands: kiln must too, for the same reason
            assert_refused_alike(name, raised(lambda: fn(kiln, KF, *ks)), error)
            return None
        got = fn(kiln, KF, *ks)
    compare(name, got, want, d.tol)
    return got, want, operands


def first_clause(error: BaseException) -> str:
    """The first line of an exception's message: what was refused (later lines may list the overloads tried)."""
    text = str(error)
    return text.splitlines()[0] if text else ""


def assert_refused_alike(name, kiln_error, torch_error) -> None:
    """kiln raised where torch did: the same exception type and the same first clause of the message."""
    assert kiln_error is not None, (
        f"{name}: kiln did not raise; torch raised {type(torch_error).__name__}: {torch_error}")
    assert isinstance(kiln_error, type(torch_error)), (
        f"{name}: kiln raised {type(kiln_error).__name__}: {kiln_error}; torch raised "
        f"{type(torch_error).__name__}: {torch_error}")
    assert first_clause(kiln_error) == as_kiln_text(first_clause(torch_error)), (
        f"{name}: kiln refused with {first_clause(kiln_error)!r}, torch with {first_clause(torch_error)!r}")


def check_gradients(d, name, ran):
    """The gradients of a case's first result with respect to every operand that requires grad match torch's."""
    got, want, operands = ran
    got = got[0] if isinstance(got, tuple) else got
    want = want[0] if isinstance(want, tuple) else want
    if not (isinstance(want, torch.Tensor) and want.requires_grad):
        return
    ks, ts = [k for k, _ in operands], [t for _, t in operands]
    seed_grad = d.rng.standard_normal(tuple(want.shape))
    t_inputs = [t for t in ts if t.requires_grad]
    k_inputs = [k for k in ks if k.requires_grad]
    t_grads = torch.autograd.grad(want, t_inputs, torch.tensor(seed_grad).to(want.dtype), allow_unused=True)
    k_grads = kiln.autograd.grad(got, k_inputs, kiln.tensor(seed_grad).to(got.dtype), allow_unused=True)
    for i, (kg, tg) in enumerate(zip(k_grads, t_grads)):
        assert (kg is None) == (tg is None), f"{name}: gradient {i} is None on one side only"
        if kg is not None:
            compare(f"{name} gradient {i}", kg, tg, tuple(10 * t for t in d.tol))
