"""kiln.cdist: torch.cdist's signature (compute_mode as a string) over the C++ op
cdist (eager/ops/nn.yaml; Note [cdist] in eager/kernels/cpu/nn/DistanceOps.cpp)."""

from __future__ import annotations

from kiln import _C
from kiln._arguments import checked_signature

_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
          "donot_use_mm_for_euclid_dist": 2}


@checked_signature("cdist(Tensor x1, Tensor x2)")
def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each pair of rows of x1 [*, P, M] and x2 [*, R, M]: [*, P, R]."""
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _C._functions.cdist(x1, x2, p, _MODES[compute_mode])
