"""The tables the unary and activation tests share: each op with the forms torch
has for it and the values it is asked about, the layouts, and inputs built
identically for kiln and torch (see test_unary.py and test_activation.py)."""

from __future__ import annotations

import dataclasses
import zlib
from typing import Callable

import numpy as np
import torch

import kiln
from pointwise_cases import FLOATS, make_pair, sample

# --- values ------------------------------------------------------------------------
# any: the binary tests' spread (floats -4..4 in quarters with nan, inf, -inf, -0.0)
# unit: floats in [-1.25, 1.25] (asin, atanh, erfinv: in and just out of the domain)
# prob: floats in [-0.25, 1.25] (logit)
# no_nan: any, with NaNs replaced by 1 (signbit; see unary_sample)
# moderate: any, clipped to [-88, 88] (sinh, cosh; see unary_sample)
# no_posinf: any, with +inf replaced by 1 (gelu; see unary_sample)
KINDS = ("any", "unit", "prob", "no_nan", "moderate", "no_posinf")


def unary_sample(dtype: str, shape: tuple, rng: np.random.Generator, kind: str) -> np.ndarray:
    values = sample(dtype, shape, rng, "any")
    if dtype in FLOATS:
        values = np.where(np.isnan(values), np.nan, values)  # one NaN bit pattern: the sign of a NaN is nobody's contract
    if kind == "moderate":
        # sinh/cosh: for 88.5 < |x| < 89.4 torch's vector loop (SLEEF) overflows to inf and its
        # scalar loop (glibc) does not, so torch's answer depends on the layout; kiln gives the
        # finite value everywhere. Test values stay where both of torch's loops agree.
        return np.clip(values, -88, 88)
    if kind == "no_posinf":
        # gelu: torch 2.13 gives nan for gelu(+inf) (its erf-based loop); kiln gives +inf, the limit.
        return np.where(np.isposinf(values), 1.0, values) if dtype in FLOATS else values
    if kind == "no_nan":
        # signbit: torch's vectorised float64 -> bfloat16 conversion makes a NaN with the
        # sign bit set (0xFFFF) where kiln's keeps it clear; NaN signs are not compared.
        return np.where(np.isnan(values), 1.0, values) if dtype in FLOATS else values
    if dtype not in FLOATS or kind == "any":
        return values
    size = int(np.prod(shape)) if shape else 1
    low, high = (-10, 10) if kind == "unit" else (-2, 10)
    spread = rng.integers(low, high + 1, size=shape) * 0.125
    if size >= 8:
        flat = spread.reshape(-1)
        flat[rng.choice(size, size=3, replace=False)] = [np.nan, np.inf, -0.0]
    return spread


# --- layouts --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Layout:
    shape: tuple
    view: Callable | None = None

    def build(self, dtype: str, rng: np.random.Generator, kind: str):
        k, t = make_pair(unary_sample(dtype, self.shape, rng, kind), dtype)
        if self.view is not None:
            k, t = self.view(k), self.view(t)
        return k, t


# Odd sizes (37) so rows leave a vector tail; "large" is past the grain size
# (the parallel loop) and long enough for the unrolled vector body.
LAYOUTS = {
    "contiguous": Layout((5, 37)),
    "transposed": Layout((37, 5), lambda x: x.transpose(0, 1)),
    "strided": Layout((5, 74), lambda x: x[:, ::2]),
    "expanded": Layout((1, 37), lambda x: x.as_strided((5, 37), (0, 1))),
    "zero_size": Layout((0, 37)),
    "zero_dim": Layout(()),
    "large": Layout((40, 2049)),
}
LARGE_LAYOUT_DTYPES = ("float32", "float64", "bfloat16", "int64")


def layouts_for(dtype: str) -> list[str]:
    return [name for name in LAYOUTS if name != "large" or dtype in LARGE_LAYOUT_DTYPES]


def seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def fresh_input(label: str, dtype: str, layout: str, kind: str):
    rng = np.random.default_rng(seed(label, dtype, layout))
    return LAYOUTS[layout].build(dtype, rng, kind)


# --- gradient inputs: float64 values where each op is smooth -------------------------------

DOMAINS = {
    "positive": (0.2, 3.0),     # log, sqrt, rsqrt, reciprocal
    "unit": (-0.9, 0.9),        # asin, acos, atanh, erfinv
    "prob": (0.1, 0.9),         # logit
    "above_one": (1.2, 3.0),    # acosh
    "any": (-2.5, 2.5),
}


def grad_input(label: str, domain: str, shape=(3, 7)):
    """float64 values in the op's smooth domain, away from its kinks (0, +-3, ...)."""
    rng = np.random.default_rng(seed("grad", label))
    low, high = DOMAINS[domain]
    values = rng.uniform(low, high, size=shape)
    # keep clear of the kinks of relu, hardtanh, hardswish, ... (finite differences straddle them)
    for kink in (0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 0.5):
        near = np.abs(values - kink) < 0.05
        values[near] += 0.1
    t = torch.from_numpy(values.copy()).requires_grad_(True)
    k = kiln.from_numpy(values.copy()).requires_grad_(True)
    return k, t
