"""The one table of the OpInfo test's known differences from torch, each with its reason.

KNOWN_DIFFERENCES maps (OpInfo key, case kind) to why kiln's result differs there; the
test fails on a disagreement the table lacks and on a row that no longer disagrees.
MISSING_OPS lists the OpInfos kiln has no op for (the issue's list of ops to add, torch
internals, and other layouts and backends), each with its reason.

Kinds: "forward <dtype>", "gradient float64", "error input" (kiln does not raise, or
raises another type), "error message" (same type, the OpInfo's regex does not match).
"""

from __future__ import annotations

_TIES = "equal values: torch's CPU sort does not promise which of tied elements comes first; the indices differ"
_EIGENVECTOR_SIGN = "eigenvectors/singular vectors are defined up to sign (a phase); kiln's LAPACK path picks others"
_MESSAGE = "same exception type; kiln's message words it differently"
_ALIASED_OUT = "torch refuses an out= that overlaps the input (internal overlap check); kiln has no overlap check"

KNOWN_DIFFERENCES = {
    # ties in sorting
    ("argsort", "forward bool"): _TIES,
    ("sort", "forward bool"): _TIES,
    ("topk", "forward int64"): _TIES,
    ("kthvalue", "forward int64"): _TIES,
    # signs of eigen- and singular vectors
    ("linalg.eig", "forward float64"): _EIGENVECTOR_SIGN,
    ("linalg.eigh", "forward float32"): _EIGENVECTOR_SIGN,
    ("linalg.eigh", "forward float64"): _EIGENVECTOR_SIGN,
    ("pca_lowrank", "forward float32"): _EIGENVECTOR_SIGN,
    ("pca_lowrank", "forward float64"): _EIGENVECTOR_SIGN,
    ("svd_lowrank", "forward float32"): _EIGENVECTOR_SIGN,
    ("svd_lowrank", "forward float64"): _EIGENVECTOR_SIGN,
    ("svd_lowrank", "gradient float64"): _EIGENVECTOR_SIGN + " (the gradient of a sign-dependent output)",
}

MISSING_OPS = {}
