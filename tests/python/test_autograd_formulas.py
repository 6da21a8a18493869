"""Derivative formulas of the binary, ternary, shape, indexing, linear-algebra
and reduction ops, one table of cases: each case's gradients (w.r.t. every floating input,
through a weighted sum of every output) are compared with torch's on the same
inputs, and checked against finite differences with kiln.autograd.gradcheck in
float64. Families with their own gradient suites (unary, nn) keep them with
their op tests.

`test_every_generated_formula_has_a_case` keeps the table honest: an op of
these families whose formula kiln generates must have a case here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln

# Each case: (ops it covers, input shapes, fn(lib, *inputs)). Inputs are float64
# leaves built identically for both libraries; extra non-differentiable
# operands are made inside fn with lib.tensor.
CASES = {
    "add": (["add.Tensor", "add.Scalar"], [(3, 4), (4,)], lambda L, a, b: L.add(a, b, alpha=2) + 3),
    "sub": (["sub.Tensor", "sub.Scalar"], [(3, 4), (3, 1)], lambda L, a, b: L.sub(a, b, alpha=0.5) - 1),
    "div": (["div.Tensor", "true_divide.Tensor"], [(2, 3), (3,)],
            lambda L, a, b: [L.div(a, b.clamp_min(0.5) + 1), L.true_divide(a, b.clamp_max(-0.5) - 1)]),
    "div modes": (["div.Tensor_mode"], [(2, 3), (2, 3)],
                  lambda L, a, b: [L.div(a, b.clamp_min(0.5) + 1), L.div(a * 3, b.clamp_min(0.5) + 1, rounding_mode="floor"),
                                   L.div(a * 3, b.clamp_min(0.5) + 1, rounding_mode="trunc")]),
    "rsub": (["rsub.Tensor", "rsub.Scalar"], [(3,), (3,)], lambda L, a, b: L.rsub(a, b, alpha=2) + L.rsub(a, 2)),
    "remainder": (["remainder.Tensor"], [(6,), (6,)], lambda L, a, b: L.remainder(a * 3, b.clamp_min(0.5) + 1)),
    "fmod": (["fmod.Tensor"], [(6,), (6,)], lambda L, a, b: L.fmod(a * 3, b.clamp_min(0.5) + 1)),
    "pow tensor exponent": (["pow.Tensor_Tensor"], [(4,), (4,)], lambda L, a, b: (a.clamp_min(0.1) + 1).pow(b)),
    "pow scalar base": (["pow.Scalar"], [(4,)], lambda L, a: L.pow(2.5, a)),
    "addcdiv": (["addcdiv"], [(3,), (3,), (3,)], lambda L, a, b, c: L.addcdiv(a, b, c.clamp_min(0.5) + 1, value=2)),
    "mul": (["mul.Tensor", "mul.Scalar"], [(2, 3), (2, 3)], lambda L, a, b: a * b * 1.5),
    "pow scalar exponent": (["pow.Tensor_Scalar"], [(4,)], lambda L, a: a.pow(3) + a.pow(0) + a.pow(1)),
    "maximum": (["maximum", "fmax"], [(5,), (5,)], lambda L, a, b: L.maximum(a, b) + L.fmax(a, b * 2)),
    "minimum": (["minimum", "fmin"], [(5,), (5,)], lambda L, a, b: L.minimum(a, b) + L.fmin(a, b * 2)),
    "where": (["where.self", "where.ScalarOther", "where.ScalarSelf"], [(4,), (4,)],
              lambda L, a, b: L.where(a > 0, a, b) + L.where(a > 0, a, 1.0) + L.where(b > 0, 2.0, b)),
    "clamp": (["clamp", "clamp_min", "clamp_max"], [(6,)],
              lambda L, a: a.clamp(-0.3, 0.4) + a.clamp_min(0.1) + a.clamp_max(-0.1) + a.clamp(min=0.2)),
    "clamp tensor bounds": (["clamp.Tensor", "clamp_min.Tensor", "clamp_max.Tensor"], [(4, 5), (5,), (4, 1)],
                            lambda L, a, lo, hi: a.clamp(lo, hi) + a.clamp_min(lo) + a.clamp_max(hi)
                            + a.clamp(min=lo)),
    "lerp": (["lerp.Scalar", "lerp.Tensor"], [(4,), (4,), (4,)],
             lambda L, a, b, w: a.lerp(b, 0.3) + a.lerp(b, w)),
    "addcmul": (["addcmul"], [(3,), (3,), (3,)], lambda L, a, b, c: L.addcmul(a, b, c, value=0.5)),
    "masked_fill": (["masked_fill.Scalar", "masked_fill.Tensor"], [(2, 3), ()],
                    lambda L, a, v: a.masked_fill(a > 0, 2.0) + a.masked_fill(a < 0, v)),
    # shape ops
    "views": (["view", "transpose.int", "t", "permute", "unsqueeze", "squeeze", "squeeze.dim", "squeeze.dims",
               "expand"],
              [(2, 1, 3)], lambda L, a: [a.view(3, 2), a.transpose(0, 2), a.squeeze().t(), a.permute(2, 0, 1),
                                          a.unsqueeze(0), a.squeeze(1), a.squeeze((0, 1)), a.expand(4, 2, 5, 3)]),
    "select and slice": (["select.int", "slice.Tensor"], [(4, 5)], lambda L, a: [a[1], a[:, 1:4:2], a[-1, ::3]]),
    "cat": (["cat"], [(2, 3), (2, 4), (2, 1)], lambda L, a, b, c: L.cat([a, b, c], -1)),
    "stack": (["stack"], [(2, 3), (2, 3)], lambda L, a, b: L.stack([a, b], 1)),
    "split": (["split.Tensor", "split_with_sizes"], [(5, 3)],
              lambda L, a: list(a.split(2)) + list(a.split([1, 4], 0))[1:]),
    "chunk and unbind": (["unbind.int"], [(3, 4)], lambda L, a: list(a.chunk(2, 1)) + list(a.unbind(0))[:2]),
    "repeat": (["repeat"], [(2, 3)], lambda L, a: a.repeat(2, 1, 3)),
    "repeat_interleave": (["repeat_interleave.self_Tensor", "repeat_interleave.self_int"], [(3, 2)],
                          lambda L, a: [a.repeat_interleave(L.tensor([1, 0, 2]), dim=0), a.repeat_interleave(2)]),
    "diagonal": (["diagonal", "diag_embed"], [(3, 4)],
                 lambda L, a: [a.diagonal(1), a.diagonal(-1, 1, 0), L.diag_embed(a, 1)]),
    "flip and roll": (["flip", "roll"], [(3, 4)], lambda L, a: [a.flip(0, 1), a.roll(2, 1), a.roll((1, -1), (0, 1))]),
    "tril and triu": (["tril", "triu"], [(4, 4)], lambda L, a: [a.tril(-1), a.triu(1)]),
    "clone": (["clone"], [(3,)], lambda L, a: a.clone()),
    # indexing
    "index": (["index.Tensor"], [(3, 4)],
              lambda L, a: [a[L.tensor([0, 2, 0])], a[:, L.tensor([1, 1])], a[a > 0]]),
    "index_put": (["index_put"], [(4, 3), (2, 3)],
                  lambda L, a, v: [L.index_put(a, (L.tensor([1, 3]),), v),
                                   L.index_put(a, (L.tensor([1, 1]),), v, accumulate=True)]),
    "index_select": (["index_select"], [(4, 3)], lambda L, a: a.index_select(0, L.tensor([3, 0, 3]))),
    "take": (["take"], [(2, 3)], lambda L, a: L.take(a, L.tensor([0, 5, 5, -1]))),
    "index_add": (["index_add"], [(4, 3), (2, 3)], lambda L, a, s: a.index_add(0, L.tensor([1, 1]), s, alpha=2)),
    "index_fill": (["index_fill.int_Scalar", "index_fill.int_Tensor"], [(4, 3)],
                   lambda L, a: [a.index_fill(1, L.tensor([0, 2]), 5.0),
                                 a.index_fill(0, L.tensor([1]), L.tensor(2.0, dtype=L.float64))]),
    "gather": (["gather"], [(3, 4)], lambda L, a: a.gather(1, L.tensor([[0, 0], [3, 1], [2, 2]]))),
    "scatter": (["scatter.src", "scatter.value"], [(3, 4), (3, 2)],
                lambda L, a, s: [a.scatter(1, L.tensor([[0, 1], [3, 2], [1, 0]]), s),
                                 a.scatter(1, L.tensor([[0], [3], [1]]), 7.0)]),
    "scatter_add": (["scatter_add"], [(3, 4), (3, 2)],
                    lambda L, a, s: a.scatter_add(1, L.tensor([[0, 0], [3, 2], [1, 1]]), s)),
    "masked_select": (["masked_select"], [(2, 3)], lambda L, a: a.masked_select(a > 0)),
    "masked_scatter": (["masked_scatter"], [(2, 3), (5,)],
                       lambda L, a, s: a.masked_scatter(L.tensor([[True, False, True], [False, True, False]]), s)),
    # linear algebra
    "mm": (["mm"], [(2, 3), (3, 4)], lambda L, a, b: L.mm(a, b)),
    "bmm": (["bmm"], [(2, 2, 3), (2, 3, 4)], lambda L, a, b: L.bmm(a, b)),
    "addmm": (["addmm"], [(4,), (2, 3), (3, 4)], lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2)),
    "matmul": ([], [(2, 3, 4), (4, 5)], lambda L, a, b: L.matmul(a, b)),
    "dot mv outer": (["dot", "mv", "outer"], [(3,), (2, 3), (2,)],
                     lambda L, v, m, w: [L.dot(v, v * 2), L.mv(m, v), L.outer(w, v), L.matmul(w, m)]),
    "matmul broadcast": ([], [(2, 1, 3, 4), (3, 4, 5), (4,)],
                         lambda L, a, b, v: [L.matmul(a, b), L.matmul(v, b), L.matmul(a, v),
                                             L.matmul(b.transpose(-1, -2), a.transpose(-1, -2))]),
    "linear": ([], [(5, 3), (2, 3), (2,)], lambda L, x, w, b: (L.linear if L is kiln else L.nn.functional.linear)(x, w, b)),
    "baddbmm and addbmm": ([], [(3, 1), (4, 3, 2), (4, 2, 5)],
                           lambda L, s, a, b: [L.baddbmm(s, a, b, beta=0.5, alpha=2), L.addbmm(s, a, b, alpha=-1)]),
    "scalar operands": (["sub.Scalar", "div.Scalar", "div.Scalar_mode", "true_divide.Scalar", "remainder.Scalar",
                         "fmod.Scalar"], [(5,)],
                        lambda L, a: [a - 2, a / 3, L.div(a, 2.0, rounding_mode="floor"), L.true_divide(a, -4),
                                      L.remainder(a, 0.7), L.fmod(a, 0.7)]),
    # reductions and scans
    "sum and mean": (["sum", "sum.dim_IntList", "mean", "mean.dim"], [(3, 4, 2)],
                     lambda L, a: [a.sum(), a.sum((0, 2)), L.sum(a, -1, keepdim=True), a.mean(), a.mean(1),
                                   L.mean(a, (0, 1), keepdim=True)]),
    "prod": (["prod", "prod.dim_int"], [(3, 4)], lambda L, a: [a.prod(), a.prod(1), L.prod(a, 0, keepdim=True)]),
    "extremes": (["amax", "amin", "max", "min", "max.dim", "min.dim", "aminmax"], [(3, 5)],
                 lambda L, a: [a.amax(1), L.amin(a, (0, 1)), a.max(), a.min(), a.max(0)[0], L.min(a, 1, True)[0],
                               *L.aminmax(a, dim=0), *L.aminmax(a)]),
    "var": (["var.correction"], [(4, 3)],
            lambda L, a: [a.var(), a.var(0), L.var(a, 1, correction=0, keepdim=True)]),
    "scans": (["cumsum", "cumprod"], [(3, 4)], lambda L, a: [a.cumsum(1), L.cumsum(a, 0), a.cumprod(1)]),
    "vector norm": (["linalg_vector_norm"], [(3, 4)],
                    lambda L, a: [L.linalg.vector_norm(a), L.linalg.vector_norm(a, 1, 1),
                                  L.linalg.vector_norm(a, 3, 0, keepdim=True),
                                  L.linalg.vector_norm(a, float("inf"), 1), L.linalg.vector_norm(a, -float("inf"))]),
}

# The families this file covers (and the ops of them that have no gradient here, with why).
FAMILY_FILES = ("pointwise_binary.yaml", "shape.yaml", "indexing.yaml", "linalg.yaml", "reduction.yaml")
NOT_HERE = {
    "floor_divide": "torch has no derivative for it (kiln's is zero)",
    "floor_divide.Scalar": "torch has no derivative for it (kiln's is zero)",
    "bernoulli": "random: its gradient is zero, checked in test_random.py",
    "bernoulli.p": "random: its gradient is zero, checked in test_random.py",
    "normal.Tensor_Tensor": "random (reparameterised), checked in test_random.py",
    "normal.Tensor_float": "random (reparameterised), checked in test_random.py",
    "normal.float_Tensor": "random (reparameterised), checked in test_random.py",
}


def _inputs(shapes, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for shape in shapes:
        a = rng.uniform(-2, 2, size=shape)
        a[np.abs(a) < 0.05] = 0.3  # keep clear of kinks (abs, clamp, max) where finite differences disagree
        arrays.append(a)
    return arrays


def _outputs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _weighted_sum(lib, outs):
    """A scalar that depends on every output element with a distinct weight."""
    total = None
    for i, o in enumerate(outs):
        w = lib.tensor(np.cos(np.arange(o.numel()) + i).reshape(tuple(o.shape)), dtype=lib.float64)
        term = (o * w).reshape(-1)
        term = lib.matmul(term, lib.ones(o.numel(), dtype=lib.float64)) if o.numel() else None
        if term is not None:
            total = term if total is None else total + term
    return total


def _grads(lib, fn, arrays):
    xs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    loss = _weighted_sum(lib, _outputs(fn(lib, *xs)))
    return lib.autograd.grad(loss, xs, allow_unused=True)


@pytest.mark.parametrize("case", list(CASES))
def test_gradients_match_torch(case):
    _, shapes, fn = CASES[case]
    arrays = _inputs(shapes, seed=len(case))
    k_grads = _grads(kiln, fn, arrays)
    t_grads = _grads(torch, fn, arrays)
    for i, (kg, tg) in enumerate(zip(k_grads, t_grads)):
        assert (kg is None) == (tg is None), f"input {i}: kiln {kg}, torch {tg}"
        if tg is not None:
            np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=1e-10, atol=1e-12, err_msg=f"input {i}")


@pytest.mark.parametrize("case", list(CASES))
def test_gradcheck(case):
    _, shapes, fn = CASES[case]
    arrays = _inputs(shapes, seed=len(case))
    xs = tuple(kiln.tensor(a, dtype=kiln.float64, requires_grad=True) for a in arrays)
    assert kiln.autograd.gradcheck(lambda *inputs: tuple(_outputs(fn(kiln, *inputs))), xs)


def test_every_generated_formula_has_a_case():
    import pathlib

    import yaml

    ops_dir = pathlib.Path(__file__).resolve().parents[2] / "eager" / "ops"
    family = set()
    for name in FAMILY_FILES:
        for entry in yaml.safe_load((ops_dir / name).read_text()) or []:
            head = entry["func"].split("(")[0]
            family.add(head if "." in head else head + ".")
    covered = {op if "." in op else op + "." for ops, _, _ in CASES.values() for op in ops}
    covered |= {op if "." in op else op + "." for op in NOT_HERE}
    missing = []
    for name, overload, tags, inputs, generated in kiln._C._op_table():
        key = f"{name}.{overload}"
        if key in family and inputs and generated and "inplace" not in tags and key not in covered:
            missing.append(key)
    assert not missing, f"ops with generated gradients but no case in CASES: {missing}"
