"""Matrix products: sgemm at square sizes 64..2048, at the seed MLP's shapes and at
GPT-small's linear layers,
kiln (OpenBLAS) against torch (MKL) in one run. The JSON notes carry each side's
GFLOP/s and its fraction of the machine's FP32 peak, measured in the same run
(kiln._C._fp32_peak_gflops: fused multiply-adds at the widest vector width, on
every thread the run uses at once, since a core's clock can drop while its
neighbours are busy; one core's figure is kept beside it).

Issue target: >= 0.9x torch at every size, >= 85% of peak from 1024 up.
"""

from __future__ import annotations

from harness import Case

SQUARE = (64, 128, 256, 512, 1024, 2048)
MLP = ((64, 784, 128), (64, 128, 10), (784, 64, 128))  # (m, k, n): forward and a weight gradient
# GPT-small's linear layers over 512 tokens: attention projections, MLP up and down.
GPT_SMALL = ((512, 768, 768), (512, 768, 3072), (512, 3072, 768))


def _gemm_case(m: int, k: int, n: int) -> Case:
    def make():
        import numpy as np
        import torch

        import kiln

        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        ka, kb, ta, tb = kiln.tensor(a), kiln.tensor(b), torch.tensor(a), torch.tensor(b)
        kmm, tmm = kiln.mm, torch.mm
        return (lambda: kmm(ka, kb)), (lambda: tmm(ta, tb))

    def notes(*_):
        import kiln

        # The best of three probes: a probe that a neighbour's work interrupts reads low.
        return {"flops": 2 * m * k * n,
                "fp32_peak_gflops_one_core": max(kiln._C._fp32_peak_gflops(0.1) for _ in range(3)),
                "fp32_peak_gflops": max(kiln._C._fp32_peak_gflops(0.1, kiln.get_num_threads()) for _ in range(3))}

    return Case(f"mm {m}x{k} @ {k}x{n} f32", make=make, notes=notes, group="linalg")


def cases() -> list[Case]:
    return [_gemm_case(s, s, s) for s in SQUARE] + [_gemm_case(*shape) for shape in MLP + GPT_SMALL]
