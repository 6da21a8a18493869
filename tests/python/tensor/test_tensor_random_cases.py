"""Randomly drawn cases of the tensor ops (reductions, scans, indexing,
joining, pointwise with promotion, sorting and searching) against torch
(the Draw and the runner: random_cases.py).

Each (op, seed) pair draws sizes with empty dims, one of seven dtypes (bool and
integers included), a layout and the op's arguments; values, dtypes and
gradients must match torch's, or both must raise the same exception type. It
found var's gradient for a correction past the element count and isclose's
tolerances on booleans.
"""

import pytest

from random_cases import Draw, check_gradients, run_case

SEEDS = range(6)
DTYPES = ("float64", "float32", "int64", "float16", "bfloat16", "int32", "bool")


def _reductions(d):
    dim, keep, corr = d.int(-2, 2), bool(d.int(0, 2)), d.int(0, 3)
    order = float(d.rng.choice([1.0, 2.0, 3.0, float("inf"), -float("inf"), 0.0]))
    return {
        "sum": (lambda L, F, x: x.sum(dim=dim, keepdim=keep), [d.tensor(d.B, d.C)]),
        "sum to float64": (lambda L, F, x: x.sum(0, dtype=L.float64), [d.tensor(d.B, d.C)]),
        "mean over two dims": (lambda L, F, x: x.mean(dim=(0, 2)), [d.tensor(d.B, d.C, d.H)]),
        "nansum": (lambda L, F, x: L.nansum(x, 1), [d.tensor(d.B, d.C)]),
        "prod": (lambda L, F, x: x.prod(dim=dim), [d.tensor(d.B, d.C)]),
        "var correction": (lambda L, F, x: x.var(dim=dim, correction=corr), [d.tensor(d.B, d.C)]),
        "std_mean": (lambda L, F, x: L.std_mean(x, dim=dim), [d.tensor(d.B, d.C)]),
        "amax": (lambda L, F, x: x.amax(dim=dim), [d.tensor(d.B, d.C)]),
        "max with indices": (lambda L, F, x: x.max(dim=dim), [d.tensor(d.B, d.C)]),
        "argmin keepdim": (lambda L, F, x: x.argmin(dim=dim, keepdim=True), [d.tensor(d.B, d.C)]),
        "logsumexp": (lambda L, F, x: L.logsumexp(x, dim=dim), [d.tensor(d.B, d.C)]),
        "vector_norm": (lambda L, F, x: L.linalg.vector_norm(x, ord=order, dim=dim), [d.tensor(d.B, d.C)]),
        "all": (lambda L, F, x: x.all(dim=dim), [d.tensor(d.B, d.C)]),
        "count_nonzero": (lambda L, F, x: L.count_nonzero(x, dim=dim), [d.tensor(d.B, d.C)]),
        "cumsum": (lambda L, F, x: x.cumsum(dim=dim), [d.tensor(d.B, d.C)]),
        "cumprod": (lambda L, F, x: x.cumprod(dim=dim), [d.tensor(d.B, d.C)]),
        "cummax": (lambda L, F, x: L.cummax(x, dim=dim), [d.tensor(d.B, d.C)]),
        "median with indices": (lambda L, F, x: x.median(dim=dim), [d.tensor(d.B, d.C)]),
        "mode": (lambda L, F, x: L.mode(x, dim=-1), [d.tensor(d.B, d.C + 1)]),
        "diff": (lambda L, F, x: L.diff(x, n=corr + 1, dim=-1), [d.tensor(d.B, d.C + 1)]),
    }


def _indexing(d):
    reduce, include = str(d.rng.choice(["sum", "prod", "mean", "amax", "amin"])), bool(d.int(0, 2))
    return {
        "gather": (lambda L, F, x, i: x.gather(1, i), [d.tensor(d.B, d.C + 1), d.index(d.B, d.H, high=d.C + 1)]),
        "scatter_add": (lambda L, F, x, i, s: x.scatter_add(1, i, s),
                        [d.tensor(d.B, d.C + 1), d.index(d.B, d.H, high=d.C + 1), d.tensor(d.B, d.H)]),
        "scatter_reduce": (lambda L, F, x, i, s: x.scatter_reduce(1, i, s, reduce=reduce, include_self=include),
                           [d.tensor(d.B, d.C + 1), d.index(d.B, d.H, high=d.C + 1), d.tensor(d.B, d.H)]),
        "index_select": (lambda L, F, x, i: x.index_select(0, i), [d.tensor(d.B + 1, d.C), d.index(d.H, high=d.B + 1)]),
        "index_add": (lambda L, F, x, i, s: x.index_add(0, i, s, alpha=2),
                      [d.tensor(d.B + 1, d.C), d.index(d.H, high=d.B + 1), d.tensor(d.H, d.C)]),
        "index_put accumulate": (lambda L, F, x, i, s: x.index_put((i,), s, accumulate=True),
                                 [d.tensor(d.B + 1, d.C), d.index(d.H, high=d.B + 1), d.tensor(d.H, d.C)]),
        "advanced indexing": (lambda L, F, x, i, j: x[i, :, j],
                              [d.tensor(d.B + 1, d.C, d.H + 1), d.index(2, 3, high=d.B + 1), d.index(3, high=d.H + 1)]),
        "masked_fill": (lambda L, F, x, m: x.masked_fill(m > 0, 2),
                        [d.tensor(d.B, d.C), d.tensor(d.C, dtype="float64", grad=False)]),
        "where with promotion": (lambda L, F, c, x, y: L.where(c > 0, x, y),
                                 [d.tensor(d.B, 1, dtype="float64", grad=False), d.tensor(d.B, d.C),
                                  d.tensor(d.C, dtype="float32")]),
        "take_along_dim": (lambda L, F, x, i: L.take_along_dim(x, i, dim=0),
                           [d.tensor(d.B + 1, d.C), d.index(d.H, d.C, high=d.B + 1)]),
        "searchsorted": (lambda L, F, s, v: L.searchsorted(s.sort().values, v, right=include),
                         [d.tensor(d.B, d.C, grad=False), d.tensor(d.B, d.H, grad=False)]),
        "unique with inverse and counts": (lambda L, F, x: L.unique(x, return_inverse=True, return_counts=True),
                                           [d.tensor(d.B, d.C, grad=False)]),
        "nonzero": (lambda L, F, x: L.nonzero(x), [d.tensor(d.B, d.C, grad=False)]),
    }


def _joining(d):
    shift = d.int(-2, 3)
    return {
        "cat with promotion": (lambda L, F, x, y: L.cat([x, y], dim=1),
                               [d.tensor(d.B, d.C), d.tensor(d.B, d.H, dtype="float64")]),
        "stack": (lambda L, F, x, y: L.stack([x, y], dim=-1), [d.tensor(d.B, d.C), d.tensor(d.B, d.C)]),
        "split": (lambda L, F, x: x.split(2, dim=1), [d.tensor(d.B, d.C + 2)]),
        "tensor_split": (lambda L, F, x: L.tensor_split(x, [1, 3], dim=1), [d.tensor(d.B, d.C + 2)]),
        "flip": (lambda L, F, x: x.flip(0, -1), [d.tensor(d.B, d.C, d.H)]),
        "roll": (lambda L, F, x: x.roll(shifts=(1, shift), dims=(0, 1)), [d.tensor(d.B, d.C)]),
        "tril": (lambda L, F, x: x.tril(diagonal=shift), [d.tensor(d.B, d.C, d.H)]),
        "repeat": (lambda L, F, x: x.repeat(2, 1, 3), [d.tensor(d.B, d.C)]),
        "repeat_interleave": (lambda L, F, x: x.repeat_interleave(2, dim=0), [d.tensor(d.B, d.C)]),
        "diagonal": (lambda L, F, x: x.diagonal(offset=shift, dim1=0, dim2=2), [d.tensor(d.B, d.C, d.H)]),
        "unfold": (lambda L, F, x: x.unfold(1, 2, 1), [d.tensor(d.B, d.C + 1)]),
    }


def _pointwise(d):
    return {
        "clamp": (lambda L, F, x: x.clamp(-1, 2), [d.tensor(d.B, d.C)]),
        "clamp by a tensor": (lambda L, F, x, lo: x.clamp(min=lo), [d.tensor(d.B, d.C), d.tensor(d.C, dtype="float64")]),
        "pow of a tensor": (lambda L, F, x, y: (x.abs() if x.dtype != L.bool else x) ** y,
                            [d.tensor(d.B, d.C), d.tensor(d.C, dtype="float32")]),
        "remainder": (lambda L, F, x, y: L.remainder(x, y), [d.tensor(d.B, d.C), d.tensor(d.C, dtype="float64")]),
        "fmod by 3": (lambda L, F, x: L.fmod(x, 3), [d.tensor(d.B, d.C)]),
        "floor division": (lambda L, F, x, y: L.div(x, y, rounding_mode="floor"), [d.tensor(d.B, d.C), d.tensor(d.B, d.C)]),
        "trunc division": (lambda L, F, x, y: L.div(x, y, rounding_mode="trunc"), [d.tensor(d.B, d.C), d.tensor(d.B, d.C)]),
        "true division": (lambda L, F, x, y: x / y, [d.tensor(d.B, d.C), d.tensor(d.C)]),
        "atan2": (lambda L, F, x, y: L.atan2(x, y), [d.tensor(d.B, d.C), d.tensor(d.C, dtype="float64")]),
        "add with alpha, mixed dtypes": (lambda L, F, x, y: L.add(x, y, alpha=2),
                                         [d.tensor(d.B, d.C), d.tensor(d.C, dtype="int64")]),
        "addcmul": (lambda L, F, x, y, z: L.addcmul(x, y, z, value=0.5),
                    [d.tensor(d.B, d.C), d.tensor(d.B, d.C), d.tensor(d.C)]),
        "logaddexp": (lambda L, F, x, y: L.logaddexp(x, y), [d.tensor(d.B, d.C), d.tensor(d.C)]),
        "xlogy": (lambda L, F, x, y: L.xlogy(x, y.abs()), [d.tensor(d.B, d.C), d.tensor(d.C)]),
        "copysign": (lambda L, F, x, y: L.copysign(x, y), [d.tensor(d.B, d.C), d.tensor(d.C)]),
        "isclose": (lambda L, F, x, y: L.isclose(x, y, rtol=0.5, atol=1), [d.tensor(d.B, d.C), d.tensor(d.B, d.C)]),
        "round to decimals": (lambda L, F, x: L.round(x, decimals=1), [d.tensor(d.B, d.C)]),
        "heaviside": (lambda L, F, x, y: L.heaviside(x, y), [d.tensor(d.B, d.C, grad=False), d.tensor(d.C, grad=False)]),
        "sort stable": (lambda L, F, x: L.sort(x, dim=-1, descending=True, stable=True), [d.tensor(d.B, d.C)]),
        "linalg.cross": (lambda L, F, x, y: L.linalg.cross(x, y), [d.tensor(d.B, 3), d.tensor(d.B, 3)]),
    }


GROUPS = [_reductions, _indexing, _joining, _pointwise]
NAMES = [(group, name) for group in GROUPS for name in group(Draw(0, "", dtypes=DTYPES))]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("group,name", NAMES, ids=[name for _, name in NAMES])
def test_random_tensor_case_matches_torch(group, name, seed):
    d = Draw(seed, name, dtypes=DTYPES)
    ran = run_case(d, group, name)
    if ran is not None:
        check_gradients(d, name, ran)
